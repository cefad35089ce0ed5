"""``LeanModel``: one sequence at a time through the native decode step, in a process without torch.

Load maps the ``.mcp`` file and builds the tokenizer; a request runs its prompt through
``decode_step`` in chunks of up to ``MAX_CHUNK`` rows (the step writes each chunk's keys and values,
then attends causally), then one row per generated token, then the output head
(``_cpu.matmul``) on the last row only. The KV cache is one sequence's, paged as the
PyTorch engine's (``[blocks, 16, kv_heads, head_dim]`` per layer) with the identity block
table, allocated zeroed and untouched, so only the positions a request reaches become
resident. Consecutive requests that share a prefix reuse its keys and values.

Tokens, text, stops and finish reasons come from the same ``SequenceState`` the PyTorch
engine uses, so a greedy request gives the same tokens there and here when both run the
native step with exact dots (``decode_dots: exact``; the lean decoder has no integer dots) and a
float32 KV cache.
"""

from __future__ import annotations

import mmap
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mcp.base.arguments import check_options, check_text
from mcp.base.errors import CapacityError, ConfigError, InvalidRequestError, ModelFormatError
from mcp.base.result import InferResult, Timings, Usage
from mcp.engine.heap import release_free_memory
from mcp.engine.lean import native
from mcp.engine.lean.sampling import Sampler
from mcp.engine.lean.weights import FileWeights, address, inverse_frequencies, rope_rows, table_fields
from mcp.engine.params import SamplingParams
from mcp.engine.prompting import PROMPT_OPTIONS, SAMPLING_OPTIONS, chat_ids, prompt_encoder, token_logprobs
from mcp.engine.sequence import SequenceState, StepOutput, check_prompt
from mcp.engine.tokenizer import Tokenizer
from mcp.modelfile.layout import read_layout

BLOCK_SIZE = 16  # positions per KV block, as the PyTorch engine's default
# Prompt rows per decode_step call. The step's scratch grows with rows x positions (its
# attention scores); 32 rows prefill as fast per token as 256 (590 against 560 tok/s on a
# 500-token prompt, Zen 4, 2 threads) and keep that scratch ~1.5 MiB instead of ~13.
MAX_CHUNK = 32
ROPE_ROWS = 512  # RoPE table rows computed at a time
KV_DTYPES = {"f32": np.float32, "f16": np.float16}


