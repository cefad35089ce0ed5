"""The ``mcp-config.yaml`` schema: the runtime section (``runtime``), ``serving``, ``isolation``,
``signing`` and ``attestation``, and which ``.mcp`` file a model argument names (``model_path``).

Above the engine and the compiler (the schema's defaults are theirs), below governance, the SDK,
serving and the gateway, which all read it.
"""
