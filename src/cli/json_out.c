/*
 * json_out.c — `airlock run --json`: the al_result as one JSON object.
 *
 * Written by hand (output only, no library). Invariants:
 *  - the output is always valid JSON (RFC 8259) whatever bytes the guest
 *    wrote: strings are escaped here, numbers are printed from integers (and
 *    wall_ms from a finite double);
 *  - string escaping: '"' '\\' and the C0 controls are escaped (\n \r \t \b
 *    \f, others as \u00XX); well-formed UTF-8 is copied as is; every byte
 *    that does not begin a well-formed UTF-8 sequence — a stray continuation,
 *    an overlong form, a surrogate, a code point past U+10FFFF, a sequence
 *    cut short — is replaced by one U+FFFD per maximal ill-formed subpart
 *    (the WHATWG/Unicode "best practice"). So binary output is lossy in JSON;
 *    the plain mode writes the exact bytes.
 *
 * Fields (every one is always present):
 *   status, exit_code, trap (the spec's trap message, or null; null for a
 *   plain exit), trap_location ({func_index, func_name, code_offset,
 *   backtrace: [{func_index, func_name, code_offset}...], backtrace_truncated}
 *   or null), fuel_used, wall_ms, peak_memory_bytes, stdout, stdout_truncated,
 *   stderr, stderr_truncated, signal, limits_hit, cpu_ms, denied_syscalls,
 *   backend, execution (the id in the egress log; null for wasm), egress ({allowed, denied, bytes}: the proxy's counts, zeros
 *   when no network was granted), dirs ([{host, guest, read_only}]), error
 *   (the message, or null when the status is ok, exit or output_truncated).
 */
#include <inttypes.h>
#include <string.h>

#include "run.h"
/* svc_utf8_sequence, the decoder airlockd's result JSON uses too (by its
 * path: the CLI is built without -Isrc/service). */
#include "../service/policy_json.h"

static void put_escaped_ascii(FILE *f, uint8_t c) {
    switch (c) {
    case '"': fputs("\\\"", f); return;
    case '\\': fputs("\\\\", f); return;
    case '\n': fputs("\\n", f); return;
    case '\r': fputs("\\r", f); return;
    case '\t': fputs("\\t", f); return;
    case '\b': fputs("\\b", f); return;
    case '\f': fputs("\\f", f); return;
    }
    if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
}

void cli_json_string(FILE *f, const uint8_t *s, size_t len) {
    fputc('"', f);
    for (size_t i = 0; s && i < len;) {
        size_t bad = 0, n = svc_utf8_sequence(s + i, len - i, &bad);
        if (n == 1) {
            put_escaped_ascii(f, s[i]);
        } else if (n > 1) {
            fwrite(s + i, 1, n, f);
        } else {
            fputs("\\ufffd", f);
            n = bad;
        }
        i += n;
    }
    fputc('"', f);
}

static void json_cstr(FILE *f, const char *s) {
    if (s) cli_json_string(f, (const uint8_t *)s, strlen(s));
    else fputs("null", f);
}

/* A fixed char array from the engine, bounded in case it is not terminated. */
static void json_name(FILE *f, const char *name, size_t cap) {
    size_t n = strnlen(name, cap);
    if (n == 0) fputs("null", f);
    else cli_json_string(f, (const uint8_t *)name, n);
}

static void json_frame(FILE *f, uint32_t func_index, const char *name, size_t cap,
                       uint32_t offset) {
    fprintf(f, "{\"func_index\": %" PRIu32 ", \"func_name\": ", func_index);
    json_name(f, name, cap);
    fprintf(f, ", \"code_offset\": %" PRIu32 "}", offset);
}

static void json_trap_location(FILE *f, const al_error *e) {
    if (e->kind != AL_ERR_TRAP || e->backtrace_len == 0) {
        fputs("null", f);
        return;
    }
    fprintf(f, "{\"func_index\": %" PRIu32 ", \"func_name\": ", e->func_index);
    json_name(f, e->func_name, sizeof e->func_name);
    fprintf(f, ", \"code_offset\": %" PRIu32 ", \"backtrace\": [", e->code_offset);
    uint32_t n = e->backtrace_len < AL_BACKTRACE_MAX ? e->backtrace_len : AL_BACKTRACE_MAX;
    for (uint32_t i = 0; i < n; i++) {
        const al_frame_info *fr = &e->backtrace[i];
        fputs(i ? ", " : "", f);
        json_frame(f, fr->func_index, fr->func_name, sizeof fr->func_name, fr->code_offset);
    }
    fprintf(f, "], \"backtrace_truncated\": %s}", e->backtrace_truncated ? "true" : "false");
}

