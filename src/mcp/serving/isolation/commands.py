"""``mcp2026 sandbox check MODEL``: start a model's worker as the server would, and print the
sandbox as the worker measures it from inside (one line per restriction, ok / WARN / FAIL).

Exit status 0 when every restriction holds (a warning, such as no network namespace without
privilege, still passes), 1 when one does not.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mcp.base.errors import ConfigError


def add_sandbox_commands(commands: argparse._SubParsersAction) -> None:
    sandbox = commands.add_parser("sandbox", help="sandbox check: measure a model worker's isolation")
    checks = sandbox.add_subparsers(title="checks", metavar="CHECK")
    check = checks.add_parser("check", help="start a model's worker and print its sandbox, measured inside")
    check.add_argument("model", help="a .mcp path or a catalog name")
    check.add_argument("--config", type=Path, help="an mcp-config.yaml (serving.worker: the limits)")
    check.add_argument("--connect", default="127.0.0.1:9", metavar="HOST:PORT",
                       help="where the worker tries to connect (default 127.0.0.1:9)")
    check.add_argument("--json", action="store_true", help="print the whole measurement as JSON")
    check.set_defaults(handler=sandbox_check)


def sandbox_check(args: argparse.Namespace) -> int:
    from mcp.config.runtime import RuntimeConfig, load_config
    from mcp.config.serving import ServedModel
    from mcp.runtime.session import Session
    from mcp.serving.isolation.models import WorkerModels, worker_loop, worker_report

    host, _, port = args.connect.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"--connect must be HOST:PORT, got {args.connect!r}")
    config = load_config(args.config) if args.config else RuntimeConfig()
    models = WorkerModels(Session(config))
    model = models.load(ServedModel("sandbox-check", args.model), "sandbox-check:1")
    try:
        report = worker_loop(model).probe(host, int(port))
        ready = worker_report(model) or {}
    finally:
        models.close()
    if args.json:
        print(json.dumps({"probe": report, "ready": ready}, indent=2, sort_keys=True))
    rows = judge(report)
    if not args.json:
        print(f"worker pid {report['pid']}, model sha256 {ready.get('model_sha256', '?')}")
        for name, value, verdict in rows:
            print(f"{verdict:<5} {name:<18} {value}")
    return 1 if any(verdict == "FAIL" for _, _, verdict in rows) else 0


def judge(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(restriction, what was measured, ok | WARN | FAIL) for each line of the check."""
    def refused(key: str) -> tuple[str, str, str]:
        value = report[key]
        return key.replace("_", " "), f"refused ({value})" if value != "allowed" else "ALLOWED", \
            "ok" if value != "allowed" else "FAIL"

    limits = report["rlimits"]
    empty_net = set(report["interfaces"]) <= {"lo"} and report["ipv4_routes"] == 0
    model_ro = all(fd["mode"] == "O_RDONLY" for fd in report["model_fds"]) and \
        not any("w" in perms and "s" in perms for perms in report["model_mappings"]) and \
        report["model_shared_write_map"] != "allowed"
    return [
        refused("connect"), refused("new_socket"), refused("netlink_socket"), refused("exec"), refused("ptrace"),
        ("seccomp", f"mode {report['seccomp_mode']}", "ok" if report["seccomp_mode"] == 2 else "FAIL"),
        ("no_new_privs", str(report["no_new_privs"]), "ok" if report["no_new_privs"] else "FAIL"),
        ("core dumps", f"RLIMIT_CORE {limits['core']}", "ok" if limits["core"] == 0 else "FAIL"),
        ("open files", f"RLIMIT_NOFILE {limits['nofile']}", "ok" if limits["nofile"] is not None else "FAIL"),
        ("address space", f"RLIMIT_AS {limits['as'] or 'unlimited'}", "ok" if limits["as"] else "WARN"),
        ("network", f"interfaces {', '.join(report['interfaces']) or 'none'}, {report['ipv4_routes']} routes",
         "ok" if empty_net else "WARN"),
        ("model file", f"fds {[fd['mode'] for fd in report['model_fds']]}, maps {report['model_mappings']} "
         f"(private: copy-on-write), shared writable map {report['model_shared_write_map']}",
         "ok" if model_ro else "FAIL"),
        ("environment", f"{len(report['environment'])} variables: {', '.join(report['environment'])}", "ok"),
    ]
