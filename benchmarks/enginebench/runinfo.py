"""What a benchmark report says about its run: the command line, the CPU, the versions, the
bandwidth, and how busy the machine was. Shared by ``engine.py`` and ``synthetic.py``."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from enginebench.report import TITLES

HERE = Path(__file__).resolve().parent
NOISY_SHARE = 0.10  # others using more than this share of the cores makes a run unreliable


def command_line(script: str, argv: list[str] | None) -> str:
    """The command that ran ``script``, paths relative to the working folder where they can be."""
    def relative(path: Path) -> Path:
        try:
            return path.relative_to(Path.cwd())
        except ValueError:
            return path

    arguments = sys.argv[1:] if argv is None else argv
    return shlex.join([str(relative(Path(sys.executable))), str(relative(Path(script).resolve())), *arguments])


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return os.uname().machine


def version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def git_revision() -> str:
    def git(*command: str) -> str:
        return subprocess.run(["git", *command], cwd=HERE, capture_output=True, text=True, check=False).stdout.strip()

    revision = git("rev-parse", "--short", "HEAD") or "unknown"
    return revision + (" (uncommitted changes)" if git("status", "--porcelain", "--untracked-files=no") else "")


def bandwidth_line(bandwidth: dict) -> str:
    if "torch_gbps" not in bandwidth:
        return f"not measured ({bandwidth.get('error')})"
    return (f"{bandwidth['torch_gbps']:.1f} GB/s (torch sum over {bandwidth['array_mib']:.0f} MiB fp32, "
            f"{bandwidth['torch_threads']} threads, best of 7; numpy 1 thread {bandwidth['numpy_gbps']:.1f} GB/s); "
            "the bound row = this / weights read per token")


def others_line(others: dict[str, float | None]) -> str:
    """Other processes' share of the cores while each engine ran, and a WARNING when too busy."""
    shares = {e: s for e, s in others.items() if s is not None}
    line = ("other processes' CPU use while each engine ran (share of all cores): "
            + ", ".join(f"{TITLES[e]} {s:.0%}" for e, s in shares.items()))
    busy = [TITLES[e] for e, s in shares.items() if s > NOISY_SHARE]
    if busy:
        line += f"\nWARNING: the machine was busy while {', '.join(busy)} ran: those figures are unreliable; rerun"
    return line


def rss_target_mib(mcp_path: str, settings, pp_tokens: int, factor: float) -> float:
    """A peak-RSS target for the batch-1 runs: ``factor`` x the .mcp file's size plus the float32
    KV cache of the longest sequence they run (the prompt-processing prompt and its token, or
    the decode prompt and its tokens). Issue 3's is 1.5 x; issue 30's for the lean decoder 1.1 x."""
    from mcp.modelfile.layout import read_layout

    arch = read_layout(mcp_path).header.architecture
    kv_per_token = arch.num_layers * 2 * arch.num_kv_heads * arch.head_dim * 4
    longest = max(pp_tokens + 1, 16 + settings.decode_tokens)  # the decode prompt is under 16 tokens
    return (factor * Path(mcp_path).stat().st_size + longest * kv_per_token) / 2**20
