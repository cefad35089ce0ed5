"""``mcp2026 sandbox check``: a real worker's sandbox, printed line by line, exit 0 when it holds."""

from __future__ import annotations

import json

import pytest
import yaml

from mcp.commands.cli import main
from mcp.serving.isolation.commands import judge

pytestmark = pytest.mark.slow


def test_the_check_passes_and_names_each_restriction(tiny_mcp, capsys):
    assert main(["sandbox", "check", str(tiny_mcp)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("worker pid ")
    for line in ("ok    connect            refused (EPERM)", "ok    exec               refused (EPERM)",
                 "ok    ptrace             refused (EPERM)", "ok    new socket         refused (EPERM)",
                 "ok    seccomp            mode 2", "ok    core dumps         RLIMIT_CORE 0",
                 "ok    network            interfaces lo, 0 routes", "ok    model file         fds ['O_RDONLY'"):
        assert line in out, out


def test_without_the_namespace_the_network_line_warns(tiny_mcp, tmp_path, capsys):
    config = tmp_path / "mcp-config.yaml"
    config.write_text(yaml.safe_dump({"serving": {"worker": {"network_namespace": False}}}))
    assert main(["sandbox", "check", str(tiny_mcp), "--config", str(config), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ready"]["sandbox"]["network_namespace"].startswith("skipped")
    verdicts = {name: verdict for name, _, verdict in judge(report["probe"])}
    assert verdicts["network"] == "WARN" and verdicts["connect"] == "ok"


def test_an_allowed_exec_fails_the_check():
    report = {"connect": "EPERM", "new_socket": "EPERM", "netlink_socket": "EPERM", "exec": "allowed",
              "ptrace": "EPERM", "seccomp_mode": 0, "no_new_privs": False,
              "rlimits": {"core": 0, "nofile": 64, "as": None}, "interfaces": ["eth0", "lo"], "ipv4_routes": 2,
              "model_fds": [{"fd": 5, "mode": "O_RDWR"}], "model_mappings": ["rw-s"],
              "model_shared_write_map": "allowed", "environment": ["PATH"]}
    verdicts = {name: verdict for name, _, verdict in judge(report)}
    assert verdicts["exec"] == verdicts["seccomp"] == verdicts["model file"] == "FAIL"
    assert verdicts["network"] == verdicts["address space"] == "WARN"


def test_a_bad_connect_address_is_one_line(tiny_mcp, capsys):
    assert main(["sandbox", "check", str(tiny_mcp), "--connect", "nowhere"]) == 2
    assert "--connect must be HOST:PORT" in capsys.readouterr().err
