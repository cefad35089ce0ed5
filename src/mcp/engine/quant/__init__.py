"""Quantized weights: decoding GGUF blocks into dense tensors."""

from mcp.engine.quant.dequant import dequantize

__all__ = ["dequantize"]
