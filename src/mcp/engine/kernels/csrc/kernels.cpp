// Weight-only quantized matrix kernels for the CPU: one build per instruction set, chosen at
// run time by what the CPU supports, and split over the rows of W by OpenMP threads.
//
// Weights are dequantized in registers exactly as the reference does (scale * q + offset,
// a multiply then an add: this file is compiled with -ffp-contract=off so that the
// compiler fuses neither), then multiplied with fp32 activations and summed in fp32.

#include "kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <unistd.h>

namespace mcp_kernels {

// Whether the one-row dot runs as on Intel CPUs: the weight rows in the wide tiles
// (Isa::kRowTile1Wide, where the instruction set has them) and no software prefetch of the
// weights, rather than narrow tiles that prefetch two tiles ahead (tiles.inc, matmul_range).
// Measured with 2 threads, the builds alternated in one process (kernels_ab.py), 2026-12-05:
// - Intel Xeon with AVX-512 (Sapphire Rapids class), before any build had the prefetch:
//   12-row tiles 1.15-1.2x faster batch-1 decode than 4-row ones (8 rows 1.15x, 16 1.07x).
// - Intel Xeon with AVX-512 and AMX (model 207), with the prefetch built: dropping it 1.12x
//   faster with 12-row tiles (9 of 12 rounds), 1.37x on AVX2 (10 of 10); with the prefetch, 12
//   rows against 4 1.07x and 1.00x in two runs.
// - AMD EPYC (Zen 4): the prefetch 1.25-1.37x faster; with it, 12 and 8 rows as fast as 4.
// The sums are the same either way: each weight row has its own accumulator whatever tile it
// is in, and a prefetch changes no value.
static bool intel_one_row_dot() {
#if defined(__x86_64__)
  static const bool intel = (__builtin_cpu_init(), __builtin_cpu_is("intel"));
  return intel;
#else
  return false;
#endif
}

#if defined(__x86_64__)
// The byte operations on one group's 32 codes (blocks.inc) that the AVX-512 and AVX2 builds
// share: both work on 256-bit registers there (AVX2 instructions, inlined into either build).
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
struct Bytes256 {
  using BV = __m256i;
  static BV b_load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static BV b_nibbles(const uint8_t* p) {  // 16 bytes: their low nibbles, then their high ones
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(x, 4), x), _mm256_set1_epi8(0x0f));
  }
  static BV b_srl(BV v, int n) { return _mm256_srl_epi16(v, _mm_cvtsi32_si128(n)); }  // mask after
  static BV b_shl(BV v, int n) { return _mm256_sll_epi16(v, _mm_cvtsi32_si128(n)); }
  static BV b_and(BV v, int mask) { return _mm256_and_si256(v, _mm256_set1_epi8(static_cast<char>(mask))); }
  static BV b_or(BV a, BV b) { return _mm256_or_si256(a, b); }
  static BV b_sub(BV v, int n) { return _mm256_sub_epi8(v, _mm256_set1_epi8(static_cast<char>(n))); }
  // out[i] = scale * byte i of bytes (unsigned), i < 8: the K-quants' 6-bit scales and mins
  static void scaled8(uint64_t bytes, float scale, float* out) {
    const __m256 values = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(bytes))));
    _mm256_storeu_ps(out, _mm256_mul_ps(values, _mm256_set1_ps(scale)));
  }
};
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,fma,f16c")
namespace avx512 {
struct Isa : Bytes256 {
  using V = __m512;
  static constexpr int kLanes = 16;
  static constexpr int kRowTile1 = 4;  // weight rows per tile with one activation row
  static constexpr int kRowTile1Wide = 12;  // the same on Intel CPUs (intel_one_row_dot)
  static constexpr int kRowTileN = 6;  // several activation rows: 6 dequantized weight rows x 4 activation rows
  static constexpr int kActTile = 4;  // (24 accumulators of the 32 registers; measured against 4x4, 4x6, 8x3)
  static float half(uint16_t h) { return _cvtsh_ss(h); }
  static V load_halves(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static void halves(const uint16_t* p, float* out, int64_t n) {  // n IEEE halves to floats
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, load_halves(p + i));
    for (; i < n; ++i) out[i] = half(p[i]);
  }
  static void to_halves(const float* x, uint16_t* out, int64_t n) {  // rounded to nearest even
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                          _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; ++i) out[i] = to_f16(x[i]);
  }
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static float hsum(V v) { return _mm512_reduce_add_ps(v); }
  // lane j = the sum of v[j]'s lanes, for 16 vectors at once: pairs of lanes added across
  // vectors (unpack, then 64-bit unpack, then 128-bit shuffles), 45 operations for 16 sums
  // where 16 hsum calls take about 8 each and wait on each other's shuffles
  static V hsums(const V* v) {
    __m512 two[8], four[4], eight[2];
    for (int j = 0; j < 8; ++j)  // per 128-bit chunk: [a0+a2, b0+b2, a1+a3, b1+b3]
      two[j] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * j], v[2 * j + 1]), _mm512_unpackhi_ps(v[2 * j], v[2 * j + 1]));
    for (int j = 0; j < 4; ++j) {  // per chunk: the partial sums of 4 consecutive vectors
      const __m512d x = _mm512_castps_pd(two[2 * j]), y = _mm512_castps_pd(two[2 * j + 1]);
      four[j] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
    }
    for (int j = 0; j < 2; ++j)  // chunks of a vector pair added: [c0.01, c0.23, c1.01, c1.23]
      eight[j] = _mm512_add_ps(_mm512_shuffle_f32x4(four[2 * j], four[2 * j + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                               _mm512_shuffle_f32x4(four[2 * j], four[2 * j + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(eight[0], eight[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(eight[0], eight[1], _MM_SHUFFLE(3, 1, 3, 1)));
  }
  static V set1(float v) { return _mm512_set1_ps(v); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V fmax(V a, V b) { return _mm512_max_ps(a, b); }
  // exp_nonpositive's parts (vec.inc): n = round(v), p * 2^n (n >= -126 after its clamp),
  // and 0 in the lanes where x is -inf
  static V round_nearest(V v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V times_pow2(V p, V n) { return _mm512_scalef_ps(p, n); }
  static V zero_where_minus_inf(V x, V value) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(-INFINITY), _CMP_NEQ_UQ), value);
  }
  static void int4_codes(const uint8_t* p, V* q) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i low = _mm_set1_epi8(0x0f);
    q[0] = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_and_si128(bytes, low)));
    q[1] = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(bytes, 4), low)));
  }
  // The same floats for the one-row dot: the 16 bytes widen once into 32-bit lanes, and a
  // float permute, which reads only an index's low 4 bits, looks up the low nibble's value in
  // a table of 0..15 as it is and the high nibble's after a shift: 4 operations for 32 codes
  // against 7, on the shuffle port instead of the integer and conversion ones. Batch-1 decode
  // 1.02x faster (13 of 15 paired rounds); where several rows dequantize a tile (bound by the
  // FMAs that follow) a short prefill was 2% slower with it, so that path converts as above.
  static void int4_codes_lookup(const uint8_t* p, V* q) {
    const __m512 values = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i bytes = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    q[0] = _mm512_permutexvar_ps(bytes, values);
    q[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), values);
  }
  // 32 bytes' low nibbles (shift 0) or high ones (shift 4) as floats, by the same lookup: the
  // bytes widen into 32-bit lanes and the permute reads each lane's low 4 bits, so no mask
  // (Q4_K's groups, blocks.inc): 4-6 operations where bytes shifted, masked and converted take 8.
  static void nibbles32(const uint8_t* p, int shift, V* q) {
    const __m512 values = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int i = 0; i < 2; ++i) {
      const __m512i bytes = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i)));
      q[i] = _mm512_permutexvar_ps(shift != 0 ? _mm512_srli_epi32(bytes, 4) : bytes, values);
    }
  }
  // 32 bytes at a time for GGUF's 5- and 6-bit blocks (blocks.inc): Bytes256's, and
  static BV b_fifth_bits(uint32_t word) {  // byte i = 16 where bit i of word is set
    return _mm256_and_si256(_mm256_movm_epi8(word), _mm256_set1_epi8(0x10));
  }
  static void b_floats(BV v, V* q) {  // 32 signed bytes to floats
    q[0] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(v)));
    q[1] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(v, 1)));
  }
  static void int8_codes(const int8_t* p, V* q) {
    for (int i = 0; i < 2; ++i) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
      q[i] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes));
    }
  }
};
#include "tiles.inc"
#include "blocks.inc"
#include "vec.inc"
}  // namespace avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace avx2 {
struct Isa : Bytes256 {
  using V = __m256;
  static constexpr int kLanes = 8;
  static constexpr int kRowTile1 = 4;
  static constexpr int kRowTile1Wide = kRowTile1;  // 16 registers: no room for wider tiles
  static constexpr int kRowTileN = 3;  // 9 accumulators of the 16 registers (2x2: 1.4x slower at 16 rows)
  static constexpr int kActTile = 3;
  static float half(uint16_t h) { return _cvtsh_ss(h); }
  static V load_halves(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static void halves(const uint16_t* p, float* out, int64_t n) {  // n IEEE halves to floats
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, load_halves(p + i));
    for (; i < n; ++i) out[i] = half(p[i]);
  }
  static void to_halves(const float* x, uint16_t* out, int64_t n) {  // rounded to nearest even
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; ++i) out[i] = to_f16(x[i]);
  }
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static float hsum(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static V hsums(const V* v) {  // lane j = the sum of v[j]'s lanes, for 8 vectors at once
    const __m256 h01 = _mm256_hadd_ps(v[0], v[1]), h23 = _mm256_hadd_ps(v[2], v[3]);
    const __m256 h45 = _mm256_hadd_ps(v[4], v[5]), h67 = _mm256_hadd_ps(v[6], v[7]);
    const __m256 low = _mm256_hadd_ps(h01, h23), high = _mm256_hadd_ps(h45, h67);  // per 128-bit half
    return _mm256_add_ps(_mm256_permute2f128_ps(low, high, 0x20), _mm256_permute2f128_ps(low, high, 0x31));
  }
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V fmax(V a, V b) { return _mm256_max_ps(a, b); }
  static V round_nearest(V v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // 2^n built in the exponent field: exact for n >= -126, which exp_nonpositive's clamp of x
  // at -87.3 keeps (below it exp is under 2^-126: a normal 2^-126-ish value stands for it)
  static V times_pow2(V p, V n) {
    const __m256i exponent = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(exponent));
  }
  static V zero_where_minus_inf(V x, V value) {
    return _mm256_and_ps(_mm256_cmp_ps(x, _mm256_set1_ps(-INFINITY), _CMP_NEQ_UQ), value);
  }
  // Each 8 bytes widened straight from memory to int32 lanes (one vpmovzxbd), then the low
  // nibbles masked and the high ones shifted down: 10 operations a group where unpacking the
  // 16 bytes first took 13 (the nibbles land in the same lanes as before).
  static void int4_codes(const uint8_t* p, V* q) {
    const __m256i mask = _mm256_set1_epi32(0x0f);
    for (int half = 0; half < 2; ++half) {
      const __m256i bytes = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * half)));
      q[half] = _mm256_cvtepi32_ps(_mm256_and_si256(bytes, mask));
      q[half + 2] = _mm256_cvtepi32_ps(_mm256_srli_epi32(bytes, 4));
    }
  }
  static void int4_codes_lookup(const uint8_t* p, V* q) { int4_codes(p, q); }  // no 16-entry permute here
  static void nibbles32(const uint8_t* p, int shift, V* q) {  // 32 bytes' low or high nibbles as floats
    b_floats(b_and(b_srl(b_load(p), shift), 0x0f), q);
  }
  // 32 bytes at a time for GGUF's 5- and 6-bit blocks (blocks.inc): Bytes256's, and
  static BV b_fifth_bits(uint32_t word) {  // byte i = 16 where bit i of word is set
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(word)),
                                              _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                                               2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit), _mm256_set1_epi8(0x10));
  }
  static void b_floats(BV v, V* q) {  // 32 signed bytes to floats
    const __m128i low = _mm256_castsi256_si128(v), high = _mm256_extracti128_si256(v, 1);
    q[0] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(low));
    q[1] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(low, 8)));
    q[2] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(high));
    q[3] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(high, 8)));
  }
  static void int8_codes(const int8_t* p, V* q) {
    for (int i = 0; i < 4; ++i) {
      const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * i));
      q[i] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes));
    }
  }
};
#include "tiles.inc"
#include "blocks.inc"
// AVX2 integer dots: 32 unsigned/signed bytes times 32 signed bytes, pairs summed to int16
// by maddubs (at most 2 * 128 * 127 = 32512: no saturation), then to int32 by madd.
struct IntOps {
  using WB = __m256i;
  using XB = __m256i;
  using IDot = __m256i;
  using Acc = __m256;
  static constexpr int kRowTile1 = 4;
  static constexpr int kRowTileN = 2;
  static constexpr int kActTile = 4;
  static Acc zero() { return _mm256_setzero_ps(); }
  static WB int4_weights(const uint8_t* p) {  // elements 0..15 (low nibbles), then 16..31
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i mask = _mm_set1_epi8(0x0f);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(bytes, 4), mask), _mm_and_si128(bytes, mask));
  }
  static WB int8_weights(const int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static XB x_codes(const int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static IDot idot_u4(WB w, XB x) { return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1)); }
  static IDot idot_s8(WB w, XB x) {  // |w| times x with w's sign: the same products, unsigned left
    return idot_u4(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
  }
  static IDot combine(IDot high, IDot low) { return _mm256_add_epi32(_mm256_slli_epi32(high, 7), low); }
  static Acc fma(float scale, IDot dot, Acc acc) {
    return _mm256_fmadd_ps(_mm256_set1_ps(scale), _mm256_cvtepi32_ps(dot), acc);
  }
  static float hsum(Acc v) { return Isa::hsum(v); }
};
#include "qdot.inc"
#include "vec.inc"
}  // namespace avx2
#pragma GCC pop_options

