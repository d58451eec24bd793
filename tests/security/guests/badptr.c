/*
 * Case 15: hostile arguments to the WASI host. Every guest pointer and length
 * must be checked against the guest memory (wasi_impl.h: "nothing indexes
 * host memory with an unchecked guest value"; errors come back as errno).
 *
 *   badptr.wasm count   prints "COUNT <n>"
 *   badptr.wasm <i>     runs attack i: "RET <i> <name> errno=<e>", then DONE
 *
 * Pointers just past the end of memory, straddling it, at 0xffffffff, with
 * lengths that wrap 32 bits, element counts whose byte size wraps, huge
 * buffers and fd numbers. The test grants HOST/bp as /sandbox (rw), holding
 * f.txt and lnk_in -> f.txt, so the path calls get past the fd lookup. An attack marked "must
 * fail" that returns success is WRONG (exit 2); a crash or sanitizer report
 * is the real failure, judged by the harness. The harness also passes
 * --env A=B, so the environment calls have bytes to write. The fd_write
 * attacks write to stderr: this report goes to stdout and must survive them.
 */
#include "common.h"

typedef int32_t i32;
typedef int64_t i64;

i32 r_fd_write(i32, i32, i32, i32) WASI_IMPORT(fd_write);
i32 r_fd_read(i32, i32, i32, i32) WASI_IMPORT(fd_read);
i32 r_fd_pread(i32, i32, i32, i64, i32) WASI_IMPORT(fd_pread);
i32 r_fd_pwrite(i32, i32, i32, i64, i32) WASI_IMPORT(fd_pwrite);
i32 r_path_filestat_get(i32, i32, i32, i32, i32) WASI_IMPORT(path_filestat_get);
i32 r_path_readlink(i32, i32, i32, i32, i32, i32) WASI_IMPORT(path_readlink);
i32 r_path_rename(i32, i32, i32, i32, i32, i32) WASI_IMPORT(path_rename);
i32 r_path_symlink(i32, i32, i32, i32, i32) WASI_IMPORT(path_symlink);
i32 r_path_link(i32, i32, i32, i32, i32, i32, i32) WASI_IMPORT(path_link);
i32 r_path_create_directory(i32, i32, i32) WASI_IMPORT(path_create_directory);
i32 r_path_unlink_file(i32, i32, i32) WASI_IMPORT(path_unlink_file);
i32 r_path_remove_directory(i32, i32, i32) WASI_IMPORT(path_remove_directory);
i32 r_path_filestat_set_times(i32, i32, i32, i32, i64, i64, i32) WASI_IMPORT(path_filestat_set_times);
i32 r_fd_readdir(i32, i32, i32, i64, i32) WASI_IMPORT(fd_readdir);
i32 r_fd_prestat_get(i32, i32) WASI_IMPORT(fd_prestat_get);
i32 r_fd_prestat_dir_name(i32, i32, i32) WASI_IMPORT(fd_prestat_dir_name);
i32 r_args_get(i32, i32) WASI_IMPORT(args_get);
i32 r_args_sizes_get(i32, i32) WASI_IMPORT(args_sizes_get);
i32 r_environ_get(i32, i32) WASI_IMPORT(environ_get);
i32 r_environ_sizes_get(i32, i32) WASI_IMPORT(environ_sizes_get);
i32 r_clock_time_get(i32, i64, i32) WASI_IMPORT(clock_time_get);
i32 r_clock_res_get(i32, i32) WASI_IMPORT(clock_res_get);
i32 r_random_get(i32, i32) WASI_IMPORT(random_get);
i32 r_poll_oneoff(i32, i32, i32, i32) WASI_IMPORT(poll_oneoff);
i32 r_fd_fdstat_get(i32, i32) WASI_IMPORT(fd_fdstat_get);
i32 r_fd_fdstat_set_flags(i32, i32) WASI_IMPORT(fd_fdstat_set_flags);
i32 r_fd_filestat_get(i32, i32) WASI_IMPORT(fd_filestat_get);
i32 r_fd_filestat_set_size(i32, i64) WASI_IMPORT(fd_filestat_set_size);
i32 r_fd_allocate(i32, i64, i64) WASI_IMPORT(fd_allocate);
i32 r_fd_seek(i32, i64, i32, i32) WASI_IMPORT(fd_seek);
i32 r_fd_tell(i32, i32) WASI_IMPORT(fd_tell);
i32 r_fd_renumber(i32, i32) WASI_IMPORT(fd_renumber);
i32 r_fd_close(i32) WASI_IMPORT(fd_close);
i32 r_sock_recv(i32, i32, i32, i32, i32, i32) WASI_IMPORT(sock_recv);
i32 r_sock_send(i32, i32, i32, i32, i32) WASI_IMPORT(sock_send);

