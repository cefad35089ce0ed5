"""Load generator and SLO report: ``mcp2026 bench serve`` and ``benchmarks/serve.py``.

The path of one run reads top to bottom, one concept per file:

    WorkloadSpec -> build_workload        workload.py   seeded RequestSpecs (arrivals.py, prompts.py, mix.py)
    Target.open(request) -> TargetStream  target.py     in-process SDK (sdk_target.py) or OpenAI HTTP (http_target.py)
    run_workload(target, requests)        runner.py     one thread per request at its arrival time -> RequestRecords
    summarize(records, slos, ...)         summary.py    per class TTFT/TPOT/ITL/E2E, attainment, goodput (metrics.py)
    write_report / format_table / plots   report.py, table.py, plots.py

Docs: docs/loadgen.md.
"""
