"""How an SDK call becomes token ids and a result: shared by ``Model`` (runtime) and ``LeanModel``.

Both decoders take the same options, turn a prompt or a conversation into ids the same way
(through the chat template unless ``raw``) and report logprobs in the same ``InferResult``
fields, so the rules live here once, on the engine floor both can import, rather than in
each of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mcp.base.arguments import check_text
from mcp.base.errors import InvalidRequestError
from mcp.base.result import TokenLogprob
from mcp.engine.params import SamplingParams
from mcp.engine.sequence import StepOutput
from mcp.engine.tokenizer import Tokenizer

SAMPLING_OPTIONS = frozenset(SamplingParams.__dataclass_fields__)  # every sampling option a call takes
PROMPT_OPTIONS = frozenset(("raw", "system"))  # infer-style calls only: how the prompt is encoded


def chat_ids(tokenizer: Tokenizer, messages: Any, template_kwargs: Mapping[str, Any] | None = None,
             continuation: str = "") -> list[int]:
    """A conversation through the model's chat template, ready for generation: ``template_kwargs``
    go to the template (``tools``, ``enable_thinking``, ...), ``continuation`` starts the
    assistant's turn (the model writes on from it)."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidRequestError("messages must be a list of {'role': ..., 'content': ...} mappings")
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, **(template_kwargs or {}))
    return tokenizer.encode(text + continuation, add_special_tokens=False)


def prompt_encoder(tokenizer: Tokenizer, chat_template: str | None, raw: bool,
                   system: Any) -> Callable[[str], list[int]]:
    """How an infer-style prompt becomes ids: as one user message (after ``system``) through
    the chat template when the model has one, as Ollama's generate does; as is with ``raw``."""
    if raw or not chat_template:
        if system is not None:
            raise InvalidRequestError("system needs the chat template; it cannot be used with raw=True")
        return tokenizer.encode
    messages = [{"role": "system", "content": check_text(system, "system")}] if system is not None else []
    return lambda prompt: chat_ids(tokenizer, [*messages, {"role": "user", "content": prompt}])


def token_logprobs(tokenizer: Tokenizer, steps: Sequence[StepOutput]) -> tuple[TokenLogprob, ...]:
    """Each generated token's logprob and its top alternatives, with their text."""
    decode = tokenizer.decode
    return tuple(
        TokenLogprob(step.token_id, decode([step.token_id]), step.logprob,
                     tuple((decode([tid]), lp) for tid, lp in step.top_logprobs))
        for step in steps
    )
