"""An ONNX file, read and checked with the ``onnx`` package (the ``onnx`` extra).

External tensor data is not loaded: the initializers' shapes are enough to count parameters.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from mcp.base.errors import ModelFormatError
from mcp.gateway.registry.artifacts.common import dominant, file_uri, product
from mcp.gateway.registry.records import ArtifactMetadata
from mcp.modelfile.hashing import file_sha256

_QUANTIZED_OPS = {"QuantizeLinear", "DequantizeLinear", "MatMulInteger", "QLinearMatMul", "QLinearConv",
                  "MatMulNBits", "DynamicQuantizeLinear"}


def _onnx():
    try:
        import onnx
    except ModuleNotFoundError:
        raise ModelFormatError("reading ONNX files needs the onnx package: pip install 'mcp2026[onnx]'") from None
    return onnx


def load_onnx_model(path: Path):
    """The checked ``ModelProto``; anything unreadable is a ``ModelFormatError``."""
    onnx = _onnx()
    try:
        model = onnx.load(str(path), load_external_data=False)
        onnx.checker.check_model(model)
    except Exception as exc:  # protobuf DecodeError, onnx ValidationError, OSError: all mean unreadable
        raise ModelFormatError(f"{path}: not a readable ONNX model ({type(exc).__name__}: {exc})") from None
    if not model.graph.node:
        raise ModelFormatError(f"{path}: not a readable ONNX model (its graph has no nodes)")
    return model


def read_onnx(path: Path) -> ArtifactMetadata:
    model = load_onnx_model(path)
    properties = {p.key: p.value for p in model.metadata_props}
    summary = onnx_summary(model)
    context = properties.get("context_length") or properties.get("max_position_embeddings")
    return ArtifactMetadata(
        uri=file_uri(path), format="onnx", sha256=file_sha256(path), size_bytes=path.stat().st_size,
        name=model.graph.name or path.stem,
        architecture=properties.get("architecture") or model.graph.name or model.producer_name or None,
        parameter_count=summary["parameter_count"], quantization=summary["quantization"],
        context_length=int(context) if context and context.isdigit() else None,
        license=properties.get("license"),
        lineage={"producer": f"{model.producer_name} {model.producer_version}".strip(),
                 "ir_version": model.ir_version,
                 "opsets": {o.domain or "ai.onnx": o.version for o in model.opset_import}},
    )


def onnx_summary(model) -> dict:
    """Parameter count and quantization of a loaded ``ModelProto``."""
    onnx = _onnx()
    elements: Counter[str] = Counter()
    for init in model.graph.initializer:
        elements[onnx.helper.tensor_dtype_to_np_dtype(init.data_type).name] += product(init.dims)
    quantized = any(node.op_type in _QUANTIZED_OPS for node in model.graph.node)
    integer = [t for t in ("int4", "uint4", "int8", "uint8") if elements.get(t)]
    if quantized or integer:
        quantization = integer[0] if integer else "quantized"
    else:
        quantization = {"float32": "fp32", "float16": "fp16"}.get(dominant(elements) or "", dominant(elements))
    return {"parameter_count": sum(elements.values()), "quantization": quantization}
