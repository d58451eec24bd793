/* fileio.c — regular files in the preopened read-write directory: path_open
 * with create/excl/trunc, fd_read/fd_write/fd_pread/fd_pwrite, fd_seek with
 * every whence, fd_tell, fd_filestat_get/set_size, fdflags append, sync. */
// @exit: 0
// @known: KD-FDSTAT-FLAGS stdout s/^\(O_APPEND in fcntl(F_GETFL) after open(O_APPEND)\): 0$/\1: 1/
// @known: KD-FDSTAT-FLAGS stdout s/^\(O_APPEND in fcntl(F_GETFL) after F_SETFL(O_APPEND)\): 0$/\1: 1/
// @known: KD-RIGHTS-BY-TYPE stdout s/^read on a directory fd: -1 EBADF .*/read on a directory fd: -1 EISDIR (Is a directory)/
// @known: KD-RIGHTS-BY-TYPE stdout s/^lseek on a directory fd: -1 ESPIPE .*/lseek on a directory fd: -1 EBADF (Bad file descriptor)/
#include <sys/uio.h>
#include "common.h"

static void show_fd_content(const char *label, int fd) {
    char buf[512];
    ssize_t n = pread(fd, buf, sizeof buf, 0);
    if (n < 0) {
        report(label, -1);
        return;
    }
    printf("%s: %zd \"", label, n);
    put_escaped(buf, (size_t)n);
    printf("\"\n");
}

