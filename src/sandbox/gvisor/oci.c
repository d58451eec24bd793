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
 *    a 16 MiB /dev/shm tmpfs,
 *    the host's /usr (and /etc/ld.so.cache, /etc/alternatives, /etc/ssl/certs
 *    when present) read-only, and the granted directories ro or rw;
 *  - namespaces: pid, network, ipc, uts, mount. No devices, no network
 *    (runsc runs with --network=none: loopback only inside) unless the
 *    policy grants egress: then the network namespace is the egress one
 *    (netns.c: loopback and the proxy's listener) and runsc runs with
 *    --network=host inside it;
 *  - linux.seccomp: the native backend's deny-list (native/seccomp.c), which
 *    the sentry enforces on the program inside gVisor (runsc --oci-seccomp;
 *    see seccomp_json for what this runsc honours and what it does not).
 * Resources are not in linux.resources: see gvisor.h for why the cgroup is
 * airlock's.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "gvisor.h"
#include "net.h"

#define DEFAULT_PATH "PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
#define DEFAULT_OPEN_FILES 256

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef SOCK_PACKET
#define SOCK_PACKET 10
#endif

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
    if (egress_enabled(&p->egress))
        for (size_t i = 0; egress_proxy_env[i]; i++) append(env, json_string(egress_proxy_env[i]), ok);
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
    /* POSIX shared memory (multiprocessing's locks and pools) needs a
     * writable /dev/shm; like native's, small and never executable. */
    append(m, json_pack("{s:s, s:s, s:s, s:[s, s, s, s, s]}", "destination", "/dev/shm", "type",
                        "tmpfs", "source", "shm", "options", "nosuid", "nodev", "noexec",
                        "mode=1777", "size=16m"), ok);
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

/* ---- linux.seccomp ------------------------------------------------------------
 *
 * The native backend's deny-list, written as OCI rules: every name in
 * seccomp_denied_syscalls (native/seccomp.c) refused whatever its arguments,
 * and the same argument rules for socket, socketpair, clone, ioctl and
 * personality (the add_*_rules of native/seccomp.c; keep the two in step);
 * plus device nodes (mknod, mknodat), which Linux refuses the native
 * program by capability but this gVisor does not. Refused calls fail with
 * EPERM.
 *
 * Why inside gVisor: these calls reach only gVisor's own kernel, never the
 * host's. But without the filter a program with no capabilities may still
 * unshare a user namespace (and with the capabilities it has there mount,
 * or open raw sockets), make device nodes and open netlink sockets: a
 * sentry bug reachable only through those paths is a sandbox escape. With
 * the filter it stays unreachable, and both backends refuse the same calls.
 *
 * How runsc 0.0~20221219 reads it (each point checked with real programs;
 * tests/unit/test_gvisor.c pins the ones a runsc upgrade could change):
 *  - only with --oci-seccomp (gvisor_argv always passes it). Without it the
 *    sentry logs "Seccomp spec is being ignored" and runs the program
 *    unfiltered.
 *  - errnoRet is ignored: every SCMP_ACT_ERRNO returns EPERM. That is why
 *    clone3 is not here: the native filter makes it fail with ENOSYS (its
 *    flags are in memory, out of BPF's sight; glibc then falls back to
 *    clone(2), whose flags the clone rules see), but EPERM would make
 *    glibc's pthread_create fail outright — no thread could start. This
 *    gVisor does not implement clone3 (ENOSYS whatever its arguments), so no
 *    namespace can be made through it either.
 *  - the filter is loaded into the container's process (`runsc run`, a
 *    session's idle init) and inherited by everything it forks. Processes
 *    started by `runsc exec` (session executions) do NOT get it: this runsc
 *    builds the OCI filter only when it creates the container's process
 *    (upstream fixed that in 2026, google/gvisor#12692).
 *  - a rule's comparisons must all hold (AND) as long as each argument index
 *    appears once in it; runc and runsc OR comparisons of a repeated index.
 *    No rule here repeats an index, so both readings agree.
 *  - comparisons are on all 64 bits, as libseccomp's are: the masks are the
 *    native filter's (the kernel, and gVisor, read int arguments as 32 bits,
 *    so a value with upper bits set must not slip past an equality).
 *  - names gVisor's syscall table does not have are skipped (with a warning
 *    in the sandbox's log); gVisor does not implement them. Architectures
 *    are ignored: gVisor runs no 32-bit system calls at all.
 */
#define SECCOMP_CMP_EQ "SCMP_CMP_EQ"
#define SECCOMP_CMP_GT "SCMP_CMP_GT"
#define SECCOMP_CMP_MASKED_EQ "SCMP_CMP_MASKED_EQ" /* (arg & value) == valueTwo */

#if defined(__x86_64__)
#define SECCOMP_ARCH "SCMP_ARCH_X86_64"
#elif defined(__aarch64__)
#define SECCOMP_ARCH "SCMP_ARCH_AARCH64"
#endif /* else none: gVisor runs on x86_64 and arm64 only */

/* One comparison of argument index. Every value here is below 2^32, so it
 * fits json_int_t. */
static json_t *arg_json(unsigned index, const char *op, uint64_t value, uint64_t value_two) {
    return json_pack("{s:I, s:I, s:I, s:s}", "index", (json_int_t)index, "value",
                     (json_int_t)value, "valueTwo", (json_int_t)value_two, "op", op);
}

/* The comparisons of one rule: first, and second unless NULL. Takes both. */
static json_t *args_json(json_t *first, json_t *second, bool *ok) {
    json_t *a = json_array();
    if (!a) {
        json_decref(first);
        json_decref(second);
        *ok = false;
        return NULL;
    }
    append(a, first, ok);
    if (second) append(a, second, ok);
    return a;
}

/* Refuse names (NULL-terminated) with EPERM when every comparison in args
 * holds; args NULL: always. Takes args. */
static void deny(json_t *syscalls, const char *const *names, json_t *args, bool *ok) {
    json_t *rule = json_pack("{s:s, s:I}", "action", "SCMP_ACT_ERRNO", "errnoRet",
                             (json_int_t)EPERM);
    if (!rule) {
        json_decref(args);
        *ok = false;
        return;
    }
    json_t *list = json_array();
    for (size_t i = 0; list && names[i]; i++) append(list, json_string(names[i]), ok);
    set(rule, "names", list, ok);
    if (args) set(rule, "args", args, ok);
    append(syscalls, rule, ok);
}

static void deny_with_arg(json_t *syscalls, const char *const *names, json_t *arg, bool *ok) {
    deny(syscalls, names, args_json(arg, NULL, ok), ok);
}

/* socket and socketpair: AF_UNIX, AF_INET and AF_INET6 only (native:
 * add_family_rules). GT catches every family above AF_INET6, and any value
 * with upper bits set (which the kernel would truncate to a small family). */
static void deny_socket_families(json_t *syscalls, bool *ok) {
    static const char *const socket_calls[] = {"socket", "socketpair", NULL};
    deny_with_arg(syscalls, socket_calls, arg_json(0, SECCOMP_CMP_GT, AF_INET6, 0), ok);
    for (uint64_t family = 0; family < AF_INET6; family++) {
        if (family == AF_UNIX || family == AF_INET) continue;
        deny_with_arg(syscalls, socket_calls, arg_json(0, SECCOMP_CMP_EQ, family, 0), ok);
    }
}

/* socket(AF_INET or AF_INET6, SOCK_RAW or SOCK_PACKET): forged packets
 * (native: add_raw_socket_rules). The type is its low 4 bits; SOCK_NONBLOCK
 * and SOCK_CLOEXEC above them must not hide it. */
static void deny_raw_sockets(json_t *syscalls, bool *ok) {
    static const char *const socket_call[] = {"socket", NULL};
    static const uint64_t families[] = {AF_INET, AF_INET6};
    static const uint64_t types[] = {SOCK_RAW, SOCK_PACKET};
    for (size_t f = 0; f < 2; f++)
        for (size_t t = 0; t < 2; t++)
            deny(syscalls, socket_call,
                 args_json(arg_json(0, SECCOMP_CMP_EQ, families[f], 0),
                           arg_json(1, SECCOMP_CMP_MASKED_EQ, 0xf, types[t]), ok),
                 ok);
}

/* clone(2) with any namespace flag (native: add_clone_rules), one rule per
 * flag. clone3 is left to gVisor, which does not implement it: see above. */
static void deny_clone_namespaces(json_t *syscalls, bool *ok) {
    static const char *const clone_call[] = {"clone", NULL};
    static const uint64_t flags[] = {
        CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID,    CLONE_NEWNET,
        CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP, CLONE_NEWTIME,
    };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        deny_with_arg(syscalls, clone_call,
                      arg_json(0, SECCOMP_CMP_MASKED_EQ, flags[i], flags[i]), ok);
}

/* ioctl TIOCSTI and TIOCLINUX: typing into a terminal (native:
 * add_ioctl_rules). The request is an unsigned int: 32-bit mask. */
static void deny_terminal_injection(json_t *syscalls, bool *ok) {
    static const char *const ioctl_call[] = {"ioctl", NULL};
    static const uint64_t requests[] = {TIOCSTI, TIOCLINUX};
    for (size_t i = 0; i < 2; i++)
        deny_with_arg(syscalls, ioctl_call,
                      arg_json(1, SECCOMP_CMP_MASKED_EQ, 0xffffffffu, requests[i]), ok);
}

/* personality(2): only PER_LINUX, PER_LINUX32, UNAME26, both, and the query
 * 0xffffffff. The same union of masked equalities as native/seccomp.c's
 * add_personality_rules, which explains it: with O the 30 bits other than
 * the two allowed flag bits, "bit b of O set and the next bit of O clear"
 * for each b, plus "O all set and one allowed flag bit clear". */
static void deny_personality(json_t *syscalls, bool *ok) {
    static const char *const personality_call[] = {"personality", NULL};
    const uint32_t allowed_bits = PER_LINUX32 | UNAME26;
    const uint32_t others = ~allowed_bits;
    int bits[32], nbits = 0;
    for (int b = 0; b < 32; b++)
        if (others & (UINT32_C(1) << b)) bits[nbits++] = b;
    for (int i = 0; i < nbits; i++) {
        uint64_t set_bit = UINT64_C(1) << bits[i];
        uint64_t clear_bit = UINT64_C(1) << bits[(i + 1) % nbits];
        deny_with_arg(syscalls, personality_call,
                      arg_json(0, SECCOMP_CMP_MASKED_EQ, set_bit | clear_bit, set_bit), ok);
    }
    static const uint32_t one_clear[] = {PER_LINUX32, UNAME26};
    for (size_t i = 0; i < 2; i++)
        deny_with_arg(syscalls, personality_call,
                      arg_json(0, SECCOMP_CMP_MASKED_EQ, others | one_clear[i], others), ok);
}

/* mknod and mknodat of a character or block device. Not in the native list:
 * Linux itself requires CAP_MKNOD for device nodes, which the native
 * backend's program never has. This gVisor does not: uid 1000 without
 * capabilities can make any device node in its /tmp tmpfs and open it
 * despite nodev (checked with /dev/fuse, 10:229, which opens the sentry's
 * FUSE device). FIFOs, sockets and regular files stay allowed (mkfifo).
 * The mode is an unsigned int; only its S_IFMT bits are compared. */
static void deny_device_nodes(json_t *syscalls, bool *ok) {
    static const char *const mknod_call[] = {"mknod", NULL};
    static const char *const mknodat_call[] = {"mknodat", NULL};
    static const uint64_t types[] = {S_IFCHR, S_IFBLK};
    for (size_t i = 0; i < 2; i++) {
        deny_with_arg(syscalls, mknod_call, arg_json(1, SECCOMP_CMP_MASKED_EQ, S_IFMT, types[i]),
                      ok);
        deny_with_arg(syscalls, mknodat_call,
                      arg_json(2, SECCOMP_CMP_MASKED_EQ, S_IFMT, types[i]), ok);
    }
}

static json_t *seccomp_json(bool *ok) {
    json_t *s = json_pack("{s:s, s:[]}", "defaultAction", "SCMP_ACT_ALLOW", "architectures");
    json_t *syscalls = json_array();
    if (!s || !syscalls) {
        json_decref(s);
        json_decref(syscalls);
        *ok = false;
        return NULL;
    }
#ifdef SECCOMP_ARCH
    append(json_object_get(s, "architectures"), json_string(SECCOMP_ARCH), ok);
#endif
    deny(syscalls, seccomp_denied_syscalls, NULL, ok);
    deny_socket_families(syscalls, ok);
    deny_raw_sockets(syscalls, ok);
    deny_clone_namespaces(syscalls, ok);
    deny_terminal_injection(syscalls, ok);
    deny_personality(syscalls, ok);
    deny_device_nodes(syscalls, ok);
    set(s, "syscalls", syscalls, ok);
    return s;
}

/* netns_path: the egress namespace to join (runsc --network=host); NULL:
 * a new, empty one. */
static json_t *linux_json(const char *netns_path, bool *ok) {
    json_t *network = netns_path ? json_pack("{s:s, s:s}", "type", "network", "path", netns_path)
                                 : json_pack("{s:s}", "type", "network");
    json_t *l = json_pack("{s:[{s:s}, o, {s:s}, {s:s}, {s:s}]}", "namespaces", "type", "pid",
                          network, "type", "ipc", "type", "uts", "type", "mount");
    if (!l) {
        *ok = false;
        return NULL;
    }
    set(l, "seccomp", seccomp_json(ok), ok);
    return l;
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
                         const char *const *argv, size_t argc, const char *netns_path,
                         al_error *err) {
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
    set(root, "linux", linux_json(netns_path, &ok), &ok);
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
