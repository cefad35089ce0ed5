"""Compile tiny random Hugging Face folders (Llama, Qwen2, Mistral) saved by transformers itself."""

from __future__ import annotations

import hashlib
import json
import re
from importlib.metadata import version
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from mcp.base.errors import ConfigError, ModelFormatError, UnsupportedModelError
from mcp.compiler.compiler import compile_model
from mcp.compiler.hf_tokenizer import tokenizer_spec_from_hf_folder
from mcp.modelfile.reader import open_model
from mcp.modelfile.spec import RopeScaling


def raises(kind: type[Exception], text: str):
    """``pytest.raises`` expecting ``text`` literally in the message."""
    return pytest.raises(kind, match=re.escape(text))


SMALL = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, vocab_size=49152, max_position_embeddings=256, rms_norm_eps=1e-6)
LLAMA3_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 128, "rope_theta": 500000.0}


@pytest.fixture
def hf_folder(tmp_path: Path, add_tokenizer):
    """Build a folder with transformers: ``hf_folder(kind, dtype=..., shard=..., **config)``."""
    import transformers

    classes = {"llama": ("LlamaConfig", "LlamaForCausalLM"), "qwen2": ("Qwen2Config", "Qwen2ForCausalLM"),
               "mistral": ("MistralConfig", "MistralForCausalLM")}

    def build(kind: str, dtype: torch.dtype = torch.float32, shard: str | None = None, **config) -> Path:
        config_class, model_class = (getattr(transformers, name) for name in classes[kind])
        torch.manual_seed(0)
        model = model_class(config_class(**{**SMALL, **config})).to(dtype)
        folder = tmp_path / f"tiny-{kind}"
        model.save_pretrained(folder, **({"max_shard_size": shard} if shard else {}))
        return add_tokenizer(folder)

    return build


def _folder_tensors(folder: Path) -> dict[str, torch.Tensor]:
    tensors: dict[str, torch.Tensor] = {}
    for shard in sorted(folder.glob("*.safetensors")):
        tensors.update(load_file(shard))
    return tensors


def _assert_tensors_equal_the_folder(out: Path, folder: Path, dropped: set[str] = frozenset()) -> None:
    expected = {name: t for name, t in _folder_tensors(folder).items() if name not in dropped}
    with open_model(out, verify=True) as model:
        assert {spec.name for spec in model.header.tensors} == set(expected)
        for name, tensor in expected.items():
            stored = model.tensor(name)
            assert stored.dtype == tensor.dtype and torch.equal(stored, tensor), name


def test_llama_folder_compiles_to_its_own_tensors(hf_folder, tmp_path: Path) -> None:
    folder = hf_folder("llama")
    header = compile_model(folder, tmp_path / "llama.mcp", precision="source")
    arch = header.architecture
    assert (arch.architecture, arch.variant, arch.vocab_size, arch.hidden_size) == ("llama", "llama", 49152, 64)
    assert (arch.intermediate_size, arch.num_layers, arch.num_attention_heads, arch.num_kv_heads) == (128, 2, 4, 2)
    assert (arch.head_dim, arch.max_position_embeddings, arch.rms_norm_eps, arch.rope_theta) == (16, 256, 1e-6, 10000.0)
    assert not arch.tie_word_embeddings and not arch.attention_bias and arch.rope_scaling is None
    assert {spec.encoding for spec in header.tensors} == {"f32"}
    assert len(header.tensors) == 1 + 2 * 9 + 2
    _assert_tensors_equal_the_folder(tmp_path / "llama.mcp", folder)
    assert header.tokenizer == tokenizer_spec_from_hf_folder(folder)
    assert header.name == "tiny-llama"


def test_lineage_hashes_every_file_of_the_folder(hf_folder, tmp_path: Path) -> None:
    folder = hf_folder("llama")
    header = compile_model(folder, tmp_path / "llama.mcp", precision="bf16", license="Apache-2.0")
    listing = "".join(
        f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}\n" for path in sorted(folder.iterdir())
    )
    lineage = header.lineage
    assert lineage.source_sha256 == hashlib.sha256(listing.encode()).hexdigest()
    assert (lineage.source_name, lineage.source_format, lineage.license) == ("tiny-llama", "hf-safetensors", "Apache-2.0")
    assert lineage.compiler_version == version("mcp2026")
    assert lineage.recipe == {"precision": "bf16", "qk_layout": "native", "source_architecture": "llama"}
    (folder / "README.md").write_text("---\nlicense: mit\n---\n# tiny\n")
    changed = compile_model(folder, tmp_path / "again.mcp", precision="source")
    assert changed.lineage.source_sha256 != lineage.source_sha256 and changed.lineage.license == "mit"


def test_sharded_folder(hf_folder, tmp_path: Path) -> None:
    folder = hf_folder("llama", shard="2MB")
    assert (folder / "model.safetensors.index.json").is_file() and len(list(folder.glob("*.safetensors"))) > 2
    compile_model(folder, tmp_path / "sharded.mcp", precision="source")
    _assert_tensors_equal_the_folder(tmp_path / "sharded.mcp", folder)