int main(void) {
    char buf[256];
    ssize_t n;
    int fd;

    /* create, write, read back */
    fd = TRY("open(new.txt, O_RDWR|O_CREAT|O_EXCL)", open(SANDBOX "/new.txt", O_RDWR | O_CREAT | O_EXCL, 0644) >= 0);
    fd = open(SANDBOX "/new.txt", O_RDWR);
    TRY("write(hello world)", write(fd, "hello world\n", 12));
    TRY("lseek(0, SEEK_CUR) after write", lseek(fd, 0, SEEK_CUR));
    TRY("read at end", read(fd, buf, sizeof buf));
    TRY("lseek(0, SEEK_SET)", lseek(fd, 0, SEEK_SET));
    n = TRY("read(5)", read(fd, buf, 5));
    printf("  got \"%.*s\"\n", (int)n, buf);
    TRY("lseek(+1, SEEK_CUR)", lseek(fd, 1, SEEK_CUR));
    n = TRY("read(100)", read(fd, buf, 100));
    printf("  got \"");
    put_escaped(buf, n > 0 ? (size_t)n : 0);
    printf("\"\n");
    TRY("lseek(-6, SEEK_END)", lseek(fd, -6, SEEK_END));
    n = TRY("read(3)", read(fd, buf, 3));
    printf("  got \"%.*s\"\n", (int)n, buf);
    TRY("lseek(-100, SEEK_CUR)", lseek(fd, -100, SEEK_CUR));
    TRY("lseek(-1, SEEK_SET)", lseek(fd, -1, SEEK_SET));
    TRY("lseek(0, whence 42)", lseek(fd, 0, 42));
    TRY("lseek(100, SEEK_END) (beyond the end)", lseek(fd, 100, SEEK_END));
    TRY("read beyond the end", read(fd, buf, 10));
    FSTAT("fstat after seeking beyond the end", fd);
    TRY("write beyond the end", write(fd, "X", 1));
    FSTAT("fstat after writing beyond the end", fd);
    TRY("pread(5 @ 6)", pread(fd, buf, 5, 6));
    printf("  got \"%.*s\"\n", 5, buf);
    TRY("pread(10 @ 200) past EOF", pread(fd, buf, 10, 200));
    TRY("pread(4 @ 110) across EOF", pread(fd, buf, 4, 110));
    TRY("pwrite(WORLD @ 6)", pwrite(fd, "WORLD", 5, 6));
    TRY("lseek(0, SEEK_CUR) unchanged by pwrite", lseek(fd, 0, SEEK_CUR));
    TRY("pread(-1 offset)", pread(fd, buf, 1, -1));
    TRY("pwrite(-1 offset)", pwrite(fd, "z", 1, -1));
    TRY("ftruncate(12)", ftruncate(fd, 12));
    FSTAT("fstat after ftruncate(12)", fd);
    show_fd_content("content", fd);
    TRY("ftruncate(20) (grows, zero-filled)", ftruncate(fd, 20));
    show_fd_content("content", fd);
    TRY("ftruncate(5)", ftruncate(fd, 5));
    show_fd_content("content", fd);
    TRY("ftruncate(-1)", ftruncate(fd, -1));
    TRY("lseek(0, SEEK_CUR) after truncating below it", lseek(fd, 0, SEEK_CUR));
    TRY("fsync", fsync(fd));
    TRY("fdatasync", fdatasync(fd));
    /* readv/writev on a file */
    TRY("lseek(0, SEEK_END)", lseek(fd, 0, SEEK_END));
    struct iovec wv[] = {{"-a", 2}, {NULL, 0}, {"-bb", 3}, {"-ccc\n", 5}};
    TRY("writev(4 iovecs)", writev(fd, wv, 4));
    TRY("lseek(0, SEEK_SET)", lseek(fd, 0, SEEK_SET));
    char r1[4], r2[100];
    struct iovec rv[] = {{r1, sizeof r1}, {r2, sizeof r2}};
    n = TRY("readv(4 + 100)", readv(fd, rv, 2));
    printf("  got \"%.4s|", r1);
    put_escaped(r2, n > 4 ? (size_t)n - 4 : 0);
    printf("\"\n");
    TRY("close", close(fd));
    TRY("close again", close(fd));
    TRY("read on a closed fd", read(fd, buf, 1));

    /* O_EXCL on an existing file, O_TRUNC, O_CREAT on an existing file */
    TRY("open(hello.txt, O_CREAT|O_EXCL)", open(SANDBOX "/hello.txt", O_WRONLY | O_CREAT | O_EXCL, 0644));
    TRY("open(link-to-hello, O_CREAT|O_EXCL) (a symlink)", open(SANDBOX "/link-to-hello", O_WRONLY | O_CREAT | O_EXCL, 0644));
    TRY("open(sub, O_CREAT|O_EXCL) (a dir)", open(SANDBOX "/sub", O_WRONLY | O_CREAT | O_EXCL, 0644));
    fd = open(SANDBOX "/hello.txt", O_RDONLY | O_CREAT, 0644);
    TRY("open(hello.txt, O_RDONLY|O_CREAT) (exists)", fd >= 0);
    n = read(fd, buf, sizeof buf);
    printf("  content: \"");
    put_escaped(buf, n > 0 ? (size_t)n : 0);
    printf("\"\n");
    TRY("write on O_RDONLY", write(fd, "x", 1));
    TRY("ftruncate on O_RDONLY", ftruncate(fd, 0));
    close(fd);
    put_file(SANDBOX "/trunc.txt", "some content that will go\n");
    fd = open(SANDBOX "/trunc.txt", O_RDWR | O_TRUNC);
    TRY("open(trunc.txt, O_RDWR|O_TRUNC)", fd >= 0);
    FSTAT("fstat after O_TRUNC", fd);
    TRY("write", write(fd, "short\n", 6));
    close(fd);
    fd = open(SANDBOX "/trunc.txt", O_WRONLY);
    TRY("read on O_WRONLY", read(fd, buf, 1));
    close(fd);

    /* O_APPEND: writes go to the end whatever the offset; pwrite too
     * (Linux ignores the offset of pwrite on an O_APPEND fd) */
    put_file(SANDBOX "/append.txt", "first\n");
    fd = open(SANDBOX "/append.txt", O_RDWR | O_APPEND);
    TRY("open(append.txt, O_RDWR|O_APPEND)", fd >= 0);
    TRY("O_APPEND in fcntl(F_GETFL) after open(O_APPEND)", fcntl(fd, F_GETFL) & O_APPEND ? 1 : 0);
    TRY("lseek(0, SEEK_SET)", lseek(fd, 0, SEEK_SET));
    TRY("write(second)", write(fd, "second\n", 7));
    TRY("lseek(0, SEEK_CUR) after append", lseek(fd, 0, SEEK_CUR));
    TRY("lseek(0, SEEK_SET)", lseek(fd, 0, SEEK_SET));
    n = TRY("read(6)", read(fd, buf, 6));
    printf("  got \"");
    put_escaped(buf, n > 0 ? (size_t)n : 0);
    printf("\"\n");
    TRY("fcntl(F_SETFL, 0) (clear append)", fcntl(fd, F_SETFL, 0));
    TRY("O_APPEND in fcntl(F_GETFL) after F_SETFL(0)", fcntl(fd, F_GETFL) & O_APPEND ? 1 : 0);
    TRY("lseek(0, SEEK_SET)", lseek(fd, 0, SEEK_SET));
    TRY("write(FIRST) at 0", write(fd, "FIRST", 5));
    TRY("fcntl(F_SETFL, O_APPEND)", fcntl(fd, F_SETFL, O_APPEND));
    TRY("O_APPEND in fcntl(F_GETFL) after F_SETFL(O_APPEND)", fcntl(fd, F_GETFL) & O_APPEND ? 1 : 0);
    TRY("lseek(0, SEEK_SET)", lseek(fd, 0, SEEK_SET));
    TRY("write(third)", write(fd, "third\n", 6));
    show_fd_content("content", fd);
    close(fd);

    /* stdio on files */
    FILE *f = fopen(SANDBOX "/stdio.txt", "w+");
    TRYP("fopen(stdio.txt, w+)", f);
    for (int i = 0; i < 1000; i++) fprintf(f, "%d\n", i);
    TRY("ftell", ftell(f));
    TRY("fseek(0, SEEK_SET)", fseek(f, 0, SEEK_SET));
    int a = -1, b = -1;
    TRY("fscanf 2 ints", fscanf(f, "%d %d", &a, &b));
    printf("  got %d %d\n", a, b);
    TRY("fseek(-4, SEEK_END)", fseek(f, -4, SEEK_END));
    TRY("fgetc", fgetc(f));
    TRY("fclose", fclose(f));
    f = fopen(SANDBOX "/stdio.txt", "a+");
    TRYP("fopen(stdio.txt, a+)", f);
    fputs("appended\n", f);
    TRY("fclose", fclose(f));
    STAT("stat(stdio.txt)", SANDBOX "/stdio.txt");
    f = fopen(SANDBOX "/stdio.txt", "r");
    TRY("fseek(-9, SEEK_END)", fseek(f, -9, SEEK_END));
    if (fgets(buf, sizeof buf, f)) printf("  last line: %s", buf);
    fclose(f);
    TRYP("fopen(missing.txt, r)", fopen(SANDBOX "/missing.txt", "r"));
    TRYP("fopen(sub, w) (a dir)", fopen(SANDBOX "/sub", "w"));

    /* fstat types and sizes; a larger file written in pieces */
    fd = open(SANDBOX "/big.bin", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    static char chunk[65536];
    for (size_t i = 0; i < sizeof chunk; i++) chunk[i] = (char)(i * 7 + i / 256);
    size_t total = 0;
    for (int i = 0; i < 20; i++) {
        ssize_t w = write(fd, chunk, sizeof chunk - (size_t)i * 1000);
        if (w > 0) total += (size_t)w;
    }
    printf("big.bin: wrote %zu bytes\n", total);
    FSTAT("fstat(big.bin)", fd);
    close(fd);
    fd = open(SANDBOX "/big.bin", O_RDONLY);
    uint32_t h = 2166136261u;
    size_t got = 0;
    while ((n = read(fd, chunk, 10007)) > 0) {
        for (ssize_t i = 0; i < n; i++) h = (h ^ (unsigned char)chunk[i]) * 16777619u;
        got += (size_t)n;
    }
    printf("big.bin: read %zu bytes, fnv1a %08x\n", got, h);
    close(fd);
    fd = open(SANDBOX "/data.bin", O_RDONLY);
    FSTAT("fstat(data.bin)", fd);
    TRY("pread(data.bin, 4 @ 252)", pread(fd, buf, 4, 252));
    printf("  got %02x %02x %02x %02x\n", (unsigned char)buf[0], (unsigned char)buf[1],
           (unsigned char)buf[2], (unsigned char)buf[3]);
    close(fd);
    fd = open(SANDBOX "/sub", O_RDONLY | O_DIRECTORY);
    FSTAT("fstat(sub)", fd);
    TRY("read on a directory fd", read(fd, buf, 1));
    TRY("write on a directory fd", write(fd, buf, 1));
    TRY("lseek on a directory fd", lseek(fd, 0, SEEK_SET));
    close(fd);
    TRY("unlink(big.bin)", unlink(SANDBOX "/big.bin"));

    /* an open file survives its unlink */
    fd = open(SANDBOX "/doomed.txt", O_RDWR | O_CREAT, 0644);
    write(fd, "still here\n", 11);
    TRY("unlink(doomed.txt) while open", unlink(SANDBOX "/doomed.txt"));
    show_fd_content("content after unlink", fd);
    FSTAT("fstat after unlink", fd);
    close(fd);

    /* posix_fallocate grows a file */
    fd = open(SANDBOX "/alloc.bin", O_RDWR | O_CREAT, 0644);
    write(fd, "abc", 3);
    printf("posix_fallocate(0, 10): %s\n", errname(posix_fallocate(fd, 0, 10)));
    FSTAT("fstat after posix_fallocate", fd);
    printf("posix_fallocate(5, 2) (inside): %s\n", errname(posix_fallocate(fd, 5, 2)));
    FSTAT("fstat after posix_fallocate", fd);
    close(fd);
    return 0;
}
