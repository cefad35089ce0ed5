"""The FastAPI application: the routes of this server under the one error format and body limit.

The error format lives in ``serving.http.errors`` and the state the routes share in
``serving.state``; both are re-exported here under their old names.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from mcp.serving.http import (admin_api, attestation_api, embeddings_api, messages_api, openai_api, ops_api,
                              responses_api)
from mcp.serving.http.errors import BodyLimit, error_response, field_error, install_error_handlers  # noqa: F401
from mcp.serving.state import FAULT_DELAY_ENV, ServerState, fault_delay_from_env  # noqa: F401


def create_app(state: ServerState) -> FastAPI:
    app = FastAPI(title="MCP 2026", version="1", summary="OpenAI-compatible inference API")
    app.state.server = state
    for module in (openai_api, responses_api, messages_api, embeddings_api, admin_api, ops_api, attestation_api):
        app.include_router(module.router)
    if state.config.serving.console_served:
        _add_console(app)
    install_error_handlers(app)
    app.openapi = lambda: _openapi_without_422(app)
    return BodyLimit(app, state.config.serving.limits.max_body_bytes, state.config.serving.body_timeout_s)


def _add_console(app: FastAPI) -> None:
    """The web console (serving/console/, docs/console.md): its page and its read-only views."""
    from mcp.serving.console import governance_views, routes, views

    for module in (routes, views, governance_views):
        app.include_router(module.router)


def _openapi_without_422(app: FastAPI) -> dict:
    """FastAPI documents a 422 for every route with parameters; ours answer 400 (OpenAI's code)."""
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
        for path in schema["paths"].values():
            for operation in path.values():
                if operation.get("responses", {}).pop("422", None) is not None:
                    operation["responses"].setdefault("400", {
                        "description": "Bad request",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}})
        for name in ("HTTPValidationError", "ValidationError"):
            schema.get("components", {}).get("schemas", {}).pop(name, None)
        _add_links(schema)
        app.openapi_schema = schema
    return app.openapi_schema


# OpenAPI links: how one answer feeds the next request (schemathesis' stateful tests follow them).
_HI = {"max_tokens": 2, "messages": [{"role": "user", "content": "Hi"}]}
LINKS = {
    ("/v1/models", "get"): {
        "ChatWithListedModel": {"operationRef": "#/paths/~1v1~1chat~1completions/post",
                                "requestBody": {**_HI, "model": "$response.body#/data/0/id"}},
        "CompleteWithListedModel": {"operationRef": "#/paths/~1v1~1completions/post",
                                    "requestBody": {"prompt": "Hi", "max_tokens": 2,
                                                    "model": "$response.body#/data/0/id"}}},
    ("/admin/models", "post"): {
        "SwapToLoaded": {"operationRef": "#/paths/~1admin~1models~1{name}~1swap/post",
                         "parameters": {"path.name": "$response.body#/name"},
                         "requestBody": {"version": "$response.body#/version"}},
        "UnloadLoaded": {"operationRef": "#/paths/~1admin~1models~1{name}~1versions~1{version}/delete",
                         "parameters": {"path.name": "$response.body#/name",
                                        "path.version": "$response.body#/version"}}},
}


def _add_links(schema: dict) -> None:
    for (path, method), links in LINKS.items():
        schema["paths"][path][method]["responses"]["200"]["links"] = links
