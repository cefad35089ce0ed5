// Q4_0 and Q4_1 re-laid 16 rows at a time, for integer dots at the memory bound.
//
// GGUF keeps each row's blocks together: an integer dot then works on one row at a time and
// must bring each block's sum down to a scalar before its scale can apply, which costs more
// operations per weight than the dot itself (one row at a time, every kernel here ran at
// about 15 G weights/s per core on AMD Zen 4 whatever its format, where a 1B model needs
// about 27 at the memory bound on 2 cores). Here the 16 rows of a tile are interleaved, so
// that each 32-bit lane of a 512-bit register belongs to one row: a group's integer sums of
// 16 rows come out of vpdpbusd in one register, their 16 scales are one 32-byte load, and
// one multiply-add applies them. The bytes are GGUF's own, moved, so the file's values
// (d * (q - 8), d * q + m) are kept exactly; the size is the same.
//
// Layout of kQ4_0x16 / kQ4_1x16, rows [16t, 16t + 16) (tile t), K / 32 groups back to back:
//   group g of tile t: 16 fp16 d (row order) | Q4_1 only: 16 fp16 m | 4 chunks of 64 bytes,
//   chunk c = bytes 4c..4c+3 of each row's 16 bytes of nibbles, row by row.
// Byte j of a row's nibbles holds element j (low nibble) and j + 16 (high), as in GGUF, so
// chunk c's low nibbles are elements 4c..4c+3 of each row and its high nibbles 16+4c..19+4c.
//
// Integer dots only: activations quantized per block of 32 to one or two int8 digits
// (quantize_rows); per row and group s = q . x (exact, int32) and then
//   out = fma(float(s - 8 * sum(x codes)), d * dx, out)     (Q4_0: q - 8 = q plus an offset)
//   out = fma(float(s), d * dx, out); out = fma(m, sum(x), out)   (Q4_1: x's exact fp32 sum)
// group after group, in that order on every instruction set, so each output is the same bits
// on all three builds (the tests compare them).

#include "kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <vector>

