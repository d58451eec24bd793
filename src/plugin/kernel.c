/*
 * kernel.c — the host-owned memory of the Extism plugin ABI (Extism calls
 * it the kernel): what alloc/free/length/load/store and the input, output
 * and error slots address.
 *
 * Layout: one growable buffer (mem) and a block table. Handles are byte
 * offsets into the buffer; [0, KERNEL_BASE) is never allocated, so 0 is
 * null. Blocks are bump-allocated upwards from KERNEL_BASE (8-byte
 * aligned); a freed block is reused whole by a later allocation that fits.
 * The guest never sees a host pointer: it passes offsets, and every offset
 * is checked against [KERNEL_BASE, top) before the host indexes mem.
 *
 * Invariants:
 *  - blocks[] is sorted by off: new blocks always start at the old top and
 *    reuse keeps a block's offset, so length/free are a binary search;
 *  - every byte of [KERNEL_BASE, top) was written during this call (zeroed
 *    on allocation, or filled by the host), so a plugin never reads a
 *    previous call's bytes through alignment gaps or fresh blocks;
 *  - charged counts every block's reserved size plus KERNEL_BLOCK_OVERHEAD
 *    (the host memory its table entry costs) since the last reset and never
 *    exceeds limit: a guest allocating millions of tiny blocks cannot make
 *    the host table outgrow the plugin's memory budget;
 *  - reuse scans at most REUSE_SCAN free blocks, so a guest that frees many
 *    blocks cannot make each alloc walk the whole table (a host-time DoS the
 *    fuel meter would not see);
 *  - the output and error slots always lie inside [KERNEL_BASE, top) when
 *    set (reset clears them together with top).
 */
#include <stdlib.h>
#include <string.h>

#include "plugin.h"

#define REUSE_SCAN 32
#define KEEP_BYTES (UINT64_C(1) << 20)  /* a buffer larger than this is released at reset */
#define KEEP_BLOCKS 4096

void kernel_init(plugin_kernel *k, uint64_t limit, uint64_t max_alloc) {
    memset(k, 0, sizeof *k);
    k->top = KERNEL_BASE;
    k->limit = limit;
    k->max_alloc = max_alloc;
}

void kernel_free(plugin_kernel *k) {
    free(k->mem);
    free(k->blocks);
    free(k->free_list);
    memset(k, 0, sizeof *k);
}

void kernel_reset(plugin_kernel *k) {
    if (k->cap > KEEP_BYTES) {
        /* One call's 50 MiB HTTP response should not stay resident for the
         * plugin's lifetime. */
        free(k->mem);
        k->mem = NULL;
        k->cap = 0;
    }
    if (k->blocks_cap > KEEP_BLOCKS) {
        free(k->blocks);
        k->blocks = NULL;
        k->blocks_cap = 0;
        free(k->free_list);
        k->free_list = NULL;
        k->free_cap = 0;
    }
    k->top = KERNEL_BASE;
    k->charged = 0;
    k->nblocks = 0;
    k->nfree = 0;
    k->input_off = k->input_len = 0;
    k->output_off = k->output_len = 0;
    k->error_off = k->error_len = 0;
}

uint64_t kernel_memory_bytes(const plugin_kernel *k) { return k->top - KERNEL_BASE; }

/* ---- blocks ------------------------------------------------------------------------- */

static uint64_t round8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

/* Index of the block starting at h, or -1. */
static ptrdiff_t find_block(const plugin_kernel *k, uint64_t h) {
    size_t lo = 0, hi = k->nblocks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k->blocks[mid].off == h) return (ptrdiff_t)mid;
        if (k->blocks[mid].off < h) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

uint64_t kernel_length(const plugin_kernel *k, uint64_t h) {
    if (h < KERNEL_BASE || h >= k->top) return 0;
    ptrdiff_t i = find_block(k, h);
    return i >= 0 && k->blocks[i].active ? k->blocks[i].len : 0;
}

static bool push_free(plugin_kernel *k, size_t index) {
    if (k->nfree == k->free_cap) {
        size_t cap = k->free_cap ? k->free_cap * 2 : 16;
        size_t *grown = realloc(k->free_list, cap * sizeof *grown);
        if (!grown) return false;
        k->free_list = grown;
        k->free_cap = cap;
    }
    k->free_list[k->nfree++] = index;
    return true;
}

