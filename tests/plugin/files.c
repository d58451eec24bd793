/*
 * files.c — a test plugin that uses WASI files through the directories its
 * host grants (`airlock plugin call --allow-path`, manifest "allowed_paths"):
 *
 *   read_file   input: a guest path; output: the file's bytes (at most 64 KiB)
 *   write_file  input: "PATH\nTEXT"; writes TEXT to PATH, output "ok"
 *
 * A refused open (no grant, a read-only grant, a path outside it) is an
 * error naming the path and strerror, so tests can tell the refusals apart.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock_pdk.h"

static int32_t failed(const char *what, const char *path) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s %s: %s", what, path, strerror(errno));
    return pdk_error_set(msg);
}

PDK_EXPORT(read_file) {
    size_t len;
    char *path = (char *)pdk_input(&len);
    if (!path) return pdk_error_set("read_file: out of memory");
    FILE *f = fopen(path, "rb");
    if (!f) {
        int32_t rc = failed("open", path);
        free(path);
        return rc;
    }
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    free(path);
    pdk_output_set(buf, n);
    return 0;
}

PDK_EXPORT(write_file) {
    size_t len;
    char *in = (char *)pdk_input(&len);
    if (!in) return pdk_error_set("write_file: out of memory");
    char *nl = strchr(in, '\n');
    if (!nl) {
        free(in);
        return pdk_error_set("write_file: input is PATH\\nTEXT");
    }
    *nl = '\0';
    FILE *f = fopen(in, "wb");
    int32_t rc = 0;
    if (!f || fputs(nl + 1, f) < 0 || fclose(f) != 0) rc = failed("write", in);
    else pdk_output_set("ok", 2);
    free(in);
    return rc;
}
