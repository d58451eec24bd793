/* readdir_raw.c — fd_readdir called directly with buffers of every small
 * size and with cookies: whatever the buffer size, resuming from the d_next
 * of the last complete entry must list every name exactly once. Names only
 * (sorted, "." and ".." set aside: KD-READDIR-DOTS); cookies and inode
 * numbers are the host's business. */
// @exit: 0
// @known: KD-READDIR-DOTS stdout s/ dots=0$/ dots=2/
// @known: KD-RIGHTS-BY-TYPE stdout s/^fd_readdir(a file): errno 76$/fd_readdir(a file): errno 54/
#include <wasi/api.h>
#include "common.h"

static int cmpstr(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* List fd with buffers of bufsize bytes; print "bufsize N: calls=.. names" */
static void list(int fd, size_t bufsize, int print_names) {
    static uint8_t buf[70000];
    char *names[512];
    size_t n = 0;
    int dots = 0, calls = 0, errors = 0;
    __wasi_dircookie_t cookie = 0;
    size_t size = bufsize; /* grown, for one call, when an entry does not fit */
    int grown = 0;
    for (;;) {
        __wasi_size_t used = 0;
        __wasi_errno_t e = __wasi_fd_readdir(fd, buf, size, cookie, &used);
        calls++;
        if (e) {
            printf("  fd_readdir(bufsize %zu): errno %d\n", size, e);
            errors++;
            break;
        }
        if (used > size) {
            printf("  fd_readdir(bufsize %zu): used %lu > bufsize\n", size, (unsigned long)used);
            errors++;
            break;
        }
        size_t off = 0;
        int complete = 0;
        while (off + sizeof(__wasi_dirent_t) <= used) {
            __wasi_dirent_t d;
            memcpy(&d, buf + off, sizeof d);
            if (off + sizeof d + d.d_namlen > used) break; /* cut entry */
            const char *name = (const char *)buf + off + sizeof d;
            if ((d.d_namlen == 1 && name[0] == '.') || (d.d_namlen == 2 && name[0] == '.' && name[1] == '.'))
                dots++;
            else if (n < 512)
                names[n++] = strndup(name, d.d_namlen);
            cookie = d.d_next;
            off += sizeof d + d.d_namlen;
            complete++;
        }
        if (used < size) break; /* end of directory */
        if (complete == 0) {
            /* not even one entry fits: retry this cookie with more room,
             * as wasi-libc's readdir does */
            size = size * 2 + 24;
            grown++;
            if (size > sizeof buf) {
                printf("  bufsize %zu: an entry does not fit even in %zu bytes\n", bufsize, size);
                errors++;
                break;
            }
            continue;
        }
        size = bufsize;
        if (calls > 10000) {
            printf("  bufsize %zu: no progress\n", bufsize);
            errors++;
            break;
        }
    }
    (void)grown;
    qsort(names, n, sizeof *names, cmpstr);
    int dup = 0;
    for (size_t i = 1; i < n; i++) dup += !strcmp(names[i], names[i - 1]);
    printf("bufsize %zu: %zu names, %d duplicates, errors %d,", bufsize, n, dup, errors);
    if (print_names)
        for (size_t i = 0; i < n; i++) printf(" %s", names[i]);
    printf(" dots=%d\n", dots);
    for (size_t i = 0; i < n; i++) free(names[i]);
}

int main(void) {
    mkdir(SANDBOX "/rd", 0755);
    /* names of many lengths, including a 255-byte one and UTF-8 */
    const char *fixed[] = {"a", "bb", "ccc", "\xc3\xa9t\xc3\xa9", "with space", "x.y.z", "-dash"};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        char p[300];
        snprintf(p, sizeof p, SANDBOX "/rd/%s", fixed[i]);
        put_file(p, "");
    }
    char longname[300];
    memset(longname, 'L', 255);
    longname[255] = '\0';
    char p[400];
    snprintf(p, sizeof p, SANDBOX "/rd/%s", longname);
    put_file(p, "");
    for (int i = 0; i < 40; i++) {
        snprintf(p, sizeof p, SANDBOX "/rd/n%0*d", 1 + i % 17, i);
        put_file(p, "");
    }
    mkdir(SANDBOX "/rd/subdir", 0755);
    symlink("a", SANDBOX "/rd/symlink");

    int fd = open(SANDBOX "/rd", O_RDONLY | O_DIRECTORY);
    list(fd, 70000, 1);
    /* every size from the header alone up to a few entries */
    for (size_t b = 24; b <= 300; b += (b < 64 ? 1 : 23)) list(fd, b, 0);
    list(fd, 4096, 0);
    /* buffers smaller than a dirent header: the call itself must cope */
    for (size_t b = 0; b < 24; b += 7) {
        __wasi_size_t used = 99;
        static uint8_t small[24];
        memset(small, 0xee, sizeof small);
        __wasi_errno_t e = __wasi_fd_readdir(fd, small, b, 0, &used);
        int untouched = 1;
        for (size_t i = b; i < sizeof small; i++) untouched &= small[i] == 0xee;
        printf("fd_readdir(bufsize %zu): errno %d, used == bufsize: %s, bytes past the buffer untouched: %s\n", b, e,
               used == b ? "yes" : "no", untouched ? "yes" : "no");
    }
    close(fd);

    /* an empty directory, and the preopen itself */
    fd = open(SANDBOX "/empty", O_RDONLY | O_DIRECTORY);
    list(fd, 4096, 1);
    close(fd);
    list(3, 4096, 1);
    /* a cookie far past the end */
    fd = open(SANDBOX "/sub", O_RDONLY | O_DIRECTORY);
    static uint8_t buf[512];
    __wasi_size_t used = 99;
    __wasi_errno_t e = __wasi_fd_readdir(fd, buf, sizeof buf, 1000000, &used);
    printf("fd_readdir(cookie 1000000): errno %d, used %lu\n", e, (unsigned long)used);
    /* fd_readdir on a file */
    int f = open(SANDBOX "/hello.txt", O_RDONLY);
    e = __wasi_fd_readdir(f, buf, sizeof buf, 0, &used);
    printf("fd_readdir(a file): errno %d\n", e);
    close(f);
    close(fd);
    return 0;
}
