/* Load, infer and unload the model several times in one session; a call on a model the
 * session closed under it fails with a clear error, and its handle still frees. */
#include "check.h"

int main(int argc, char **argv) {
    CHECK(argc >= 2);
    mcp_session *session;
    CHECK_OK(mcp_session_open(NULL, &session));
    mcp_infer_options options = greedy_options(4);
    for (int cycle = 0; cycle < 4; cycle++) {
        mcp_model *model;
        mcp_result *result;
        CHECK_OK(mcp_model_load(session, argv[1], &model));
        CHECK_OK(mcp_infer(model, "Hello", &options, &result));
        CHECK(mcp_result_num_tokens(result) == 4);
        mcp_result_free(result);
        CHECK_OK(mcp_model_unload(model));
    }
    mcp_model *orphan;
    mcp_result *result = NULL;
    CHECK_OK(mcp_model_load(session, argv[1], &orphan));
    CHECK_OK(mcp_session_close(session));
    CHECK(mcp_infer(orphan, "Hello", &options, &result) == MCP_ERR_INVALID_REQUEST);
    CHECK(strstr(mcp_last_error(), "unloaded") != NULL);
    CHECK(result == NULL);
    CHECK_OK(mcp_model_unload(orphan));
    puts("load_cycles: ok");
    return 0;
}
