/* Each error the C API can meet here comes back as its status code with a message that names
 * what was wrong, and the library keeps serving after it. */
#include <pthread.h>
#include <unistd.h>

#include "check.h"

#define EXPECT(call, status, text)                                                           \
    do {                                                                                     \
        mcp_status got = (call);                                                             \
        if (got != (status) || !strstr(mcp_last_error(), (text))) {                          \
            fprintf(stderr, "%s:%d: %s gave %s (%s), want %s mentioning \"%s\"\n", __FILE__, \
                    __LINE__, #call, mcp_status_name(got), mcp_last_error(), #status, (text)); \
            exit(1);                                                                         \
        }                                                                                    \
        printf("%s: %s\n", mcp_status_name(got), mcp_last_error());                          \
    } while (0)

static void *long_call(void *model) {
    mcp_infer_options options = greedy_options(2000);
    mcp_result *result = NULL;
    mcp_status status = mcp_infer(model, "Write a long story about a dragon.", &options, &result);
    printf("%s: %s\n", mcp_status_name(status), mcp_last_error());
    CHECK(status == MCP_ERR_CANCELLED && result == NULL);
    return NULL;
}

static void request_errors(mcp_model *model) {
    mcp_result *result;
    mcp_infer_options options = greedy_options(4);
    options.temperature = -1;
    EXPECT(mcp_infer(model, "hi", &options, &result), MCP_ERR_INVALID_REQUEST, "temperature");
    options = greedy_options(4);
    options.slo_class = "urgent";
    EXPECT(mcp_infer(model, "hi", &options, &result), MCP_ERR_INVALID_REQUEST, "urgent");
    options = greedy_options(4);
    size_t size = 200000;
    char *huge = malloc(size + 1);
    for (size_t i = 0; i < size; i++)
        huge[i] = i % 5 == 4 ? ' ' : 'a' + (char)(i % 7);
    huge[size] = '\0';
    EXPECT(mcp_infer(model, huge, &options, &result), MCP_ERR_CONTEXT_LENGTH, "context");
    free(huge);
    EXPECT(mcp_infer(model, "\xff\xfe bad", &options, &result), MCP_ERR_INVALID_REQUEST, "UTF-8");
    options.raw = 1;
    mcp_message message = {"user", "hi"};
    EXPECT(mcp_chat(model, &message, 1, &options, &result), MCP_ERR_INVALID_REQUEST, "raw");
    mcp_message no_role = {NULL, "hi"};
    options.raw = 0;
    EXPECT(mcp_chat(model, &no_role, 1, &options, &result), MCP_ERR_INVALID_REQUEST, "role");
}

static void argument_errors(mcp_model *model) {
    mcp_result *result;
    mcp_infer_options options;
    memset(&options, 0, sizeof options);
    EXPECT(mcp_infer(model, "hi", &options, &result), MCP_ERR_ARGUMENT, "mcp_infer_options_init");
    options = greedy_options(4);
    options.num_stop = 2;
    EXPECT(mcp_infer(model, "hi", &options, &result), MCP_ERR_ARGUMENT, "options.stop");
    EXPECT(mcp_infer(model, NULL, NULL, &result), MCP_ERR_ARGUMENT, "prompt");
    EXPECT(mcp_infer(model, "hi", NULL, NULL), MCP_ERR_ARGUMENT, "out");
    EXPECT(mcp_model_load(NULL, "x", NULL), MCP_ERR_ARGUMENT, "NULL");
}

int main(int argc, char **argv) {
    mcp_session *session;
    mcp_model *model;
    EXPECT(mcp_session_open("/nonexistent/mcp-config.yaml", &session), MCP_ERR_CONFIG, "/nonexistent/mcp-config.yaml");
    CHECK_OK(mcp_session_open(NULL, &session));
    EXPECT(mcp_model_load(session, "/nonexistent/model.mcp", &model), MCP_ERR_MODEL_NOT_FOUND, "model.mcp");
    CHECK(argc >= 3); /* argv[2]: a file that is not a model */
    EXPECT(mcp_model_load(session, argv[2], &model), MCP_ERR_MODEL_FORMAT, argv[2]);
    CHECK_OK(mcp_model_load(session, argv[1], &model));
    request_errors(model);
    argument_errors(model);
    mcp_infer_options options = greedy_options(3);
    mcp_result *result;
    CHECK_OK(mcp_infer(model, "still serving", &options, &result)); /* after all of that */
    CHECK(mcp_result_num_tokens(result) == 3 && mcp_last_error()[0] == '\0');
    mcp_result_free(result);
    pthread_t caller;
    CHECK(pthread_create(&caller, NULL, long_call, model) == 0);
    usleep(500 * 1000);
    CHECK_OK(mcp_model_unload(model)); /* ends the call under way with MCP_ERR_CANCELLED */
    pthread_join(caller, NULL);
    CHECK_OK(mcp_session_close(session));
    return 0;
}
