/*
 * Case 17: stdin is only what the policy grants. Reads all of fd 0 and
 * prints "STDIN <n> bytes: <first bytes>". The harness pipes a secret into
 * airlock's own stdin; without --stdin the guest must read 0 bytes, with
 * --stdin FILE exactly FILE's bytes.
 */
#include "common.h"

int main(void) {
    static char buf[1 << 16];
    size_t total = 0;
    for (;;) {
        ssize_t n = read(0, buf + total, sizeof buf - 1 - total);
        if (n <= 0) {
            if (n < 0)
                info("read(0) failed: errno %d", errno);
            break;
        }
        total += (size_t)n;
        if (total >= sizeof buf - 1)
            break;
    }
    printf("STDIN %zu bytes: ", total);
    put_escaped(buf, total > 64 ? 64 : total);
    putchar('\n');
    return finish();
}
