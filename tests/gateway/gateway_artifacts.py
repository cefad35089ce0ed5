"""Artifacts the gateway tests build: a tiny HF folder, a tiny ONNX file, a Triton repository
(fixtures in conftest.py beside this file)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

HF_SHAPES = {"model.embed_tokens.weight": (64, 16), "model.layers.0.mlp.up_proj.weight": (32, 16),
             "model.norm.weight": (16,)}
ONNX_SHAPES = {"W": (8, 4), "B": (4,)}


def write_hf_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "tiny-llama"
    folder.mkdir()
    numbers = np.random.default_rng(0)
    save_file({name: numbers.standard_normal(shape).astype(np.float16) for name, shape in HF_SHAPES.items()},
              folder / "model.safetensors")
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 16,
              "max_position_embeddings": 4096, "torch_dtype": "float16"}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "README.md").write_text("---\nlicense: mit\n---\n# tiny\n")
    return folder


def write_onnx(path: Path, *, quantized: bool = False) -> Path:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    numbers = np.random.default_rng(1)
    weights = [numpy_helper.from_array(numbers.standard_normal(shape).astype(np.float32), name)
               for name, shape in ONNX_SHAPES.items()]
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Add", ["h", "B"], ["y"])]
    if quantized:
        weights.append(numpy_helper.from_array(np.ones((4, 4), dtype=np.int8), "Q"))
    graph = helper.make_graph(nodes, "tiny-mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], weights)
    model = helper.make_model(graph, producer_name="mcp-tests", opset_imports=[helper.make_opsetid("", 17)])
    helper.set_model_props(model, {"license": "apache-2.0", "context_length": "512"})
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


TRITON_CONFIG = '''
# a Triton model configuration, text protobuf
name: "tiny-mlp"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [
  {
    name: "x"
    data_type: TYPE_FP32
    dims: [ 8 ]
  }
]
output [ { name: "y", data_type: TYPE_FP32, dims: [ 4 ] } ]
parameters { key: "license" value: { string_value: "bsd-3-clause" } }
parameters: { key: "context_length" value { string_value: "512" } }
dynamic_batching { max_queue_delay_microseconds: 100 }
'''


def write_triton_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "model_repository"
    model = repo / "tiny-mlp"
    (model / "1").mkdir(parents=True)
    (model / "2").mkdir()
    (model / "config.pbtxt").write_text(TRITON_CONFIG)
    write_onnx(model / "1" / "model.onnx")
    write_onnx(model / "2" / "model.onnx", quantized=True)
    return repo
