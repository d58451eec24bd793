/*
 * test_native.c — the native backend (src/sandbox/native/) through the
 * public API: al_exec with AL_ISOLATION_NATIVE running real programs from
 * the host's /usr (sh, coreutils, python3 when installed).
 *
 * What it pins down: every status the backend produces (ok, exit, signaled,
 * timeout, cpu_limit, memory_limit, output_truncated, error) with its exit
 * code, signal and limits_hit; stdin, the clean environment, the guest
 * identity and hostname; granted directories (rw and ro); denied syscalls
 * counted; and that nothing survives a run — a timeout or a cancellation
 * (al_policy.cancel raised from another thread, also through a session)
 * with background children leaves no process behind, and no child of this
 * process is left unreaped. LeakSanitizer (make asan) checks every path frees what it made.
 *
 * When the host cannot make user namespaces the backend must refuse
 * (AL_STATUS_UNSUPPORTED) and every other test is skipped. Tests that need
 * python3 or a cgroup controller skip themselves when it is missing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "airlock.h"
#include "unit_helpers.h"

static bool native_ok; /* set by the first test: the host can run the backend */

/* A policy for argv (NULL-terminated) with a 10 s safety timeout. */
static al_policy policy_for(const char *const *argv) {
    al_policy p;
    al_policy_init(&p);
    p.isolation = AL_ISOLATION_NATIVE;
    p.argv = argv;
    p.argc = 0;
    while (argv[p.argc]) p.argc++;
    p.timeout_ms = 10000;
    return p;
}

static al_result run(const al_policy *p) {
    al_result r;
    memset(&r, 0xAB, sizeof r); /* al_exec must initialise everything */
    assert_true(al_exec(p, &r));
    assert_string_equal(r.backend, "native");
    return r;
}

static al_result run_argv(const char *const *argv) {
    al_policy p = policy_for(argv);
    return run(&p);
}

#define SKIP_UNLESS_NATIVE() \
    do {                     \
        if (!native_ok) skip(); \
    } while (0)

static bool have_python(void) { return access("/usr/bin/python3", X_OK) == 0; }

/* Is any process's command line exactly argv (NUL-separated)? */
static bool process_running(const char *a0, const char *a1) {
    DIR *d = opendir("/proc");
    assert_non_null(d);
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[300], buf[256];
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0) continue;
        buf[n] = 0;
        size_t l0 = strlen(a0);
        found = (size_t)n >= l0 + 1 && strcmp(buf, a0) == 0 && strcmp(buf + l0 + 1, a1) == 0;
    }
    closedir(d);
    return found;
}

/* ---- tests ------------------------------------------------------------------------- */

static void test_available_or_refused(void **state) {
    const char *argv[] = {"/bin/true", NULL};
    al_result r = run_argv(argv);
    if (r.status == AL_STATUS_UNSUPPORTED) {
        /* refused, never run weaker, and it says why */
        assert_true(strstr(r.error.message, "namespace") != NULL);
        al_result_free(&r);
        return;
    }
    assert_int_equal(r.status, AL_STATUS_OK);
    native_ok = true;
    al_result_free(&r);
}

static void test_echo(void **state) {
    SKIP_UNLESS_NATIVE();
    const char *argv[] = {"/bin/echo", "hi", NULL};
    al_result r = run_argv(argv);
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_int_equal(r.exit_code, 0);
    assert_int_equal(r.term_signal, 0);
    assert_int_equal(r.stdout_len, 3);
    assert_string_equal((const char *)r.stdout_data, "hi\n");
    assert_int_equal(r.stderr_len, 0);
    assert_non_null(r.stderr_data);
    assert_false(r.stdout_truncated);
    assert_int_equal(r.limits_hit, 0);
    assert_int_equal(r.denied_syscalls, 0);
    assert_true(r.wall_ns > 0);
    al_result_free(&r);
}

static void test_exit_code(void **state) {
    SKIP_UNLESS_NATIVE();
    const char *argv[] = {"/bin/sh", "-c", "echo out; echo err >&2; exit 3", NULL};
    al_result r = run_argv(argv);
    assert_int_equal(r.status, AL_STATUS_EXIT);
    assert_int_equal(r.exit_code, 3);
    assert_string_equal((const char *)r.stdout_data, "out\n");
    assert_string_equal((const char *)r.stderr_data, "err\n");
    al_result_free(&r);
}

