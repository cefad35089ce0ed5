"""``python -m mcp.governance.policy.check FOLDER``: compile a bundle and evaluate both stages once.

rego-cpp aborts the whole process on some inputs it cannot handle (a C++ exception, not a
Python one), so a server never compiles a bundle it has not first seen compiled and evaluated
in a child process: a bundle that would crash is refused with a message, and the server
keeps serving. Exit 0: fine; 2: a PolicyError (its message on stderr); a signal: a crash.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mcp.governance.errors import PolicyError

CHECK_TIMEOUT_S = 120
SAMPLE = {"stage": "input", "request": {"id": "check", "operation": "chat", "max_tokens": 16, "num_chars": 5},
          "tenant": {"name": "check"}, "user": None, "model": {"requested": "check"},
          "findings": [{"kind": kind, "category": category, "start": 0, "end": 1, "digest": "0", "masked": "*"}
                       for kind, category in (("email", "pii"), ("aws_access_key", "secret"),
                                              ("prompt_injection", "injection"), ("term", "term"))]}


def check_in_child(folder: Path) -> None:
    """Raise PolicyError unless the bundle compiles and evaluates in a child process."""
    try:
        result = subprocess.run([sys.executable, "-m", __name__, str(folder)], capture_output=True, text=True,
                                timeout=CHECK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise PolicyError(f"policy bundle {folder}: compiling it took over {CHECK_TIMEOUT_S} s") from None
    if result.returncode == 0:
        return
    if result.returncode == 2:
        raise PolicyError(result.stderr.strip().splitlines()[-1])
    crash = [line for line in result.stderr.splitlines() if "what()" in line or "rego" in line.lower()]
    raise PolicyError(f"policy bundle {folder} crashes the Rego engine (rego-cpp, exit {result.returncode}"
                      f"{': ' + crash[-1].strip() if crash else ''}); simplify the rule it names")


def main(folder: str) -> int:
    from mcp.governance.policy.bundle import ENTRYPOINTS, PolicySource, compile_policy
    from mcp.governance.policy.decision import parse_decision
    from mcp.governance.policy.engine import read_answer

    import regopy

    try:
        source = PolicySource.read(folder)
        compiled = compile_policy(source)
        interpreter = regopy.Interpreter()
        for stage, point in ENTRYPOINTS.items():
            interpreter.set_input(regopy.Input({**SAMPLE, "stage": stage}))
            answer = str(interpreter.query_bundle_entrypoint(compiled.bundle, point))
            parse_decision(stage, read_answer(answer, f"the {stage} policy of {folder}"), source.version)
    except PolicyError as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
