/*
 * plugin-calls.c — speed of airlock's Extism-compatible plugin host (issue 7),
 * for bench/plugin.sh:
 *
 *   plugin-calls PLUGIN.wasm FUNCTION INPUT_BYTES SECONDS [WASI_PLUGIN.wasm]
 *
 * 1. calls: one instance, FUNCTION called back to back for SECONDS with an
 *    INPUT_BYTES input (lorem text), output read each time: calls per second
 *    on this one thread, input/output copying included;
 * 2. instantiate: the module compiled once (al_plugin_compile), then
 *    al_plugin_instantiate + al_plugin_free in a loop: microseconds per fresh
 *    instance of a cached plugin (mean, median, p99);
 * 3. reference: the same work (count the vowels of the same input) as a
 *    native C function in this process, called back to back: the ratio says
 *    what the sandbox costs per call.
 *
 * Prints "key value" lines. Every call must return status ok; the first that
 * does not stops the program (exit 1, the reason on stderr), so a broken
 * plugin never yields a figure.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "airlock.h"

enum { MAX_SAMPLES = 200000 };

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint8_t *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = n > 0 ? malloc((size_t)n) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = buf ? (size_t)n : 0;
    return buf;
}

/* The native reference: what count_vowels computes, minus the sandbox. */
static __attribute__((noinline)) unsigned native_count(const uint8_t *s, size_t n) {
    unsigned count = 0;
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case 'a': case 'e': case 'i': case 'o': case 'u':
        case 'A': case 'E': case 'I': case 'O': case 'U': count++; break;
        default: break;
        }
    }
    return count;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int bench_calls(al_plugin *p, const char *fn, const uint8_t *in, size_t n, double secs) {
    unsigned long calls = 0;
    double t0 = now_s(), t;
    do {
        for (int k = 0; k < 256; k++) {
            al_result r;
            if (!al_plugin_call(p, fn, in, n, &r) || r.status != AL_STATUS_OK) {
                fprintf(stderr, "plugin-calls: call %lu: %s\n", calls, r.error.message);
                al_result_free(&r);
                return 1;
            }
            al_result_free(&r);
            calls++;
        }
        t = now_s();
    } while (t - t0 < secs);
    printf("calls %lu\ncalls_seconds %.3f\ncalls_per_s %.0f\ncall_us %.3f\n", calls, t - t0,
           (double)calls / (t - t0), (t - t0) * 1e6 / (double)calls);
    return 0;
}

static int bench_instantiate(const al_plugin_module *m, double secs, const char *prefix) {
    static double samples[MAX_SAMPLES];
    size_t n = 0;
    al_plugin_options o;
    al_plugin_options_init(&o);
    double t0 = now_s(), total = 0;
    while (n < MAX_SAMPLES && now_s() - t0 < secs) {
        al_error err;
        double a = now_s();
        al_plugin *p = al_plugin_instantiate(m, &o, &err);
        if (!p) {
            fprintf(stderr, "plugin-calls: instantiate: %s\n", err.message);
            return 1;
        }
        al_plugin_free(p);
        double us = (now_s() - a) * 1e6;
        samples[n++] = us;
        total += us;
    }
    qsort(samples, n, sizeof *samples, cmp_double);
    printf("%sinstances %zu\n%sinstantiate_mean_us %.2f\n%sinstantiate_median_us %.2f\n"
           "%sinstantiate_p99_us %.2f\n",
           prefix, n, prefix, total / (double)n, prefix, samples[n / 2], prefix,
           samples[n * 99 / 100]);
    return 0;
}

static void bench_native(const uint8_t *in, size_t n, double secs) {
    unsigned long calls = 0;
    volatile unsigned sink = 0;
    double t0 = now_s(), t;
    do {
        for (int k = 0; k < 4096; k++) {
            sink += native_count(in, n);
            calls++;
        }
        t = now_s();
    } while (t - t0 < secs);
    (void)sink;
    printf("native_calls_per_s %.0f\nnative_call_us %.4f\n", (double)calls / (t - t0),
           (t - t0) * 1e6 / (double)calls);
}

/* A plugin that imports WASI: only its instantiate time is measured. */
static int bench_wasi_plugin(const char *path, double secs) {
    size_t len = 0;
    uint8_t *wasm = read_file(path, &len);
    al_error err;
    al_plugin_module *m = wasm ? al_plugin_compile(wasm, len, &err) : NULL;
    free(wasm);
    if (!m) {
        fprintf(stderr, "plugin-calls: %s: %s\n", path, wasm ? err.message : "cannot read it");
        return 1;
    }
    int rc = bench_instantiate(m, secs, "wasi_");
    al_plugin_module_free(m);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 5 && argc != 6) {
        fprintf(stderr,
                "usage: plugin-calls PLUGIN.wasm FUNCTION INPUT_BYTES SECONDS [WASI_PLUGIN.wasm]\n");
        return 2;
    }
    size_t len = 0, n = strtoul(argv[3], NULL, 10);
    double secs = atof(argv[4]);
    uint8_t *wasm = read_file(argv[1], &len);
    uint8_t *input = malloc(n ? n : 1);
    if (!wasm || !input || secs <= 0) {
        fprintf(stderr, "plugin-calls: cannot read %s\n", argv[1]);
        return 2;
    }
    static const char lorem[] = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ";
    for (size_t i = 0; i < n; i++) input[i] = (uint8_t)lorem[i % (sizeof lorem - 1)];

    al_error err;
    al_plugin_module *m = al_plugin_compile(wasm, len, &err);
    if (!m) {
        fprintf(stderr, "plugin-calls: %s: %s\n", argv[1], err.message);
        return 1;
    }
    al_plugin_options o;
    al_plugin_options_init(&o);
    al_plugin *p = al_plugin_instantiate(m, &o, &err);
    int rc = p ? 0 : 1;
    if (!p) fprintf(stderr, "plugin-calls: instantiate: %s\n", err.message);
    if (!rc) rc = bench_calls(p, argv[2], input, n, secs);
    if (p) al_plugin_free(p);
    if (!rc) rc = bench_instantiate(m, secs, "");
    if (!rc) bench_native(input, n, secs);
    al_plugin_module_free(m);
    if (!rc && argc == 6) rc = bench_wasi_plugin(argv[5], secs);
    free(wasm);
    free(input);
    return rc;
}
