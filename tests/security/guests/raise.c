/*
 * Case 20: proc_raise with every WASI signal number (and some past the
 * last). Signals do not exist in the sandbox: each call must fail with an
 * errno, and none may reach the host process (node's uvwasi raises them in
 * the host: SIGSTOP would freeze airlock, SIGKILL end it).
 */
#include "common.h"

/* This wasi-libc does not declare proc_raise; the import is standard. */
int32_t raw_proc_raise(int32_t sig) WASI_IMPORT(proc_raise);

int main(void) {
    for (uint32_t sig = 0; sig <= 31; sig++) {
        int32_t e = raw_proc_raise((int32_t)sig);
        if (e != 0)
            denied(e, "proc_raise(%u)", sig);
        else if (sig == 0)
            info("proc_raise(0) returned success");
        else
            wrong("proc_raise(%u) returned success", sig);
    }
    return finish();
}
