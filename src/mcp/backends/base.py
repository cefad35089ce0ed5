"""The Backend contract: one model behind one engine, as the consistency matrix and MSAL see it.

Every backend takes token ids (and the same text, for servers that only take text), so that
all engines see exactly the same prompt; tokenization is the caller's. Two operations are
compared across engines:

- ``generate``: a continuation from a prompt, greedy (``temperature == 0``) or sampled,
  with the generated token ids and, when asked, each step's top-k log-probabilities;
- ``score``: teacher-forced next-token predictions over a given token sequence (row t
  predicts token t+1), as full logits or as top-k log-probabilities, whichever the backend
  can give (``Capabilities.scores``).

A backend is created unloaded; ``load`` makes it ready, ``unload`` frees it, ``health``
says whether it can answer now. The native engine, Hugging Face transformers, llama.cpp and
any OpenAI-compatible server implement it (``mcp.backends.registry``).
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from mcp.base.errors import MCPError


class BackendError(MCPError):
    """A backend could not be created, loaded, or could not answer."""


class ScoreKind(enum.Enum):
    """What ``score`` returns, from most to least informative."""

    LOGITS = "logits"  # full next-token logits at every position
    TOP_LOGPROBS = "top_logprobs"  # the k most probable next tokens and their log-probabilities
    NONE = "none"  # no teacher-forced scores: generated tokens (or text) only


@dataclass(frozen=True)
class Capabilities:
    scores: ScoreKind
    token_ids: bool  # generate returns token ids (False: text only, re-tokenized by the caller)
    max_top_logprobs: int = 20  # the largest k that score/generate can return


@dataclass(frozen=True)
class Prompt:
    """The same prompt as token ids and as the text those ids decode to."""

    token_ids: tuple[int, ...]
    text: str


@dataclass(frozen=True)
class GenerationParams:
    max_tokens: int
    temperature: float = 0.0  # 0 = greedy
    seed: int | None = None
    top_logprobs: int = 0  # per generated token, 0 = none


@dataclass(frozen=True)
class TopLogprobs:
    """The k most probable next tokens at one position, most probable first."""

    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]


@dataclass(frozen=True)
class Generation:
    token_ids: tuple[int, ...]
    text: str
    seconds: float  # wall time of the whole call, prefill included
    top_logprobs: tuple[TopLogprobs, ...] = ()  # one per generated token when asked for
    token_logprobs: tuple[float, ...] = ()  # each generated token's logprob, where only that is known


@dataclass(frozen=True)
class Scores:
    """Teacher-forced predictions over T tokens: row t predicts token t+1.

    ``logits`` is fp32 [T, vocab] when the backend has full logits; ``top`` holds T entries
    when it gives top-k log-probabilities only (and may be filled from logits too).
    """

    logits: torch.Tensor | None = None
    top: tuple[TopLogprobs, ...] = field(default=())

    @property
    def num_positions(self) -> int:
        return self.logits.shape[0] if self.logits is not None else len(self.top)


@dataclass(frozen=True)
class Health:
    ok: bool
    detail: str


class Backend(abc.ABC):
    """One model on one engine. Subclasses set ``name`` and ``capabilities``."""

    name: str
    capabilities: Capabilities

    @abc.abstractmethod
    def load(self) -> None:
        """Make the backend ready to answer (load weights, connect); idempotent."""

    @abc.abstractmethod
    def unload(self) -> None:
        """Free what ``load`` took; the backend may be loaded again."""

    @abc.abstractmethod
    def health(self) -> Health:
        """Whether the backend can answer now, and why not."""

    @abc.abstractmethod
    def generate(self, prompt: Prompt, params: GenerationParams) -> Generation:
        """A continuation of ``prompt``; EOS does not stop it (every engine runs ``max_tokens``)."""

    @abc.abstractmethod
    def score(self, sequence: Prompt, top_k: int) -> Scores:
        """Teacher-forced predictions over ``sequence`` (``capabilities.scores`` says which kind);
        raises BackendError when the backend has none."""

    def versions(self) -> dict[str, str]:
        """The engine's and its libraries' versions, for reports and golden files."""
        return {}

    def kv_bytes_per_token(self) -> int | None:
        """KV cache bytes one token of context takes, when the backend can tell."""
        return None

    def describe(self) -> str:
        """One line: what runs (precision, kernels, URL)."""
        return self.name


def top_from_logits(logits: torch.Tensor, k: int) -> tuple[TopLogprobs, ...]:
    """The top-k log-probabilities of every row of fp32 logits [T, vocab]."""
    values, ids = torch.log_softmax(logits.float(), -1).topk(k, dim=-1)
    return tuple(TopLogprobs(tuple(i.tolist()), tuple(v.tolist())) for i, v in zip(ids, values))


def check_loaded(backend: Backend, loaded: object) -> None:
    if loaded is None:
        raise BackendError(f"backend {backend.name!r} is not loaded; call load() first")


def kv_bytes(num_layers: int, num_kv_heads: int, head_dim: int, element_bytes: int) -> int:
    """Keys and values of every layer for one token."""
    return 2 * num_layers * num_kv_heads * head_dim * element_bytes


def token_tuple(ids: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(i) for i in ids)
