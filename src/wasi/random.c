/*
 * random.c — random_get: fill a guest buffer from the kernel CSPRNG
 * (getrandom(2), flags 0: blocks only until the pool is first seeded, as the
 * witx allows: "This function blocks when the implementation is unable to
 * immediately provide sufficient high-quality random data").
 *
 * Invariants: the whole buffer is range-checked before a byte is written;
 * the buffer is filled in chunks (getrandom returns at most 32 MiB per
 * call) and the run's deadline is checked between chunks, so a guest asking
 * for gigabytes of randomness cannot outlive its timeout inside the host.
 */
#include <errno.h>
#include <sys/random.h>

#include "wasi_host.h"

enum { RANDOM_CHUNK = 1 << 20 };

al_trap_kind wasi_random_get(void *env, al_caller *caller, const al_value *args,
                             al_value *results) {
    uint32_t buf = (uint32_t)args[0].of.i32, len = (uint32_t)args[1].of.i32;
    guest_mem m;
    if (!guest_memory(caller, &m) || !guest_range(m, buf, len))
        return wasi_return(results, WASI_EFAULT);
    uint64_t done = 0;
    while (done < len) {
        if (wasi_deadline_passed(env)) return AL_TRAP_INTERRUPTED;
        size_t want = len - done < RANDOM_CHUNK ? (size_t)(len - done) : RANDOM_CHUNK;
        ssize_t n = getrandom(m.base + buf + done, want, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return wasi_return(results, wasi_errno_from_host(errno));
        }
        done += (uint64_t)n;
    }
    return wasi_return(results, WASI_ESUCCESS);
}
