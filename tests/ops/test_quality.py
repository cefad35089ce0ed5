"""Each runtime precision stays close to the fp32 reference (floors measured on SmolLM2)."""

from __future__ import annotations

import pytest
import torch

from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.modelfile.reader import open_model
from mcp.ops.quality import TEXTS, agreement, score_all, token_sequences

pytestmark = pytest.mark.slow


def load(path, precision, native_kernels=True, decode_dots="auto"):
    with open_model(path) as model_file:
        options = EngineOptions(device="cpu", precision=precision, native_kernels=native_kernels,
                                decode_dots=decode_dots)
        return NativeEngine(model_file, options)


@pytest.fixture(scope="module")
def reference(smollm2_mcp):
    engine = load(smollm2_mcp, "fp32")
    sequences = token_sequences(engine, TEXTS[:4])
    return sequences, score_all(engine, sequences)


def test_agreement_of_identical_logits_is_perfect():
    logits = [torch.randn(5, 11)]
    result = agreement(logits, logits)
    assert result.positions == 5 and result.top1 == 1.0 and abs(result.mean_kl) < 1e-6


@pytest.mark.parametrize(
    ("compiled", "precision", "phase", "native", "dots", "min_top1", "max_kl"),
    [
        ("source", "bf16", None, True, "auto", 0.94, 0.01),  # measured on all TEXTS: 97.4%, 0.0015 (RESULTS.md)
        # exact int4 and Q8_0 weights, fp32 sums: all but equal to the fp32 reference
        ("auto", "auto", "decode", True, "exact", 0.995, 0.0005),
        # the default on AVX2/AVX-512: activations as two int8 digits (15 bits) over the re-laid
        # matrices; the floor an activation-quantized default must keep (issue 30): 99.5%, 5e-4;
        # measured on all TEXTS 99.91%, KL < 1e-5 (RESULTS.md)
        ("auto", "auto", "decode", True, "int8x2", 0.995, 0.0005),
        # activations quantized to int8 blocks (the layers; the head exact): measured on all
        # TEXTS 91.8%, KL 0.0192 (RESULTS.md, AVX2); the floor leaves room for the 4-text subset
        ("auto", "auto", "decode", True, "int8", 0.88, 0.03),
        ("auto", "auto", "prefill", True, "auto", 0.94, 0.01),  # measured: 96.7%, 0.0016
        ("auto", "auto", "decode", False, "auto", 0.94, 0.01),  # int4pack, bf16 act; measured: 97.1%, 0.0015
        # per-row int8 requantizes: 93.8% / 0.0061 where activations are bf16 (AVX512-BF16 CPUs)
        ("source", "int8", "decode", False, "auto", 0.92, 0.01),
    ],
    ids=["bf16", "native-decode-exact", "native-decode-int8x2-dots", "native-decode-int8-dots", "auto-prefill", "int4pack-decode", "int8-decode"],
)
def test_precision_stays_close_to_fp32(reference, smollm2_mcp, smollm2_auto_mcp, compiled, precision,
                                       phase, native, dots, min_top1, max_kl):
    sequences, ref_logits = reference
    path = smollm2_mcp if compiled == "source" else smollm2_auto_mcp
    result = agreement(ref_logits, score_all(load(path, precision, native, dots), sequences, phase))
    print(f"{compiled}/{precision}: top-1 {result.top1:.3f}, KL {result.mean_kl:.4f} over {result.positions}")
    assert result.positions > 300
    assert result.top1 >= min_top1 and result.mean_kl <= max_kl