def test_qwen2_bf16_keeps_biases_and_drops_the_tied_head(hf_folder, tmp_path: Path) -> None:
    folder = hf_folder("qwen2", dtype=torch.bfloat16, tie_word_embeddings=True, use_sliding_window=False, sliding_window=64)
    header = compile_model(folder, tmp_path / "qwen.mcp", precision="source")
    arch = header.architecture
    assert arch.variant == "qwen2" and arch.attention_bias and arch.tie_word_embeddings
    assert arch.max_position_embeddings == 256  # use_sliding_window false: the window is ignored
    names = {spec.name for spec in header.tensors}
    assert {f"model.layers.1.self_attn.{p}_proj.bias" for p in "qkv"} <= names
    assert "lm_head.weight" not in names and "model.layers.0.self_attn.o_proj.bias" not in names
    assert {spec.encoding for spec in header.tensors} == {"bf16"}
    _assert_tensors_equal_the_folder(tmp_path / "qwen.mcp", folder, dropped={"lm_head.weight"})


def test_llama3_rope_scaling(hf_folder, tmp_path: Path) -> None:
    folder = hf_folder("llama", dtype=torch.float16, rope_scaling=LLAMA3_ROPE, rope_theta=500000.0)
    header = compile_model(folder, tmp_path / "llama3.mcp", precision="source")
    assert header.architecture.rope_theta == 500000.0
    assert header.architecture.rope_scaling == RopeScaling(
        kind="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=128
    )
    assert {spec.encoding for spec in header.tensors} == {"f16"}
    _assert_tensors_equal_the_folder(tmp_path / "llama3.mcp", folder)


def test_transformers_4_style_config_keys(hf_folder, tmp_path: Path) -> None:
    folder = hf_folder("llama")
    config = json.loads((folder / "config.json").read_text())
    del config["rope_parameters"]
    config.update(rope_theta=250000.0, rope_scaling={"type": "linear", "factor": 2.0}, head_dim=None)
    (folder / "config.json").write_text(json.dumps(config))
    arch = compile_model(folder, tmp_path / "v4.mcp", precision="source").architecture
    assert (arch.rope_theta, arch.rope_scaling, arch.head_dim) == (250000.0, RopeScaling(kind="linear", factor=2.0), 16)


def test_mistral_keeps_its_context_and_its_sliding_window(hf_folder, tmp_path: Path) -> None:
    folder = hf_folder("mistral", sliding_window=64, head_dim=16)
    header = compile_model(folder, tmp_path / "mistral.mcp", precision="fp32")
    assert header.architecture.variant == "mistral"
    assert (header.architecture.max_position_embeddings, header.architecture.sliding_window) == (256, 64)
    assert "context_capped_to_sliding_window" not in header.lineage.recipe
    _assert_tensors_equal_the_folder(tmp_path / "mistral.mcp", folder)


def test_precision_f16_converts_every_tensor(hf_folder, tmp_path: Path) -> None:
    folder = hf_folder("llama")
    compile_model(folder, tmp_path / "half.mcp", precision="f16")
    with open_model(tmp_path / "half.mcp") as model:
        for name, tensor in _folder_tensors(folder).items():
            assert torch.equal(model.tensor(name), tensor.to(torch.float16)), name


@pytest.mark.parametrize("missing", ["config.json", "tokenizer.json", "model.safetensors"])
def test_missing_file(hf_folder, tmp_path: Path, missing: str) -> None:
    folder = hf_folder("llama")
    (folder / missing).unlink()
    message = "no *.safetensors file" if missing == "model.safetensors" else f"{missing} is missing"
    with raises(ModelFormatError, f"{folder}: {message}"):
        compile_model(folder, tmp_path / "x.mcp")
    assert not (tmp_path / "x.mcp").exists()


def _edit_config(folder: Path, **changes) -> Path:
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"model_type": "gpt2"}, "model_type 'gpt2' is not supported; supported: llama, mistral, qwen2"),
        ({"rope_parameters": {"rope_type": "yarn", "factor": 4.0}}, "RoPE scaling 'yarn' is not supported"),
        ({"hidden_act": "gelu"}, "hidden_act 'gelu' is not supported"),
    ],
)
def test_unsupported_configs(hf_folder, tmp_path: Path, changes: dict, message: str) -> None:
    folder = _edit_config(hf_folder("llama"), **changes)
    with raises(UnsupportedModelError, message):
        compile_model(folder, tmp_path / "x.mcp")
    assert list(tmp_path.glob("*.mcp")) == [] and list(tmp_path.glob(".*.tmp")) == []


def test_config_disagreeing_with_the_tensors(hf_folder, tmp_path: Path) -> None:
    folder = _edit_config(hf_folder("llama"), intermediate_size=256)
    message = "tensor model.layers.0.mlp.gate_proj.weight has shape [128, 64], the configuration implies [256, 64]"
    with raises(ModelFormatError, f"{folder}: {message}"):
        compile_model(folder, tmp_path / "x.mcp")


def test_bad_precision_and_missing_output_folder(hf_folder, tmp_path: Path) -> None:
    folder = hf_folder("llama")
    with pytest.raises(ConfigError, match="precision 'int3' is not one of auto, source, int4, fp32, f16, bf16"):
        compile_model(folder, tmp_path / "x.mcp", precision="int3")
    out = tmp_path / "nowhere" / "x.mcp"
    with raises(ConfigError, f"cannot write {out}: the folder {out.parent} does not exist"):
        compile_model(folder, out)
    assert not out.parent.exists()
