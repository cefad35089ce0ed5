"""Any OpenAI-compatible server as a backend: vLLM, TGI, Triton's OpenAI frontend, llama-server,
``python -m llama_cpp.server``, another MCP 2026.

A prompt goes to ``/v1/completions`` as text (a chat prompt already rendered through the
model's template, so every engine sees the same tokens), with ``logprobs`` asked for: the
server answers text and, where it supports them, each generated token's log-probability.
The text is turned back into token ids with the model's own tokenizer (``encode``).
Teacher-forced scoring is not offered: the OpenAI API's only route to it (``echo`` with
``logprobs``) is a legacy option that servers implement differently or not at all, so an
HTTP candidate is compared on its greedy continuations (``Capabilities.scores`` is NONE).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from mcp.backends.base import (
    Backend, BackendError, Capabilities, Generation, GenerationParams, Health, Prompt, Scores, ScoreKind,
    token_tuple,
)

Encode = Callable[[str], Sequence[int]]


class OpenAIHTTPBackend(Backend):
    capabilities = Capabilities(scores=ScoreKind.NONE, token_ids=False)

    def __init__(self, base_url: str, encode: Encode, model_name: str | None = None, name: str = "http",
                 api_key: str | None = None, timeout_s: float = 300.0) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise BackendError(f"http backend URL {base_url!r} must start with http:// or https://")
        self.name = name
        self.base_url = base_url.rstrip("/").removesuffix("/v1")
        self.encode = encode
        self.model_name = model_name
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.client = None

    def load(self) -> None:
        if self.client is not None:
            return
        import httpx

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        self.client = httpx.Client(base_url=self.base_url, headers=headers, timeout=self.timeout_s)
        if self.model_name is None:
            self.model_name = self._first_model()

    def unload(self) -> None:
        if self.client is not None:
            self.client.close()
        self.client = None

    def health(self) -> Health:
        if self.client is None:
            return Health(False, "not loaded")
        try:
            response = self.client.get("/v1/models")
        except Exception as exc:  # noqa: BLE001 - any transport failure means unhealthy
            return Health(False, f"{self.base_url}: {exc}")
        return Health(response.status_code == 200, f"{self.base_url}/v1/models answered {response.status_code}")

    def generate(self, prompt: Prompt, params: GenerationParams) -> Generation:
        body = {"model": self.model_name, "prompt": prompt.text, "max_tokens": params.max_tokens,
                "temperature": params.temperature, "logprobs": max(params.top_logprobs, 1)}
        if params.seed is not None:
            body["seed"] = params.seed
        started = time.perf_counter()
        choice = self._post("/v1/completions", body)["choices"][0]
        seconds = time.perf_counter() - started
        text = choice.get("text") or ""
        logprobs = (choice.get("logprobs") or {}).get("token_logprobs") or ()
        return Generation(token_tuple(self.encode(text)), text, seconds,
                          token_logprobs=tuple(float(p) for p in logprobs if p is not None))

    def score(self, sequence: Prompt, top_k: int) -> Scores:
        raise BackendError(f"backend {self.name!r} ({self.base_url}) gives no teacher-forced scores over HTTP; "
                           "it is compared on greedy continuations only")

    def versions(self) -> dict[str, str]:
        return {"url": self.base_url, "model": self.model_name or "unknown"}

    def describe(self) -> str:
        return f"{self.name}: {self.base_url} model {self.model_name}"

    def _first_model(self) -> str:
        models = self._get("/v1/models").get("data") or []
        if not models:
            raise BackendError(f"{self.base_url}/v1/models lists no model; give one with http=URL#MODEL")
        return models[0]["id"]

    def _get(self, path: str) -> dict[str, Any]:
        return self._checked(lambda: self.client.get(path), path)

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.client is None:
            raise BackendError(f"backend {self.name!r} is not loaded; call load() first")
        return self._checked(lambda: self.client.post(path, json=body), path)

    def _checked(self, send: Callable, path: str) -> dict[str, Any]:
        import httpx

        try:
            response = send()
        except httpx.HTTPError as exc:
            raise BackendError(f"{self.base_url}{path}: {exc}; is the server running?") from None
        if response.status_code >= 400:
            raise BackendError(f"{self.base_url}{path} answered {response.status_code}: {response.text[:300]}")
        return response.json()
