/* escape.c — the fixture's /sandbox/escape is a relative symlink to
 * ../outside, a directory beside the preopen. Following it leaves the
 * granted directory, so every walk through it must be refused; reading the
 * link itself is fine. node 20 follows it (KD-NODE-ESCAPE: node's own
 * documentation says node:wasi is no sandbox); the @known lines turn node's
 * "SUCCEEDED" into airlock's refusal, so a refusal by airlock with any other
 * errno, or a success, is a failure here. Attempts that change something
 * are undone when they succeed, so that the trees stay comparable. */
// @exit: 0
// @known: KD-NODE-ESCAPE stdout s/^\(ESCAPE [^:]*\): SUCCEEDED.*$/\1: refused ENOTCAPABLE/
// @known: KD-NODE-ESCAPE stdout /^  read [0-9]* bytes from outside$/d
#include <dirent.h>
#include <wasi/api.h>
#include "common.h"

static int attempt(const char *what, int r) {
    int e = errno;
    if (r >= 0)
        printf("ESCAPE %s: SUCCEEDED\n", what);
    else
        printf("ESCAPE %s: refused %s\n", what, errname(e));
    return r;
}
#define ATTEMPT(what, expr) (errno = 0, attempt((what), (int)(expr)))

int main(void) {
    char buf[256];
    /* the link itself */
    ssize_t n = readlink(SANDBOX "/escape", buf, sizeof buf);
    printf("readlink(escape): %zd \"%.*s\"\n", n, (int)(n > 0 ? n : 0), buf);
    LSTAT("lstat(escape)", SANDBOX "/escape");

    /* reads through it */
    int fd = ATTEMPT("open(escape/secret.txt)", open(SANDBOX "/escape/secret.txt", O_RDONLY));
    if (fd >= 0) {
        n = read(fd, buf, sizeof buf);
        printf("  read %zd bytes from outside\n", n);
        close(fd);
    }
    fd = ATTEMPT("open(escape, O_DIRECTORY)", open(SANDBOX "/escape", O_RDONLY | O_DIRECTORY));
    if (fd >= 0) close(fd);
    fd = ATTEMPT("open(escape/, O_DIRECTORY)", open(SANDBOX "/escape/", O_RDONLY | O_DIRECTORY));
    if (fd >= 0) close(fd);
    struct stat st;
    ATTEMPT("stat(escape)", stat(SANDBOX "/escape", &st));
    ATTEMPT("stat(escape/)", stat(SANDBOX "/escape/", &st));
    ATTEMPT("stat(escape/secret.txt)", stat(SANDBOX "/escape/secret.txt", &st));
    ATTEMPT("access(escape/secret.txt)", access(SANDBOX "/escape/secret.txt", F_OK));
    DIR *d = NULL;
    ATTEMPT("opendir(escape)", (d = opendir(SANDBOX "/escape")) ? 0 : -1);
    if (d) closedir(d);
    ATTEMPT("open(sub/../escape/secret.txt)", open(SANDBOX "/sub/../escape/secret.txt", O_RDONLY));

    /* writes through it, undone if they succeed */
    if (ATTEMPT("open(escape/created.txt, O_CREAT)", open(SANDBOX "/escape/created.txt", O_WRONLY | O_CREAT, 0644)) >= 0)
        unlink(SANDBOX "/escape/created.txt");
    if (ATTEMPT("mkdir(escape/newdir)", mkdir(SANDBOX "/escape/newdir", 0755)) >= 0)
        rmdir(SANDBOX "/escape/newdir");
    if (ATTEMPT("link(escape/secret.txt, stolen)", link(SANDBOX "/escape/secret.txt", SANDBOX "/stolen")) >= 0)
        unlink(SANDBOX "/stolen");
    if (ATTEMPT("rename(hello.txt, escape/moved.txt)", rename(SANDBOX "/hello.txt", SANDBOX "/escape/moved.txt")) >= 0)
        rename(SANDBOX "/escape/moved.txt", SANDBOX "/hello.txt");
    if (ATTEMPT("rename(escape/secret.txt, taken.txt)", rename(SANDBOX "/escape/secret.txt", SANDBOX "/taken.txt")) >= 0)
        rename(SANDBOX "/taken.txt", SANDBOX "/escape/secret.txt");
    if (ATTEMPT("symlink(x, escape/planted)", symlink("x", SANDBOX "/escape/planted")) >= 0)
        unlink(SANDBOX "/escape/planted");
    struct timespec ts[2] = {{1, 0}, {1, 0}};
    ATTEMPT("utimensat(escape/secret.txt)", utimensat(AT_FDCWD, SANDBOX "/escape/secret.txt", ts, 0));
    /* (not attempted: unlink/truncate of escape/secret.txt — not undoable) */

    /* a chain: a new link whose target looks inside ("escape/secret.txt")
     * but resolves outside through the escape link */
    TRY("symlink(escape/secret.txt, chain) (the link itself is fine)", symlink("escape/secret.txt", SANDBOX "/chain"));
    ATTEMPT("open(chain)", open(SANDBOX "/chain", O_RDONLY));
    ATTEMPT("stat(chain)", stat(SANDBOX "/chain", &st));
    /* raw: this wasi-libc's linkat(AT_FDCWD, ..., AT_SYMLINK_FOLLOW) can
     * hand the host the new path as the old one (both runtimes then see
     * ENOENT for "chain-hard") */
    {
        errno = 0;
        __wasi_errno_t le = __wasi_path_link(3, __WASI_LOOKUPFLAGS_SYMLINK_FOLLOW, "chain", 3, "chain-hard");
        errno = le;
        if (attempt("path_link(chain, follow)", le ? -1 : 0) >= 0) unlink(SANDBOX "/chain-hard");
    }
    TRY("unlink(chain)", unlink(SANDBOX "/chain"));
    /* a hard link to the escape link itself is just another such link */
    TRY("link(escape, escape2) (no follow: links the symlink)", link(SANDBOX "/escape", SANDBOX "/escape2"));
    LSTAT("lstat(escape2)", SANDBOX "/escape2");
    ATTEMPT("open(escape2/secret.txt)", open(SANDBOX "/escape2/secret.txt", O_RDONLY));
    TRY("unlink(escape2)", unlink(SANDBOX "/escape2"));

    /* last: wasi-libc's own state after chdir("/") makes later *at() calls
     * on absolute paths fail with ENOENT, whatever the runtime */
    ATTEMPT("chdir(escape)", chdir(SANDBOX "/escape"));

    /* the outside file is untouched (the tree comparison checks it too) */
    LSTAT("lstat(escape) at the end", SANDBOX "/escape");
    return 0;
}