#define P(x) ((i32)(uintptr_t)(x))

static i32 END;           /* bytes of guest memory: the first invalid address */
static i32 pfd;           /* the /sandbox preopen */
static i32 ffd;           /* /sandbox/f.txt opened read-write */
static uint8_t scratch[4096];
static uint32_t iov[2];   /* one valid iovec: {scratch, 16} */
static i32 out32;
static i64 out64[8];

static int must_fail;

#define ATTACK(name_, must_, expr_)                                                                \
    do {                                                                                           \
        if (k == n++) {                                                                            \
            *name = name_;                                                                         \
            must_fail = must_;                                                                     \
            return (expr_);                                                                        \
        }                                                                                          \
    } while (0)

/* Attack k; returns its errno, or -1000 past the last one (n = the count). */
static i32 attack(int k, const char **name, int *count) {
    int n = 0;
    static uint32_t big_iovs[2 * 40000];
    static const char fname[] = "f.txt";
    static const char dname[] = "d";
    static const char lname[] = "lnk_in";
    i32 FN = P(fname), FL = (i32)sizeof fname - 1;
    i32 LN = P(lname), LL = (i32)sizeof lname - 1;
    *count = 0;

    /* ---- fd_write / fd_read: iovec arrays ---- */
    ATTACK("fd_write iovs at END-4", 1, r_fd_write(2, END - 4, 1, P(&out32)));
    ATTACK("fd_write iovs at END", 1, r_fd_write(2, END, 1, P(&out32)));
    ATTACK("fd_write iovs at 0xfffffff8", 1, r_fd_write(2, (i32)0xfffffff8, 1, P(&out32)));
    ATTACK("fd_write iovs_len 0x20000000 (count*8 wraps)", 1, r_fd_write(2, P(iov), 0x20000000, P(&out32)));
    ATTACK("fd_write iovs_len 0xffffffff", 1, r_fd_write(2, P(iov), -1, P(&out32)));
    {
        static uint32_t v[2];
        v[0] = (uint32_t)END - 2, v[1] = 100;
        ATTACK("fd_write buf straddles END", 1, r_fd_write(2, P(v), 1, P(&out32)));
    }
    {
        static uint32_t v[2] = {16, 0xfffffff8u};
        ATTACK("fd_write buf 16 len 0xfffffff8 (wraps)", 1, r_fd_write(2, P(v), 1, P(&out32)));
    }
    {
        static uint32_t v[2] = {0xffffffffu, 2};
        ATTACK("fd_write buf 0xffffffff len 2", 1, r_fd_write(2, P(v), 1, P(&out32)));
    }
    ATTACK("fd_write nwritten at END-2", 1, r_fd_write(2, P(iov), 1, END - 2));
    ATTACK("fd_write nwritten at 0xffffffff", 1, r_fd_write(2, P(iov), 1, -1));
    if (k == n) { /* 40000 iovecs of END/2 bytes each: the sum wraps 32 bits */
        for (int i = 0; i < 40000; i++)
            big_iovs[2 * i] = 0, big_iovs[2 * i + 1] = (uint32_t)END / 2;
    }
    ATTACK("fd_write 40000 iovecs, total > 4 GiB", 0, r_fd_write(2, P(big_iovs), 40000, P(&out32)));
    ATTACK("fd_write to fd 0xffffffff", 1, r_fd_write(-1, P(iov), 1, P(&out32)));
    ATTACK("fd_read iovs at END-4", 1, r_fd_read(0, END - 4, 1, P(&out32)));
    ATTACK("fd_read iovs_len 0x20000000", 1, r_fd_read(0, P(iov), 0x20000000, P(&out32)));
    {
        static uint32_t v[2];
        v[0] = (uint32_t)END - 1, v[1] = 4096;
        ATTACK("fd_read file into buf straddling END", 1, r_fd_read(ffd, P(v), 1, P(&out32)));
    }
    {
        static uint32_t v[2] = {16, 0xfffffff8u};
        ATTACK("fd_read file into buf 16 len 0xfffffff8", 1, r_fd_read(ffd, P(v), 1, P(&out32)));
    }
    ATTACK("fd_read nread at END", 1, r_fd_read(ffd, P(iov), 1, END));
    {
        static uint32_t v[2];
        v[0] = (uint32_t)END - 1, v[1] = 4096;
        ATTACK("fd_pread buf straddling END", 1, r_fd_pread(ffd, P(v), 1, 0, P(&out32)));
        ATTACK("fd_pwrite buf straddling END", 1, r_fd_pwrite(ffd, P(v), 1, 0, P(&out32)));
    }
    ATTACK("fd_pread offset 2^64-1", 0, r_fd_pread(ffd, P(iov), 1, -1, P(&out32)));
    ATTACK("fd_pwrite offset INT64_MAX", 1, r_fd_pwrite(ffd, P(iov), 1, INT64_MAX, P(&out32)));

    /* ---- paths ---- */
    ATTACK("path_open path at END-3 len 10", 1, raw_path_open(pfd, 0, END - 3, 10, 0, RIGHTS_READ, 0, 0, P(&out32)));
    ATTACK("path_open path len 0xffffffff", 1, raw_path_open(pfd, 0, FN, -1, 0, RIGHTS_READ, 0, 0, P(&out32)));
    ATTACK("path_open path 0xffffffff len 1", 1, raw_path_open(pfd, 0, -1, 1, 0, RIGHTS_READ, 0, 0, P(&out32)));
    ATTACK("path_open path 16 len 0xfffffff8", 1, raw_path_open(pfd, 0, 16, (i32)0xfffffff8, 0, RIGHTS_READ, 0, 0, P(&out32)));
    ATTACK("path_open O_CREAT, retfd at END", 1, raw_path_open(pfd, 0, P("created.txt"), 11, __WASI_OFLAGS_CREAT, RIGHTS_READ | __WASI_RIGHTS_FD_WRITE, 0, 0, END));
    ATTACK("path_open retfd at 0xfffffffe", 1, raw_path_open(pfd, 0, FN, FL, 0, RIGHTS_READ, 0, 0, (i32)0xfffffffe));
    ATTACK("path_open oflags/fdflags/rights all ones", 0, raw_path_open(pfd, -1, FN, FL, 0xffff, -1, -1, 0xffff, P(&out32)));
    if (k == n)
        memset(scratch, 'a', sizeof scratch);
    ATTACK("path_open 4096-byte component", 1, raw_path_open(pfd, 0, P(scratch), sizeof scratch, 0, RIGHTS_READ, 0, 0, P(&out32)));
    /* PATH_MAX boundaries: "a/a/.../a" of 4095, 4096, 4097 bytes, and
     * components of 255 and 256 bytes (NAME_MAX). */
    {
        static char longp[4200];
        static const int lens[] = {4095, 4096, 4097};
        for (int j = 0; j < 3; j++) {
            if (k == n) {
                for (int i = 0; i < lens[j]; i++)
                    longp[i] = (i % 2) ? '/' : 'a';
                longp[lens[j] - 1] = 'a';
            }
            ATTACK(j == 0 ? "path_open 4095-byte path" : j == 1 ? "path_open 4096-byte path" : "path_open 4097-byte path",
                   1, raw_path_open(pfd, 0, P(longp), lens[j], 0, RIGHTS_READ, 0, 0, P(&out32)));
            ATTACK(j == 0 ? "path_filestat_get 4095-byte path" : j == 1 ? "path_filestat_get 4096-byte path" : "path_filestat_get 4097-byte path",
                   1, r_path_filestat_get(pfd, 0, P(longp), lens[j], P(out64)));
        }
        if (k == n)
            memset(longp, 'b', 255);
        ATTACK("path_open O_CREAT 255-byte name", 0, raw_path_open(pfd, 0, P(longp), 255, __WASI_OFLAGS_CREAT, RIGHTS_READ | __WASI_RIGHTS_FD_WRITE, 0, 0, P(&out32)));
        if (k == n)
            memset(longp, 'b', 256);
        ATTACK("path_open O_CREAT 256-byte name", 1, raw_path_open(pfd, 0, P(longp), 256, __WASI_OFLAGS_CREAT, RIGHTS_READ | __WASI_RIGHTS_FD_WRITE, 0, 0, P(&out32)));
        if (k == n)
            memset(longp, 'c', 4095);
        ATTACK("path_symlink 4095-byte target", 0, r_path_symlink(P(longp), 4095, pfd, P("longlink"), 8));
        ATTACK("path_symlink target with a NUL", 1, r_path_symlink(P("f.txt\0/../../etc"), 17, pfd, P("nul_link"), 8));
        ATTACK("path_symlink empty target", 0, r_path_symlink(P(""), 0, pfd, P("empty_link"), 10));
    }
    /* Small buffers that must be filled partially, never overrun (scratch
     * starts as 0x5a bytes; main checks the bytes after each buffer). */
    ATTACK("fd_readdir buf_len 1", 0, r_fd_readdir(pfd, P(scratch), 1, 0, P(&out32)));
    ATTACK("fd_readdir buf_len 23", 0, r_fd_readdir(pfd, P(scratch), 23, 0, P(&out32)));
    ATTACK("fd_readdir buf_len 24", 0, r_fd_readdir(pfd, P(scratch), 24, 0, P(&out32)));
    ATTACK("fd_readdir buf_len 25", 0, r_fd_readdir(pfd, P(scratch), 25, 0, P(&out32)));
    ATTACK("fd_readdir buf at END-24 len 24", 0, r_fd_readdir(pfd, END - 24, 24, 0, P(&out32)));
    ATTACK("path_readlink buf_len 1", 0, r_path_readlink(pfd, LN, LL, P(scratch), 1, P(&out32)));
    ATTACK("path_readlink buf_len 0", 0, r_path_readlink(pfd, LN, LL, P(scratch), 0, P(&out32)));
    ATTACK("fd_prestat_dir_name buf_len 1", 0, r_fd_prestat_dir_name(pfd, P(scratch), 1));
    ATTACK("args_get into the last bytes of memory", 0, r_args_get(END - 64, END - 48));
    ATTACK("random_get 0 bytes at END", 0, r_random_get(END, 0));
    ATTACK("path_open empty path", 0, raw_path_open(pfd, 0, FN, 0, 0, RIGHTS_READ, 0, 0, P(&out32)));
    ATTACK("path_filestat_get buf at END-8", 1, r_path_filestat_get(pfd, 0, FN, FL, END - 8));
    ATTACK("path_filestat_get path at END", 1, r_path_filestat_get(pfd, 0, END, 4, P(out64)));
    ATTACK("path_readlink buf at END-1 len 100", 1, r_path_readlink(pfd, LN, LL, END - 1, 100, P(&out32)));
    ATTACK("path_readlink buf len 0xffffffff", 1, r_path_readlink(pfd, LN, LL, P(scratch), -1, P(&out32)));
    ATTACK("path_rename new path at END-2", 1, r_path_rename(pfd, FN, FL, pfd, END - 2, 8));
    ATTACK("path_rename old path len 0xffffffff", 1, r_path_rename(pfd, FN, -1, pfd, P("g.txt"), 5));
    ATTACK("path_symlink old at END-1", 1, r_path_symlink(END - 1, 5, pfd, P("lnk"), 3));
    ATTACK("path_symlink new len wraps", 1, r_path_symlink(FN, FL, pfd, 16, (i32)0xfffffff8));
    ATTACK("path_link new at END", 1, r_path_link(pfd, 0, FN, FL, pfd, END, 1));
    ATTACK("path_create_directory path at END-1 len 2", 1, r_path_create_directory(pfd, END - 1, 2));
    ATTACK("path_unlink_file path len 0xffffffff", 1, r_path_unlink_file(pfd, FN, -1));
    ATTACK("path_remove_directory path at 0xffffffff", 1, r_path_remove_directory(pfd, -1, 1));
    ATTACK("path_filestat_set_times bad flags", 1, r_path_filestat_set_times(pfd, 0, FN, FL, 0, 0, 0xffff));
    ATTACK("path_create_directory on a file fd", 1, r_path_create_directory(ffd, P(dname), 1));

    /* ---- directories ---- */
    ATTACK("fd_readdir buf at END-10 len 1000", 1, r_fd_readdir(pfd, END - 10, 1000, 0, P(&out32)));
    ATTACK("fd_readdir buf len 0xffffffff", 1, r_fd_readdir(pfd, P(scratch), -1, 0, P(&out32)));
    ATTACK("fd_readdir cookie 2^64-1", 0, r_fd_readdir(pfd, P(scratch), sizeof scratch, -1, P(&out32)));
    ATTACK("fd_readdir bufused at END", 1, r_fd_readdir(pfd, P(scratch), sizeof scratch, 0, END));
    ATTACK("fd_readdir on a file", 1, r_fd_readdir(ffd, P(scratch), sizeof scratch, 0, P(&out32)));
    ATTACK("fd_prestat_get buf at END-4", 1, r_fd_prestat_get(pfd, END - 4));
    ATTACK("fd_prestat_dir_name buf at END-1 len 100", 1, r_fd_prestat_dir_name(pfd, END - 1, 100));
    ATTACK("fd_prestat_dir_name len 0xffffffff", 1, r_fd_prestat_dir_name(pfd, P(scratch), -1));

    /* ---- args, environment, clocks, random ---- */
    ATTACK("args_sizes_get at END", 1, r_args_sizes_get(END, P(&out32)));
    ATTACK("args_get argv at END-4", 1, r_args_get(END - 4, P(scratch)));
    ATTACK("args_get buf at END-1", 1, r_args_get(P(out64), END - 1));
    ATTACK("environ_sizes_get at 0xfffffffc", 1, r_environ_sizes_get(P(&out32), (i32)0xfffffffc));
    ATTACK("environ_get environ at END-2", 1, r_environ_get(END - 2, P(scratch)));
    ATTACK("environ_get buf at END-1", 1, r_environ_get(P(out64), END - 1));
    ATTACK("clock_time_get result at END-4", 1, r_clock_time_get(1, 0, END - 4));
    ATTACK("clock_time_get clock 1000", 1, r_clock_time_get(1000, 0, P(out64)));
    ATTACK("clock_res_get result at END", 1, r_clock_res_get(0, END));
    ATTACK("random_get buf 16 len 0xfffffff0", 1, r_random_get(16, (i32)0xfffffff0));
    ATTACK("random_get buf at END-8 len 16", 1, r_random_get(END - 8, 16));
    ATTACK("random_get 1 GiB", 1, r_random_get(P(scratch), 1 << 30));

    /* ---- poll_oneoff ---- */
    ATTACK("poll_oneoff in at END-8", 1, r_poll_oneoff(END - 8, P(scratch) + 2048, 1, P(&out32)));
    ATTACK("poll_oneoff out at END-8", 1, r_poll_oneoff(P(scratch), END - 8, 1, P(&out32)));
    ATTACK("poll_oneoff nsubscriptions 0x15555556 (count*48 wraps)", 1, r_poll_oneoff(P(scratch), P(scratch) + 2048, 0x15555556, P(&out32)));
    ATTACK("poll_oneoff nsubscriptions 0", 0, r_poll_oneoff(P(scratch), P(scratch) + 2048, 0, P(&out32)));
    ATTACK("poll_oneoff nevents at END", 1, r_poll_oneoff(P(scratch), P(scratch) + 2048, 1, END));
    if (k == n) { /* one fd_read subscription on fd 0xffffffff, one bad tag */
        memset(scratch, 0, sizeof scratch);
        scratch[8] = 1;                          /* tag: fd_read */
        memset(scratch + 16, 0xff, 4);           /* fd */
        scratch[48 + 8] = 77;                    /* tag: nonsense */
    }
    ATTACK("poll_oneoff bad fd and bad tag", 0, r_poll_oneoff(P(scratch), P(scratch) + 2048, 2, P(&out32)));

    /* ---- fd bookkeeping ---- */
    ATTACK("fd_fdstat_get buf at END-4", 1, r_fd_fdstat_get(1, END - 4));
    ATTACK("fd_filestat_get buf at END-8", 1, r_fd_filestat_get(ffd, END - 8));
    ATTACK("fd_fdstat_set_flags all ones", 0, r_fd_fdstat_set_flags(ffd, 0xffff));
    ATTACK("fd_seek whence 99", 1, r_fd_seek(ffd, 0, 99, P(out64)));
    ATTACK("fd_seek to -1 from start", 1, r_fd_seek(ffd, -1, __WASI_WHENCE_SET, P(out64)));
    ATTACK("fd_seek INT64_MAX from end", 0, r_fd_seek(ffd, INT64_MAX, __WASI_WHENCE_END, P(out64)));
    ATTACK("fd_seek result at END-4", 1, r_fd_seek(ffd, 0, __WASI_WHENCE_SET, END - 4));
    ATTACK("fd_tell result at END", 1, r_fd_tell(ffd, END));
    ATTACK("fd_renumber(1, 0xfffffff0)", 0, r_fd_renumber(1, (i32)0xfffffff0));
    ATTACK("fd_renumber(0xfffffff0, 1)", 1, r_fd_renumber((i32)0xfffffff0, 1));
    ATTACK("fd_renumber(ffd, 100000)", 0, r_fd_renumber(ffd, 100000));
    ATTACK("fd_close(0xffffffff)", 1, r_fd_close(-1));
    if (k == n)
        (void)r_fd_close(pfd);
    ATTACK("path_open on the closed preopen", 1, raw_path_open(pfd, 0, FN, FL, 0, RIGHTS_READ, 0, 0, P(&out32)));
    ATTACK("fd_filestat_set_size 2^62", 0, r_fd_filestat_set_size(ffd, (i64)1 << 62));
    ATTACK("fd_allocate 2^62 bytes", 1, r_fd_allocate(ffd, 0, (i64)1 << 62));
    ATTACK("fd_allocate offset+len overflow", 1, r_fd_allocate(ffd, INT64_MAX, INT64_MAX));
    ATTACK("sock_recv data at END-4", 1, r_sock_recv(0, END - 4, 1, 0, P(&out32), P(&out32)));
    ATTACK("sock_send data len 0x20000000", 1, r_sock_send(1, P(iov), 0x20000000, 0, P(&out32)));

    *count = n;
    return -1000;
}

