/*
 * error.c — filling an al_error (errors are values; the library never prints).
 *
 * Invariant: after wasm_error_set the whole struct is in a defined state
 * (trap fields zero, func_name empty) and message is NUL-terminated, however
 * long the formatted text would have been (vsnprintf truncates).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "module.h"

void wasm_error_set(al_error *err, al_error_kind kind, const char *fmt, ...) {
    if (err == NULL) return; /* callers may not care about the details */
    memset(err, 0, sizeof *err);
    err->kind = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
}
