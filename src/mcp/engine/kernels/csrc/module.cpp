// The Python module mcp.engine.kernels._cpu: raw-pointer entry points for the kernels.
//
// The Python side (mcp/engine/kernels/__init__.py) checks every tensor's dtype, shape and
// contiguity and passes data pointers; nothing here can check them again. The GIL is
// released while a kernel runs.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "decode.h"
#include "kernels.h"

namespace {

using mcp_kernels::DequantArgs;
using mcp_kernels::MatmulArgs;
using mcp_kernels::WeightKind;

bool read_ints(PyObject* const* args, Py_ssize_t nargs, Py_ssize_t expected, long long* out) {
  if (nargs != expected) {
    PyErr_Format(PyExc_TypeError, "expected %zd arguments, got %zd", expected, nargs);
    return false;
  }
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    out[i] = PyLong_AsLongLong(args[i]);
    if (out[i] == -1 && PyErr_Occurred()) return false;
  }
  return true;
}

// The activation digits of integer dots: 0 (exact fp32 products), 1 or 2.
bool check_digits(long long digits) {
  if (digits < 0 || digits > 2) {
    PyErr_Format(PyExc_ValueError, "x_digits must be 0 (exact), 1 (int8) or 2 (two int8 digits), got %lld", digits);
    return false;
  }
  return true;
}