// The integer dots with VNNI (AVX512-VNNI on 256-bit registers): vpdpbusd multiplies 32
// unsigned by signed bytes and sums each four into int32 in one instruction, where AVX2 needs
// maddubs, madd and a register of ones. The same sums, exactly: only the instruction differs.
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")
namespace vnni {
using avx2::Int4Rows;
using avx2::Int8Rows;
using avx2::Isa;
using avx2::kPrefetchTiles;
using avx2::param;
using avx2::tile_params;
using avx2::tile_params_buffer;
struct IntOps : avx2::IntOps {
  // 32 vector registers here (AVX-512VL): 4 weight rows x 4 activation rows of accumulators
  // where AVX2's 16 hold 2 x 4. Several rows, 1 thread, AMD Zen 4 (2026-12-07, a loaded
  // machine): 128 rows x 576 x 1536 8.7 -> 4.0 ms, 128 x 2048 x 2048 35.6 -> 21.5 ms. Each output
  // is summed alone whatever the tile, so the sums are the same.
  static constexpr int kRowTileN = 4;
  static constexpr int kActTile = 4;
  static IDot idot_u4(WB w, XB x) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), w, x); }
  static IDot idot_s8(WB w, XB x) { return idot_u4(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)); }
};
#include "qdot.inc"
}  // namespace vnni
#pragma GCC pop_options
#endif  // __x86_64__

