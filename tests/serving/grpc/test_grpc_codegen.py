"""The committed stubs are exactly what ``python -m mcp.serving.grpc.codegen`` makes from the proto."""

from __future__ import annotations

import subprocess
import sys

from mcp.serving.grpc import codegen


def test_committed_stubs_equal_a_fresh_generation(tmp_path):
    written = codegen.generate(tmp_path / "gen")
    committed = sorted(p.name for p in codegen.GEN_DIR.iterdir() if p.is_file())
    assert sorted(p.name for p in written) == committed == [
        "__init__.py", "inference_pb2.py", "inference_pb2.pyi", "inference_pb2_grpc.py"]
    for path in written:
        assert path.read_bytes() == (codegen.GEN_DIR / path.name).read_bytes(), (
            f"{path.name} is stale: run `python -m mcp.serving.grpc.codegen` and commit the result")


def test_the_command_writes_where_it_is_told_and_fails_clearly_without_the_proto(tmp_path):
    out = tmp_path / "stubs"
    done = subprocess.run([sys.executable, "-m", "mcp.serving.grpc.codegen", "--out", str(out)],
                          capture_output=True, text=True, check=True)
    assert (out / "inference_pb2_grpc.py").is_file() and str(out / "inference_pb2.py") in done.stdout
    missing = subprocess.run([sys.executable, "-m", "mcp.serving.grpc.codegen", "--out", str(out),
                              "--proto-root", str(tmp_path / "nowhere")], capture_output=True, text=True)
    assert missing.returncode == 2 and "mcp/v1/inference.proto does not exist" in missing.stderr
    assert "Traceback" not in missing.stderr
