/*
 * wasi.c — the WASI context's lifecycle (wasi_ctx_new/free), the import
 * table of every wasi_snapshot_preview1 function with its core-wasm
 * signature, and the result accessors.
 *
 * Invariants:
 *   - The context owns copies of everything in the config (argv, env,
 *     stdin, preopen paths); the caller's config may die right after
 *     wasi_ctx_new.
 *   - Deny by default: fds 0-2 are the stdio streams (buffers, or the
 *     host's callbacks when the config streams them), fds 3.. are exactly
 *     the granted preopens, in order; there is no environment, no network,
 *     no other descriptor.
 *   - A preopen's host path is canonicalised (realpath) before it is opened
 *     and the canonical path is what wasi_preopen_host_path reports: a
 *     grant of a symlink to /etc is reported, and audited, as /etc.
 *   - A read-only preopen carries no right that modifies the filesystem, in
 *     its base rights nor in the rights it passes on (inheriting), and is
 *     marked read_only, so nothing opened beneath it can write either.
 *   - Signatures follow phases/snapshot witx (legacy/preview1/witx/
 *     wasi_snapshot_preview1.witx): handles, pointers, sizes, u8/u16/u32
 *     enums and flags are i32; u64 values (filesize, filedelta, timestamp,
 *     rights, dircookie) are i64; each returned value becomes a trailing
 *     out-pointer; every function returns an i32 errno except proc_exit,
 *     which returns nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "wasi_host.h"

#define WASI_MODULE "wasi_snapshot_preview1"

/* ---- rights --------------------------------------------------------------- */

/* What a directory descriptor can do (no fd_read/fd_write/fd_seek: those
 * apply to files). */
#define RIGHTS_DIR_BASE                                                                     \
    (WASI_RIGHT_FD_FDSTAT_SET_FLAGS | WASI_RIGHT_FD_SYNC | WASI_RIGHT_FD_DATASYNC |         \
     WASI_RIGHT_FD_ADVISE | WASI_RIGHT_PATH_CREATE_DIRECTORY | WASI_RIGHT_PATH_CREATE_FILE | \
     WASI_RIGHT_PATH_LINK_SOURCE | WASI_RIGHT_PATH_LINK_TARGET | WASI_RIGHT_PATH_OPEN |      \
     WASI_RIGHT_FD_READDIR | WASI_RIGHT_PATH_READLINK | WASI_RIGHT_PATH_RENAME_SOURCE |      \
     WASI_RIGHT_PATH_RENAME_TARGET | WASI_RIGHT_PATH_FILESTAT_GET |                         \
     WASI_RIGHT_PATH_FILESTAT_SET_SIZE | WASI_RIGHT_PATH_FILESTAT_SET_TIMES |               \
     WASI_RIGHT_FD_FILESTAT_GET | WASI_RIGHT_FD_FILESTAT_SET_TIMES | WASI_RIGHT_PATH_SYMLINK | \
     WASI_RIGHT_PATH_REMOVE_DIRECTORY | WASI_RIGHT_PATH_UNLINK_FILE |                       \
     WASI_RIGHT_POLL_FD_READWRITE)
/* What descriptors opened beneath a preopen may get: everything but
 * sockets (there are none). */
#define RIGHTS_DIR_INHERITING \
    (WASI_RIGHTS_ALL & ~(WASI_RIGHT_SOCK_SHUTDOWN | WASI_RIGHT_SOCK_ACCEPT))
/* Every right that changes the filesystem: removed from read-only grants.
 * fd_sync/fd_datasync stay (flushing changes nothing), and so does
 * path_link_source (the target directory needs path_link_target). */
#define RIGHTS_MODIFY                                                                        \
    (WASI_RIGHT_FD_WRITE | WASI_RIGHT_FD_ALLOCATE | WASI_RIGHT_PATH_CREATE_DIRECTORY |      \
     WASI_RIGHT_PATH_CREATE_FILE | WASI_RIGHT_PATH_LINK_TARGET |                            \
     WASI_RIGHT_PATH_RENAME_SOURCE | WASI_RIGHT_PATH_RENAME_TARGET |                        \
     WASI_RIGHT_PATH_FILESTAT_SET_SIZE | WASI_RIGHT_PATH_FILESTAT_SET_TIMES |               \
     WASI_RIGHT_FD_FILESTAT_SET_SIZE | WASI_RIGHT_FD_FILESTAT_SET_TIMES |                   \
     WASI_RIGHT_PATH_SYMLINK | WASI_RIGHT_PATH_REMOVE_DIRECTORY | WASI_RIGHT_PATH_UNLINK_FILE)
