"""The precision plan: kernels per tensor and phase by hardware, forced precisions, exact int4."""

from __future__ import annotations

from dataclasses import replace

import gguf
import numpy as np
import pytest
import torch

from mcp.base.errors import ConfigError
from mcp.compiler.compiler import compile_model
from mcp.engine.precision import Hardware, TensorPlan, resolve
from mcp.engine.quant import int4pack
from mcp.engine.quant.dequant import dequantize
from mcp.modelfile.reader import open_model
from mcp.modelfile.spec import PrecisionPlan, TensorSpec

AMX = Hardware("cpu", "AVX512", native_bf16=True, amx=True)
ZEN3 = Hardware("cpu", "AVX2", native_bf16=False, amx=False)
H100 = Hardware("cuda", "AVX512", native_bf16=True, amx=False, cuda_capability=(9, 0))
ZEN4_NATIVE = Hardware("cpu", "AVX512", native_bf16=True, amx=False, native_kernels="avx512")
ZEN3_NATIVE = Hardware("cpu", "AVX2", native_bf16=False, amx=False, native_kernels="avx2")
TENSORS = (
    TensorSpec("model.embed_tokens.weight", "q8_0", (49152, 576), ""),
    TensorSpec("model.layers.0.input_layernorm.weight", "f32", (576,), ""),
    TensorSpec("model.layers.0.self_attn.q_proj.weight", "q4_1", (576, 576), ""),
    TensorSpec("model.layers.0.mlp.down_proj.weight", "int4", (576, 1536), "", layout="avx512"),
    TensorSpec("model.layers.0.mlp.up_proj.weight", "q6_k", (1536, 768), ""),
    TensorSpec("model.layers.0.self_attn.k_proj.weight", "q4_0", (40, 576), ""),  # rows not packable
)
Q_PROJ, DOWN, UP, K_PROJ = (t.name for t in TENSORS[2:])


def test_auto_on_a_cpu_with_native_bf16():
    plan = resolve(TENSORS, PrecisionPlan(), AMX)
    assert "model.layers.0.input_layernorm.weight" not in plan.by_tensor  # 1-D stays fp32
    assert plan.by_tensor[Q_PROJ] == plan.by_tensor[DOWN] == TensorPlan("int4pack", "dense-bf16")
    assert plan.by_tensor["model.embed_tokens.weight"] == TensorPlan("dense-bf16", "dense-bf16")
    assert plan.by_tensor[UP] == TensorPlan("dense-bf16", "dense-bf16")  # Q6_K keeps precision
    assert plan.by_tensor[K_PROJ] == TensorPlan("dense-bf16", "dense-bf16")
    assert plan.activations == "bf16"
    assert plan.summary() == "dense-bf16×3 int4pack×2 / act bf16"


def test_auto_on_a_cpu_without_native_bf16_prefills_in_fp32():
    plan = resolve(TENSORS, PrecisionPlan(), ZEN3)
    assert plan.by_tensor[Q_PROJ] == TensorPlan("int4pack", "dense-fp32")
    assert plan.by_tensor["model.embed_tokens.weight"] == TensorPlan("dense-bf16", "dense-bf16")
    assert plan.activations == "fp32"


@pytest.mark.parametrize("hardware, prefill", [(ZEN4_NATIVE, "dense-bf16"), (ZEN3_NATIVE, "dense-fp32")])
def test_auto_with_native_kernels_keeps_4_bit_and_q8_0_weights_exact(hardware, prefill):
    plan = resolve(TENSORS, PrecisionPlan(), hardware)
    # 4-bit GGUF blocks run as stored (the bytes llama.cpp reads), 40 rows or not; int4 as int4
    assert plan.by_tensor[Q_PROJ] == TensorPlan("mcp-q4_1", prefill)
    assert plan.by_tensor[K_PROJ] == TensorPlan("mcp-q4_0", prefill)
    assert plan.by_tensor[DOWN] == TensorPlan("mcp-int4", prefill)
    # the Q8_0 embedding/head keeps its own values: grouped int8, not bf16
    assert plan.by_tensor["model.embed_tokens.weight"] == TensorPlan("mcp-int8", prefill)
    assert plan.by_tensor[UP] == TensorPlan("mcp-q6_k", prefill)  # Q6_K: its own blocks, natively and exactly
    assert plan.activations == "fp32"  # the kernels take fp32 as it is
    # more rows than this run the dense GEMM: without AMX (bf16 or fp32) it pays from 129 rows
    assert plan.decode_max_rows == 128
    assert "native kernels" in plan.hardware
    forced = resolve(TENSORS, PrecisionPlan(), hardware, forced="bf16")
    assert set(forced.by_tensor.values()) == {TensorPlan("dense-bf16", "dense-bf16")}
    assert forced.activations == "bf16"


