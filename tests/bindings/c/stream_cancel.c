/* mcp_infer_stream: deltas make the text; a callback returning nonzero cancels; a cancel
 * signal fired from another thread ends a blocking mcp_infer. */
#include <pthread.h>
#include <unistd.h>

#include "check.h"

typedef struct collected {
    char text[8192];
    int num_deltas;
    int cancel_after; /* 0: never */
} collected;

static int on_delta(const char *delta, size_t len, void *user_data) {
    collected *c = user_data;
    CHECK(strlen(delta) == len);
    strncat(c->text, delta, sizeof c->text - strlen(c->text) - 1);
    c->num_deltas++;
    return c->cancel_after && c->num_deltas >= c->cancel_after;
}

static void *fire_later(void *cancel) {
    usleep(300 * 1000);
    mcp_cancel_fire(cancel);
    return NULL;
}

int main(int argc, char **argv) {
    mcp_session *session;
    mcp_model *model = open_model(argc, argv, &session);
    mcp_infer_options options = greedy_options(10);
    mcp_result *result;

    collected all = {.cancel_after = 0};
    CHECK_OK(mcp_infer_stream(model, "Count: one, two,", &options, on_delta, &all, &result));
    CHECK(strcmp(all.text, mcp_result_text(result)) == 0);
    CHECK(strcmp(mcp_result_finish_reason(result), "length") == 0);
    mcp_result_free(result);

    collected some = {.cancel_after = 3};
    options.max_tokens = 200;
    CHECK_OK(mcp_infer_stream(model, "Write a long story about a dragon.", &options, on_delta, &some, &result));
    CHECK(some.num_deltas == 3);
    CHECK(strcmp(mcp_result_finish_reason(result), "cancelled") == 0);
    CHECK(mcp_result_num_tokens(result) < 200);
    CHECK(strncmp(mcp_result_text(result), some.text, strlen(some.text)) == 0);
    mcp_result_free(result);

    mcp_cancel *cancel;
    CHECK_OK(mcp_cancel_new(&cancel));
    options.max_tokens = 2000;
    options.cancel = cancel;
    pthread_t firer;
    CHECK(pthread_create(&firer, NULL, fire_later, cancel) == 0);
    CHECK_OK(mcp_infer(model, "Write a long story about a dragon.", &options, &result));
    pthread_join(firer, NULL);
    CHECK(strcmp(mcp_result_finish_reason(result), "cancelled") == 0);
    CHECK(mcp_result_num_tokens(result) < 2000);
    mcp_result_free(result);
    mcp_cancel_free(cancel);

    CHECK_OK(mcp_model_unload(model));
    CHECK_OK(mcp_session_close(session));
    puts("stream_cancel: ok");
    return 0;
}
