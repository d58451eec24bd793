/*
 * validate.c — `airlock validate MODULE.wasm`: decode and validate a module.
 *
 * Prints "ok" on stdout when the module is well-formed and valid; otherwise
 * the engine's message (which names the section and byte offset) on stderr
 * and exit status 1. Nothing is instantiated or run.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char validate_usage[] =
    "usage: airlock validate MODULE.wasm\n"
    "\n"
    "Decode and validate a WebAssembly 2.0 binary module without running it.\n"
    "Prints \"ok\", or the error with its section and byte offset (exit 1).\n";

int cli_validate(int argc, char **argv) {
    const char *path = NULL;
    bool options_done = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!options_done && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
            fputs(validate_usage, stdout);
            return CLI_OK;
        }
        if (!options_done && !strcmp(a, "--")) {
            options_done = true;
            continue;
        }
        if (!options_done && a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "airlock validate: unknown option '%s'\n", a);
            fputs(validate_usage, stderr);
            return CLI_USAGE;
        }
        if (path) {
            fprintf(stderr, "airlock validate: expected one module, got '%s' too\n", a);
            return CLI_USAGE;
        }
        path = a;
    }
    if (!path) {
        fputs(validate_usage, stderr);
        return CLI_USAGE;
    }

    al_module *module = cli_load_module(path);
    if (!module)
        return CLI_FAIL;
    al_module_free(module);
    puts("ok");
    if (fflush(stdout) != 0 || ferror(stdout)) {
        perror("airlock: writing output");
        return CLI_FAIL;
    }
    return CLI_OK;
}