/* The stdio pipes: one direction each, no seeking, no inheritance. */
#define RIGHTS_STDIO (WASI_RIGHT_FD_FDSTAT_SET_FLAGS | WASI_RIGHT_FD_FILESTAT_GET | \
                      WASI_RIGHT_POLL_FD_READWRITE)
#define RIGHTS_STDIN (RIGHTS_STDIO | WASI_RIGHT_FD_READ)
#define RIGHTS_STDOUT (RIGHTS_STDIO | WASI_RIGHT_FD_WRITE)

/* ---- context ----------------------------------------------------------------------- */

static void free_strings(char **list, size_t n) {
    if (!list) return;
    for (size_t i = 0; i < n; i++) free(list[i]);
    free(list);
}

/* argv/env copies. Their counts and byte totals must fit the witx "size"
 * (u32) that args_sizes_get/environ_sizes_get return. */
static bool copy_strings(char ***out, const char *const *src, size_t n, const char *what,
                         al_error *err) {
    *out = NULL;
    if (n == 0) return true;
    if (!src || n > UINT32_MAX / 4) {
        al_error_set(err, AL_ERR_ARGUMENT, "wasi: %zu %s strings (array %s)", n, what,
                     src ? "too long" : "missing");
        return false;
    }
    char **list = calloc(n, sizeof *list);
    if (!list) {
        al_error_set(err, AL_ERR_NOMEM, "wasi: out of memory copying %s", what);
        return false;
    }
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        if (!src[i]) {
            al_error_set(err, AL_ERR_ARGUMENT, "wasi: %s string %zu is NULL", what, i);
        } else if ((bytes += strlen(src[i]) + 1) > UINT32_MAX) {
            al_error_set(err, AL_ERR_LIMIT, "wasi: %s strings exceed 4 GiB", what);
        } else if (!(list[i] = strdup(src[i]))) {
            al_error_set(err, AL_ERR_NOMEM, "wasi: out of memory copying %s", what);
        } else {
            continue;
        }
        free_strings(list, i);
        return false;
    }
    *out = list;
    return true;
}

/* The environment is "KEY=VALUE" strings (witx environ_get: "Key/value pairs
 * are expected to be joined with `=`s"); anything else is a policy bug. */
static bool check_env(const wasi_config *config, al_error *err) {
    for (size_t i = 0; i < config->nenv; i++) {
        if (config->env && config->env[i] && !strchr(config->env[i], '=')) {
            al_error_set(err, AL_ERR_ARGUMENT, "wasi: environment entry \"%s\" is not KEY=VALUE",
                         config->env[i]);
            return false;
        }
    }
    return true;
}

static bool install_stdio(wasi_ctx *ctx, al_error *err) {
    static const struct { wasi_fd_kind kind; uint64_t rights; } stdio[3] = {
        {WASI_FD_STDIN, RIGHTS_STDIN},
        {WASI_FD_STDOUT, RIGHTS_STDOUT},
        {WASI_FD_STDERR, RIGHTS_STDOUT},
    };
    for (int i = 0; i < 3; i++) {
        wasi_fd e = {.kind = stdio[i].kind, .host_fd = -1, .preopen = -1,
                     .rights_base = stdio[i].rights};
        if (wasi_fd_install(ctx, &e) != i) {
            al_error_set(err, AL_ERR_NOMEM, "wasi: out of memory for the fd table");
            return false;
        }
    }
    return true;
}

/* Canonicalise, open and install preopen i as the next fd. realpath fails
 * for a missing path; O_DIRECTORY makes open fail for anything but a
 * directory. The canonical path is opened with O_NOFOLLOW: if its last
 * component was swapped for a symlink since realpath, the grant fails
 * rather than following it somewhere else. */
