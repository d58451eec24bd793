/*
 * load.c — reading module files and reporting engine errors for the CLI.
 *
 * The module file is untrusted input given by path. Before any byte reaches
 * the engine we make sure it is a regular file (a FIFO or device could block
 * forever or stream without end) of a bounded size (so a huge or sparse file
 * cannot make us allocate gigabytes), and we read exactly the size fstat()
 * reported, refusing a file that shrinks or grows while we read it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

uint8_t *cli_read_module_file(const char *path, size_t *len) {
    /* O_NONBLOCK: opening a FIFO with no writer must not hang before the
     * S_ISREG check below can refuse it. It has no effect on regular files. */
    int fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        fprintf(stderr, "airlock: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        fprintf(stderr, "airlock: %s: %s\n", path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, "airlock: %s: not a regular file\n", path);
        close(fd);
        return NULL;
    }
    if (st.st_size < 0 || (uintmax_t)st.st_size > CLI_MAX_MODULE_BYTES) {
        fprintf(stderr, "airlock: %s: file is too large (%jd bytes; the limit is %zu MiB)\n",
                path, (intmax_t)st.st_size, CLI_MAX_MODULE_BYTES >> 20);
        close(fd);
        return NULL;
    }

    size_t size = (size_t)st.st_size;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) {
        fprintf(stderr, "airlock: %s: out of memory\n", path);
        close(fd);
        return NULL;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fprintf(stderr, "airlock: %s: %s\n", path, strerror(errno));
            goto fail;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    /* One extra byte tells us whether the file grew after fstat(). */
    uint8_t extra;
    ssize_t more;
    do {
        more = read(fd, &extra, 1);
    } while (more < 0 && errno == EINTR);
    if (got != size || more != 0) {
        fprintf(stderr, "airlock: %s: file changed while it was being read\n", path);
        goto fail;
    }
    close(fd);
    *len = size;
    return buf;

fail:
    free(buf);
    close(fd);
    return NULL;
}

const char *cli_error_kind_name(al_error_kind kind) {
    switch (kind) {
    case AL_OK: return "ok";
    case AL_ERR_MALFORMED: return "malformed module";
    case AL_ERR_INVALID: return "invalid module";
    case AL_ERR_LINK: return "link error";
    case AL_ERR_TRAP: return "trap";
    case AL_ERR_LIMIT: return "limit exceeded";
    case AL_ERR_ARGUMENT: return "bad argument";
    case AL_ERR_NOMEM: return "out of memory";
    case AL_ERR_SYSTEM: return "system error";
    case AL_ERR_UNSUPPORTED: return "unsupported";
    }
    return "error";
}

/* The callers of the trapping function, innermost first, one line each.
 * backtrace[0] is the trap location already printed. Runs of the same frame
 * (deep recursion) are collapsed into one line with a repeat count. */
static void print_backtrace(const al_error *err) {
    uint32_t n = err->backtrace_len < AL_BACKTRACE_MAX ? err->backtrace_len : AL_BACKTRACE_MAX;
    for (uint32_t i = 1; i < n;) {
        const al_frame_info *f = &err->backtrace[i];
        uint32_t same = 1;
        while (i + same < n && err->backtrace[i + same].func_index == f->func_index &&
               err->backtrace[i + same].code_offset == f->code_offset)
            same++;
        int namelen = (int)strnlen(f->func_name, sizeof f->func_name);
        fprintf(stderr, "    called from function %" PRIu32, f->func_index);
        if (namelen > 0)
            fprintf(stderr, " (%.*s)", namelen, f->func_name);
        fprintf(stderr, " at offset 0x%" PRIx32, f->code_offset);
        if (same > 1)
            fprintf(stderr, " (%" PRIu32 " times)", same);
        fputc('\n', stderr);
        i += same;
    }
    if (err->backtrace_truncated)
        fputs("    ... (more frames)\n", stderr);
}

void cli_print_error(const char *path, const al_error *err) {
    if (err->kind == AL_ERR_TRAP) {
        if (err->backtrace_len == 0) { /* no guest frame: a segment or a host function */
            int msglen = (int)strnlen(err->message, sizeof err->message);
            fprintf(stderr, "airlock: trap: %.*s\n", msglen, err->message);
            return;
        }
        const char *what = al_trap_message(err->trap);
        fprintf(stderr, "airlock: trap: %s", what ? what : "unknown trap");
        fprintf(stderr, " in function %" PRIu32, err->func_index);
        /* func_name is a fixed array filled by the engine from the module's
         * name section; bound the read in case it is not terminated. */
        int namelen = (int)strnlen(err->func_name, sizeof err->func_name);
        if (namelen > 0)
            fprintf(stderr, " (%.*s)", namelen, err->func_name);
        fprintf(stderr, " at offset 0x%" PRIx32 "\n", err->code_offset);
        print_backtrace(err);
        return;
    }
    int msglen = (int)strnlen(err->message, sizeof err->message);
    if (path)
        fprintf(stderr, "airlock: %s: %s: %.*s\n", path, cli_error_kind_name(err->kind), msglen,
                err->message);
    else
        fprintf(stderr, "airlock: %s: %.*s\n", cli_error_kind_name(err->kind), msglen,
                err->message);
}

al_module *cli_load_module(const char *path) {
    size_t len = 0;
    uint8_t *bytes = cli_read_module_file(path, &len);
    if (!bytes)
        return NULL;
    al_error err;
    memset(&err, 0, sizeof err);
    al_module *module = al_module_new(bytes, len, &err);
    free(bytes); /* al_module_new copies the buffer */
    if (!module) {
        cli_print_error(path, &err);
        return NULL;
    }
    return module;
}
