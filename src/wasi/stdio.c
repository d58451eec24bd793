/*
 * stdio.c — the guest's standard streams: stdin is a byte buffer copied from
 * the policy (or the host's stdin_read callback), stdout and stderr are
 * capped in-memory buffers whose bytes are also handed to on_output as they
 * arrive.
 *
 * Invariants:
 *   - out->len <= out->alloc <= out->cap: the host never holds more guest
 *     output than the policy's cap, however much the guest writes. A guest
 *     that prints forever costs at most cap bytes of host memory. An
 *     unbuffered stream holds nothing at all.
 *   - Bytes past the cap are dropped and out->truncated is set; the guest is
 *     still told they were written (fd.c), so it does not spin retrying a
 *     short write it can never complete.
 *   - on_output sees exactly the bytes that are kept, each once, in order,
 *     before they are kept (with unbuffered: every byte, none kept).
 *   - ctx->stdin_pos <= ctx->stdin_len; reading at the end returns 0 bytes,
 *     which is end of file for fd_read (witx: "The number of bytes read").
 */
#include <stdlib.h>
#include <string.h>

#include "wasi_host.h"

enum { OUT_FIRST_ALLOC = 4096 };

/* The allocation size to hold need bytes: doubling from the current size
 * (amortised O(1) appends), never past cap. need <= cap. */
static size_t out_next_alloc(const wasi_out *out, size_t need) {
    size_t n = out->alloc ? out->alloc : OUT_FIRST_ALLOC;
    while (n < need) n = n > SIZE_MAX / 2 ? need : n * 2;
    return n > out->cap ? out->cap : n;
}

/* Make room for need bytes. On failure of the geometric size, retry with
 * exactly need: a large doubling may fail where the exact size fits. */
static bool out_reserve(wasi_out *out, size_t need) {
    if (need <= out->alloc) return true;
    size_t sizes[2] = {out_next_alloc(out, need), need};
    for (int i = 0; i < 2; i++) {
        uint8_t *p = realloc(out->data, sizes[i]);
        if (p) {
            out->data = p;
            out->alloc = sizes[i];
            return true;
        }
    }
    return false;
}

/* Keep what fits under the cap, drop the rest. Returns true when every byte
 * was kept; false when some were dropped (cap reached, or the host could not
 * allocate: both set truncated, the run's output is incomplete either way). */
bool wasi_out_append(wasi_out *out, const uint8_t *data, size_t len) {
    if (out->unbuffered) {
        if (len > 0 && out->on_output) out->on_output(out->on_output_arg, out->stream, data, len);
        return true;
    }
    size_t room = out->cap - out->len;
    size_t keep = len < room ? len : room;
    if (keep > 0) {
        if (!out_reserve(out, out->len + keep)) {
            out->truncated = true;
            return false;
        }
        /* Only once room is made: what the callback sees is what is kept. */
        if (out->on_output) out->on_output(out->on_output_arg, out->stream, data, keep);
        memcpy(out->data + out->len, data, keep);
        out->len += keep;
    }
    if (keep < len) {
        out->truncated = true;
        return false;
    }
    return true;
}

size_t wasi_stdin_remaining(const wasi_ctx *ctx) { return ctx->stdin_len - ctx->stdin_pos; }

size_t wasi_stdin_pull(wasi_ctx *ctx, uint8_t *dst, size_t len, al_trap_kind *trap) {
    *trap = AL_TRAP_NONE;
    if (len == 0) return 0; /* never ask the host for nothing: it would block */
    size_t n = ctx->stdin_read(ctx->stdin_arg, dst, len, trap);
    return n <= len ? n : len; /* a host bug must not become a guest overflow */
}

size_t wasi_stdin_read(wasi_ctx *ctx, uint8_t *dst, size_t len) {
    size_t left = wasi_stdin_remaining(ctx);
    size_t n = len < left ? len : left;
    if (n > 0) memcpy(dst, ctx->stdin_data + ctx->stdin_pos, n);
    ctx->stdin_pos += n;
    return n;
}
