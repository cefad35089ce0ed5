"""llama.cpp as a backend, through llama-cpp-python (the ``llamacpp`` extra).

The model runs with ``logits_all=True``, so every evaluated position keeps its full logits:
``score`` evaluates the sequence once and returns them all. ``generate`` evaluates one token
at a time and picks from the last row itself (argmax, or a seeded draw), so EOS does not
stop it and greedy ties break as everywhere else (lowest id).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

from mcp.backends.base import (
    Backend, Capabilities, Generation, GenerationParams, Health, Prompt, Scores, ScoreKind, check_loaded,
    kv_bytes, token_tuple, top_from_logits,
)

DEFAULT_CONTEXT = 2048


class LlamaCppBackend(Backend):
    capabilities = Capabilities(scores=ScoreKind.LOGITS, token_ids=True)

    def __init__(self, gguf: Path, name: str = "llamacpp", threads: int | None = None,
                 context: int = DEFAULT_CONTEXT) -> None:
        self.name = name
        self.gguf = Path(gguf)
        self.threads = threads or torch.get_num_threads()
        self.context = context
        self.llm = None

    def load(self) -> None:
        if self.llm is not None:
            return
        from llama_cpp import Llama

        self.llm = Llama(model_path=str(self.gguf), n_ctx=self.context, n_threads=self.threads,
                         n_threads_batch=self.threads, logits_all=True, verbose=False)

    def unload(self) -> None:
        if self.llm is not None:
            self.llm.close()
        self.llm = None

    def health(self) -> Health:
        return Health(self.llm is not None, self.gguf.name if self.llm is not None else "not loaded")

    def generate(self, prompt: Prompt, params: GenerationParams) -> Generation:
        check_loaded(self, self.llm)
        rng = np.random.default_rng(params.seed)
        ids, top = [], []
        started = time.perf_counter()
        self._evaluate(prompt.token_ids)
        for _ in range(params.max_tokens):
            logits = torch.from_numpy(np.array(self.llm.scores[self.llm.n_tokens - 1], dtype=np.float32))
            ids.append(_pick(logits, params.temperature, rng))
            if params.top_logprobs:
                top.append(top_from_logits(logits[None], params.top_logprobs)[0])
            self.llm.eval([ids[-1]])
        seconds = time.perf_counter() - started
        text = self.llm.detokenize(ids, prev_tokens=list(prompt.token_ids)).decode("utf-8", "replace")
        return Generation(token_tuple(ids), text, seconds, tuple(top))

    def score(self, sequence: Prompt, top_k: int) -> Scores:
        check_loaded(self, self.llm)
        self._evaluate(sequence.token_ids)
        rows = np.array(self.llm.scores[: len(sequence.token_ids)], dtype=np.float32)  # [T, vocab]
        return Scores(logits=torch.from_numpy(rows))

    def versions(self) -> dict[str, str]:
        import llama_cpp

        return {"llama-cpp-python": llama_cpp.__version__}

    def kv_bytes_per_token(self) -> int | None:
        check_loaded(self, self.llm)
        meta = self.llm.metadata
        arch = meta["general.architecture"]
        heads = int(meta[f"{arch}.attention.head_count"])
        kv_heads = int(meta.get(f"{arch}.attention.head_count_kv", heads))
        head_dim = int(meta[f"{arch}.embedding_length"]) // heads
        return kv_bytes(int(meta[f"{arch}.block_count"]), kv_heads, head_dim, 2)  # f16 cache by default

    def describe(self) -> str:
        return f"{self.name}: {self.gguf.name}, llama.cpp ({self.threads} threads, f16 KV cache)"

    def _evaluate(self, token_ids) -> None:
        self.llm.reset()  # n_tokens = 0: the next eval overwrites the KV cache from slot 0
        self.llm.eval(list(token_ids))


def _pick(logits: torch.Tensor, temperature: float, rng: np.random.Generator) -> int:
    if temperature == 0:
        return int(logits.argmax())
    probs = torch.softmax(logits.double() / temperature, -1).numpy()
    return int(rng.choice(len(probs), p=probs / probs.sum()))
