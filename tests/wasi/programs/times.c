/* times.c — fd_filestat_set_times and path_filestat_set_times through
 * utimensat/futimens with explicit times, UTIME_OMIT and UTIME_NOW, then
 * stat. Only times the program set are printed (and compared in the tree). */
// @exit: 0
// @known: KD-NODE-TIME-NSEC stdout s/^\(t2\.txt: mtime 1600000000\.\)000000000/\1987654321/
// @known: KD-NODE-TIME-NSEC stdout s/^\(t2\.txt: mtime .* atime 1500000000\.\)000000000$/\1123456789/
// @mtime: sandbox/t1.txt sandbox/t2.txt sandbox/t3.txt sandbox/tdir sandbox/tlink sandbox/hello.txt
#include <time.h>
#include "common.h"

static void show_times(const char *label, const char *path, int nofollow) {
    struct stat st;
    errno = 0;
    int r = nofollow ? lstat(path, &st) : stat(path, &st);
    if (r != 0) {
        report(label, -1);
        return;
    }
    printf("%s: mtime %lld.%09ld atime %lld.%09ld\n", label, (long long)st.st_mtim.tv_sec,
           st.st_mtim.tv_nsec, (long long)st.st_atim.tv_sec, st.st_atim.tv_nsec);
}

static void show_mtime_is_now(const char *label, const char *path) {
    struct stat st;
    stat(path, &st);
    time_t now = time(NULL);
    printf("%s: mtime within 60 s of now: %s\n", label,
           st.st_mtim.tv_sec > now - 60 && st.st_mtim.tv_sec < now + 60 ? "yes" : "no");
}

int main(void) {
    put_file(SANDBOX "/t1.txt", "one\n");
    put_file(SANDBOX "/t2.txt", "two\n");
    put_file(SANDBOX "/t3.txt", "three\n");
    mkdir(SANDBOX "/tdir", 0755);
    symlink("t3.txt", SANDBOX "/tlink");

    struct timespec ts[2] = {{1000000000, 0}, {1234567890, 0}}; /* atime, mtime */
    TRY("utimensat(t1.txt, explicit)", utimensat(AT_FDCWD, SANDBOX "/t1.txt", ts, 0));
    show_times("t1.txt", SANDBOX "/t1.txt", 0);

    /* nanoseconds survive (ext4/tmpfs keep them) */
    struct timespec ns[2] = {{1500000000, 123456789}, {1600000000, 987654321}};
    TRY("utimensat(t2.txt, with nanoseconds)", utimensat(AT_FDCWD, SANDBOX "/t2.txt", ns, 0));
    show_times("t2.txt", SANDBOX "/t2.txt", 0);

    /* UTIME_OMIT keeps one of them */
    struct timespec omit[2] = {{0, UTIME_OMIT}, {1700000000, 0}};
    TRY("utimensat(t2.txt, atime OMIT)", utimensat(AT_FDCWD, SANDBOX "/t2.txt", omit, 0));
    show_times("t2.txt", SANDBOX "/t2.txt", 0);
    struct timespec omit2[2] = {{1100000000, 0}, {0, UTIME_OMIT}};
    /* wasi-libc (2022-05) refuses this one itself (EINVAL), before the
     * host sees it; kept to notice a libc that stops doing so */
    TRY("utimensat(t2.txt, mtime OMIT)", utimensat(AT_FDCWD, SANDBOX "/t2.txt", omit2, 0));
    show_times("t2.txt", SANDBOX "/t2.txt", 0);

    /* futimens on an open fd */
    int fd = open(SANDBOX "/t3.txt", O_RDWR);
    struct timespec f[2] = {{1300000000, 0}, {1400000000, 0}};
    TRY("futimens(t3.txt)", futimens(fd, f));
    show_times("t3.txt", SANDBOX "/t3.txt", 0);
    /* a write moves mtime to now */
    write(fd, "x", 1);
    close(fd);
    show_mtime_is_now("t3.txt after a write", SANDBOX "/t3.txt");
    fd = open(SANDBOX "/t3.txt", O_RDONLY);
    TRY("futimens(t3.txt, read-only fd)", futimens(fd, f));
    close(fd);
    show_times("t3.txt", SANDBOX "/t3.txt", 0);

    /* UTIME_NOW */
    struct timespec now[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
    TRY("utimensat(hello.txt, NOW)", utimensat(AT_FDCWD, SANDBOX "/hello.txt", now, 0));
    show_mtime_is_now("hello.txt", SANDBOX "/hello.txt");
    TRY("utimensat(hello.txt, NULL) (= now)", utimensat(AT_FDCWD, SANDBOX "/hello.txt", NULL, 0));
    show_mtime_is_now("hello.txt", SANDBOX "/hello.txt");
    struct timespec back[2] = {{1000000000, 0}, {1000000000, 0}};
    utimensat(AT_FDCWD, SANDBOX "/hello.txt", back, 0);

    /* a directory */
    struct timespec d[2] = {{1200000000, 0}, {1250000000, 0}};
    TRY("utimensat(tdir)", utimensat(AT_FDCWD, SANDBOX "/tdir", d, 0));
    show_times("tdir", SANDBOX "/tdir", 0);

    /* a symlink itself (AT_SYMLINK_NOFOLLOW) vs its target */
    struct timespec l[2] = {{1111111111, 0}, {1222222222, 0}};
    TRY("utimensat(tlink, AT_SYMLINK_NOFOLLOW)", utimensat(AT_FDCWD, SANDBOX "/tlink", l, AT_SYMLINK_NOFOLLOW));
    show_times("lstat(tlink)", SANDBOX "/tlink", 1);
    show_times("stat(tlink) = t3.txt", SANDBOX "/tlink", 0);
    struct timespec l2[2] = {{1333333333, 0}, {1444444444, 0}};
    TRY("utimensat(tlink) (follows)", utimensat(AT_FDCWD, SANDBOX "/tlink", l2, 0));
    /* (the link's atime is not shown from here on: following it reads it,
     * and that may touch its atime) */
    {
        struct stat st;
        lstat(SANDBOX "/tlink", &st);
        printf("lstat(tlink): mtime %lld.%09ld\n", (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    }
    show_times("stat(tlink) = t3.txt", SANDBOX "/tlink", 0);

    /* errors */
    TRY("utimensat(missing)", utimensat(AT_FDCWD, SANDBOX "/missing", ts, 0));
    struct timespec bad[2] = {{0, 1000000000}, {0, 0}};
    TRY("utimensat(t1.txt, tv_nsec out of range)", utimensat(AT_FDCWD, SANDBOX "/t1.txt", bad, 0));
    show_times("t1.txt unchanged", SANDBOX "/t1.txt", 0);
    /* times before the epoch are not representable in WASI timestamps */
    struct timespec neg[2] = {{-1, 0}, {-1, 0}};
    TRY("utimensat(t1.txt, before 1970)", utimensat(AT_FDCWD, SANDBOX "/t1.txt", neg, 0));
    show_times("t1.txt", SANDBOX "/t1.txt", 0);
    return 0;
}
