"""``POST /v1/embeddings``: OpenAI's embeddings API on the host's embedding models.

``input`` is a string, a list of strings, one token array or a list of them (at most
``MAX_INPUTS``); ``encoding_format`` ``float`` gives lists of numbers, ``base64`` the
little-endian float32 bytes of each vector in base64 (what the openai client asks for by
default and decodes); ``dimensions`` other than the model's own size is a 400 (an encoder
such as MiniLM cannot shorten its vectors). The request's life (rate limit, input policy,
audit record, the held version, tokens counted) is ``serving/embedding.py``'s, shared with
gRPC's ``Embed``; this module converts and renders. A generation model here is a 400, as is
an embedding model on ``/v1/completions``.
"""

from __future__ import annotations

import base64
import uuid
from typing import Annotated, Literal

import torch
from fastapi import APIRouter, Depends, Request
from pydantic import Field

from mcp.serving.embedding import MAX_INPUTS, EmbeddingRequest, checked_inputs, run_embedding
from mcp.serving.http import convert
from mcp.serving.http import schemas as s
from mcp.serving.http.auth import caller_of, state_of
from mcp.serving.http.openai_api import ERRORS, SLA_CLASS
from mcp.serving.request import trace_context
from mcp.serving.state import ServerState
from mcp.serving.tenants import Caller

TokenId = Annotated[int, Field(ge=0, le=(1 << 31) - 1), s._INTEGRAL]  # JSON's 5.0 is an integer, as the schema says
TokenArray = Annotated[list[TokenId], Field(min_length=1)]

router = APIRouter(tags=["openai"])


class EmbeddingBody(s._Request):
    input: s.NonEmptyText | Annotated[list[s.NonEmptyText], Field(min_length=1, max_length=MAX_INPUTS)] | TokenArray | \
        Annotated[list[TokenArray], Field(min_length=1, max_length=MAX_INPUTS)]
    model: str = ""
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: Annotated[int, Field(ge=1), s._INTEGRAL] | None = None
    user: str | None = None


class EmbeddingItem(s._Response):
    object: Literal["embedding"] = "embedding"
    index: int
    embedding: list[float] | str


class EmbeddingUsage(s._Response):
    prompt_tokens: int
    total_tokens: int


class EmbeddingResponse(s._Response):
    object: Literal["list"] = "list"
    data: list[EmbeddingItem]
    model: str
    usage: EmbeddingUsage


@router.post("/v1/embeddings", response_model=EmbeddingResponse, responses=ERRORS)
async def embeddings(body: EmbeddingBody, request: Request, x_sla_class: str | None = SLA_CLASS,
                     state: ServerState = Depends(state_of), caller: Caller = Depends(caller_of)) -> EmbeddingResponse:
    served = EmbeddingRequest(
        request_id=f"emb-{uuid.uuid4().hex}", route=f"{request.method} {request.url.path}",
        inputs=checked_inputs(body.input), tenant=caller.tenant.name, encoding_format=body.encoding_format,
        dimensions=body.dimensions, slo_class=convert.requested_slo_class(x_sla_class),
        timeout_s=state.config.serving.request_timeout_s, user=body.user, model=body.model or None,
        trace_context=trace_context(request.headers))
    state.limiter.admit(caller.tenant)
    answer = await run_embedding(state, caller.tenant, served)
    data = [EmbeddingItem(index=i, embedding=_encoded(row, served.encoding_format))
            for i, row in enumerate(answer.vectors)]
    return EmbeddingResponse(data=data, model=answer.model_key,
                             usage=EmbeddingUsage(prompt_tokens=answer.num_tokens, total_tokens=answer.num_tokens))


def _encoded(vector: torch.Tensor, encoding_format: str) -> list[float] | str:
    if encoding_format == "base64":  # float32, little-endian, as OpenAI sends them
        return base64.b64encode(vector.to(torch.float32).numpy().astype("<f4").tobytes()).decode("ascii")
    return vector.tolist()
