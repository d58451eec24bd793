/*
 * Case 10: grab memory until refused.
 *
 *   malloc (default)  malloc 1 MiB at a time and touch every page; when
 *                     malloc returns NULL print "MALLOC_FAILED after N MiB"
 *                     and exit 0
 *   grow              memory.grow one 64 KiB page at a time until it returns
 *                     -1: "GROW_FAILED at N pages", exit 0
 *   huge              memory.grow(65536) (4 GiB) at once: must return -1
 *                     ("GROW_FAILED huge"), exit 0
 * When the host traps the grow instead (trap_on_memory_limit), the run ends
 * with memory_limit before any of these lines.
 */
#include "common.h"

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "malloc";
    if (!strcmp(mode, "grow")) {
        size_t pages = __builtin_wasm_memory_size(0);
        for (;;) {
            if (__builtin_wasm_memory_grow(0, 1) == (size_t)-1) {
                printf("GROW_FAILED at %zu pages (%zu MiB)\n", pages, pages >> 4);
                return 0;
            }
            pages++;
            ((volatile char *)0)[pages * 65536 - 1] = 1;
        }
    }
    if (!strcmp(mode, "huge")) {
        size_t before = __builtin_wasm_memory_size(0);
        size_t r = __builtin_wasm_memory_grow(0, 65536);
        size_t r2 = __builtin_wasm_memory_grow(0, 0xffffffffu);
        printf("%s huge (%zd, %zd; size %zu -> %zu pages)\n",
               r == (size_t)-1 && r2 == (size_t)-1 ? "GROW_FAILED" : "GROW_SUCCEEDED", (ssize_t)r,
               (ssize_t)r2, before, (size_t)__builtin_wasm_memory_size(0));
        return r == (size_t)-1 && r2 == (size_t)-1 ? 0 : 1;
    }
    /* Kept in a volatile array so the compiler cannot drop the unused
     * allocations (LLVM removes a malloc whose memory is never read). */
    static char *volatile blocks[8200];
    size_t mib = 0;
    for (;;) {
        char *p = malloc(1 << 20);
        if (!p) {
            unsigned sum = 0;
            for (size_t i = 0; i < mib; i++)
                sum += (unsigned char)blocks[i][4096];
            printf("MALLOC_FAILED after %zu MiB (checksum %u)\n", mib, sum);
            return 0;
        }
        blocks[mib] = p;
        for (size_t i = 0; i < (1u << 20); i += 4096)
            p[i] = (char)i;
        mib++;
        if (mib % 8 == 0) {
            printf("allocated %zu MiB\n", mib);
            fflush(stdout);
        }
        if (mib > 8192) {
            printf("NO_LIMIT: allocated %zu MiB\n", mib);
            return 1;
        }
    }
}
