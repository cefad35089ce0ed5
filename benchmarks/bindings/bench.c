/* What a call through libmcp costs: a 1-token greedy call, and the time per token of a
 * streamed call, each the median of its runs. Driven by benchmarks/bindings_overhead.py:
 *   bench MODEL NUM_CALLS STREAM_TOKENS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <mcp/mcp.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int count_delta(const char *delta, size_t len, void *user_data) {
    (void)delta;
    (void)len;
    ++*(int *)user_data;
    return 0;
}

static void must(mcp_status status) {
    if (status != MCP_OK) {
        fprintf(stderr, "bench: %s: %s\n", mcp_status_name(status), mcp_last_error());
        exit(1);
    }
}

/* The median of a call refused by the option check (temperature -1): the SDK's own work for a
 * call without the engine's, so what libmcp adds shows. */
static double refused_call(mcp_model *model, int runs) {
    mcp_infer_options options;
    mcp_infer_options_init(&options);
    options.temperature = -1;
    double *took = calloc(runs, sizeof *took);
    for (int i = 0; i < runs; i++) {
        mcp_result *result;
        double start = now();
        if (mcp_infer(model, "The capital of France is", &options, &result) != MCP_ERR_INVALID_REQUEST)
            must(MCP_ERR_INTERNAL);
        took[i] = now() - start;
    }
    qsort(took, runs, sizeof *took, by_value);
    double median = took[runs / 2];
    free(took);
    return median;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: bench MODEL NUM_CALLS STREAM_TOKENS\n");
        return 2;
    }
    int num_calls = atoi(argv[2]), stream_tokens = atoi(argv[3]);
    mcp_session *session;
    mcp_model *model;
    must(mcp_session_open(NULL, &session));
    must(mcp_model_load(session, argv[1], &model));
    mcp_infer_options options;
    mcp_infer_options_init(&options);
    options.temperature = 0;
    options.raw = 1;
    double *one = calloc(num_calls, sizeof *one), *per_token = calloc(num_calls, sizeof *per_token);
    for (int i = -2; i < num_calls; i++) { /* two warm-up calls */
        mcp_result *result;
        options.max_tokens = 1;
        double start = now();
        must(mcp_infer(model, "The capital of France is", &options, &result));
        double took = now() - start;
        mcp_result_free(result);
        options.max_tokens = stream_tokens;
        options.stop = NULL;
        int deltas = 0;
        start = now();
        must(mcp_infer_stream(model, "Once upon a time", &options, count_delta, &deltas, &result));
        double streamed = (now() - start) / (double)mcp_result_num_tokens(result);
        mcp_result_free(result);
        if (i >= 0) {
            one[i] = took;
            per_token[i] = streamed;
        }
    }
    qsort(one, num_calls, sizeof *one, by_value);
    qsort(per_token, num_calls, sizeof *per_token, by_value);
    printf("one_token_ms %.3f\nstream_token_ms %.3f\n", one[num_calls / 2] * 1e3, per_token[num_calls / 2] * 1e3);
    printf("refused_call_ms %.4f\n", refused_call(model, 2000) * 1e3);
    free(one);
    free(per_token);
    must(mcp_model_unload(model));
    must(mcp_session_close(session));
    return 0;
}
