# Per-tenant model allow-lists and max tokens per tier.
# data.mcp.config.tenants: {"acme": {"tier": "free", "models": ["smollm2"]}}; a tenant not listed
# has the default tier and may use every model.
package mcp.input

import rego.v1

tier := object.get(object.get(data.mcp.config.tenants, input.tenant.name, {}), "tier", data.mcp.config.default_tier)

requested_name := split(input.model.requested, ":")[0]

# (rego-cpp 1.x prints strings joined from data with their quotes, unescaped: the reason
# names the model, not the list)
deny contains {"rule": "input.tenant_models", "reason": sprintf("tenant %s may not use model %s; ask the operator which models it may use", [input.tenant.name, requested_name])} if {
	allowed := data.mcp.config.tenants[input.tenant.name].models
	not requested_name in allowed
}

deny contains {"rule": "input.max_tokens", "reason": sprintf("max_tokens %d is over the %d allowed for tier %s", [input.request.max_tokens, limit, tier])} if {
	limit := data.mcp.config.tiers[tier].max_tokens
	input.request.max_tokens > limit
}

# A prompt with injection markers goes to a stricter model, when one is configured.
reroute contains {"rule": "input.injection_reroute", "reason": "the prompt carries prompt-injection markers", "model": model} if {
	model := data.mcp.config.injection_reroute_model
	is_string(model)
	some f in input.findings
	f.category == "injection"
}
