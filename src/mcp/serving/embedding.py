"""``EmbeddingRequest`` and its life: both transports' embeddings, from admission to the record.

A sibling of ``ServingRequest`` rather than a kind of it: an embedding has inputs and an
output format where a generation has prompts, sampling, tools and choices, and none of
``reply.py``'s streaming, output policy or per-choice results apply. What the two share is
done the same way here: the tenant's rate limit (the transport calls ``limiter.admit``
first), the governance plane's input policy and one audit record (operation
``embeddings``; a deny is a ``PolicyDenied``, a redaction re-tokenizes the redacted text,
a reroute names the model that runs), the version held while it runs and released once,
and the tokens counted against the tenant. Inputs are texts or token-id arrays (OpenAI's
``input``); a token array is decoded for the input policy, which reads text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import anyio.to_thread
import torch

from mcp.base.errors import ContextLengthError, InvalidRequestError
from mcp.engine.handle import RequestOptions
from mcp.engine.scheduler.slo import SLOClass
from mcp.serving.errors import FieldError, describe
from mcp.serving.host import ModelVersion
from mcp.serving.tenants import Tenant

if TYPE_CHECKING:
    from mcp.governance.plane import Inference
    from mcp.serving.state import ServerState

ENCODING_FORMATS = ("float", "base64")
MAX_INPUTS = 2048  # inputs per request (OpenAI's limit)
Input = str | tuple[int, ...]


@dataclass(frozen=True)
class EmbeddingRequest:
    """One embeddings request from either transport, checked on construction."""

    request_id: str  # emb-… (HTTP) or embed-… (gRPC)
    route: str  # for the audit record
    inputs: tuple[Input, ...]  # texts, or token ids
    tenant: str
    encoding_format: str = "float"
    dimensions: int | None = None  # None: the model's own
    slo_class: SLOClass | None = None
    timeout_s: float | None = None
    user: str | None = None
    model: str | None = None
    trace_context: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.inputs:
            raise FieldError("input is empty: give a text, a list of texts or a list of token arrays", "input")
        if len(self.inputs) > MAX_INPUTS:
            raise FieldError(f"input has {len(self.inputs)} items; at most {MAX_INPUTS} a request", "input")
        for index, item in enumerate(self.inputs):
            if len(item) == 0:
                raise FieldError(f"input[{index}] is empty: an input needs at least one character or token", "input")
        if self.encoding_format not in ENCODING_FORMATS:
            raise FieldError(f"encoding_format is {self.encoding_format!r}; use float or base64", "encoding_format")
        if self.dimensions is not None and (isinstance(self.dimensions, bool) or self.dimensions < 1):
            raise FieldError(f"dimensions is {self.dimensions!r}; give a positive integer", "dimensions")
        RequestOptions(tenant=self.tenant, timeout=self.timeout_s)  # checks both

    def scheduling(self) -> RequestOptions:
        slo_class = SLOClass.MEDIUM if self.slo_class is None else self.slo_class
        return RequestOptions(slo_class=slo_class, tenant=self.tenant, timeout=self.timeout_s)


@dataclass(frozen=True)
class EmbeddingAnswer:
    """The vectors, in input order, and what ran them."""

    vectors: torch.Tensor  # fp32 [inputs, dimensions]
    num_tokens: int
    model_key: str


async def run_embedding(state: ServerState, tenant: Tenant, request: EmbeddingRequest) -> EmbeddingAnswer:
    """Admit, hold the version, embed, record, release, count: the whole life of the request."""
    version = state.host.resolve_and_hold(request.model)
    inference, used = None, 0
    try:
        inputs = await anyio.to_thread.run_sync(_token_ids, version, request)
        if state.governance is not None:
            inference, version, inputs = await _admit(state, version, request, inputs)
        _check_dimensions(version, request.dimensions)
        handle = _start(version, inputs, request)
        try:
            done = await anyio.to_thread.run_sync(handle.wait)
        except BaseException:
            handle.cancel()
            raise
        used = sum(done.num_tokens)
        if inference is not None:
            await inference.finish(_outcome("ok", version.key, used, done.total_s, done.queue_s))
        return EmbeddingAnswer(done.vectors, used, version.key)
    except BaseException as exc:
        if inference is not None:
            inference.finish_soon(_outcome(f"error:{describe(exc).code or type(exc).__name__}", version.key))
        raise
    finally:
        state.host.release(version)
        state.limiter.record_tokens(tenant, used)


def _start(version: ModelVersion, inputs: list[list[int]], request: EmbeddingRequest):
    """Queue the inputs; a refusal names the field it is about (``model`` for a generation model,
    ``input`` for a bad token id), as a schema cannot state either."""
    try:
        return version.model.start_embedding(inputs, request.scheduling())
    except ContextLengthError:
        raise
    except InvalidRequestError as error:
        raise FieldError(str(error), "input" if version.model.embeds else "model") from None


def _token_ids(version: ModelVersion, request: EmbeddingRequest) -> list[list[int]]:
    tokenizer = version.model.engine.tokenizer
    return [tokenizer.encode(item) if isinstance(item, str) else list(item) for item in request.inputs]


async def _admit(state: ServerState, version: ModelVersion, request: EmbeddingRequest,
                 inputs: list[list[int]]) -> tuple[Inference, ModelVersion, list[list[int]]]:
    """The input policy on the inputs' text; a redacted input is tokenized again, a reroute
    swaps the held version for the one it names."""
    from mcp.governance.plane import InferenceRequest

    tokenizer = version.model.engine.tokenizer
    texts = tuple(item if isinstance(item, str) else tokenizer.decode(ids, skip_special_tokens=True)
                  for item, ids in zip(request.inputs, inputs))
    inference = await state.governance.admit(InferenceRequest(
        request_id=request.request_id, route=request.route, operation="embeddings", tenant=request.tenant,
        model=request.model, prompt_texts=texts, max_tokens=0, user=request.user,
        carrier=dict(request.trace_context)))
    if inference.model and inference.model != request.model:
        rerouted = state.host.resolve_and_hold(inference.model)
        state.host.release(version)
        version = rerouted
        inputs = _token_ids(version, replace(request, inputs=texts))
    if tuple(inference.prompt_texts) != texts:
        encode = version.model.engine.tokenizer.encode
        inputs = [encode(text) if text != old else ids
                  for text, old, ids in zip(inference.prompt_texts, texts, inputs)]
    return inference, version, inputs


def _check_dimensions(version: ModelVersion, dimensions: int | None) -> None:
    """MiniLM and BERT encoders give their hidden size and cannot be cut shorter (no Matryoshka training)."""
    arch = version.model.header.architecture
    if dimensions is not None and dimensions != arch.hidden_size:
        raise FieldError(f"dimensions is {dimensions}, but {version.key} gives {arch.hidden_size}-dimensional "
                         "embeddings and cannot shorten them; leave dimensions out", "dimensions")


def _outcome(status: str, model_key: str, prompt_tokens: int = 0, total_s: float | None = None,
             queue_s: float | None = None):
    from mcp.governance.plane import InferenceOutcome

    return InferenceOutcome(status=status, model_key=model_key, prompt_tokens=prompt_tokens,
                            finish_reasons=("stop",) if status == "ok" else (), total_s=total_s, queue_s=queue_s)


def checked_inputs(inputs: Sequence[str] | Sequence[Sequence[int]] | str) -> tuple[Input, ...]:
    """OpenAI's ``input``: a string, a list of strings, one token array, or a list of them."""
    if isinstance(inputs, str):
        return (inputs,)
    items = list(inputs)
    if items and all(isinstance(t, int) and not isinstance(t, bool) for t in items):
        return (tuple(items),)
    out: list[Input] = []
    for index, item in enumerate(items):
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Sequence) and all(isinstance(t, int) and not isinstance(t, bool) for t in item):
            out.append(tuple(item))
        else:
            raise InvalidRequestError(f"input[{index}] is neither a string nor a list of token ids")
    return tuple(out)
