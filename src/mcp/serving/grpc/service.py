"""``mcp.v1.InferenceService``: inference and model admin over gRPC, on the HTTP server's state.

A call's path is the HTTP API's: the interceptor has authenticated the caller and checked the
metadata -> the request's checks (convert.py builds the ``ServingRequest``) -> tenant rate limit
-> hold the model version -> submit (admission control may refuse: RESOURCE_EXHAUSTED) -> answer, or stream one message
per token. A call the client cancels (or whose deadline passes) cancels its sequence: the
handler's task is cancelled and ``Reply.finish`` (``serving/reply.py``, the lifecycle HTTP drives
too) stops the generation and releases the version.
With ``serving.governance`` the call goes through the same plane as HTTP (``serving/reply.py``):
the input policy before the model is held (a deny is PERMISSION_DENIED with the rule's reason),
the output policy on the answer or on each streamed step, and the audit record committed
before the answer (or the stream's last message) is sent; what the policies redacted goes in
the call's trailing metadata, ``x-mcp-redactions`` (serving/redactions.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import anyio.to_thread
import grpc

from mcp.base.errors import MCPError
from mcp.serving.embedding import run_embedding
from mcp.serving.grpc import convert
from mcp.serving.grpc.embed import embed_response, embedding_request_of
from mcp.serving.grpc._gen import inference_pb2 as pb
from mcp.serving.grpc._gen import inference_pb2_grpc as pb_grpc
from mcp.serving.grpc.context import Metadata, RequestContext, current
from mcp.serving.grpc.status import errors_as_status
from mcp.serving.host import ModelVersion
from mcp.serving.measured import swap_measured
from mcp.serving.redactions import redactions_header
from mcp.serving.reply import Reply

if TYPE_CHECKING:
    from mcp.serving.state import ServerState

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["InferenceService"].full_name


class InferenceServicer(pb_grpc.InferenceServiceServicer):
    """The RPCs of ``mcp.v1.InferenceService`` (``context.current()`` says who calls)."""

    def __init__(self, state: ServerState) -> None:
        self._state = state

    async def Infer(self, request: pb.InferRequest, context: grpc.aio.ServicerContext) -> pb.InferResponse:
        async with errors_as_status(context, self._state.metrics):
            reply = await self._start(request, current(), context.invocation_metadata(), "Infer")
            try:
                results, steps = await reply.whole()
            finally:
                reply.finish()
            context.set_trailing_metadata(tuple(redactions_header(reply.redactions()).items()))
            return convert.infer_response(reply, results[0], steps[0])

    async def InferStream(self, request: pb.InferRequest,
                          context: grpc.aio.ServicerContext) -> AsyncIterator[pb.InferStreamResponse]:
        async with errors_as_status(context, self._state.metrics):
            reply = await self._start(request, current(), context.invocation_metadata(), "InferStream")
            tool_stream = reply.generation.tools.stream() if reply.generation.tools.active else None
            try:
                async for event in reply.events():
                    if event.result is not None:
                        await reply.settle()  # the record is committed before the last message
                        context.set_trailing_metadata(tuple(redactions_header(reply.redactions()).items()))
                    yield convert.stream_response(reply, event, tool_stream)
            except MCPError as exc:
                await reply.settle_failed(exc)
                raise
            finally:
                reply.finish()

    async def Embed(self, request: pb.EmbedRequest, context: grpc.aio.ServicerContext) -> pb.EmbedResponse:
        """The HTTP API's /v1/embeddings: the same typed request and lifecycle (serving/embedding.py)."""
        async with errors_as_status(context, self._state.metrics):
            caller = current()
            served = embedding_request_of(request, caller, context.invocation_metadata(), self._state.config,
                                          f"grpc /{SERVICE_NAME}/Embed")
            self._state.limiter.admit(caller.caller.tenant)
            answer = await run_embedding(self._state, caller.caller.tenant, served)
            return embed_response(served, answer)

    async def ListModels(self, request: pb.ListModelsRequest,
                         context: grpc.aio.ServicerContext) -> pb.ListModelsResponse:
        admin = current().caller.tenant.role == "admin"  # only admins see where a model was loaded from
        return pb.ListModelsResponse(models=[self._info(v, admin) for v in self._state.host.versions()])

    async def LoadModel(self, request: pb.LoadModelRequest,
                        context: grpc.aio.ServicerContext) -> pb.LoadModelResponse:
        async with errors_as_status(context, self._state.metrics):
            current().caller.require_admin()
            spec = convert.served_model(request)
            loaded = await anyio.to_thread.run_sync(self._state.host.load_from_admin, spec, not request.standby)
            return pb.LoadModelResponse(model=self._info(loaded))

    async def SwapModel(self, request: pb.SwapModelRequest,
                        context: grpc.aio.ServicerContext) -> pb.SwapModelResponse:
        async with errors_as_status(context, self._state.metrics):
            current().caller.require_admin()
            convert.checked_name(request.version, "version")
            swapped = swap_measured(self._state, request.name, request.version)
            return pb.SwapModelResponse(model=self._info(swapped))

    async def UnloadModel(self, request: pb.UnloadModelRequest,
                          context: grpc.aio.ServicerContext) -> pb.UnloadModelResponse:
        async with errors_as_status(context, self._state.metrics):
            current().caller.require_admin()
            retired = self._state.host.unload(request.name, request.version or None)
            return pb.UnloadModelResponse(retired=[self._info(v) for v in retired])

    async def _start(self, request: pb.InferRequest, context: RequestContext, metadata: Metadata | None,
                     method: str) -> Reply:
        """Check the request, pass the input policy, hold its model version and submit it
        (refusals come here)."""
        state = self._state
        served = convert.request_of(request, context, metadata, state.config, f"grpc /{SERVICE_NAME}/{method}")
        state.limiter.admit(context.caller.tenant)
        return await Reply.start(state, context.caller.tenant, served)

    def _info(self, version: ModelVersion, with_source: bool = True) -> pb.ModelVersion:
        current_version = self._state.host.current().get(version.name)
        return convert.model_version(version, current_version is version, with_source)
