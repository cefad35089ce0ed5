"""The policy engine: the shipped bundle's Rego unit tests, decisions, hot reload with versions,
clear errors for bad bundles and malformed answers, and the OPA REST adapter against a real
HTTP server on 127.0.0.1 that answers OPA's data API by evaluating the bundle with regopy."""

from __future__ import annotations

import json
import shutil
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import regopy

from mcp.governance.errors import PolicyError
from mcp.governance.policy.bundle import ENTRYPOINTS, SHIPPED, PolicySource, compile_policy
from mcp.governance.policy.engine import RegoPolicyEngine
from mcp.governance.policy.opa_rest import OPAPolicyEngine
from mcp.governance.policy.testing import run_rego_tests

SECRET = {"kind": "aws_access_key", "category": "secret", "start": 0, "end": 20, "digest": "d", "masked": "AKIA*"}
REQUEST = {"stage": "input", "tenant": {"name": "acme"}, "model": {"requested": "smollm2"},
           "request": {"max_tokens": 64}, "findings": []}


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    folder = tmp_path / "policies"
    shutil.copytree(SHIPPED, folder)
    return folder


def test_shipped_bundle_passes_its_rego_unit_tests() -> None:
    outcomes = run_rego_tests(SHIPPED)
    failed = [f"{o.name}: {o.detail}" for o in outcomes if not o.passed]
    assert not failed
    assert len(outcomes) >= 14


def test_a_failing_rego_case_is_reported(bundle: Path) -> None:
    test = bundle / "output_test.rego"
    test.write_text(test.read_text().replace('"redact_kinds": ["email", "phone"]', '"redact_kinds": ["email"]'))
    failed = [o for o in run_rego_tests(bundle) if not o.passed]
    assert [o.name for o in failed] == ["mcp/output_test/cases: PII in an output is redacted, by kind"]
    assert "'redact_kinds': ['email', 'phone']" in failed[0].detail


def test_decisions_of_the_shipped_policies() -> None:
    engine = RegoPolicyEngine(SHIPPED)
    assert engine.evaluate("input", REQUEST).action == "allow"
    denied = engine.evaluate("input", {**REQUEST, "findings": [SECRET]})
    assert denied.action == "deny" and denied.deny[0].rule == "input.credentials"
    assert "aws_access_key" in denied.deny[0].reason
    assert denied.as_record() == {"stage": "input", "action": "deny", "policy_version": engine.version,
                                  "rules": ["input.credentials"]}
    redacted = engine.evaluate("output", {"findings": [{**SECRET, "kind": "email", "category": "pii"}]})
    assert redacted.action == "redact" and redacted.redact_kinds == {"email"}


def test_version_is_the_hash_of_the_files_and_reload_swaps_it(bundle: Path) -> None:
    engine = RegoPolicyEngine(bundle)
    first = engine.version
    assert first == PolicySource.read(bundle).version and len(first) == 64
    data = json.loads((bundle / "data.json").read_text())
    data["mcp"]["config"]["tiers"]["standard"]["max_tokens"] = 32
    (bundle / "data.json").write_text(json.dumps(data))
    assert engine.poll() is False  # changed: must hold still for one more poll
    assert engine.poll() is True and engine.version != first and engine.num_reloads == 1
    assert engine.evaluate("input", REQUEST).deny[0].rule == "input.max_tokens"


def test_a_broken_reload_keeps_the_old_version_serving(bundle: Path) -> None:
    engine = RegoPolicyEngine(bundle)
    version = engine.version
    (bundle / "broken.rego").write_text("package mcp.input\n\ndeny contains x if {\n")
    engine.poll()
    assert engine.poll() is False and engine.version == version
    assert "broken.rego" in engine.last_error and "does not compile" in engine.last_error
    assert engine.evaluate("input", {**REQUEST, "findings": [SECRET]}).action == "deny"


CRASHING_RULE = """package mcp.input

import rego.v1

base := {"findings": []}

deny contains {"rule": "crash", "reason": "x"} if {
	count(input.findings) == 0 with input as base
}
"""


