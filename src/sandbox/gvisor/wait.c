/*
 * wait.c — watching one runsc client (`runsc run` or `runsc exec`) whose
 * stdout/stderr are the program's: reading the output under its caps,
 * enforcing the wall-clock and CPU-time limits and the embedder's cancel
 * flag, and turning what happened into an al_result.
 *
 * Invariants:
 *  - the pipes are always drained, past the caps too (bytes are dropped,
 *    not left in the pipe), so a chatty program never blocks on a full pipe
 *    and never turns an output cap into a hang;
 *  - output reaches the policy's on_output as each read here returns (the
 *    captures were set up with capture_stream_to), within the caps; a
 *    runsc fatal error line cut from stderr afterwards
 *    (gvisor_strip_runsc_error) has already been handed on by then;
 *  - a limit fires at most once; then the caller's stop() makes the
 *    container's program die, and if the runsc client has not ended
 *    GVISOR_GRACE_MS later it is SIGKILLed: the watch always ends;
 *  - the exit status comes from runsc's own log ("Exiting with status: N",
 *    the raw wait status), not from runsc's exit code, which folds a signal
 *    N into 128+N and runsc's own failures into 128 — indistinguishable
 *    from a program that exits with those codes. The log is written by
 *    runsc on the host; the guest cannot forge it;
 *  - the program's stderr holds what the program wrote: runsc's own
 *    processes log to files (gvisor_logs), and the one line runsc still
 *    prints on its stderr — its fatal error — is cut off again when the log
 *    names it (gvisor_strip_runsc_error), or, when runsc failed before the
 *    program ran, all of stderr is runsc's and becomes the error message.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gvisor.h"

static uint64_t ms_to_ns(uint64_t ms) { return ms * 1000000u; }

/* Has the tree used up its CPU time? Reads the cgroup (cheap: two files). */
static bool cpu_exhausted(const gvisor_watch *w) {
    if (!w->cpu_limit_ns || !w->cg || w->cg->version == 0) return false;
    native_cgroup_stats st = {0};
    cgroup_read_stats(w->cg, &st);
    return st.cpu_ns > w->cpu_base_ns && st.cpu_ns - w->cpu_base_ns >= w->cpu_limit_ns;
}

/* Milliseconds until the next thing the loop must look at. */
static int next_wakeup_ms(const gvisor_watch *w, uint64_t now, uint64_t deadline,
                          uint64_t grace_deadline) {
    uint64_t next = UINT64_MAX;
    if (grace_deadline) next = grace_deadline;
    else {
        if (deadline) next = deadline;
        if (w->cpu_limit_ns && w->cg && w->cg->version != 0) {
            uint64_t poll_at = now + ms_to_ns(GVISOR_CPU_POLL_MS);
            if (poll_at < next) next = poll_at;
        }
        if (w->cancel) {
            uint64_t poll_at = now + ms_to_ns(SANDBOX_CANCEL_POLL_MS);
            if (poll_at < next) next = poll_at;
        }
    }
    if (next == UINT64_MAX) return -1;
    if (next <= now) return 0;
    uint64_t ms = (next - now) / 1000000u + 1;
    return ms > 60000 ? 60000 : (int)ms;
}

static void fire(gvisor_watch *w, gvisor_stop_reason why, uint64_t *grace_deadline) {
    w->fired = why;
    if (w->stop) w->stop(w->stop_arg);
    *grace_deadline = sandbox_now_ns() + ms_to_ns(GVISOR_GRACE_MS);
}

static void read_ready(gvisor_watch *w, struct pollfd *fds) {
    if (w->out_fd >= 0 && fds[1].revents && capture_read_fd(&w->out, w->out_fd) != 1) {
        close(w->out_fd);
        w->out_fd = -1;
    }
    if (w->err_fd >= 0 && fds[2].revents && capture_read_fd(&w->err, w->err_fd) != 1) {
        close(w->err_fd);
        w->err_fd = -1;
    }
}

