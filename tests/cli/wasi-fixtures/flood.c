/* flood.c — writes 2 MiB of 'x' to stdout and a line to stderr, exits 0. */
#include <stdio.h>
#include <string.h>

int main(void) {
    static char block[64 * 1024];
    memset(block, 'x', sizeof block);
    for (int i = 0; i < 32; i++) fwrite(block, 1, sizeof block, stdout);
    fputs("flooded\n", stderr);
    return 0;
}
