/*
 * Case 4b: a symlink swapped under the host's path resolution.
 *
 * The test grants HOST/root as /work (rw); root/race is a symlink that a host
 * process keeps atomically replacing: "real" (root/real, inside) one moment,
 * "../outside" the next. root/real/secret.txt says "INSIDE-DECOY" and
 * outside/secret.txt "OUTSIDE-SECRET". A host that checks a path and then
 * opens it again (instead of resolving it once, beneath the preopen) opens
 * the outside one sooner or later. argv[1]: the number of attempts.
 */
#include "common.h"

int main(int argc, char **argv) {
    long tries = argc > 1 ? atol(argv[1]) : 3000;
    long inside = 0, refused = 0, leaked = 0;
    int last_errno = 0;
    for (long i = 0; i < tries; i++) {
        char buf[64];
        long n = slurp(i & 1 ? "/work/race/secret.txt" : "/work/race/../race/secret.txt", buf,
                       sizeof buf);
        if (n < 0) {
            refused++;
            last_errno = errno;
        } else if (!strncmp(buf, "OUTSIDE", 7)) {
            if (leaked++ == 0)
                leak(buf, (size_t)n, "open(\"/work/race/secret.txt\") on attempt %ld", i);
        } else {
            inside++;
        }
        /* listing through the link: must never show outside's entries */
        if ((i & 63) == 0) {
            DIR *d = opendir("/work/race");
            if (d) {
                struct dirent *ent;
                while ((ent = readdir(d)) != NULL)
                    if (!strcmp(ent->d_name, "outside_marker") && leaked++ == 0)
                        leak("", 0, "opendir(\"/work/race\") listed outside's entries");
                closedir(d);
            }
        }
    }
    info("%ld attempts: %ld opened the inside file, %ld refused (last errno %d), %ld leaked",
         tries, inside, refused, last_errno, leaked);
    if (refused > 0)
        denied(last_errno, "open through the swapped link (%ld times)", refused);
    return finish();
}
