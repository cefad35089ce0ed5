"""Weighted splits (A/B, canary) with sticky assignment.

A request's key (its user id, by default) hashes to one of 10,000 buckets:
``blake2b(salt + "\\0" + key) mod 10,000``. The arms own consecutive bucket ranges in the
order the file lists them, ``weight`` percent each. So a user's bucket never changes, and
when the weights change only the users whose bucket lies between an old and a new range
boundary change arm: for a two-arm canary going from p% to q%, exactly the users in the
|q - p|% band move, all towards the arm that grew, and a user on the canary at p% stays on
it at every q >= p. With more arms, at most the buckets between each old and new
cumulative boundary move.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from mcp.gateway.routing.context import Backend, RequestContext

NUM_BUCKETS = 10_000


@dataclass(frozen=True)
class Arm:
    name: str
    weight: float  # percent
    backend: Backend
    end_bucket: int  # exclusive upper bound of this arm's bucket range


@dataclass(frozen=True)
class Split:
    arms: tuple[Arm, ...]
    sticky_by: str  # user_id | tenant | header:NAME | metadata:KEY
    salt: str

    def choose(self, ctx: RequestContext) -> Arm:
        bucket = self.bucket(ctx)
        for arm in self.arms:
            if bucket < arm.end_bucket:
                return arm
        return self.arms[-1]

    def bucket(self, ctx: RequestContext) -> int:
        """The request's bucket; a request without a key (nor a request id) gets bucket 0."""
        key = sticky_key(ctx, self.sticky_by) or ctx.request_id
        return bucket_of(self.salt, key) if key else 0


def bucket_of(salt: str, key: str) -> int:
    digest = hashlib.blake2b(f"{salt}\0{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % NUM_BUCKETS


def sticky_key(ctx: RequestContext, sticky_by: str) -> str | None:
    if sticky_by == "user_id":
        return ctx.user_id
    if sticky_by == "tenant":
        return ctx.tenant
    source, _, name = sticky_by.partition(":")
    return ctx.headers.get(name.lower()) if source == "header" else ctx.metadata.get(name)


def arm_bounds(weights: list[float]) -> list[int]:
    """Exclusive end bucket of each arm; the last is always ``NUM_BUCKETS``."""
    bounds, total = [], 0.0
    for weight in weights:
        total += weight
        bounds.append(round(total * NUM_BUCKETS / 100))
    bounds[-1] = NUM_BUCKETS
    return bounds
