"""The ``.mcp`` model container: header spec, reader, writer, and the compiler from GGUF / HF.

Import what you need from the submodules (``mcp.modelfile.reader.open_model``,
``mcp.compiler.compiler.compile_model``); this package imports nothing heavy itself.
"""
