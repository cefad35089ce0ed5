"""Making ``.mcp`` files: the GGUF and Hugging Face sources, the tokenizer builders, the catalog
(``mcp2026 pull``) and the compiler with its offline packers.

It sits above the engine (it packs tensors with the engine's quantization code) and below
everything that loads models, so the file format (``mcp.modelfile``) never depends on it.
Import the submodules (``mcp.compiler.compiler.compile_model``, ``mcp.compiler.catalog``).
"""
