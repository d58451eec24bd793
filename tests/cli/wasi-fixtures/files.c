/* files.c — `files write PATH TEXT` creates PATH with TEXT; `files read PATH`
 * prints PATH's content. On failure: the errno text on stderr and exit 1. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

static int fail(const char *what, const char *path) {
    fprintf(stderr, "%s %s: %s\n", what, path, strerror(errno));
    return 1;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "write")) {
        FILE *f = fopen(argv[2], "w");
        if (!f) return fail("open", argv[2]);
        if (fputs(argv[3], f) < 0 || fclose(f) != 0) return fail("write", argv[2]);
        puts("written");
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "read")) {
        FILE *f = fopen(argv[2], "r");
        if (!f) return fail("open", argv[2]);
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, n, stdout);
        fclose(f);
        return 0;
    }
    fputs("usage: files write PATH TEXT | files read PATH\n", stderr);
    return 2;
}
