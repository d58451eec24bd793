/*
 * gvisor-session.c — per-execution latency inside a warm gVisor session, for
 * bench/exec-latency.sh: one al_session_open (the sandbox boots once: runsc
 * create + start), then WARMUP + N al_session_exec of /bin/true (each a
 * `runsc exec` inside the running sandbox), then al_session_close.
 *
 *   gvisor-session N [STATE_DIR]
 *
 * Prints "key value" lines (milliseconds): open_ms, exec_mean_ms,
 * exec_median_ms, exec_min_ms, exec_max_ms, close_ms, runs. Every execution
 * must end with status ok; the first that does not stops the program
 * (exit 1, the reason on stderr), so a broken session never yields a figure.
 *
 * Invariants: one session, closed on every path after it was opened; each
 * result freed after it was read; timing is CLOCK_MONOTONIC around the
 * library call only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "airlock.h"

enum { WARMUP = 3, MAX_RUNS = 10000 };

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One /bin/true in the session; its wall time in *ms. False (reason on
 * stderr) when the library produced no result or the program did not end ok. */
static bool exec_true(al_session *session, double *ms) {
    static const char *const argv[] = {"/bin/true"};
    al_policy request;
    al_policy_init(&request);
    request.isolation = AL_ISOLATION_GVISOR;
    request.argv = argv;
    request.argc = 1;
    request.timeout_ms = 30000;
    al_result result;
    memset(&result, 0, sizeof result);
    double t0 = now_ms();
    bool ran = al_session_exec(session, &request, &result);
    *ms = now_ms() - t0;
    bool ok = ran && result.status == AL_STATUS_OK;
    if (!ok)
        fprintf(stderr, "gvisor-session: al_session_exec: %s (status %s)\n", result.error.message,
                ran ? al_status_name(result.status) : "no result");
    al_result_free(&result);
    return ok;
}

int main(int argc, char **argv) {
    int runs = argc > 1 ? atoi(argv[1]) : 30;
    if (runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "usage: gvisor-session N [STATE_DIR]   (1 <= N <= %d)\n", MAX_RUNS);
        return 2;
    }
    static const char *const argv0[] = {"/bin/true"};
    al_policy policy;
    al_policy_init(&policy);
    policy.isolation = AL_ISOLATION_GVISOR;
    policy.argv = argv0;
    policy.argc = 1;
    policy.state_dir = argc > 2 ? argv[2] : NULL;

    al_error error;
    memset(&error, 0, sizeof error);
    double t0 = now_ms();
    al_session *session = al_session_open(&policy, &error);
    double open_ms = now_ms() - t0;
    if (!session) {
        fprintf(stderr, "gvisor-session: al_session_open: %s\n", error.message);
        return 1;
    }

    double *samples = calloc((size_t)runs, sizeof *samples);
    bool ok = samples != NULL;
    double ignored;
    for (int i = 0; ok && i < WARMUP; i++) ok = exec_true(session, &ignored);
    double sum = 0;
    for (int i = 0; ok && i < runs; i++) {
        ok = exec_true(session, &samples[i]);
        sum += samples[i];
    }
    t0 = now_ms();
    al_session_close(session);
    double close_ms = now_ms() - t0;

    if (ok) {
        qsort(samples, (size_t)runs, sizeof *samples, cmp_double);
        printf("open_ms %.2f\nexec_mean_ms %.2f\nexec_median_ms %.2f\nexec_min_ms %.2f\n"
               "exec_max_ms %.2f\nclose_ms %.2f\nruns %d\n",
               open_ms, sum / runs, samples[runs / 2], samples[0], samples[runs - 1], close_ms, runs);
    }
    free(samples);
    return ok ? 0 : 1;
}