static bool open_preopen(wasi_ctx *ctx, size_t i, const wasi_preopen_config *pc, al_error *err) {
    wasi_preopen *p = &ctx->preopens[i];
    if (!pc->host_path || !pc->guest_path || !pc->guest_path[0]) {
        al_error_set(err, AL_ERR_ARGUMENT, "wasi: preopen %zu: host and guest paths are required", i);
        return false;
    }
    p->read_only = pc->read_only;
    if (!(p->guest_path = strdup(pc->guest_path))) {
        al_error_set(err, AL_ERR_NOMEM, "wasi: out of memory");
        return false;
    }
    if (!(p->host_path = realpath(pc->host_path, NULL))) {
        al_error_set(err, errno == ENOMEM ? AL_ERR_NOMEM : AL_ERR_ARGUMENT,
                     "wasi: cannot grant directory \"%s\": %s", pc->host_path, strerror(errno));
        return false;
    }
    int fd = open(p->host_path, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        al_error_set(err, AL_ERR_ARGUMENT, "wasi: cannot grant directory \"%s\" (%s): %s",
                     pc->host_path, p->host_path,
                     errno == ENOTDIR ? "not a directory" : strerror(errno));
        return false;
    }
    uint64_t drop = p->read_only ? RIGHTS_MODIFY : 0;
    wasi_fd e = {.kind = WASI_FD_DIR, .host_fd = fd, .read_only = p->read_only,
                 .preopen = (int)i, .rights_base = RIGHTS_DIR_BASE & ~drop,
                 .rights_inheriting = RIGHTS_DIR_INHERITING & ~drop};
    if (wasi_fd_install(ctx, &e) < 0) {
        close(fd);
        al_error_set(err, AL_ERR_LIMIT, "wasi: too many preopens (at most %u descriptors)",
                     WASI_MAX_FDS);
        return false;
    }
    return true;
}

static bool copy_stdin(wasi_ctx *ctx, const wasi_config *config, al_error *err) {
    if (config->stdin_read && config->stdin_len > 0) {
        al_error_set(err, AL_ERR_ARGUMENT, "wasi: both stdin_data and stdin_read given");
        return false;
    }
    if (config->stdin_len == 0) return true;
    if (!config->stdin_data) {
        al_error_set(err, AL_ERR_ARGUMENT, "wasi: stdin_len %zu without stdin_data",
                     config->stdin_len);
        return false;
    }
    if (!(ctx->stdin_data = malloc(config->stdin_len))) {
        al_error_set(err, AL_ERR_NOMEM, "wasi: out of memory copying stdin");
        return false;
    }
    memcpy(ctx->stdin_data, config->stdin_data, config->stdin_len);
    ctx->stdin_len = config->stdin_len;
    return true;
}

static bool ctx_fill(wasi_ctx *ctx, const wasi_config *config, al_error *err) {
    if (!check_env(config, err) ||
        !copy_strings(&ctx->argv, config->argv, config->argc, "argv", err))
        return false;
    ctx->argc = config->argc;
    if (!copy_strings(&ctx->env, config->env, config->nenv, "environment", err)) return false;
    ctx->nenv = config->nenv;
    if (!copy_stdin(ctx, config, err) || !install_stdio(ctx, err)) return false;
    if (config->npreopens > 0) {
        if (!config->preopens) {
            al_error_set(err, AL_ERR_ARGUMENT, "wasi: npreopens %zu without preopens",
                         config->npreopens);
            return false;
        }
        if (!(ctx->preopens = calloc(config->npreopens, sizeof *ctx->preopens))) {
            al_error_set(err, AL_ERR_NOMEM, "wasi: out of memory");
            return false;
        }
        for (size_t i = 0; i < config->npreopens; i++) {
            ctx->npreopens = i + 1; /* so wasi_ctx_free frees what this one holds */
            if (!open_preopen(ctx, i, &config->preopens[i], err)) return false;
        }
    }
    return true;
}

