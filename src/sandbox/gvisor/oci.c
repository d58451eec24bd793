/*
 * oci.c — the OCI runtime spec files runsc reads: a bundle's config.json and
 * the process.json of `runsc exec --process`. Built with jansson, so every
 * string from the policy (argv, env, paths) is JSON-escaped by the library,
 * never pasted into text: a hostile argument cannot add a mount or a
 * capability to the spec.
 *
 * What the spec grants (everything else is denied by its absence):
 *  - process: uid/gid 1000, no capabilities in any set, noNewPrivileges,
 *    only the policy's environment plus PATH/HOME/LANG, rlimits from the
 *    policy (RLIMIT_NOFILE, RLIMIT_FSIZE, RLIMIT_NPROC, RLIMIT_CPU, no core);
 *  - root: the shared rootfs, read-only;
 *  - mounts: gVisor's own /proc, /dev (gVisor fills it with null, zero,
 *    full, random, urandom, tty, ptmx) and /sys, a size-capped /tmp tmpfs,
 *    the host's /usr (and /etc/ld.so.cache, /etc/alternatives, /etc/ssl/certs
 *    when present) read-only, and the granted directories ro or rw;
 *  - namespaces: pid, network, ipc, uts, mount. No devices, no network
 *    (runsc runs with --network=none: loopback only inside).
 * Resources are not in linux.resources: see gvisor.h for why the cgroup is
 * airlock's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gvisor.h"

#define DEFAULT_PATH "PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
#define DEFAULT_OPEN_FILES 256

const char *gvisor_guest_cwd(const al_policy *p) {
    if (p->cwd && p->cwd[0]) return p->cwd;
    if (p->ndirs > 0) return p->dirs[0].guest_path;
    return "/tmp";
}

/* json_array_append_new that remembers a failure instead of returning it. */
static void append(json_t *array, json_t *value, bool *ok) {
    if (!value || json_array_append_new(array, value) < 0) *ok = false;
}

static void set(json_t *object, const char *key, json_t *value, bool *ok) {
    if (!value || json_object_set_new(object, key, value) < 0) *ok = false;
}

static bool env_has(const al_policy *p, const char *key) {
    size_t n = strlen(key);
    for (size_t i = 0; i < p->nenv; i++)
        if (!strncmp(p->env[i], key, n) && p->env[i][n] == '=') return true;
    return false;
}

static json_t *env_json(const al_policy *p, bool *ok) {
    json_t *env = json_array();
    if (!env) {
        *ok = false;
        return NULL;
    }
    for (size_t i = 0; i < p->nenv; i++) append(env, json_string(p->env[i]), ok);
    /* The host environment is never inherited; these three make ordinary
     * programs work and can be overridden by the policy. */
    if (!env_has(p, "PATH")) append(env, json_string(DEFAULT_PATH), ok);
    if (!env_has(p, "HOME")) append(env, json_string("HOME=/tmp"), ok);
    if (!env_has(p, "LANG")) append(env, json_string("LANG=C.UTF-8"), ok);
    return env;
}

static json_t *strings_json(const char *const *v, size_t n, bool *ok) {
    json_t *a = json_array();
    if (!a) {
        *ok = false;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) append(a, json_string(v[i]), ok);
    return a;
}

static json_t *rlimit_json(const char *type, uint64_t soft, uint64_t hard) {
    return json_pack("{s:s, s:I, s:I}", "type", type, "soft", (json_int_t)soft, "hard",
                     (json_int_t)hard);
}

static json_t *rlimits_json(const al_policy *p, bool *ok) {
    json_t *r = json_array();
    if (!r) {
        *ok = false;
        return NULL;
    }
    uint64_t files = p->max_open_files ? p->max_open_files : DEFAULT_OPEN_FILES;
    append(r, rlimit_json("RLIMIT_NOFILE", files, files), ok);
    append(r, rlimit_json("RLIMIT_CORE", 0, 0), ok);
    if (p->max_file_size) append(r, rlimit_json("RLIMIT_FSIZE", p->max_file_size, p->max_file_size), ok);
    /* gVisor counts RLIMIT_NPROC per uid inside the sandbox, where every
     * process is uid 1000: it is the sandbox's process+thread limit. */
    if (p->max_processes) append(r, rlimit_json("RLIMIT_NPROC", p->max_processes, p->max_processes), ok);
    if (p->cpu_time_ms) {
        /* Per process, whole seconds; this gVisor ignores it, so wait.c
         * enforces the tree's CPU time from the cgroup. */
        uint64_t s = (p->cpu_time_ms + 999) / 1000;
        append(r, rlimit_json("RLIMIT_CPU", s, s + 1), ok);
    }
    return r;
}

static json_t *no_capabilities(void) {
    return json_pack("{s:[], s:[], s:[], s:[], s:[]}", "bounding", "effective", "inheritable",
                     "permitted", "ambient");
}

static json_t *process_json(const al_policy *p, const char *const *argv, size_t argc, bool *ok) {
    json_t *proc = json_pack("{s:b, s:{s:i, s:i}, s:s, s:b}", "terminal", 0, "user", "uid",
                             SANDBOX_GUEST_UID, "gid", SANDBOX_GUEST_GID, "cwd",
                             gvisor_guest_cwd(p), "noNewPrivileges", 1);
    if (!proc) {
        *ok = false;
        return NULL;
    }
    set(proc, "args", strings_json(argv, argc, ok), ok);
    set(proc, "env", env_json(p, ok), ok);
    set(proc, "capabilities", no_capabilities(), ok);
    set(proc, "rlimits", rlimits_json(p, ok), ok);
    return proc;
}