namespace scalar {
struct Isa {
  using V = float;
  static constexpr int kLanes = 1;
  static constexpr int kRowTile1 = 4;
  static constexpr int kRowTile1Wide = kRowTile1;
  static constexpr int kRowTileN = 2;
  static constexpr int kActTile = 2;
  static float half(uint16_t h) { return from_f16(h); }
  static V load_halves(const uint16_t* p) { return from_f16(*p); }
  static void halves(const uint16_t* p, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = load_halves(p + i);
  }
  static void to_halves(const float* x, uint16_t* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = to_f16(x[i]);
  }
  static V zero() { return 0.0f; }
  static V load(const float* p) { return *p; }
  static void store(float* p, V v) { *p = v; }
  static V fma(V a, V b, V c) { return a * b + c; }
  static float hsum(V v) { return v; }
  static V hsums(const V* v) { return v[0]; }
  static V set1(float v) { return v; }
  static V mul(V a, V b) { return a * b; }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V fmax(V a, V b) { return std::max(a, b); }
  static V round_nearest(V v) { return std::nearbyint(v); }
  static V times_pow2(V p, V n) { return std::ldexp(p, static_cast<int>(n)); }
  static V zero_where_minus_inf(V x, V value) { return x == -INFINITY ? 0.0f : value; }
  static void int4_codes(const uint8_t* p, V* q) {
    for (int j = 0; j < kGroup / 2; ++j) {
      q[j] = static_cast<float>(p[j] & 0x0f);
      q[j + kGroup / 2] = static_cast<float>(p[j] >> 4);
    }
  }
  static void int4_codes_lookup(const uint8_t* p, V* q) { int4_codes(p, q); }
  static void nibbles32(const uint8_t* p, int shift, V* q) {
    for (int j = 0; j < kGroup; ++j) q[j] = static_cast<float>((p[j] >> shift) & 0x0f);
  }
  static void int8_codes(const int8_t* p, V* q) {
    for (int j = 0; j < kGroup; ++j) q[j] = static_cast<float>(p[j]);
  }
  struct BV {  // 32 bytes (blocks.inc)
    uint8_t b[kGroup];
  };
  template <class Fn>
  static BV b_map(BV v, Fn fn) {
    for (int i = 0; i < kGroup; ++i) v.b[i] = static_cast<uint8_t>(fn(v.b[i], i));
    return v;
  }
  static BV b_load(const uint8_t* p) {
    BV v;
    std::memcpy(v.b, p, kGroup);
    return v;
  }
  static BV b_nibbles(const uint8_t* p) {
    BV v;
    for (int i = 0; i < kGroup / 2; ++i) v.b[i] = p[i] & 0x0f, v.b[i + kGroup / 2] = p[i] >> 4;
    return v;
  }
  static BV b_fifth_bits(uint32_t word) {
    return b_map(BV{}, [word](uint8_t, int i) { return ((word >> i) & 1u) << 4; });
  }
  static BV b_srl(BV v, int n) { return b_map(v, [n](uint8_t b, int) { return b >> n; }); }
  static BV b_shl(BV v, int n) { return b_map(v, [n](uint8_t b, int) { return b << n; }); }
  static BV b_and(BV v, int mask) { return b_map(v, [mask](uint8_t b, int) { return b & mask; }); }
  static BV b_or(BV a, BV c) { return b_map(a, [&c](uint8_t b, int i) { return b | c.b[i]; }); }
  static BV b_sub(BV v, int n) { return b_map(v, [n](uint8_t b, int) { return b - n; }); }
  static void scaled8(uint64_t bytes, float scale, float* out) {
    for (int i = 0; i < 8; ++i) out[i] = scale * static_cast<float>((bytes >> (8 * i)) & 0xffu);
  }
  static void b_floats(BV v, V* q) {
    for (int i = 0; i < kGroup; ++i) q[i] = static_cast<float>(static_cast<int8_t>(v.b[i]));
  }
};
#include "tiles.inc"
#include "blocks.inc"
struct IntOps {
  struct Bytes {
    int8_t v[kGroup];
  };
  using WB = Bytes;
  using XB = const int8_t*;
  using IDot = int32_t;
  using Acc = float;
  static constexpr int kRowTile1 = 4;
  static constexpr int kRowTileN = 2;
  static constexpr int kActTile = 2;
  static Acc zero() { return 0.0f; }
  static WB int4_weights(const uint8_t* p) {
    Bytes w;
    for (int j = 0; j < kGroup / 2; ++j) {
      w.v[j] = static_cast<int8_t>(p[j] & 0x0f);
      w.v[j + kGroup / 2] = static_cast<int8_t>(p[j] >> 4);
    }
    return w;
  }
  static WB int8_weights(const int8_t* p) {
    Bytes w;
    std::memcpy(w.v, p, kGroup);
    return w;
  }
  static XB x_codes(const int8_t* p) { return p; }
  static IDot idot_u4(const WB& w, XB x) {
    int32_t total = 0;
    for (int j = 0; j < kGroup; ++j) total += static_cast<int32_t>(w.v[j]) * x[j];
    return total;
  }
  static IDot idot_s8(const WB& w, XB x) { return idot_u4(w, x); }
  static IDot combine(IDot high, IDot low) { return high * 128 + low; }
  static Acc fma(float scale, IDot dot, Acc acc) { return acc + scale * static_cast<float>(dot); }
  static float hsum(Acc v) { return v; }
};
#include "qdot.inc"
#include "vec.inc"
}  // namespace scalar