def test_int8_dots_run_4_bit_sources_as_int4_and_leave_the_other_blocks_exact():
    plan = resolve(TENSORS, PrecisionPlan(), ZEN4_NATIVE, decode_dots="int8")
    assert plan.by_tensor[Q_PROJ].decode == "mcp-int4"  # the block kernels have no integer dots
    assert plan.by_tensor[K_PROJ].decode == "mcp-q4_0"  # 40 rows: int4 cannot take it
    assert plan.by_tensor[UP].decode == "mcp-q6_k"
    assert plan.decode_dots == "int8"


@pytest.mark.parametrize("encoding, cols, kernel", [("q5_0", 96, "mcp-q5_0"), ("q5_1", 64, "mcp-q5_1"),
                                                   ("q5_k", 512, "mcp-q5_k"), ("q6_k", 256, "mcp-q6_k"),
                                                   ("q4_0", 96, "mcp-q4_0"), ("q4_1", 64, "mcp-q4_1"),
                                                   ("q4_k", 512, "mcp-q4_k"),
                                                   ("q5_k", 288, "dense-bf16")])  # not whole K-quant blocks
def test_gguf_block_kinds_run_their_native_kernels_the_head_included(encoding, cols, kernel):
    tensors = (TensorSpec("lm_head.weight", encoding, (100, cols), ""),
               TensorSpec("model.layers.0.mlp.up_proj.weight", encoding, (64, cols), ""))
    plan = resolve(tensors, PrecisionPlan(), ZEN4_NATIVE)
    assert {p.decode for p in plan.by_tensor.values()} == {kernel}
    assert resolve(tensors, PrecisionPlan(), AMX).by_tensor["lm_head.weight"].decode == "dense-bf16"  # not built


def test_companion_scales_are_not_planned_as_matrices():
    tensors = TENSORS + (TensorSpec("model.embed_tokens.weight.qparams", "f32", (49152, 18), ""),)
    assert "model.embed_tokens.weight.qparams" not in resolve(tensors, PrecisionPlan(), ZEN4_NATIVE).by_tensor


def test_auto_on_cuda_uses_dense_bf16():
    plan = resolve(TENSORS, PrecisionPlan(), H100)
    assert set(plan.by_tensor.values()) == {TensorPlan("dense-bf16", "dense-bf16")}
    assert plan.hardware == "cuda sm_90"


@pytest.mark.parametrize("forced", ["fp32", "bf16", "f16"])
def test_forced_dense_precision_applies_everywhere(forced):
    plan = resolve(TENSORS, PrecisionPlan(), AMX, forced=forced)
    assert set(plan.by_tensor.values()) == {TensorPlan(f"dense-{forced}", f"dense-{forced}")}
    assert plan.activations == forced


def test_file_plan_and_config_overrides_by_pattern():
    file_plan = PrecisionPlan(default="auto", overrides=(("*.mlp.*", "fp32"),))
    plan = resolve(TENSORS, file_plan, AMX, overrides=(("*.q_proj.weight", "bf16"),))
    assert plan.by_tensor[Q_PROJ] == TensorPlan("dense-bf16", "dense-bf16")
    assert plan.by_tensor[DOWN] == TensorPlan("dense-fp32", "dense-fp32")
    forced = resolve(TENSORS, file_plan, AMX, forced="int4")  # config beats the file's overrides
    assert forced.by_tensor[DOWN] == TensorPlan("int4pack", "dense-bf16")
    assert forced.by_tensor["model.embed_tokens.weight"] == TensorPlan("dense-bf16", "dense-bf16")