int main(int argc, char **argv) {
    END = (i32)(__builtin_wasm_memory_size(0) * 65536);
    iov[0] = (uint32_t)(uintptr_t)scratch;
    iov[1] = 16;
    const char *name = "";
    int count = 0;
    if (argc < 2 || !strcmp(argv[1], "count")) {
        attack(-1, &name, &count);
        printf("COUNT %d\n", count);
        return 0;
    }
    pfd = find_preopen("/sandbox");
    if (pfd < 0) {
        wrong("sanity: no preopen named /sandbox");
        return finish();
    }
    __wasi_fd_t f;
    __wasi_rights_t R = rights_of((__wasi_fd_t)pfd);
    if (__wasi_path_open((__wasi_fd_t)pfd, 0, "f.txt", 0, R, R, 0, &f) != 0) {
        wrong("sanity: cannot open /sandbox/f.txt read-write");
        return finish();
    }
    ffd = (i32)f;
    int k = atoi(argv[1]);
    memset(scratch, 0x5a, sizeof scratch);
    i32 e = attack(k, &name, &count);
    if (e == -1000) {
        wrong("no attack %d", k);
        return finish();
    }
    printf("RET %d %s errno=%d\n", k, name, e);
    /* The small-buffer attacks: nothing past what the call may fill. */
    static const struct { const char *name; size_t len; } guard[] = {
        {"fd_readdir buf_len 1", 1}, {"fd_readdir buf_len 23", 23}, {"fd_readdir buf_len 24", 24},
        {"fd_readdir buf_len 25", 25}, {"path_readlink buf_len 1", 1}, {"path_readlink buf_len 0", 0},
        {"fd_prestat_dir_name buf_len 1", 1},
    };
    for (size_t g = 0; g < sizeof guard / sizeof guard[0]; g++)
        if (!strcmp(name, guard[g].name))
            for (size_t i = guard[g].len; i < guard[g].len + 64; i++)
                if (scratch[i] != 0x5a) {
                    leak(scratch, guard[g].len + 64, "%s wrote past the buffer (byte %zu)", name, i);
                    break;
                }
    if (must_fail && e == 0)
        wrong("attack %d (%s) returned success", k, name);
    else if (e != 0)
        denied(e, "%s", name);
    return finish();
}