void gvisor_watch_run(gvisor_watch *w) {
    if (w->out_fd >= 0) fcntl(w->out_fd, F_SETFL, O_NONBLOCK);
    if (w->err_fd >= 0) fcntl(w->err_fd, F_SETFL, O_NONBLOCK);
    uint64_t deadline = w->timeout_ms ? w->start_ns + ms_to_ns(w->timeout_ms) : 0;
    uint64_t grace_deadline = 0;
    bool exited = false;
    while (!exited) {
        uint64_t now = sandbox_now_ns();
        struct pollfd fds[3] = {{.fd = w->client->pidfd, .events = POLLIN},
                                {.fd = w->out_fd, .events = POLLIN},
                                {.fd = w->err_fd, .events = POLLIN}};
        int n = poll(fds, 3, next_wakeup_ms(w, now, deadline, grace_deadline));
        if (n < 0 && errno != EINTR) break;
        if (n > 0) read_ready(w, fds);
        if (n > 0 && fds[0].revents) { /* the pidfd: the client has ended */
            exited = true;
            break;
        }
        now = sandbox_now_ns();
        if (!w->fired && sandbox_flag_raised(w->cancel))
            fire(w, GVISOR_STOP_CANCEL, &grace_deadline);
        else if (!w->fired && deadline && now >= deadline) fire(w, GVISOR_STOP_WALL, &grace_deadline);
        else if (!w->fired && cpu_exhausted(w)) fire(w, GVISOR_STOP_CPU, &grace_deadline);
        else if (grace_deadline && now >= grace_deadline) break;
    }
    if (!exited) /* poll failed or the client ignored the stop: end it ourselves */
        gvisor_client_kill(w->client);
    w->client_status = gvisor_client_status(w->client);
    w->end_ns = sandbox_now_ns();
    /* The program is gone: what it wrote is in the pipes already. Whatever
     * still holds a write end (nothing should) cannot make us wait. */
    if (w->out_fd >= 0) capture_read_fd(&w->out, w->out_fd);
    if (w->err_fd >= 0) capture_read_fd(&w->err, w->err_fd);
    if (w->out_fd >= 0) close(w->out_fd);
    if (w->err_fd >= 0) close(w->err_fd);
    w->out_fd = w->err_fd = -1;
}

/* The log is small (tens of KiB); read at most this much of its end. */
#define LOG_TAIL_MAX (256 * 1024)

