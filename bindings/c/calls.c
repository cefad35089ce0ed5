/* The C API's calls: sessions, models, and inference through mcp.runtime.
 *
 * Each call takes the GIL for its Python work only. Waiting for tokens happens inside Python
 * (a queue read), which releases the GIL, and a stream's callback runs with the GIL released,
 * so many threads' calls reach the model's engine loop together and are batched there. */
#include "internal.h"

#include <stdlib.h>

/* The common frame of every call: start the runtime, check out-pointers, take the GIL. */
#define BEGIN_CALL(check)                                                        \
    mcp_status status = lm_ensure_runtime();                                    \
    if (status != MCP_OK)                                                       \
        return status;                                                          \
    if (!(check))                                                               \
        return lm_fail(MCP_ERR_ARGUMENT, "%s: a required argument is NULL (%s)", \
                       __func__, #check);                                       \
    PyGILState_STATE gil = PyGILState_Ensure()

#define END_CALL()              \
    PyGILState_Release(gil);    \
    return status

mcp_status mcp_session_open(const char *config_path, mcp_session **out) {
    BEGIN_CALL(out);
    PyObject *session = py_bridge_call("open_session", Py_BuildValue("(z)", config_path));
    mcp_session *handle = session ? malloc(sizeof *handle) : NULL;
    if (handle) {
        handle->session = session;
        *out = handle;
    } else {
        Py_XDECREF(session);
        status = session ? lm_fail(MCP_ERR_INTERNAL, "out of memory") : py_error_status();
    }
    END_CALL();
}

mcp_status mcp_session_close(mcp_session *session) {
    BEGIN_CALL(session);
    PyObject *closed = PyObject_CallMethod(session->session, "close", NULL);
    status = closed ? MCP_OK : py_error_status();
    Py_XDECREF(closed);
    Py_DECREF(session->session);
    free(session);
    END_CALL();
}

mcp_status mcp_model_load(mcp_session *session, const char *model, mcp_model **out) {
    BEGIN_CALL(session && model && out);
    PyObject *loaded = py_bridge_call("load_model", Py_BuildValue("(Os)", session->session, model));
    mcp_model *handle = loaded ? malloc(sizeof *handle) : NULL;
    if (handle) {
        handle->session = Py_NewRef(session->session);
        handle->model = loaded;
        *out = handle;
    } else {
        Py_XDECREF(loaded);
        status = loaded ? lm_fail(MCP_ERR_INTERNAL, "out of memory") : py_error_status();
    }
    END_CALL();
}

mcp_status mcp_model_unload(mcp_model *model) {
    BEGIN_CALL(model);
    PyObject *done = py_bridge_call("unload_model", Py_BuildValue("(OO)", model->session, model->model));
    status = done ? MCP_OK : py_error_status();
    Py_XDECREF(done);
    Py_DECREF(model->model);
    Py_DECREF(model->session);
    free(model);
    END_CALL();
}

mcp_status mcp_model_stats(mcp_model *model, mcp_stats *out) {
    BEGIN_CALL(model && out);
    PyObject *stats = py_bridge_call("model_stats", Py_BuildValue("(O)", model->model));
    mcp_stats read;
    if (stats && PyArg_ParseTuple(stats, "LLLLLL", &read.num_steps, &read.max_sequences_in_step,
                                  &read.num_finished, &read.num_running, &read.num_waiting,
                                  &read.num_preemptions))
        *out = read;
    else
        status = py_error_status();
    Py_XDECREF(stats);
    END_CALL();
}

mcp_status mcp_cancel_new(mcp_cancel **out) {
    BEGIN_CALL(out);
    PyObject *token = py_bridge_call("CancelToken", NULL);
    mcp_cancel *handle = token ? malloc(sizeof *handle) : NULL;
    if (handle) {
        handle->token = token;
        *out = handle;
    } else {
        Py_XDECREF(token);
        status = token ? lm_fail(MCP_ERR_INTERNAL, "out of memory") : py_error_status();
    }
    END_CALL();
}

void mcp_cancel_fire(mcp_cancel *cancel) {
    if (!cancel || lm_ensure_runtime() != MCP_OK)
        return;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *done = PyObject_CallMethod(cancel->token, "cancel", NULL);
    if (!done)
        py_error_status();
    Py_XDECREF(done);
    PyGILState_Release(gil);
}

void mcp_cancel_free(mcp_cancel *cancel) {
    if (!cancel || lm_ensure_runtime() != MCP_OK)
        return;
    PyGILState_STATE gil = PyGILState_Ensure();
    Py_DECREF(cancel->token);
    PyGILState_Release(gil);
    free(cancel);
}
