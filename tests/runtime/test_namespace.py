"""`mcp` is a PEP 420 namespace portion: it installs beside the Model Context Protocol SDK.

A throwaway venv gets the MCP SDK (`pip install mcp`) and this project's wheel; both
`mcp.runtime` (ours) and `mcp.client` (theirs) import, and our SDK works there.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).parents[2]


def sh(*args: str, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600, **kwargs)
    assert proc.returncode == 0, f"{args}: {proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc


def test_no_init_file_makes_mcp_a_namespace():
    assert not (ROOT / "src" / "mcp" / "__init__.py").exists()
    forbidden = {"cli", "client", "os", "server", "shared", "types"}
    assert forbidden.isdisjoint(p.name for p in (ROOT / "src" / "mcp").iterdir())


def test_installs_beside_the_model_context_protocol_sdk(tmp_path):
    sh(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), str(ROOT))
    wheel = next((tmp_path / "dist").glob("mcp2026-*.whl"))
    venv = tmp_path / "venv"
    sh(sys.executable, "-m", "venv", str(venv))
    python = str(venv / "bin" / "python")
    sh(python, "-m", "pip", "install", "-q", "mcp")
    sh(python, "-m", "pip", "install", "-q", "--no-deps", str(wheel))
    # Our dependencies (torch & co.) come from this venv, appended after the throwaway's own
    # site-packages so that `mcp` resolves to the directory both distributions share.
    site = sh(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    Path(site, "zz_host_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    probe = (
        "import mcp.client, mcp.runtime, mcp.types\n"
        "from mcp.runtime import Session, ModelFormatError\n"
        "from mcp.client.session import ClientSession\n"
        "import mcp.runtime.session as s\n"
        "print(mcp.runtime.__file__.startswith(%r), Session.__name__, ClientSession.__name__)\n" % site
    )
    assert sh(python, "-c", probe).stdout.split() == ["True", "Session", "ClientSession"]
    sh(python, "-m", "pip", "uninstall", "-q", "-y", "mcp")  # removing theirs keeps ours working
    assert sh(python, "-c", "from mcp.runtime import Session; print('ok')").stdout.strip() == "ok"
