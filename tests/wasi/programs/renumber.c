/* renumber.c — fd_renumber through wasi-libc's __wasilibc_fd_renumber (the
 * dup2 of WASI; wasi-libc has no dup/dup2): onto another open file, onto
 * stdout (printf then lands in a file), and its errors. */
// @exit: 0
#include <wasi/libc.h>
#include "common.h"

int main(void) {
    int a = open(SANDBOX "/a.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
    int b = open(SANDBOX "/b.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
    write(a, "written to a via a\n", 19);
    write(b, "written to b via b\n", 19);
    TRY("renumber(a, b)", __wasilibc_fd_renumber(a, b));
    TRY("write(a) after renumber (a is gone)", write(a, "x", 1));
    TRY("close(a) after renumber", close(a));
    TRY("write(b) (now a.txt)", write(b, "written to a via b\n", 19));
    FSTAT("fstat(b)", b);
    TRY("renumber(b, b) (itself)", __wasilibc_fd_renumber(b, b));
    TRY("write(b) after renumber(b, b)", write(b, "still a via b\n", 14));
    TRY("renumber(b, 77) (77 is not open)", __wasilibc_fd_renumber(b, 77));
    TRY("renumber(77, b) (77 is not open)", __wasilibc_fd_renumber(77, b));
    TRY("write(b) after failed renumbers", write(b, "b survives\n", 11));

    /* the offset moves with the descriptor */
    int c = open(SANDBOX "/c.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
    write(c, "0123456789", 10);
    lseek(c, 3, SEEK_SET);
    int d = open(SANDBOX "/hello.txt", O_RDONLY);
    TRY("renumber(c, d)", __wasilibc_fd_renumber(c, d));
    TRY("lseek(d, 0, SEEK_CUR) (c's offset)", lseek(d, 0, SEEK_CUR));
    TRY("write(d)", write(d, "abc", 3));
    close(d);

    /* a file onto stdout: printf now writes the file */
    fflush(stdout);
    int out = open(SANDBOX "/stdout.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    printf("before renumbering onto stdout\n");
    fflush(stdout);
    int r = __wasilibc_fd_renumber(out, 1);
    printf("renumber(file, 1): %d (this line is in stdout.txt)\n", r);
    fflush(stdout);
    FSTAT("fstat(1) is now the file", 1);
    fflush(stdout);
    fprintf(stderr, "stderr: renumber onto stdout returned %d\n", r);

    /* a preopen can be renumbered too, and it stays usable as a directory */
    int dir = open(SANDBOX "/sub", O_RDONLY | O_DIRECTORY);
    int e = open(SANDBOX "/empty", O_RDONLY | O_DIRECTORY);
    fprintf(stderr, "renumber(dir sub, dir empty): %d\n", __wasilibc_fd_renumber(dir, e));
    int g = openat(e, "nested.txt", O_RDONLY);
    char buf[16];
    ssize_t n = g >= 0 ? read(g, buf, sizeof buf) : -1;
    fprintf(stderr, "openat(renumbered dir, nested.txt): %s, read %zd\n", g >= 0 ? "ok" : errname(errno), n);
    return 0;
}
