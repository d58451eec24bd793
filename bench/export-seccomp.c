/*
 * export-seccomp.c — write the native backend's seccomp program (the plain
 * EPERM variant: bwrap cannot answer user notifications) to stdout as raw
 * struct sock_filter, for `bwrap --seccomp FD` in bench/exec-latency.sh, so
 * that the bwrap side of the comparison filters the same system calls.
 */
#include <stdio.h>
#include <unistd.h>

#include "native.h"

int main(void) {
    static native_seccomp_filter filter; /* 32 KiB: not on the stack */
    al_error err;
    if (!seccomp_prepare(&filter, false, &err)) {
        fprintf(stderr, "export-seccomp: %s\n", err.message);
        return 1;
    }
    size_t bytes = (size_t)filter.len * sizeof filter.code[0];
    if (fwrite(filter.code, 1, bytes, stdout) != bytes || fflush(stdout) != 0) {
        perror("export-seccomp");
        return 1;
    }
    return 0;
}
