"""Fixtures of the serving tests: a tiny random-weight model and the real default model."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_mcp(smollm2_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer random Llama with the SmolLM2 tokenizer, compiled to .mcp: loads in milliseconds."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from mcp.modelfile.compiler import compile_model

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
    """A real ``mcp2026 serve`` subprocess on a free loopback port."""

    def __init__(self, config: dict, folder: Path, timeout_s: float = 180.0) -> None:
        import subprocess
        import sys

        import yaml

        self.port = _free_port()
        config = {**config, "serving": {**config.get("serving", {}), "host": "127.0.0.1", "port": self.port}}
        path = folder / "mcp-config.yaml"
        path.write_text(yaml.safe_dump(config))
        self.log_path = folder / "server.log"
        self._log = self.log_path.open("wb")
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen([sys.executable, "-m", "mcp.runtime.cli", "serve", "--config", str(path)],
                                        stdout=self._log, stderr=subprocess.STDOUT)
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
    """``start_server(config_dict)`` -> a ready ServerProcess; every one is stopped at the end."""
    started: list[ServerProcess] = []

    def start(config: dict) -> ServerProcess:
        server = ServerProcess(config, tmp_path_factory.mktemp("server"))
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
