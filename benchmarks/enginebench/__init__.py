"""The pieces of ``benchmarks/engine.py``: one module per engine, plus the shared measuring,
prompt and report code. Each engine is measured in its own subprocess (``worker``) so that its
peak RSS and its cold load are its own."""
