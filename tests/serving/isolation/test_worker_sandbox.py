"""The sandbox, measured from inside a real worker (its ``probe`` command), and inference
through it: each restriction is proved by trying what it forbids."""

from __future__ import annotations

import hashlib
import os
import socket
from dataclasses import replace

import pytest

from mcp.config.isolation import WorkerLimits
from mcp.config.runtime import RuntimeConfig
from mcp.config.serving import ServedModel, ServingConfig
from mcp.runtime.session import Session
from mcp.serving.isolation.models import WorkerModels, worker_loop, worker_report

pytestmark = pytest.mark.slow  # each spawns real worker processes (torch import, model load)
GREEDY = {"temperature": 0.0, "max_tokens": 6, "raw": True}
SECRET = "MCP_TEST_SECRET_API_KEY"


def _config(**limits) -> RuntimeConfig:
    serving = ServingConfig(isolation="worker", worker=replace(WorkerLimits(), **limits))
    return RuntimeConfig(device="cpu", num_threads=1, serving=serving)


@pytest.fixture(scope="module")
def listener():
    """A port that would accept a connection: a refused connect is the sandbox, not a closed port."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()


@pytest.fixture(scope="module", params=["fresh", "spare"])
def sandboxed(request, tiny_mcp):
    """A model's worker started for its load, or a spare started ahead and given the model."""
    os.environ[SECRET] = "sk-do-not-leak"  # in the server's environment when the worker starts
    try:
        models = WorkerModels(Session(_config()), measurements=[{"pcr": 10, "digest": "ab" * 32}])
        if request.param == "spare":
            models.load(ServedModel("tiny", str(tiny_mcp)), "tiny:0")
            models.after_ready("tiny:0")  # as ModelHost does: the next spare starts
            assert models.spares.wait_ready(120.0)
            models.unload("tiny:0")
        model = models.load(ServedModel("tiny", str(tiny_mcp)), "tiny:1")
        assert worker_loop(model).supervisor.from_spare is (request.param == "spare")
    finally:
        del os.environ[SECRET]
    yield model
    models.close()


def test_the_worker_cannot_reach_the_network_or_make_sockets(sandboxed, listener):
    report = worker_loop(sandboxed).probe(*listener)
    assert report["pid"] != os.getpid()
    assert report["connect"] == "EPERM"  # socket() itself is refused by the filter
    assert report["new_socket"] == "EPERM"
    assert report["netlink_socket"] == "EPERM"
    assert report["network_namespace"] != os.readlink("/proc/self/ns/net")
    assert set(report["interfaces"]) <= {"lo"} and report["ipv4_routes"] == 0


def test_the_worker_cannot_exec_or_ptrace(sandboxed, listener):
    report = worker_loop(sandboxed).probe(*listener)
    assert report["exec"] == "EPERM"
    assert report["ptrace"] == "EPERM"
    assert report["seccomp_mode"] == 2 and report["no_new_privs"] is True


def test_the_worker_has_resource_limits(sandboxed, tiny_mcp, listener):
    limits = worker_loop(sandboxed).probe(*listener)["rlimits"]
    assert limits["core"] == 0 and limits["nofile"] == 1024
    assert limits["as"] == (16 << 30) + 2 * tiny_mcp.stat().st_size


def test_the_model_file_is_open_read_only(sandboxed, tiny_mcp, listener):
    report = worker_loop(sandboxed).probe(*listener)
    assert report["model_fds"] and all(fd["mode"] == "O_RDONLY" for fd in report["model_fds"])
    # private (copy-on-write) mappings only: nothing written to them reaches the file
    assert report["model_mappings"] and all(perms.endswith("p") for perms in report["model_mappings"])
    assert report["model_shared_write_map"] == "EACCES"  # the kernel refuses: the descriptor is read-only


def test_the_environment_holds_no_secrets(sandboxed, listener):
    names = worker_loop(sandboxed).probe(*listener)["environment"]
    assert SECRET not in names and "HOME" not in names
    assert set(names) <= {"PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV", "LANG", "TZ", "TMPDIR"} | \
        {n for n in names if n.startswith(("LC_", "OMP_", "KMP_", "MKL_", "CUDA_", "NVIDIA_", "TORCH_", "PYTORCH_"))}


def test_the_worker_measures_the_file_it_opened_and_keeps_the_measurements(sandboxed, tiny_mcp):
    ready = worker_report(sandboxed)
    assert ready["model_sha256"] == hashlib.sha256(tiny_mcp.read_bytes()).hexdigest()
    assert ready["measurements"] == [{"pcr": 10, "digest": "ab" * 32}]
    assert ready["sandbox"]["network_namespace"] == "on" and ready["sandbox"]["seccomp"] == "on"


def test_a_worker_answers_as_the_engine_in_this_process_does(sandboxed, tiny_mcp):
    with Session(RuntimeConfig(device="cpu", num_threads=1)) as session:
        local = session.load_model(tiny_mcp).infer("Hello there", **GREEDY)
    remote = sandboxed.infer("Hello there", **GREEDY)
    assert remote.token_ids == local.token_ids and remote.text == local.text
    assert remote.usage == local.usage and remote.backend == "native"
    streamed = list(sandboxed.stream("Hello there", **GREEDY))
    assert "".join(streamed) == local.text


def test_without_the_namespace_sockets_are_still_refused(tiny_mcp, listener):
    """The unprivileged path: no network namespace (as without CAP_SYS_ADMIN), the filter holds."""
    models = WorkerModels(Session(_config(network_namespace=False, max_open_files=256)))
    model = models.load(ServedModel("tiny", str(tiny_mcp)), "tiny:open")
    try:
        report = worker_loop(model).probe(*listener)
        ready = worker_report(model)
    finally:
        models.close()
    assert report["network_namespace"] == os.readlink("/proc/self/ns/net")
    assert ready["sandbox"]["network_namespace"].startswith("skipped")
    assert report["connect"] == "EPERM" and report["new_socket"] == "EPERM" and report["exec"] == "EPERM"
    assert report["rlimits"]["nofile"] == 256
