"""The declared contracts behind ``Model`` (engine/contracts.py), checked on each implementation:
the in-process engine and loop, serving's worker view and loop, the unloaded stand-in; and the
public ``Model.unload``."""

from __future__ import annotations

import inspect

import pytest

from mcp.base.errors import InvalidRequestError
from mcp.config.runtime import RuntimeConfig
from mcp.engine.contracts import EngineView, RequestLoop
from mcp.engine.loop import EngineLoop
from mcp.engine.tokenizer import Tokenizer
from mcp.modelfile.reader import open_model
from mcp.runtime import Session
from mcp.runtime.model import UnloadedEngine

LOOP_OPERATIONS = ("submit", "cancel", "stats", "close")


@pytest.fixture
def session():
    with Session(RuntimeConfig(device="cpu")) as session:
        yield session


def test_an_in_process_model_holds_an_engine_view_and_a_request_loop(session, tiny_mcp):
    model = session.load_model(tiny_mcp, name="tiny")
    assert isinstance(model.engine, EngineView)
    assert isinstance(model.loop, EngineLoop) and isinstance(model.loop, RequestLoop)
    assert model.loop.max_context == model.max_context


def test_unload_is_public_keeps_the_description_and_refuses_later_calls(session, tiny_mcp):
    model = session.load_model(tiny_mcp, name="tiny")
    header, precision, ids = model.header, model.precision, model.tokenize("Hello there")
    loop = model.loop
    model.unload()
    assert loop.closed
    assert isinstance(model.engine, UnloadedEngine) and isinstance(model.engine, EngineView)
    assert (model.header, model.precision, model.tokenize("Hello there")) == (header, precision, ids)
    with pytest.raises(InvalidRequestError, match="'tiny' has been unloaded; load it again"):
        model.infer("Hi", max_tokens=2)
    model.unload()  # idempotent
    assert isinstance(model.engine, UnloadedEngine)
    session.unload_model(model)  # the session forgets it too
    assert session.models == {}


def test_the_worker_view_is_an_engine_view(tiny_mcp):
    from mcp.serving.isolation.models import WorkerEngineView

    with open_model(tiny_mcp) as model_file:
        header = model_file.header
    view = WorkerEngineView(header, Tokenizer.from_spec(header.tokenizer), "int4", 512)
    assert isinstance(view, EngineView)
    assert isinstance(UnloadedEngine.of(view), EngineView)


@pytest.mark.parametrize("loop_class", ["mcp.engine.loop.EngineLoop",
                                        "mcp.serving.isolation.worker_loop.WorkerLoop"])
def test_each_loop_has_the_operations_of_the_contract_with_its_parameters(loop_class):
    module_name, _, name = loop_class.rpartition(".")
    cls = getattr(__import__(module_name, fromlist=[name]), name)
    for operation in LOOP_OPERATIONS:
        declared = list(inspect.signature(getattr(RequestLoop, operation)).parameters)
        assert list(inspect.signature(getattr(cls, operation)).parameters) == declared, (name, operation)
    assert isinstance(inspect.getattr_static(cls, "closed"), property)
