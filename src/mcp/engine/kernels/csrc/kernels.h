// Weight-only quantized matrix kernels for the CPU: the shared definitions.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <utility>

namespace mcp_kernels {

constexpr int kGroup = 32;  // weights per quantization group along K

// kInt4/kInt8: codes and group parameters apart (see MatmulArgs); the others are GGUF's own
// blocks read as stored, codes = uint8 [N, K / block weights * block bytes] and no qparams:
// Q5_0, Q5_1 (32 weights a block), Q5_K, Q6_K (256), Q4_0, Q4_1 (32), Q4_K (256) (blocks.inc).
// kQ4_0x16 .. kQ5Kx16: those GGUF blocks (Q8_0: the int8 kind with fp16 scales) re-laid 16
// rows at a time for integer dots (rows16.cpp), N a multiple of kTileRows; codes uint8 of the
// same size (Q4_K's and Q5_K's 148 and 180 bytes a row and block, GGUF's 144 and 176).
enum class WeightKind : int {
  kInt4 = 0, kInt8 = 1, kQ5_0 = 2, kQ5_1 = 3, kQ5K = 4, kQ6K = 5, kQ4_0 = 6, kQ4_1 = 7, kQ4K = 8,
  kQ4_0x16 = 9, kQ4_1x16 = 10, kQ4Kx16 = 11, kQ6Kx16 = 12, kQ8_0x16 = 13, kQ5_0x16 = 14, kQ5_1x16 = 15, kQ5Kx16 = 16
};
constexpr int kLastKind = static_cast<int>(WeightKind::kQ5Kx16);
constexpr int64_t kTileRows = 16;  // rows interleaved by the x16 kinds

inline bool is_row16_kind(WeightKind kind) { return static_cast<int>(kind) >= static_cast<int>(WeightKind::kQ4_0x16); }
inline bool is_block_kind(WeightKind kind) {
  return static_cast<int>(kind) >= static_cast<int>(WeightKind::kQ5_0) && !is_row16_kind(kind);
}

// out[M, N] = x[M, K] @ W[N, K]^T, W quantized (int4 codes + (scale, offset) per group, or
// int8 codes + scale per group; the group parameters in fp32 or fp16). x is fp32; out is
// fp32 or bf16.
struct MatmulArgs {
  WeightKind kind;
  const float* x;
  int64_t M, K, N;
  const float* x_group_sums;  // [M, K/32]: the sum of each group of x (filled by matmul())
  const void* codes;
  const void* qparams;
  bool qparams_f16;
  void* out;
  bool out_bf16;
  // Integer dots when x_digits > 0: each block of 32 of x is quantized to x_digits int8
  // digits (xq [x_digits, M, K], x_scales [M, K/32], filled by matmul()), 1: x ~ d * q1 (int8
  // blocks, llama.cpp's Q8_0 rounding), 2: x ~ d * (128 * q1 + q2) (15 bits, see quantize_rows),
  // and multiplied with the codes in integer arithmetic; 0: exact fp32 products.
  int x_digits = 0;
  const int8_t* xq = nullptr;
  const float* x_scales = nullptr;
  // Output row stride (0: N): one part of a matrix stacked from parts of different kinds
  // writes its columns into the whole matrix's rows (decode.cpp, matrix_rows).
  int64_t out_stride = 0;
  // [M, K/16]: the sum of each 16 activation codes (128 * q1 + q2 with two digits), for the
  // x16 kinds' centred codes (filled by matmul() with the digits)
  const int32_t* x_code_sums = nullptr;
};

// out[N, K] = the fp32 values of W, written as fp32 or bf16.
struct DequantArgs {
  WeightKind kind;
  const void* codes;
  const void* qparams;
  bool qparams_f16;
  int64_t N, K;
  void* out;
  bool out_bf16;
  int64_t first_row = 0;  // the x16 kinds: rows [first_row, first_row + N) of the matrix at codes
};

inline uint16_t to_bf16(float value) {  // round to nearest even, NaN kept quiet
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

inline float from_f16(uint16_t h) {  // IEEE half to float, exactly (subnormals included)
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu, bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal: normalize
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    bits = sign | (static_cast<uint32_t>(113 - shift) << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

// float to IEEE half, rounded to nearest even as F16C's vcvtps2ph and torch's .half() round:
// past 65504 it is infinity, below 2^-14 a subnormal, NaN stays a (quiet) NaN
inline uint16_t to_f16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u;
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // 65520 and up round to infinity
  if (magnitude >= 0x38800000u) {  // a normal half: rebias the exponent (127 - 15), round 13 bits off
    uint32_t rebiased = magnitude - 0x38000000u;
    rebiased += 0xfffu + ((rebiased >> 13) & 1u);
    return sign | static_cast<uint16_t>(rebiased >> 13);
  }
  // a subnormal half counts units of 2^-24: times 2^24 is exact, and nearbyint rounds to even
  return sign | static_cast<uint16_t>(std::nearbyint(std::fabs(value) * 16777216.0f));
}

inline float from_bf16(uint16_t value) {
  uint32_t bits = static_cast<uint32_t>(value) << 16;
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

inline void store(const MatmulArgs& a, int64_t m, int64_t n, float value) {
  const int64_t at = m * (a.out_stride != 0 ? a.out_stride : a.N) + n;
  if (a.out_bf16) {
    static_cast<uint16_t*>(a.out)[at] = to_bf16(value);
  } else {
    static_cast<float*>(a.out)[at] = value;
  }
}

inline void store_values(const DequantArgs& a, int64_t offset, const float* values) {
  if (a.out_bf16) {
    uint16_t* out = static_cast<uint16_t*>(a.out) + offset;
    for (int i = 0; i < kGroup; ++i) out[i] = to_bf16(values[i]);
  } else {
    std::memcpy(static_cast<float*>(a.out) + offset, values, kGroup * sizeof(float));
  }
}

// The instruction set the kernels run with: "avx512", "avx2" or "scalar".
const char* isa_name();
// Force an instruction set (tests compare them); false if this CPU lacks it.
bool set_isa(const char* name);

void matmul(const MatmulArgs& args, int num_threads);
// matmul() in two parts, for callers that share the rows among threads of their own:
// prepare_matmul fills what every row needs from x (its group sums, and its int8 digits for
// integer dots) into buffers of the calling thread, valid until its next call there, and
// matmul_rows computes output columns [n0, n1) of every row with them.
MatmulArgs prepare_matmul(const MatmulArgs& args);
void matmul_rows(const MatmulArgs& prepared, int64_t n0, int64_t n1);
// How matmul shares N rows among num_threads threads: row_chunks(N, num_threads) chunks,
// chunk c covering rows row_chunk(N, chunks, c) (whole 16-row tiles, at least 64 rows each).
int64_t row_chunks(int64_t num_rows, int num_threads);
std::pair<int64_t, int64_t> row_chunk(int64_t num_rows, int64_t num_chunks, int64_t chunk);
// x [M, K] -> codes q [M, K] and scales d [M, K/32]: per group d = max|x| / 127 and
// q = round-half-even(x * (1 / d)), so x ≈ d * q with |x - d * q| <= d / 2 (q = 0 where d = 0).
void quantize_rows(const float* x, int64_t M, int64_t K, int digits, int8_t* q, float* d);
void dequantize(const DequantArgs& args, int num_threads);

// The x16 kinds (rows16.cpp): output rows [n0, n1) (whole tiles) with integer dots, on the
// plain C++ (level 0), AVX2 (1) or AVX-512 VNNI (2) build; rows [n0, n1) of their values
// (from args.first_row on); and GGUF rows [N, K] of `source` kind re-laid as its x16 kind.
void row16_matmul_rows(const MatmulArgs& args, int64_t n0, int64_t n1, int level);
void row16_dequantize_rows(const DequantArgs& args, int64_t n0, int64_t n1, int level);
// rows ids [count] of an x16 matrix as fp32 [count, K] (an embedding lookup)
void row16_gather(WeightKind kind, const void* codes, int64_t K, const int64_t* ids, int64_t count, float* out,
                  int level);
// The x16 kinds' build for the current instruction set: 2 AVX-512 VNNI, 1 AVX2, 0 plain C++.
int row16_level();
// (kInt8: `blocks` its int8 codes [N, K] and `scales` their fp16 scales [N, K/32].)
void interleave16(WeightKind source, const uint8_t* blocks, const uint16_t* scales, int64_t N, int64_t K, uint8_t* out);

// sum a[i] * b[i] on the current instruction set.
float dot_f32(const float* a, const float* b, int64_t n);
// out[i] = to_f16(x[i]): a KV cache of halves takes its new keys and values this way.
void to_halves(const float* x, uint16_t* out, int64_t n);

// The query heads of one row that share one kv head (grouped-query attention) against a paged
// cache [num_blocks, block_size, kv_heads, D]: positions 0..last through the row's block
// table (-1: a block the sliding window dropped, hidden).
struct GroupAttention {
  const float* q;  // [heads, D]
  const void* keys;  // float, or IEEE halves (uint16_t) where kv_f16
  const void* values;
  const int64_t* table;
  int64_t block_size, kv_heads, kv_head, heads, D, last;
  float scale;  // of the scores: 1 / sqrt(D)
  int64_t from = 0;  // the first position (a block's first): attend_group_part's part
  bool kv_f16 = false;  // the cache holds halves, widened to float as they are read
  int64_t visible_from = 0;  // positions before it are hidden (a sliding window's start)
};
// out [heads, D] = softmax(q_g . k_t * scale) . v_t over the visible t, per head g;
// scores [heads, last + 1] is scratch.
void attend_group(const GroupAttention& a, float* scores, float* out);
// The same over positions a.from..a.last only (a long row's context is split into parts, so
// that threads share one row's attention): out [heads, D] = sum_t exp(s_t - peak) v_t,
// unnormalized, and stats [heads, 2] = (peak, sum_t exp(s_t - peak)) per head (peak -inf, sum
// 0 where the part has no visible position); scores [heads, last + 1 - from] is scratch.
void attend_group_part(const GroupAttention& a, float* scores, float* out, float* stats);
// out [heads, D] = the attention over all of a row's parts, from their outs [parts, heads, D]
// and stats [parts, heads, 2] (at least one part with a visible position).
void combine_parts(const float* outs, const float* stats, int64_t parts, int64_t heads, int64_t D, float* out);

}  // namespace mcp_kernels
