/* exit.c — `exit N`: writes a line to stderr, then exits with status N. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int code = argc > 1 ? atoi(argv[1]) : 0;
    fprintf(stderr, "exiting with %d\n", code);
    exit(code);
}
