"""``GET /attestation?nonce=...``: the server's signed measurement evidence (docs/security.md).

Authenticated like the inference API (any tenant's key; open when the server runs open): the
evidence names the models served, and each request may cost a TPM quote.
"""

from __future__ import annotations

import anyio.to_thread
from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse

from mcp.serving.errors import WireError
from mcp.serving.http.auth import caller_of, state_of
from mcp.serving.http.errors import error_response
from mcp.serving.http.openai_api import ERRORS
from mcp.serving.measured import observe_policy
from mcp.serving.state import ServerState
from mcp.serving.tenants import Caller

router = APIRouter(tags=["operations"])


@router.get("/attestation", responses=ERRORS)
async def attestation(nonce: str | None = Query(None, description="8 to 64 random bytes, hex or base64url"),
                      caller: Caller = Depends(caller_of), state: ServerState = Depends(state_of)) -> JSONResponse:
    """Evidence over ``nonce``: the measurement log, its replayed PCR values, the current models,
    a TPM quote and an SEV-SNP report where configured, signed by the instance key."""
    if state.attestation is None:
        return error_response(WireError(404, "invalid_request_error", "attestation_off", "NOT_FOUND",
                                        "attestation is off on this server; add an attestation: section "
                                        "to its config (docs/security.md)"))
    observe_policy(state.attestation, state.config, state.governance)
    serving = {name: version.key for name, version in state.host.current().items()}
    evidence = await anyio.to_thread.run_sync(state.attestation.evidence, nonce, serving)
    return JSONResponse(evidence)
