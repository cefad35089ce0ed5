"""``POST /admin/models`` on a real server with worker isolation (issue 28, findings 7 and 8):
a bad model file is a 422 naming the file and the problem (never a 500), a foreign file's 422
does not echo its bytes, a source outside the allowed folders is a 403 before the file is
touched, and the server goes on serving."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from mcp.serving.tenants import hash_key

sys.path.insert(0, str(Path(__file__).parents[2] / "modelfile"))
from bad_files import with_header, write_tiny_model  # noqa: E402

pytestmark = pytest.mark.slow
ADMIN = "admin-key-h28"
Q_PROJ = "model.layers.0.self_attn.q_proj.weight"


def _broken(good: bytes, folder: Path) -> dict[str, tuple[Path, str]]:
    """name -> (file, what the 422 must say)."""
    def one_dimensional(parts):
        parts.tensor(Q_PROJ)["shape"] = [64]

    def zero_heads(parts):
        parts.header["architecture"]["num_attention_heads"] = 0

    def bad_tokenizer(parts):
        parts.header["tokenizer"]["tokenizer_json"] = "{}"

    cases = {"int4-1d": (one_dimensional, "an int4 tensor is a matrix [N, K]"),
             "zero-heads": (zero_heads, "architecture.num_attention_heads is 0"),
             "bad-tokenizer": (bad_tokenizer, "the model's tokenizer cannot be loaded")}
    made = {}
    for name, (change, expected) in cases.items():
        path = folder / f"{name}.mcp"
        path.write_bytes(with_header(good, change))
        made[name] = (path, expected)
    return made


def _load(server, source: str) -> httpx.Response:
    return httpx.post(server.url + "/admin/models", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=120,
                      json={"name": "x", "source": source})


def test_admin_loads_of_bad_files_are_422_and_foreign_paths_403(start_server, tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    good = write_tiny_model(models / "tiny.mcp")
    server = start_server({
        "runtime": {"device": "cpu", "num_threads": 1},
        "serving": {"isolation": "worker", "models": [{"name": "tiny", "source": str(good)}],
                    "tenants": [{"name": "ops", "key_sha256": [hash_key(ADMIN)], "role": "admin"}]},
    })
    for name, (path, expected) in _broken(good.read_bytes(), models).items():
        answer = _load(server, str(path))
        assert answer.status_code == 422, (name, answer.text)
        error = answer.json()["error"]
        assert error["code"] == "bad_model_file" and str(path) in error["message"] and expected in error["message"]

    shadow = models / "shadow.mcp"  # a non-.mcp file in an allowed folder: its bytes stay out of the answer
    shadow.write_bytes(b"root:*:20000:0:99999:7:::\n")
    answer = _load(server, str(shadow))
    said = answer.json()["error"]["message"].removeprefix(str(shadow))
    assert answer.status_code == 422 and "not a .mcp file" in said
    assert "root" not in said and str(int.from_bytes(b"root:*:2", "little")) not in said

    for outside in ("/etc/shadow", "/etc/passwd", str(tmp_path / "elsewhere.mcp"), "../../../../etc/passwd"):
        answer = _load(server, outside)
        assert answer.status_code == 403, (outside, answer.text)
        assert "outside the folders admin loads may read" in answer.json()["error"]["message"]

    (models / "link.mcp").symlink_to("/etc/passwd")  # inside by name, outside once resolved
    assert _load(server, str(models / "link.mcp")).status_code == 403

    served = httpx.post(server.url + "/v1/completions", timeout=120, headers={"Authorization": f"Bearer {ADMIN}"},
                        json={"model": "tiny", "prompt": "t1 t2", "max_tokens": 2, "ignore_eos": True})
    assert served.status_code == 200, served.text
    assert "Traceback" not in server.log()