wasi_ctx *wasi_ctx_new(const wasi_config *config, al_error *err) {
    if (!config) {
        al_error_set(err, AL_ERR_ARGUMENT, "wasi: no config");
        return NULL;
    }
    wasi_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        al_error_set(err, AL_ERR_NOMEM, "wasi: out of memory");
        return NULL;
    }
    ctx->out.cap = config->stdout_cap;
    ctx->err.cap = config->stderr_cap;
    ctx->out.stream = 1;
    ctx->err.stream = 2;
    ctx->out.on_output = ctx->err.on_output = config->on_output;
    ctx->out.on_output_arg = ctx->err.on_output_arg = config->on_output_arg;
    ctx->out.unbuffered = ctx->err.unbuffered = config->output_unbuffered;
    ctx->stdin_read = config->stdin_read;
    ctx->stdin_arg = config->stdin_arg;
    ctx->deadline_ns = config->deadline_ns;
    ctx->store = config->store;
    if (!ctx_fill(ctx, config, err)) {
        wasi_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

void wasi_ctx_free(wasi_ctx *ctx) {
    if (!ctx) return;
    for (uint32_t i = 0; i < ctx->nfds; i++)
        if (ctx->fds[i].kind != WASI_FD_FREE) wasi_fd_release(&ctx->fds[i]);
    free(ctx->fds);
    free_strings(ctx->argv, ctx->argc);
    free_strings(ctx->env, ctx->nenv);
    for (size_t i = 0; i < ctx->npreopens; i++) {
        free(ctx->preopens[i].host_path);
        free(ctx->preopens[i].guest_path);
    }
    free(ctx->preopens);
    free(ctx->stdin_data);
    free(ctx->out.data);
    free(ctx->err.data);
    free(ctx);
}

/* ---- the import table ------------------------------------------------------------- */

/* Core-wasm signature of each function, transcribed from the witx: 'i' is
 * i32, 'I' is i64; RET is the i32 errno result, NORET proc_exit's none. A
 * function in WASI_FUNCTIONS without a SIG_ entry does not compile. */
#define RET "i"
#define NORET ""
#define SIG_args_get "ii", RET                  /* argv, argv_buf */
#define SIG_args_sizes_get "ii", RET            /* -> argc, argv_buf_size */
#define SIG_environ_get "ii", RET               /* environ, environ_buf */
#define SIG_environ_sizes_get "ii", RET         /* -> count, buf_size */
#define SIG_clock_res_get "ii", RET             /* id; -> timestamp */
#define SIG_clock_time_get "iIi", RET           /* id, precision; -> timestamp */
#define SIG_fd_advise "iIIi", RET               /* fd, offset, len, advice */
#define SIG_fd_allocate "iII", RET              /* fd, offset, len */
#define SIG_fd_close "i", RET                   /* fd */
#define SIG_fd_datasync "i", RET                /* fd */
#define SIG_fd_fdstat_get "ii", RET             /* fd; -> fdstat */
#define SIG_fd_fdstat_set_flags "ii", RET       /* fd, fdflags */
#define SIG_fd_fdstat_set_rights "iII", RET     /* fd, base, inheriting */
#define SIG_fd_filestat_get "ii", RET           /* fd; -> filestat */
#define SIG_fd_filestat_set_size "iI", RET      /* fd, size */
#define SIG_fd_filestat_set_times "iIIi", RET   /* fd, atim, mtim, fst_flags */
#define SIG_fd_pread "iiiIi", RET               /* fd, iovs, iovs_len, offset; -> size */
#define SIG_fd_prestat_get "ii", RET            /* fd; -> prestat */
#define SIG_fd_prestat_dir_name "iii", RET      /* fd, path, path_len */
#define SIG_fd_pwrite "iiiIi", RET              /* fd, iovs, iovs_len, offset; -> size */
#define SIG_fd_read "iiii", RET                 /* fd, iovs, iovs_len; -> size */
#define SIG_fd_readdir "iiiIi", RET             /* fd, buf, buf_len, cookie; -> size */
#define SIG_fd_renumber "ii", RET               /* fd, to */
#define SIG_fd_seek "iIii", RET                 /* fd, filedelta, whence; -> filesize */
#define SIG_fd_sync "i", RET                    /* fd */
#define SIG_fd_tell "ii", RET                   /* fd; -> filesize */
#define SIG_fd_write "iiii", RET                /* fd, iovs, iovs_len; -> size */
#define SIG_path_create_directory "iii", RET    /* fd, path, path_len */
#define SIG_path_filestat_get "iiiii", RET      /* fd, lookupflags, path, len; -> filestat */
#define SIG_path_filestat_set_times "iiiiIIi", RET /* fd, flags, path, len, atim, mtim, fst */
#define SIG_path_link "iiiiiii", RET            /* old_fd, flags, old, len, new_fd, new, len */
#define SIG_path_open "iiiiiIIii", RET          /* fd, dirflags, path, len, oflags, base, \
                                                   inheriting, fdflags; -> fd */
#define SIG_path_readlink "iiiiii", RET         /* fd, path, len, buf, buf_len; -> size */
#define SIG_path_remove_directory "iii", RET    /* fd, path, len */
#define SIG_path_rename "iiiiii", RET           /* fd, old, len, new_fd, new, len */
#define SIG_path_symlink "iiiii", RET           /* old, len, fd, new, len */
#define SIG_path_unlink_file "iii", RET         /* fd, path, len */
#define SIG_poll_oneoff "iiii", RET             /* in, out, nsubscriptions; -> size */
#define SIG_proc_exit "i", NORET                /* rval (noreturn) */
#define SIG_proc_raise "i", RET                 /* signal */
#define SIG_sched_yield "", RET
#define SIG_random_get "ii", RET                /* buf, buf_len */
#define SIG_sock_accept "iii", RET              /* fd, fdflags; -> fd */
#define SIG_sock_recv "iiiiii", RET             /* fd, iovs, len, riflags; -> size, roflags */
#define SIG_sock_send "iiiii", RET              /* fd, iovs, len, siflags; -> size */
#define SIG_sock_shutdown "ii", RET             /* fd, sdflags */

typedef struct wasi_import {
    const char *name;
    al_host_fn fn;
    const char *params, *results;
} wasi_import;

#define WASI_IMPORT_ROW(name) {#name, wasi_##name, SIG_##name},
static const wasi_import wasi_imports[] = {WASI_FUNCTIONS(WASI_IMPORT_ROW)};
#undef WASI_IMPORT_ROW

#define WASI_COUNT_ONE(name) +1
_Static_assert(sizeof wasi_imports / sizeof wasi_imports[0] == 0 WASI_FUNCTIONS(WASI_COUNT_ONE),
               "one import per WASI function");
_Static_assert(sizeof wasi_imports / sizeof wasi_imports[0] == 46,
               "wasi_snapshot_preview1 has 46 functions");
#undef WASI_COUNT_ONE

enum { MAX_PARAMS = 9 }; /* path_open */

static uint32_t decode_types(const char *sig, uint8_t *out) {
    uint32_t n = 0;
    for (; sig[n]; n++) out[n] = sig[n] == 'I' ? AL_I64 : AL_I32;
    return n;
}

static al_func *import_func(wasi_ctx *ctx, al_store *store, const wasi_import *imp) {
    uint8_t params[MAX_PARAMS], results[1];
    al_functype type;
    type.nparams = decode_types(imp->params, params);
    type.nresults = decode_types(imp->results, results);
    type.params = params;
    type.results = results;
    return al_func_new_host(store, &type, imp->fn, ctx);
}

static bool define_one(wasi_ctx *ctx, al_store *store, al_imports *imports,
                       const wasi_import *imp, al_error *err) {
    al_func *f = import_func(ctx, store, imp);
    al_extern ext = {.kind = AL_EXTERN_FUNC, .of.func = f};
    if (f && al_imports_define(imports, WASI_MODULE, imp->name, ext)) return true;
    al_error_set(err, AL_ERR_NOMEM, "wasi: cannot define %s.%s", WASI_MODULE, imp->name);
    return false;
}

static const wasi_import *find_import(const char *name) {
    for (size_t i = 0; i < sizeof wasi_imports / sizeof wasi_imports[0]; i++)
        if (!strcmp(wasi_imports[i].name, name)) return &wasi_imports[i];
    return NULL;
}

bool wasi_define_imports(wasi_ctx *ctx, al_store *store, al_imports *imports, al_error *err) {
    return wasi_define_imports_for(ctx, store, imports, NULL, err);
}

/* Creating a host function costs an allocation and a signature lookup per
 * store: a module that imports 5 of the 46 gets only those 5 (an import we
 * do not provide is left to the linker, which names it). */
bool wasi_define_imports_for(wasi_ctx *ctx, al_store *store, al_imports *imports,
                             const al_module *module, al_error *err) {
    if (!ctx || !store || !imports) {
        al_error_set(err, AL_ERR_ARGUMENT, "wasi: define imports: missing context, store or imports");
        return false;
    }
    if (!module) {
        for (size_t i = 0; i < sizeof wasi_imports / sizeof wasi_imports[0]; i++)
            if (!define_one(ctx, store, imports, &wasi_imports[i], err)) return false;
        return true;
    }
    uint32_t n = al_module_import_count(module);
    for (uint32_t i = 0; i < n; i++) {
        const char *mod = NULL, *name = NULL;
        al_extern_kind kind;
        if (!al_module_import(module, i, &mod, &name, &kind) || kind != AL_EXTERN_FUNC || !mod ||
            !name || strcmp(mod, WASI_MODULE))
            continue;
        const wasi_import *imp = find_import(name);
        if (imp && !define_one(ctx, store, imports, imp, err)) return false;
    }
    return true;
}

/* ---- after the run ------------------------------------------------------------------ */

bool wasi_exited(const wasi_ctx *ctx, int *exit_code) {
    if (exit_code) *exit_code = ctx->exited ? ctx->exit_code : 0;
    return ctx->exited;
}

static const uint8_t *out_result(const wasi_out *out, size_t *len, bool *truncated) {
    if (len) *len = out->len;
    if (truncated) *truncated = out->truncated;
    return out->data;
}

const uint8_t *wasi_stdout(const wasi_ctx *ctx, size_t *len, bool *truncated) {
    return out_result(&ctx->out, len, truncated);
}

const uint8_t *wasi_stderr(const wasi_ctx *ctx, size_t *len, bool *truncated) {
    return out_result(&ctx->err, len, truncated);
}

const char *wasi_preopen_host_path(const wasi_ctx *ctx, size_t i) {
    return ctx && i < ctx->npreopens ? ctx->preopens[i].host_path : NULL;
}
