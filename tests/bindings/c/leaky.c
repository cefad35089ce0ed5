/* The leak check's control: a caller that never frees its result. AddressSanitizer must report
 * that leak inside libmcp (tests/bindings/test_c_leaks.py), or the check proves nothing. */
#include "check.h"

int main(int argc, char **argv) {
    mcp_session *session;
    mcp_model *model = open_model(argc, argv, &session);
    mcp_infer_options options = greedy_options(2);
    mcp_result *result;
    CHECK_OK(mcp_infer(model, "Hello", &options, &result));
    result = NULL; /* dropped without mcp_result_free */
    CHECK_OK(mcp_model_unload(model));
    CHECK_OK(mcp_session_close(session));
    return 0;
}
