/*
 * caps.c — no_new_privs and every capability set emptied, in the program's
 * process just before seccomp.
 *
 * Inside its user namespace the sandbox's processes start with every
 * capability over that namespace (mount, network, ...). The program must
 * hold none, and must be unable to get any back:
 *  - no_new_privs: execve never grants privileges again (setuid/setgid bits
 *    and file capabilities are ignored), and it lets an unprivileged
 *    process load seccomp and Landlock filters;
 *  - the bounding set is emptied, so no later execve can add a capability
 *    even without no_new_privs; every capability the kernel knows is
 *    dropped, asked of the kernel rather than taken from a header or from
 *    libcap, which may be older than the kernel and miss the newest ones;
 *  - the ambient set is cleared (it would survive execve);
 *  - securebits lock the "root is special" rules off (NOROOT, no ambient
 *    raise, KEEP_CAPS off) when the process may set them;
 *  - finally capset empties inheritable, permitted and effective.
 * Order matters: dropping from the bounding set and setting securebits need
 * CAP_SETPCAP, so both happen before the capset that removes it.
 *
 * Runs in the child after clone: no malloc, no stdio, so the capset is the
 * raw system call (what libcap's cap_set_proc does, minus its allocation).
 */
#include <errno.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "native.h"

/* Capability numbers are below 64 (two 32-bit words in the v3 ABI). */
#define CAPS_MAX 64

static bool fail(const char *what, const char **step) {
    *step = what;
    return false;
}

/* Drop every capability in the bounding set. PR_CAPBSET_READ fails with
 * EINVAL past the kernel's last capability. */
static bool drop_bounding(const char **step) {
    for (unsigned long cap = 0; cap < CAPS_MAX; cap++) {
        int present = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
        if (present < 0) {
            if (errno == EINVAL)
                return true;
            return fail("prctl(PR_CAPBSET_READ)", step);
        }
        if (present == 1 && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
            return fail("prctl(PR_CAPBSET_DROP)", step);
    }
    return true;
}

/* Lock the securebits that keep uid 0 from meaning privileges. Needs
 * CAP_SETPCAP; a process that lacks it cannot have any other capability to
 * regain either, so EPERM is not an error. Bits already locked by the
 * caller stay as they are (the kernel refuses to change a locked bit). */
static bool lock_securebits(const char **step) {
    int bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
               SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED | SECBIT_KEEP_CAPS_LOCKED;
    int current = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
    if (current < 0)
        return fail("prctl(PR_GET_SECUREBITS)", step);
    if ((current & bits) == bits)
        return true;
    /* Keep what is already set (locked bits cannot be cleared anyway). */
    if (prctl(PR_SET_SECUREBITS, (unsigned long)(current | bits), 0, 0, 0) != 0 &&
        errno != EPERM)
        return fail("prctl(PR_SET_SECUREBITS)", step);
    return true;
}

/* Empty inheritable, permitted and effective with the v3 capset ABI. */
static bool clear_sets(const char **step) {
    struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {{0, 0, 0}};
    if (syscall(SYS_capset, &header, data) != 0)
        return fail("capset", step);
    return true;
}

bool caps_drop_all(const char **step) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return fail("prctl(PR_SET_NO_NEW_PRIVS)", step);
    if (!lock_securebits(step) || !drop_bounding(step))
        return false;
    /* EINVAL: a kernel before 4.3 has no ambient set to clear. */
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
        return fail("prctl(PR_CAP_AMBIENT_CLEAR_ALL)", step);
    return clear_sets(step);
}
