/* mcp_chat and mcp_chat_stream answer a conversation through the chat template. */
#include "check.h"

static int append(const char *delta, size_t len, void *user_data) {
    (void)len;
    strncat(user_data, delta, 4095 - strlen(user_data));
    return 0;
}

int main(int argc, char **argv) {
    mcp_session *session;
    mcp_model *model = open_model(argc, argv, &session);
    mcp_message messages[] = {
        {"system", "You answer in one word."},
        {"user", "What is the capital of France?"},
    };
    mcp_infer_options options = greedy_options(8);
    mcp_result *result;
    CHECK_OK(mcp_chat(model, messages, 2, &options, &result));
    CHECK(strstr(mcp_result_text(result), "Paris") != NULL);
    CHECK(mcp_result_usage(result).prompt_tokens > 10);
    char streamed[4096] = "";
    mcp_result *streamed_result;
    CHECK_OK(mcp_chat_stream(model, messages, 2, &options, append, streamed, &streamed_result));
    CHECK(strcmp(streamed, mcp_result_text(result)) == 0);
    CHECK(strcmp(mcp_result_text(streamed_result), mcp_result_text(result)) == 0);
    printf("chat: %s\n", mcp_result_text(result));
    mcp_result_free(result);
    mcp_result_free(streamed_result);
    CHECK_OK(mcp_model_unload(model));
    CHECK_OK(mcp_session_close(session));
    return 0;
}
