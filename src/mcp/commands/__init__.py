"""The ``mcp2026`` command line (``mcp.commands.cli:main``): the top floor, free to import every
package below it and imported by none.
"""
