"""Prefix-aware picking (gateway/pools/prefix.py): a prompt goes to the member its first block
hashes to, the same one every time; a hot prefix spills to the next member in its order once
the preferred one is over the load bound; a prompt shorter than a block is picked by load; an
open breaker moves a prefix to its next member and only its own prefixes; bad settings are named."""

from __future__ import annotations

import httpx
import pytest

from mcp.gateway.config import parse_gateway_config
from mcp.gateway.errors import GatewayConfigError
from mcp.gateway.metrics import GatewayMetrics
from mcp.gateway.pools.pool import InstancePool
from mcp.gateway.pools.prefix import PrefixPicking, load_bound, prefix_key, rendezvous_order
from mcp.gateway.pools.spec import BreakerSpec, MemberSpec, PoolSpec

SYSTEM = "system\nYou are the help desk of a shipping company. Answer in two sentences, politely.\n"
NAMES = ("m1", "m2", "m3")


def make_pool(picking: str = "prefix", load_factor: float = 1.25) -> InstancePool:
    members = tuple(MemberSpec(name, f"http://{name}.local") for name in NAMES)
    spec = PoolSpec("p", members, breaker=BreakerSpec(failure_threshold=1, cool_down_s=300), picking=picking,
                    prefix=PrefixPicking(block_chars=64, load_factor=load_factor))
    return InstancePool(spec, httpx.AsyncClient(), GatewayMetrics())


def release(pool: InstancePool, name: str) -> None:
    member = next(m for m in pool.members if m.name == name)
    pool._done(member, ok=True, breaker=True)


def test_a_shared_prefix_goes_to_one_member_whatever_follows_it():
    pool = make_pool()
    preferred = rendezvous_order(prefix_key(SYSTEM, 64), list(NAMES))[0]
    for question in ("Where is my parcel?", "Can I change the address?", "Do you ship to Norway?"):
        member = pool.pick(set(), f"{SYSTEM}user\n{question}\n")
        assert member.name == preferred
        release(pool, member.name)


def test_prefixes_spread_over_the_members_and_each_keeps_its_own():
    pool = make_pool()
    heads = [f"system\nYou are assistant number {i} of a team of many, each with its own task.\n" for i in range(12)]
    first = [pool.pick(set(), head).name for head in heads]
    for name in first:
        release(pool, name)
    again = []
    for head in heads:
        again.append(pool.pick(set(), head).name)
        release(pool, again[-1])
    assert len(set(first)) == 3
    assert [pool.pick(set(), head).name for head in heads[:1]] == first[:1]
    assert again == [rendezvous_order(prefix_key(h, 64), list(NAMES))[0] for h in heads]


def test_a_hot_prefix_spills_in_its_order_once_over_the_load_bound():
    pool = make_pool()
    order = rendezvous_order(prefix_key(SYSTEM, 64), list(NAMES))
    picked = [pool.pick(set(), SYSTEM).name for _ in range(8)]  # none finishes
    # bound = ceil(1.25 * (in flight + 1) / 3): 1, 1, 2, 2, 3, 3, 3, 4 as the requests pile up; the
    # first member takes what its bound allows, the second the rest, the third once both are full
    assert picked == [order[0], order[1], order[0], order[1], order[0], order[1], order[2], order[0]]
    assert max(m.outstanding for m in pool.members) <= load_bound(7, 3, 1.25)
    for name in picked:
        release(pool, name)
    assert pool.pick(set(), SYSTEM).name == order[0]  # back home once the load is gone


def test_a_short_prompt_and_a_least_outstanding_pool_pick_by_load():
    for pool, head in ((make_pool(), "user\nhi\n"), (make_pool("least_outstanding"), SYSTEM)):
        picked = [pool.pick(set(), head).name for _ in range(3)]
        assert sorted(picked) == sorted(NAMES)


def test_an_open_breaker_moves_only_that_members_prefixes():
    pool = make_pool()
    heads = [f"system\nYou are assistant number {i} of a team of many, each with its own task.\n" for i in range(12)]
    before = {}
    for head in heads:
        before[head] = pool.pick(set(), head).name
        release(pool, before[head])
    broken = next(m for m in pool.members if m.name == before[heads[0]])
    broken.breaker.record_failure()  # threshold 1: open for 300 s
    for head in heads:
        member = pool.pick(set(), head)
        order = rendezvous_order(prefix_key(head, 64), list(NAMES))
        expected = before[head] if before[head] != broken.name else next(n for n in order if n != broken.name)
        assert member.name == expected
        release(pool, member.name)


@pytest.mark.parametrize("pool, error", [
    ({"picking": "random"}, "pools.p.picking"),
    ({"picking": "prefix", "prefix": {"load_factor": 0.5}}, "pools.p.prefix.load_factor"),
    ({"picking": "prefix", "prefix": {"block_chars": 0}}, "pools.p.prefix.block_chars"),
    ({"picking": "prefix", "prefix": {"blocks": 4}}, "pools.p.prefix.blocks"),
])
def test_bad_picking_settings_are_named(pool: dict, error: str):
    document = {"pools": {"p": {"members": [{"name": "m1", "url": "http://127.0.0.1:8000"}], **pool}}}
    with pytest.raises(GatewayConfigError, match=error.replace(".", r"\.")):
        parse_gateway_config(document, "gw.yaml")


def test_the_config_reaches_the_pool():
    config = parse_gateway_config({"pools": {"p": {"members": [{"name": "m1", "url": "http://127.0.0.1:8000"}],
                                                   "picking": "prefix", "prefix": {"block_chars": 128}}}})
    [spec] = config.pools
    assert spec.picking == "prefix" and spec.prefix == PrefixPicking(block_chars=128, load_factor=1.25)
