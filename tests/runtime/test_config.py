"""mcp-config.yaml: defaults, resolution, and errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp.runtime import ConfigError, Session
from mcp.runtime.config import RuntimeConfig, load_config

EXAMPLE = Path(__file__).parents[2] / "examples" / "mcp-config.yaml"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mcp-config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_example_loads():
    config = load_config(EXAMPLE)
    assert config.device == "auto" and config.num_threads is None
    assert config.generation.max_tokens == 256 and config.generation.top_p == 0.9
    assert config.model_dir == EXAMPLE.parent.resolve()


def test_empty_file_gives_defaults(tmp_path):
    config = load_config(write(tmp_path, ""))
    assert config == RuntimeConfig(model_dir=tmp_path.resolve())


def test_values_and_relative_paths_resolve(tmp_path):
    config = load_config(write(tmp_path, """
runtime:
  device: cpu
  num_threads: 2
  precision: bf16
  max_context: 512
  model_dir: models
  cache_dir: ../cache
generation:
  temperature: 1
  stop: ["\\n\\n"]
  seed: 3
"""))
    assert (config.device, config.num_threads, config.precision, config.max_context) == ("cpu", 2, "bf16", 512)
    assert config.model_dir == (tmp_path / "models").resolve()
    assert config.cache_dir == (tmp_path.parent / "cache").resolve()
    assert config.generation.temperature == 1.0 and config.generation.stop == ("\n\n",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("runtime:\n  devise: cpu\n", "runtime.devise: unknown key"),
        ("runtim:\n  device: cpu\n", "runtim: unknown key"),
        ("runtime:\n  num_threads: many\n", "runtime.num_threads"),
        ("runtime:\n  num_threads: 0\n", "runtime.num_threads: must be a positive integer"),
        ("runtime:\n  precision: int3\n", "runtime.precision"),
        ("runtime:\n  verify_models: 'yes'\n", "runtime.verify_models"),
        ("generation:\n  temperature: -1\n", "generation.temperature"),
        ("generation:\n  top_p: 2\n", "generation.top_p"),
        ("generation:\n  max_tokens: 0\n", "generation.max_tokens"),
        ("generation:\n  stop: 5\n", "generation.stop"),
        ("version: 2\n", "version"),
        ("- a\n- list\n", "top level must be a mapping"),
        ("runtime: [unclosed\n", "is not valid YAML"),
    ],
)
def test_bad_config_names_the_key(tmp_path, text, message):
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    assert message in str(info.value)
    assert "mcp-config.yaml" in str(info.value)


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        Session.from_config(tmp_path / "nope.yaml")


def test_unavailable_device_is_a_config_error(smollm2_mcp):
    with Session(RuntimeConfig(device="cuda:99")) as session:
        with pytest.raises(ConfigError, match="CUDA is not available|does not exist"):
            session.load_model(smollm2_mcp)
    with Session(RuntimeConfig(device="tpu")) as session:
        with pytest.raises(ConfigError, match="device must be auto, cpu, cuda or cuda:N"):
            session.load_model(smollm2_mcp)


def test_num_threads_is_applied_to_torch():
    import torch

    before = torch.get_num_threads()
    try:
        Session(RuntimeConfig(num_threads=1))
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_precision_overrides_and_prefill_cache(tmp_path):
    config = load_config(write(tmp_path, """
runtime:
  precision: int4
  precision_overrides: {"lm_head.weight": fp32, "*.mlp.*": bf16}
  cache_prefill_weights: true
"""))
    assert config.precision == "int4" and config.cache_prefill_weights
    assert config.precision_overrides == (("lm_head.weight", "fp32"), ("*.mlp.*", "bf16"))
    with pytest.raises(ConfigError, match="runtime.precision_overrides.x"):
        load_config(write(tmp_path, "runtime:\n  precision_overrides: {x: fp8}\n"))
