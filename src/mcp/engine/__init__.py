"""The native PyTorch engine: model layers, quantized weights, KV cache, scheduler, sampler."""
