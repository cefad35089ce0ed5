// GGUF's Q4_0, Q4_1, Q4_K, Q5_0, Q5_1, Q5_K, Q6_K and Q8_0 re-laid 16 rows at a time, for integer dots
// at the memory bound.
//
// GGUF keeps each row's blocks together: an integer dot then works on one row at a time and
// must bring each block's sum down to a scalar before its scale can apply, which costs more
// operations per weight than the dot itself (one row at a time, every kernel here ran at
// about 15 G weights/s per core on AMD Zen 4 whatever its format, where a 1B model needs
// about 27 at the memory bound on 2 cores). Here the 16 rows of a tile are interleaved, so
// that each 32-bit lane of a register belongs to one row: a group's integer sums of 16 rows
// come out of vpdpbusd in one register, their 16 scales are one load, and one multiply-add
// applies them: one Zen 4 core then streams them at ~30 GB/s. The codes and scales are
// GGUF's own, moved (Q4_K's 6-bit scales and mins widened to bytes), so the values are the
// file's exactly (row16_dequantize_rows equals gguf.quants bit for bit).
//
// A tile holds rows [16t, 16t + 16); below, "16 x" means one item per row, in row order, and
// a group's 32 weights are always laid as chunks: chunk c (0..3) = 4 bytes per row whose low
// nibbles are the row's elements 4c..4c+3 of the group and high nibbles 16+4c..19+4c (GGUF's
// Q4_0 order), 64 bytes a chunk. Per tile, K/32 groups (K/256 blocks of 8) back to back:
//   kQ4_0x16  group: 16 x fp16 d | 4 chunks                      (288 B = 16 x 18)
//   kQ4_1x16  group: 16 x fp16 d | 16 x fp16 m | 4 chunks        (320 B = 16 x 20)
//   kQ4Kx16   block: 16 x fp16 d | 16 x fp16 dmin | 8 groups of
//             16 x u8 scale | 16 x u8 min | 4 chunks               (2368 B = 16 x 148)
//   kQ5_0x16  group: 16 x fp16 d | 4 chunks | 16 x u32 fifth bits    (352 B = 16 x 22)
//   kQ5_1x16  group: 16 x fp16 d | 16 x fp16 m | 4 chunks | 16 x u32 fifth bits (384 B = 16 x 24)
//   kQ5Kx16   block: 16 x fp16 d | 16 x fp16 dmin | 8 groups of
//             16 x u8 scale | 16 x u8 min | 4 chunks | 16 x u32 fifth bits (2880 B = 16 x 180)
//   kQ8_0x16  group: 16 x fp16 d | 8 chunks of 16 x 4 int8 codes (bytes 4c..4c+3 of each row's 32)
//                                                                   (544 B = 16 x 34)
//   kQ6Kx16   block: 16 x fp16 d | 8 groups of
//             16 x i8 scale (elements 0..15) | 16 x i8 scale (16..31) | 4 chunks (the low 4
//             bits) | 16 x u32 high bits of elements 0..15 | 16 x u32 of 16..31
//                                                                   (3360 B = 16 x 210)
// Q6_K's high-bit word of a row: byte i, bits 2k..2k+1 = the top 2 bits of element 4k + i
// (of its 16), so chunk c's come out of one shift by 2c. The Q5 kinds' fifth-bit word of a
// row: byte i, bit c = element 4c + i's, bit 4 + c = element 16 + 4c + i's.
//
// Integer dots only: activations quantized per block of 32 to one or two int8 digits
// (quantize_rows); per row and group (Q6_K: each 16 of it, with its own scale) s = q . x
// exactly in int32, and then, group after group, in this order on every build:
//   Q4_0  out = fma(float(s - 8 sum x), d dx, out)
//   Q4_1  out = fma(float(s), d dx, out);  out = fma(m, exact sum x, out)
//   Q4_K  out = fma(float(s), (d scale) dx, out);  out = fma((-dmin) min, exact sum x, out)
//   Q5_0  as Q4_0 with 16 for 8;  Q5_1 as Q4_1;  Q5_K as Q4_K (5-bit codes)
//   Q6_K  out = fma(float(s - 32 sum x), (d scale) dx, out), each half
//   Q8_0  out = fma(float(s), d dx, out)  (signed codes: VNNI sums (q + 128) . x, less 128 sum x)
// where sum x is the sum of the activation's codes (x_code_sums) and exact sum x its fp32
// sum; so each output is the same bits on all three builds (the tests compare them).

#include "kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <vector>

