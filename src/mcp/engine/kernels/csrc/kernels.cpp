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
#include <cstdlib>
#include <string>
#include <vector>

#include <unistd.h>

namespace mcp_kernels {

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,fma,f16c")
namespace avx512 {
struct Isa {
  using V = __m512;
  static constexpr int kLanes = 16;
  static constexpr int kRowTile1 = 8;  // weight rows per tile with one activation row
  static constexpr int kRowTileN = 4;
  static constexpr int kActTile = 4;
  static float half(uint16_t h) { return _cvtsh_ss(h); }
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static float hsum(V v) { return _mm512_reduce_add_ps(v); }
  static V set1(float v) { return _mm512_set1_ps(v); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static void int4_codes(const uint8_t* p, V* q) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i low = _mm_set1_epi8(0x0f);
    q[0] = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_and_si128(bytes, low)));
    q[1] = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(bytes, 4), low)));
  }
  static void int8_codes(const int8_t* p, V* q) {
    for (int i = 0; i < 2; ++i) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
      q[i] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes));
    }
  }
};
#include "tiles.inc"
}  // namespace avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace avx2 {
struct Isa {
  using V = __m256;
  static constexpr int kLanes = 8;
  static constexpr int kRowTile1 = 4;
  static constexpr int kRowTileN = 2;
  static constexpr int kActTile = 2;
  static float half(uint16_t h) { return _cvtsh_ss(h); }
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
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V widen(__m128i codes) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(codes)); }  // low 8 bytes
  static void int4_codes(const uint8_t* p, V* q) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i mask = _mm_set1_epi8(0x0f);
    const __m128i low = _mm_and_si128(bytes, mask), high = _mm_and_si128(_mm_srli_epi16(bytes, 4), mask);
    q[0] = widen(low);
    q[1] = widen(_mm_srli_si128(low, 8));
    q[2] = widen(high);
    q[3] = widen(_mm_srli_si128(high, 8));
  }
  static void int8_codes(const int8_t* p, V* q) {
    for (int i = 0; i < 4; ++i) {
      const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * i));
      q[i] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes));
    }
  }
};
#include "tiles.inc"
}  // namespace avx2
#pragma GCC pop_options
#endif  // __x86_64__

namespace scalar {
struct Isa {
  using V = float;
  static constexpr int kLanes = 1;
  static constexpr int kRowTile1 = 4;
  static constexpr int kRowTileN = 2;
  static constexpr int kActTile = 2;
  static float half(uint16_t h) { return from_f16(h); }
  static V zero() { return 0.0f; }
  static V load(const float* p) { return *p; }
  static void store(float* p, V v) { *p = v; }
  static V fma(V a, V b, V c) { return a * b + c; }
  static float hsum(V v) { return v; }
  static V set1(float v) { return v; }
  static V mul(V a, V b) { return a * b; }
  static V add(V a, V b) { return a + b; }
  static void int4_codes(const uint8_t* p, V* q) {
    for (int j = 0; j < kGroup / 2; ++j) {
      q[j] = static_cast<float>(p[j] & 0x0f);
      q[j + kGroup / 2] = static_cast<float>(p[j] >> 4);
    }
  }
  static void int8_codes(const int8_t* p, V* q) {
    for (int j = 0; j < kGroup; ++j) q[j] = static_cast<float>(p[j]);
  }
};
#include "tiles.inc"
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

// Splits rows [0, num_rows) into chunks of whole 8-row blocks, about four per thread (at
// least 64 rows each), claimed dynamically so that threads that start late still share the
// work. The threads are OpenMP's: built with -fopenmp, this library needs libgomp.so.1, and
// when torch is imported first (mcp.engine.kernels imports it) the loader hands it torch's
// own copy, so the kernels and torch's ops run on one team of threads instead of two teams
// spinning against each other on the same cores.
template <class Fn>
void parallel_rows(int64_t num_rows, int num_threads, const Fn& fn) {
  constexpr int64_t align = 8, min_rows = 64;
  const int64_t wanted = std::max<int64_t>(1, std::min<int64_t>(4 * num_threads, num_rows / min_rows));
  const int64_t blocks = (num_rows + align - 1) / align;
  const int64_t num_chunks = std::min(wanted, blocks);
  auto chunk_rows = [&](int64_t chunk) {
    const int64_t start = std::min(num_rows, blocks * chunk / num_chunks * align);
    const int64_t stop = std::min(num_rows, blocks * (chunk + 1) / num_chunks * align);
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

void matmul(const MatmulArgs& input, int num_threads) {
  const Isa isa = current_isa();
  MatmulArgs args = input;
  static thread_local std::vector<float> sums;
  const int64_t num_groups = args.K / kGroup;
  sums.resize(static_cast<size_t>(args.M * num_groups));
  for (int64_t i = 0; i < args.M * num_groups; ++i) {
    float total = 0.0f;
    for (int j = 0; j < kGroup; ++j) total += args.x[i * kGroup + j];
    sums[i] = total;
  }
  args.x_group_sums = sums.data();
  parallel_rows(args.N, num_threads, [&](int64_t n0, int64_t n1) {
    switch (isa) {
#if defined(__x86_64__)
      case Isa::kAvx512: avx512::matmul(args, n0, n1); break;
      case Isa::kAvx2: avx2::matmul(args, n0, n1); break;
#endif
      default: scalar::matmul(args, n0, n1);
    }
  });
}

void dequantize(const DequantArgs& args, int num_threads) {
  const Isa isa = current_isa();
  parallel_rows(args.N, num_threads, [&](int64_t n0, int64_t n1) {
    switch (isa) {
#if defined(__x86_64__)
      case Isa::kAvx512: avx512::dequantize(args, n0, n1); break;
      case Isa::kAvx2: avx2::dequantize(args, n0, n1); break;
#endif
      default: scalar::dequantize(args, n0, n1);
    }
  });
}

}  // namespace mcp_kernels
