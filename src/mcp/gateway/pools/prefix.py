"""Prefix-aware picking: send a prompt to the member most likely to hold its prefix in its KV
cache, so that requests sharing a system prompt skip its prefill there.

The key is a hash of the prompt's first ``block_chars`` characters (one block: the gateway has no
tokenizer of the members' models, so blocks are characters, not tokens); a shorter prompt has no
key and is picked by load alone. Members are ranked for a key by rendezvous hashing (highest
random weight): each key has its own order of members, a member that leaves moves only its own
keys, and one that comes back gets them back. The load bound (consistent hashing with bounded
loads) keeps a hot prefix from piling onto one member: a member is skipped while its requests in
flight would exceed ``load_factor`` times the pool's average, counting this request.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

PICKINGS = ("least_outstanding", "prefix")


@dataclass(frozen=True)
class PrefixPicking:
    block_chars: int = 256  # prompt characters that make the key; shorter prompts are picked by load
    load_factor: float = 1.25  # a member may hold up to this times the average requests in flight


def prefix_key(prompt_head: str, block_chars: int) -> bytes | None:
    """The key of the prompt's first block, or None when the prompt is shorter than a block."""
    if len(prompt_head) < block_chars:
        return None
    return hashlib.blake2b(prompt_head[:block_chars].encode("utf-8", "surrogatepass"), digest_size=16).digest()


def rendezvous_order(key: bytes, names: Sequence[str]) -> list[str]:
    """``names`` ordered by their weight for ``key``, highest first (stable for a given set)."""
    def weight(name: str) -> bytes:
        return hashlib.blake2b(key + name.encode(), digest_size=8).digest()

    return sorted(names, key=weight, reverse=True)


def load_bound(total_outstanding: int, num_members: int, load_factor: float) -> int:
    """The most requests in flight a member may hold to take one more: ``ceil(c * (total + 1) / n)``."""
    return max(1, math.ceil(load_factor * (total_outstanding + 1) / max(1, num_members)))
