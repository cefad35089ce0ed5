/* mcp_infer: greedy tokens of argv[2] (raw) printed as "ids: 1 2 3", checked against usage. */
#include "check.h"

int main(int argc, char **argv) {
    mcp_session *session;
    mcp_model *model = open_model(argc, argv, &session);
    CHECK(argc >= 4);
    mcp_infer_options options = greedy_options(atoi(argv[3]));
    options.raw = 1;
    mcp_result *result;
    CHECK_OK(mcp_infer(model, argv[2], &options, &result));
    mcp_usage usage = mcp_result_usage(result);
    CHECK((size_t)usage.completion_tokens == mcp_result_num_tokens(result));
    CHECK(usage.prompt_tokens > 0);
    CHECK(mcp_result_timings(result).total_s > 0);
    printf("finish: %s\nids:", mcp_result_finish_reason(result));
    for (size_t i = 0; i < mcp_result_num_tokens(result); i++)
        printf(" %d", mcp_result_token_ids(result)[i]);
    printf("\ntext: %s\n", mcp_result_text(result));
    mcp_result_free(result);
    CHECK(mcp_api_version() == MCP_API_VERSION);
    CHECK_OK(mcp_model_unload(model));
    CHECK_OK(mcp_session_close(session));
    return 0;
}
