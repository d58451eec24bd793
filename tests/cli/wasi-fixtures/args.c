/* args.c — prints argc, then each argument in brackets, one per line. */
#include <stdio.h>

int main(int argc, char **argv) {
    printf("argc=%d\n", argc);
    for (int i = 0; i < argc; i++) printf("[%s]\n", argv[i]);
    return 0;
}
