// The Python module mcp.engine.kernels._cpu: raw-pointer entry points for the kernels.
//
// The Python side (mcp/engine/kernels/__init__.py) checks every tensor's dtype, shape and
// contiguity and passes data pointers; nothing here can check them again. The GIL is
// released while a kernel runs.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <vector>

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

// matmul(kind, x, x_bf16, M, K, N, codes, qparams, qparams_f16, out, out_bf16, num_threads, int8_dots)
PyObject* py_matmul(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  long long v[13];
  if (!read_ints(args, nargs, 13, v)) return nullptr;
  MatmulArgs a{static_cast<WeightKind>(v[0]), nullptr, v[3], v[4], v[5], nullptr,
               reinterpret_cast<const void*>(v[6]), reinterpret_cast<const void*>(v[7]), v[8] != 0,
               reinterpret_cast<void*>(v[9]), v[10] != 0, v[12] != 0};
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

// dequantize(kind, codes, qparams, qparams_f16, N, K, out, out_bf16, num_threads)
PyObject* py_dequantize(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  long long v[9];
  if (!read_ints(args, nargs, 9, v)) return nullptr;
  DequantArgs a{static_cast<WeightKind>(v[0]), reinterpret_cast<const void*>(v[1]),
                reinterpret_cast<const void*>(v[2]), v[3] != 0, v[4], v[5], reinterpret_cast<void*>(v[6]), v[7] != 0};
  const int num_threads = static_cast<int>(v[8]);
  Py_BEGIN_ALLOW_THREADS
  mcp_kernels::dequantize(a, num_threads);
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

// quantize(x, M, K, q, d): fp32 rows -> int8 blocks of 32 and their scales (tests read them)
PyObject* py_quantize(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  long long v[5];
  if (!read_ints(args, nargs, 5, v)) return nullptr;
  Py_BEGIN_ALLOW_THREADS
  mcp_kernels::quantize_rows(reinterpret_cast<const float*>(v[0]), v[1], v[2], reinterpret_cast<int8_t*>(v[3]),
                             reinterpret_cast<float*>(v[4]));
  Py_END_ALLOW_THREADS
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
    {"quantize", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_quantize)), METH_FASTCALL,
     "activation rows -> int8 blocks of 32 and scales (raw pointers; see mcp.engine.kernels)"},
    {"isa", py_isa, METH_NOARGS, "the instruction set the kernels use"},
    {"set_isa", py_set_isa, METH_O, "force an instruction set: avx512, avx2 or scalar; False if unsupported"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cpu", "MCP 2026 CPU kernels", -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit__cpu() { return PyModule_Create(&module); }