namespace mcp_kernels {
namespace {

struct Format16 {
  int64_t param_bytes;  // per group and tile: 16 d (and 16 m)
  int64_t group_bytes;  // param_bytes + 256 of nibbles
  int64_t block_bytes;  // the GGUF block (18 or 20)
  bool min;
};

Format16 format16(WeightKind kind) {
  return kind == WeightKind::kQ4_1x16 ? Format16{64, 320, 20, true} : Format16{32, 288, 18, false};
}

inline uint16_t u16_at(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }

// The sum of the 32 codes of an activation group: 128 * sum(q1) + sum(q2) with two digits.
inline int32_t code_sum(const MatmulArgs& a, int64_t m, int64_t g) { return a.x_code_sums[m * (a.K / kGroup) + g]; }

// ---- the plain C++ build: the reference the SIMD builds equal ----
namespace scalar16 {

template <bool kMin>
void tiles(const MatmulArgs& a, int64_t n0, int64_t n1) {
  const Format16 f = format16(a.kind);
  const int64_t G = a.K / kGroup, plane = a.M * a.K;
  const uint8_t* codes = static_cast<const uint8_t*>(a.codes);
  for (int64_t t = n0 / kTileRows; t < n1 / kTileRows; ++t) {
    const uint8_t* tile = codes + t * G * f.group_bytes;
    for (int64_t m = 0; m < a.M; ++m) {
      float acc[kTileRows] = {};
      for (int64_t g = 0; g < G; ++g) {
        const uint8_t* p = tile + g * f.group_bytes;
        const int8_t* x1 = a.xq + m * a.K + g * kGroup;
        const float dx = a.x_scales[m * G + g];
        for (int r = 0; r < kTileRows; ++r) {
          int32_t s1 = 0, s2 = 0;
          for (int c = 0; c < 4; ++c) {
            for (int i = 0; i < 4; ++i) {
              const uint8_t byte = p[f.param_bytes + c * 64 + r * 4 + i];
              const int lo = byte & 0x0f, hi = byte >> 4;
              s1 += lo * x1[4 * c + i] + hi * x1[16 + 4 * c + i];
              if (a.x_digits == 2) s2 += lo * x1[plane + 4 * c + i] + hi * x1[plane + 16 + 4 * c + i];
            }
          }
          int32_t s = a.x_digits == 2 ? s1 * 128 + s2 : s1;
          if constexpr (!kMin) s -= 8 * code_sum(a, m, g);
          const float d = from_f16(u16_at(p + 2 * r));
          acc[r] = std::fma(static_cast<float>(s), d * dx, acc[r]);
          if constexpr (kMin) acc[r] = std::fma(from_f16(u16_at(p + 32 + 2 * r)), a.x_group_sums[m * G + g], acc[r]);
        }
      }
      for (int r = 0; r < kTileRows; ++r) store(a, m, t * kTileRows + r, acc[r]);
    }
  }
}

}  // namespace scalar16

#if defined(__x86_64__)

// ---- AVX2: a tile as two halves of 8 rows, maddubs + madd for the integer sums ----
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace avx2_16 {

// One digit's 32 products of 8 rows: lane r = row r's sum. Each maddubs lane is at most
// 2 * 15 * 127 = 3810, and 8 of them 30480: the int16 sums cannot overflow before madd.
inline __m256i dots8(const __m256i (&lo)[4], const __m256i (&hi)[4], const int8_t* x) {
  __m256i t = _mm256_setzero_si256();
  for (int c = 0; c < 4; ++c) {
    int32_t low, high;
    std::memcpy(&low, x + 4 * c, 4);
    std::memcpy(&high, x + 16 + 4 * c, 4);
    t = _mm256_add_epi16(t, _mm256_maddubs_epi16(lo[c], _mm256_set1_epi32(low)));
    t = _mm256_add_epi16(t, _mm256_maddubs_epi16(hi[c], _mm256_set1_epi32(high)));
  }
  return _mm256_madd_epi16(t, _mm256_set1_epi16(1));
}

template <int Digits, bool kMin>
void tiles(const MatmulArgs& a, int64_t n0, int64_t n1) {
  const Format16 f = format16(a.kind);
  const int64_t G = a.K / kGroup, plane = a.M * a.K;
  const uint8_t* codes = static_cast<const uint8_t*>(a.codes);
  const __m256i mask = _mm256_set1_epi8(0x0f);
  for (int64_t t = n0 / kTileRows; t < n1 / kTileRows; ++t) {
    const uint8_t* tile = codes + t * G * f.group_bytes;
    for (int64_t m = 0; m < a.M; ++m) {
      for (int half = 0; half < 2; ++half) {
        __m256 acc = _mm256_setzero_ps();
        for (int64_t g = 0; g < G; ++g) {
          const uint8_t* p = tile + g * f.group_bytes;
          __m256i lo[4], hi[4];
          for (int c = 0; c < 4; ++c) {
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + f.param_bytes + c * 64 + half * 32));
            lo[c] = _mm256_and_si256(v, mask);
            hi[c] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
          }
          const int8_t* x1 = a.xq + m * a.K + g * kGroup;
          __m256i s = dots8(lo, hi, x1);
          if constexpr (Digits == 2) s = _mm256_add_epi32(_mm256_slli_epi32(s, 7), dots8(lo, hi, x1 + plane));
          if constexpr (!kMin) s = _mm256_sub_epi32(s, _mm256_set1_epi32(8 * code_sum(a, m, g)));
          const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + half * 16)));
          acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(d, _mm256_set1_ps(a.x_scales[m * G + g])), acc);
          if constexpr (kMin) {
            const __m256 mins = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 32 + half * 16)));
            acc = _mm256_fmadd_ps(mins, _mm256_set1_ps(a.x_group_sums[m * G + g]), acc);
          }
        }
        alignas(32) float out[8];
        _mm256_store_ps(out, acc);
        for (int r = 0; r < 8; ++r) store(a, m, t * kTileRows + half * 8 + r, out[r]);
      }
    }
  }
}

}  // namespace avx2_16
#pragma GCC pop_options

