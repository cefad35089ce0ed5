"""The ``.mcp`` header's expert fields (Qwen3-MoE): absent in older files and read as no experts,
kept through a round trip, and refused with a message naming the field when they cannot hold."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from bad_files import tiny_header

from mcp.base.errors import ModelFormatError
from mcp.modelfile.moe import is_sparse_layer
from mcp.modelfile.spec import ModelHeader
from mcp.modelfile.validate import check_architecture, expected_tensor_shapes

EXPERT_FIELDS = ("num_experts", "num_experts_per_tok", "moe_intermediate_size", "norm_topk_prob",
                 "decoder_sparse_step", "mlp_only_layers")


def _moe(**changes):
    arch = dataclasses.replace(tiny_header().architecture, architecture="qwen3_moe", variant="qwen3_moe",
                               num_layers=4, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                               decoder_sparse_step=2, mlp_only_layers=(3,))
    return dataclasses.replace(arch, **changes)


def test_a_header_without_the_expert_fields_reads_as_one_without_experts():
    header = tiny_header()
    data = json.loads(header.to_json())
    for name in EXPERT_FIELDS:
        del data["architecture"][name]
    assert ModelHeader.from_json(json.dumps(data)) == header


def test_expert_fields_survive_a_round_trip_and_pick_the_sparse_layers():
    header = dataclasses.replace(tiny_header(), architecture=_moe())
    assert ModelHeader.from_json(header.to_json()).architecture == header.architecture
    assert [is_sparse_layer(header.architecture, i) for i in range(4)] == [False, True, False, False]
    shapes = expected_tensor_shapes(header.architecture)
    assert shapes["model.layers.1.mlp.gate.weight"] == (4, 64)
    assert shapes["model.layers.1.mlp.experts.3.down_proj.weight"] == (64, 32)
    assert shapes["model.layers.3.mlp.gate_proj.weight"] == (128, 64)  # mlp_only_layers: dense
    assert shapes["model.layers.0.self_attn.q_norm.weight"] == (32,)


@pytest.mark.parametrize(("arch", "message"), [
    (_moe(num_experts_per_tok=5), "num_experts_per_tok is 5; it must be between 1 and num_experts (4)"),
    (_moe(mlp_only_layers=(4,)), "mlp_only_layers names layer 4; the model has layers 0 to 3"),
    (_moe(moe_intermediate_size=0), "moe_intermediate_size is 0"),
    (_moe(num_experts=1 << 20, num_experts_per_tok=2), "num_experts is 1048576 but the model holds only 100"),
    (dataclasses.replace(tiny_header().architecture, num_experts=4), "num_experts is 4; the 'llama' family has no experts (qwen3_moe does)"),
])
def test_expert_fields_that_cannot_hold_are_refused(arch, message):
    with pytest.raises(ModelFormatError, match=re.escape(f"x.mcp: architecture.{message}")):
        check_architecture(arch, "x.mcp", 100)
