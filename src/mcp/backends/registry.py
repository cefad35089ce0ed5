"""Backends by name, imported only when asked for.

An engine spec names one backend over one model:

    native-fp32 | native-int4 | native-int8 | native-bf16   the native engine at that plan
    transformers                                            Hugging Face transformers, fp32
    llamacpp                                                llama.cpp via llama-cpp-python
    http=URL[#MODEL]                                        an OpenAI-compatible server

A backend whose package is missing is refused at creation with the extra that installs it.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp.backends.base import Backend, BackendError


class BackendUnavailable(BackendError):
    """A backend's optional package is not installed; the message names the extra."""


@dataclass(frozen=True)
class ModelSources:
    """One model as each engine loads it: the source (a GGUF file or a Hugging Face folder), its
    compiled ``.mcp``, the tokenizer's encode."""

    source: Path
    mcp: Path
    encode: Callable[[str], Sequence[int]]


@dataclass(frozen=True)
class BackendEntry:
    module: str  # imported on first use
    packages: tuple[str, ...]  # import names it needs beyond the core install
    extra: str  # pip extra of mcp2026 that installs them
    build: Callable[[object, str, str, ModelSources], Backend]  # (module, spec name, argument, sources)


def _native(module, name: str, argument: str, sources: ModelSources) -> Backend:
    return module.NativeBackend(sources.mcp, module.native_options(argument), name=name)


def _transformers(module, name: str, argument: str, sources: ModelSources) -> Backend:
    return module.TransformersBackend(sources.source, name=name)


def _llamacpp(module, name: str, argument: str, sources: ModelSources) -> Backend:
    if sources.source.suffix != ".gguf":
        raise BackendError(f"the llamacpp engine reads GGUF files, not {sources.source.name!r}: "
                           "give --model a .gguf file, or leave llamacpp out")
    return module.LlamaCppBackend(sources.source, name=name)


def _http(module, name: str, argument: str, sources: ModelSources) -> Backend:
    url, _, model_name = argument.partition("#")
    if not url:
        raise BackendError("the http engine needs a URL: http=http://127.0.0.1:8000[#MODEL]")
    return module.OpenAIHTTPBackend(url, sources.encode, model_name or None, name="http")


BACKENDS: dict[str, BackendEntry] = {
    "native": BackendEntry("mcp.backends.native", (), "", _native),
    "transformers": BackendEntry("mcp.backends.hf_transformers", ("transformers", "accelerate"), "test",
                                 _transformers),
    "llamacpp": BackendEntry("mcp.backends.llamacpp", ("llama_cpp",), "llamacpp", _llamacpp),
    "http": BackendEntry("mcp.backends.openai_http", ("httpx",), "bench", _http),
}
NATIVE_PRECISIONS = ("fp32", "int4", "int8", "bf16")


def parse_spec(spec: str) -> tuple[str, str]:
    """``native-int4`` -> ("native", "int4"); ``http=URL`` -> ("http", URL); others -> (name, "")."""
    spec = spec.strip()
    if spec.startswith("http="):
        return "http", spec.removeprefix("http=")
    if spec.startswith("native-") and spec.removeprefix("native-") in NATIVE_PRECISIONS:
        return "native", spec.removeprefix("native-")
    if spec in BACKENDS and spec not in ("native", "http"):
        return spec, ""
    raise BackendError(f"unknown engine {spec!r}; use one of {', '.join(known_specs())}")


def known_specs() -> list[str]:
    return [*(f"native-{p}" for p in NATIVE_PRECISIONS), "transformers", "llamacpp", "http=URL[#MODEL]"]


def check_available(spec: str) -> None:
    """Raise BackendUnavailable, naming the extra, when the spec's packages are not installed."""
    kind, _ = parse_spec(spec)
    entry = BACKENDS[kind]
    missing = [p for p in entry.packages if importlib.util.find_spec(p) is None]
    if missing:
        raise BackendUnavailable(
            f"engine {spec!r} needs {', '.join(missing)}, which is not installed; "
            f"install it with: pip install 'mcp2026[{entry.extra}]'")


def create_backend(spec: str, sources: ModelSources) -> Backend:
    """The backend a spec names, unloaded; its module is imported now, not before."""
    check_available(spec)
    kind, argument = parse_spec(spec)
    entry = BACKENDS[kind]
    name = "http" if kind == "http" else spec.strip()
    return entry.build(importlib.import_module(entry.module), name, argument, sources)
