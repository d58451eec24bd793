/*
 * landlock.c — the program's Landlock ruleset (see native.h, "landlock.c").
 *
 * Defence in depth behind the mount namespace: even if a mount were wrong
 * (a grant bound writable, a host path left reachable), the program can only
 *   read + execute   /usr /bin /sbin /lib* (the rules sit on the directories
 *                    the symlinks lead to, /usr/bin for /bin on merged /usr)
 *   read             /etc, /proc, and list "/" and /dev
 *   read + write     the /dev nodes (files only: no exec, no creating)
 *   everything       /tmp, /dev/shm and the :rw grants (but making device nodes)
 *   read + execute   the :ro grants
 * and, with ABI 6+, cannot signal or connect to an abstract unix socket of a
 * process outside its Landlock domain (init, the host).
 *
 * Execute on :ro grants is allowed on purpose: a read-only workspace of
 * scripts or prebuilt tools must run, and refusing it would buy nothing,
 * since whatever the program can read it can copy to /tmp (executable) or
 * feed to an interpreter.
 *
 * Invariants:
 *  - Runs in the program's process after pivot_root (paths are guest paths):
 *    no malloc, no stdio; every fd opened here is closed before returning.
 *  - Handles every filesystem right of the running ABI that this file knows
 *    (up to ABI 7), so anything not granted above is denied; rights of later
 *    ABIs stay unhandled (allowed) until this file learns them.
 *  - no_new_privs is set here before landlock_restrict_self (caps_drop_all
 *    sets it again, harmlessly): the order of the two calls does not matter.
 *  - TCP (ABI 4+) is left unhandled: the network namespace already has only
 *    loopback, and the egress issue will add its own rules.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "native.h"

/* The uapi header of older systems (Debian 12's knows ABI 2) lacks the later
 * rights and fields: the stable ABI is spelled out here. */
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

#define LL_CREATE_RULESET_VERSION (1u << 0)
#define LL_RULE_PATH_BENEATH 1

#define FS_EXECUTE (1ull << 0)
#define FS_WRITE_FILE (1ull << 1)
#define FS_READ_FILE (1ull << 2)
#define FS_READ_DIR (1ull << 3)
#define FS_REMOVE_DIR (1ull << 4)
#define FS_REMOVE_FILE (1ull << 5)
#define FS_MAKE_CHAR (1ull << 6)
#define FS_MAKE_DIR (1ull << 7)
#define FS_MAKE_REG (1ull << 8)
#define FS_MAKE_SOCK (1ull << 9)
#define FS_MAKE_FIFO (1ull << 10)
#define FS_MAKE_BLOCK (1ull << 11)
#define FS_MAKE_SYM (1ull << 12)
#define FS_REFER (1ull << 13)     /* ABI 2 */
#define FS_TRUNCATE (1ull << 14)  /* ABI 3 */
#define FS_IOCTL_DEV (1ull << 15) /* ABI 5 */

#define SCOPE_ABSTRACT_UNIX_SOCKET (1ull << 0) /* ABI 6 */
#define SCOPE_SIGNAL (1ull << 1)               /* ABI 6 */

#define KNOWN_ABI 7

typedef struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net; /* ABI 4 */
    uint64_t scoped;             /* ABI 6 */
} ll_ruleset_attr;

typedef struct __attribute__((packed)) ll_path_beneath {
    uint64_t allowed_access;
    int32_t parent_fd;
} ll_path_beneath;

/* Rights that apply to a file (the rest only to directories: adding them to
 * a rule on a file is EINVAL). */
#define FILE_RIGHTS (FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV)
#define READ_ONLY (FS_READ_FILE | FS_READ_DIR)
#define READ_EXEC (READ_ONLY | FS_EXECUTE)
#define DEV_NODE (FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE | FS_IOCTL_DEV)
/* A writable tree: everything but creating device nodes (the mounts are
 * nodev anyway; refusing it here also covers a grant the host left dev). */
