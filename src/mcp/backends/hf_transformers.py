"""Hugging Face transformers as a backend: the fp32 reference, from the same GGUF (or HF folder).

transformers dequantizes a GGUF to fp32 and runs its own Llama: an implementation nobody here
wrote, which is why it is the default reference. Greedy generation runs transformers' forward
over the whole sequence at every step (no KV cache, EOS not special), as the oracle tests do:
``generate()`` would stop at EOS, and ``min_new_tokens`` would mask EOS out of the logits.
Needs the ``test`` extra (``pip install -e '.[test]'``).
"""

from __future__ import annotations

import time
from pathlib import Path

import torch

from mcp.backends.base import (
    Backend, Capabilities, Generation, GenerationParams, Health, Prompt, Scores, ScoreKind, check_loaded,
    kv_bytes, token_tuple, top_from_logits,
)


class TransformersBackend(Backend):
    capabilities = Capabilities(scores=ScoreKind.LOGITS, token_ids=True)

    def __init__(self, source: Path, name: str = "transformers") -> None:
        self.name = name
        self.source = Path(source)  # a .gguf file or a Hugging Face model folder
        self.model = None
        self.tokenizer = None

    def load(self) -> None:
        if self.model is not None:
            return
        from transformers import AutoModelForCausalLM, AutoTokenizer

        kwargs = _source_kwargs(self.source)
        self.tokenizer = AutoTokenizer.from_pretrained(**kwargs)
        self.model = AutoModelForCausalLM.from_pretrained(**kwargs, dtype=torch.float32).eval()

    def unload(self) -> None:
        self.model = self.tokenizer = None

    def health(self) -> Health:
        return Health(self.model is not None, f"{self.source.name}, fp32" if self.model is not None else "not loaded")

    @torch.inference_mode()
    def generate(self, prompt: Prompt, params: GenerationParams) -> Generation:
        check_loaded(self, self.model)
        generator = torch.Generator().manual_seed(params.seed) if params.seed is not None else None
        sequence, top = list(prompt.token_ids), []
        started = time.perf_counter()
        for _ in range(params.max_tokens):
            logits = self.model(torch.tensor([sequence]), use_cache=False).logits[0, -1].float()
            sequence.append(_pick(logits, params.temperature, generator))
            if params.top_logprobs:
                top.append(top_from_logits(logits[None], params.top_logprobs)[0])
        seconds = time.perf_counter() - started
        ids = token_tuple(sequence[len(prompt.token_ids):])
        return Generation(ids, self.tokenizer.decode(list(ids), skip_special_tokens=True), seconds, tuple(top))

    @torch.inference_mode()
    def score(self, sequence: Prompt, top_k: int) -> Scores:
        check_loaded(self, self.model)
        logits = self.model(torch.tensor([list(sequence.token_ids)]), use_cache=False).logits[0]
        return Scores(logits=logits.float())

    def versions(self) -> dict[str, str]:
        import transformers

        return {"transformers": transformers.__version__, "torch": torch.__version__}

    def kv_bytes_per_token(self) -> int | None:
        check_loaded(self, self.model)
        config = self.model.config
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        return kv_bytes(config.num_hidden_layers, config.num_key_value_heads, head_dim, 4)

    def describe(self) -> str:
        return f"{self.name}: {self.source.name}, fp32"


def _source_kwargs(source: Path) -> dict:
    if source.suffix == ".gguf":
        return {"pretrained_model_name_or_path": str(source.parent), "gguf_file": source.name}
    return {"pretrained_model_name_or_path": str(source)}


def _pick(logits: torch.Tensor, temperature: float, generator: torch.Generator | None) -> int:
    if temperature == 0:
        return int(logits.argmax())
    probs = torch.softmax(logits / temperature, -1)
    return int(torch.multinomial(probs, 1, generator=generator))