namespace mcp_kernels {
namespace {

constexpr int64_t kChunkBytes = 64, kNibbleBytes = 4 * kChunkBytes;

// Bytes per tile: per group (Q4_0, Q4_1) or per block of 8 groups (Q4_K, Q6_K), and the
// offsets inside a K-quant block.
constexpr int64_t kQ4_0Group = 32 + kNibbleBytes, kQ4_1Group = 64 + kNibbleBytes;
constexpr int64_t kQ4KGroup = 32 + kNibbleBytes, kQ4KBlock = 64 + 8 * kQ4KGroup;
constexpr int64_t kQ6KGroup = 32 + kNibbleBytes + 128, kQ6KBlock = 32 + 8 * kQ6KGroup;
constexpr int64_t kQ8Group = 32 + 8 * kChunkBytes;
constexpr int64_t kQ8_0Block = 34;  // GGUF's Q8_0 block: fp16 d | 32 int8 codes
constexpr int64_t kFifthBytes = 64;  // 16 rows' fifth-bit words
constexpr int64_t kQ5_0Group = 32 + kNibbleBytes + kFifthBytes, kQ5_1Group = 64 + kNibbleBytes + kFifthBytes;
constexpr int64_t kQ5KGroup = 32 + kNibbleBytes + kFifthBytes, kQ5KBlock = 64 + 8 * kQ5KGroup;

int64_t tile_bytes(WeightKind kind, int64_t K) {
  switch (kind) {
    case WeightKind::kQ4_0x16: return K / kGroup * kQ4_0Group;
    case WeightKind::kQ4_1x16: return K / kGroup * kQ4_1Group;
    case WeightKind::kQ4Kx16: return K / 256 * kQ4KBlock;
    case WeightKind::kQ8_0x16: return K / kGroup * kQ8Group;
    case WeightKind::kQ5_0x16: return K / kGroup * kQ5_0Group;
    case WeightKind::kQ5_1x16: return K / kGroup * kQ5_1Group;
    case WeightKind::kQ5Kx16: return K / 256 * kQ5KBlock;
    default: return K / 256 * kQ6KBlock;
  }
}

inline uint16_t u16_at(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }

// The kinds with a scale (and a min) per group of 32, its codes 4 bits (and a fifth):
// Q4_0, Q4_1, Q5_0, Q5_1.
struct FlatLayout {
  int64_t group_bytes, param_bytes;  // per group and tile; the d (and m) before the chunks
  int32_t centre;  // Q4_0 8, Q5_0 16: value d * (q - centre); 0 with a min
  bool min, fifth;  // value d * q + m; a fifth bit per code
};

constexpr FlatLayout flat_layout(WeightKind kind) {
  switch (kind) {
    case WeightKind::kQ4_0x16: return {kQ4_0Group, 32, 8, false, false};
    case WeightKind::kQ4_1x16: return {kQ4_1Group, 64, 0, true, false};
    case WeightKind::kQ5_0x16: return {kQ5_0Group, 32, 16, false, true};
    default: return {kQ5_1Group, 64, 0, true, true};  // kQ5_1x16
  }
}

// The sum of activation codes of row m, elements [16h, 16h + 16) (see MatmulArgs::x_code_sums).
inline int32_t half_sum(const MatmulArgs& a, int64_t m, int64_t h) { return a.x_code_sums[m * (a.K / 16) + h]; }

// ---- the plain C++ build: one row at a time, the reference the SIMD builds equal ----
namespace scalar16 {

// A row's 32 products with chunks (lo: the low nibbles' elements, hi: the high ones), each
// code widened by its top bits (Q6_K) where `high_lo` is given, or its fifth bit (the Q5
// kinds) where `fifth` is.
struct Sums {
  int32_t lo, hi;
};

Sums dots(const uint8_t* chunks, const uint8_t* high_lo, const uint8_t* high_hi, const uint8_t* fifth, int r,
          const int8_t* x) {
  Sums s{0, 0};
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 4; ++i) {
      const uint8_t byte = chunks[c * kChunkBytes + r * 4 + i];
      int lo = byte & 0x0f, hi = byte >> 4;
      if (high_lo != nullptr) {
        lo |= ((high_lo[r * 4 + i] >> (2 * c)) & 3) << 4;
        hi |= ((high_hi[r * 4 + i] >> (2 * c)) & 3) << 4;
      }
      if (fifth != nullptr) {
        lo |= ((fifth[r * 4 + i] >> c) & 1) << 4;
        hi |= ((fifth[r * 4 + i] >> (4 + c)) & 1) << 4;
      }
      s.lo += lo * x[4 * c + i];
      s.hi += hi * x[16 + 4 * c + i];
    }
  }
  return s;
}

// Both digits: 128 (q . x1) + q . x2, exactly.
Sums digit_dots(const MatmulArgs& a, const uint8_t* chunks, const uint8_t* high_lo, const uint8_t* high_hi, int r,
                int64_t m, int64_t g, const uint8_t* fifth = nullptr) {
  const int8_t* x1 = a.xq + m * a.K + g * kGroup;
  Sums s = dots(chunks, high_lo, high_hi, fifth, r, x1);
  if (a.x_digits == 2) {
    const Sums low = dots(chunks, high_lo, high_hi, fifth, r, x1 + a.M * a.K);
    s = {s.lo * 128 + low.lo, s.hi * 128 + low.hi};
  }
  return s;
}

void row_tile(const MatmulArgs& a, const uint8_t* tile, int64_t m, float (&acc)[kTileRows]) {
  const int64_t G = a.K / kGroup;
  for (int r = 0; r < kTileRows; ++r) acc[r] = 0.0f;
  for (int64_t g = 0; g < G; ++g) {
    const float dx = a.x_scales[m * G + g], x_sum = a.x_group_sums[m * G + g];
    const int32_t sum_lo = half_sum(a, m, 2 * g), sum_hi = half_sum(a, m, 2 * g + 1);
    for (int r = 0; r < kTileRows; ++r) {
      switch (a.kind) {
        case WeightKind::kQ4_0x16:
        case WeightKind::kQ4_1x16:
        case WeightKind::kQ5_0x16:
        case WeightKind::kQ5_1x16: {
          const FlatLayout f = flat_layout(a.kind);
          const uint8_t* p = tile + g * f.group_bytes;
          const uint8_t* chunks = p + f.param_bytes;
          const Sums s = digit_dots(a, chunks, nullptr, nullptr, r, m, g, f.fifth ? chunks + kNibbleBytes : nullptr);
          const int32_t centred = s.lo + s.hi - (f.min ? 0 : f.centre * (sum_lo + sum_hi));
          acc[r] = std::fma(static_cast<float>(centred), from_f16(u16_at(p + 2 * r)) * dx, acc[r]);
          if (f.min) acc[r] = std::fma(from_f16(u16_at(p + 32 + 2 * r)), x_sum, acc[r]);
          break;
        }
        case WeightKind::kQ4Kx16:
        case WeightKind::kQ5Kx16: {
          const bool fifth = a.kind == WeightKind::kQ5Kx16;
          const uint8_t* block = tile + g / 8 * (fifth ? kQ5KBlock : kQ4KBlock);
          const uint8_t* p = block + 64 + g % 8 * (fifth ? kQ5KGroup : kQ4KGroup);
          const Sums s = digit_dots(a, p + 32, nullptr, nullptr, r, m, g, fifth ? p + 32 + kNibbleBytes : nullptr);
          const float scale = from_f16(u16_at(block + 2 * r)) * static_cast<float>(p[r]);
          const float offset = -from_f16(u16_at(block + 32 + 2 * r)) * static_cast<float>(p[16 + r]);
          acc[r] = std::fma(static_cast<float>(s.lo + s.hi), scale * dx, acc[r]);
          acc[r] = std::fma(offset, x_sum, acc[r]);
          break;
        }
        case WeightKind::kQ8_0x16: {
          const uint8_t* p = tile + g * kQ8Group;
          const int8_t* x1 = a.xq + m * a.K + g * kGroup;
          int32_t s = 0;
          for (int digit = 0; digit < a.x_digits; ++digit) {
            int32_t t = 0;
            for (int j = 0; j < kGroup; ++j)
              t += static_cast<int8_t>(p[32 + (j / 4) * kChunkBytes + r * 4 + j % 4]) * x1[digit * a.M * a.K + j];
            s = digit == 0 ? t : s * 128 + t;
          }
          acc[r] = std::fma(static_cast<float>(s), from_f16(u16_at(p + 2 * r)) * dx, acc[r]);
          break;
        }
        default: {  // kQ6Kx16
          const uint8_t* block = tile + g / 8 * kQ6KBlock;
          const uint8_t* p = block + 32 + g % 8 * kQ6KGroup;
          const Sums s = digit_dots(a, p + 32, p + 32 + kNibbleBytes, p + 32 + kNibbleBytes + 64, r, m, g);
          const float d = from_f16(u16_at(block + 2 * r));
          const float scale_lo = d * static_cast<float>(static_cast<int8_t>(p[r]));
          const float scale_hi = d * static_cast<float>(static_cast<int8_t>(p[16 + r]));
          acc[r] = std::fma(static_cast<float>(s.lo - 32 * sum_lo), scale_lo * dx, acc[r]);
          acc[r] = std::fma(static_cast<float>(s.hi - 32 * sum_hi), scale_hi * dx, acc[r]);
        }
      }
    }
  }
}

void tiles(const MatmulArgs& a, int64_t n0, int64_t n1) {
  const int64_t bytes = tile_bytes(a.kind, a.K);
  for (int64_t t = n0 / kTileRows; t < n1 / kTileRows; ++t) {
    for (int64_t m = 0; m < a.M; ++m) {
      float acc[kTileRows];
      row_tile(a, static_cast<const uint8_t*>(a.codes) + t * bytes, m, acc);
      for (int r = 0; r < kTileRows; ++r) store(a, m, t * kTileRows + r, acc[r]);
    }
  }
}

}  // namespace scalar16

