"""Instance pools: the members a route's ``instance_pool`` names, each a remote OpenAI-compatible
server (another ``mcp2026 serve``, vLLM, TGI, llama-server) reached over HTTP; health checks,
least-outstanding-requests balancing, a circuit breaker per member, and retries only before the
first byte of an answer went to the client (docs/governance.md)."""
