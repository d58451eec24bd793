/* memhog.c — allocates and touches 1 MiB blocks until malloc fails, then
 * says how far it got on stderr and exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The blocks escape through a volatile pointer, or the compiler would drop
 * the allocations (and the loop would never end). */
static char *volatile last;

int main(void) {
    for (unsigned mib = 0;; mib++) {
        char *p = malloc(1 << 20);
        if (!p) {
            fprintf(stderr, "malloc failed after %u MiB\n", mib);
            return 1;
        }
        memset(p, 1, 1 << 20);
        last = p;
    }
}
