"""``mcp.v1.EmbedRequest`` to the typed ``EmbeddingRequest`` and the answer back.

The same checks and wording as ``POST /v1/embeddings`` (``serving/embedding.py`` holds
them); a bad field is INVALID_ARGUMENT naming it as the proto spells it.
"""

from __future__ import annotations

import uuid

from mcp.config.runtime import RuntimeConfig
from mcp.engine.scheduler.slo import SLOClass
from mcp.serving.embedding import MAX_INPUTS, EmbeddingAnswer, EmbeddingRequest
from mcp.serving.errors import FieldError
from mcp.serving.grpc._gen import inference_pb2 as pb
from mcp.serving.grpc.context import Metadata, RequestContext
from mcp.serving.request import trace_context


def embedding_request_of(request: pb.EmbedRequest, context: RequestContext, metadata: Metadata | None,
                         config: RuntimeConfig, route: str) -> EmbeddingRequest:
    """The call as the typed request: its inputs, the model it names, the caller's tenant and class."""
    if request.texts and request.token_ids:
        raise FieldError("set texts or token_ids, not both", "texts")
    inputs = tuple(request.texts) or tuple(tuple(item.ids) for item in request.token_ids)
    if len(inputs) > MAX_INPUTS:
        raise FieldError(f"the request has {len(inputs)} inputs; at most {MAX_INPUTS}", "texts")
    return EmbeddingRequest(
        request_id=f"embed-{uuid.uuid4().hex}", route=route, inputs=inputs, tenant=context.caller.tenant.name,
        dimensions=request.dimensions if request.HasField("dimensions") else None,
        slo_class=None if context.sla_class is None else SLOClass.parse(context.sla_class),
        timeout_s=config.serving.request_timeout_s, user=request.user or None,
        model=context.model_ref(request.model), trace_context=trace_context(dict(metadata or ())))


def embed_response(request: EmbeddingRequest, answer: EmbeddingAnswer) -> pb.EmbedResponse:
    usage = pb.Usage(prompt_tokens=answer.num_tokens, total_tokens=answer.num_tokens)
    return pb.EmbedResponse(id=request.request_id, model=answer.model_key, usage=usage,
                            embeddings=[pb.Embedding(values=row.tolist()) for row in answer.vectors])
