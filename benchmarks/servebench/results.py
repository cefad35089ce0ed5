"""Write a run's report into its own ``<!-- serve.py -->`` section of RESULTS.md, keeping the rest."""

from __future__ import annotations

import re
from pathlib import Path

START, END = "<!-- serve.py -->", "<!-- /serve.py -->"
TITLE = "## SLO scheduling under load: ours (SLO classes) vs ours (FCFS) vs llama.cpp (benchmarks/serve.py)"


def write_section(path: Path, command: str, lines: list[str], notes: list[str]) -> None:
    body = "\n".join([START, TITLE, "", f"`{command}`", "", "```", *lines, "```", *notes, END])
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _: body, text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + body
    path.write_text(text.rstrip("\n") + "\n", encoding="utf-8")
