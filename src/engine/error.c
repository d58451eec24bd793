/*
 * error.c — filling an al_error (errors are values; the library never prints).
 * al_error_set is the one place that does it, for the engine and for every
 * other part of the library (their own helpers only add to it: a prefix,
 * errno text, a return value).
 *
 * Invariant: after al_error_set the whole struct is in a defined state
 * (trap fields zero, func_name empty) and message is NUL-terminated, however
 * long the formatted text would have been (vsnprintf truncates).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "module.h"

void al_error_vset(al_error *err, al_error_kind kind, const char *fmt, va_list ap) {
    if (err == NULL) return; /* callers may not care about the details */
    memset(err, 0, sizeof *err);
    err->kind = kind;
    vsnprintf(err->message, sizeof err->message, fmt, ap);
}

void al_error_set(al_error *err, al_error_kind kind, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    al_error_vset(err, kind, fmt, ap);
    va_end(ap);
}
