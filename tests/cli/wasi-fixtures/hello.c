/* hello.c — the smallest WASI command: one line on stdout. */
#include <stdio.h>

int main(void) {
    puts("hello, world");
    return 0;
}