namespace {

enum class Isa { kScalar, kAvx2, kAvx512 };

Isa best_isa() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("f16c")) {
    return Isa::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) {
    return Isa::kAvx2;
  }
#endif
  return Isa::kScalar;
}

Isa& current_isa() {
  static Isa isa = best_isa();
  return isa;
}

// VNNI integer dots on an AVX-512 CPU that has them (Ice Lake, Sapphire Rapids, Zen 4).
bool has_vnni() {
#if defined(__x86_64__)
  static const bool vnni = (__builtin_cpu_init(), __builtin_cpu_supports("avx512vnni"));
  return vnni;
#else
  return false;
#endif
}

constexpr int64_t kRowAlign = kTileRows, kMinChunkRows = 64;  // whole tiles of the x16 kinds

}  // namespace

// Rows [0, num_rows) in one run of whole 16-row blocks per thread (at least 64 rows each). One
// contiguous run per thread streams each matrix as a single pass through memory; four smaller
// chunks a thread, claimed in turn, were slower: batch-1 decode 1.10x, a 120-token prefill
// 1.10x and an 8-sequence batch 1.06x faster with one run (2 threads, AMD EPYC with AVX-512,
// the two builds alternated in one process, 2026-12-04).
int64_t row_chunks(int64_t num_rows, int num_threads) {
  const int64_t wanted = std::max<int64_t>(1, std::min<int64_t>(num_threads, num_rows / kMinChunkRows));
  return std::min(wanted, (num_rows + kRowAlign - 1) / kRowAlign);
}

