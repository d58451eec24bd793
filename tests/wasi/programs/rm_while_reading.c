/* rm_while_reading.c — the "rm -r" pattern: read a large directory with
 * readdir and unlink every entry as it is returned, then read it again.
 * wasi-libc refills its buffer with fd_readdir from the cookie of the last
 * entry it returned, so the host's cookies must stay valid while the
 * directory shrinks under them. Then the same with entries being added. */
// @exit: 0
// @known: KD-NODE-READDIR-SHRINK stdout s/^pass 1 (unlink every other): seen [0-9]*, duplicates 0, removed [0-9]*, failed 0, left [0-9]*$/pass 1 (unlink every other): seen 1500, duplicates 0, removed 750, failed 0, left 750/
// @known: KD-NODE-READDIR-SHRINK stdout s/^pass 2 (unlink all): seen [0-9]*, removed [0-9]*, failed 0, left [0-9]*$/pass 2 (unlink all): seen 750, removed 750, failed 0, left 0/
// @known: KD-NODE-READDIR-SHRINK stdout s/^extra passes needed: [1-9][0-9]*$/extra passes needed: 0/
#include <dirent.h>
#include "common.h"

static int count_entries(const char *path) {
    DIR *d = opendir(path);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    if (d) closedir(d);
    return n;
}

int main(void) {
    char p[300];
    const int N = 1500;
    mkdir(SANDBOX "/big", 0755);
    for (int i = 0; i < N; i++) {
        snprintf(p, sizeof p, SANDBOX "/big/a-rather-long-file-name-to-fill-buffers-quickly-%05d", i);
        put_file(p, "");
    }
    printf("created: %d, listed: %d\n", N, count_entries(SANDBOX "/big"));

    /* delete every other entry as it is read */
    DIR *d = opendir(SANDBOX "/big");
    int seen = 0, removed = 0, failed = 0, dup = 0;
    static unsigned char mark[1500];
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        int idx = atoi(e->d_name + strlen("a-rather-long-file-name-to-fill-buffers-quickly-"));
        if (idx >= 0 && idx < N) {
            if (mark[idx]) dup++;
            mark[idx] = 1;
        }
        seen++;
        if (seen % 2 == 0) {
            snprintf(p, sizeof p, SANDBOX "/big/%s", e->d_name);
            if (unlink(p) == 0) removed++;
            else failed++;
        }
    }
    closedir(d);
    printf("pass 1 (unlink every other): seen %d, duplicates %d, removed %d, failed %d, left %d\n", seen, dup,
           removed, failed, count_entries(SANDBOX "/big"));

    /* delete everything as it is read (rm -r) */
    d = opendir(SANDBOX "/big");
    seen = removed = failed = 0;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        seen++;
        snprintf(p, sizeof p, SANDBOX "/big/%s", e->d_name);
        if (unlink(p) == 0) removed++;
        else failed++;
    }
    closedir(d);
    int left = count_entries(SANDBOX "/big");
    printf("pass 2 (unlink all): seen %d, removed %d, failed %d, left %d\n", seen, removed, failed, left);

    /* clean up whatever a runtime left (node: KD-NODE-READDIR-SHRINK) */
    int passes = 0;
    while (count_entries(SANDBOX "/big") > 0 && passes < 100) {
        passes++;
        d = opendir(SANDBOX "/big");
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(p, sizeof p, SANDBOX "/big/%s", e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    printf("extra passes needed: %d\n", passes);
    printf("rmdir(big): %s\n", rmdir(SANDBOX "/big") == 0 ? "ok" : errname(errno));
    return 0;
}
