/*
 * log.c — the egress decision log: one JSON object per line, appended.
 *
 *   {"time":"2026-11-21T11:31:05.123Z","execution":"al-...","decision":"deny",
 *    "reason":"...","method":"GET","host":"evil.example","port":80,
 *    "address":"","bytes_up":0,"bytes_down":0}
 *
 * Invariants:
 *  - jansson escapes every string, so a field from a hostile request can
 *    never end the string or the line and forge an entry; a field that is
 *    not valid UTF-8 is logged as "?" rather than dropped silently (the
 *    parsers admit only ASCII into these fields, so this is a second line);
 *  - one write(2) per line on an O_APPEND descriptor: lines of proxies that
 *    share a log never interleave; a failed write is dropped, because the
 *    proxy loop must not stall on a full disk.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "net.h"

static void rfc3339_now(char *out, size_t cap) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, cap, "%s.%03ldZ", date, ts.tv_nsec / 1000000);
}

static json_t *text(const char *s) {
    json_t *j = json_string(s ? s : "");
    return j ? j : json_string("?");
}

void egress_log_write(int fd, const egress_log_entry *e) {
    if (fd < 0) return;
    char when[48];
    rfc3339_now(when, sizeof when);
    json_t *line = json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:I, s:o, s:I, s:I}", "time", when,
                             "execution", text(e->execution), "decision", text(e->decision),
                             "reason", text(e->reason), "method", text(e->method), "host",
                             text(e->host), "port", (json_int_t)e->port, "address",
                             text(e->address), "bytes_up", (json_int_t)e->bytes_up,
                             "bytes_down", (json_int_t)e->bytes_down);
    char *out = line ? json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(line);
    if (!out) return;
    size_t len = strlen(out);
    out[len] = '\n'; /* replaces the NUL: the line is written with its length */
    ssize_t n;
    do n = write(fd, out, len + 1);
    while (n < 0 && errno == EINTR);
    free(out);
}
