/* airlock_only.c — what node cannot be compared on, checked against
 * airlock_only.expected instead:
 *   - a read-only preopen (/ro, the fixture's ro/ granted ":ro"): node has
 *     no read-only preopens (KD-READONLY-PREOPEN);
 *   - absolute clock deadlines, which node gets wrong (KD-NODE-ABSTIME),
 *     and relative sleeps to the nanosecond (KD-NODE-SLEEP-SHORT);
 *   - sock_*, on which node 20 crashes (KD-SOCK-NOTSUP);
 *   - guest paths of nearly PATH_MAX bytes (KD-NODE-PATH-LENGTH);
 *   - polling stdout for reading (KD-NODE-POLL).
 * The run must leave the whole tree as it found it. */
// @airlock-only: KD-READONLY-PREOPEN
// @exit: 0
#include <dirent.h>
#include <poll.h>
#include <time.h>
#include <wasi/api.h>
#include "common.h"

#define IMPORT(name) __attribute__((import_module("wasi_snapshot_preview1"), import_name(#name)))
IMPORT(sock_accept) int raw_sock_accept(int fd, int flags, uint32_t out);
IMPORT(sock_recv) int raw_sock_recv(int fd, uint32_t iovs, uint32_t n, int flags, uint32_t out, uint32_t oflags);
IMPORT(sock_send) int raw_sock_send(int fd, uint32_t iovs, uint32_t n, int flags, uint32_t out);
IMPORT(sock_shutdown) int raw_sock_shutdown(int fd, int how);
IMPORT(path_open) int raw_path_open(int fd, int dirflags, uint32_t path, uint32_t len, int oflags,
                                    int64_t rights, int64_t inheriting, int fdflags, uint32_t out);
IMPORT(fd_fdstat_get) int raw_fd_fdstat_get(int fd, uint32_t out);
#define P(x) ((uint32_t)(uintptr_t)(x))