def test_forced_int8_quantizes_every_aligned_matrix_but_the_sensitive_ones():
    plan = resolve(TENSORS, PrecisionPlan(), ZEN3, forced="int8")
    assert plan.by_tensor[Q_PROJ] == plan.by_tensor[UP] == TensorPlan("int8pack", "dense-fp32")  # Q6_K too
    assert plan.by_tensor["model.embed_tokens.weight"] == TensorPlan("dense-bf16", "dense-bf16")
    assert plan.by_tensor[K_PROJ] == TensorPlan("dense-bf16", "dense-bf16")  # 40 rows: not whole tiles
    assert plan.summary() == "int8pack×3 dense-bf16×2 / act fp32"


def test_the_prefill_row_limit_follows_what_a_dense_gemm_costs():
    # Without AMX a dense GEMM needs the int4 weight dequantized per call: worth it from 128 rows.
    assert resolve(TENSORS, PrecisionPlan(), ZEN3).decode_max_rows == 128
    assert resolve(TENSORS, PrecisionPlan(), ZEN3, cache_prefill_weights=True).decode_max_rows == 16
    assert resolve(TENSORS, PrecisionPlan(), AMX).decode_max_rows == 16
    # The native kernels dequantize each weight tile once for all rows: up to 40 rows with AMX.
    amx_native = replace(AMX, native_kernels="avx512")
    assert resolve(TENSORS, PrecisionPlan(), amx_native).decode_max_rows == 40
    assert resolve(TENSORS, PrecisionPlan(), amx_native, cache_prefill_weights=True).decode_max_rows == 16
    # Without AMX the dense GEMM (fp32, or AVX512-BF16) dequantizes first: native up to 128 rows.
    assert resolve(TENSORS, PrecisionPlan(), ZEN3_NATIVE).decode_max_rows == 128
    assert resolve(TENSORS, PrecisionPlan(), ZEN4_NATIVE).decode_max_rows == 128
    assert "prefill      calls of more than 128 rows" in resolve(TENSORS, PrecisionPlan(), ZEN3_NATIVE).describe()
    assert "prefill      calls of more than 128 rows" in resolve(TENSORS, PrecisionPlan(), ZEN3).describe()


def test_unknown_precisions_are_config_errors():
    with pytest.raises(ConfigError, match="precision must be one of"):
        resolve(TENSORS, PrecisionPlan(), AMX, forced="int3")
    with pytest.raises(ConfigError, match="precision override '\\*': 'fp8'"):
        resolve(TENSORS, PrecisionPlan(), AMX, overrides=(("*", "fp8"),))


def test_hardware_detection_reads_this_machine():
    hardware = Hardware.detect(torch.device("cpu"))
    assert hardware.device_type == "cpu"
    assert hardware.cpu_capability == torch.backends.cpu.get_cpu_capability()
    flags = open("/proc/cpuinfo").read()
    assert hardware.amx == ("amx_bf16" in flags)
    assert hardware.native_bf16 == ("amx_bf16" in flags or "avx512_bf16" in flags)
    assert hardware.native_kernels == ("avx512" if " avx512bw " in flags else "avx2" if " avx2 " in flags else "scalar")


def test_pulled_model_keeps_the_gguf_4_bit_blocks_byte_for_byte(smollm2_auto_mcp, smollm2_mcp):
    """Every Q4_1 matrix of the `auto` file is the GGUF's own blocks, nothing stored beside them."""
    checked = 0
    with open_model(smollm2_auto_mcp, verify=True) as auto, open_model(smollm2_mcp) as source:
        names = {spec.name for spec in auto.header.tensors}
        for spec in auto.header.tensors:
            if spec.encoding != "q4_1":
                continue
            assert source.header.tensor(spec.name).encoding == "q4_1"
            assert torch.equal(auto.tensor(spec.name), source.tensor(spec.name)), spec.name
            assert not {spec.name + ".qparams", spec.name + ".scale_zero"} & names
            checked += 1
    assert checked == 210