class LeanModel:
    """A ``.mcp`` model decoded without torch: ``infer``, ``stream``, ``chat``, ``chat_stream``.

    One sequence runs at a time: a call made while another (or an open stream) is running
    is refused with ``CapacityError``; ``mcp.runtime.Session`` batches concurrent requests.
    """

    backend = "lean"

    def __init__(self, path: str | os.PathLike, *, num_threads: int | None = None, max_context: int | None = None,
                 kv_cache_dtype: str = "f32", prefix_caching: bool = True, name: str | None = None) -> None:
        started = time.perf_counter()
        if num_threads is not None and (isinstance(num_threads, bool) or not isinstance(num_threads, int)
                                        or num_threads < 1):
            raise ConfigError(f"num_threads must be a positive integer, got {num_threads!r}")
        if kv_cache_dtype not in KV_DTYPES:
            raise ConfigError(f"kv_cache_dtype must be one of {', '.join(KV_DTYPES)}, got {kv_cache_dtype!r}")
        self._cpu = native.load()
        layout = read_layout(path)
        header = layout.header
        arch = header.architecture
        if arch.architecture != "llama":
            raise ModelFormatError(f"{layout.path}: the lean decoder runs the llama family, not {arch.architecture!r}"
                                   " (its variant " + repr(arch.variant) + "); run it with mcp.runtime.Session")
        limit = arch.max_position_embeddings
        if max_context is not None and (isinstance(max_context, bool) or not isinstance(max_context, int)
                                        or not 2 <= max_context <= limit):
            raise ConfigError(f"max_context must be an integer in [2, {limit}] (the model's context), "
                              f"got {max_context!r}")
        self.path = layout.path
        self.architecture = arch
        self.chat_template = header.tokenizer.chat_template  # the header itself is not kept: its
        # tokenizer JSON (3 MiB of str for SmolLM2) is not needed once the tokenizer is built
        self.name = name or Path(layout.path).stem
        self.max_context = max_context or limit
        if arch.sliding_window is not None and self.max_context > arch.sliding_window:
            raise ConfigError(f"{layout.path}: the lean decoder has no sliding window; this model attends through one "
                              f"of {arch.sliding_window} tokens: pass max_context={arch.sliding_window} or less, or "
                              "run it with mcp.runtime.Session")
        self.num_threads = num_threads or len(os.sched_getaffinity(0))
        self.tokenizer = Tokenizer.from_spec(header.tokenizer)
        self.kv_cache_dtype = kv_cache_dtype
        self._build_step(FileWeights(layout), KV_DTYPES[kv_cache_dtype])  # its views keep the map
        self._busy = threading.Lock()
        self._cached_ids: list[int] = []  # the tokens whose keys and values the cache holds, in order
        self._last_reused = 0  # prompt tokens the last request found in the cache
        self.prefix_caching = prefix_caching
        del layout, header
        release_free_memory()  # what building the tables freed, and the header's strings
        self.load_s = time.perf_counter() - started

    # -- building the step's tables once ---------------------------------------------------
    def _build_step(self, weights: FileWeights, kv_dtype: type) -> None:
        arch = self.architecture
        self.embed = weights.matrix("model.embed_tokens.weight")
        self.head = self.embed if arch.tie_word_embeddings else weights.matrix("lm_head.weight")
        self._final_norm = weights.vector("model.norm.weight")
        freq_factors = weights.vector("model.rope_freqs") if "model.rope_freqs" in weights.specs else None
        self._inv_freq = inverse_frequencies(arch, freq_factors)
        # the RoPE tables' rows are filled as positions are reached (_extend_rope): a short
        # request makes a few KiB of the 8,192-position tables resident, not 4 MiB
        self._cos = _zeroed((self.max_context, arch.head_dim), np.float32)
        self._sin = _zeroed((self.max_context, arch.head_dim), np.float32)
        self._rope_rows = 0
        num_blocks = -(-self.max_context // BLOCK_SIZE)
        kv_shape = (num_blocks, BLOCK_SIZE, arch.num_kv_heads, arch.head_dim)
        self._weight_arrays: list[np.ndarray] = []  # every weight the layer table points into
        self._kv: list[np.ndarray] = []  # and every layer's keys and values
        rows = []
        for index in range(arch.num_layers):
            keys, values = _zeroed(kv_shape, kv_dtype), _zeroed(kv_shape, kv_dtype)
            rows.append(self._layer_row(weights, f"model.layers.{index}", keys, values))
        self._layers = np.array(rows, dtype=np.int64)  # [L, 84], csrc/module.cpp read_layer
        self._dims = np.array([arch.hidden_size, arch.num_attention_heads, arch.num_kv_heads, arch.head_dim,
                               arch.intermediate_size, num_blocks, BLOCK_SIZE, self.max_context, address(self._cos),
                               address(self._sin), address(self._final_norm), int(kv_dtype == np.float16),
                               0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],  # 1 / sqrt(D), SiLU, no window, whole-head
                              # RoPE, no experts
                              dtype=np.int64)
        self._eps = float(arch.rms_norm_eps)
        self._table = np.arange(num_blocks, dtype=np.int64)
        layer_kinds = sorted({weights.specs[name].encoding for name in weights.specs
                              if name.startswith("model.layers.") and name.endswith("_proj.weight")})
        self.precision = (f"{'/'.join(layer_kinds)} layers, {self.head.kind} head, exact dots, "
                          f"{self.kv_cache_dtype} KV cache")

    def _layer_row(self, weights: FileWeights, prefix: str, keys: np.ndarray, values: np.ndarray) -> list[int]:
        attn, mlp = f"{prefix}.self_attn", f"{prefix}.mlp"
        qkv = weights.stacked([f"{attn}.{p}_proj.weight" for p in "qkv"])
        biases = [f"{attn}.{p}_proj.bias" for p in "qkv"]
        present = [name in weights.specs for name in biases]
        if any(present) and not all(present):
            raise ModelFormatError(f"{self.path}: {prefix} has a bias on some of q/k/v only")
        bias = np.concatenate([weights.vector(name) for name in biases]) if all(present) else None
        for part in ("o_proj", "gate_proj", "up_proj", "down_proj"):
            owner = attn if part == "o_proj" else mlp
            if f"{owner}.{part}.bias" in weights.specs:
                raise ModelFormatError(f"{self.path}: {owner}.{part} has a bias, which the native step does not add")
        o = [weights.matrix(f"{attn}.o_proj.weight")]
        gate_up = weights.stacked([f"{mlp}.gate_proj.weight", f"{mlp}.up_proj.weight"])
        down = [weights.matrix(f"{mlp}.down_proj.weight")]
        input_norm = weights.vector(f"{prefix}.input_layernorm.weight")
        post_norm = weights.vector(f"{prefix}.post_attention_layernorm.weight")
        self._weight_arrays += [array for parts in (qkv, o, gate_up, down) for part in parts for array in part.arrays]
        self._weight_arrays += [array for array in (input_norm, post_norm, bias) if array is not None]
        self._kv += [keys, values]
        return [address(input_norm), *table_fields(qkv), 0 if bias is None else address(bias), *table_fields(o),
                address(post_norm), *table_fields(gate_up), *table_fields(down), address(keys), address(values),
                0, 0, 0, 0, 0, 0, 0]  # no q/k norms, no output norms, not windowed, no experts (read_layer)

    @property
    def weight_bytes(self) -> int:
        """Bytes of weights one decode step reads: every layer's matrices and norms, the final
        norm, the output head (each array once; the KV cache and RoPE tables left out)."""
        weights = [*self._weight_arrays, *self.head.arrays, self._final_norm]
        seen = {(address(array), array.nbytes) for array in weights}
        return sum(nbytes for _, nbytes in seen)

    # -- the SDK calls -------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(check_text(text, "text"))

    def infer(self, prompt: str, **options: Any) -> InferResult:
        """Complete ``prompt`` (as a user message through the chat template, or as is with
        ``raw=True``); options as ``mcp.runtime.Model.infer``'s sampling options."""
        ids, params = self._prompt_request(prompt, options)
        return self._collect(ids, params)

    def stream(self, prompt: str, **options: Any) -> Iterator[str]:
        """``infer``'s text as it is generated, one delta at a time."""
        ids, params = self._prompt_request(prompt, options)
        return (step.text for step in self._run(ids, params) if step.text)

    def chat(self, messages: Sequence[Mapping[str, Any]], **options: Any) -> InferResult:
        check_options(options, SAMPLING_OPTIONS)
        return self._collect(self._chat_ids(messages), SamplingParams.from_user(**options))

    def chat_stream(self, messages: Sequence[Mapping[str, Any]], **options: Any) -> Iterator[str]:
        check_options(options, SAMPLING_OPTIONS)
        ids, params = self._chat_ids(messages), SamplingParams.from_user(**options)
        return (step.text for step in self._run(ids, params) if step.text)

    def _prompt_request(self, prompt: str, options: dict[str, Any]) -> tuple[list[int], SamplingParams]:
        check_options(options, SAMPLING_OPTIONS | PROMPT_OPTIONS)
        options = dict(options)
        raw, system = options.pop("raw", False), options.pop("system", None)
        params = SamplingParams.from_user(**options)
        prompt = check_text(prompt, "prompt")
        return prompt_encoder(self.tokenizer, self.chat_template, raw, system)(prompt), params

    def _chat_ids(self, messages: Any) -> list[int]:
        return chat_ids(self.tokenizer, messages)

    def _collect(self, prompt_ids: list[int], params: SamplingParams) -> InferResult:
        started = time.monotonic()
        first = None
        steps: list[StepOutput] = []
        for step in self._run(prompt_ids, params):
            first = first or time.monotonic()
            steps.append(step)
        ended = time.monotonic()
        ttft = (first or ended) - started
        count = len(steps)
        logprobs = token_logprobs(self.tokenizer, steps) if params.logprobs is not None else None
        return InferResult(
            text="".join(step.text for step in steps), token_ids=tuple(step.token_id for step in steps),
            finish_reason=steps[-1].finish_reason, usage=Usage(len(prompt_ids), count, self._last_reused),
            timings=Timings(ttft, (ended - started - ttft) / (count - 1) if count > 1 else 0.0, ended - started),
            backend=self.backend, precision=self.precision, model=self.name, logprobs=logprobs)

    # -- generating -----------------------------------------------------------------------------
    def _run(self, prompt_ids: list[int], params: SamplingParams) -> Iterator[StepOutput]:
        """Check the request now, then generate lazily (the cache is held from the first ``next``)."""
        check_prompt(prompt_ids, self.max_context)
        vocab = self.head.shape[0]
        bad = next((t for t in prompt_ids if not 0 <= t < vocab), None)
        if bad is not None:
            raise InvalidRequestError(f"prompt token {bad} is outside the vocabulary [0, {vocab})")
        budget = min(params.max_tokens, self.max_context - len(prompt_ids))
        sequence = SequenceState(0, prompt_ids, params, budget, self.tokenizer, Sampler(params))
        return self._generate(sequence)

    def _generate(self, sequence: SequenceState) -> Iterator[StepOutput]:
        if not self._busy.acquire(blocking=False):
            raise CapacityError("the lean decoder runs one sequence at a time and one is running (or a stream "
                                "is still open: read it to the end or close it); use mcp.runtime.Session to "
                                "serve concurrent requests")
        try:
            prompt = sequence.prompt_ids
            reused = self._reusable(prompt)
            self._cached_ids = self._cached_ids[:reused]
            self._last_reused = reused
            logits = self._forward(prompt[reused:], reused)
            self._cached_ids = list(prompt)
            while True:
                step = sequence.advance(logits, _never)
                yield step
                if step.finish_reason is not None:
                    return
                logits = self._forward([step.token_id], len(self._cached_ids))
                self._cached_ids.append(step.token_id)
        finally:
            self._busy.release()

    def _reusable(self, prompt: list[int]) -> int:
        """Leading prompt tokens whose keys and values the cache already holds (never the last
        one: its logits are needed)."""
        if not self.prefix_caching:
            return 0
        cached, limit = self._cached_ids, min(len(self._cached_ids), len(prompt) - 1)
        same = 0
        while same < limit and cached[same] == prompt[same]:
            same += 1
        return same

    def _forward(self, ids: list[int], start: int) -> np.ndarray:
        """Run ``ids`` at positions ``start``.. through every layer; the last one's logits [vocab]."""
        arch = self.architecture
        self._extend_rope(start + len(ids))
        hidden = None
        for offset in range(0, len(ids), MAX_CHUNK):
            chunk = ids[offset:offset + MAX_CHUNK]
            x = self.embed.rows(chunk)  # [M, hidden] float32, overwritten by the step
            first = start + offset
            positions = np.arange(first, first + len(chunk), dtype=np.int64)
            width = (first + len(chunk) - 1) // BLOCK_SIZE + 1  # blocks up to the chunk's last position
            tables = np.ascontiguousarray(np.broadcast_to(self._table[:width], (len(chunk), width)))
            self._cpu.decode_step(address(self._layers), arch.num_layers, address(self._dims), self._eps, address(x),
                                  len(chunk), address(positions), address(tables), width, 0, self.num_threads,
                                  address(tables), width)
            hidden = x[-1:]
        return self._logits(hidden)

    def _extend_rope(self, positions: int) -> None:
        """Fill the RoPE tables' rows up to ``positions`` (in steps of ROPE_ROWS)."""
        if positions <= self._rope_rows:
            return
        stop = min(self.max_context, -(-positions // ROPE_ROWS) * ROPE_ROWS)
        self._cos[self._rope_rows:stop], self._sin[self._rope_rows:stop] = rope_rows(self._inv_freq, self._rope_rows,
                                                                                      stop)
        self._rope_rows = stop

    def _logits(self, hidden: np.ndarray) -> np.ndarray:
        head = self.head
        n, k = head.shape
        out = np.empty((1, n), dtype=np.float32)
        kind, codes, qparams, qparams_f16 = head.pointers()
        self._cpu.matmul(kind, address(hidden), 0, 1, k, n, codes, qparams, qparams_f16, address(out), 0,
                         self.num_threads, 0)
        return out[0]

    def __repr__(self) -> str:
        return f"LeanModel(name={self.name!r}, path={str(self.path)!r}, precision={self.precision!r})"


def _zeroed(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """A zeroed array in pages of its own: none is resident until written. (``np.zeros`` may
    take memory the C heap freed earlier, which it must clear, making it all resident.)"""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return np.frombuffer(mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE), dtype=dtype).reshape(shape)


def _never() -> bool:
    return False
