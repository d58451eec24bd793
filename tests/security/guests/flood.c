/*
 * Case 12: print a lot. argv[1]: "stdout" (default) or "stderr"; argv[2]:
 * MiB to write (default 100). Byte p of the stream is '\n' when p % 64 == 63,
 * else 'A' + (p / 64) % 26; it goes out in fd_write calls of 65000 bytes, so
 * a 1 MiB cap falls in the middle of one. Prints nothing else: the captured
 * bytes must be exactly the stream's first cap bytes.
 */
#include "common.h"

#define PERIOD (64 * 26)
#define CHUNK 65000

static char pattern[CHUNK + PERIOD];

int main(int argc, char **argv) {
    int fd = argc > 1 && !strcmp(argv[1], "stderr") ? 2 : 1;
    long long total = (argc > 2 ? atoll(argv[2]) : 100) << 20;
    for (size_t i = 0; i < sizeof pattern; i++)
        pattern[i] = (i % 64 == 63) ? '\n' : (char)('A' + (i / 64) % 26);
    long failures = 0;
    for (long long pos = 0; pos < total;) {
        size_t n = total - pos < CHUNK ? (size_t)(total - pos) : CHUNK;
        __wasi_ciovec_t iov = {(const uint8_t *)pattern + pos % PERIOD, n};
        __wasi_size_t written = 0;
        if (__wasi_fd_write((__wasi_fd_t)fd, &iov, 1, &written) != 0 || written == 0)
            failures++;
        pos += written ? written : n;
    }
    return failures ? 3 : 0;
}
