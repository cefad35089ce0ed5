"""The gateway's CLI: registry add/list/show/promote/archive/log/migrate, route explain/check."""

from __future__ import annotations

import json

import pytest

from mcp.commands.cli import main


@pytest.fixture
def run(registry_url, capsys):
    def run_cli(*argv: str) -> tuple[int, str, str]:
        code = main(["registry", "--registry", registry_url, "--actor", "cli-test", *argv]
                    if argv[0] != "route" else list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run_cli


def test_registry_lifecycle(run, onnx_file, hf_folder):
    assert run("migrate")[1].rstrip().endswith("schema empty -> 0003")
    assert run("add", str(onnx_file), "--version", "1")[1].startswith("registered tiny-mlp:1 (onnx, staging")
    assert run("add", str(hf_folder), "--name", "tiny-mlp", "--version", "2", "--stage", "canary")[0] == 0
    code, out, _ = run("list")
    assert code == 0 and "tiny-mlp:1" in out and "canary" in out and "LlamaForCausalLM" in out
    assert run("promote", "tiny-mlp:2", "production")[1].strip() == "tiny-mlp:2 is now production"
    assert run("archive", "tiny-mlp:1")[1].strip() == "tiny-mlp:1 is now archived"
    shown = json.loads(run("show", "tiny-mlp:2")[1])
    assert (shown["stage"], shown["format"], shown["license"], shown["created_by"]) == (
        "production", "hf", "mit", "cli-test")
    log = run("log", "tiny-mlp")[1].splitlines()
    assert [line.split()[3] for line in log] == ["model.create", "version.add", "version.add", "version.stage",
                                                 "version.stage", "version.stage"]
    assert "canary -> production" in log[4] and "cli-test" in log[0]


def test_registry_errors_leave_no_row(run, tmp_path):
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"not onnx at all")
    code, _, err = run("add", str(bad))
    assert code == 2 and "not a readable ONNX model" in err
    assert run("list")[1].count("\n") == 1  # the header line only
    code, _, err = run("promote", "nope:1", "production")
    assert code == 2 and "no model named 'nope'" in err


def test_route_explain_and_check(tmp_path, capsys, registry_url, artifact):
    from mcp.gateway.registry.registry import Registry
    from mcp.gateway.registry.stages import Stage

    config = tmp_path / "model-routing-config.yaml"
    config.write_text("""routes:
  - name: premium-short
    conditions: {user_tier: premium, max_input_tokens: 512, sla_class: [critical, high]}
    backend: {model_id: 'qwen2-7b-chat:v2.4', instance_pool: gpu-a10-pool, timeout_ms: 8000}
  - name: canary
    conditions: {tenant: acme}
    split:
      arms:
        - {name: stable, weight: 90, backend: {model_id: 'm@production'}}
        - {name: canary, weight: 10, backend: {model_id: 'm@canary'}}
default: {backend: {model_id: 'm@production', instance_pool: cpu}}
""")
    assert main(["route", "explain", "--config", str(config), "--tenant", "acme", "--tokens", "900",
                 "--tier", "premium", "--sla", "high", "--user", "u1"]) == 0
    out = capsys.readouterr().out
    assert "route premium-short: no match" in out and "[FAIL] input tokens 900 <= 512 fails" in out
    assert "[ok] user_tier 'premium' in [premium]" in out and "route: canary" in out
    assert "split by user_id: bucket" in out
    with Registry.open(registry_url) as registry:
        registry.register(artifact, "m", "7", Stage.PRODUCTION)
    assert main(["route", "explain", "--config", str(config), "--registry", registry_url]) == 0
    out = capsys.readouterr().out
    assert "no route matched: the default route is taken" in out and "model m@production = m:7, pool cpu" in out
    assert main(["route", "check", str(config)]) == 0 and "2 routes and a default, valid" in capsys.readouterr().out
