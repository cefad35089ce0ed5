/* 8 threads call mcp_infer on one model at once for 128 tokens each: every call succeeds with
 * the tokens and finish reason the same prompt gets when run alone, and the engine loop's
 * counters show that the calls ran batched (more than one sequence in a step).
 *
 * The workers only record their results; main checks them once every worker has returned. A
 * check that fails calls exit(), and exit() on one thread while another thread's call is inside
 * an engine step destroys the C++ runtime under the engine loop, which then crashes (torch's
 * "unknown parameter type", then SIGSEGV) and hides what failed. */
#include <pthread.h>

#include "check.h"

#define NUM_THREADS 8
#define NUM_PROMPTS 4
#define NUM_TOKENS 128

static const char *const prompts[NUM_PROMPTS] = {"The sky is", "Water is made of", "Cats like to", "Paris is"};

typedef struct outcome {
    mcp_status status;
    char error[512];
    mcp_result *result;
} outcome;

static mcp_model *model;
static pthread_barrier_t barrier;
static outcome outcomes[NUM_THREADS];

static void infer(const char *prompt, outcome *out) {
    mcp_infer_options options = greedy_options(NUM_TOKENS);
    out->status = mcp_infer(model, prompt, &options, &out->result);
    snprintf(out->error, sizeof out->error, "%s", mcp_last_error());
}

static void *worker(void *arg) {
    size_t i = (size_t)arg;
    pthread_barrier_wait(&barrier);
    infer(prompts[i % NUM_PROMPTS], &outcomes[i]);
    return NULL;
}

static void check_ended(const outcome *o) {
    if (o->status != MCP_OK) {
        fprintf(stderr, "threads: a call failed: %s: %s\n", mcp_status_name(o->status), o->error);
        exit(1);
    }
    const char *reason = mcp_result_finish_reason(o->result);
    size_t num_tokens = mcp_result_num_tokens(o->result);
    CHECK(num_tokens >= 1 && num_tokens <= NUM_TOKENS);
    CHECK(strcmp(reason, num_tokens == NUM_TOKENS ? "length" : "stop") == 0);
    CHECK(mcp_result_usage(o->result).completion_tokens == (int64_t)num_tokens);
}

/* The same greedy tokens and finish reason as the prompt alone: batching changes nothing. */
static void check_same(const outcome *batched, const outcome *alone) {
    size_t num_tokens = mcp_result_num_tokens(batched->result);
    CHECK(num_tokens == mcp_result_num_tokens(alone->result));
    CHECK(strcmp(mcp_result_finish_reason(batched->result), mcp_result_finish_reason(alone->result)) == 0);
    CHECK(memcmp(mcp_result_token_ids(batched->result), mcp_result_token_ids(alone->result),
                 num_tokens * sizeof(int32_t)) == 0);
}

int main(int argc, char **argv) {
    mcp_session *session;
    model = open_model(argc, argv, &session);
    outcome alone[NUM_PROMPTS];
    for (size_t p = 0; p < NUM_PROMPTS; p++) {
        infer(prompts[p], &alone[p]);
        check_ended(&alone[p]);
    }
    mcp_stats before, after;
    CHECK_OK(mcp_model_stats(model, &before));
    pthread_t threads[NUM_THREADS];
    pthread_barrier_init(&barrier, NULL, NUM_THREADS);
    for (size_t i = 0; i < NUM_THREADS; i++)
        CHECK(pthread_create(&threads[i], NULL, worker, (void *)i) == 0);
    for (size_t i = 0; i < NUM_THREADS; i++)
        pthread_join(threads[i], NULL);
    for (size_t i = 0; i < NUM_THREADS; i++) {
        printf("thread %zu (%s): %zu tokens, %s\n", i, prompts[i % NUM_PROMPTS],
               mcp_result_num_tokens(outcomes[i].result), mcp_result_finish_reason(outcomes[i].result));
        check_ended(&outcomes[i]);
        check_same(&outcomes[i], &alone[i % NUM_PROMPTS]);
        mcp_result_free(outcomes[i].result);
    }
    for (size_t p = 0; p < NUM_PROMPTS; p++)
        mcp_result_free(alone[p].result);
    CHECK_OK(mcp_model_stats(model, &after));
    printf("threads: max_sequences_in_step=%lld finished=%lld\n", (long long)after.max_sequences_in_step,
           (long long)(after.num_finished - before.num_finished));
    CHECK(after.num_finished - before.num_finished == NUM_THREADS);
    CHECK(after.max_sequences_in_step >= 2);
    pthread_barrier_destroy(&barrier);
    CHECK_OK(mcp_model_unload(model));
    CHECK_OK(mcp_session_close(session));
    return 0;
}