// What makes a row's 32 values of a group: its codes (chunks, and Q6_K's top bits), and
// value = scale * (q - centre) (Q4_0, Q6_K, Q8_0: the subtraction exact in floats) or
// scale * q + offset, a multiply then an add (Q4_1, Q4_K), as gguf.quants computes them;
// the scale of elements 0..15 and of 16..31 (Q6_K's differ).
struct GroupValues {
  const uint8_t* chunks;
  const uint8_t* high = nullptr;  // Q6_K: the top-bit words of elements 0..15, then (64 on) 16..31
  const uint8_t* fifth = nullptr;  // the Q5 kinds: the fifth-bit words
  float scale[2] = {0.0f, 0.0f}, offset = 0.0f;
  int centre = 0;
  bool offsets = false, int8 = false;  // int8: 8 chunks of signed codes (Q8_0)
};

GroupValues group_values(WeightKind kind, const uint8_t* tile, int64_t g, int r) {
  GroupValues v;
  switch (kind) {
    case WeightKind::kQ4_0x16:
    case WeightKind::kQ4_1x16:
    case WeightKind::kQ5_0x16:
    case WeightKind::kQ5_1x16: {
      const FlatLayout f = flat_layout(kind);
      const uint8_t* p = tile + g * f.group_bytes;
      v.chunks = p + f.param_bytes;
      if (f.fifth) v.fifth = v.chunks + kNibbleBytes;
      v.scale[0] = v.scale[1] = from_f16(u16_at(p + 2 * r));
      v.centre = f.centre;
      v.offsets = f.min;
      if (f.min) v.offset = from_f16(u16_at(p + 32 + 2 * r));
      break;
    }
    case WeightKind::kQ4Kx16:
    case WeightKind::kQ5Kx16: {
      const bool fifth = kind == WeightKind::kQ5Kx16;
      const uint8_t* block = tile + g / 8 * (fifth ? kQ5KBlock : kQ4KBlock);
      const uint8_t* p = block + 64 + g % 8 * (fifth ? kQ5KGroup : kQ4KGroup);
      v.chunks = p + 32;
      if (fifth) v.fifth = p + 32 + kNibbleBytes;
      v.scale[0] = v.scale[1] = from_f16(u16_at(block + 2 * r)) * static_cast<float>(p[r]);
      v.offset = -from_f16(u16_at(block + 32 + 2 * r)) * static_cast<float>(p[16 + r]);
      v.offsets = true;
      break;
    }
    case WeightKind::kQ8_0x16: {
      const uint8_t* p = tile + g * kQ8Group;
      v.chunks = p + 32;
      v.scale[0] = v.scale[1] = from_f16(u16_at(p + 2 * r));
      v.int8 = true;
      break;
    }
    default: {  // kQ6Kx16
      const uint8_t* block = tile + g / 8 * kQ6KBlock;
      const uint8_t* p = block + 32 + g % 8 * kQ6KGroup;
      v.chunks = p + 32;
      v.high = p + 32 + kNibbleBytes;
      const float d = from_f16(u16_at(block + 2 * r));
      v.scale[0] = d * static_cast<float>(static_cast<int8_t>(p[r]));
      v.scale[1] = d * static_cast<float>(static_cast<int8_t>(p[16 + r]));
      v.centre = 32;
    }
  }
  return v;
}

