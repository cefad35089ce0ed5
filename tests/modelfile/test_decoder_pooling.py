"""A decoder that declares a pooling (a sentence-transformers folder around a Qwen2, as gte-Qwen2 and
Qwen3-Embedding ship) embeds as transformers' hidden states pooled by hand say, and still
generates; without ``modules.json`` the same decoder refuses to embed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from mcp.base.errors import InvalidRequestError
from mcp.compiler.compiler import compile_model
from mcp.config.runtime import config_from_dict
from mcp.runtime.session import Session

SMALL = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, vocab_size=49152, max_position_embeddings=256, rms_norm_eps=1e-6)
TEXTS = ["The capital of France is Paris.", "hi", "def add(a, b):\n    return a + b"]


@pytest.fixture
def qwen2_folder(tmp_path: Path, add_tokenizer):
    import transformers

    torch.manual_seed(0)
    model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**SMALL)).to(torch.float32)
    folder = tmp_path / "tiny-qwen2"
    model.save_pretrained(folder)
    return add_tokenizer(folder)


def sentence_files(folder: Path, mode_key: str) -> None:
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 64, mode_key: True}))


def load(folder: Path, tmp_path: Path):
    out = tmp_path / "m.mcp"
    compile_model(folder, out, precision="fp32")
    session = Session(config_from_dict({"runtime": {"device": "cpu", "num_threads": 1}}))
    return session, session.load_model(str(out))


@pytest.mark.parametrize(("mode_key", "mode"), [("pooling_mode_lasttoken", "last"), ("pooling_mode_mean_tokens", "mean")])
def test_a_decoder_with_a_pooling_embeds_as_transformers(qwen2_folder, tmp_path, mode_key, mode):
    import transformers

    sentence_files(qwen2_folder, mode_key)
    session, model = load(qwen2_folder, tmp_path)
    with session:
        assert model.embeds and model.header.architecture.pooling.mode == mode
        ours = torch.tensor(model.embed(TEXTS).embeddings)
        reference = transformers.Qwen2Model.from_pretrained(str(qwen2_folder), torch_dtype=torch.float32).eval()
        expected = []
        for text in TEXTS:
            ids = torch.tensor([model.tokenize(text)])
            with torch.inference_mode():
                hidden = reference(input_ids=ids).last_hidden_state[0]  # the final norm applied
            expected.append(hidden[-1] if mode == "last" else hidden.mean(0))
        expected = F.normalize(torch.stack(expected), dim=-1)
        assert (ours - expected).abs().max().item() < 1e-5
        assert model.infer("Hello", raw=True, max_tokens=3, temperature=0.0).usage.completion_tokens == 3


def test_without_modules_json_the_decoder_does_not_embed(qwen2_folder, tmp_path):
    session, model = load(qwen2_folder, tmp_path)
    with session:
        assert not model.embeds and model.header.architecture.pooling is None
        with pytest.raises(InvalidRequestError, match="declares no pooling"):
            model.embed("hello")