static void test_signaled(void **state) {
    SKIP_UNLESS_NATIVE();
    const char *argv[] = {"sh", "-c", "kill -9 $$", NULL};
    al_result r = run_argv(argv);
    assert_int_equal(r.status, AL_STATUS_SIGNALED);
    assert_int_equal(r.term_signal, SIGKILL);
    assert_int_equal(r.exit_code, 128 + SIGKILL);
    al_result_free(&r);
}

static void test_not_found(void **state) {
    SKIP_UNLESS_NATIVE();
    const char *argv[] = {"no-such-program-airlock", NULL};
    al_result r = run_argv(argv);
    assert_int_equal(r.status, AL_STATUS_ERROR);
    assert_string_equal(r.error.message,
                        "native: cannot execute 'no-such-program-airlock': No such file or directory");
    al_result_free(&r);
}

static void test_missing_grant(void **state) {
    SKIP_UNLESS_NATIVE();
    const char *argv[] = {"/bin/true", NULL};
    al_policy p = policy_for(argv);
    al_dir_grant g = {.host_path = "/nonexistent-airlock-dir", .guest_path = "/work"};
    p.dirs = &g;
    p.ndirs = 1;
    al_result r = run(&p);
    assert_int_equal(r.status, AL_STATUS_ERROR);
    assert_string_equal(r.error.message,
                        "native: dir /nonexistent-airlock-dir: No such file or directory");
    al_result_free(&r);
}

static void test_python(void **state) {
    SKIP_UNLESS_NATIVE();
    if (!have_python()) skip();
    const char *argv[] = {"python3", "-c", "print(1+1)", NULL};
    al_result r = run_argv(argv);
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_string_equal((const char *)r.stdout_data, "2\n");
    al_result_free(&r);
}

static void test_stdin(void **state) {
    SKIP_UNLESS_NATIVE();
    static const uint8_t input[] = {'a', 0, 'b', '\n', 0xff};
    const char *argv[] = {"/bin/cat", NULL};
    al_policy p = policy_for(argv);
    p.stdin_data = input;
    p.stdin_len = sizeof input;
    al_result r = run(&p);
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_int_equal(r.stdout_len, sizeof input);
    assert_memory_equal(r.stdout_data, input, sizeof input);
    al_result_free(&r);

    /* no stdin granted: EOF at once */
    const char *wc[] = {"/bin/sh", "-c", "wc -c", NULL};
    r = run_argv(wc);
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_string_equal((const char *)r.stdout_data, "0\n");
    al_result_free(&r);
}

/* Only the policy's variables plus PATH, HOME, LANG; the guest identity is
 * uid/gid 1000 without supplementary groups; the hostname is the sandbox's. */
static void test_environment_and_identity(void **state) {
    SKIP_UNLESS_NATIVE();
    const char *env[] = {"FOO=bar", "LANG=C"};
    const char *argv[] = {"/bin/sh", "-c", "env | sort; id -u; id -g; id -G; hostname", NULL};
    al_policy p = policy_for(argv);
    p.env = env;
    p.nenv = 2;
    al_result r = run(&p);
    assert_int_equal(r.status, AL_STATUS_OK);
    /* sh adds PWD (and may add SHLVL, _); everything else comes from us */
    const char *out = (const char *)r.stdout_data;
    assert_non_null(strstr(out, "FOO=bar\n"));
    assert_non_null(strstr(out, "HOME=/tmp\n"));
    assert_non_null(strstr(out, "LANG=C\n"));
    assert_null(strstr(out, "LANG=C.UTF-8"));
    assert_non_null(strstr(out, "PATH=/usr/local/bin:/usr/bin:/bin\n"));
    assert_null(strstr(out, "USER="));
    assert_null(strstr(out, "AIRLOCK"));
    assert_non_null(strstr(out, "\n1000\n1000\n1000\nairlock\n"));
    al_result_free(&r);
}

