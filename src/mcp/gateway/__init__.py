"""The gateway: model registry, routing rules, instance pools, canary controller.

Subpackages: ``registry`` (models, versions, stages, deployments, change log in SQLite or
PostgreSQL), ``routing`` (the routing file, ``RouteTable.resolve``, hot reload). Nothing
heavy is imported here.
"""
