"""Quality of a precision against the fp32 reference: teacher-forced top-1 agreement and KL.

Shared by the precision-quality benchmark and its CI test. Both engines score the same
token sequences (teacher forcing: every position sees the reference text, so one early
difference cannot spoil the rest); per position we compare the next-token distributions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from mcp.engine.contiguous import contiguous_decoder
from mcp.engine.engine import NativeEngine
from mcp.engine.layers.linear import PackedLinear

TEXTS = (
    "The history of the printing press begins in the fifteenth century, when Johannes Gutenberg "
    "combined movable metal type, oil-based ink and a wooden screw press. Within fifty years, "
    "presses were operating in more than two hundred cities across Europe, and the number of "
    "books in circulation grew from thousands to millions. Scholars could compare identical "
    "copies of a text for the first time, which changed how knowledge was checked and shared.",
    "def merge_sort(items):\n    if len(items) <= 1:\n        return items\n    middle = len(items) // 2\n"
    "    left = merge_sort(items[:middle])\n    right = merge_sort(items[middle:])\n    merged = []\n"
    "    while left and right:\n        merged.append(left.pop(0) if left[0] <= right[0] else right.pop(0))\n"
    "    return merged + left + right\n\nprint(merge_sort([5, 3, 9, 1, 4, 8, 2]))\n",
    "Photosynthesis is the process by which green plants use sunlight, water and carbon dioxide "
    "to make glucose and oxygen. It takes place mainly in the leaves, inside chloroplasts that "
    "contain the pigment chlorophyll. The light-dependent reactions capture energy; the Calvin "
    "cycle then uses that energy to fix carbon into sugars that feed the whole plant.",
    "量子力学是描述微观粒子运动规律的物理学分支。它与相对论一起构成了现代物理学的理论基础。"
    "在量子世界中，粒子可以同时处于多种状态的叠加之中，直到被测量时才确定下来。",
    "Dear team,\n\nThank you for the productive meeting yesterday. As agreed, the release is moved "
    "to Thursday so that the migration scripts can be tested on a copy of the production data. "
    "Please send me your remaining questions by Wednesday noon.\n\nBest regards,\nMaria",
    "To make a simple tomato sauce, warm two tablespoons of olive oil in a pan, add a chopped "
    "onion and cook it slowly until soft. Stir in two cloves of garlic, then a can of crushed "
    "tomatoes, a pinch of salt and a few basil leaves. Let it simmer for twenty minutes.",
    "The Pacific Ocean is the largest and deepest of Earth's oceans. It covers about one third of "
    "the planet's surface and contains the Mariana Trench, whose deepest point lies nearly eleven "
    "kilometres below sea level. Thousands of islands are scattered across it.",
    "In 1969, Apollo 11 carried Neil Armstrong, Buzz Aldrin and Michael Collins to the Moon. "
    "Armstrong and Aldrin spent about two and a half hours walking on the surface, collecting "
    "rock samples and setting up experiments, while Collins orbited above in the command module.",
    "A relational database stores data in tables made of rows and columns. Each table has a "
    "primary key that identifies its rows, and foreign keys link rows across tables. Queries are "
    "written in SQL: SELECT name, total FROM orders JOIN customers USING (customer_id) WHERE "
    "total > 100 ORDER BY total DESC LIMIT 10; returns the ten largest orders with their buyers.",
    "The water cycle moves water between the oceans, the air and the land. Heat from the Sun "
    "evaporates water from seas and lakes; the vapour rises, cools and condenses into clouds. "
    "Rain and snow return it to the ground, where it flows into rivers, seeps into aquifers, or "
    "is taken up by plants and released again through their leaves.",
    "Q: What is the difference between weather and climate?\nA: Weather is the state of the "
    "atmosphere at a given place and time: rain this afternoon, a cold morning. Climate is the "
    "average of that weather over many years, such as the typical rainfall of a region in July.\n"
    "Q: Can a single cold winter disprove a warming trend?\nA: No. A trend is measured over decades.",
    "Once upon a time, a young fox lived at the edge of a great forest. Every evening she watched "
    "the lights of the village below and wondered what the people there were laughing about. One "
    "night she crept down the hill, past the sleeping dogs, and looked through a window.",
    "Les langues romanes, comme le français, l'espagnol, l'italien et le portugais, descendent du "
    "latin parlé dans l'Empire romain. Au fil des siècles, chaque région a développé sa propre "
    "prononciation, son vocabulaire et sa grammaire.",
    "Step 1: Preheat the oven to 180 degrees Celsius. Step 2: Mix 200 g of flour, 100 g of sugar, "
    "two eggs and 120 ml of milk in a large bowl. Step 3: Pour the batter into a greased tin and "
    "bake for 35 minutes, until a knife inserted in the centre comes out clean.",
    "The mitochondrion is often called the powerhouse of the cell. It converts nutrients into "
    "adenosine triphosphate through cellular respiration, a chain of reactions that uses oxygen "
    "and releases carbon dioxide. Mitochondria carry their own small circular genome.",
)


@dataclass(frozen=True)
class Agreement:
    positions: int
    top1: float  # share of positions where both pick the same next token
    mean_kl: float  # mean KL(reference || candidate) in nats


def token_sequences(engine: NativeEngine, texts: Sequence[str] = TEXTS) -> list[list[int]]:
    return [engine.tokenizer.encode(text, add_special_tokens=False) for text in texts]


def score_all(engine: NativeEngine, sequences: Sequence[Sequence[int]], phase: str | None = None) -> list[torch.Tensor]:
    """Teacher-forced logits per sequence. ``phase`` "decode" runs packed (int4/int8) tensors
    on their packed kernel at every row count, "prefill" on their dense prefill kernel, so
    that phase's numerics are what gets measured; None follows the plan's row limit."""
    if phase not in (None, "decode", "prefill"):
        raise ValueError(f"phase must be None, 'decode' or 'prefill', got {phase!r}")
    modules = [m for m in engine.model.modules() if isinstance(m, PackedLinear)]
    saved = [m.decode_max_rows for m in modules]
    try:
        if phase is not None:
            for module in modules:
                module.decode_max_rows = 1 << 30 if phase == "decode" else 0
        return [contiguous_decoder(engine).score(ids) for ids in sequences]
    finally:
        for module, rows in zip(modules, saved):
            module.decode_max_rows = rows


def agreement(reference: Sequence[torch.Tensor], candidate: Sequence[torch.Tensor]) -> Agreement:
    ref, cand = torch.cat(list(reference)).float(), torch.cat(list(candidate)).float()
    ref_logp, cand_logp = torch.log_softmax(ref, -1), torch.log_softmax(cand, -1)
    kl = (ref_logp.exp() * (ref_logp - cand_logp)).sum(-1)
    top1 = (ref.argmax(-1) == cand.argmax(-1)).float().mean().item()
    return Agreement(positions=ref.shape[0], top1=top1, mean_kl=kl.mean().item())
