"""The same greedy tokens for the same prompt from Python, C and Go."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from mcp.runtime import Session
from bindings_build import ROOT, child_env

PROMPT = "The three primary colors are"
NUM_TOKENS = 12


def ids_in(output: str) -> list[int]:
    return [int(token) for token in re.search(r"ids: ?\[?([\d ]+)\]?", output).group(1).split()]


@pytest.mark.slow
def test_python_c_and_go_agree(c_programs, go_tool: str, libmcp: Path, smollm2_auto_mcp: Path) -> None:
    with Session() as session:
        model = session.load_model(smollm2_auto_mcp)
        python_ids = list(model.infer(PROMPT, max_tokens=NUM_TOKENS, temperature=0, raw=True).token_ids)
    c = subprocess.run([str(c_programs("infer")), str(smollm2_auto_mcp), PROMPT, str(NUM_TOKENS)],
                       capture_output=True, text=True, timeout=600, env=child_env())
    assert c.returncode == 0, c.stderr
    go = subprocess.run([go_tool, "run", "./tests/bindings/gotokens", str(smollm2_auto_mcp), PROMPT, str(NUM_TOKENS)],
                        cwd=ROOT, capture_output=True, text=True, timeout=600, env=child_env())
    assert go.returncode == 0, go.stderr
    assert len(python_ids) == NUM_TOKENS
    assert ids_in(c.stdout) == python_ids
    assert ids_in(go.stdout) == python_ids