static void json_dirs(FILE *f, const cli_json_dir *dirs, size_t n) {
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ", {\"host\": " : "{\"host\": ", f);
        json_cstr(f, dirs[i].host);
        fputs(", \"guest\": ", f);
        json_cstr(f, dirs[i].guest);
        fprintf(f, ", \"read_only\": %s}", dirs[i].read_only ? "true" : "false");
    }
    fputc(']', f);
}

static const struct {
    uint32_t flag;
    const char *name;
} limit_names[] = {
    {AL_LIMIT_WALL, "wall"},         {AL_LIMIT_CPU, "cpu"},
    {AL_LIMIT_MEMORY, "memory"},     {AL_LIMIT_PROCESSES, "processes"},
    {AL_LIMIT_FILE_SIZE, "file_size"}, {AL_LIMIT_OUTPUT, "output"},
    {AL_LIMIT_FUEL, "fuel"},
};

/* The fields every backend shares beyond the wasm ones. */
static void json_sandbox_fields(FILE *f, const al_result *r) {
    fprintf(f, ", \"signal\": %d, \"limits_hit\": [", r->term_signal);
    bool first = true;
    for (size_t i = 0; i < sizeof limit_names / sizeof limit_names[0]; i++) {
        if (!(r->limits_hit & limit_names[i].flag)) continue;
        fprintf(f, "%s\"%s\"", first ? "" : ", ", limit_names[i].name);
        first = false;
    }
    fprintf(f, "], \"cpu_ms\": %.3f, \"denied_syscalls\": %" PRIu64 ", \"backend\": ",
            (double)r->cpu_ns / 1e6, r->denied_syscalls);
    json_name(f, r->backend, sizeof r->backend);
    fputs(", \"execution\": ", f);
    json_name(f, r->execution_id, sizeof r->execution_id);
    fprintf(f,
            ", \"egress\": {\"allowed\": %" PRIu32 ", \"denied\": %" PRIu32
            ", \"bytes\": %" PRIu64 "}",
            r->egress_allowed, r->egress_denied, r->egress_bytes);
}

static bool status_has_error(al_status s) {
    return s != AL_STATUS_OK && s != AL_STATUS_EXIT && s != AL_STATUS_OUTPUT_TRUNCATED;
}

void cli_json_write_result(FILE *f, const al_result *r, const cli_json_dir *dirs, size_t ndirs) {
    fputs("{\"status\": ", f);
    json_cstr(f, al_status_name(r->status));
    fprintf(f, ", \"exit_code\": %d, \"trap\": ", r->exit_code);
    if (r->trap != AL_TRAP_NONE && r->trap != AL_TRAP_EXIT) json_cstr(f, al_trap_message(r->trap));
    else fputs("null", f);
    fputs(", \"trap_location\": ", f);
    json_trap_location(f, &r->error);
    fprintf(f,
            ", \"fuel_used\": %" PRIu64 ", \"wall_ms\": %.3f, \"peak_memory_bytes\": %" PRIu64
            ", \"stdout\": ",
            r->fuel_used, (double)r->wall_ns / 1e6, r->peak_memory_bytes);
    cli_json_string(f, r->stdout_data, r->stdout_len);
    fprintf(f, ", \"stdout_truncated\": %s, \"stderr\": ", r->stdout_truncated ? "true" : "false");
    cli_json_string(f, r->stderr_data, r->stderr_len);
    fprintf(f, ", \"stderr_truncated\": %s", r->stderr_truncated ? "true" : "false");
    json_sandbox_fields(f, r);
    fputs(", \"dirs\": ", f);
    json_dirs(f, dirs, ndirs);
    fputs(", \"error\": ", f);
    if (status_has_error(r->status))
        json_name(f, r->error.message, sizeof r->error.message);
    else
        fputs("null", f);
    fputs("}\n", f);
}
