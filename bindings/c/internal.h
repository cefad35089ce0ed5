/* What the parts of libmcp share: the embedded interpreter, errors, and the handles' layout.
 * Every function named py_* must be called with the GIL held; lm_* are
 * libmcp's own helpers (not exported: libmcp.map exports mcp_* only). */
#ifndef MCP_INTERNAL_H
#define MCP_INTERNAL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "mcp/mcp.h"

struct mcp_session {
    PyObject *session; /* mcp.runtime.Session */
};

struct mcp_model {
    PyObject *session; /* the Session that loaded it (a strong reference) */
    PyObject *model;   /* mcp.runtime.Model */
};

struct mcp_cancel {
    PyObject *token;   /* mcp.runtime.embedded.CancelToken */
};

/* Start the interpreter once (any thread) and say whether it is usable; MCP_ERR_RUNTIME with
 * the reason in mcp_last_error() when not. */
mcp_status lm_ensure_runtime(void);

/* Call mcp.runtime.embedded.<name>(*args) (args is stolen; NULL means no arguments). Returns a
 * new reference, or NULL with the Python error still set. */
PyObject *py_bridge_call(const char *name, PyObject *args);

/* mcp.runtime.embedded.ArgumentError: raise it (PyErr_Format) for a wrong C argument. */
extern PyObject *lm_argument_error;

/* Turn the Python error now set into a status and this thread's message, and clear it. */
mcp_status py_error_status(void);

/* Set this thread's message (printf-style) and return status. */
mcp_status lm_fail(mcp_status status, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* Clear this thread's message: a call that succeeds leaves "" behind. */
void lm_clear_error(void);

/* The Python keyword options of a call, or NULL with a Python error set. */
PyObject *py_options_dict(const mcp_infer_options *options);

/* A list of {"role", "content"} dicts, or NULL with a Python error set. */
PyObject *py_messages_list(const mcp_message *messages, size_t num_messages);

/* A C result copied from the bridge's flat tuple, or NULL with a Python error set. */
mcp_result *py_result_from_tuple(PyObject *flat);

#endif
