"""Server reflection as both ``grpc.reflection.v1`` and ``grpc.reflection.v1alpha``.

grpcio-reflection ships the ``v1alpha`` service only, while newer clients (grpcurl, Postman,
grpcui) ask for ``v1`` first. The two protocols' messages are the same on the wire (``v1`` is
``v1alpha`` renamed), so one servicer answers both: ``v1`` is the same handler registered under
its own service name.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc

V1_SERVICE = "grpc.reflection.v1.ServerReflection"
V1ALPHA_SERVICE = reflection.SERVICE_NAME


def enable_reflection(service_names: Sequence[str], server: grpc.aio.Server) -> None:
    """Serve reflection of ``service_names`` (and of itself, both versions) on ``server``."""
    servicer = reflection.aio.ReflectionServicer((*service_names, V1ALPHA_SERVICE, V1_SERVICE))
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(servicer, server)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(V1_SERVICE, {
        "ServerReflectionInfo": grpc.stream_stream_rpc_method_handler(
            servicer.ServerReflectionInfo,
            request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
            response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString)}),))
