# Unit tests of the input policies. Each case is evaluated the way the server evaluates a
# request: its input set as the input document (rego-cpp crashes on `with input as` over rules
# that call built-ins, so the runner sets the input itself), its data merged over data.json.
package mcp.input_test

import rego.v1

base := {"tenant": {"name": "acme"}, "model": {"requested": "smollm2"}, "request": {"max_tokens": 64}, "findings": []}

finding(kind, category) := {"kind": kind, "category": category, "start": 0, "end": 4, "digest": "d", "masked": "*"}

cases := [
	{"name": "a clean prompt is allowed", "input": base, "expect": {"action": "allow", "rules": []}},
	{
		"name": "a cloud key is denied",
		"input": object.union(base, {"findings": [finding("aws_access_key", "secret")]}),
		"expect": {"action": "deny", "rules": ["input.credentials"]},
	},
	{
		"name": "an ID number is denied",
		"input": object.union(base, {"findings": [finding("cn_resident_id", "pii")]}),
		"expect": {"action": "deny", "rules": ["input.id_numbers"]},
	},
	{
		"name": "an e-mail address alone is allowed",
		"input": object.union(base, {"findings": [finding("email", "pii")]}),
		"expect": {"action": "allow", "rules": []},
	},
	{
		"name": "a tenant outside its allow-list is denied",
		"input": base,
		"data": {"mcp": {"config": {"tenants": {"acme": {"models": ["strict"]}}}}},
		"expect": {"action": "deny", "rules": ["input.tenant_models"]},
	},
	{
		"name": "a tenant inside its allow-list is allowed, any version",
		"input": object.union(base, {"model": {"requested": "strict:2"}}),
		"data": {"mcp": {"config": {"tenants": {"acme": {"models": ["strict"]}}}}},
		"expect": {"action": "allow", "rules": []},
	},
	{
		"name": "max_tokens over the free tier is denied",
		"input": object.union(base, {"request": {"max_tokens": 300}}),
		"data": {"mcp": {"config": {"tenants": {"acme": {"tier": "free"}}}}},
		"expect": {"action": "deny", "rules": ["input.max_tokens"]},
	},
	{
		"name": "the same max_tokens is fine on the default tier",
		"input": object.union(base, {"request": {"max_tokens": 300}}),
		"expect": {"action": "allow", "rules": []},
	},
	{
		"name": "injection markers reroute when a stricter model is configured",
		"input": object.union(base, {"findings": [finding("prompt_injection", "injection")]}),
		"data": {"mcp": {"config": {"injection_reroute_model": "strict"}}},
		"expect": {"action": "reroute", "rules": ["input.injection_reroute"], "reroute_model": "strict"},
	},
	{
		"name": "injection markers pass when no model is configured",
		"input": object.union(base, {"findings": [finding("prompt_injection", "injection")]}),
		"expect": {"action": "allow", "rules": []},
	},
]

# opa test's own form works too for rules that need no `with`:
test_tier_defaults_to_standard if {
	data.mcp.config.default_tier == "standard"
}
