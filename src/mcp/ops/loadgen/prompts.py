"""Prompts for the load: a built-in pool of varied requests, or a JSONL file of one's own.

The pool mixes short questions, instructions, summaries of a given passage, code and a few
languages, so prompt lengths vary from a handful of tokens to about two hundred. The order
is the popularity rank the Zipf scenario uses: ``BUILTIN_PROMPTS[0]`` is the most popular.
"""

from __future__ import annotations

import json
from pathlib import Path

from mcp.base.errors import InvalidRequestError

_PASSAGE_PRESS = (
    "The printing press, developed by Johannes Gutenberg around 1440, combined movable metal type, "
    "oil-based ink and a screw press adapted from wine making. Within fifty years presses were at "
    "work in more than two hundred European cities and millions of books were in circulation. "
    "Identical copies let scholars compare texts, spread scientific results and standardize spelling."
)
_PASSAGE_CELLS = (
    "Mitochondria are organelles found in most eukaryotic cells. They generate most of the cell's "
    "supply of adenosine triphosphate, used as a source of chemical energy, through oxidative "
    "phosphorylation. Mitochondria have their own small genome, inherited from the mother, which "
    "supports the theory that they descend from bacteria engulfed by an ancestral cell."
)
_CODE = (
    "def moving_average(values, window):\n"
    "    result = []\n"
    "    for i in range(len(values)):\n"
    "        chunk = values[i:i + window]\n"
    "        result.append(sum(chunk) / window)\n"
    "    return result\n"
)

BUILTIN_PROMPTS: tuple[str, ...] = (
    "What is the capital of France?",
    "Explain quantum entanglement in simple terms.",
    "Write a haiku about the sea.",
    "Give me three tips for sleeping better.",
    f"Summarize this passage in two sentences:\n\n{_PASSAGE_PRESS}",
    "What is the difference between a virus and a bacterium?",
    "Translate into French: The train leaves at eight o'clock tomorrow morning.",
    f"Find the bug in this function and explain how to fix it:\n\n{_CODE}",
    "List the planets of the solar system in order from the Sun.",
    "Write a short, friendly email declining a meeting invitation for Friday.",
    f"Answer from the text: what do mitochondria produce?\n\n{_PASSAGE_CELLS}",
    "How does a refrigerator keep food cold?",
    "Describe a sunset over the mountains to someone who has never seen one.",
    "What are the main causes of inflation?",
    "Write a Python function that checks whether a string is a palindrome.",
    "用简单的话解释什么是光合作用。",
    "Give a recipe for a quick vegetable soup.",
    "Why is the sky blue?",
    "Compare renewable and fossil energy sources in a short table.",
    "Tell a short story about a robot who learns to paint.",
    "¿Cuáles son los beneficios de aprender un segundo idioma?",
    "What should I check before buying a used bicycle?",
    "Explain recursion to a ten-year-old.",
    "Suggest a name for a coffee shop next to a library, and say why.",
)


def load_prompts(path: str | Path) -> tuple[str, ...]:
    """One JSON object per line with a ``"prompt"`` string; blank lines are skipped."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRequestError(f"--prompts {path}: cannot be read ({exc}); give a UTF-8 JSONL file") from None
    prompts = [_prompt_of(line, path, number) for number, line in enumerate(lines, 1) if line.strip()]
    if not prompts:
        raise InvalidRequestError(f"--prompts {path}: no prompts in it; write one {{\"prompt\": ...}} per line")
    return tuple(prompts)


def _prompt_of(line: str, path: Path, number: int) -> str:
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidRequestError(f"--prompts {path}:{number}: not JSON ({exc.msg})") from None
    prompt = item.get("prompt") if isinstance(item, dict) else None
    if not isinstance(prompt, str) or not prompt:
        raise InvalidRequestError(f"--prompts {path}:{number}: needs a non-empty string \"prompt\" field")
    return prompt