static char *read_tail(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return NULL;
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > LOG_TAIL_MAX ? size - LOG_TAIL_MAX : 0;
    char *buf = size >= 0 ? malloc((size_t)(size - from) + 1) : NULL;
    size_t got = 0;
    while (buf && from + (off_t)got < size) {
        ssize_t n = pread(fd, buf + got, (size_t)(size - from) - got, from + (off_t)got);
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    if (buf) buf[got] = 0;
    return buf;
}

/* The text after the last occurrence of key, up to the end of its line. */
static const char *last_line_with(const char *text, const char *key, size_t *len) {
    const char *found = NULL;
    for (const char *p = text; (p = strstr(p, key)); p += strlen(key)) found = p;
    if (!found) return NULL;
    found += strlen(key);
    *len = strcspn(found, "\n");
    return found;
}

void gvisor_strip_runsc_error(sandbox_capture *err, const char *log_path) {
    if (!err->data || !err->len) return;
    char *log = read_tail(log_path);
    if (!log) return;
    size_t len = 0;
    const char *msg = last_line_with(log, "FATAL ERROR: ", &len);
    /* Exactly runsc's line at the very end: the log is written by runsc on
     * the host, so the guest cannot make us cut anything else. */
    if (msg && len > 0 && err->len >= len + 1 && err->data[err->len - 1] == '\n' &&
        !memcmp(err->data + err->len - 1 - len, msg, len) &&
        (err->len == len + 1 || err->data[err->len - 2 - len] == '\n')) {
        err->len -= len + 1;
        err->data[err->len] = 0;
    }
    free(log);
}

int gvisor_log_status(const char *log_path, char *why, size_t whylen) {
    if (whylen) why[0] = 0;
    char *log = read_tail(log_path);
    if (!log) {
        snprintf(why, whylen, "runsc left no log at %s", log_path);
        return GVISOR_NO_LOG;
    }
    size_t len = 0;
    const char *v = last_line_with(log, "Exiting with status: ", &len);
    int status = -1;
    if (v) {
        char *end;
        long s = strtol(v, &end, 10);
        if (end != v && s >= 0 && s <= 0xffff) status = (int)s;
    }
    if (status < 0) {
        const char *msg = last_line_with(log, "FATAL ERROR: ", &len);
        if (msg) snprintf(why, whylen, "%.*s", (int)len, msg);
        else snprintf(why, whylen, "runsc ended without reporting the program's status");
    }
    free(log);
    return status;
}

void gvisor_fill_result(al_result *r, gvisor_watch *w, int wait_status, const char *runsc_error,
                        const native_cgroup_stats *st) {
    capture_move_to_result(&w->out, &r->stdout_data, &r->stdout_len, &r->stdout_truncated);
    capture_move_to_result(&w->err, &r->stderr_data, &r->stderr_len, &r->stderr_truncated);
    r->wall_ns = w->end_ns - w->start_ns;
    r->cpu_ns = st->cpu_ns > w->cpu_base_ns ? st->cpu_ns - w->cpu_base_ns : 0;
    r->peak_memory_bytes = st->peak_memory_bytes;
    /* gVisor implements system calls itself; there is no host filter whose
     * refusals could be counted. */
    r->denied_syscalls = 0;
    if (r->stdout_truncated || r->stderr_truncated) r->limits_hit |= AL_LIMIT_OUTPUT;
    if (st->oom_kills) r->limits_hit |= AL_LIMIT_MEMORY;
    if (st->pids_refused) r->limits_hit |= AL_LIMIT_PROCESSES;
    if (w->fired == GVISOR_STOP_CANCEL) {
        r->term_signal = SIGKILL;
        r->exit_code = 128 + SIGKILL;
        sandbox_set_status(r, AL_STATUS_CANCELLED, AL_OK, "%s",
                           w->cancel_reason && w->cancel_reason[0] ? w->cancel_reason
                                                                   : "cancelled");
    } else if (w->fired == GVISOR_STOP_WALL) {
        r->limits_hit |= AL_LIMIT_WALL;
        sandbox_set_status(r, AL_STATUS_TIMEOUT, AL_OK, "wall-clock limit of %llu ms reached",
                           (unsigned long long)w->timeout_ms);
    } else if (w->fired == GVISOR_STOP_CPU) {
        r->limits_hit |= AL_LIMIT_CPU;
        sandbox_set_status(r, AL_STATUS_CPU_LIMIT, AL_OK, "CPU-time limit of %llu ms reached",
                           (unsigned long long)(w->cpu_limit_ns / 1000000u));
    } else if (st->oom_kills) {
        /* The host OOM killer ends the sandbox as a whole (its sentry holds
         * all guest memory): the program did not get to exit. */
        sandbox_set_status(r, AL_STATUS_MEMORY_LIMIT, AL_OK, "memory limit reached");
    } else if (wait_status == GVISOR_NO_LOG && r->stderr_len) {
        /* runsc refused its command line before it logged anything (an
         * unknown platform, say): the program never ran, so what is on
         * stderr is runsc's own complaint. */
        const char *msg = (const char *)r->stderr_data;
        const char *fatal = strstr(msg, "FATAL ERROR: ");
        if (fatal && fatal < msg + strcspn(msg, "\n")) msg = fatal + strlen("FATAL ERROR: ");
        sandbox_set_status(r, AL_STATUS_ERROR, AL_ERR_SYSTEM, "gvisor: runsc: %.*s",
                           (int)strcspn(msg, "\n"), msg);
        /* It is in the error now; the program never ran and wrote nothing. */
        r->stderr_len = 0;
        r->stderr_data[0] = 0;
    } else if (wait_status < 0) {
        sandbox_set_status(r, AL_STATUS_ERROR, AL_ERR_SYSTEM, "gvisor: %s",
                           runsc_error && runsc_error[0] ? runsc_error : "runsc failed");
    } else if (WIFSIGNALED(wait_status)) {
        r->term_signal = WTERMSIG(wait_status);
        if (r->term_signal == SIGXFSZ) r->limits_hit |= AL_LIMIT_FILE_SIZE;
        if (r->term_signal == SIGXCPU) r->limits_hit |= AL_LIMIT_CPU;
        sandbox_set_status(r, AL_STATUS_SIGNALED, AL_OK, "killed by signal %d", r->term_signal);
    } else if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) != 0) {
        r->exit_code = WEXITSTATUS(wait_status);
        sandbox_set_status(r, AL_STATUS_EXIT, AL_OK, "exited with code %d", r->exit_code);
    } else if (r->limits_hit & AL_LIMIT_OUTPUT) {
        sandbox_set_status(r, AL_STATUS_OUTPUT_TRUNCATED, AL_OK, "output past the cap was dropped");
    } else {
        r->status = AL_STATUS_OK;
    }
}
