"""One sequence's generation state, and what one step of it produces.

A ``SequenceState`` turns its row of logits into a token with its own sampler, releases the
text that token completes (whole characters only, stop strings held back) and decides
whether the sequence is finished. A batch holds one per prompt, so every sequence keeps
its own seed, stops and budget however it is batched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mcp.base.errors import ContextLengthError, InvalidRequestError
from mcp.engine.grammar import GrammarState
from mcp.engine.params import SampledToken, SamplingParams
from mcp.engine.stop import StopChecker
from mcp.engine.tokenizer import Tokenizer


def check_prompt(prompt_ids: Sequence[int], max_context: int) -> None:
    """Refuse an empty prompt, or one that leaves no room in the context for a generated token."""
    if not prompt_ids:
        raise InvalidRequestError("the prompt is empty: give at least one token of text")
    if len(prompt_ids) >= max_context:
        raise ContextLengthError(
            f"the prompt has {len(prompt_ids)} tokens but the context holds {max_context} "
            "(prompt plus at least one generated token); shorten the prompt"
        )


@dataclass(frozen=True)
class StepOutput:
    """One generated token and the text it releases (text may be held back: "")."""

    token_id: int
    text: str
    logprob: float | None
    top_logprobs: tuple[tuple[int, float], ...]
    finish_reason: str | None  # None while generating; then "stop", "length" or "cancelled"


class TokenSampler(Protocol):
    """What picks a sequence's tokens: ``sampler.Sampler`` (torch) or ``lean.sampling.Sampler`` (numpy)."""

    def sample(self, logits: Any, prompt_ids: Sequence[int], generated_ids: Sequence[int]) -> SampledToken: ...


class SequenceState:
    """One prompt's generation state: its sampler, detokenizer and stop checks."""

    def __init__(
        self, index: int, prompt_ids: list[int], params: SamplingParams, budget: int,
        tokenizer: Tokenizer, sampler: TokenSampler,
    ) -> None:
        self.index = index
        self.prompt_ids = prompt_ids
        self.budget = budget
        self.max_len = len(prompt_ids) + budget
        self.sampler = sampler  # built from params, with the request's seed
        self.detokenizer = tokenizer.incremental_decoder(skip_special_tokens=True)
        self.stopper = StopChecker(params.stop)
        self.stop_ids = set(params.stop_token_ids)
        if not params.ignore_eos:
            self.stop_ids.update(tokenizer.eos_token_ids)
        fmt = params.response_format
        self.grammar = GrammarState(fmt, tokenizer) if fmt is not None and fmt.constrains else None
        self.generated_ids: list[int] = []
        self.num_cached = 0  # tokens in its KV cache row
        self.finished = False

    def advance(self, logits: Any, cancelled: Callable[[], bool]) -> StepOutput:
        """Sample the next token from ``logits`` [vocab] and say what it releases. With a
        response format, the grammar masks ``logits`` (in place) first."""
        if self.grammar is not None:
            logits = self.grammar.mask(logits)
        token = self.sampler.sample(logits, self.prompt_ids, self.generated_ids)
        self.generated_ids.append(token.token_id)
        text, finish = self._release(token.token_id)
        if self.grammar is not None and finish is None:
            self.grammar.consume(token.token_id)
            finish = "stop" if self.grammar.done else None  # complete: nothing but EOS could follow
        if finish is None and len(self.generated_ids) == self.budget:
            finish = "length"
        if finish is None and cancelled():
            finish = "cancelled"
        if finish is not None and self.stopper.matched is None:
            text += self._drain()
        self.finished = finish is not None
        return StepOutput(token.token_id, text, token.logprob, token.top_logprobs, finish)

    def release_held(self) -> str:
        """When something other than its own rules ends the sequence (a cancel, a deadline):
        the text still held back (a possible start of a stop string, an unfinished character)."""
        self.finished = True
        return self._drain() if self.stopper.matched is None else ""

    def _release(self, token_id: int) -> tuple[str, str | None]:
        """Text this token releases and, if it ends the sequence, why."""
        if token_id in self.stop_ids:
            return "", "stop"
        text, stopped = self.stopper.feed(self.detokenizer.push(token_id))
        return text, ("stop" if stopped else None)

    def _drain(self) -> str:
        """At the end of a sequence not ended by a stop string: release everything held back."""
        text, stopped = self.stopper.feed(self.detokenizer.flush())
        return text if stopped else text + self.stopper.flush()


class CancelCheck:
    """``should_cancel`` asked at most once per step, and only when a sequence goes on."""

    def __init__(self, should_cancel: Callable[[], bool] | None) -> None:
        self._ask = should_cancel
        self._answer: bool | None = None

    def __call__(self) -> bool:
        if self._answer is None:
            self._answer = self._ask is not None and bool(self._ask())
        return self._answer