std::pair<int64_t, int64_t> row_chunk(int64_t num_rows, int64_t num_chunks, int64_t chunk) {
  const int64_t blocks = (num_rows + kRowAlign - 1) / kRowAlign;
  return {std::min(num_rows, blocks * chunk / num_chunks * kRowAlign),
          std::min(num_rows, blocks * (chunk + 1) / num_chunks * kRowAlign)};
}

namespace {

// fn(start, stop) for each chunk of rows, claimed dynamically (a thread that starts late takes
// what is left). The threads are OpenMP's: built with -fopenmp, this library needs
// libgomp.so.1, and when torch is imported first (mcp.engine.kernels imports it) the loader
// hands it torch's own copy, so the kernels and torch's ops run on one team of threads instead
// of two teams spinning against each other on the same cores.
template <class Fn>
void parallel_rows(int64_t num_rows, int num_threads, const Fn& fn) {
  const int64_t num_chunks = row_chunks(num_rows, num_threads);
  auto chunk_rows = [&](int64_t chunk) {
    const auto [start, stop] = row_chunk(num_rows, num_chunks, chunk);
    if (start < stop) fn(start, stop);
  };
  // GNU OpenMP is not fork-safe: a forked child runs the kernels on its calling thread alone.
  static const pid_t parent = getpid();
  if (num_threads <= 1 || num_chunks <= 1 || getpid() != parent) {
    for (int64_t chunk = 0; chunk < num_chunks; ++chunk) chunk_rows(chunk);
    return;
  }
#pragma omp parallel for schedule(dynamic, 1) num_threads(num_threads)
  for (int64_t chunk = 0; chunk < num_chunks; ++chunk) chunk_rows(chunk);
}

}  // namespace