// matmul(kind, x, x_bf16, M, K, N, codes, qparams, qparams_f16, out, out_bf16, num_threads, x_digits)
PyObject* py_matmul(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  long long v[13];
  if (!read_ints(args, nargs, 13, v)) return nullptr;
  if (!check_digits(v[12])) return nullptr;
  MatmulArgs a{static_cast<WeightKind>(v[0]), nullptr, v[3], v[4], v[5], nullptr,
               reinterpret_cast<const void*>(v[6]), reinterpret_cast<const void*>(v[7]), v[8] != 0,
               reinterpret_cast<void*>(v[9]), v[10] != 0, static_cast<int>(v[12])};
  const int num_threads = static_cast<int>(v[11]);
  static thread_local std::vector<float> widened;
  Py_BEGIN_ALLOW_THREADS
  if (v[2] != 0) {  // bf16 activations: widen once, every worker reads them
    const uint16_t* x = reinterpret_cast<const uint16_t*>(v[1]);
    widened.resize(static_cast<size_t>(a.M * a.K));
    for (int64_t i = 0; i < a.M * a.K; ++i) widened[i] = mcp_kernels::from_bf16(x[i]);
    a.x = widened.data();
  } else {
    a.x = reinterpret_cast<const float*>(v[1]);
  }
  mcp_kernels::matmul(a, num_threads);
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

// dequantize(kind, codes, qparams, qparams_f16, N, K, out, out_bf16, num_threads, first_row)
PyObject* py_dequantize(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  long long v[10];
  if (!read_ints(args, nargs, 10, v)) return nullptr;
  DequantArgs a{static_cast<WeightKind>(v[0]), reinterpret_cast<const void*>(v[1]),
                reinterpret_cast<const void*>(v[2]), v[3] != 0, v[4], v[5], reinterpret_cast<void*>(v[6]), v[7] != 0,
                v[9]};
  const int num_threads = static_cast<int>(v[8]);
  Py_BEGIN_ALLOW_THREADS
  mcp_kernels::dequantize(a, num_threads);
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

// interleave16(source kind, blocks, scales, N, K, out): Q4_0/Q4_1/Q4_K/Q5/Q6_K/int8 rows -> their x16 kind
// (int8 with scales 0: GGUF's Q8_0 blocks, the scale inside each)
PyObject* py_interleave16(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  long long v[6];
  if (!read_ints(args, nargs, 6, v)) return nullptr;
  Py_BEGIN_ALLOW_THREADS
  mcp_kernels::interleave16(static_cast<WeightKind>(v[0]), reinterpret_cast<const uint8_t*>(v[1]),
                            reinterpret_cast<const uint16_t*>(v[2]), v[3], v[4], reinterpret_cast<uint8_t*>(v[5]));
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

// gather16(kind, codes, K, ids, count, out): rows ids [count] (int64) of an x16 matrix as
// fp32 [count, K] (an embedding lookup in a tied head's re-laid matrix)
PyObject* py_gather16(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  long long v[6];
  if (!read_ints(args, nargs, 6, v)) return nullptr;
  const auto kind = static_cast<WeightKind>(v[0]);
  const int64_t K = v[2], count = v[4];
  const int64_t* ids = reinterpret_cast<const int64_t*>(v[3]);
  float* out = reinterpret_cast<float*>(v[5]);
  Py_BEGIN_ALLOW_THREADS
  mcp_kernels::row16_gather(kind, reinterpret_cast<const void*>(v[1]), K, ids, count, out, mcp_kernels::row16_level());
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

// quantize(x, M, K, digits, q, d): fp32 rows -> int8 digit planes per block of 32 and their
// scales, as the integer dots make them (tests read them)
PyObject* py_quantize(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  long long v[6];
  if (!read_ints(args, nargs, 6, v)) return nullptr;
  if (v[3] < 1 || !check_digits(v[3])) return nullptr;
  Py_BEGIN_ALLOW_THREADS
  mcp_kernels::quantize_rows(reinterpret_cast<const float*>(v[0]), v[1], v[2], static_cast<int>(v[3]),
                             reinterpret_cast<int8_t*>(v[4]), reinterpret_cast<float*>(v[5]));
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

constexpr int kMatrixFields = 3 + 5 * mcp_kernels::kMaxParts;  // see read_matrix
constexpr int kLayerFields = 12 + 4 * kMatrixFields;  // one row of the layer table (see read_layer)
constexpr int kDimFields = 23;  // the dims vector (see read_dims)

// parts, N, K, then per part (kMaxParts, unused ones 0): kind, codes, qparams, qparams_f16, rows
mcp_kernels::MatrixRef read_matrix(const long long* f) {
  mcp_kernels::MatrixRef matrix{f[0], f[1], f[2], {}};
  for (int p = 0; p < mcp_kernels::kMaxParts; ++p) {
    const long long* g = f + 3 + 5 * p;
    matrix.part[p] = {static_cast<WeightKind>(g[0]), reinterpret_cast<const void*>(g[1]),
                      reinterpret_cast<const void*>(g[2]), g[3] != 0, g[4]};
  }
  return matrix;
}

// A row of the int64 layer table: input_norm, qkv (kMatrixFields), qkv_bias, o, post_norm,
// gate_up, down, keys, values, q_norm, k_norm, attn_out_norm, mlp_out_norm, windowed (1/0),
// router, experts (a layer of experts: see read_experts; gate_up and down unused);
// pointers as integers, 0 for none.
mcp_kernels::LayerRef read_layer(const long long* f) {
  constexpr int M = kMatrixFields;
  const auto floats = [](long long v) { return reinterpret_cast<const float*>(v); };
  const long long* g = f + 5 + 4 * M;  // the Gemma 3 fields
  return {floats(f[0]), read_matrix(f + 1), floats(f[1 + M]), read_matrix(f + 2 + M), floats(f[2 + 2 * M]),
          read_matrix(f + 3 + 2 * M), read_matrix(f + 3 + 3 * M), reinterpret_cast<void*>(f[3 + 4 * M]),
          reinterpret_cast<void*>(f[4 + 4 * M]), floats(g[0]), floats(g[1]), floats(g[2]), floats(g[3]), g[4] != 0,
          {floats(g[5]), nullptr, nullptr}};
}

// A layer of experts' matrices, from the table its row's last field points to: [num_experts,
// 2 * kMatrixFields], each expert's gate_up then its down (read_matrix); gate_up [0, E), down [E, 2 E).
std::vector<mcp_kernels::MatrixRef> read_experts(const long long* row, int64_t num_experts) {
  const long long* table = reinterpret_cast<const long long*>(row[kLayerFields - 1]);
  std::vector<mcp_kernels::MatrixRef> matrices(2 * num_experts);
  for (int64_t e = 0; e < num_experts; ++e) {
    matrices[e] = read_matrix(table + 2 * e * kMatrixFields);
    matrices[num_experts + e] = read_matrix(table + (2 * e + 1) * kMatrixFields);
  }
  return matrices;
}

// dims: hidden, heads, kv_heads, head_dim, intermediate, num_blocks, block_size, max_positions,
// cos, sin_signed, final_norm (pointers as integers), kv_f16 (1: a KV cache of halves, 0: floats),
// attn_scale (a float's bits; 0: 1 / sqrt(head_dim)), gelu (1/0), window (0: none), local_cos,
// local_sin_signed, local_num_blocks, rotary_dim (0: head_dim), num_experts, top_k,
// expert_intermediate, norm_topk (1/0; the four 0 without layers of experts)
mcp_kernels::ModelDims read_dims(const long long* f, double eps) {
  const float scale = f[12] == 0 ? 1.0f / std::sqrt(static_cast<float>(f[3]))
                                 : std::bit_cast<float>(static_cast<uint32_t>(f[12]));
  return {f[0], f[1], f[2], f[3], f[4], static_cast<float>(eps), f[5], f[6], f[7],
          reinterpret_cast<const float*>(f[8]), reinterpret_cast<const float*>(f[9]),
          reinterpret_cast<const float*>(f[10]), f[11] != 0, scale, f[13] != 0, f[14],
          reinterpret_cast<const float*>(f[15]), reinterpret_cast<const float*>(f[16]), f[17],
          f[18] == 0 ? f[3] : f[18], f[19], f[20], f[21], f[22] != 0};
}

// decode_step(layer_table, num_layers, dims, eps, x, M, positions, tables, max_blocks, x_digits, num_threads,
//             local_tables, local_max_blocks)
// The Python wrapper (mcp.engine.models.llama_step) checks the tensors' dtypes and shapes;
// this checks every index the step will follow (positions, block ids, matrix shapes).
PyObject* py_decode_step(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 13) {
    PyErr_Format(PyExc_TypeError, "expected 13 arguments, got %zd", nargs);
    return nullptr;
  }
  const double eps = PyFloat_AsDouble(args[3]);
  if (eps == -1.0 && PyErr_Occurred()) return nullptr;
  long long v[13];
  // every argument but eps (args[3], read above) is an integer; v[3] is a placeholder
  PyObject* ints[13] = {args[0], args[1], args[2], args[2], args[4], args[5], args[6],
                        args[7], args[8], args[9], args[10], args[11], args[12]};
  if (!read_ints(ints, 13, 13, v)) return nullptr;
  if (v[1] < 1 || v[1] > 4096) {
    PyErr_Format(PyExc_ValueError, "num_layers must be 1..4096, got %lld", v[1]);
    return nullptr;
  }
  const long long* table = reinterpret_cast<const long long*>(v[0]);
  const mcp_kernels::ModelDims dims = read_dims(reinterpret_cast<const long long*>(v[2]), eps);
  std::vector<mcp_kernels::LayerRef> layers;
  std::vector<std::vector<mcp_kernels::MatrixRef>> experts(v[1]);  // what the layers of experts point into
  for (long long i = 0; i < v[1]; ++i) {
    const long long* row = table + i * kLayerFields;
    layers.push_back(read_layer(row));
    if (layers[i].experts.router == nullptr) continue;
    if (dims.num_experts < 1 || dims.num_experts > 65536 || row[kLayerFields - 1] == 0) {
      PyErr_Format(PyExc_ValueError, "layer %lld has a router: it needs its experts' table and 1..65536 experts",
                   i);
      return nullptr;
    }
    experts[i] = read_experts(row, dims.num_experts);
    layers[i].experts.gate_up = experts[i].data();
    layers[i].experts.down = experts[i].data() + dims.num_experts;
  }
  const mcp_kernels::StepRows rows{v[5], reinterpret_cast<float*>(v[4]), reinterpret_cast<const int64_t*>(v[6]),
                                   reinterpret_cast<const int64_t*>(v[7]), v[8],
                                   reinterpret_cast<const int64_t*>(v[11]), v[12]};
  const std::string problem = mcp_kernels::check_step(dims, layers.data(), v[1], rows);
  if (!problem.empty()) {
    PyErr_SetString(PyExc_ValueError, problem.c_str());
    return nullptr;
  }
  if (!check_digits(v[9])) return nullptr;
  const int num_threads = static_cast<int>(v[10]);
  Py_BEGIN_ALLOW_THREADS
  mcp_kernels::decode_step(dims, layers.data(), v[1], rows, static_cast<int>(v[9]), num_threads);
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

// attend_group(q, keys, values, table, block_size, kv_heads, kv_head, heads, D, last, part, scores, out,
// kv_f16): one row's query heads that share a kv head, as the decode step attends: whole (part
// 0), or in parts of `part` positions, combined after; keys and values are floats, or halves
// where kv_f16 is 1 (the Python wrapper, mcp.engine.kernels.paged_attention, checks every shape,
// dtype and block id)
PyObject* py_attend_group(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  long long v[14];
  if (!read_ints(args, nargs, 14, v)) return nullptr;
  const mcp_kernels::GroupAttention a{reinterpret_cast<const float*>(v[0]), reinterpret_cast<const void*>(v[1]),
                                      reinterpret_cast<const void*>(v[2]), reinterpret_cast<const int64_t*>(v[3]),
                                      v[4], v[5], v[6], v[7], v[8], v[9],
                                      1.0f / std::sqrt(static_cast<float>(v[8])), 0, v[13] != 0};
  const int64_t part = v[10], heads = v[7], D = v[8];
  float* scores = reinterpret_cast<float*>(v[11]);
  float* out = reinterpret_cast<float*>(v[12]);
  Py_BEGIN_ALLOW_THREADS
  if (part <= 0) {
    mcp_kernels::attend_group(a, scores, out);
  } else {
    const int64_t parts = a.last / part + 1;
    std::vector<float> outs(parts * heads * D), stats(parts * heads * 2);
    for (int64_t c = 0; c < parts; ++c) {
      mcp_kernels::GroupAttention piece = a;
      piece.from = c * part;
      piece.last = std::min(a.last, (c + 1) * part - 1);
      mcp_kernels::attend_group_part(piece, scores, outs.data() + c * heads * D, stats.data() + c * heads * 2);
    }
    mcp_kernels::combine_parts(outs.data(), stats.data(), parts, heads, D, out);
  }
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

// to_halves(x, out, n): out [n] IEEE halves = x [n] floats rounded to nearest even, as the
// decode step writes a KV cache of halves
PyObject* py_to_halves(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  long long v[3];
  if (!read_ints(args, nargs, 3, v)) return nullptr;
  mcp_kernels::to_halves(reinterpret_cast<const float*>(v[0]), reinterpret_cast<uint16_t*>(v[1]), v[2]);
  Py_RETURN_NONE;
}

PyObject* py_isa(PyObject*, PyObject*) { return PyUnicode_FromString(mcp_kernels::isa_name()); }

PyObject* py_set_isa(PyObject*, PyObject* name) {
  const char* wanted = PyUnicode_AsUTF8(name);
  if (wanted == nullptr) return nullptr;
  return PyBool_FromLong(mcp_kernels::set_isa(wanted));
}

PyMethodDef methods[] = {
    {"matmul", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_matmul)), METH_FASTCALL,
     "out = x @ W.T for a quantized W (raw pointers; see mcp.engine.kernels)"},
    {"dequantize", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_dequantize)), METH_FASTCALL,
     "the values of a quantized W (raw pointers; see mcp.engine.kernels)"},
    {"interleave16", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_interleave16)), METH_FASTCALL,
     "GGUF Q4_0/Q4_1/Q4_K/Q6_K rows re-laid 16 rows at a time (raw pointers; see mcp.engine.kernels)"},
    {"gather16", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_gather16)), METH_FASTCALL,
     "rows of an x16 matrix by index, as fp32 (raw pointers; see mcp.engine.kernels)"},
    {"quantize", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_quantize)), METH_FASTCALL,
     "activation rows -> int8 blocks of 32 and scales (raw pointers; see mcp.engine.kernels)"},
    {"decode_step", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_decode_step)), METH_FASTCALL,
     "one decode step of a Llama-family decoder (Gemma 3, Qwen3, Qwen3-MoE) over a paged KV cache (raw pointers; "
     "see mcp.engine.models.llama_step)"},
    {"attend_group", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_attend_group)), METH_FASTCALL,
     "grouped-query attention of one row over a paged KV cache (raw pointers; see mcp.engine.kernels)"},
    {"to_halves", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_to_halves)), METH_FASTCALL,
     "floats to IEEE halves, as the decode step writes a KV cache of halves (raw pointers)"},
    {"isa", py_isa, METH_NOARGS, "the instruction set the kernels use"},
    {"set_isa", py_set_isa, METH_O, "force an instruction set: avx512, avx2 or scalar; False if unsupported"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cpu", "MCP 2026 CPU kernels", -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit__cpu() { return PyModule_Create(&module); }
