"""mcp-config.yaml: defaults, resolution, and errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp.config.runtime import RuntimeConfig, load_config
from mcp.runtime import ConfigError, Session

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


def test_scheduler_section_becomes_the_loop_config(tmp_path):
    from mcp.engine.scheduler.slo import DEFAULT_TARGETS, SLOClass, SLOTarget

    config = load_config(write(tmp_path, """
scheduler:
  policy: fcfs
  max_num_seqs: 8
  max_num_batched_tokens: 128
  max_waiting: 16
  block_size: 32
  kv_cache_bytes: 1000000000
  kv_cache_dtype: f16
  enable_prefix_caching: false
  sink_tokens: 4
  window_tokens: 512
  aging_s: 4
  pacing_margin: 0.1
  pacing_min_allowance: 0.75
  slo_targets:
    critical: {ttft_s: 0.5, tpot_s: 0.05}
    low: {ttft_s: 60}
  tenant_weights: {acme: 2, free-tier: 0.5}
"""))
    loop = config.scheduler
    assert (loop.policy, loop.block_size, loop.kv_cache_bytes, loop.enable_prefix_caching, loop.aging_s) == (
        "fcfs", 32, 1_000_000_000, False, 4.0)
    assert (loop.sink_tokens, loop.window_tokens, loop.kv_cache_dtype) == (4, 512, "f16")
    assert (loop.make_pacing().margin, loop.make_pacing().min_allowance) == (0.1, 0.75)
    assert (loop.scheduler.max_num_seqs, loop.scheduler.max_num_batched_tokens, loop.scheduler.max_waiting) == (
        8, 128, 16)
    assert loop.slo_targets[SLOClass.CRITICAL] == SLOTarget(0.5, 0.05)
    assert loop.slo_targets[SLOClass.LOW] == SLOTarget(60.0, DEFAULT_TARGETS[SLOClass.LOW].tpot_s)
    assert loop.slo_targets[SLOClass.HIGH] == DEFAULT_TARGETS[SLOClass.HIGH]
    assert dict(loop.tenant_weights) == {"acme": 2.0, "free-tier": 0.5}
    assert loop.make_policy().name == "fcfs"


def test_scheduler_defaults():
    loop = RuntimeConfig().scheduler
    assert (loop.policy, loop.block_size, loop.kv_cache_bytes, loop.kv_cache_memory_fraction) == ("slo", 16, None, 0.1)
    assert loop.kv_cache_dtype == "auto"
    assert loop.enable_prefix_caching and loop.scheduler.max_num_seqs == 32
    assert loop.make_policy().name == "slo"


def test_auto_kv_budget_is_full_contexts_capped_by_free_memory():
    from mcp.engine.loop_config import LoopConfig, kv_cache_budget

    per_token = 46080  # SmolLM2 in fp32
    auto = LoopConfig()
    assert kv_cache_budget(auto, per_token, 8192, available_bytes=10**12) == 32 * 8192 * per_token
    assert kv_cache_budget(auto, per_token, 8192, available_bytes=10**10) == 10**9  # a tenth of what is free
    assert kv_cache_budget(auto, per_token, 8192, available_bytes=0) == 16 * per_token  # one block at least
    assert kv_cache_budget(LoopConfig(kv_cache_bytes=12345), per_token, 8192, 10**12) == 12345


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("scheduler:\n  policy: lifo\n", "scheduler.policy"),
        ("scheduler:\n  max_num_seqs: 0\n", "scheduler.max_num_seqs"),
        ("scheduler:\n  max_num_seq: 4\n", "scheduler.max_num_seq: unknown key"),
        ("scheduler:\n  block_size: many\n", "scheduler.block_size"),
        ("scheduler:\n  kv_cache_bytes: -5\n", "scheduler.kv_cache_bytes: must be a positive integer or auto"),
        ("scheduler:\n  kv_cache_bytes: lots\n", "scheduler.kv_cache_bytes"),
        ("scheduler:\n  kv_cache_memory_fraction: 1.5\n", "scheduler.kv_cache_memory_fraction"),
        ("scheduler:\n  kv_cache_dtype: int8\n",
         "scheduler.kv_cache_dtype: Input should be 'auto', 'fp32' or 'f16' (got 'int8')"),
        ("scheduler:\n  enable_prefix_caching: 'yes'\n", "scheduler.enable_prefix_caching"),
        ("scheduler:\n  aging_s: 0\n", "scheduler.aging_s"),
        ("scheduler:\n  pacing_margin: 1\n", "scheduler.pacing_margin"),
        ("scheduler:\n  pacing_min_allowance: 0\n", "scheduler.pacing_min_allowance"),
        ("scheduler:\n  sink_tokens: -1\n", "scheduler.sink_tokens"),
        ("scheduler:\n  window_tokens: 8\n", "scheduler.window_tokens: must be at least block_size (16)"),
        ("scheduler:\n  slo_targets: {urgent: {ttft_s: 1}}\n", "scheduler.slo_targets.urgent"),
        ("scheduler:\n  slo_targets: {high: {ttft: 1}}\n", "scheduler.slo_targets.high.ttft: unknown key"),
        ("scheduler:\n  slo_targets: {high: {ttft_s: -1}}\n", "scheduler.slo_targets.high.ttft_s"),
        ("scheduler:\n  tenant_weights: {acme: 0}\n", "scheduler.tenant_weights.acme: must be positive"),
    ],
)
def test_bad_scheduler_config_names_the_key(tmp_path, text, message):
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    assert message in str(info.value)
