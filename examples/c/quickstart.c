/* The product brief's quickstart in C: open a session, load the default model, ask it.
 * Build and run: make demo && build/examples/c-quickstart
 * (or: cc examples/c/quickstart.c $(pkg-config --cflags --libs build/libmcp/mcp.pc)) */
#include <stdio.h>

#include <mcp/mcp.h>

static int fail(const char *what, mcp_status status) {
    fprintf(stderr, "%s failed: %s: %s\n", what, mcp_status_name(status), mcp_last_error());
    return 1;
}

int main(void) {
    mcp_session *session;
    mcp_model *model;
    mcp_result *result;
    /* Initialize an MCP inference session (configure mcp-config.yaml first) */
    mcp_status status = mcp_session_open("mcp-config.yaml", &session);
    if (status != MCP_OK)
        return fail("mcp_session_open", status);
    /* Load the compiled model (.mcp format); `make demo` pulled and compiled it */
    if ((status = mcp_model_load(session, "smollm2-135m-instruct.mcp", &model)) != MCP_OK)
        return fail("mcp_model_load", status);
    /* Run inference (the best backend is chosen automatically) */
    mcp_infer_options options;
    mcp_infer_options_init(&options);
    options.max_tokens = 128;
    options.temperature = 0.7;
    status = mcp_infer(model, "Explain quantum entanglement in simple terms.", &options, &result);
    if (status != MCP_OK)
        return fail("mcp_infer", status);
    printf("%s\n", mcp_result_text(result));
    mcp_result_free(result);
    mcp_model_unload(model);
    mcp_session_close(session);
    return 0;
}
