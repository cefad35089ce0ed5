"""``mcp.v1.InferenceService``: inference and model admin over gRPC, on the HTTP server's state.

A call's path is the HTTP API's: the interceptor has authenticated the caller and checked the
metadata -> tenant rate limit -> the request's checks (convert.py) -> hold the model version
-> submit (admission control may refuse: RESOURCE_EXHAUSTED) -> answer, or stream one message
per token. A call the client cancels (or whose deadline passes) cancels its sequence: the
handler's task is cancelled and ``_Call.finish`` stops the generation and releases the version.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import anyio.to_thread
import grpc

from mcp.engine.sequence import StepOutput
from mcp.runtime.result import InferResult
from mcp.serving.generation import Generation
from mcp.serving.grpc import convert
from mcp.serving.grpc._gen import inference_pb2 as pb
from mcp.serving.grpc._gen import inference_pb2_grpc as pb_grpc
from mcp.serving.grpc.context import RequestContext, current
from mcp.serving.grpc.status import errors_as_status
from mcp.serving.host import ModelVersion

if TYPE_CHECKING:
    from mcp.serving.http.app import ServerState

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["InferenceService"].full_name


class InferenceServicer(pb_grpc.InferenceServiceServicer):
    """The RPCs of ``mcp.v1.InferenceService`` (``context.current()`` says who calls)."""

    def __init__(self, state: ServerState) -> None:
        self._state = state

    async def Infer(self, request: pb.InferRequest, context: grpc.aio.ServicerContext) -> pb.InferResponse:
        async with errors_as_status(context):
            call = await self._start(request, current())
            try:
                steps: list[StepOutput] = []
                async for event in call.generation.events():
                    if event.step is not None:
                        steps.append(event.step)
                    if event.result is not None:
                        call.result = event.result
            finally:
                call.finish()
            return call.response(steps)

    async def InferStream(self, request: pb.InferRequest,
                          context: grpc.aio.ServicerContext) -> AsyncIterator[pb.InferStreamResponse]:
        async with errors_as_status(context):
            call = await self._start(request, current())
            try:
                async for event in call.generation.events():
                    if event.result is not None:
                        call.result = event.result
                    yield call.chunk(event.text, event.step, event.result)
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
            loaded = await anyio.to_thread.run_sync(self._state.host.load, spec, not request.standby)
            return pb.LoadModelResponse(model=self._info(loaded))

    async def SwapModel(self, request: pb.SwapModelRequest,
                        context: grpc.aio.ServicerContext) -> pb.SwapModelResponse:
        async with errors_as_status(context):
            current().caller.require_admin()
            return pb.SwapModelResponse(model=self._info(self._state.host.swap(request.name, request.version)))

    async def UnloadModel(self, request: pb.UnloadModelRequest,
                          context: grpc.aio.ServicerContext) -> pb.UnloadModelResponse:
        async with errors_as_status(context):
            current().caller.require_admin()
            retired = self._state.host.unload(request.name, request.version or None)
            return pb.UnloadModelResponse(retired=[self._info(v) for v in retired])

    async def _start(self, request: pb.InferRequest, context: RequestContext) -> _Call:
        """Check the request, hold its model version and submit it (refusals come here)."""
        state = self._state
        prompt = convert.prompt_of(request, state.config)
        options = convert.options_of(request.sampling, context, state.config)
        model = context.model_ref(request.model)
        state.limiter.admit(context.caller.tenant)
        version = state.host.resolve_and_hold(model)
        try:
            generation = await Generation.start(version, [prompt], options, 1)
        except BaseException:
            state.host.release(version)
            raise
        return _Call(state, context, version, generation, options["logprobs"] is not None)

    def _info(self, version: ModelVersion, with_source: bool = True) -> pb.ModelVersion:
        current_version = self._state.host.current().get(version.name)
        return convert.model_version(version, current_version is version, with_source)


class _Call:
    """One inference call on its held version: its answer, and its end however it comes."""

    def __init__(self, state: ServerState, context: RequestContext, version: ModelVersion, generation: Generation,
                 logprobs: bool) -> None:
        self.state, self.context, self.version, self.generation = state, context, version, generation
        self.id = f"infer-{uuid.uuid4().hex}"
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

    def finish(self) -> None:
        """Once: stop what still runs, release the version, count the tokens against the tenant."""
        if self.finished:
            return
        self.finished = True
        self.generation.cancel()
        self.state.host.release(self.version)
        if self.result is not None:
            self.state.limiter.record_tokens(self.context.caller.tenant, self.result.usage.total_tokens)
