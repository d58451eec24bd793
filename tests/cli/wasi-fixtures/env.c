/* env.c — prints the whole environment, one KEY=VALUE per line. */
#include <stdio.h>

extern char **environ;

int main(void) {
    for (char **e = environ; e && *e; e++) puts(*e);
    return 0;
}