float dot_f32(const float* a, const float* b, int64_t n) {
  switch (current_isa()) {
#if defined(__x86_64__)
    case Isa::kAvx512: return avx512::dot_f32(a, b, n);
    case Isa::kAvx2: return avx2::dot_f32(a, b, n);
#endif
    default: return scalar::dot_f32(a, b, n);
  }
}

void to_halves(const float* x, uint16_t* out, int64_t n) {
  switch (current_isa()) {
#if defined(__x86_64__)
    case Isa::kAvx512: avx512::Isa::to_halves(x, out, n); break;
    case Isa::kAvx2: avx2::Isa::to_halves(x, out, n); break;
#endif
    default: scalar::Isa::to_halves(x, out, n);
  }
}

void attend_group(const GroupAttention& a, float* scores, float* out) {
  switch (current_isa()) {
#if defined(__x86_64__)
    case Isa::kAvx512: avx512::attend_group(a, scores, out); break;
    case Isa::kAvx2: avx2::attend_group(a, scores, out); break;
#endif
    default: scalar::attend_group(a, scores, out);
  }
}

void attend_group_part(const GroupAttention& a, float* scores, float* out, float* stats) {
  switch (current_isa()) {
#if defined(__x86_64__)
    case Isa::kAvx512: avx512::attend_group_part(a, scores, out, stats); break;
    case Isa::kAvx2: avx2::attend_group_part(a, scores, out, stats); break;
#endif
    default: scalar::attend_group_part(a, scores, out, stats);
  }
}

