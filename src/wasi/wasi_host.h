/*
 * wasi_host.h — helpers shared by the non-filesystem files of the WASI host
 * (fd.c, stdio.c, clock.c, poll.c, wasi.c). Everything the filesystem files
 * (path.c, fs.c) also need lives in wasi_impl.h; this header only carries
 * what crosses between the files listed above, so that each definition and
 * its callers are checked against one declaration.
 */
#ifndef AIRLOCK_WASI_HOST_H
#define AIRLOCK_WASI_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wasi_impl.h"

/* witx "clockid" */
enum {
    WASI_CLOCK_REALTIME = 0,
    WASI_CLOCK_MONOTONIC = 1,
    WASI_CLOCK_PROCESS_CPUTIME_ID = 2,
    WASI_CLOCK_THREAD_CPUTIME_ID = 3,
};

/* stdio.c: copy up to len bytes of the remaining stdin buffer to dst and
 * consume them; 0 is end of file. */
size_t wasi_stdin_read(wasi_ctx *ctx, uint8_t *dst, size_t len);
/* stdio.c: bytes of stdin not read yet. */
size_t wasi_stdin_remaining(const wasi_ctx *ctx);
/* stdio.c: read up to len bytes from the host's stdin_read (ctx->stdin_read
 * is set); blocks until some arrive; 0 is end of input, or with *trap set
 * the run was interrupted. */
size_t wasi_stdin_pull(wasi_ctx *ctx, uint8_t *dst, size_t len, al_trap_kind *trap);

/* clock.c: the current value of WASI clock id in nanoseconds; EINVAL for an
 * id the witx does not define. */
wasi_errno wasi_clock_now(uint32_t id, uint64_t *ns);
/* clock.c: CLOCK_MONOTONIC in nanoseconds (the clock deadlines are kept in). */
uint64_t wasi_monotonic_ns(void);

#endif
