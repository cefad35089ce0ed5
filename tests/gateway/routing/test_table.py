"""RouteTable.resolve and explain: each kind of rule, fallbacks, the default."""

from __future__ import annotations

from mcp.gateway.routing import ModelRef, RequestContext, parse_route_table


def test_route_by_tier_and_token_count(routing_yaml):
    table = parse_route_table(routing_yaml)
    decision = table.resolve(RequestContext(user_tier="premium", input_tokens=512))
    assert (decision.route, decision.backend.instance_pool, decision.backend.timeout_ms) == (
        "customer-support-v2", "gpu-a10-pool", 8000)
    assert decision.backend.model == ModelRef("qwen2-7b-chat", "v2.4")
    assert table.resolve(RequestContext(user_tier="premium", input_tokens=513)).is_default


def test_route_by_tenant_sla_and_min_tokens_with_fallbacks(routing_yaml):
    table = parse_route_table(routing_yaml)
    decision = table.resolve(RequestContext(tenant="acme", sla_class="high", input_tokens=4000))
    assert decision.route == "acme-long-context"
    assert decision.backend.model == ModelRef("llama-long", stage="production")
    assert decision.fallback_for("timeout").instance_pool == "spare-pool"
    assert decision.fallback_for("over_capacity").timeout_ms == 20000
    assert decision.fallback_for("error") is None and decision.fallback_for("timeout", attempt=1) is None
    assert table.resolve(RequestContext(tenant="acme", sla_class="low", input_tokens=4000)).is_default


def test_route_by_header_glob_and_metadata(routing_yaml):
    table = parse_route_table(routing_yaml)
    ctx = RequestContext(headers={"x-REGION": "eu-west-1"}, metadata={"team": "ads"})
    assert table.resolve(ctx).route == "eu-traffic"
    assert table.resolve(RequestContext(headers={"X-Region": "us-east-1"}, metadata={"team": "ads"})).is_default
    assert table.resolve(RequestContext(headers={"X-Region": "eu-1"}, metadata={"team": "web"})).is_default


def test_first_matching_route_wins_and_default_catches_the_rest(routing_yaml):
    table = parse_route_table(routing_yaml)
    both = RequestContext(user_tier="premium", input_tokens=10, model="support-bot")
    assert table.resolve(both).route == "customer-support-v2"
    default = table.resolve(RequestContext())
    assert (default.route, default.is_default, str(default.backend.model)) == ("default", True, "smollm2:1")


def test_split_route_falls_back_on_every_reason_by_default(routing_yaml):
    decision = parse_route_table(routing_yaml).resolve(RequestContext(model="support-bot", user_id="u1"))
    assert decision.route == "support-canary" and decision.arm in ("stable", "canary")
    assert all(str(decision.fallback_for(r).model) == "support-bot:1" for r in ("error", "timeout", "over_capacity"))


def test_resolve_is_pure(routing_yaml):
    table = parse_route_table(routing_yaml)
    ctx = RequestContext(model="support-bot", user_id="user-42", tenant="t")
    assert len({table.resolve(ctx) for _ in range(100)}) == 1


def test_explain_lists_each_condition(routing_yaml):
    table = parse_route_table(routing_yaml)
    explanation = table.explain(RequestContext(tenant="acme", sla_class="low", input_tokens=4000))
    assert explanation.decision.is_default
    acme = next(r for r in explanation.routes if r.route == "acme-long-context")
    assert [(c.text, c.matched) for c in acme.conditions] == [
        ("input tokens 2048 <= 4000 holds", True), ("tenant 'acme' in [acme]", True),
        ("sla_class 'low' not in [critical, high]", False)]
    assert [r.route for r in explanation.routes] == [r.name for r in table.routes]
