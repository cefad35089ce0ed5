"""``mcp.v1.InferenceService``: inference and model admin over gRPC, on the HTTP server's state.

A call's path is the HTTP API's: the interceptor has authenticated the caller and checked the
metadata -> tenant rate limit -> the request's checks (convert.py) -> hold the model version
-> submit (admission control may refuse: RESOURCE_EXHAUSTED) -> answer, or stream one message
per token. A call the client cancels (or whose deadline passes) cancels its sequence: the
handler's task is cancelled and ``_Call.finish`` stops the generation and releases the version.
With ``serving.governance`` the call goes through the same plane as HTTP (``serving/governed.py``):
the input policy before the model is held (a deny is PERMISSION_DENIED with the rule's reason),
the output policy on the answer or on each streamed step, and the audit record committed
before the answer (or the stream's last message) is sent.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import anyio.to_thread
import grpc

from mcp.base.errors import MCPError
from mcp.base.result import InferResult
from mcp.engine.sequence import StepOutput
from mcp.serving import governed
from mcp.serving.errors import describe
from mcp.serving.generation import ChoiceEvent, Generation
from mcp.serving.grpc import convert
from mcp.serving.grpc._gen import inference_pb2 as pb
from mcp.serving.grpc._gen import inference_pb2_grpc as pb_grpc
from mcp.serving.grpc.context import Metadata, RequestContext, current
from mcp.serving.grpc.status import errors_as_status
from mcp.serving.host import ModelVersion
from mcp.serving.measured import swap_measured

if TYPE_CHECKING:
    from mcp.governance.plane import Inference
    from mcp.serving.state import ServerState

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["InferenceService"].full_name


class InferenceServicer(pb_grpc.InferenceServiceServicer):
    """The RPCs of ``mcp.v1.InferenceService`` (``context.current()`` says who calls)."""

    def __init__(self, state: ServerState) -> None:
        self._state = state

    async def Infer(self, request: pb.InferRequest, context: grpc.aio.ServicerContext) -> pb.InferResponse:
        async with errors_as_status(context):
            call = await self._start(request, current(), context.invocation_metadata(), "Infer")
            try:
                steps: list[StepOutput] = []
                async for event in call.generation.events():
                    if event.step is not None:
                        steps.append(event.step)
                    if event.result is not None:
                        call.result = event.result
                await call.settle_whole()
            except MCPError as exc:
                await call.settle_failed(exc)
                raise
            finally:
                call.finish()
            return call.response(steps)

    async def InferStream(self, request: pb.InferRequest,
                          context: grpc.aio.ServicerContext) -> AsyncIterator[pb.InferStreamResponse]:
        async with errors_as_status(context):
            call = await self._start(request, current(), context.invocation_metadata(), "InferStream")
            try:
                async for event in call.generation.events():
                    text, result = call.guarded(event)
                    if result is not None:
                        call.result = result
                        await call.settle()  # the record is committed before the last message
                    yield call.chunk(text, event.step, result)
            except MCPError as exc:
                await call.settle_failed(exc)
                raise
            finally:
                call.finish()

    async def ListModels(self, request: pb.ListModelsRequest,
                         context: grpc.aio.ServicerContext) -> pb.ListModelsResponse:
        admin = current().caller.tenant.role == "admin"  # only admins see where a model was loaded from
        return pb.ListModelsResponse(models=[self._info(v, admin) for v in self._state.host.versions()])

    async def LoadModel(self, request: pb.LoadModelRequest,
                        context: grpc.aio.ServicerContext) -> pb.LoadModelResponse:
        async with errors_as_status(context):
            current().caller.require_admin()
            spec = convert.served_model(request)
            loaded = await anyio.to_thread.run_sync(self._state.host.load_from_admin, spec, not request.standby)
            return pb.LoadModelResponse(model=self._info(loaded))

    async def SwapModel(self, request: pb.SwapModelRequest,
                        context: grpc.aio.ServicerContext) -> pb.SwapModelResponse:
        async with errors_as_status(context):
            current().caller.require_admin()
            convert.checked_name(request.version, "version")
            swapped = swap_measured(self._state, request.name, request.version)
            return pb.SwapModelResponse(model=self._info(swapped))

    async def UnloadModel(self, request: pb.UnloadModelRequest,
                          context: grpc.aio.ServicerContext) -> pb.UnloadModelResponse:
        async with errors_as_status(context):
            current().caller.require_admin()
            retired = self._state.host.unload(request.name, request.version or None)
            return pb.UnloadModelResponse(retired=[self._info(v) for v in retired])

    async def _start(self, request: pb.InferRequest, context: RequestContext, metadata: Metadata | None,
                     method: str) -> _Call:
        """Check the request, pass the input policy, hold its model version and submit it
        (refusals come here)."""
        state = self._state
        prompt = convert.prompt_of(request, state.config)
        options = convert.options_of(request.sampling, context, state.config)
        model = context.model_ref(request.model)
        state.limiter.admit(context.caller.tenant)
        request_id = f"infer-{uuid.uuid4().hex}"
        version, generation, inference = await governed.start(
            state.host, state.governance, f"grpc /{SERVICE_NAME}/{method}", dict(metadata or ()), context.caller,
            request_id, model, [prompt], options, 1, request.user or None, request.WhichOneof("input") == "chat",
            {"gen_ai.request.temperature": options["temperature"], "gen_ai.request.seed": options["seed"]})
        return _Call(state, context, version, generation, options["logprobs"] is not None, request_id, inference)

    def _info(self, version: ModelVersion, with_source: bool = True) -> pb.ModelVersion:
        current_version = self._state.host.current().get(version.name)
        return convert.model_version(version, current_version is version, with_source)


class _Call:
    """One inference call on its held version: its answer, and its end however it comes."""

    def __init__(self, state: ServerState, context: RequestContext, version: ModelVersion, generation: Generation,
                 logprobs: bool, request_id: str, inference: Inference | None = None) -> None:
        self.state, self.context, self.version, self.generation = state, context, version, generation
        self.id, self.inference = request_id, inference
        self.guard = inference.output_guard() if inference is not None else None
        self.result: InferResult | None = None
        self.finished = False
        tokenizer = version.model.engine.tokenizer
        self.decode = (lambda token_id: tokenizer.decode([token_id])) if logprobs else None

    def response(self, steps: list[StepOutput]) -> pb.InferResponse:
        result = self.result
        assert result is not None, "the events end with the result"
        return pb.InferResponse(id=self.id, model=self.version.key, text=result.text, token_ids=result.token_ids,
                                finish_reason=convert.finish_reason(result), usage=convert.usage(result),
                                logprobs=convert.logprobs(steps, self.decode) if self.decode else [])

    def chunk(self, text: str, step: StepOutput | None, result: InferResult | None) -> pb.InferStreamResponse:
        message = pb.InferStreamResponse(id=self.id, model=self.version.key, text=text)
        if step is not None:
            message.token_ids.append(step.token_id)
            if self.decode:
                message.logprobs.extend(convert.logprobs([step], self.decode))
        if result is not None:
            message.finish_reason = convert.finish_reason(result)
            message.usage.CopyFrom(convert.usage(result))
        return message

    def guarded(self, event: ChoiceEvent) -> tuple[str, InferResult | None]:
        """A streamed step as the output policy lets it through (a stopped answer ends early)."""
        if self.guard is None:
            return event.text, event.result
        text, result = governed.guard_event_text(self.guard, event.text, event.result)
        if self.guard.stopped and event.result is None:
            self.generation.cancel()
        return text, result

    async def settle_whole(self) -> None:
        """A whole answer: through the output policy, then its record committed."""
        if self.guard is not None and self.result is not None:
            self.result = governed.guard_whole(self.guard, self.result)
        await self.settle()

    async def settle(self) -> None:
        if self.inference is not None and self.result is not None:
            await self.inference.finish(governed.outcome([self.result], [self.guard], model_key=self.version.key))

    async def settle_failed(self, error: MCPError) -> None:
        """A call that failed after it started (its worker died): the record says why."""
        if self.inference is not None:
            results = [self.result] if self.result is not None else []
            status = f"error:{describe(error).code or 'engine'}"
            await self.inference.finish(governed.outcome(results, [self.guard], status, self.version.key))

    def finish(self) -> None:
        """Once: stop what still runs, release the version, count the tokens against the tenant."""
        if self.finished:
            return
        self.finished = True
        if self.inference is not None:  # a call cancelled or failed mid-way: recorded, not awaited
            results = [self.result] if self.result is not None else []
            self.inference.finish_soon(governed.outcome(results, [self.guard], "cancelled", self.version.key))
        self.generation.cancel()
        self.state.host.release(self.version)
        if self.result is not None:
            self.state.limiter.record_tokens(self.context.caller.tenant, self.result.usage.total_tokens)