void scalar_values(const GroupValues& v, int r, float* values) {
  int q[32];
  if (v.int8) {
    for (int j = 0; j < kGroup; ++j) q[j] = static_cast<int8_t>(v.chunks[(j / 4) * kChunkBytes + r * 4 + j % 4]);
  } else {
    for (int c = 0; c < 4; ++c) {
      for (int i = 0; i < 4; ++i) {
        const uint8_t byte = v.chunks[c * kChunkBytes + r * 4 + i];
        q[4 * c + i] = byte & 0x0f;
        q[16 + 4 * c + i] = byte >> 4;
        if (v.high != nullptr) {
          q[4 * c + i] |= ((v.high[r * 4 + i] >> (2 * c)) & 3) << 4;
          q[16 + 4 * c + i] |= ((v.high[64 + r * 4 + i] >> (2 * c)) & 3) << 4;
        }
        if (v.fifth != nullptr) {
          q[4 * c + i] |= ((v.fifth[r * 4 + i] >> c) & 1) << 4;
          q[16 + 4 * c + i] |= ((v.fifth[r * 4 + i] >> (4 + c)) & 1) << 4;
        }
      }
    }
  }
  for (int j = 0; j < kGroup; ++j) {
    values[j] = v.offsets ? v.scale[j / 16] * static_cast<float>(q[j]) + v.offset
                          : v.scale[j / 16] * static_cast<float>(q[j] - v.centre);
  }
}

#if defined(__x86_64__)

// ---- the SIMD builds: one kernel per format (rows16.inc) over Ops, L rows a register ----
// Ops::I holds L int32 lanes, Ops::F L floats; dot(acc, w, x) adds to each lane the
// products of its 4 unsigned weight bytes with the 4 activation bytes at x (broadcast from memory).

// AVX2: 8 rows a register, maddubs + madd for the sums (each maddubs lane at most
// 2 * 63 * 127, no saturation), 16 registers: one activation row at a time.
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace avx2_16 {
struct Avx2Ops {
  using I = __m256i;
  using F = __m256;
  static constexpr int kLanes = 8, kRowTile = 1;
  static I load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static I bytes(int v) { return _mm256_set1_epi8(static_cast<char>(v)); }
  static I band(I a, I b) { return _mm256_and_si256(a, b); }
  static I bor(I a, I b) { return _mm256_or_si256(a, b); }
  static I srl16(I a, int n) { return _mm256_srli_epi16(a, n); }
  static I srl32(I a, int n) { return _mm256_srl_epi32(a, _mm_cvtsi32_si128(n)); }
  static I sll32(I a, int n) { return _mm256_slli_epi32(a, n); }
  static I zero() { return _mm256_setzero_si256(); }
  static I set1(int32_t v) { return _mm256_set1_epi32(v); }
  static I add(I a, I b) { return _mm256_add_epi32(a, b); }
  static I sub(I a, I b) { return _mm256_sub_epi32(a, b); }
  static constexpr bool kPairSums = true;  // maddubs: pairs of products to int16 (Kernel16::digit)
  static I pairs(I w, const int8_t* x) { return _mm256_maddubs_epi16(w, word(x)); }
  static I add16(I a, I b) { return _mm256_add_epi16(a, b); }
  static I widen_add(I acc, I pairs16) { return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs16, _mm256_set1_epi16(1))); }
  static F fzero() { return _mm256_setzero_ps(); }
  static F fset1(float v) { return _mm256_set1_ps(v); }
  static F cvt(I a) { return _mm256_cvtepi32_ps(a); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F neg(F a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.0f)); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F halves(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static F unsigned_bytes(const uint8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static F signed_bytes(const uint8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static void store(float* out, F v) { _mm256_store_ps(out, v); }
  static void prefetch(const uint8_t*, int64_t) {}
  // the 4 bytes at x in every lane: a broadcast load, which the dots can take as their operand
  static I word(const int8_t* x) { return _mm256_broadcastd_epi32(_mm_loadu_si32(x)); }
  // signed codes: |q| times x with q's sign (each maddubs lane at most 2 * 128 * 127), the sum exact
  static constexpr int32_t kSignedBias = 0;
  static I signed_codes(I q) { return q; }
  static I sdot(I acc, I q, const int8_t* p) {
    const I x = word(p);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(x, q)),
                                                   _mm256_set1_epi16(1)));
  }
};

