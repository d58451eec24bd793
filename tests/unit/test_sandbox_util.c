/*
 * test_sandbox_util.c — the helpers every program backend relies on:
 * capped output capture (capture.c), the state directory, execution ids and
 * owner liveness (state.c), and helper processes with a deadline.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox.h"

static void test_capture_cap(void **state) {
    (void)state;
    sandbox_capture c;
    capture_init(&c, 10);
    assert_true(capture_append(&c, "hello", 5));
    assert_false(c.truncated);
    assert_true(capture_append(&c, " world!", 7));
    assert_true(c.truncated);
    assert_int_equal(c.len, 10);
    assert_memory_equal(c.data, "hello worl", 10);
    assert_int_equal(c.data[10], 0); /* always NUL-terminated */
    assert_true(capture_append(&c, "more", 4));
    assert_int_equal(c.len, 10);
    uint8_t *data = NULL;
    size_t len = 0;
    bool truncated = false;
    capture_move_to_result(&c, &data, &len, &truncated);
    assert_int_equal(len, 10);
    assert_true(truncated);
    assert_null(c.data);
    free(data);
    capture_free(&c);
}

static void test_capture_empty_is_a_string(void **state) {
    (void)state;
    sandbox_capture c;
    capture_init(&c, 0); /* cap 0: everything is dropped */
    assert_true(capture_append(&c, "x", 1));
    assert_true(c.truncated);
    uint8_t *data = NULL;
    size_t len = 7;
    bool truncated = false;
    capture_move_to_result(&c, &data, &len, &truncated);
    assert_non_null(data);
    assert_int_equal(len, 0);
    assert_string_equal((char *)data, "");
    free(data);
}

static void test_capture_read_fd(void **state) {
    (void)state;
    int p[2];
    assert_int_equal(pipe2(p, O_NONBLOCK), 0);
    sandbox_capture c;
    capture_init(&c, 1 << 20);
    assert_int_equal(capture_read_fd(&c, p[0]), 1); /* nothing yet, still open */
    assert_int_equal(write(p[1], "abc", 3), 3);
    assert_int_equal(capture_read_fd(&c, p[0]), 1);
    close(p[1]);
    assert_int_equal(capture_read_fd(&c, p[0]), 0); /* EOF */
    assert_int_equal(c.len, 3);
    close(p[0]);
    capture_free(&c);
}

static void test_state_dir(void **state) {
    (void)state;
    char tmpl[] = "/tmp/airlock-state-test-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    char path[4096], out[4096];
    snprintf(path, sizeof path, "%s/a/b", tmpl);
    al_error err;
    assert_true(sandbox_state_dir(path, out, sizeof out, &err));
    assert_string_equal(out, path);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    /* a relative path is refused */
    assert_false(sandbox_state_dir("relative/dir", out, sizeof out, &err));
    assert_non_null(strstr(err.message, "not an absolute path"));
    /* a group/world-writable state dir is tightened, not trusted as is */
    assert_int_equal(chmod(path, 0777), 0);
    assert_true(sandbox_state_dir(path, out, sizeof out, &err));
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0077, 0);
    /* a file is not a directory */
    char file[4200];
    snprintf(file, sizeof file, "%s/file", tmpl);
    int fd = open(file, O_CREAT | O_WRONLY, 0600);
    assert_true(fd >= 0);
    close(fd);
    assert_false(sandbox_state_dir(file, out, sizeof out, &err));
    /* owned by another user: refused (only checkable as root) */
    if (geteuid() == 0) {
        assert_int_equal(chown(path, 1234, 1234), 0);
        assert_false(sandbox_state_dir(path, out, sizeof out, &err));
        assert_non_null(strstr(err.message, "owned by uid 1234"));
    }
    sandbox_remove_tree(tmpl);
    assert_int_equal(access(tmpl, F_OK), -1);
}

static void test_ids_and_owners(void **state) {
    (void)state;
    char a[64], b[64];
    sandbox_new_id(a, sizeof a);
    sandbox_new_id(b, sizeof b);
    assert_string_not_equal(a, b);
    int pid = 0;
    unsigned long long start = 0;
    unsigned n = 0;
    assert_int_equal(sscanf(a, "al-%d-%llu-%u", &pid, &start, &n), 3);
    assert_int_equal(pid, getpid());
    assert_true(start > 0);
    assert_true(sandbox_owner_alive(getpid(), start));
    /* the same pid with another start time is a recycled pid, not the owner */
    assert_false(sandbox_owner_alive(getpid(), start + 1));
    pid_t child = fork();
    if (child == 0) _exit(0);
    assert_true(child > 0);
    waitpid(child, NULL, 0);
    assert_false(sandbox_owner_alive(child, 0));
    assert_false(sandbox_owner_alive(0, 0));
    assert_false(sandbox_owner_alive(-1, 0));
}

static void test_run_helper(void **state) {
    (void)state;
    sandbox_capture out, err_out;
    capture_init(&out, 0);
    capture_init(&err_out, 0);
    al_error err;
    int status = 0;
    const char *echo[] = {"/bin/sh", "-c", "echo out; echo err >&2; exit 3", NULL};
    assert_true(sandbox_run_helper(echo, -1, 5000, &status, &out, &err_out, &err));
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 3);
    assert_string_equal((char *)out.data, "out\n");
    assert_string_equal((char *)err_out.data, "err\n");
    capture_free(&out);
    capture_free(&err_out);
    /* a helper that outlives its deadline is killed with its children */
    const char *slow[] = {"/bin/sh", "-c", "sleep 30 & sleep 30", NULL};
    uint64_t t0 = sandbox_now_ns();
    assert_true(sandbox_run_helper(slow, -1, 200, &status, NULL, NULL, &err));
    assert_int_equal(status, -1);
    assert_true(sandbox_now_ns() - t0 < 5000000000u);
    /* a program that does not exist */
    const char *missing[] = {"/nonexistent/helper", NULL};
    assert_false(sandbox_run_helper(missing, -1, 5000, &status, NULL, NULL, &err));
    assert_non_null(strstr(err.message, "/nonexistent/helper"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capture_cap),
        cmocka_unit_test(test_capture_empty_is_a_string),
        cmocka_unit_test(test_capture_read_fd),
        cmocka_unit_test(test_state_dir),
        cmocka_unit_test(test_ids_and_owners),
        cmocka_unit_test(test_run_helper),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
