/* Plain C values to and from the bridge: call options, chat messages, results. */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct mcp_result {
    char *text;
    int32_t *token_ids;
    size_t num_tokens;
    char finish_reason[32];
    mcp_usage usage;
    mcp_timings timings;
};

void mcp_infer_options_init(mcp_infer_options *options) {
    if (!options)
        return;
    memset(options, 0, sizeof *options);
    options->struct_size = sizeof *options;
    options->max_tokens = MCP_UNSET_INT;
    options->temperature = MCP_UNSET_REAL;
    options->top_p = MCP_UNSET_REAL;
    options->top_k = MCP_UNSET_INT;
    options->timeout_s = MCP_UNSET_REAL;
}

/* dict[key] = value, stealing value; 0 (a Python error set) when either failed. */
static int put(PyObject *dict, const char *key, PyObject *value) {
    int ok = value && PyDict_SetItemString(dict, key, value) == 0;
    Py_XDECREF(value);
    return ok;
}

static PyObject *string_list(const char *const *strings, size_t count, const char *what) {
    if (!strings && count) {
        PyErr_Format(lm_argument_error, "%s is NULL but its count is %zu", what, count);
        return NULL;
    }
    PyObject *list = PyList_New((Py_ssize_t)count);
    for (size_t i = 0; list && i < count; i++) {
        PyObject *item = strings[i] ? PyUnicode_FromString(strings[i]) : NULL;
        if (!item) {
            if (!PyErr_Occurred())
                PyErr_Format(lm_argument_error, "%s[%zu] is NULL", what, i);
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static int put_numbers(PyObject *dict, const mcp_infer_options *o) {
    return (o->max_tokens == MCP_UNSET_INT || put(dict, "max_tokens", PyLong_FromLong(o->max_tokens)))
        && (isnan(o->temperature) || put(dict, "temperature", PyFloat_FromDouble(o->temperature)))
        && (isnan(o->top_p) || put(dict, "top_p", PyFloat_FromDouble(o->top_p)))
        && (o->top_k == MCP_UNSET_INT || put(dict, "top_k", PyLong_FromLong(o->top_k)))
        && (!o->has_seed || put(dict, "seed", PyLong_FromLongLong(o->seed)))
        && (isnan(o->timeout_s) || put(dict, "timeout", PyFloat_FromDouble(o->timeout_s)));
}

static int put_texts(PyObject *dict, const mcp_infer_options *o) {
    return (!o->num_stop || put(dict, "stop", string_list(o->stop, o->num_stop, "options.stop")))
        && (!o->slo_class || put(dict, "slo_class", PyUnicode_FromString(o->slo_class)))
        && (!o->tenant || put(dict, "tenant", PyUnicode_FromString(o->tenant)))
        && (!o->raw || put(dict, "raw", Py_NewRef(Py_True)))
        && (!o->system || put(dict, "system", PyUnicode_FromString(o->system)));
}

PyObject *py_options_dict(const mcp_infer_options *options) {
    PyObject *dict = PyDict_New();
    if (!dict || !options)
        return dict;
    if (options->struct_size != sizeof *options) {
        PyErr_Format(lm_argument_error, "options.struct_size is %u, not %zu: initialise the options "
                     "with mcp_infer_options_init", options->struct_size, sizeof *options);
        Py_DECREF(dict);
        return NULL;
    }
    if (!put_numbers(dict, options) || !put_texts(dict, options))
        Py_CLEAR(dict);
    return dict;
}

PyObject *py_messages_list(const mcp_message *messages, size_t num_messages) {
    if (!messages && num_messages) {
        PyErr_Format(lm_argument_error, "messages is NULL but num_messages is %zu", num_messages);
        return NULL;
    }
    PyObject *list = PyList_New((Py_ssize_t)num_messages);
    for (size_t i = 0; list && i < num_messages; i++) {
        PyObject *message = Py_BuildValue("{s:z,s:z}", "role", messages[i].role, "content", messages[i].content);
        if (!message) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, message);
    }
    return list;
}

static int copy_token_ids(mcp_result *result, PyObject *ids) {
    Py_ssize_t count = PyList_Size(ids);
    if (count < 0)
        return 0;
    result->num_tokens = (size_t)count;
    result->token_ids = malloc(sizeof(int32_t) * (count ? (size_t)count : 1));
    if (!result->token_ids) {
        PyErr_NoMemory();
        return 0;
    }
    for (Py_ssize_t i = 0; i < count; i++)
        result->token_ids[i] = (int32_t)PyLong_AsLong(PyList_GET_ITEM(ids, i));
    return !PyErr_Occurred();
}

mcp_result *py_result_from_tuple(PyObject *flat) {
    const char *text, *reason;
    Py_ssize_t text_len;
    PyObject *ids;
    mcp_result *result = calloc(1, sizeof *result);
    if (!result)
        return (mcp_result *)PyErr_NoMemory();
    if (!PyArg_ParseTuple(flat, "s#O!sLLLdddd", &text, &text_len, &PyList_Type, &ids, &reason,
                          &result->usage.prompt_tokens, &result->usage.completion_tokens,
                          &result->usage.cached_tokens, &result->timings.ttft_s, &result->timings.tpot_s,
                          &result->timings.total_s, &result->timings.queue_s)
        || !copy_token_ids(result, ids) || !(result->text = malloc((size_t)text_len + 1))) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        mcp_result_free(result);
        return NULL;
    }
    memcpy(result->text, text, (size_t)text_len + 1);
    snprintf(result->finish_reason, sizeof result->finish_reason, "%s", reason);
    return result;
}

const char *mcp_result_text(const mcp_result *result) { return result ? result->text : ""; }
size_t mcp_result_num_tokens(const mcp_result *result) { return result ? result->num_tokens : 0; }
const int32_t *mcp_result_token_ids(const mcp_result *result) { return result ? result->token_ids : NULL; }
const char *mcp_result_finish_reason(const mcp_result *result) { return result ? result->finish_reason : ""; }

mcp_usage mcp_result_usage(const mcp_result *result) {
    mcp_usage none = {0, 0, 0};
    return result ? result->usage : none;
}

mcp_timings mcp_result_timings(const mcp_result *result) {
    mcp_timings none = {0, 0, 0, -1};
    return result ? result->timings : none;
}

void mcp_result_free(mcp_result *result) {
    if (!result)
        return;
    free(result->text);
    free(result->token_ids);
    free(result);
}
