/*
 * mcp.h - the MCP 2026 runtime SDK in C (libmcp).
 *
 * libmcp embeds the Python interpreter of the venv it was built for and drives mcp.runtime
 * underneath, so a C program gets the same engine, scheduler, batching and errors as the Python
 * SDK. Nothing in this header is a Python type: handles are opaque, values are plain C.
 *
 *     mcp_session *session;  mcp_model *model;  mcp_result *result;
 *     if (mcp_session_open("mcp-config.yaml", &session) != MCP_OK) { puts(mcp_last_error()); ... }
 *     mcp_model_load(session, "smollm2-135m-instruct.mcp", &model);
 *     mcp_infer_options options;  mcp_infer_options_init(&options);
 *     options.max_tokens = 128;  options.temperature = 0.7;
 *     if (mcp_infer(model, "Explain quantum entanglement.", &options, &result) == MCP_OK)
 *         puts(mcp_result_text(result));
 *     mcp_result_free(result);  mcp_model_unload(model);  mcp_session_close(session);
 *
 * Threads: every function may be called from any thread, and many at once. Calls on one model
 * from several threads are batched together by its engine loop (continuous batching), exactly as
 * from Python; libmcp releases the interpreter's lock (GIL) while a call waits. End the process
 * (exit(), or returning from main) only when no call is under way: join the threads that call
 * libmcp first, or unload the models (mcp_model_unload waits for their calls). exit() runs the
 * C++ runtime's destructors under an engine step still running on another thread, which then
 * crashes (SIGSEGV); a thread that must end the process at once can call _exit() instead.
 *
 * Errors: a function that fails returns a status other than MCP_OK, which says the kind of error
 * (they mirror the Python SDK's MCPError classes), and mcp_last_error() gives, on the same
 * thread, the message that says what was wrong. Out-parameters are left untouched on failure.
 *
 * The interpreter: libmcp uses the Python of the venv it was built for, or the one named by the
 * environment variable MCP_PYTHON (a venv's bin/python with mcp2026 installed). When it cannot
 * start it or import mcp.runtime, every call returns MCP_ERR_RUNTIME with a message saying why.
 * PYTHONPATH is honoured. The interpreter lives until the process exits.
 */
#ifndef MCP_MCP_H
#define MCP_MCP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The API version this header describes: major * 10000 + minor * 100 + patch. A program built
 * against one major version runs with any libmcp of that major version and a minor at least its. */
#define MCP_API_VERSION_MAJOR 1
#define MCP_API_VERSION_MINOR 0
#define MCP_API_VERSION_PATCH 0
#define MCP_API_VERSION (MCP_API_VERSION_MAJOR * 10000 + MCP_API_VERSION_MINOR * 100 + MCP_API_VERSION_PATCH)

/* The MCP_API_VERSION of the libmcp loaded at run time. */
int mcp_api_version(void);

/* Status codes. Each MCP_ERR_* mirrors one class of the Python SDK's error hierarchy
 * (mcp.base.errors); a subclass has its own code (MCP_ERR_CONTEXT_LENGTH is also an invalid
 * request, MCP_ERR_UNSUPPORTED_MODEL also a model format error). */
typedef enum mcp_status {
    MCP_OK = 0,
    MCP_ERR_MCP = 1,                /* MCPError: an MCP error of no more specific class below */
    MCP_ERR_CONFIG = 2,             /* ConfigError: a config file or value is wrong */
    MCP_ERR_MODEL_NOT_FOUND = 3,    /* ModelNotFoundError: no such model path or catalog name */
    MCP_ERR_MODEL_FORMAT = 4,       /* ModelFormatError: corrupt, truncated or foreign model file */
    MCP_ERR_UNSUPPORTED_MODEL = 5,  /* UnsupportedModelError: an architecture this engine cannot run */
    MCP_ERR_INVALID_REQUEST = 6,    /* InvalidRequestError: a bad argument, named in the message */
    MCP_ERR_CONTEXT_LENGTH = 7,     /* ContextLengthError: the prompt does not fit the context */
    MCP_ERR_DOWNLOAD = 8,           /* DownloadError: fetching a catalog model failed */
    MCP_ERR_CAPACITY = 9,           /* CapacityError: the engine refuses new work now; retry later */
    MCP_ERR_POLICY_DENIED = 10,     /* PolicyDenied: a governance policy refused the request */
    MCP_ERR_ENGINE = 11,            /* EngineError: a forward or sampling step failed */
    MCP_ERR_MODEL_SIGNATURE = 12,   /* ModelSignatureError: a required signature does not verify */
    MCP_ERR_CANCELLED = 13,         /* RequestCancelled: ended by unload/close before it finished */
    MCP_ERR_WORKER_UNAVAILABLE = 14,/* WorkerUnavailableError: an isolated worker crashed */
    MCP_ERR_RUNTIME = 15,           /* libmcp could not start its interpreter or import mcp.runtime */
    MCP_ERR_INTERNAL = 16,          /* an unexpected error inside the runtime (a bug: please report) */
    MCP_ERR_ARGUMENT = 17           /* ArgumentError: a C argument is wrong (a NULL pointer, options not initialised) */
} mcp_status;

/* The message of the last failed call on this thread ("" when none). Valid until the next call
 * on this thread. */
const char *mcp_last_error(void);

/* The status code's name, e.g. "MCP_ERR_CONFIG". */
const char *mcp_status_name(mcp_status status);