static void test_output_cap(void **state) {
    SKIP_UNLESS_NATIVE();
    const char *argv[] = {"/bin/sh", "-c", "head -c 300000 /dev/zero; echo done >&2", NULL};
    al_policy p = policy_for(argv);
    p.stdout_cap = 1000;
    al_result r = run(&p);
    assert_int_equal(r.status, AL_STATUS_OUTPUT_TRUNCATED);
    assert_int_equal(r.exit_code, 0);
    assert_int_equal(r.stdout_len, 1000);
    assert_true(r.stdout_truncated);
    assert_false(r.stderr_truncated);
    assert_string_equal((const char *)r.stderr_data, "done\n");
    assert_true(r.limits_hit & AL_LIMIT_OUTPUT);
    al_result_free(&r);
}

/* The whole tree dies at the deadline, background children included. */
static void test_timeout_kills_tree(void **state) {
    SKIP_UNLESS_NATIVE();
    const char *argv[] = {"/bin/sh", "-c", "sleep 987654 & sleep 987654 & sleep 987654", NULL};
    al_policy p = policy_for(argv);
    p.timeout_ms = 300;
    al_result r = run(&p);
    assert_int_equal(r.status, AL_STATUS_TIMEOUT);
    assert_true(r.limits_hit & AL_LIMIT_WALL);
    assert_true(r.wall_ns >= 300000000u);
    assert_true(r.wall_ns < 3000000000u);
    assert_false(process_running("sleep", "987654"));
    al_result_free(&r);
}

/* A program that ends while its background children run: they are killed
 * at its end, not left running on the host. */
static void test_background_children_killed_at_exit(void **state) {
    SKIP_UNLESS_NATIVE();
    const char *argv[] = {"/bin/sh", "-c", "sleep 987655 & echo started", NULL};
    al_result r = run_argv(argv);
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_string_equal((const char *)r.stdout_data, "started\n");
    assert_true(r.wall_ns < 3000000000u);
    assert_false(process_running("sleep", "987655"));
    al_result_free(&r);
}

static void test_cpu_limit(void **state) {
    SKIP_UNLESS_NATIVE();
    const char *argv[] = {"/bin/sh", "-c", "while :; do :; done", NULL};
    al_policy p = policy_for(argv);
    p.cpu_time_ms = 300;
    al_result r = run(&p);
    assert_int_equal(r.status, AL_STATUS_CPU_LIMIT);
    assert_true(r.limits_hit & AL_LIMIT_CPU);
    assert_true(r.cpu_ns >= 250000000u);
    assert_true(r.wall_ns < 5000000000u);
    al_result_free(&r);
}

static void test_memory_limit(void **state) {
    SKIP_UNLESS_NATIVE();
    if (!have_python()) skip();
    const char *argv[] = {"python3", "-c", "b = bytearray(512 << 20); print(len(b))", NULL};
    al_policy p = policy_for(argv);
    p.max_memory_bytes = 64 << 20;
    al_result r = run(&p);
    /* with a memory cgroup: killed (MEMORY_LIMIT); with the RLIMIT_AS
     * fallback python gets MemoryError and exits 1. Never 512 MiB. */
    assert_true(r.status == AL_STATUS_MEMORY_LIMIT || r.status == AL_STATUS_EXIT);
    if (r.status == AL_STATUS_MEMORY_LIMIT) {
        assert_true(r.limits_hit & AL_LIMIT_MEMORY);
        assert_int_equal(r.term_signal, SIGKILL);
    }
    assert_null(strstr((const char *)r.stdout_data, "536870912"));
    al_result_free(&r);
}

/* A fork bomb stays under max_processes and is ended by the timeout. */
static void test_fork_bomb(void **state) {
    SKIP_UNLESS_NATIVE();
    if (!have_python()) skip();
    /* forks until refused, then keeps trying; every child is a sleep */
    const char *bomb = "import os, time\n"
                       "while True:\n"
                       "    try:\n"
                       "        if os.fork() == 0: os.execvp('sleep', ['sleep', '987656'])\n"
                       "    except OSError:\n"
                       "        time.sleep(0.01)\n";
    const char *argv[] = {"python3", "-c", bomb, NULL};
    al_policy p = policy_for(argv);
    p.max_processes = 16;
    p.timeout_ms = 1000;
    al_result r = run(&p);
    assert_int_equal(r.status, AL_STATUS_TIMEOUT);
    assert_true(r.limits_hit & AL_LIMIT_WALL);
    assert_true(r.limits_hit & AL_LIMIT_PROCESSES);
    assert_false(process_running("sleep", "987656"));
    al_result_free(&r);
}

