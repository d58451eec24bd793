/* trap.c — prints a line, then executes `unreachable` (a wasm trap). */
#include <stdio.h>

int main(void) {
    puts("about to trap");
    fflush(stdout);
    __builtin_trap();
}
