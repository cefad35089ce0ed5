"""The ground floor every other package stands on: the error hierarchy, argument checks, result
and timing types, paths (``mcp_home``), file watching and the SQLite WAL helper.

It imports nothing from the rest of ``mcp`` (an import-linter contract in the tests holds it to
that), so any floor may use it without pulling the engine, torch or a server in.
"""
