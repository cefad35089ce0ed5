"""Serving: the OpenAI-compatible HTTP API (``serving.http``), the model host shared with the
future gRPC service, the error mapping, metrics, the health probe and tenants (docs/api.md)."""