def test_forced_int4_reproduces_the_gguf_weights_exactly(smollm2_gguf, smollm2_mcp, tmp_path):
    """``--precision int4`` still writes packed int4, equal to the GGUF's own dequantized values."""
    compile_model(smollm2_gguf, tmp_path / "int4.mcp", precision="int4")
    checked = 0
    with open_model(tmp_path / "int4.mcp", verify=True) as packed, open_model(smollm2_mcp) as source:
        for spec in packed.header.tensors:
            if spec.encoding != "int4" or ".layers.0." not in spec.name:
                continue
            codes = int4pack.unpack(packed.tensor(spec.name), spec.layout)
            ours = int4pack.dequantize_int4(codes, packed.tensor(spec.name + ".qparams"))
            src = source.header.tensor(spec.name)
            theirs = dequantize(source.tensor(spec.name), src.encoding, src.shape)  # == gguf.quants (test_dequant)
            assert torch.equal(ours.view(torch.int32), theirs.view(torch.int32)), spec.name
            checked += 1
    assert checked == 7


def test_engine_dequantizer_is_ggufs_on_the_real_file(smollm2_gguf):
    reader = gguf.GGUFReader(smollm2_gguf)
    tensor = next(t for t in reader.tensors if t.name == "blk.3.ffn_up.weight")
    rows, cols = int(tensor.shape[1]), int(tensor.shape[0])
    ours = dequantize(torch.from_numpy(np.array(tensor.data)).reshape(rows, -1), "q4_1", (rows, cols))
    assert np.array_equal(ours.numpy(), gguf.quants.dequantize(np.array(tensor.data), tensor.tensor_type).reshape(rows, cols))


NATIVE_ONLY = tuple(t for t in TENSORS if t.name not in (UP, K_PROJ))  # every matrix runs a native kernel


def test_native_decode_defaults_to_int8x2_dots_with_simd_and_the_native_step():
    for hardware in (ZEN3_NATIVE, ZEN4_NATIVE):
        plan = resolve(NATIVE_ONLY, PrecisionPlan(), hardware)
        assert (plan.decode_dots, plan.decode_step) == ("int8x2", "native")
        assert plan.summary() == "mcp-int8×1 mcp-q4_1×1 mcp-int4×1 / act fp32 / int8x2 dots / native step"
        assert "decode       int8x2 dots, native step" in plan.describe()


def test_the_plain_cpp_build_defaults_to_exact_dots():
    plain = Hardware("cpu", "DEFAULT", native_bf16=False, amx=False, native_kernels="scalar")
    plan = resolve(NATIVE_ONLY, PrecisionPlan(), plain)
    assert (plan.decode_dots, plan.decode_step) == ("exact", "native")
    assert plan.summary() == "mcp-int8×1 mcp-q4_1×1 mcp-int4×1 / act fp32 / native step"
    assert "decode       exact dots, native step" in plan.describe()
    assert resolve(NATIVE_ONLY, PrecisionPlan(), ZEN4_NATIVE, decode_dots="exact").decode_dots == "exact"


def test_int8_dots_and_the_torch_step_can_be_chosen():
    plan = resolve(NATIVE_ONLY, PrecisionPlan(), ZEN3_NATIVE, decode_dots="int8", native_step=False)
    assert (plan.decode_dots, plan.decode_step) == ("int8", "torch")
    assert plan.summary() == "mcp-int4×2 mcp-int8×1 / act fp32 / int8 dots"


def test_the_native_step_needs_every_matrix_native():
    dense = TensorSpec("model.layers.0.mlp.gate_proj.weight", "bf16", (1536, 576), "")
    assert resolve(TENSORS, PrecisionPlan(), ZEN3_NATIVE).decode_step == "native"  # every block kind is native
    assert resolve((*TENSORS, dense), PrecisionPlan(), ZEN3_NATIVE).decode_step == "torch"  # a bf16 matrix
    assert resolve(NATIVE_ONLY, PrecisionPlan(), ZEN3).decode_step == "torch"  # PyTorch's kernels
    plan = resolve(NATIVE_ONLY, PrecisionPlan(), ZEN3)
    assert plan.decode_dots == "exact"  # no native kernel runs: nothing is quantized


def test_unknown_decode_dots_are_refused():
    with pytest.raises(ConfigError, match="decode_dots must be one of auto, int8, int8x2, exact"):
        resolve(TENSORS, PrecisionPlan(), ZEN3_NATIVE, decode_dots="int4")
