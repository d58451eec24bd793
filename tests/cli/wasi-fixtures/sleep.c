/* sleep.c — blocks in the host (poll_oneoff) for 30 seconds. */
#include <stdio.h>
#include <unistd.h>

int main(void) {
    sleep(30);
    puts("woke up");
    return 0;
}