static int64_t mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int main(void) {
    /* ---- the read-only preopen: reading works ---- */
    show_file("read /ro/readme.txt", "/ro/readme.txt");
    show_file("read /ro/inner/file.txt", "/ro/inner/file.txt");
    STAT("stat(/ro/readme.txt)", "/ro/readme.txt");
    DIR *d = opendir("/ro");
    int entries = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) entries++;
    if (d) closedir(d);
    printf("readdir(/ro): %d entries besides . and ..\n", entries);

    /* ---- every mutation is refused ---- */
    TRY("open(/ro/new.txt, O_CREAT)", open("/ro/new.txt", O_WRONLY | O_CREAT, 0644));
    TRY("open(/ro/readme.txt, O_WRONLY)", open("/ro/readme.txt", O_WRONLY));
    TRY("open(/ro/readme.txt, O_RDWR)", open("/ro/readme.txt", O_RDWR));
    TRY("open(/ro/readme.txt, O_RDONLY|O_TRUNC)", open("/ro/readme.txt", O_RDONLY | O_TRUNC));
    TRY("open(/ro/readme.txt, O_WRONLY|O_APPEND)", open("/ro/readme.txt", O_WRONLY | O_APPEND));
    TRY("open(/ro/readme.txt, O_RDONLY|O_CREAT) (exists)", open("/ro/readme.txt", O_RDONLY | O_CREAT, 0644));
    TRY("mkdir(/ro/newdir)", mkdir("/ro/newdir", 0755));
    TRY("rmdir(/ro/inner)", rmdir("/ro/inner"));
    TRY("unlink(/ro/readme.txt)", unlink("/ro/readme.txt"));
    TRY("rename(/ro/readme.txt, /ro/renamed.txt)", rename("/ro/readme.txt", "/ro/renamed.txt"));
    TRY("link(/ro/readme.txt, /ro/hard)", link("/ro/readme.txt", "/ro/hard"));
    TRY("symlink(readme.txt, /ro/sym)", symlink("readme.txt", "/ro/sym"));
    struct timespec ts[2] = {{1, 0}, {1, 0}};
    TRY("utimensat(/ro/readme.txt)", utimensat(AT_FDCWD, "/ro/readme.txt", ts, 0));
    TRY("truncate(/ro/readme.txt, 0)", truncate("/ro/readme.txt", 0));

    /* across the two preopens */
    put_file(SANDBOX "/to-move.txt", "rw side\n");
    TRY("rename(/sandbox/to-move.txt, /ro/moved.txt)", rename(SANDBOX "/to-move.txt", "/ro/moved.txt"));
    TRY("rename(/ro/readme.txt, /sandbox/stolen.txt)", rename("/ro/readme.txt", SANDBOX "/stolen.txt"));
    TRY("link(/ro/readme.txt, /sandbox/hard.txt)", link("/ro/readme.txt", SANDBOX "/hard.txt"));
    TRY("link(/sandbox/to-move.txt, /ro/hard.txt)", link(SANDBOX "/to-move.txt", "/ro/hard.txt"));
    TRY("unlink(/sandbox/to-move.txt)", unlink(SANDBOX "/to-move.txt"));

    /* a descriptor opened read-only beneath /ro cannot be made to write */
    int fd = open("/ro/readme.txt", O_RDONLY);
    TRY("write(read-only fd)", write(fd, "x", 1));
    TRY("pwrite(read-only fd)", pwrite(fd, "x", 1, 0));
    TRY("ftruncate(read-only fd)", ftruncate(fd, 0));
    TRY("futimens(read-only fd)", futimens(fd, ts));
    TRY("fcntl(F_SETFL, O_APPEND) (read-only fd)", fcntl(fd, F_SETFL, O_APPEND));
    printf("posix_fallocate(read-only fd): %s\n", errname(posix_fallocate(fd, 0, 100)));
    uint8_t st[24];
    raw_fd_fdstat_get(fd, P(st));
    uint64_t rights;
    memcpy(&rights, st + 8, 8);
    printf("read-only fd: fd_write right: %s, fd_allocate right: %s, set_size right: %s\n",
           rights & (1u << 6) ? "yes" : "no", rights & (1u << 8) ? "yes" : "no", rights & (1u << 22) ? "yes" : "no");
    close(fd);
    /* asking for write rights explicitly, raw: opened, but without them */
    uint32_t newfd = 0;
    int r = raw_path_open(4, 0, P("readme.txt"), 10, 0, (1 << 1) | (1 << 6), 0, 0, P(&newfd));
    printf("raw path_open(/ro/readme.txt, rights fd_read|fd_write): %d\n", r);
    if (r == 0) {
        raw_fd_fdstat_get((int)newfd, P(st));
        memcpy(&rights, st + 8, 8);
        printf("  granted fd_write: %s, fd_read: %s\n", rights & (1u << 6) ? "yes" : "no", rights & (1u << 1) ? "yes" : "no");
        TRY("  write()", write((int)newfd, "x", 1));
        close((int)newfd);
    }
    show_file("/ro/readme.txt unchanged", "/ro/readme.txt");

    /* ---- absolute clock deadlines ---- */
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    int64_t target = (int64_t)t.tv_sec * 1000000000 + t.tv_nsec + 25000000;
    t.tv_sec = target / 1000000000;
    t.tv_nsec = target % 1000000000;
    int64_t t0 = mono_ns();
    r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
    printf("clock_nanosleep(monotonic, absolute +25 ms): %d, reached: %s, < 5 s: %s\n", r,
           mono_ns() >= target ? "yes" : "no", mono_ns() - t0 < 5000000000 ? "yes" : "no");
    t0 = mono_ns();
    r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &(struct timespec){0, 1}, NULL);
    printf("clock_nanosleep(monotonic, absolute in the past): %d, quick: %s\n", r, mono_ns() - t0 < 1000000000 ? "yes" : "no");
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    rt.tv_nsec += 30000000;
    if (rt.tv_nsec >= 1000000000) { rt.tv_sec++; rt.tv_nsec -= 1000000000; }
    r = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &rt, NULL);
    struct timespec after;
    clock_gettime(CLOCK_REALTIME, &after);
    printf("clock_nanosleep(realtime, absolute +30 ms): %d, reached: %s\n", r,
           after.tv_sec > rt.tv_sec || (after.tv_sec == rt.tv_sec && after.tv_nsec >= rt.tv_nsec) ? "yes" : "no");
    t0 = mono_ns();
    r = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &(struct timespec){1, 0}, NULL);
    printf("clock_nanosleep(realtime, absolute in the past): %d, quick: %s\n", r, mono_ns() - t0 < 1000000000 ? "yes" : "no");

    /* ---- relative sleeps are never short (node's may be: KD-NODE-SLEEP-SHORT) ---- */
    {
        int short_ones = 0;
        for (int i = 0; i < 20; i++) {
            int64_t want = 1000000 + i * 250000; /* 1 .. 5.75 ms */
            int64_t s0 = mono_ns();
            nanosleep(&(struct timespec){0, (long)want}, NULL);
            if (mono_ns() - s0 < want) short_ones++;
        }
        printf("20 nanosleeps of 1..5.75 ms: %d ended early\n", short_ones);
        int64_t s0 = mono_ns();
        poll(NULL, 0, 3);
        printf("poll(no fds, 3 ms): long enough: %s\n", mono_ns() - s0 >= 3000000 ? "yes" : "no");
    }

    /* ---- sockets: none, every sock_* call is ENOTSUP (58) ---- */
    static char buf[8];
    uint32_t iov[2] = {P(buf), 4}, n = 0, oflags = 0;
    printf("sock_accept(0): %d\n", raw_sock_accept(0, 0, P(&newfd)));
    printf("sock_recv(0): %d\n", raw_sock_recv(0, P(iov), 1, 0, P(&n), P(&oflags)));
    printf("sock_send(1): %d\n", raw_sock_send(1, P(iov), 1, 0, P(&n)));
    printf("sock_shutdown(1): %d\n", raw_sock_shutdown(1, 2));
    printf("sock_shutdown(3): %d\n", raw_sock_shutdown(3, 2));
    printf("sock_accept(99): %d\n", raw_sock_accept(99, 0, P(&newfd)));

    /* ---- polling stdout for reading (node waits forever: KD-NODE-POLL) ---- */
    {
        __wasi_subscription_t sub;
        memset(&sub, 0, sizeof sub);
        sub.userdata = 7;
        sub.u.tag = __WASI_EVENTTYPE_FD_READ;
        sub.u.u.fd_read.file_descriptor = 1;
        __wasi_event_t ev;
        __wasi_size_t got = 0;
        __wasi_errno_t pe = __wasi_poll_oneoff(&sub, &ev, 1, &got);
        printf("poll_oneoff(stdout for reading): errno %d, %lu event(s), error %d\n", pe, (unsigned long)got,
               got ? ev.error : -1);
    }

    /* ---- a 4086-byte guest path: only the guest path counts ---- */
    chdir(SANDBOX);
    int depth = 0, ok = 1;
    for (; depth < 453 && ok; depth++) ok = mkdir("dddddddd", 0755) == 0 && chdir("dddddddd") == 0;
    printf("nested dirs made: %d, all ok: %s\n", depth, ok ? "yes" : "no");
    chdir("/");
    static char path[8192];
    strcpy(path, SANDBOX);
    for (int i = 0; i < depth; i++) strcat(path, "/dddddddd");
    printf("absolute path of the deepest dir: %zu bytes\n", strlen(path));
    STAT("stat(deepest)", path);
    strcat(path, "/f");
    TRY("open(deepest/f, O_CREAT) (4088 bytes)", open(path, O_WRONLY | O_CREAT, 0644) >= 0 ? 0 : -1);
    TRY("unlink(deepest/f)", unlink(path));
    strcat(path, "/0123456789");
    TRY("stat(deepest/f/0123456789) (4090 bytes below the preopen, f is gone)", stat(path, &(struct stat){0}));
    strcat(path, "/0123456789");
    TRY("stat(4101 bytes below the preopen)", stat(path, &(struct stat){0}));
    /* remove them again, from the bottom */
    path[strlen(path) - strlen("/f/0123456789/0123456789")] = '\0';
    int removed = 0;
    for (int i = 0; i < depth; i++) {
        if (rmdir(path) == 0) removed++;
        *strrchr(path, '/') = '\0';
    }
    printf("nested dirs removed: %d\n", removed);
    return 0;
}
