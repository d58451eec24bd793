/* cat.c — copies stdin to stdout, then reports the byte count on stderr. */
#include <stdio.h>

int main(void) {
    char buf[4096];
    size_t n, total = 0;
    while ((n = fread(buf, 1, sizeof buf, stdin)) > 0) {
        fwrite(buf, 1, n, stdout);
        total += n;
    }
    fprintf(stderr, "%zu bytes\n", total);
    return 0;
}
