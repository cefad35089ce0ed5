"""The generation loop for one sequence: prefill, then decode token by token.

``generate`` reads top to bottom: check the prompt, prefill it into a fresh KV cache, then
repeatedly sample -> detokenize -> check stops -> forward the new token. It yields one
``StepOutput`` per generated token. The continuous-batching scheduler replaces this loop
for served traffic; this is the exact single-sequence path the SDK and tests use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch

from mcp.engine.models.llama import LlamaForCausalLM
from mcp.engine.sampler import Sampler, SamplingParams
from mcp.engine.stop import StopChecker
from mcp.engine.tokenizer import Tokenizer
from mcp.runtime.errors import ContextLengthError, InvalidRequestError


@dataclass(frozen=True)
class StepOutput:
    """One generated token and the text it releases (text may be held back: "")."""

    token_id: int
    text: str
    logprob: float | None
    top_logprobs: tuple[tuple[int, float], ...]
    finish_reason: str | None  # None while generating; then "stop", "length" or "cancelled"


class Generator:
    def __init__(self, model: LlamaForCausalLM, tokenizer: Tokenizer, max_context: int) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.max_context = max_context
        self.device = model.embed_tokens.device

    def check_prompt(self, prompt_ids: Sequence[int]) -> None:
        if not prompt_ids:
            raise InvalidRequestError("the prompt is empty: give at least one token of text")
        if len(prompt_ids) >= self.max_context:
            raise ContextLengthError(
                f"the prompt has {len(prompt_ids)} tokens but the context holds {self.max_context} "
                "(prompt plus at least one generated token); shorten the prompt"
            )

    @torch.inference_mode()
    def score(self, token_ids: Sequence[int]) -> torch.Tensor:
        """Teacher-forced logits: fp32 [T, vocab], row t predicting token t+1."""
        self.check_prompt(token_ids)
        cache = self.model.new_cache(1, len(token_ids))
        hidden = self._forward(token_ids, cache, start=0)
        return self.model.compute_logits(hidden[0])

    def generate(
        self,
        prompt_ids: Sequence[int],
        params: SamplingParams,
        should_cancel: Callable[[], bool] | None = None,
    ) -> Iterator[StepOutput]:
        """Yield one StepOutput per generated token; the last one carries finish_reason."""
        self.check_prompt(prompt_ids)
        budget = min(params.max_tokens, self.max_context - len(prompt_ids))
        with torch.inference_mode():
            yield from self._decode(list(prompt_ids), params, budget, should_cancel)

    def _decode(self, prompt_ids, params, budget, should_cancel) -> Iterator[StepOutput]:
        cache = self.model.new_cache(1, len(prompt_ids) + budget)
        logits = self.model.compute_logits(self._forward(prompt_ids, cache, 0)[0, -1])
        sampler = Sampler(params, self.device)
        detokenizer = self.tokenizer.incremental_decoder(skip_special_tokens=True)
        stopper = StopChecker(params.stop)
        stop_ids = set(params.stop_token_ids)
        if not params.ignore_eos:
            stop_ids.update(self.tokenizer.eos_token_ids)
        generated: list[int] = []
        position = len(prompt_ids)
        for step in range(budget):
            token = sampler.sample(logits, prompt_ids, generated)
            generated.append(token.token_id)
            text, finish = self._release(token.token_id, detokenizer, stopper, stop_ids)
            if finish is None and step == budget - 1:
                finish = "length"
            if finish is None and should_cancel is not None and should_cancel():
                finish = "cancelled"
            if finish is not None and stopper.matched is None:
                text += _drain(detokenizer, stopper)
            yield StepOutput(token.token_id, text, token.logprob, token.top_logprobs, finish)
            if finish is not None:
                return
            logits = self.model.compute_logits(self._forward([token.token_id], cache, position)[0, -1])
            position += 1

    @staticmethod
    def _release(token_id, detokenizer, stopper, stop_ids) -> tuple[str, str | None]:
        """Text this token releases and, if it ends the sequence, why."""
        if token_id in stop_ids:
            return "", "stop"
        text, stopped = stopper.feed(detokenizer.push(token_id))
        return text, ("stop" if stopped else None)

    def _forward(self, token_ids: Sequence[int], cache, start: int) -> torch.Tensor:
        ids = torch.tensor([list(token_ids)], dtype=torch.long, device=self.device)  # [1, T]
        positions = torch.arange(start, start + ids.shape[1], device=self.device)[None]  # [1, T]
        return self.model(ids, positions, cache, start)


def _drain(detokenizer, stopper: StopChecker) -> str:
    """At the end of a sequence not ended by a stop string: release everything held back."""
    text, stopped = stopper.feed(detokenizer.flush())
    return text if stopped else text + stopper.flush()