// ---- AVX-512 VNNI: a whole tile in one register, vpdpbusd for the integer sums ----
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
namespace vnni16 {

// One digit's 32 products of 16 rows, added to s: lane r = row r. Activation bytes 4c..4c+3
// go to every lane (set1_epi32), so the weights need no shuffle.
inline __m512i dots16(__m512i s, const __m512i (&lo)[4], const __m512i (&hi)[4], const int8_t* x) {
  for (int c = 0; c < 4; ++c) {
    int32_t low, high;
    std::memcpy(&low, x + 4 * c, 4);
    std::memcpy(&high, x + 16 + 4 * c, 4);
    s = _mm512_dpbusd_epi32(s, lo[c], _mm512_set1_epi32(low));
    s = _mm512_dpbusd_epi32(s, hi[c], _mm512_set1_epi32(high));
  }
  return s;
}

// Activation rows [m0, m0 + MT) against one tile: the tile's codes are unpacked once per
// group and meet every row.
template <int Digits, bool kMin, int MT>
inline void tile_rows(const MatmulArgs& a, const uint8_t* tile, int64_t t, int64_t m0) {
  const Format16 f = format16(a.kind);
  const int64_t G = a.K / kGroup, plane = a.M * a.K;
  const __m512i mask = _mm512_set1_epi8(0x0f);
  __m512 acc[MT];
  for (int m = 0; m < MT; ++m) acc[m] = _mm512_setzero_ps();
  for (int64_t g = 0; g < G; ++g) {
    const uint8_t* p = tile + g * f.group_bytes;
    _mm_prefetch(reinterpret_cast<const char*>(p + 8 * f.group_bytes), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(p + 8 * f.group_bytes + 128), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(p + 8 * f.group_bytes + 256), _MM_HINT_T0);
    __m512i lo[4], hi[4];
    for (int c = 0; c < 4; ++c) {
      const __m512i v = _mm512_loadu_si512(p + f.param_bytes + c * 64);
      lo[c] = _mm512_and_si512(v, mask);
      hi[c] = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    for (int m = 0; m < MT; ++m) {
      const int8_t* x1 = a.xq + (m0 + m) * a.K + g * kGroup;
      __m512i s = dots16(_mm512_setzero_si512(), lo, hi, x1);
      if constexpr (Digits == 2) s = dots16(_mm512_slli_epi32(s, 7), lo, hi, x1 + plane);
      if constexpr (!kMin) s = _mm512_sub_epi32(s, _mm512_set1_epi32(8 * code_sum(a, m0 + m, g)));
      acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(d, _mm512_set1_ps(a.x_scales[(m0 + m) * G + g])),
                               acc[m]);
      if constexpr (kMin) {
        const __m512 mins = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32)));
        acc[m] = _mm512_fmadd_ps(mins, _mm512_set1_ps(a.x_group_sums[(m0 + m) * G + g]), acc[m]);
      }
    }
  }
  for (int m = 0; m < MT; ++m) {
    alignas(64) float out[kTileRows];
    _mm512_store_ps(out, acc[m]);
    if (!a.out_bf16 && a.out_stride == 0) {
      std::memcpy(static_cast<float*>(a.out) + (m0 + m) * a.N + t * kTileRows, out, sizeof out);
    } else {
      for (int r = 0; r < kTileRows; ++r) store(a, m0 + m, t * kTileRows + r, out[r]);
    }
  }
}