void combine_parts(const float* outs, const float* stats, int64_t parts, int64_t heads, int64_t D, float* out) {
  switch (current_isa()) {
#if defined(__x86_64__)
    case Isa::kAvx512: avx512::combine_parts(outs, stats, parts, heads, D, out); break;
    case Isa::kAvx2: avx2::combine_parts(outs, stats, parts, heads, D, out); break;
#endif
    default: scalar::combine_parts(outs, stats, parts, heads, D, out);
  }
}

const char* isa_name() {
  switch (current_isa()) {
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx2: return "avx2";
    default: return "scalar";
  }
}

bool set_isa(const char* name) {
  const std::string wanted(name);
  const Isa best = best_isa();
  Isa isa;
  if (wanted == "avx512") isa = Isa::kAvx512;
  else if (wanted == "avx2") isa = Isa::kAvx2;
  else if (wanted == "scalar") isa = Isa::kScalar;
  else return false;
  if (static_cast<int>(isa) > static_cast<int>(best)) return false;
  current_isa() = isa;
  return true;
}

// Rows of x to int8 digits per block of 32, written as digit planes q [digits, M, K].
// One digit: d = max|x| / 127, q1 = round(x / d) (half to even), as llama.cpp's Q8_0.
// Two: the same q1, then the remainder x - q1 * (max|x| / 127), at most half that step, in
// steps 128 times finer: d = max|x| / (127 * 128), q2 = round(remainder / d) in -64..64, and
// x ~ d * (128 * q1 + q2) to within d / 2 (15 bits, 128 times finer than one digit).
// nearbyint(v) for |v| < 2^22 in the default rounding mode (to nearest, ties to even): the
// same value, by adding and taking away 1.5 * 2^23, which the compiler vectorizes where a
// call to libm's nearbyintf (this file is built for baseline x86-64) would not be.
static inline float round_even(float v) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  return (v + kMagic) - kMagic;
}

void quantize_rows(const float* x, int64_t M, int64_t K, int digits, int8_t* q, float* d) {
  const int64_t plane = M * K;
  for (int64_t i = 0; i < M * (K / kGroup); ++i) {
    const float* group = x + i * kGroup;
    float amax = 0.0f;
    for (int j = 0; j < kGroup; ++j) amax = std::max(amax, std::fabs(group[j]));
    const float step = amax / 127.0f;
    const float inverse = step != 0.0f ? 1.0f / step : 0.0f;
    d[i] = digits == 2 ? step / 128.0f : step;
    const float fine_inverse = inverse * 128.0f;
    for (int j = 0; j < kGroup; ++j) {
      const float high = std::clamp(round_even(group[j] * inverse), -127.0f, 127.0f);
      q[i * kGroup + j] = static_cast<int8_t>(high);
      if (digits == 2) {
        const float low = round_even((group[j] - high * step) * fine_inverse);
        q[plane + i * kGroup + j] = static_cast<int8_t>(std::clamp(low, -127.0f, 127.0f));
      }
    }
  }
}

MatmulArgs prepare_matmul(const MatmulArgs& input) {
  MatmulArgs args = input;
  static thread_local std::vector<float> sums, x_scales;
  static thread_local std::vector<int8_t> xq;
  const int64_t num_groups = args.K / kGroup;
  sums.resize(static_cast<size_t>(args.M * num_groups));
  for (int64_t i = 0; i < args.M * num_groups; ++i) {
    float total = 0.0f;
    for (int j = 0; j < kGroup; ++j) total += args.x[i * kGroup + j];
    sums[i] = total;
  }
  args.x_group_sums = sums.data();
  if (args.x_digits > 0) {  // once per call, in the calling thread; every worker reads them
    xq.resize(static_cast<size_t>(args.x_digits * args.M * args.K));
    x_scales.resize(static_cast<size_t>(args.M * num_groups));
    quantize_rows(args.x, args.M, args.K, args.x_digits, xq.data(), x_scales.data());
    args.xq = xq.data();
    args.x_scales = x_scales.data();
    {  // the sums of each 16 codes (128 * q1 + q2 with two digits), for the x16 kinds: computed
       // whatever args.kind, as a stacked matrix's later parts may be of those kinds
      static thread_local std::vector<int32_t> code_sums;
      code_sums.resize(static_cast<size_t>(args.M * args.K / 16));
      const int64_t plane = args.M * args.K;
      for (int64_t i = 0; i < args.M * args.K / 16; ++i) {
        int32_t high = 0, low = 0;
        for (int j = 0; j < 16; ++j) {
          high += xq[i * 16 + j];
          if (args.x_digits == 2) low += xq[plane + i * 16 + j];
        }
        code_sums[i] = args.x_digits == 2 ? 128 * high + low : high;
      }
      args.x_code_sums = code_sums.data();
    }
  }
  return args;
}

