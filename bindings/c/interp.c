/* The embedded interpreter: found, started once, and its errors turned into status codes.
 *
 * libmcp runs the Python of the venv it was built for (MCP_DEFAULT_PYTHON, set by the build) or
 * the one MCP_PYTHON names, so that `import mcp.runtime` finds the installed package and its
 * dependencies (torch, tokenizers). Starting it from a venv's bin/python makes Python read the
 * venv's pyvenv.cfg, as running that python would. */
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef MCP_DEFAULT_PYTHON
#error "build with -DMCP_DEFAULT_PYTHON=\"/path/to/venv/bin/python\" (bindings/c/build.sh does)"
#endif

#define MESSAGE_SIZE 2048

static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static mcp_status runtime_status = MCP_ERR_RUNTIME;
static char runtime_error[MESSAGE_SIZE];
static PyObject *bridge; /* mcp.runtime.embedded */
PyObject *lm_argument_error;
/* A fixed buffer, not a malloc'd string: nothing to free when a thread ends. */
static __thread char last_error[MESSAGE_SIZE];

const char *mcp_last_error(void) { return last_error; }

void lm_clear_error(void) { last_error[0] = '\0'; }

mcp_status lm_fail(mcp_status status, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(last_error, sizeof last_error, format, args);
    va_end(args);
    return status;
}

static const char *python_path(void) {
    const char *named = getenv("MCP_PYTHON");
    return named && *named ? named : MCP_DEFAULT_PYTHON;
}

/* Say why the interpreter cannot be used, once, for every later call. */
static void runtime_failed(const char *format, const char *detail) {
    snprintf(runtime_error, sizeof runtime_error, format, python_path(), detail);
    runtime_status = MCP_ERR_RUNTIME;
}

/* The message of the Python error now set ("Type: text"), cleared. */
static void take_python_error(char *buffer, size_t size) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    PyObject *text = value ? PyObject_Str(value) : NULL;
    const char *name = type ? ((PyTypeObject *)type)->tp_name : "error";
    snprintf(buffer, size, "%s: %s", name, text ? PyUnicode_AsUTF8(text) : "(no message)");
    PyErr_Clear();
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
}

static int start_interpreter(const char *python) {
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0; /* the host program (a Go runtime, say) owns signals */
    config.parse_argv = 0;
    PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, python);
    if (!PyStatus_Exception(status))
        status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        runtime_failed("libmcp: could not start the Python interpreter %s: %s",
                       status.err_msg ? status.err_msg : "unknown error");
        return 0;
    }
    return 1;
}

static int import_bridge(void) {
    bridge = PyImport_ImportModule("mcp.runtime.embedded");
    if (bridge && (lm_argument_error = PyObject_GetAttrString(bridge, "ArgumentError")))
        return 1;
    char detail[MESSAGE_SIZE / 2];
    take_python_error(detail, sizeof detail);
    runtime_failed("libmcp: the interpreter %s cannot import mcp.runtime (%s); install mcp2026 in "
                   "its venv, or set MCP_PYTHON to the bin/python of a venv that has it", detail);
    return 0;
}

static void start_runtime(void) {
    const char *python = python_path();
    if (!Py_IsInitialized()) { /* a Python host (ctypes) has one running already */
        if (access(python, X_OK) != 0) {
            runtime_failed("libmcp: no Python interpreter at %s (%s); set MCP_PYTHON to the "
                           "bin/python of a venv with mcp2026 installed, or rebuild libmcp (make libmcp)",
                           strerror(errno));
            return;
        }
        if (!start_interpreter(python))
            return;
        int imported = import_bridge();
        PyEval_SaveThread(); /* hand the GIL back: every call takes it with PyGILState_Ensure */
        runtime_status = imported ? MCP_OK : MCP_ERR_RUNTIME;
        return;
    }
    PyGILState_STATE gil = PyGILState_Ensure();
    runtime_status = import_bridge() ? MCP_OK : MCP_ERR_RUNTIME;
    PyGILState_Release(gil);
}

mcp_status lm_ensure_runtime(void) {
    pthread_once(&start_once, start_runtime);
    if (runtime_status != MCP_OK)
        return lm_fail(runtime_status, "%s", runtime_error);
    lm_clear_error();
    return MCP_OK;
}

PyObject *py_bridge_call(const char *name, PyObject *args) {
    PyObject *function = PyObject_GetAttrString(bridge, name);
    PyObject *result = function ? PyObject_CallObject(function, args) : NULL;
    Py_XDECREF(function);
    Py_XDECREF(args);
    return result;
}

mcp_status py_error_status(void) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    PyObject *described = py_bridge_call("describe_error", Py_BuildValue("(N)", value ? value : Py_NewRef(Py_None)));
    long code = MCP_ERR_INTERNAL;
    const char *message = NULL;
    if (described && PyArg_ParseTuple(described, "ls", &code, &message)) {
        lm_fail((mcp_status)code, "%s", message);
    } else {
        take_python_error(last_error, sizeof last_error);
    }
    Py_XDECREF(described);
    return (mcp_status)code;
}

int mcp_api_version(void) { return MCP_API_VERSION; }

const char *mcp_status_name(mcp_status status) {
    static const char *const names[] = {
        "MCP_OK", "MCP_ERR_MCP", "MCP_ERR_CONFIG", "MCP_ERR_MODEL_NOT_FOUND", "MCP_ERR_MODEL_FORMAT",
        "MCP_ERR_UNSUPPORTED_MODEL", "MCP_ERR_INVALID_REQUEST", "MCP_ERR_CONTEXT_LENGTH",
        "MCP_ERR_DOWNLOAD", "MCP_ERR_CAPACITY", "MCP_ERR_POLICY_DENIED", "MCP_ERR_ENGINE",
        "MCP_ERR_MODEL_SIGNATURE", "MCP_ERR_CANCELLED", "MCP_ERR_WORKER_UNAVAILABLE",
        "MCP_ERR_RUNTIME", "MCP_ERR_INTERNAL", "MCP_ERR_ARGUMENT",
    };
    if ((int)status < 0 || (size_t)status >= sizeof names / sizeof names[0])
        return "MCP_ERR_UNKNOWN_STATUS";
    return names[status];
}
