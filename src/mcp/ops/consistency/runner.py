"""Running the matrix: the reference once per prompt, then every candidate against it.

Every engine gets the same token ids, tokenized once by the model's own tokenizer (a chat
prompt rendered through its template first). The reference's greedy continuation is cut
after its first EOS; each candidate then scores prompt + that continuation (teacher forced)
and generates its own greedy continuation of the same length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mcp.backends.base import Backend, GenerationParams, Prompt, ScoreKind, top_from_logits
from mcp.engine.tokenizer import Tokenizer
from mcp.ops.consistency.metrics import (
    PromptComparison, ReferenceRecord, Summary, compare_greedy, compare_scores, cut_after_eos, summarize,
)
from mcp.ops.consistency.suite import Suite
from mcp.ops.consistency.tolerances import Check, Rule, ToleranceTable, evaluate


@dataclass(frozen=True)
class SuiteInput:
    prompt_id: str
    prompt: Prompt
    max_tokens: int


@dataclass(frozen=True)
class CandidateResult:
    name: str
    description: str
    versions: dict[str, str]
    scores: str  # the candidate's ScoreKind value
    kv_bytes_per_token: int | None
    rows: tuple[PromptComparison, ...]
    summary: Summary
    rule: Rule
    checks: tuple[Check, ...]

    @property
    def passed(self) -> bool:
        return all(check.passed is not False for check in self.checks)


def suite_inputs(suite: Suite, tokenizer: Tokenizer) -> tuple[SuiteInput, ...]:
    return tuple(_input(p, tokenizer) for p in suite.prompts)


def _input(prompt, tokenizer: Tokenizer) -> SuiteInput:
    if prompt.kind == "chat":
        text = tokenizer.apply_chat_template([{"role": r, "content": c} for r, c in prompt.messages])
    else:
        text = prompt.text
    ids = tuple(tokenizer.encode(text, add_special_tokens=False))
    return SuiteInput(prompt.id, Prompt(ids, text), prompt.max_tokens)


def run_reference(backend: Backend, inputs: Sequence[SuiteInput], top_k: int,
                  eos_ids: frozenset[int]) -> tuple[ReferenceRecord, ...]:
    """The reference's greedy continuation and teacher-forced logits for every prompt."""
    return tuple(_reference_record(backend, item, top_k, eos_ids) for item in inputs)


def _reference_record(backend: Backend, item: SuiteInput, top_k: int, eos_ids: frozenset[int]) -> ReferenceRecord:
    generation = backend.generate(item.prompt, GenerationParams(max_tokens=item.max_tokens))
    greedy = cut_after_eos(generation.token_ids, eos_ids)
    logits = backend.score(_sequence(item, greedy), top_k).logits
    return ReferenceRecord(item.prompt_id, item.prompt.token_ids, greedy, logits, top_from_logits(logits, top_k))


def run_candidate(backend: Backend, inputs: Sequence[SuiteInput], references: Sequence[ReferenceRecord],
                  top_k: int) -> tuple[PromptComparison, ...]:
    return tuple(_compare_one(backend, item, ref, top_k) for item, ref in zip(inputs, references))


def _compare_one(backend: Backend, item: SuiteInput, reference: ReferenceRecord, top_k: int) -> PromptComparison:
    if item.prompt.token_ids != reference.prompt_ids:
        raise ValueError(f"prompt {item.prompt_id!r}: the reference saw other token ids")  # a bug, not input
    params = GenerationParams(max_tokens=max(len(reference.greedy_ids), 1))
    greedy = compare_greedy(reference, backend.generate(item.prompt, params))
    if backend.capabilities.scores is ScoreKind.NONE:
        scores = {"num_positions": 0, "top1_agree": 0, "mse": None, "kl": None, "topk_logprob_mae": None}
    else:
        scores = compare_scores(reference, backend.score(_sequence(item, reference.greedy_ids), top_k))
    return PromptComparison(prompt_id=item.prompt_id, **scores, **greedy)


def _sequence(item: SuiteInput, continuation: Sequence[int]) -> Prompt:
    return Prompt(item.prompt.token_ids + tuple(continuation), item.prompt.text)


def compare_candidate(backend: Backend, reference_name: str, inputs: Sequence[SuiteInput],
                      references: Sequence[ReferenceRecord], top_k: int, table: ToleranceTable) -> CandidateResult:
    rule = table.rule_for(reference_name, backend.name)
    rows = run_candidate(backend, inputs, references, top_k)
    summary = summarize(rows)
    return CandidateResult(backend.name, backend.describe(), backend.versions(), backend.capabilities.scores.value,
                           backend.kv_bytes_per_token(), rows, summary, rule, evaluate(rule, summary))