static json_t *bind_json(const char *dest, const char *source, bool read_only) {
    return json_pack("{s:s, s:s, s:s, s:[s, s, s, s]}", "destination", dest, "type", "bind",
                     "source", source, "options", "rbind", read_only ? "ro" : "rw", "nosuid",
                     "nodev");
}

static bool host_has(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 && !S_ISLNK(st.st_mode);
}

/* Granted directories: the host side canonicalised (no symlink left for a
 * hostile writer to retarget between now and runsc's open) and required to
 * be a directory. */
static bool add_grants(json_t *mounts, const al_policy *p, bool *ok, al_error *err) {
    for (size_t i = 0; i < p->ndirs; i++) {
        const al_dir_grant *d = &p->dirs[i];
        char *real = realpath(d->host_path, NULL);
        struct stat st;
        if (!real || stat(real, &st) < 0) {
            free(real);
            return sandbox_error_errno(err, "gvisor: granted directory %s", d->host_path);
        }
        if (!S_ISDIR(st.st_mode)) {
            free(real);
            return sandbox_error(err, AL_ERR_ARGUMENT, "gvisor: granted %s is not a directory",
                                 d->host_path);
        }
        append(mounts, bind_json(d->guest_path, real, d->read_only), ok);
        free(real);
    }
    return true;
}

static json_t *mounts_json(const al_policy *p, bool *ok, al_error *err) {
    json_t *m = json_array();
    if (!m) {
        *ok = false;
        return NULL;
    }
    append(m, json_pack("{s:s, s:s, s:s, s:[s, s, s]}", "destination", "/proc", "type", "proc",
                        "source", "proc", "options", "nosuid", "noexec", "nodev"), ok);
    append(m, json_pack("{s:s, s:s, s:s, s:[s, s, s]}", "destination", "/dev", "type", "tmpfs",
                        "source", "tmpfs", "options", "nosuid", "mode=755", "size=65536k"), ok);
    json_t *tmp = json_pack("{s:s, s:s, s:s, s:[s, s, s]}", "destination", "/tmp", "type",
                            "tmpfs", "source", "tmpfs", "options", "nosuid", "nodev", "mode=1777");
    if (tmp && p->tmpfs_bytes) { /* without a cap of its own /tmp is bounded by the memory limit */
        char size[48];
        snprintf(size, sizeof size, "size=%llu", (unsigned long long)p->tmpfs_bytes);
        append(json_object_get(tmp, "options"), json_string(size), ok);
    }
    append(m, tmp, ok);
    append(m, bind_json("/usr", "/usr", true), ok);
    for (size_t i = 0; gvisor_top_dirs[i]; i++) {
        if (gvisor_top_dir_kind(gvisor_top_dirs[i]) != 2) continue; /* not merged-/usr */
        char path[64];
        snprintf(path, sizeof path, "/%s", gvisor_top_dirs[i]);
        append(m, bind_json(path, path, true), ok);
    }
    /* The host's linker cache and alternatives symlinks (programs in /usr
     * need them), and CA certificates; nothing else of the host's /etc. */
    static const char *const etc_binds[] = {"/etc/ld.so.cache", "/etc/alternatives",
                                            "/etc/ssl/certs", NULL};
    for (size_t i = 0; etc_binds[i]; i++)
        if (host_has(etc_binds[i])) append(m, bind_json(etc_binds[i], etc_binds[i], true), ok);
    if (!add_grants(m, p, ok, err)) {
        json_decref(m);
        return NULL;
    }
    return m;
}

static json_t *linux_json(void) {
    return json_pack("{s:[{s:s}, {s:s}, {s:s}, {s:s}, {s:s}]}", "namespaces", "type", "pid",
                     "type", "network", "type", "ipc", "type", "uts", "type", "mount");
}

/* Write root to path, readable only by us (it can hold the policy's env). */
static bool dump(json_t *root, const char *path, al_error *err) {
    if (json_dump_file(root, path, JSON_INDENT(1) | JSON_ENSURE_ASCII) < 0) {
        if (errno == 0) errno = EIO;
        return sandbox_error_errno(err, "gvisor: writing %s", path);
    }
    chmod(path, 0600);
    return true;
}

bool gvisor_write_config(const char *bundle_dir, const char *rootfs, const al_policy *p,
                         const char *const *argv, size_t argc, al_error *err) {
    bool ok = true;
    if (!argv) {
        argv = p->argv;
        argc = p->argc;
    }
    json_t *root = json_pack("{s:s, s:s, s:{s:s, s:b}}", "ociVersion", "1.0.2", "hostname",
                             "airlock", "root", "path", rootfs, "readonly", 1);
    if (!root) return sandbox_error(err, AL_ERR_NOMEM, "gvisor: building config.json");
    set(root, "process", process_json(p, argv, argc, &ok), &ok);
    json_t *mounts = mounts_json(p, &ok, err);
    if (!mounts && ok) { /* add_grants refused a directory; err says which */
        json_decref(root);
        return false;
    }
    set(root, "mounts", mounts, &ok);
    set(root, "linux", linux_json(), &ok);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/config.json", bundle_dir);
    bool written = ok ? dump(root, path, err)
                      : sandbox_error(err, AL_ERR_NOMEM, "gvisor: building config.json");
    json_decref(root);
    return written;
}

bool gvisor_write_process(const char *path, const al_policy *p, const char *const *argv,
                          size_t argc, al_error *err) {
    bool ok = true;
    json_t *proc = process_json(p, argv, argc, &ok);
    bool written = ok ? dump(proc, path, err)
                      : sandbox_error(err, AL_ERR_NOMEM, "gvisor: building process.json");
    json_decref(proc);
    return written;
}
