// A whole decode step of a Llama-family, Gemma 3 or Qwen3(-MoE) decoder in one call: every layer over a paged KV cache.
#pragma once

#include <cstdint>
#include <string>

#include "kernels.h"

namespace mcp_kernels {

struct MatrixPart {  // a QuantMatrix [rows, K], as MatmulArgs reads it
  WeightKind kind;
  const void* codes;
  const void* qparams;  // null for GGUF block kinds
  bool qparams_f16;
  int64_t rows;
};

// A matrix [N, K] as 1 to kMaxParts parts stacked by rows: q/k/v or gate/up whose source
// tensors differ in kind (a Q4_K_M file's Q4_K q/k with a Q6_K v) run each part's kernel.
constexpr int kMaxParts = 3;
struct MatrixRef {
  int64_t parts, N, K;
  MatrixPart part[kMaxParts];
};

// A layer of experts (Qwen3-MoE) in place of the dense MLP: router logits -> softmax -> the
// ModelDims::top_k largest probabilities (divided by their sum when norm_topk) weight each
// chosen expert's SwiGLU, gate_up [2 * expert_intermediate, hidden] and down [hidden,
// expert_intermediate], into the residual stream.
struct ExpertsRef {
  const float* router;  // [num_experts, hidden] fp32; null: the layer's MLP is the dense one
  const MatrixRef* gate_up;  // [num_experts]
  const MatrixRef* down;  // [num_experts]
};

struct LayerRef {
  const float* input_norm;  // [hidden]
  MatrixRef qkv;  // [(H + 2 KVH) * D, hidden]: q rows, then k, then v
  const float* qkv_bias;  // [(H + 2 KVH) * D] or null
  MatrixRef o;  // [hidden, H * D]
  const float* post_norm;  // [hidden]
  MatrixRef gate_up;  // [2 * I, hidden]: gate rows, then up
  MatrixRef down;  // [hidden, I]
  void* keys;  // [num_blocks, block_size, KVH, D]: the paged cache, written in place, float or
  void* values;  // IEEE halves (ModelDims::kv_f16); a windowed layer's in the windowed layers' pool
  // Gemma 3 (null: none): per-head RMSNorm of q and of k before RoPE, and the norms of the
  // attention's and the MLP's outputs before each joins the residual stream
  const float* q_norm;  // [D]
  const float* k_norm;  // [D]
  const float* attn_out_norm;  // [hidden]
  const float* mlp_out_norm;  // [hidden]
  bool windowed;  // sees the last ModelDims::window positions, through StepRows::local_tables
  ExpertsRef experts;  // router null: gate_up and down are the MLP
};

struct ModelDims {
  int64_t hidden, heads, kv_heads, head_dim, intermediate;
  float eps;  // RMSNorm epsilon
  int64_t num_blocks, block_size, max_positions;
  const float* cos;  // [max_positions, D] rotate-half tables (layers/rotary.py)
  const float* sin_signed;  // [max_positions, D]: (-sin, sin)
  const float* final_norm;  // [hidden]
  bool kv_f16;  // the KV cache holds IEEE halves (uint16_t) instead of floats
  float attn_scale;  // of q . k (Llama: 1 / sqrt(D))
  bool gelu;  // the MLP's activation: GELU, tanh approximation (Gemma's GeGLU), else SiLU
  int64_t window;  // positions a windowed layer sees, its own included (0: no windowed layer)
  const float* local_cos;  // [max_positions, D]: the windowed layers' RoPE tables
  const float* local_sin_signed;
  int64_t local_num_blocks;  // blocks of the windowed layers' pool (kv/hybrid.py)
  int64_t rotary_dim;  // the first dims of a head RoPE turns (partial rotary: Phi-4-mini), the tables' width
  int64_t num_experts, top_k, expert_intermediate;  // the layers of experts' (0: none)
  bool norm_topk;  // the top_k weights divided by their sum (Qwen3-MoE's norm_topk_prob)
};

struct StepRows {
  int64_t M;  // rows: one token each (a decoding sequence's next, or one of a prefill chunk's)
  float* x;  // [M, hidden] embedded tokens in; the final RMSNorm's output out
  const int64_t* positions;  // [M]: each token's position, which is also its KV slot in its table
  const int64_t* tables;  // [M, max_blocks]: physical blocks, -1 = dropped by the window (hidden)
  int64_t max_blocks;
  const int64_t* local_tables;  // [M, local_max_blocks]: the windowed layers' blocks (may be tables)
  int64_t local_max_blocks;
};

// "" if the step can run, else what is wrong (the Python wrapper raises it as ValueError).
std::string check_step(const ModelDims& dims, const LayerRef* layers, int64_t num_layers, const StepRows& rows);
void decode_step(const ModelDims& dims, const LayerRef* layers, int64_t num_layers, const StepRows& rows,
                 int x_digits, int num_threads);

}  // namespace mcp_kernels
