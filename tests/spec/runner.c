/*
 * runner.c — the WebAssembly spec-test runner for airlock.
 *
 *   spec-runner [--verbose] FILE.json...
 *
 * Each FILE.json is a script written by wabt's `wast2json X.wast -o DIR/X.json`
 * (the .wasm files it names sit beside it). The runner executes its commands
 * in order (commands.c) in a fresh store and import set that holds only the
 * "spectest" host module (spectest.c), and counts each command as passed,
 * failed or skipped (text-format modules, which airlock does not read).
 *
 * Output: one line per script, "  <name> <passed> passed <failed> failed
 * <skipped> skipped" (with --verbose, each failure with its line and reason
 * before it), then a summary table, the skipped count, and last
 * "N passed, N failed". Exit status 0 only when nothing failed; a script
 * that cannot be read or parsed counts as one failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"

typedef struct script_result {
    char *name; /* file name without directory and ".json" */
    spec_counts counts;
} script_result;

static char *script_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    size_t len = strlen(base);
    if (len > 5 && strcmp(base + len - 5, ".json") == 0)
        len -= 5;
    return strndup(base, len);
}

/* With --verbose, each failure with its line and reason (skips are only counted). */
static void report_failure(const spec_script *script, const char *name, long line,
                           const char *type)
{
    if (script->verbose)
        printf("    %s:%ld: %s FAILED: %s\n", name, line, type, script->reason);
}

/* A failure of the script as a whole (unreadable, no store, ...). */
static void fail_script(spec_script *script, const char *name, const char *reason)
{
    script->counts.failed++;
    if (script->verbose)
        printf("    %s: FAILED: %s\n", name, reason);
}

static void run_commands(spec_script *script, const char *name, json_t *commands)
{
    size_t i;
    json_t *command;
    json_array_foreach(commands, i, command) {
        spec_outcome outcome = spec_run_command(script, command);
        const char *type = json_string_value(json_object_get(command, "type"));
        long line = (long)json_integer_value(json_object_get(command, "line"));
        if (outcome == SPEC_PASS) {
            script->counts.passed++;
        } else if (outcome == SPEC_FAIL) {
            script->counts.failed++;
            report_failure(script, name, line, type != NULL ? type : "?");
        } else {
            script->counts.skipped++;
        }
    }
}

static spec_counts run_script(const char *path, const char *name, bool verbose)
{
    spec_script script;
    char why[512];
    json_error_t json_error;
    json_t *root = json_load_file(path, JSON_ALLOW_NUL, &json_error);
    json_t *commands = json_object_get(root, "commands");
    if (!spec_script_open(&script, path, verbose, why, sizeof why)) {
        fail_script(&script, name, why);
    } else if (root == NULL) {
        if (json_error.line > 0)
            snprintf(why, sizeof why, "%s:%d: %s", path, json_error.line, json_error.text);
        else
            snprintf(why, sizeof why, "%s", json_error.text);
        fail_script(&script, name, why);
    } else if (!json_is_array(commands)) {
        fail_script(&script, name, "no \"commands\" array");
    } else {
        run_commands(&script, name, commands);
    }
    spec_script_close(&script);
    json_decref(root);
    return script.counts;
}

static void print_counts_line(const char *name, spec_counts counts)
{
    printf("  %s %u passed %u failed %u skipped\n", name, counts.passed, counts.failed,
           counts.skipped);
}

static void print_summary(const script_result *results, size_t count)
{
    spec_counts total = {0, 0, 0};
    printf("\n%-32s %8s %8s %8s\n", "script", "passed", "failed", "skipped");
    for (size_t i = 0; i < count; i++) {
        const spec_counts *c = &results[i].counts;
        const char *name = results[i].name != NULL ? results[i].name : "?";
        printf("%-32s %8u %8u %8u%s\n", name, c->passed, c->failed, c->skipped,
               c->failed ? "  FAIL" : "");
        total.passed += c->passed;
        total.failed += c->failed;
        total.skipped += c->skipped;
    }
    printf("%-32s %8u %8u %8u\n", "total", total.passed, total.failed, total.skipped);
    printf("%u skipped\n", total.skipped);
    printf("%u passed, %u failed\n", total.passed, total.failed);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: spec-runner [--verbose] FILE.json...\n");
}

int main(int argc, char **argv)
{
    bool verbose = false;
    int first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        if (strcmp(argv[first], "--verbose") == 0 || strcmp(argv[first], "-v") == 0) {
            verbose = true;
        } else if (strcmp(argv[first], "--help") == 0 || strcmp(argv[first], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (first == argc) {
        usage(stderr);
        return 2;
    }
    /* Line-buffered so that output before an engine crash is not lost. */
    setvbuf(stdout, NULL, _IOLBF, 0);

    size_t count = (size_t)(argc - first);
    script_result *results = calloc(count, sizeof *results);
    if (results == NULL) {
        fprintf(stderr, "spec-runner: out of memory\n");
        return 2;
    }
    bool any_failed = false;
    for (size_t i = 0; i < count; i++) {
        const char *path = argv[first + (int)i];
        char *name = script_name(path);
        results[i].name = name;
        results[i].counts = run_script(path, name != NULL ? name : path, verbose);
        print_counts_line(name != NULL ? name : path, results[i].counts);
        any_failed |= results[i].counts.failed > 0;
    }
    print_summary(results, count);
    for (size_t i = 0; i < count; i++)
        free(results[i].name);
    free(results);
    return any_failed ? 1 : 0;
}
