/* Inference calls: one request path for infer, chat and their streaming forms.
 *
 * A call queues a TextStream in Python, then either waits for its end (infer, chat) or reads
 * it delta by delta, handing each to the caller's callback with the GIL released (streams). */
#include "internal.h"

/* What one call asks for: a prompt or a conversation, its options, its callback. */
typedef struct call {
    mcp_model *model;
    PyObject *prompt;   /* str, or None for a chat */
    PyObject *messages; /* list of dicts, or None for a prompt */
    const mcp_infer_options *options;
    mcp_delta_fn on_delta; /* NULL: wait for the end */
    void *user_data;
} call;

static PyObject *cancel_token(const mcp_infer_options *options) {
    return options && options->cancel ? options->cancel->token : Py_None;
}

/* Hand each delta to the callback, the GIL released while it runs. Returns 1 when the stream
 * is read to its end, 0 with a Python error set. */
static int pump(PyObject *stream, mcp_delta_fn on_delta, void *user_data) {
    for (;;) {
        PyObject *delta = py_bridge_call("next_delta", Py_BuildValue("(O)", stream));
        if (!delta)
            return 0;
        if (delta == Py_None) {
            Py_DECREF(delta);
            return 1;
        }
        Py_ssize_t size;
        const char *text = PyUnicode_AsUTF8AndSize(delta, &size); /* lives as long as delta */
        int stop = 0;
        if (text) {
            Py_BEGIN_ALLOW_THREADS
            stop = on_delta(text, (size_t)size, user_data);
            Py_END_ALLOW_THREADS
        }
        Py_DECREF(delta);
        if (!text)
            return 0;
        if (stop) { /* cancel, then read the rest without handing it out */
            PyObject *cancelled = py_bridge_call("cancel_stream", Py_BuildValue("(O)", stream));
            Py_XDECREF(cancelled);
            PyObject *ended = cancelled ? py_bridge_call("run_to_end", Py_BuildValue("(O)", stream)) : NULL;
            Py_XDECREF(ended);
            return ended != NULL;
        }
    }
}

/* Queue the request, read it to its end, and copy its result (GIL held). */
static mcp_status run(const call *c, mcp_result **out) {
    PyObject *options = py_options_dict(c->options);
    if (!options)
        return py_error_status();
    PyObject *token = cancel_token(c->options);
    PyObject *stream = py_bridge_call("start_stream", Py_BuildValue("(OOONO)", c->model->model, c->prompt,
                                                                    c->messages, options, token));
    if (!stream)
        return py_error_status();
    int read = 0;
    if (c->on_delta) {
        read = pump(stream, c->on_delta, c->user_data);
    } else {
        PyObject *ended = py_bridge_call("run_to_end", Py_BuildValue("(O)", stream));
        read = ended != NULL;
        Py_XDECREF(ended);
    }
    PyObject *flat = read ? py_bridge_call("finish", Py_BuildValue("(OO)", stream, token)) : NULL;
    if (!read) { /* an error ended it: make sure nothing keeps generating */
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        Py_XDECREF(py_bridge_call("cancel_stream", Py_BuildValue("(O)", stream)));
        PyErr_Clear();
        PyErr_Restore(type, value, traceback);
    }
    Py_DECREF(stream);
    mcp_result *result = flat ? py_result_from_tuple(flat) : NULL;
    Py_XDECREF(flat);
    if (!result)
        return py_error_status();
    if (out)
        *out = result;
    else
        mcp_result_free(result);
    return MCP_OK;
}

static mcp_status run_prompt(call *c, const char *prompt, mcp_result **out) {
    mcp_status status = lm_ensure_runtime();
    if (status != MCP_OK)
        return status;
    if (!c->model || !prompt)
        return lm_fail(MCP_ERR_ARGUMENT, "the model handle and the prompt must not be NULL");
    PyGILState_STATE gil = PyGILState_Ensure();
    c->prompt = PyUnicode_FromString(prompt);
    c->messages = Py_None;
    status = c->prompt ? run(c, out) : py_error_status();
    Py_XDECREF(c->prompt);
    PyGILState_Release(gil);
    return status;
}

static mcp_status run_chat(call *c, const mcp_message *messages, size_t num_messages, mcp_result **out) {
    mcp_status status = lm_ensure_runtime();
    if (status != MCP_OK)
        return status;
    if (!c->model)
        return lm_fail(MCP_ERR_ARGUMENT, "the model handle must not be NULL");
    PyGILState_STATE gil = PyGILState_Ensure();
    c->prompt = Py_None;
    c->messages = py_messages_list(messages, num_messages);
    status = c->messages ? run(c, out) : py_error_status();
    Py_XDECREF(c->messages);
    PyGILState_Release(gil);
    return status;
}

mcp_status mcp_infer(mcp_model *model, const char *prompt, const mcp_infer_options *options,
                     mcp_result **out) {
    if (!out)
        return lm_fail(MCP_ERR_ARGUMENT, "mcp_infer: out must not be NULL");
    call c = {model, NULL, NULL, options, NULL, NULL};
    return run_prompt(&c, prompt, out);
}

mcp_status mcp_chat(mcp_model *model, const mcp_message *messages, size_t num_messages,
                    const mcp_infer_options *options, mcp_result **out) {
    if (!out)
        return lm_fail(MCP_ERR_ARGUMENT, "mcp_chat: out must not be NULL");
    call c = {model, NULL, NULL, options, NULL, NULL};
    return run_chat(&c, messages, num_messages, out);
}

mcp_status mcp_infer_stream(mcp_model *model, const char *prompt, const mcp_infer_options *options,
                            mcp_delta_fn on_delta, void *user_data, mcp_result **out) {
    if (!on_delta)
        return lm_fail(MCP_ERR_ARGUMENT, "mcp_infer_stream: on_delta must not be NULL");
    call c = {model, NULL, NULL, options, on_delta, user_data};
    return run_prompt(&c, prompt, out);
}

mcp_status mcp_chat_stream(mcp_model *model, const mcp_message *messages, size_t num_messages,
                           const mcp_infer_options *options, mcp_delta_fn on_delta, void *user_data,
                           mcp_result **out) {
    if (!on_delta)
        return lm_fail(MCP_ERR_ARGUMENT, "mcp_chat_stream: on_delta must not be NULL");
    call c = {model, NULL, NULL, options, on_delta, user_data};
    return run_chat(&c, messages, num_messages, out);
}
