/*
 * exec.c — al_exec: one policy in, one result out, whichever backend runs it.
 *
 * The policy is checked once here (sandbox_policy_check), so the backends
 * start from a policy whose pointers and limits are known to be sane. For
 * the wasm backend argv[0] names a module file on the host; it is read with
 * the policy's module-size cap before any byte is parsed. A policy whose
 * cancel flag is already raised runs nothing (AL_STATUS_CANCELLED); one
 * raised later is each backend's to honour (sandbox.h,
 * SANDBOX_CANCEL_POLL_MS).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox.h"

static const char *backend_name(al_isolation isolation) {
    switch (isolation) {
    case AL_ISOLATION_WASM: return "wasm";
    case AL_ISOLATION_NATIVE: return "native";
    case AL_ISOLATION_GVISOR: return "gvisor";
    }
    return "unknown";
}

/* Read at most cap bytes of path; a larger file is refused before it is read
 * whole, so a huge file costs nothing. */
static bool read_module(const char *path, size_t cap, uint8_t **out, size_t *len, al_result *r) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        sandbox_set_errno(r, "module %s", path);
        return false;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        sandbox_set_status(r, AL_STATUS_ERROR, AL_ERR_ARGUMENT, "module %s: not a regular file", path);
        return false;
    }
    if ((uint64_t)st.st_size > cap) {
        close(fd);
        sandbox_set_status(r, AL_STATUS_INVALID_MODULE, AL_ERR_LIMIT,
                           "module %s: %lld bytes is over the %zu-byte limit", path,
                           (long long)st.st_size, cap);
        return false;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *buf = malloc(size ? size : 1);
    size_t got = 0;
    while (buf && got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    if (!buf || got != size) {
        free(buf);
        sandbox_set_status(r, AL_STATUS_ERROR, AL_ERR_SYSTEM, "module %s: read failed", path);
        return false;
    }
    *out = buf;
    *len = size;
    return true;
}

static bool exec_wasm(const al_policy *policy, al_result *result) {
    uint8_t *module = NULL;
    size_t len = 0;
    if (policy->argc == 0 || !policy->argv || !policy->argv[0]) {
        sandbox_set_status(result, AL_STATUS_ERROR, AL_ERR_ARGUMENT,
                           "policy: argv: argv[0] must name the module file");
        return true;
    }
    if (!read_module(policy->argv[0], policy->max_module_bytes, &module, &len, result)) return true;
    bool ok = al_run_wasm(policy, module, len, result);
    free(module);
    return ok;
}

bool al_exec(const al_policy *policy, al_result *result) {
    if (!result) return false;
    memset(result, 0, sizeof *result);
    al_status status = sandbox_policy_check(policy, &result->error);
    if (status != AL_STATUS_OK) {
        result->status = status;
        /* outputs are always strings, even when nothing ran */
        result->stdout_data = calloc(1, 1);
        result->stderr_data = calloc(1, 1);
        if (policy) snprintf(result->backend, sizeof result->backend, "%s", backend_name(policy->isolation));
        return true;
    }
    snprintf(result->backend, sizeof result->backend, "%s", backend_name(policy->isolation));
    if (sandbox_cancel_requested(policy)) {
        /* Cancelled before it started: no sandbox is made at all. */
        sandbox_set_cancelled(result, policy, AL_OK);
        result->stdout_data = calloc(1, 1);
        result->stderr_data = calloc(1, 1);
        return true;
    }
    switch (policy->isolation) {
    case AL_ISOLATION_WASM: return exec_wasm(policy, result);
    case AL_ISOLATION_NATIVE: return native_run(policy, result);
    case AL_ISOLATION_GVISOR: return gvisor_run(policy, result);
    }
    sandbox_set_status(result, AL_STATUS_ERROR, AL_ERR_ARGUMENT, "policy: isolation: unknown");
    return true;
}
