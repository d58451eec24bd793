/*
 * capture.c — capped output buffers, and running a helper program (runsc) on
 * the host with its output captured.
 *
 * Invariants:
 *  - a sandbox_capture never holds more than `cap` bytes; bytes past the cap
 *    are read (so the writer never blocks on a full pipe) and dropped, and
 *    `truncated` records that it happened;
 *  - data, when non-NULL, is NUL-terminated (alloc >= len + 1);
 *  - on_output, when set, sees exactly the bytes that are kept, each once,
 *    in order, just before they are kept (never those past the cap);
 *  - sandbox_run_helper never leaves a child behind: on timeout it kills the
 *    helper's whole process group and reaps it.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox.h"

#define HELPER_OUTPUT_CAP ((size_t)1 << 20)

void capture_init(sandbox_capture *c, size_t cap) {
    memset(c, 0, sizeof *c);
    c->cap = cap;
}

void capture_stream_to(sandbox_capture *c, const al_policy *policy, int stream) {
    c->on_output = policy ? policy->on_output : NULL;
    c->on_output_ctx = policy ? policy->on_output_ctx : NULL;
    c->stream = stream;
}

bool capture_append(sandbox_capture *c, const void *bytes, size_t n) {
    size_t room = c->cap - c->len;
    size_t keep = n < room ? n : room;
    if (keep < n) c->truncated = true;
    if (keep == 0) return true;
    if (c->len + keep + 1 > c->alloc) {
        size_t want = c->alloc ? c->alloc : 4096;
        while (want < c->len + keep + 1) want *= 2;
        if (want > c->cap + 1) want = c->cap + 1;
        uint8_t *grown = realloc(c->data, want);
        if (!grown) {
            c->truncated = true;
            return false;
        }
        c->data = grown;
        c->alloc = want;
    }
    if (c->on_output) c->on_output(c->on_output_ctx, c->stream, bytes, keep);
    memcpy(c->data + c->len, bytes, keep);
    c->len += keep;
    c->data[c->len] = 0;
    return true;
}

int capture_read_fd(sandbox_capture *c, int fd) {
    uint8_t buf[16384];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) {
            capture_append(c, buf, (size_t)n);
            continue;
        }
        if (n == 0) return 0;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 1;
        return -1;
    }
}

void capture_move_to_result(sandbox_capture *c, uint8_t **data, size_t *len, bool *truncated) {
    if (!c->data) {
        c->data = calloc(1, 1); /* the result promises "" rather than NULL */
        c->len = 0;
    }
    free(*data);
    *data = c->data;
    *len = c->data ? c->len : 0;
    *truncated = c->truncated;
    c->data = NULL;
    c->len = c->alloc = 0;
}

void capture_free(sandbox_capture *c) {
    free(c->data);
    c->data = NULL;
    c->len = c->alloc = 0;
}

/* ---- helper programs ------------------------------------------------------------ */

static void close_pair(int p[2]) {
    if (p[0] >= 0) close(p[0]);
    if (p[1] >= 0) close(p[1]);
    p[0] = p[1] = -1;
}

/* In the forked child: wire stdio and exec; only async-signal-safe calls. */
static _Noreturn void helper_child(const char *const *argv, int stdin_fd, int out_fd, int err_fd) {
    setpgid(0, 0); /* its own group, so a timeout kills its children too */
    int in = stdin_fd >= 0 ? stdin_fd : open("/dev/null", O_RDONLY);
    /* An embedder that closed its own stdio may have been given fds 0-2 for
     * these: move them above 2 first, or one dup2 would overwrite another. */
    in = in >= 0 ? fcntl(in, F_DUPFD_CLOEXEC, 3) : -1;
    out_fd = fcntl(out_fd, F_DUPFD_CLOEXEC, 3);
    err_fd = fcntl(err_fd, F_DUPFD_CLOEXEC, 3);
    if (in < 0 || out_fd < 0 || err_fd < 0) _exit(126);
    if (dup2(in, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) _exit(126);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    execv(argv[0], (char *const *)argv);
    _exit(127);
}

static int remaining_ms(uint64_t deadline_ns) {
    uint64_t now = sandbox_now_ns();
    if (now >= deadline_ns) return 0;
    uint64_t ms = (deadline_ns - now) / 1000000u + 1;
    return ms > 60000 ? 60000 : (int)ms;
}

/* Read both pipes until EOF or the deadline. True at EOF on both. */
static bool drain_until(int out_fd, int err_fd, sandbox_capture *out, sandbox_capture *errout,
                        uint64_t deadline_ns) {
    sandbox_capture sink_out, sink_err;
    capture_init(&sink_out, 0);
    capture_init(&sink_err, 0);
    sandbox_capture *co = out ? out : &sink_out, *ce = errout ? errout : &sink_err;
    bool out_open = true, err_open = true;
    while (out_open || err_open) {
        struct pollfd fds[2] = {{.fd = out_open ? out_fd : -1, .events = POLLIN},
                                {.fd = err_open ? err_fd : -1, .events = POLLIN}};
        int wait = remaining_ms(deadline_ns);
        if (wait == 0) return false;
        int n = poll(fds, 2, wait);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return false;
        if (fds[0].revents && capture_read_fd(co, out_fd) != 1) out_open = false;
        if (fds[1].revents && capture_read_fd(ce, err_fd) != 1) err_open = false;
    }
    return true;
}

bool sandbox_run_helper(const char *const *argv, int stdin_fd, uint64_t timeout_ms,
                        int *wait_status, sandbox_capture *out, sandbox_capture *errout,
                        al_error *err) {
    int po[2] = {-1, -1}, pe[2] = {-1, -1};
    if (out && out->cap == 0) capture_init(out, HELPER_OUTPUT_CAP);
    if (errout && errout->cap == 0) capture_init(errout, HELPER_OUTPUT_CAP);
    if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
        close_pair(po);
        close_pair(pe);
        return sandbox_error_errno(err, "pipe for %s", argv[0]);
    }
    pid_t pid = fork();
    if (pid < 0) {
        close_pair(po);
        close_pair(pe);
        return sandbox_error_errno(err, "fork for %s", argv[0]);
    }
    if (pid == 0) helper_child(argv, stdin_fd, po[1], pe[1]);
    setpgid(pid, pid); /* also here: whichever runs first wins the race */
    close(po[1]);
    close(pe[1]);
    fcntl(po[0], F_SETFL, O_NONBLOCK);
    fcntl(pe[0], F_SETFL, O_NONBLOCK);
    uint64_t deadline = sandbox_now_ns() + (timeout_ms ? timeout_ms : 600000) * 1000000u;
    bool finished = drain_until(po[0], pe[0], out, errout, deadline);
    close(po[0]);
    close(pe[0]);
    int status = 0;
    if (!finished) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (!finished) {
        kill(-pid, SIGKILL); /* stragglers of its group that kept no pipe open */
        *wait_status = -1;
        return true;
    }
    *wait_status = status;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && access(argv[0], X_OK) != 0) {
        errno = ENOENT;
        return sandbox_error_errno(err, "cannot run %s", argv[0]);
    }
    return true;
}
