/*
 * Cases 8 and 9: a loop that never ends (argv[1] absent or "forever"), or a
 * long one ("count N": N iterations, then print and exit 0), or a sleep
 * ("sleep S": sleep(S) in poll_oneoff, then exit 0).
 */
#include "common.h"

static volatile unsigned long counter;

int main(int argc, char **argv) {
    if (argc > 2 && !strcmp(argv[1], "count")) {
        unsigned long n = strtoul(argv[2], NULL, 10);
        for (unsigned long i = 0; i < n; i++)
            counter++;
        printf("counted %lu\n", counter);
        return 0;
    }
    if (argc > 2 && !strcmp(argv[1], "sleep")) {
        unsigned s = (unsigned)atoi(argv[2]);
        printf("sleeping %u s\n", s);
        fflush(stdout);
        sleep(s);
        printf("woke up\n");
        return 0;
    }
    printf("spinning\n");
    fflush(stdout);
    for (;;)
        counter++;
}
