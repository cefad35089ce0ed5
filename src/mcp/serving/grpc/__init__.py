"""The gRPC API (``proto/mcp/v1/inference.proto``): the service, its metadata interceptor, the
standard health and reflection services, and the server ``mcp2026 serve`` runs beside HTTP.

``_gen`` holds the stubs ``python -m mcp.serving.grpc.codegen`` writes from the proto (committed).
"""
