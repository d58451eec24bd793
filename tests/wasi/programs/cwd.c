/* cwd.c — wasi-libc's emulated working directory (chdir/getcwd): relative
 * paths are resolved by the libc against the preopens, so the host sees
 * the same path_* calls as for absolute ones. */
// @exit: 0
#include <limits.h>
#include "common.h"

static void pwd(const char *label) {
    char buf[PATH_MAX];
    errno = 0;
    if (!getcwd(buf, sizeof buf))
        report(label, -1);
    else
        printf("%s: %s\n", label, buf);
}

int main(void) {
    pwd("getcwd at start");
    TRY("chdir(/sandbox)", chdir(SANDBOX));
    pwd("getcwd");
    show_file("open(hello.txt) relative", "hello.txt");
    TRY("chdir(sub)", chdir("sub"));
    pwd("getcwd");
    show_file("open(nested.txt)", "nested.txt");
    show_file("open(../hello.txt)", "../hello.txt");
    show_file("open(./deeper/leaf.txt)", "./deeper/leaf.txt");
    TRY("mkdir(made-in-sub)", mkdir("made-in-sub", 0755));
    put_file("made-in-sub/f.txt", "relative create\n");
    TRY("chdir(missing)", chdir("missing"));
    TRY("chdir(nested.txt) (a file)", chdir("nested.txt"));
    pwd("getcwd unchanged");
    TRY("chdir(..)", chdir(".."));
    pwd("getcwd");
    TRY("chdir(link-to-sub) (a symlink)", chdir("link-to-sub"));
    pwd("getcwd");
    show_file("open(nested.txt) via the link", "nested.txt");
    TRY("chdir(/sandbox/sub/deeper)", chdir(SANDBOX "/sub/deeper"));
    TRY("chdir(../../..) (the root, no preopen)", chdir("../../.."));
    pwd("getcwd");
    TRY("open(sandbox/hello.txt) relative to /", open("sandbox/hello.txt", O_RDONLY) >= 0);
    TRY("chdir(/)", chdir("/"));
    pwd("getcwd");
    {
        char small[4];
        errno = 0;
        TRY("chdir(/sandbox/sub)", chdir(SANDBOX "/sub"));
        char *p = getcwd(small, sizeof small);
        printf("getcwd(4-byte buffer): %s %s\n", p ? "ok" : "NULL", p ? "" : errname(errno));
    }
    TRY("rename(made-in-sub, ../made-moved)", rename("made-in-sub", "../made-moved"));
    TRY("unlink(../made-moved/f.txt)", unlink("../made-moved/f.txt"));
    TRY("rmdir(../made-moved)", rmdir("../made-moved"));
    return 0;
}
