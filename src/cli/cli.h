/*
 * cli.h — what the `airlock` command's files share.
 *
 * The CLI is a thin shell over airlock.h (the only engine header it may
 * include): main.c dispatches to one function per subcommand, each in its own
 * file (run.c, validate.c; `run` also has run_wasi.c, units.c and json_out.c,
 * sharing run.h); load.c reads a module file from disk and turns al_error
 * values into one-line messages.
 *
 * Exit codes, for every subcommand:
 *   0  success
 *   1  the module or the run failed: unreadable file, malformed/invalid
 *      module, link error, trap, engine error
 *   2  usage error: unknown command or option, bad --invoke arguments
 * `airlock run` of a WASI command (no --invoke) passes the guest's exit code
 * through and adds 65/70/71/72/73 for its other outcomes (run.h).
 */
#ifndef AIRLOCK_CLI_H
#define AIRLOCK_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "airlock.h"

#ifndef AIRLOCK_VERSION
#define AIRLOCK_VERSION "0.1.0-dev"
#endif

enum {
    CLI_OK = 0,
    CLI_FAIL = 1,
    CLI_USAGE = 2,
};

/* Largest module file the CLI will read. Checked before allocating so a huge
 * or sparse file cannot make the CLI allocate its size. */
#define CLI_MAX_MODULE_BYTES ((size_t)256 << 20)

/* Subcommands: argv[0] is the subcommand name; return an exit code. */
int cli_run(int argc, char **argv);
int cli_validate(int argc, char **argv);

/* load.c: read a regular file of at most CLI_MAX_MODULE_BYTES into a fresh
 * buffer (free() it). On failure prints "airlock: PATH: reason" to stderr and
 * returns NULL. */
uint8_t *cli_read_module_file(const char *path, size_t *len);

/* load.c: read and decode+validate a module; prints the error and returns
 * NULL on failure. */
al_module *cli_load_module(const char *path);

/* load.c: print an engine error (with PATH as context when not NULL) to
 * stderr in the CLI's format; traps use the documented trap line. */
void cli_print_error(const char *path, const al_error *err);

/* load.c: short label for an error kind ("malformed module", ...). */
const char *cli_error_kind_name(al_error_kind kind);

#endif