def test_a_bundle_that_would_crash_rego_cpp_is_refused_and_the_server_lives_on(bundle: Path, tmp_path: Path) -> None:
    (tmp_path / "crash").mkdir()
    (tmp_path / "crash" / "p.rego").write_text(CRASHING_RULE)
    with pytest.raises(PolicyError, match=r"crashes the Rego engine \(rego-cpp, exit -6: what\(\)"):
        RegoPolicyEngine(tmp_path / "crash")
    engine = RegoPolicyEngine(bundle)
    (bundle / "crash.rego").write_text(CRASHING_RULE)
    engine.poll()
    assert engine.poll() is False and "crashes the Rego engine" in engine.last_error
    assert engine.evaluate("input", REQUEST).action == "allow"


def test_bad_bundles_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="is not a folder"):
        RegoPolicyEngine(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(PolicyError, match="has no .rego module"):
        RegoPolicyEngine(tmp_path / "empty")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "p.rego").write_text("package mcp.input\n")
    (tmp_path / "bad" / "data.json").write_text("{not json")
    with pytest.raises(PolicyError, match=r"data.json: not valid JSON"):
        RegoPolicyEngine(tmp_path / "bad")


def test_a_malformed_policy_answer_is_a_policy_error(tmp_path: Path) -> None:
    (tmp_path / "p.rego").write_text('package mcp.input\nimport rego.v1\n'
                                     'deny contains "no rule id" if input.tenant.name == "acme"\n')
    engine = RegoPolicyEngine(tmp_path)
    with pytest.raises(PolicyError, match='each item must be an object with string "rule" and "reason"'):
        engine.evaluate("input", REQUEST)
    with pytest.raises(PolicyError, match="policy stage 'middle'"):
        engine.evaluate("middle", REQUEST)


class _OPAServer:
    """OPA's REST data API (POST /v1/data/<path>) on 127.0.0.1, evaluating a bundle with regopy."""

    def __init__(self, folder: Path) -> None:
        compiled = compile_policy(PolicySource.read(folder))
        lock = threading.Lock()
        self.requests: list[tuple[str, dict]] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(handler) -> None:  # noqa: N805 - the handler's self
                body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
                self.requests.append((handler.path, body))
                point = handler.path.removeprefix("/v1/data/")
                if point not in ENTRYPOINTS.values():
                    return handler._send(200, {})  # OPA: an undefined document has no result
                with lock:
                    interpreter = regopy.Interpreter()
                    interpreter.set_input(regopy.Input(body["input"]))
                    answer = json.loads(str(interpreter.query_bundle_entrypoint(compiled.bundle, point)))
                handler._send(200, {"result": answer["expressions"][0]})

            def _send(handler, status: int, body: dict) -> None:  # noqa: N805
                payload = json.dumps(body).encode()
                handler.send_response(status)
                handler.send_header("Content-Type", "application/json")
                handler.send_header("Content-Length", str(len(payload)))
                handler.end_headers()
                handler.wfile.write(payload)

            def log_message(handler, *args) -> None:  # noqa: N805
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_opa_rest_adapter_maps_requests_and_answers() -> None:
    server = _OPAServer(SHIPPED)
    try:
        engine = OPAPolicyEngine(server.url)
        denied = engine.evaluate("input", {**REQUEST, "findings": [SECRET]})
        assert denied.action == "deny" and denied.deny[0].rule == "input.credentials"
        assert denied.policy_version == f"opa:{server.url}"
        assert server.requests[-1] == ("/v1/data/mcp/decision/input_stage",
                                       {"input": {**REQUEST, "findings": [SECRET]}})
        assert engine.evaluate("output", {"findings": []}).action == "allow"
        assert server.requests[-1][0] == "/v1/data/mcp/decision/output_stage"
    finally:
        server.close()


def test_opa_rest_adapter_errors_name_the_server() -> None:
    with pytest.raises(PolicyError, match=r"OPA at http://127.0.0.1:9 cannot be reached"):
        OPAPolicyEngine("http://127.0.0.1:9", timeout_s=1.0).evaluate("input", REQUEST)


def test_policy_evaluation_is_fast() -> None:
    engine = RegoPolicyEngine(SHIPPED)
    document = {**REQUEST, "findings": [SECRET] * 3}
    engine.evaluate("input", document)
    started = time.perf_counter()
    for _ in range(50):
        engine.evaluate("input", document)
    per_call_ms = (time.perf_counter() - started) / 50 * 1e3
    assert per_call_ms < 5, f"{per_call_ms:.2f} ms per evaluation (about 0.2 ms expected)"
