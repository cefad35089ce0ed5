"""Decoding over a contiguous KV cache: teacher-forced scoring, and a reference generator.

Served traffic, the SDK, the consistency matrix's native backends and the benchmarks run the
production path instead (engine/loop.py: paged KV, the native step). This module is kept, under
a name that says what it is, for what truly needs one whole sequence in one contiguous cache:

- ``score``: teacher-forced logits at every position of a sequence (the quality metrics in
  ops/quality.py, the backends' ``score``, the oracle tests against transformers/llama.cpp).
  The engine loop samples one token per step and never exposes a prompt's per-position logits.
- ``generate`` / ``generate_batch``: an independent decode loop (no paging, no scheduler, no
  native step) that the engine-loop tests compare against, so a bug in paging or scheduling
  cannot hide by being in both sides of a comparison.

``generate_batch`` reads top to bottom: check every prompt, allocate one KV cache for the
batch, prefill the prompts (padded together in groups of similar length), then repeat one
forward for all live sequences -> each samples, detokenizes and checks its own stops ->
finished sequences leave the cache. ``generate`` is a batch of one.

``NativeEngine`` does not build one: call ``contiguous_decoder(engine)`` where it is needed
(cheap: it holds references to the engine's model and tokenizer, no weights of its own).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import torch

from mcp.base.errors import InvalidRequestError
from mcp.engine.kv.cache import KVCache
from mcp.engine.layers.attention import attention_inputs, static_attention_inputs
from mcp.engine.layers.rotary import RotaryEmbedding
from mcp.engine.models.llama import LlamaForCausalLM
from mcp.engine.sampler import Sampler, SamplingParams
from mcp.engine.sequence import CancelCheck, SequenceState, StepOutput, check_prompt
from mcp.engine.tokenizer import Tokenizer

if TYPE_CHECKING:
    from mcp.engine.engine import NativeEngine

# Prompts padded into one prefill forward may differ by this many tokens: a forward over
# a few rows costs about as much as reading the weights once, so some padding is cheaper
# than another forward (measured on CPU: 8 prompts of 6-8 tokens 3.7x faster together).
MAX_PREFILL_PADDING = 64
MAX_PREFILL_TOKENS = 8192  # rows x padded length of one prefill forward


class ContiguousDecoder:
    """Runs a model over batches of prompts. Weights are read-only: calls may overlap."""

    def __init__(
        self, model: LlamaForCausalLM, tokenizer: Tokenizer, max_context: int, compile_step: bool = False
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.max_context = max_context
        self.device = model.embed_tokens.device
        self.decode_step = DecodeStep(model, compile_step)

    def check_prompt(self, prompt_ids: Sequence[int]) -> None:
        check_prompt(prompt_ids, self.max_context)

    def check_batch(self, prompts_ids: Sequence[Sequence[int]], name: str = "prompts") -> None:
        """Check every prompt of a batch; the error names the first bad one as ``name[index]``."""
        if not prompts_ids:
            raise InvalidRequestError(f"{name} is empty: give at least one")
        for index, prompt_ids in enumerate(prompts_ids):
            try:
                self.check_prompt(prompt_ids)
            except InvalidRequestError as error:
                raise type(error)(f"{name}[{index}]: {error}") from None

    @torch.inference_mode()
    def score(self, token_ids: Sequence[int]) -> torch.Tensor:
        """Teacher-forced logits: fp32 [T, vocab], row t predicting token t+1."""
        self.check_prompt(token_ids)
        cache = self.model.new_cache(1, len(token_ids))
        ids = torch.tensor([list(token_ids)], device=self.device)  # [1, T]
        hidden = self.model(ids, cache, attention_inputs([0], len(token_ids), cache))
        return self.model.compute_logits(hidden[0])

    def generate(
        self,
        prompt_ids: Sequence[int],
        params: SamplingParams,
        should_cancel: Callable[[], bool] | None = None,
    ) -> Iterator[StepOutput]:
        """Yield one StepOutput per generated token; the last one carries finish_reason.

        The prompt is checked by this call, before the first token is asked for.
        """
        self.check_prompt(prompt_ids)
        run = self._start([prompt_ids], [params], should_cancel)
        return (outputs[0] for outputs in run)

    def generate_batch(
        self,
        prompts_ids: Sequence[Sequence[int]],
        params: SamplingParams | Sequence[SamplingParams],
        should_cancel: Callable[[], bool] | None = None,
    ) -> BatchRun:
        """Generate for several prompts at once; ``params`` is one for all or one per prompt.

        Every prompt is checked by this call (nothing runs if one is bad). The returned
        ``BatchRun`` yields, per step, a list with one entry per prompt: that prompt's new
        StepOutput, or None when it produced none in this step (its prefill has not run yet,
        or it has finished). Each prompt's outputs, read in order, are what ``generate``
        would yield for it alone; ``should_cancel`` cancels them all.
        """
        self.check_batch(prompts_ids)
        return self._start(prompts_ids, _params_per_prompt(params, len(prompts_ids)), should_cancel)

    def _start(self, prompts_ids, per_prompt, should_cancel) -> BatchRun:
        sequences = [
            SequenceState(index, list(prompt_ids), p, self._budget(prompt_ids, p), self.tokenizer,
                          Sampler(p, self.device))
            for index, (prompt_ids, p) in enumerate(zip(prompts_ids, per_prompt))
        ]
        return BatchRun(self.model, self.decode_step, sequences, should_cancel)

    def _budget(self, prompt_ids: Sequence[int], params: SamplingParams) -> int:
        return min(params.max_tokens, self.max_context - len(prompt_ids))


def contiguous_decoder(engine: NativeEngine, compile_step: bool = False) -> ContiguousDecoder:
    """A contiguous-cache decoder over ``engine``'s model, tokenizer and context limit."""
    return ContiguousDecoder(engine.model, engine.tokenizer, engine.max_context, compile_step)


