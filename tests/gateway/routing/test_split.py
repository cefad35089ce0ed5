"""Weighted splits: ratios within a binomial tolerance, and sticky users.

The guarantee (split.py): a user's bucket is fixed by the hash; arms own consecutive
bucket ranges in file order. When weights change, only users between an old and a new
range boundary move; for a canary going from p% to q%, exactly the users in the |q - p|%
band move, all towards the arm that grew.
"""

from __future__ import annotations

import math
from collections import Counter

import pytest

from mcp.gateway.routing import RequestContext, parse_route_table
from mcp.gateway.routing.split import NUM_BUCKETS, bucket_of

NUM_USERS = 10_000
USERS = [f"user-{i}" for i in range(NUM_USERS)]


def _table(weights: dict[str, float], sticky_by: str = "user_id"):
    arms = "\n".join(f"        - {{name: {name}, weight: {w}, backend: {{model_id: '{name}:1'}}}}"
                     for name, w in weights.items())
    return parse_route_table(f"""routes:
  - name: experiment
    split:
      sticky_by: {sticky_by}
      arms:
{arms}
default: {{backend: {{model_id: 'fallback:1'}}}}
""")


def _assign(table, users=USERS) -> dict[str, str]:
    return {user: table.resolve(RequestContext(user_id=user)).arm for user in users}


def _within_binomial(count: int, n: int, p: float, sigmas: float = 4.0) -> bool:
    return abs(count - n * p) <= sigmas * math.sqrt(n * p * (1 - p))


@pytest.mark.parametrize("weights", [{"stable": 95, "canary": 5}, {"a": 50, "b": 50},
                                     {"a": 20, "b": 30, "c": 50}, {"stable": 99.5, "canary": 0.5}])
def test_split_ratios_follow_the_weights(weights):
    counts = Counter(_assign(_table(weights)).values())
    for arm, weight in weights.items():
        assert _within_binomial(counts[arm], NUM_USERS, weight / 100), (arm, counts)


def test_zero_weight_arm_gets_nobody():
    counts = Counter(_assign(_table({"stable": 100, "canary": 0})).values())
    assert counts == {"stable": NUM_USERS}


@pytest.mark.parametrize("old, new", [(5, 6), (5, 10), (20, 50), (50, 20)])
def test_sticky_users_move_only_across_the_changed_band(old, new):
    before = _assign(_table({"stable": 100 - old, "canary": old}))
    after = _assign(_table({"stable": 100 - new, "canary": new}))
    moved = {user for user in USERS if before[user] != after[user]}
    low, high = sorted((100 - old, 100 - new))
    band = {u for u in USERS if low * NUM_BUCKETS // 100 <= bucket_of("experiment", u) < high * NUM_BUCKETS // 100}
    assert moved == band  # exactly the users in the band, nobody else
    towards = "canary" if new > old else "stable"
    assert all(after[user] == towards for user in moved)
    assert _within_binomial(len(moved), NUM_USERS, abs(new - old) / 100)


def test_canary_users_stay_on_the_canary_as_it_grows():
    steps = [5, 20, 50, 80, 100]
    on_canary = set()
    for percent in steps:
        assignment = _assign(_table({"stable": 100 - percent, "canary": percent}))
        now = {u for u, arm in assignment.items() if arm == "canary"}
        assert on_canary <= now
        on_canary = now
    assert len(on_canary) == NUM_USERS


def test_same_user_same_arm_and_other_keys():
    table = _table({"a": 50, "b": 50}, sticky_by="header:X-Session")
    arms = {table.resolve(RequestContext(headers={"x-session": "s-1"}, user_id=str(i))).arm for i in range(50)}
    assert len(arms) == 1
    keyless = {table.resolve(RequestContext(request_id=f"r{i}")).arm for i in range(200)}
    assert keyless == {"a", "b"}  # no key: the request id spreads them
    assert table.resolve(RequestContext()).arm == "a"  # no key at all: the first arm


def test_salt_makes_splits_independent():
    first = _assign(_table({"a": 50, "b": 50}))
    salted = parse_route_table("""routes:
  - name: experiment
    split:
      salt: another-experiment
      arms:
        - {name: a, weight: 50, backend: {model_id: 'a:1'}}
        - {name: b, weight: 50, backend: {model_id: 'b:1'}}
default: {backend: {model_id: 'f:1'}}
""")
    second = _assign(salted)
    agree = sum(first[u] == second[u] for u in USERS)
    assert _within_binomial(agree, NUM_USERS, 0.5)
