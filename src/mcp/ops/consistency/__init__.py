"""The cross-engine consistency matrix: the same prompts on every backend, compared to a reference.

``mcp2026 check consistency`` (docs/consistency.md). suite.py reads the prompt suites,
tolerances.py the tolerance table, runner.py runs the engines, metrics.py compares them,
golden.py records and reads golden files, report.py writes JSON and Markdown.
"""