/* A denied call (unshare) fails with EPERM and is counted. */
static void test_denied_syscall_counted(void **state) {
    SKIP_UNLESS_NATIVE();
    if (access("/usr/bin/unshare", X_OK) != 0) skip();
    const char *argv[] = {"unshare", "-U", "true", NULL};
    al_result r = run_argv(argv);
    assert_int_equal(r.status, AL_STATUS_EXIT);
    assert_true(r.denied_syscalls >= 1);
    assert_non_null(strstr((const char *)r.stderr_data, "Operation not permitted"));
    al_result_free(&r);
}

static void test_file_size_limit(void **state) {
    SKIP_UNLESS_NATIVE();
    const char *argv[] = {"/bin/sh", "-c", "exec head -c 3000000 /dev/zero > /tmp/big", NULL};
    al_policy p = policy_for(argv);
    p.max_file_size = 1 << 20;
    al_result r = run(&p);
    assert_int_equal(r.status, AL_STATUS_SIGNALED);
    assert_int_equal(r.term_signal, SIGXFSZ);
    assert_true(r.limits_hit & AL_LIMIT_FILE_SIZE);
    al_result_free(&r);
}

/* A temporary directory the guest (uid 1000 when we are root) can use; the
 * teardown removes it even when an assertion failed half-way. */
static int make_workspace(void **state) {
    char *dir = strdup("/tmp/airlock-test-native-XXXXXX");
    if (!dir || !mkdtemp(dir)) {
        free(dir);
        return -1;
    }
    if (geteuid() == 0 && chown(dir, 1000, 1000) != 0) {
        rmdir(dir);
        free(dir);
        return -1;
    }
    *state = dir;
    return 0;
}

