/* What the C test programs share: a failing check prints where and why and exits 1. Each
 * program takes the model (.mcp path or catalog name) as argv[1].
 *
 * CHECK calls exit(), which destroys the process's C++ state (torch's included): use it only
 * where no other thread's call can be inside an engine step, or the engine loop crashes under
 * it (threads.c checks its workers' results after joining them). */
#ifndef MCP_TEST_CHECK_H
#define MCP_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mcp/mcp.h>

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, \
                    #cond, mcp_last_error());                                               \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

#define CHECK_OK(call) CHECK((call) == MCP_OK)

static inline mcp_model *open_model(int argc, char **argv, mcp_session **session) {
    CHECK(argc >= 2);
    mcp_model *model;
    CHECK_OK(mcp_session_open(NULL, session));
    CHECK_OK(mcp_model_load(*session, argv[1], &model));
    return model;
}

static inline mcp_infer_options greedy_options(int max_tokens) {
    mcp_infer_options options;
    mcp_infer_options_init(&options);
    options.max_tokens = max_tokens;
    options.temperature = 0;
    return options;
}

#endif
