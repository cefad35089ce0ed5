"""Serving: the OpenAI-compatible HTTP API (``serving.http``), the gRPC API (``serving.grpc``), the
model host they share, the error mapping, metrics, the health probe and tenants (docs/api.md)."""
