"""``/console``: the page, its assets, who is signed in, and the live overview's push stream.

The page and its assets carry no data and need no key; every ``/console/api`` route takes the
same ``Authorization: Bearer`` key the API takes (the page keeps it in the tab's session
storage and sends it on each fetch). Every answer carries a strict Content-Security-Policy:
scripts, styles and connections from this origin only, no inline script, no frames.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from importlib import resources

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from mcp.base.errors import ModelNotFoundError
from mcp.serving.console.window import MetricsWindow
from mcp.serving.http.auth import admin_of, caller_of, state_of
from mcp.serving.state import ServerState
from mcp.serving.tenants import Caller

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "font-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
SECURITY_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                    "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY", "Cache-Control": "no-store"}
ASSETS = {"console.js": "text/javascript", "charts.js": "text/javascript", "pages.js": "text/javascript",
          "gateway_pages.js": "text/javascript", "console.css": "text/css"}
FRAME_EVERY_S = 1.0

router = APIRouter(include_in_schema=False)


def asset_bytes(name: str) -> bytes:
    """A file of the package's ``assets`` folder (the console works air-gapped: nothing else is loaded)."""
    return resources.files("mcp.serving.console").joinpath("assets", name).read_bytes()


def page_router(index: str) -> APIRouter:
    """``/console`` (the page ``index``) and ``/console/assets/*``: the server's console and the
    gateway's share the assets, each with a page of its own."""
    pages = APIRouter(prefix="/console", include_in_schema=False)

    @pages.get("")
    @pages.get("/")
    async def page() -> Response:
        return Response(asset_bytes(index), media_type="text/html; charset=utf-8", headers=SECURITY_HEADERS)

    @pages.get("/assets/{name}")
    async def asset(name: str) -> Response:
        if name not in ASSETS:
            raise ModelNotFoundError(f"the console has no asset {name[:80]!r}; it serves {', '.join(sorted(ASSETS))}")
        return Response(asset_bytes(name), media_type=f"{ASSETS[name]}; charset=utf-8", headers=SECURITY_HEADERS)

    return pages


router.include_router(page_router("index.html"))


@router.get("/console/api/whoami")
async def whoami(caller: Caller = Depends(caller_of), state: ServerState = Depends(state_of)) -> JSONResponse:
    """The signed-in tenant and what its role lets the page show."""
    return JSONResponse({"tenant": caller.tenant.name, "role": caller.tenant.role,
                         "admin": caller.tenant.role == "admin", "open": state.tenants.open,
                         "audit": state.governance is not None and state.governance.audit is not None},
                        headers=SECURITY_HEADERS)


@router.get("/console/api/overview", dependencies=[Depends(admin_of)])
async def overview(request: Request, state: ServerState = Depends(state_of)) -> StreamingResponse:
    """Server-sent events: one ``frame`` a second (serving/console/window.py) until the page leaves."""
    window = _window_of(request, state)
    return StreamingResponse(_frames(request, state, window), media_type="text/event-stream",
                             headers={**SECURITY_HEADERS, "X-Accel-Buffering": "no"})


async def _frames(request: Request, state: ServerState, window: MetricsWindow) -> AsyncIterator[bytes]:
    """Frames until the page leaves or the server drains (an open stream must not hold up a shutdown)."""
    while not state.draining and not await request.is_disconnected():
        frame = window.frame().to_json()
        frame["current"] = {name: version.version for name, version in state.host.current().items()}
        yield f"event: frame\ndata: {json.dumps(frame)}\n\n".encode()
        await asyncio.sleep(FRAME_EVERY_S)


def _window_of(request: Request, state: ServerState) -> MetricsWindow:
    """The app's one window: every console tab reads the same snapshots."""
    app_state = request.app.state
    if getattr(app_state, "console_window", None) is None:
        app_state.console_window = MetricsWindow(state.metrics.registry)
    return app_state.console_window
