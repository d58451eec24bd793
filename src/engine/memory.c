/*
 * memory.c — linear memory instances (spec §4.2.8) and memory.grow (§4.4.7).
 *
 * Invariants:
 *  - mem->data is an mmap reservation of mem->reserved bytes made once, at
 *    creation, for the largest size the memory can ever reach (declared max or
 *    65536 pages, capped by the embedder's limit). Growing only mprotects more
 *    of it READ|WRITE, so data never moves and pointers the interpreter keeps
 *    stay valid across memory.grow (even when a host function grows it).
 *  - [data, data + size) is READ|WRITE, [data + size, data + reserved) is
 *    PROT_NONE; size is a multiple of WASM_PAGE_SIZE and size <= reserved.
 *  - data is never NULL, even for a 0-page memory with max 0 (a one-page
 *    PROT_NONE reservation stands in), so memcpy(data, src, 0) is well-defined.
 *  - pages never exceed max_pages (the declared max, or 65536).
 */
#include <stdlib.h>
#include <sys/mman.h>

#include "runtime.h"

/* Largest page count the embedder's byte limit allows (never above 65536). */
static uint64_t limit_pages(uint64_t limit_bytes) {
    uint64_t pages = limit_bytes / WASM_PAGE_SIZE;
    return pages < WASM_MAX_PAGES ? pages : WASM_MAX_PAGES;
}

al_memory *memory_create(uint32_t min_pages, uint32_t max_pages, bool has_max,
                         uint64_t limit_bytes, al_error *err) {
    uint64_t cap = limit_pages(limit_bytes);
    if (min_pages > cap) {
        al_error_set(err, AL_ERR_LIMIT, "memory of %u pages exceeds the limit of %llu bytes",
                     min_pages, (unsigned long long)limit_bytes);
        return NULL;
    }
    uint64_t declared = has_max ? max_pages : WASM_MAX_PAGES;
    uint64_t reserve_pages = declared < cap ? declared : cap;
    if (reserve_pages < min_pages) reserve_pages = min_pages; /* max < min: never validates */

    al_memory *mem = calloc(1, sizeof *mem);
    if (!mem) {
        al_error_set(err, AL_ERR_NOMEM, "out of memory allocating a memory");
        return NULL;
    }
    /* A 0-byte mapping is not allowed; reserve one (inaccessible) page instead. */
    mem->reserved = reserve_pages ? reserve_pages * WASM_PAGE_SIZE : WASM_PAGE_SIZE;
    void *p = mmap(NULL, mem->reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) {
        free(mem);
        al_error_set(err, AL_ERR_NOMEM, "cannot reserve %llu bytes for a memory",
                     (unsigned long long)(reserve_pages * WASM_PAGE_SIZE));
        return NULL;
    }
    mem->data = p;
    mem->max_pages = (uint32_t)(has_max ? max_pages : WASM_MAX_PAGES);
    mem->has_max = has_max;
    uint64_t bytes = (uint64_t)min_pages * WASM_PAGE_SIZE;
    if (bytes && mprotect(mem->data, bytes, PROT_READ | PROT_WRITE) != 0) {
        memory_destroy(mem);
        al_error_set(err, AL_ERR_NOMEM, "cannot commit %u pages of memory", min_pages);
        return NULL;
    }
    mem->size = bytes;
    return mem;
}

/* Spec §4.4.7 memory.grow: failure (-1) leaves the memory unchanged. The
 * spec lets an embedder refuse any growth; we refuse past the declared max,
 * past limit_bytes and past the reservation made at creation. */
int64_t memory_grow(al_memory *mem, uint32_t delta_pages, uint64_t limit_bytes) {
    uint64_t old_pages = mem->size / WASM_PAGE_SIZE;
    uint64_t new_pages = old_pages + delta_pages; /* both < 2^32: no overflow */
    if (new_pages > mem->max_pages || new_pages > limit_pages(limit_bytes)) return -1;
    uint64_t new_size = new_pages * WASM_PAGE_SIZE;
    if (new_size > mem->reserved) return -1;
    if (delta_pages &&
        mprotect(mem->data + mem->size, new_size - mem->size, PROT_READ | PROT_WRITE) != 0)
        return -1;
    mem->size = new_size;
    return (int64_t)old_pages;
}

void memory_destroy(al_memory *mem) {
    if (!mem) return;
    munmap(mem->data, mem->reserved);
    free(mem);
}

/* ---- public API ---------------------------------------------------------- */

al_memory *al_memory_new(al_store *store, uint32_t min_pages, uint32_t max_pages,
                         bool has_max, al_error *err) {
    /* The same rules a module's memory type obeys (spec §3.2.4). */
    if (!store || min_pages > WASM_MAX_PAGES || (has_max && max_pages > WASM_MAX_PAGES) ||
        (has_max && max_pages < min_pages)) {
        al_error_set(err, AL_ERR_ARGUMENT, "invalid memory type");
        return NULL;
    }
    if (!store_has_room(store, 0, 0, 1, err)) return NULL;
    al_memory *mem = memory_create(min_pages, max_pages, has_max,
                                   store->limits.max_memory_bytes, err);
    if (!mem) return NULL;
    if (!store_track(store, STORE_MEMORY, mem)) {
        memory_destroy(mem);
        al_error_set(err, AL_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return mem;
}

uint8_t *al_memory_data(al_memory *memory) { return memory ? memory->data : NULL; }

uint64_t al_memory_size(const al_memory *memory) { return memory ? memory->size : 0; }
