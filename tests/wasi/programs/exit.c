/* exit.c — proc_exit codes and output flushed at exit. ARGS: how to end. */
// @case: return 0
// @case: exit 0
// @case: exit 42
// @case: exit 255
// @case: exit 256
// @case: return 7
// @case: _Exit 3
// @case: exit-unflushed 5
#include "common.h"

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    int code = atoi(argv[2]);
    printf("ending with %s %d", argv[1], code);
    fprintf(stderr, "stderr: %s %d\n", argv[1], code);
    if (!strcmp(argv[1], "return")) {
        printf("\n");
        return code;
    }
    if (!strcmp(argv[1], "exit")) {
        printf("\n");
        exit(code);
    }
    if (!strcmp(argv[1], "_Exit")) {
        fflush(stdout);
        _Exit(code); /* no atexit, no flush: nothing more is printed */
    }
    if (!strcmp(argv[1], "exit-unflushed")) {
        /* still buffered (no newline): exit() must flush it */
        exit(code);
    }
    return 2;
}