class BatchRun(Iterator[list[StepOutput | None]]):
    """One batch being generated; iterate it for the outputs of each step.

    Row r of the KV cache holds ``live[r]``; ``num_rows`` is the cache's batch size now,
    which shrinks as sequences finish (their rows are removed, not masked).
    """

    def __init__(
        self,
        model: LlamaForCausalLM,
        decode_step: DecodeStep,
        sequences: list[SequenceState],
        should_cancel: Callable[[], bool] | None,
    ) -> None:
        self._model = model
        self._decode_step = decode_step
        self._num_prompts = len(sequences)
        self._should_cancel = should_cancel
        # Longest first, so that prompts of similar length are neighbours and prefill together.
        self._live = sorted(sequences, key=lambda s: -len(s.prompt_ids))
        self._cache = model.new_cache(len(sequences), max(s.max_len for s in sequences))
        self._steps = self._run()

    @property
    def num_rows(self) -> int:
        return self._cache.num_rows

    def __next__(self) -> list[StepOutput | None]:
        return next(self._steps)

    def _run(self) -> Iterator[list[StepOutput | None]]:
        groups = _prefill_groups([len(s.prompt_ids) for s in self._live])
        for number, (start, stop) in enumerate(groups, 1):
            group = self._live[start:stop]
            outputs = self._emit(group, self._prefill(group, self._cache.select(start, stop)))
            if number == len(groups):  # rows move when compacting: only once all are prefilled
                self._compact()
            yield outputs
        while self._live:
            outputs = self._emit(self._live, self._decode())
            self._compact()
            yield outputs

    @torch.inference_mode()
    def _prefill(self, group: list[SequenceState], cache: KVCache) -> torch.Tensor:
        """Right-padded prompts [B, T] in one forward; fp32 logits [B, vocab] at each last token."""
        longest = len(group[0].prompt_ids)
        ids = [s.prompt_ids + [0] * (longest - len(s.prompt_ids)) for s in group]
        inputs = attention_inputs([0] * len(group), longest, cache)
        hidden = self._model(torch.tensor(ids, device=cache.slot_ids.device), cache, inputs)  # [B, T, hidden]
        rows = torch.arange(len(group), device=hidden.device)
        last = torch.tensor([len(s.prompt_ids) - 1 for s in group], device=hidden.device)
        for s in group:
            s.num_cached = len(s.prompt_ids)
        return self._model.compute_logits(hidden[rows, last])

    @torch.inference_mode()
    def _decode(self) -> torch.Tensor:
        """Every live sequence's last token [B, 1] in one forward; fp32 logits [B, vocab]."""
        ids = torch.tensor([[s.generated_ids[-1]] for s in self._live], device=self._cache.slot_ids.device)
        logits = self._decode_step(ids, [s.num_cached for s in self._live], self._cache)
        for s in self._live:
            s.num_cached += 1
        return logits

    @torch.inference_mode()
    def _emit(self, group: list[SequenceState], logits: torch.Tensor) -> list[StepOutput | None]:
        outputs: list[StepOutput | None] = [None] * self._num_prompts
        cancelled = CancelCheck(self._should_cancel)
        for row, sequence in enumerate(group):
            outputs[sequence.index] = sequence.advance(logits[row], cancelled)
        return outputs

    def _compact(self) -> None:
        """Remove finished rows; the last live row moves into each freed one."""
        live = self._live
        for row in reversed(range(len(live))):
            if live[row].finished:
                self._cache.remove(row, live[-1].num_cached)
                live[row] = live[-1]
                live.pop()