#define WRITABLE_TREE (~0ull & ~(FS_MAKE_CHAR | FS_MAKE_BLOCK))

int landlock_abi_version(void)
{
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
    return v < 0 ? 0 : (int)v;
}

/* Every filesystem right the ABI has (and this file knows). */
static uint64_t handled_fs(int abi)
{
    uint64_t fs = (FS_MAKE_SYM << 1) - 1; /* ABI 1: bits 0..12 */
    if (abi >= 2)
        fs |= FS_REFER;
    if (abi >= 3)
        fs |= FS_TRUNCATE;
    if (abi >= 5)
        fs |= FS_IOCTL_DEV;
    return fs;
}

/* Allow access (masked to what the ruleset handles) beneath path. An absent
 * optional path (no /lib32 on this host) is fine. */
static bool allow(int ruleset, const char *path, uint64_t access, uint64_t handled,
                  bool optional)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return optional && errno == ENOENT;
    ll_path_beneath rule = {.allowed_access = access & handled, .parent_fd = fd};
    long r = syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &rule, 0);
    int saved = errno;
    close(fd);
    errno = saved;
    return r == 0;
}

static bool add_rules(int ruleset, const native_plan *plan, uint64_t handled, const char **step)
{
    static const struct {
        const char *path;
        uint64_t access;
    } fixed[] = {
        {"/", FS_READ_DIR},
        {"/usr", READ_EXEC},
        {"/bin", READ_EXEC},
        {"/sbin", READ_EXEC},
        {"/lib", READ_EXEC},
        {"/lib64", READ_EXEC},
        {"/lib32", READ_EXEC},
        {"/libx32", READ_EXEC},
        {"/etc", READ_ONLY},
        {"/proc", READ_ONLY},
        {"/dev", FS_READ_DIR},
        {"/dev/null", DEV_NODE},
        {"/dev/zero", DEV_NODE},
        {"/dev/full", DEV_NODE},
        {"/dev/random", DEV_NODE},
        {"/dev/urandom", DEV_NODE},
        {"/dev/shm", WRITABLE_TREE & ~FS_EXECUTE},
        {"/tmp", WRITABLE_TREE},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (!allow(ruleset, fixed[i].path, fixed[i].access, handled, true)) {
            *step = "landlock rule for a system path";
            return false;
        }
    for (size_t i = 0; i < plan->ngrants && i < NATIVE_MAX_GRANTS; i++) {
        const native_grant *g = &plan->grants[i];
        if (!allow(ruleset, g->guest, g->read_only ? READ_EXEC : WRITABLE_TREE, handled, false)) {
            *step = "landlock rule for a grant";
            return false;
        }
    }
    return true;
}

bool landlock_restrict(const native_plan *plan, const char **step)
{
    int abi = plan->landlock_abi;
    if (abi <= 0)
        return true;
    if (abi > KNOWN_ABI)
        abi = KNOWN_ABI;
    ll_ruleset_attr attr = {.handled_access_fs = handled_fs(abi)};
    /* handled_access_net stays 0 even on ABI 4+: TCP bind/connect are not
     * restricted here (the network namespace has only loopback; egress rules
     * come with their own issue). */
    if (abi >= 6)
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL;
    /* Older kernels take the shorter struct; the fields they do not know must
     * not be passed at all. */
    size_t size = abi >= 6 ? sizeof attr : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (ruleset < 0) {
        *step = "landlock_create_ruleset";
        return false;
    }
    bool ok = add_rules(ruleset, plan, attr.handled_access_fs, step);
    /* landlock_restrict_self needs no_new_privs (or CAP_SYS_ADMIN, which the
     * program still has in its namespace before caps_drop_all); set it so the
     * order relative to caps.c does not matter. */
    if (ok && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        *step = "no_new_privs";
        ok = false;
    }
    if (ok && syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
        *step = "landlock_restrict_self";
        ok = false;
    }
    int saved = errno;
    close(ruleset);
    errno = saved;
    return ok;
}
