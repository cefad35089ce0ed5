/* 8 threads call mcp_infer on one model at once: every call succeeds, and the engine loop's
 * counters show that they ran batched (more than one sequence in a step). */
#include <pthread.h>

#include "check.h"

#define NUM_THREADS 8

static mcp_model *model;
static pthread_barrier_t barrier;

static void *worker(void *arg) {
    static const char *const prompts[] = {"The sky is", "Water is made of", "Cats like to", "Paris is"};
    mcp_infer_options options = greedy_options(16);
    mcp_result *result;
    pthread_barrier_wait(&barrier);
    CHECK_OK(mcp_infer(model, prompts[(size_t)arg % 4], &options, &result));
    CHECK(mcp_result_num_tokens(result) == 16);
    CHECK(strcmp(mcp_result_finish_reason(result), "length") == 0);
    mcp_result_free(result);
    return NULL;
}

int main(int argc, char **argv) {
    mcp_session *session;
    model = open_model(argc, argv, &session);
    mcp_stats before, after;
    CHECK_OK(mcp_model_stats(model, &before));
    pthread_t threads[NUM_THREADS];
    pthread_barrier_init(&barrier, NULL, NUM_THREADS);
    for (size_t i = 0; i < NUM_THREADS; i++)
        CHECK(pthread_create(&threads[i], NULL, worker, (void *)i) == 0);
    for (size_t i = 0; i < NUM_THREADS; i++)
        pthread_join(threads[i], NULL);
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