class DecodeStep:
    """One decode forward: each live row's last token [B, 1] -> fp32 logits [B, vocab].

    Eager, it reads only the cache slots in use and skips the mask while rows are level.
    Compiled (``torch.compile`` with symbolic shapes), it reads the whole cache under a mask:
    then the batch size and the cache length are its only shapes, and both stay symbolic,
    so it compiles once for B = 1 and once for B > 1 (about a minute each on 2 CPU cores).
    """

    def __init__(self, model: LlamaForCausalLM, compile_step: bool = False) -> None:
        self.model = model
        self._compiled = torch.compile(self._static, dynamic=True) if compile_step else None
        self._rotaries = [m for m in model.modules() if isinstance(m, RotaryEmbedding)]

    def __call__(self, input_ids: torch.Tensor, lengths: list[int], cache: KVCache) -> torch.Tensor:
        if self._compiled is not None:
            for rotary in self._rotaries:  # the traced step reads the tables' rows as they are
                rotary.fill(max(lengths) + 1)
            positions = torch.tensor(lengths, device=input_ids.device)[:, None]  # [B, 1]
            return self._compiled(input_ids, positions, cache)
        hidden = self.model(input_ids, cache, attention_inputs(lengths, 1, cache))
        return self.model.compute_logits(hidden[:, 0])

    def _static(self, input_ids: torch.Tensor, positions: torch.Tensor, cache: KVCache) -> torch.Tensor:
        hidden = self.model(input_ids, cache, static_attention_inputs(positions, cache))
        return self.model.compute_logits(hidden[:, 0])


def _params_per_prompt(
    params: SamplingParams | Sequence[SamplingParams], num_prompts: int
) -> list[SamplingParams]:
    if isinstance(params, SamplingParams):
        return [params] * num_prompts
    per_prompt = list(params)
    if len(per_prompt) != num_prompts:
        raise InvalidRequestError(f"got {len(per_prompt)} sampling params for {num_prompts} prompts")
    for index, p in enumerate(per_prompt):
        if not isinstance(p, SamplingParams):
            raise InvalidRequestError(f"params[{index}] must be SamplingParams, got {type(p).__name__}")
    return per_prompt


def _prefill_groups(lengths: list[int]) -> list[tuple[int, int]]:
    """Split prompt lengths (longest first) into runs (start, stop) to prefill together."""
    groups: list[tuple[int, int]] = []
    start = 0
    for index, length in enumerate(lengths):
        too_short = lengths[start] - length > MAX_PREFILL_PADDING
        too_big = (index - start + 1) * lengths[start] > MAX_PREFILL_TOKENS
        if index > start and (too_short or too_big):
            groups.append((start, index))
            start = index
    groups.append((start, len(lengths)))
    return groups