#include "rows16.inc"
template <int Digits>
void tiles(const MatmulArgs& a, int64_t n0, int64_t n1) { simd_tiles<Avx2Ops, Digits>(a, n0, n1); }

inline uint32_t u32_at(const uint8_t* p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
}

// Row r's 4-byte piece of each of 4 chunks: 16 bytes in element order.
inline __m128i row_bytes(const uint8_t* chunks, int r) {
  return _mm_set_epi32(static_cast<int>(u32_at(chunks + 3 * kChunkBytes + r * 4)),
                       static_cast<int>(u32_at(chunks + 2 * kChunkBytes + r * 4)),
                       static_cast<int>(u32_at(chunks + kChunkBytes + r * 4)), static_cast<int>(u32_at(chunks + r * 4)));
}

// Q6_K's top bits of 16 elements, byte j = element j's at bits 4-5: byte i of (word >> 2c) for 4c + i.
inline __m128i top_bits(uint32_t word) {
  const uint32_t m = 0x03030303u;
  return _mm_slli_epi16(_mm_set_epi32(static_cast<int>((word >> 6) & m), static_cast<int>((word >> 4) & m),
                                      static_cast<int>((word >> 2) & m), static_cast<int>(word & m)),
                        4);
}

// The Q5 kinds' fifth bits of 16 elements, byte j = element j's at bit 4: byte i of (word >> c)
// for 4c + i (word >> 4: the elements 16.. of the same group).
inline __m128i fifth_bits(uint32_t word) {
  const uint32_t m = 0x01010101u;
  return _mm_slli_epi16(_mm_set_epi32(static_cast<int>((word >> 3) & m), static_cast<int>((word >> 2) & m),
                                      static_cast<int>((word >> 1) & m), static_cast<int>(word & m)),
                        4);
}

// scalar_values on AVX2: the same operations per value, so the same bits.
void values(const GroupValues& v, int r, float* out) {
  __m128i codes[2];
  if (v.int8) {
    codes[0] = row_bytes(v.chunks, r);
    codes[1] = row_bytes(v.chunks + 4 * kChunkBytes, r);
  } else {
    const __m128i bytes = row_bytes(v.chunks, r), mask = _mm_set1_epi8(0x0f);
    codes[0] = _mm_and_si128(bytes, mask);
    codes[1] = _mm_and_si128(_mm_srli_epi16(bytes, 4), mask);
    if (v.high != nullptr) {
      codes[0] = _mm_or_si128(codes[0], top_bits(u32_at(v.high + r * 4)));
      codes[1] = _mm_or_si128(codes[1], top_bits(u32_at(v.high + 64 + r * 4)));
    }
    if (v.fifth != nullptr) {
      const uint32_t word = u32_at(v.fifth + r * 4);
      codes[0] = _mm_or_si128(codes[0], fifth_bits(word));
      codes[1] = _mm_or_si128(codes[1], fifth_bits(word >> 4));
    }
  }
  const __m256i centre = _mm256_set1_epi32(v.centre);
  for (int half = 0; half < 2; ++half) {
    const __m256 scale = _mm256_set1_ps(v.scale[half]);
    for (int eighth = 0; eighth < 2; ++eighth) {
      const __m128i part = eighth == 0 ? codes[half] : _mm_srli_si128(codes[half], 8);
      const __m256i q = v.int8 ? _mm256_cvtepi8_epi32(part) : _mm256_cvtepu8_epi32(part);
      __m256 value;
      if (v.offsets) {
        value = _mm256_add_ps(_mm256_mul_ps(scale, _mm256_cvtepi32_ps(q)), _mm256_set1_ps(v.offset));
      } else {
        value = _mm256_mul_ps(scale, _mm256_cvtepi32_ps(_mm256_sub_epi32(q, centre)));
      }
      _mm256_storeu_ps(out + half * 16 + eighth * 8, value);
    }
  }
}
}  // namespace avx2_16
#pragma GCC pop_options