// The x16 kinds with exact fp32 products: each row's values, then dots. A slow path (these
// kinds are laid out for integer dots, and only a model decoding with them holds them).
static void row16_exact_rows(const MatmulArgs& args, int64_t n0, int64_t n1) {
  static thread_local std::vector<float> row;
  row.resize(static_cast<size_t>(args.K));
  for (int64_t n = n0; n < n1; ++n) {
    row16_dequantize_rows(DequantArgs{args.kind, args.codes, nullptr, false, 1, args.K, row.data(), false, n}, 0, 1,
                          row16_level());
    for (int64_t m = 0; m < args.M; ++m) store(args, m, n, dot_f32(args.x + m * args.K, row.data(), args.K));
  }
}

int row16_level() {
#if defined(__x86_64__)
  if (current_isa() == Isa::kAvx512 && has_vnni()) return 2;
  if (current_isa() != Isa::kScalar) return 1;
#endif
  return 0;
}

void matmul_rows(const MatmulArgs& args, int64_t n0, int64_t n1) {
  if (is_row16_kind(args.kind)) {
    if (args.x_digits == 0) return row16_exact_rows(args, n0, n1);
    return row16_matmul_rows(args, n0, n1, row16_level());
  }
  if (is_block_kind(args.kind)) {  // GGUF blocks: exact products, whatever x_digits asks
    switch (current_isa()) {
#if defined(__x86_64__)
      case Isa::kAvx512: avx512::block_matmul(args, n0, n1); break;
      case Isa::kAvx2: avx2::block_matmul(args, n0, n1); break;
#endif
      default: scalar::block_matmul(args, n0, n1);
    }
    return;
  }
  if (args.x_digits > 0) {
    switch (current_isa()) {
#if defined(__x86_64__)
      case Isa::kAvx512:
        if (has_vnni()) {
          vnni::matmul_int_dots(args, n0, n1);
          break;
        }
        [[fallthrough]];
      case Isa::kAvx2: avx2::matmul_int_dots(args, n0, n1); break;
#endif
      default: scalar::matmul_int_dots(args, n0, n1);
    }
    return;
  }
  switch (current_isa()) {
#if defined(__x86_64__)
    case Isa::kAvx512: avx512::matmul(args, n0, n1); break;
    case Isa::kAvx2: avx2::matmul(args, n0, n1); break;
#endif
    default: scalar::matmul(args, n0, n1);
  }
}

void matmul(const MatmulArgs& input, int num_threads) {
  const MatmulArgs args = prepare_matmul(input);  // once, in the calling thread; every worker reads it
  parallel_rows(args.N, num_threads, [&](int64_t n0, int64_t n1) { matmul_rows(args, n0, n1); });
}

void dequantize(const DequantArgs& args, int num_threads) {
  const Isa isa = current_isa();
  const bool blocks = is_block_kind(args.kind);
  parallel_rows(args.N, num_threads, [&](int64_t n0, int64_t n1) {
    if (is_row16_kind(args.kind)) return row16_dequantize_rows(args, n0, n1, row16_level());
    switch (isa) {
#if defined(__x86_64__)
      case Isa::kAvx512: blocks ? avx512::block_dequantize(args, n0, n1) : avx512::dequantize(args, n0, n1); break;
      case Isa::kAvx2: blocks ? avx2::block_dequantize(args, n0, n1) : avx2::dequantize(args, n0, n1); break;
#endif
      default: blocks ? scalar::block_dequantize(args, n0, n1) : scalar::dequantize(args, n0, n1);
    }
  });
}

}  // namespace mcp_kernels