void kernel_free_block(plugin_kernel *k, uint64_t h) {
    if (h < KERNEL_BASE || h >= k->top) return;
    ptrdiff_t i = find_block(k, h);
    if (i < 0 || !k->blocks[i].active) return;
    k->blocks[i].active = false;
    /* Without room in the free list the block is simply never reused:
     * wasteful, never wrong. */
    (void)push_free(k, (size_t)i);
    /* As Extism does: once the input block is freed, its bytes are gone. */
    if (h == k->input_off) k->input_len = 0;
}

/* Grow the buffer so [0, need) is addressable. */
static bool ensure_cap(plugin_kernel *k, uint64_t need) {
    if (need <= k->cap) return true;
    if (need > SIZE_MAX / 2) return false;
    uint64_t cap = k->cap ? k->cap * 2 : 4096;
    if (cap < need) cap = need;
    uint8_t *grown = realloc(k->mem, (size_t)cap);
    if (!grown) return false;
    k->mem = grown;
    k->cap = cap;
    return true;
}

static bool reserve_block_slot(plugin_kernel *k) {
    if (k->nblocks < k->blocks_cap) return true;
    size_t cap = k->blocks_cap ? k->blocks_cap * 2 : 64;
    kernel_block *grown = realloc(k->blocks, cap * sizeof *grown);
    if (!grown) return false;
    k->blocks = grown;
    k->blocks_cap = cap;
    return true;
}

/* A recently freed block with room for n bytes, taken off the free list. */
static kernel_block *reuse_block(plugin_kernel *k, uint64_t n) {
    size_t scanned = 0;
    for (size_t j = k->nfree; j-- > 0 && scanned < REUSE_SCAN; scanned++) {
        kernel_block *b = &k->blocks[k->free_list[j]];
        /* Entries may be stale (the slot was reused already): skip them. */
        if (b->active || b->cap < n) continue;
        k->free_list[j] = k->free_list[--k->nfree];
        b->active = true;
        b->len = n;
        return b;
    }
    return NULL;
}

/* A new block of n bytes at the top; charge says whether it counts against
 * the limit. Gap and block are zeroed unless the caller fills the block. */
static kernel_block *bump_block(plugin_kernel *k, uint64_t n, bool charge, bool zero) {
    uint64_t off = round8(k->top);
    /* n is at most max_alloc, the limit or a host buffer's size, so
     * off + n cannot wrap; check anyway, the comparison costs nothing. */
    if (n > UINT64_MAX - off) return NULL;
    uint64_t cost = round8(n) + KERNEL_BLOCK_OVERHEAD;
    if (charge && (cost > k->limit || k->charged > k->limit - cost)) return NULL;
    if (!ensure_cap(k, off + n) || !reserve_block_slot(k)) return NULL;
    memset(k->mem + k->top, 0, off - k->top);
    if (zero) memset(k->mem + off, 0, n);
    kernel_block *b = &k->blocks[k->nblocks++];
    b->off = off;
    b->cap = n;
    b->len = n;
    b->active = true;
    k->top = off + n;
    if (charge) k->charged += cost;
    return b;
}

uint64_t kernel_alloc_guest(plugin_kernel *k, uint64_t n) {
    if (n == 0 || n > k->max_alloc) return 0;
    kernel_block *b = reuse_block(k, n);
    if (b) {
        memset(k->mem + b->off, 0, n);
        return b->off;
    }
    b = bump_block(k, n, true, true);
    return b ? b->off : 0;
}

bool kernel_alloc_copy(plugin_kernel *k, const void *data, uint64_t n, uint64_t *handle) {
    *handle = 0;
    if (n == 0) return true;
    kernel_block *b = reuse_block(k, n);
    if (!b) b = bump_block(k, n, true, false);
    if (!b) return false;
    memcpy(k->mem + b->off, data, n);
    *handle = b->off;
    return true;
}

bool kernel_set_input(plugin_kernel *k, const uint8_t *data, size_t len) {
    kernel_reset(k);
    if (len == 0) return true;
    kernel_block *b = bump_block(k, len, false, false);
    if (!b) return false;
    memcpy(k->mem + b->off, data, len);
    k->input_off = b->off;
    k->input_len = len;
    return true;
}