// AVX-512 VNNI: a whole tile a register, vpdpbusd for the sums; 32 registers: a tile's
// unpacked codes meet 4 activation rows.
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
namespace vnni16 {
struct VnniOps {
  using I = __m512i;
  using F = __m512;
  static constexpr int kLanes = 16, kRowTile = 4;
  static I load(const uint8_t* p) { return _mm512_loadu_si512(p); }
  static I bytes(int v) { return _mm512_set1_epi8(static_cast<char>(v)); }
  static I band(I a, I b) { return _mm512_and_si512(a, b); }
  static I bor(I a, I b) { return _mm512_or_si512(a, b); }
  static I srl16(I a, int n) { return _mm512_srli_epi16(a, n); }
  static I srl32(I a, int n) { return _mm512_srl_epi32(a, _mm_cvtsi32_si128(n)); }
  static I sll32(I a, int n) { return _mm512_slli_epi32(a, n); }
  static I zero() { return _mm512_setzero_si512(); }
  static I set1(int32_t v) { return _mm512_set1_epi32(v); }
  static I add(I a, I b) { return _mm512_add_epi32(a, b); }
  static I sub(I a, I b) { return _mm512_sub_epi32(a, b); }
  static constexpr bool kPairSums = false;  // vpdpbusd sums four products into int32 at once
  // vpdpbusd with the 4 bytes at x as a {1to16} operand: gcc 12 emits a separate broadcast
  // for _mm512_dpbusd_epi32(acc, w, word(x)), and with 4 rows of 16 products a group the
  // broadcasts were a third of the instructions, which is what held the many-row products
  // back (dispatch-bound, not product-bound).
  static I dot(I acc, I w, const int8_t* x) {
    asm("vpdpbusd %[x]%{1to16%}, %[w], %[acc]" : [acc] "+v"(acc) : [w] "v"(w), [x] "m"(*reinterpret_cast<const int32_t*>(x)));
    return acc;
  }
  // the 4 bytes at x in every lane: a broadcast load, folded into vpdpbusd as a {1to16} operand
  static I word(const int8_t* x) { return _mm512_broadcastd_epi32(_mm_loadu_si32(x)); }
  static F fzero() { return _mm512_setzero_ps(); }
  static F fset1(float v) { return _mm512_set1_ps(v); }
  static F cvt(I a) { return _mm512_cvtepi32_ps(a); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F neg(F a) { return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32(INT32_MIN))); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F halves(const uint8_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static F unsigned_bytes(const uint8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static F signed_bytes(const uint8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static void store(float* out, F v) { _mm512_store_ps(out, v); }
  // signed codes: q + 128 as unsigned bytes (q xor 0x80), so the sums come 128 sum x too large
  static constexpr int32_t kSignedBias = 128;
  static I signed_codes(I q) { return _mm512_xor_si512(q, _mm512_set1_epi8(static_cast<char>(0x80))); }
  static I sdot(I acc, I q, const int8_t* x) { return dot(acc, q, x); }
  static void prefetch(const uint8_t* p, int64_t bytes) {
    for (int64_t at = 0; at < bytes; at += 64) _mm_prefetch(reinterpret_cast<const char*>(p + at), _MM_HINT_T0);
  }
};

#include "rows16.inc"
template <int Digits>
void tiles(const MatmulArgs& a, int64_t n0, int64_t n1) { simd_tiles<VnniOps, Digits>(a, n0, n1); }
}  // namespace vnni16
#pragma GCC pop_options

#endif  // __x86_64__

// ---- re-laying GGUF's rows, and their values back ----

// One row's block as 32-weight groups: codes q [256 or 32] (unsigned, as stored: Q4_0's
// before its - 8, Q6_K's before its - 32) and the group's parameters.
struct RowBlock {
  uint8_t q[256];
  uint8_t params[16][2];  // Q4_K: 8 x (scale, min); Q6_K: 16 x the int8 scale of each 16
};

void k4_scales_mins(const uint8_t* scales, int j, uint8_t& scale, uint8_t& min) {  // ggml's get_scale_min_k4
  if (j < 4) {
    scale = scales[j] & 63;
    min = scales[j + 4] & 63;
  } else {
    scale = (scales[j + 4] & 0x0f) | ((scales[j - 4] >> 6) << 4);
    min = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
  }
}

void read_q4k(const uint8_t* b, RowBlock& out) {  // d | dmin | 12 B scales | 128 B nibbles
  for (int j = 0; j < 8; ++j) {
    k4_scales_mins(b + 4, j, out.params[j][0], out.params[j][1]);
    for (int l = 0; l < 32; ++l) out.q[j * 32 + l] = (b[16 + (j / 2) * 32 + l] >> (4 * (j & 1))) & 0x0f;
  }
}

void read_q6k(const uint8_t* b, RowBlock& out) {  // 128 B low nibbles | 64 B high bits | 16 x i8 scales | d
  for (int j = 0; j < 8; ++j) {
    const int h = j / 4, quarter = j % 4;
    for (int l = 0; l < 32; ++l) {
      const int low = (b[h * 64 + (quarter & 1) * 32 + l] >> (4 * (quarter / 2))) & 0x0f;
      const int top = (b[128 + h * 32 + l] >> (2 * quarter)) & 3;
      out.q[j * 32 + l] = static_cast<uint8_t>(low | top << 4);
    }
  }
  for (int i = 0; i < 16; ++i) out.params[i / 2][i % 2] = b[192 + i];
}

// Group codes q [32] of row r into the tile's chunks (low nibbles only: Q6_K's top bits apart).
void write_chunks(const uint8_t* q, int r, uint8_t* chunks) {
  for (int c = 0; c < 4; ++c)
    for (int i = 0; i < 4; ++i)
      chunks[c * kChunkBytes + r * 4 + i] = static_cast<uint8_t>((q[4 * c + i] & 0x0f) | (q[16 + 4 * c + i] & 0x0f) << 4);
}

// Row r's fifth-bit word of a group's codes q [32] (5-bit) into the tile's words.
void write_fifth(const uint8_t* q, int r, uint8_t* words) {
  for (int i = 0; i < 4; ++i) {
    uint8_t byte = 0;
    for (int c = 0; c < 4; ++c)
      byte |= static_cast<uint8_t>(((q[4 * c + i] >> 4) & 1) << c | ((q[16 + 4 * c + i] >> 4) & 1) << (4 + c));
    words[r * 4 + i] = byte;
  }
}

// Q5_0/Q5_1: d (| m) | u32 qh | 16 B nibbles: element j's fifth bit is bit j of qh.
void q5_codes(const uint8_t* qh_bytes, const uint8_t* qs, uint8_t* q) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  for (int j = 0; j < 32; ++j) q[j] = static_cast<uint8_t>(((qs[j % 16] >> (4 * (j / 16))) & 0x0f) | ((qh >> j) & 1) << 4);
}

void read_q5k(const uint8_t* b, RowBlock& out) {  // d | dmin | 12 B scales | 32 B qh | 128 B nibbles
  for (int j = 0; j < 8; ++j) {
    k4_scales_mins(b + 4, j, out.params[j][0], out.params[j][1]);
    for (int l = 0; l < 32; ++l)
      out.q[j * 32 + l] = static_cast<uint8_t>(((b[48 + (j / 2) * 32 + l] >> (4 * (j & 1))) & 0x0f) | ((b[16 + l] >> j) & 1) << 4);
  }
}

void interleave_row(WeightKind source, const uint8_t* row, const uint16_t* scales, int64_t K, int r, uint8_t* tile) {
  if (source == WeightKind::kQ5_0 || source == WeightKind::kQ5_1) {
    const bool min = source == WeightKind::kQ5_1;
    const int64_t block_bytes = min ? 24 : 22, group = min ? kQ5_1Group : kQ5_0Group, params = min ? 64 : 32;
    uint8_t q[32];
    for (int64_t g = 0; g < K / kGroup; ++g) {
      const uint8_t* block = row + g * block_bytes;
      uint8_t* p = tile + g * group;
      std::memcpy(p + 2 * r, block, 2);  // d
      if (min) std::memcpy(p + 32 + 2 * r, block + 2, 2);  // m
      q5_codes(block + (min ? 4 : 2), block + (min ? 8 : 6), q);
      write_chunks(q, r, p + params);
      write_fifth(q, r, p + params + kNibbleBytes);
    }
    return;
  }
  if (source == WeightKind::kQ5K) {
    RowBlock rb;
    for (int64_t b = 0; b < K / 256; ++b) {
      const uint8_t* block = row + b * 176;
      uint8_t* out = tile + b * kQ5KBlock;
      read_q5k(block, rb);
      std::memcpy(out + 2 * r, block, 2);  // d
      std::memcpy(out + 32 + 2 * r, block + 2, 2);  // dmin
      for (int j = 0; j < 8; ++j) {
        uint8_t* p = out + 64 + j * kQ5KGroup;
        p[r] = rb.params[j][0];
        p[16 + r] = rb.params[j][1];
        write_chunks(rb.q + j * 32, r, p + 32);
        write_fifth(rb.q + j * 32, r, p + 32 + kNibbleBytes);
      }
    }
    return;
  }
  if (source == WeightKind::kInt8) {  // codes [K], fp16 scales [K / 32]; no scales: GGUF's Q8_0 blocks
    for (int64_t g = 0; g < K / kGroup; ++g) {
      uint8_t* p = tile + g * kQ8Group;
      const uint8_t* codes = scales == nullptr ? row + g * kQ8_0Block + 2 : row + g * kGroup;
      std::memcpy(p + 2 * r, scales == nullptr ? row + g * kQ8_0Block : reinterpret_cast<const uint8_t*>(scales + g), 2);
      for (int c = 0; c < 8; ++c) std::memcpy(p + 32 + c * kChunkBytes + r * 4, codes + 4 * c, 4);
    }
    return;
  }
  if (source == WeightKind::kQ4_0 || source == WeightKind::kQ4_1) {
    const bool min = source == WeightKind::kQ4_1;
    const int64_t block_bytes = min ? 20 : 18, group = min ? kQ4_1Group : kQ4_0Group;
    for (int64_t g = 0; g < K / kGroup; ++g) {
      const uint8_t* block = row + g * block_bytes;
      uint8_t* p = tile + g * group;
      std::memcpy(p + 2 * r, block, 2);  // d
      if (min) std::memcpy(p + 32 + 2 * r, block + 2, 2);  // m
      for (int c = 0; c < 4; ++c) std::memcpy(p + (min ? 64 : 32) + c * kChunkBytes + r * 4, block + block_bytes - 16 + 4 * c, 4);
    }
    return;
  }
  RowBlock rb;
  for (int64_t b = 0; b < K / 256; ++b) {
    if (source == WeightKind::kQ4K) {
      const uint8_t* block = row + b * 144;
      uint8_t* out = tile + b * kQ4KBlock;
      read_q4k(block, rb);
      std::memcpy(out + 2 * r, block, 2);  // d
      std::memcpy(out + 32 + 2 * r, block + 2, 2);  // dmin
      for (int j = 0; j < 8; ++j) {
        uint8_t* p = out + 64 + j * kQ4KGroup;
        p[r] = rb.params[j][0];
        p[16 + r] = rb.params[j][1];
        write_chunks(rb.q + j * 32, r, p + 32);
      }
    } else {  // kQ6K
      const uint8_t* block = row + b * 210;
      uint8_t* out = tile + b * kQ6KBlock;
      read_q6k(block, rb);
      std::memcpy(out + 2 * r, block + 208, 2);  // d
      for (int j = 0; j < 8; ++j) {
        uint8_t* p = out + 32 + j * kQ6KGroup;
        p[r] = rb.params[j][0];
        p[16 + r] = rb.params[j][1];
        const uint8_t* q = rb.q + j * 32;
        write_chunks(q, r, p + 32);
        for (int half = 0; half < 2; ++half) {
          uint8_t* high = p + 32 + kNibbleBytes + half * 64 + r * 4;
          for (int i = 0; i < 4; ++i) {
            high[i] = 0;
            for (int k = 0; k < 4; ++k) high[i] |= static_cast<uint8_t>((q[half * 16 + 4 * k + i] >> 4) << (2 * k));
          }
        }
      }
    }
  }
}

}  // namespace

void row16_matmul_rows(const MatmulArgs& a, int64_t n0, int64_t n1, int level) {
#if defined(__x86_64__)
  if (level >= 2) return a.x_digits == 2 ? vnni16::tiles<2>(a, n0, n1) : vnni16::tiles<1>(a, n0, n1);
  if (level == 1) return a.x_digits == 2 ? avx2_16::tiles<2>(a, n0, n1) : avx2_16::tiles<1>(a, n0, n1);
#else
  (void)level;
#endif
  scalar16::tiles(a, n0, n1);
}

void row16_dequantize_rows(const DequantArgs& a, int64_t n0, int64_t n1, int level) {
  const int64_t bytes = tile_bytes(a.kind, a.K);
  float values[kGroup];
  for (int64_t n = n0; n < n1; ++n) {
    const int64_t row = a.first_row + n;
    const int r = static_cast<int>(row % kTileRows);
    const uint8_t* tile = static_cast<const uint8_t*>(a.codes) + row / kTileRows * bytes;
    for (int64_t g = 0; g < a.K / kGroup; ++g) {
      const GroupValues v = group_values(a.kind, tile, g, r);
#if defined(__x86_64__)
      if (level >= 1) {
        avx2_16::values(v, r, values);
        store_values(a, n * a.K + g * kGroup, values);
        continue;
      }
#else
      (void)level;
#endif
      scalar_values(v, r, values);
      store_values(a, n * a.K + g * kGroup, values);
    }
  }
}

void row16_gather(WeightKind kind, const void* codes, int64_t K, const int64_t* ids, int64_t count, float* out,
                  int level) {
  for (int64_t i = 0; i < count; ++i)
    row16_dequantize_rows(DequantArgs{kind, codes, nullptr, false, 1, K, out + i * K, false, ids[i]}, 0, 1, level);
}

void interleave16(WeightKind source, const uint8_t* blocks, const uint16_t* scales, int64_t N, int64_t K, uint8_t* out) {
  WeightKind kind;
  int64_t row_bytes;
  switch (source) {
    case WeightKind::kQ4_0: kind = WeightKind::kQ4_0x16, row_bytes = K / kGroup * 18; break;
    case WeightKind::kQ4_1: kind = WeightKind::kQ4_1x16, row_bytes = K / kGroup * 20; break;
    case WeightKind::kQ4K: kind = WeightKind::kQ4Kx16, row_bytes = K / 256 * 144; break;
    case WeightKind::kQ5_0: kind = WeightKind::kQ5_0x16, row_bytes = K / kGroup * 22; break;
    case WeightKind::kQ5_1: kind = WeightKind::kQ5_1x16, row_bytes = K / kGroup * 24; break;
    case WeightKind::kQ5K: kind = WeightKind::kQ5Kx16, row_bytes = K / 256 * 176; break;
    case WeightKind::kInt8: kind = WeightKind::kQ8_0x16, row_bytes = scales == nullptr ? K / kGroup * kQ8_0Block : K; break;
    default: kind = WeightKind::kQ6Kx16, row_bytes = K / 256 * 210;
  }
  const int64_t bytes = tile_bytes(kind, K);
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < N / kTileRows; ++t)
    for (int r = 0; r < kTileRows; ++r) {
      const int64_t row = t * kTileRows + r;
      interleave_row(source, blocks + row * row_bytes, scales == nullptr ? nullptr : scales + row * (K / kGroup), K, r,
                     out + t * bytes);
    }
}

}  // namespace mcp_kernels