template <int Digits, bool kMin>
void tiles(const MatmulArgs& a, int64_t n0, int64_t n1) {
  const Format16 f = format16(a.kind);
  const uint8_t* codes = static_cast<const uint8_t*>(a.codes);
  const int64_t tile_bytes = a.K / kGroup * f.group_bytes;
  for (int64_t t = n0 / kTileRows; t < n1 / kTileRows; ++t) {
    const uint8_t* tile = codes + t * tile_bytes;
    int64_t m = 0;
    for (; m + 4 <= a.M; m += 4) tile_rows<Digits, kMin, 4>(a, tile, t, m);
    for (; m < a.M; ++m) tile_rows<Digits, kMin, 1>(a, tile, t, m);
  }
}

}  // namespace vnni16
#pragma GCC pop_options

#endif  // __x86_64__

}  // namespace

void row16_matmul_rows(const MatmulArgs& a, int64_t n0, int64_t n1, int level) {
  const bool min = a.kind == WeightKind::kQ4_1x16;
  const bool two = a.x_digits == 2;
#if defined(__x86_64__)
  if (level >= 2) {
    if (min) two ? vnni16::tiles<2, true>(a, n0, n1) : vnni16::tiles<1, true>(a, n0, n1);
    else two ? vnni16::tiles<2, false>(a, n0, n1) : vnni16::tiles<1, false>(a, n0, n1);
    return;
  }
  if (level == 1) {
    if (min) two ? avx2_16::tiles<2, true>(a, n0, n1) : avx2_16::tiles<1, true>(a, n0, n1);
    else two ? avx2_16::tiles<2, false>(a, n0, n1) : avx2_16::tiles<1, false>(a, n0, n1);
    return;
  }
#else
  (void)level;
  (void)two;
#endif
  if (min) scalar16::tiles<true>(a, n0, n1); else scalar16::tiles<false>(a, n0, n1);
}

void row16_dequantize_rows(const DequantArgs& a, int64_t n0, int64_t n1) {
  const Format16 f = format16(a.kind);
  const int64_t G = a.K / kGroup;
  const uint8_t* codes = static_cast<const uint8_t*>(a.codes);
  float values[kGroup];
  for (int64_t n = n0; n < n1; ++n) {
    const int64_t row = a.first_row + n, r = row % kTileRows;
    const uint8_t* tile = codes + row / kTileRows * G * f.group_bytes;
    for (int64_t g = 0; g < G; ++g) {
      const uint8_t* p = tile + g * f.group_bytes;
      const float d = from_f16(u16_at(p + 2 * r));
      const float m = f.min ? from_f16(u16_at(p + 32 + 2 * r)) : 0.0f;
      for (int j = 0; j < 16; ++j) {
        const uint8_t byte = p[f.param_bytes + (j / 4) * 64 + r * 4 + j % 4];
        if (f.min) {  // d * q + m, a multiply then an add, as gguf.quants
          values[j] = d * static_cast<float>(byte & 0x0f) + m;
          values[j + 16] = d * static_cast<float>(byte >> 4) + m;
        } else {  // d * (q - 8)
          values[j] = d * static_cast<float>((byte & 0x0f) - 8);
          values[j + 16] = d * static_cast<float>((byte >> 4) - 8);
        }
      }
      store_values(a, n * a.K + g * kGroup, values);
    }
  }
}

void interleave16(WeightKind kind, const uint8_t* blocks, int64_t N, int64_t K, uint8_t* out) {
  const Format16 f = format16(kind);
  const int64_t G = K / kGroup, row_bytes = G * f.block_bytes, nibbles = f.block_bytes - 16;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < N / kTileRows; ++t) {
    for (int64_t g = 0; g < G; ++g) {
      uint8_t* p = out + (t * G + g) * f.group_bytes;
      for (int r = 0; r < kTileRows; ++r) {
        const uint8_t* block = blocks + (t * kTileRows + r) * row_bytes + g * f.block_bytes;
        std::memcpy(p + 2 * r, block, 2);  // d
        if (f.min) std::memcpy(p + 32 + 2 * r, block + 2, 2);  // m
        for (int c = 0; c < 4; ++c) std::memcpy(p + f.param_bytes + c * 64 + r * 4, block + nibbles + 4 * c, 4);
      }
    }
  }
}

}  // namespace mcp_kernels