typedef struct mcp_session mcp_session; /* owns a config and the models it loaded */
typedef struct mcp_model mcp_model;     /* a loaded model; its calls are batched together */
typedef struct mcp_result mcp_result;   /* the outcome of one call; free with mcp_result_free */
typedef struct mcp_cancel mcp_cancel;   /* a cancel signal for calls under way */

/* Open a session from an mcp-config.yaml (docs/config.md); NULL takes the built-in defaults. */
mcp_status mcp_session_open(const char *config_path, mcp_session **out);

/* Unload the session's models and free the session. Model handles stay valid until
 * mcp_model_unload frees them; calls on them then fail with MCP_ERR_INVALID_REQUEST. */
mcp_status mcp_session_close(mcp_session *session);

/* Load a model: a .mcp path (relative to the config's model_dir), or a catalog name
 * (fetched and compiled on first use). */
mcp_status mcp_model_load(mcp_session *session, const char *model, mcp_model **out);

/* Unload the model (calls still running end with MCP_ERR_CANCELLED) and free the handle. */
mcp_status mcp_model_unload(mcp_model *model);

/* Options of one call. Initialise with mcp_infer_options_init: every field then means "the
 * session's default" (MCP_UNSET_INT, MCP_UNSET_REAL (NaN), NULL), and set only what you need. */
#define MCP_UNSET_INT (-1)
#define MCP_UNSET_REAL (__builtin_nan(""))
typedef struct mcp_infer_options {
    uint32_t struct_size;     /* sizeof(mcp_infer_options), set by init: lets the struct grow */
    int32_t max_tokens;       /* tokens to generate at most */
    double temperature;       /* 0: greedy */
    double top_p;
    int32_t top_k;            /* 0: off */
    int64_t seed;             /* a seeded call draws the same tokens again; used when has_seed */
    int has_seed;
    const char *const *stop;  /* stop strings (num_stop of them) */
    size_t num_stop;
    const char *slo_class;    /* "critical", "high", "medium" or "low" */
    const char *tenant;
    double timeout_s;         /* the request then ends with finish reason "deadline" */
    int raw;                  /* 1: tokenize the prompt as is, without the chat template */
    const char *system;       /* a system message (prompt calls only) */
    mcp_cancel *cancel;       /* mcp_cancel_fire on it ends the call with finish reason "cancelled" */
} mcp_infer_options;

void mcp_infer_options_init(mcp_infer_options *options);

/* One chat message: role ("system", "user", "assistant") and content. */
typedef struct mcp_message {
    const char *role;
    const char *content;
} mcp_message;

/* Complete a prompt (options may be NULL: all defaults). Blocks until the request ends. */
mcp_status mcp_infer(mcp_model *model, const char *prompt, const mcp_infer_options *options,
                     mcp_result **out);

/* Answer a conversation through the model's chat template (options.raw/system do not apply). */
mcp_status mcp_chat(mcp_model *model, const mcp_message *messages, size_t num_messages,
                    const mcp_infer_options *options, mcp_result **out);

/* Called with each text delta (UTF-8, len bytes, also NUL-terminated) as it is generated, on the
 * calling thread. Return 0 to go on, anything else to cancel: the call then ends with finish
 * reason "cancelled". The delta is valid only during the call. */
typedef int (*mcp_delta_fn)(const char *delta, size_t len, void *user_data);

/* mcp_infer and mcp_chat handing each delta to on_delta; *out (may be NULL) gets the result. */
mcp_status mcp_infer_stream(mcp_model *model, const char *prompt, const mcp_infer_options *options,
                            mcp_delta_fn on_delta, void *user_data, mcp_result **out);
mcp_status mcp_chat_stream(mcp_model *model, const mcp_message *messages, size_t num_messages,
                           const mcp_infer_options *options, mcp_delta_fn on_delta, void *user_data,
                           mcp_result **out);

/* Token counts of a result. */
typedef struct mcp_usage {
    int64_t prompt_tokens;
    int64_t completion_tokens;
    int64_t cached_tokens; /* prompt tokens the prefix cache supplied */
} mcp_usage;

/* Seconds from submission. queue_s < 0: never left the queue. */
typedef struct mcp_timings {
    double ttft_s;  /* to the first token */
    double tpot_s;  /* mean per output token after the first */
    double total_s;
    double queue_s;
} mcp_timings;

const char *mcp_result_text(const mcp_result *result);          /* UTF-8, NUL-terminated */
size_t mcp_result_num_tokens(const mcp_result *result);
const int32_t *mcp_result_token_ids(const mcp_result *result);  /* num_tokens ids */
const char *mcp_result_finish_reason(const mcp_result *result); /* stop, length, cancelled, deadline */
mcp_usage mcp_result_usage(const mcp_result *result);
mcp_timings mcp_result_timings(const mcp_result *result);
void mcp_result_free(mcp_result *result); /* NULL is fine */

/* A cancel signal: pass it in options.cancel to any number of calls, fire it from any thread. */
mcp_status mcp_cancel_new(mcp_cancel **out);
void mcp_cancel_fire(mcp_cancel *cancel);
void mcp_cancel_free(mcp_cancel *cancel); /* only once no call uses it; NULL is fine */

/* The model's engine loop counters since it loaded. max_sequences_in_step > 1 shows that
 * concurrent calls ran in one batched step. */
typedef struct mcp_stats {
    int64_t num_steps;
    int64_t max_sequences_in_step;
    int64_t num_finished;
    int64_t num_running;
    int64_t num_waiting;
    int64_t num_preemptions;
} mcp_stats;

mcp_status mcp_model_stats(mcp_model *model, mcp_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* MCP_MCP_H */
