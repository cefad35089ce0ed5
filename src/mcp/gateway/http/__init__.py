"""``mcp2026 gateway``: the OpenAI-compatible front door that routes, balances, retries, falls
back and runs canary rollouts (docs/governance.md)."""