static int remove_workspace(void **state) {
    char *dir = *state;
    char path[256];
    const char *names[] = {"out.txt", "in.txt", "new.txt"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    int rc = rmdir(dir);
    free(dir);
    return rc;
}

static void test_grants(void **state) {
    SKIP_UNLESS_NATIVE();
    const char *dir = *state;
    char path[128];
    snprintf(path, sizeof path, "%s/in.txt", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("from host\n", f);
    fclose(f);

    /* rw: read, write, and the cwd defaults to the first grant */
    const char *argv[] = {"/bin/sh", "-c", "pwd; cat in.txt; echo from guest > /work/out.txt", NULL};
    al_policy p = policy_for(argv);
    al_dir_grant g = {.host_path = dir, .guest_path = "/work//", .read_only = false};
    p.dirs = &g;
    p.ndirs = 1;
    al_result r = run(&p);
    assert_int_equal(r.status, AL_STATUS_OK);
    assert_string_equal((const char *)r.stdout_data, "/work\nfrom host\n");
    al_result_free(&r);
    snprintf(path, sizeof path, "%s/out.txt", dir);
    f = fopen(path, "r");
    assert_non_null(f);
    char line[64] = {0};
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    assert_string_equal(line, "from guest\n");

    /* ro: reading works, writing does not */
    const char *argv2[] = {"/bin/sh", "-c", "cat /data/in.txt; echo x > /data/new.txt", NULL};
    p = policy_for(argv2);
    g.guest_path = "/data";
    g.read_only = true;
    p.dirs = &g;
    p.ndirs = 1;
    p.cwd = "/tmp";
    r = run(&p);
    assert_int_equal(r.status, AL_STATUS_EXIT);
    assert_string_equal((const char *)r.stdout_data, "from host\n");
    al_result_free(&r);
    snprintf(path, sizeof path, "%s/new.txt", dir);
    assert_int_equal(access(path, F_OK), -1);
}

/* ---- cancellation ------------------------------------------------------------------ */

/* What a cancelled native run looks like, and that its tree is gone. */
static void assert_cancelled(const al_result *r, const canceller *c, uint64_t t0, uint64_t end,
                             const char *marker) {
    assert_int_equal(r->status, AL_STATUS_CANCELLED);
    assert_string_equal(r->error.message, "shutdown");
    assert_int_equal(r->term_signal, SIGKILL);
    assert_int_equal(r->exit_code, 128 + SIGKILL);
    assert_int_equal(r->limits_hit & AL_LIMIT_WALL, 0);
    assert_true(end - t0 < 2000);
    assert_true(end - canceller_raised_ms(c) < 1000);
    assert_false(process_running("sleep", marker));
}

/* `sleep` in the foreground and in the background, a 10 s timeout: the
 * flag raised after 200 ms kills the whole tree as a timeout would. */
static void test_cancel_kills_tree(void **state) {
    SKIP_UNLESS_NATIVE();
    const char *argv[] = {"/bin/sh", "-c", "sleep 987656 & sleep 987656", NULL};
    al_policy p = policy_for(argv);
    canceller c;
    canceller_start(&c, 200);
    p.cancel = &c.flag;
    p.cancel_reason = "shutdown";
    uint64_t t0 = now_ms();
    al_result r = run(&p);
    uint64_t end = now_ms();
    pthread_join(c.thread, NULL);
    printf("native: cancelled %llu ms after the flag was raised (wall %llu ms)\n",
           (unsigned long long)(end - canceller_raised_ms(&c)),
           (unsigned long long)(r.wall_ns / 1000000u));
    assert_cancelled(&r, &c, t0, end, "987656");
    al_result_free(&r);
}

/* Raised before al_exec: nothing is started at all. */
static void test_cancel_already_raised(void **state) {
    SKIP_UNLESS_NATIVE();
    const char *argv[] = {"/bin/sh", "-c", "echo ran", NULL};
    al_policy p = policy_for(argv);
    int flag = 1;
    p.cancel = &flag;
    al_result r = run(&p);
    assert_int_equal(r.status, AL_STATUS_CANCELLED);
    assert_string_equal(r.error.message, "cancelled");
    assert_non_null(r.stdout_data);
    assert_int_equal(r.stdout_len, 0);
    al_result_free(&r);
}

/* A native session passes the request's flag and reason to its run; the
 * session itself goes on. */
static void test_cancel_in_session(void **state) {
    SKIP_UNLESS_NATIVE();
    const char *argv[] = {"/bin/sh", "-c", "sleep 987657", NULL};
    al_policy p = policy_for(argv);
    al_error e;
    al_session *s = al_session_open(&p, &e);
    assert_non_null(s);
    canceller c;
    canceller_start(&c, 200);
    al_policy req = p;
    req.cancel = &c.flag;
    req.cancel_reason = "shutdown";
    al_result r;
    uint64_t t0 = now_ms();
    assert_true(al_session_exec(s, &req, &r));
    uint64_t end = now_ms();
    pthread_join(c.thread, NULL);
    assert_cancelled(&r, &c, t0, end, "987657");
    al_result_free(&r);
    const char *echo[] = {"/bin/echo", "after", NULL};
    req = policy_for(echo);
    assert_true(al_session_exec(s, &req, &r));
    assert_int_equal(r.status, AL_STATUS_OK);
    al_result_free(&r);
    al_session_close(s);
}

/* Nothing of the runs above is left as a child of this process. */
static void test_no_zombies(void **state) {
    SKIP_UNLESS_NATIVE();
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG | __WALL), -1);
    assert_int_equal(errno, ECHILD);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_available_or_refused),
        cmocka_unit_test(test_echo),
        cmocka_unit_test(test_exit_code),
        cmocka_unit_test(test_signaled),
        cmocka_unit_test(test_not_found),
        cmocka_unit_test(test_missing_grant),
        cmocka_unit_test(test_python),
        cmocka_unit_test(test_stdin),
        cmocka_unit_test(test_environment_and_identity),
        cmocka_unit_test(test_output_cap),
        cmocka_unit_test(test_timeout_kills_tree),
        cmocka_unit_test(test_background_children_killed_at_exit),
        cmocka_unit_test(test_cpu_limit),
        cmocka_unit_test(test_memory_limit),
        cmocka_unit_test(test_fork_bomb),
        cmocka_unit_test(test_denied_syscall_counted),
        cmocka_unit_test(test_file_size_limit),
        cmocka_unit_test_setup_teardown(test_grants, make_workspace, remove_workspace),
        cmocka_unit_test(test_cancel_kills_tree),
        cmocka_unit_test(test_cancel_already_raised),
        cmocka_unit_test(test_cancel_in_session),
        cmocka_unit_test(test_no_zombies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
