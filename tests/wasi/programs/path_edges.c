/* path_edges.c — path resolution corner cases: trailing slashes on every
 * kind of operation, final "." and ".." components, repeated slashes, and
 * creation through paths that end in a slash. */
// @exit: 0
// @known: KD-NODE-DOT-PATHS stdout s/^rmdir(empty\/\.): 0$/rmdir(empty\/.): -1 EINVAL (Invalid argument)/
// @known: KD-NODE-DOT-PATHS stdout s/^stat(empty) still there: -1 ENOENT .*/stat(empty) still there: directory/
// @known: KD-NODE-DOT-PATHS stdout s/^\(rename(empty\/\., e2)\): 0$/\1: -1 EBUSY (Resource busy)/
// @known: KD-NODE-DOT-PATHS stdout s/^\(rename(e3, sub\/\.\.)\): -1 ENOTEMPTY .*/\1: -1 EBUSY (Resource busy)/
// @known: KD-NODE-DOT-PATHS stdout s/^rmdir(\/sandbox): -1 ENOTEMPTY .*/rmdir(\/sandbox): -1 EINVAL (Invalid argument)/
// @known: KD-NODE-DOT-PATHS stdout s/^\(rename(\/sandbox, \/sandbox\/inside)\): -1 EINVAL .*/\1: -1 EBUSY (Resource busy)/
// @known: KD-NODE-DOT-PATHS stdout s/^\(rename(\/sandbox\/empty, \/sandbox)\): -1 ENOTEMPTY .*/\1: -1 EBUSY (Resource busy)/
#include "common.h"

int main(void) {
    /* trailing slashes when creating */
    TRY("open(newfile/, O_CREAT)", open(SANDBOX "/newfile/", O_WRONLY | O_CREAT, 0644));
    LSTAT("lstat(newfile)", SANDBOX "/newfile");
    TRY("mkdir(newdir/)", mkdir(SANDBOX "/newdir/", 0755));
    TRY("mkdir(newdir2//)", mkdir(SANDBOX "/newdir2//", 0755));
    TRY("symlink(hello.txt, newlink/)", symlink("hello.txt", SANDBOX "/newlink/"));
    LSTAT("lstat(newlink)", SANDBOX "/newlink");
    TRY("link(hello.txt, newhard/)", link(SANDBOX "/hello.txt", SANDBOX "/newhard/"));
    LSTAT("lstat(newhard)", SANDBOX "/newhard");
    TRY("link(sub/, x) (dir with slash)", link(SANDBOX "/sub/", SANDBOX "/x"));

    /* trailing slashes on existing things */
    TRY("rename(hello.txt, renamed/) (file to name/)", rename(SANDBOX "/hello.txt", SANDBOX "/renamed/"));
    TRY("rename(hello.txt/, renamed) (file/ to name)", rename(SANDBOX "/hello.txt/", SANDBOX "/renamed"));
    TRY("rename(newdir/, newdir-moved/) (dir/ to name/)", rename(SANDBOX "/newdir/", SANDBOX "/newdir-moved/"));
    TRY("rename(newdir-moved, newdir/) (dir to name/)", rename(SANDBOX "/newdir-moved", SANDBOX "/newdir/"));
    TRY("rmdir(newdir/)", rmdir(SANDBOX "/newdir/"));
    TRY("rmdir(newdir2///)", rmdir(SANDBOX "/newdir2///"));
    TRY("unlink(link-to-sub/) (symlink to dir, slash)", unlink(SANDBOX "/link-to-sub/"));
    LSTAT("lstat(link-to-sub) still there", SANDBOX "/link-to-sub");
    TRY("rmdir(link-to-sub/) (symlink to dir, slash)", rmdir(SANDBOX "/link-to-sub/"));
    LSTAT("lstat(link-to-sub) still there", SANDBOX "/link-to-sub");
    STAT("stat(sub) still there", SANDBOX "/sub");
    TRY("rename(link-to-sub/, moved-link)", rename(SANDBOX "/link-to-sub/", SANDBOX "/moved-link"));
    LSTAT("lstat(link-to-sub)", SANDBOX "/link-to-sub");
    LSTAT("lstat(moved-link)", SANDBOX "/moved-link");
    LSTAT("lstat(sub)", SANDBOX "/sub");
    TRY("unlink(dangling/)", unlink(SANDBOX "/dangling/"));
    LSTAT("lstat(dangling)", SANDBOX "/dangling");
    TRY("open(dangling/, O_CREAT)", open(SANDBOX "/dangling/", O_WRONLY | O_CREAT, 0644));
    LSTAT("lstat(missing.txt)", SANDBOX "/missing.txt");
    TRY("mkdir(dangling/)", mkdir(SANDBOX "/dangling/", 0755));
    LSTAT("lstat(missing.txt)", SANDBOX "/missing.txt");

    /* final "." and ".." */
    TRY("mkdir(sub/.)", mkdir(SANDBOX "/sub/.", 0755));
    TRY("mkdir(sub/..)", mkdir(SANDBOX "/sub/..", 0755));
    TRY("rmdir(sub/deeper/..)", rmdir(SANDBOX "/sub/deeper/.."));
    TRY("rmdir(empty/.)", rmdir(SANDBOX "/empty/."));
    STAT("stat(empty) still there", SANDBOX "/empty");
    mkdir(SANDBOX "/empty", 0755); /* node removes it (KD-NODE-DOT-PATHS) */
    TRY("unlink(sub/.)", unlink(SANDBOX "/sub/."));
    TRY("unlink(sub/..)", unlink(SANDBOX "/sub/.."));
    if (TRY("rename(empty/., e2)", rename(SANDBOX "/empty/.", SANDBOX "/e2")) == 0)
        rename(SANDBOX "/e2", SANDBOX "/empty"); /* node does it (KD-NODE-DOT-PATHS) */
    TRY("rename(e3, sub/..)", (mkdir(SANDBOX "/e3", 0755), rename(SANDBOX "/e3", SANDBOX "/sub/..")));
    TRY("symlink(x, sub/.)", symlink("x", SANDBOX "/sub/."));
    TRY("link(hello.txt, sub/..)", link(SANDBOX "/hello.txt", SANDBOX "/sub/.."));
    TRY("open(sub/.., O_CREAT|O_EXCL)", open(SANDBOX "/sub/..", O_WRONLY | O_CREAT | O_EXCL, 0644));
    STAT("stat(sub/deeper/../..)", SANDBOX "/sub/deeper/../..");
    STAT("stat(sub/deeper/../../hello.txt)", SANDBOX "/sub/deeper/../../hello.txt");

    /* the preopen itself (wasi-libc sends the host ".") */
    TRY("rmdir(/sandbox)", rmdir(SANDBOX));
    TRY("unlink(/sandbox)", unlink(SANDBOX));
    TRY("rename(/sandbox, /sandbox/inside)", rename(SANDBOX, SANDBOX "/inside"));
    TRY("rename(/sandbox/empty, /sandbox)", rename(SANDBOX "/empty", SANDBOX));
    STAT("stat(/sandbox)", SANDBOX);
    STAT("stat(/sandbox/)", SANDBOX "/");

    /* repeated slashes and dots in the middle */
    STAT("stat(sub///deeper//leaf.txt)", SANDBOX "/sub///deeper//leaf.txt");
    STAT("stat(./sub/./deeper/./leaf.txt)", SANDBOX "/./sub/./deeper/./leaf.txt");
    put_file(SANDBOX "/sub//deeper///made.txt", "made\n");
    show_file("sub/deeper/made.txt", SANDBOX "/sub/deeper/made.txt");
    TRY("rename(sub//deeper//made.txt, sub/./made.txt)", rename(SANDBOX "/sub//deeper//made.txt", SANDBOX "/sub/./made.txt"));
    TRY("unlink(sub/deeper/../made.txt)", unlink(SANDBOX "/sub/deeper/../made.txt"));

    /* O_DIRECTORY|O_CREAT, O_CREAT on a directory */
    TRY("open(newd, O_CREAT|O_DIRECTORY)", open(SANDBOX "/newd", O_RDONLY | O_CREAT | O_DIRECTORY, 0644));
    LSTAT("lstat(newd)", SANDBOX "/newd");
    TRY("open(sub, O_CREAT|O_DIRECTORY|O_RDONLY)", open(SANDBOX "/sub", O_RDONLY | O_CREAT | O_DIRECTORY, 0644));
    TRY("open(sub, O_TRUNC|O_RDONLY)", open(SANDBOX "/sub", O_RDONLY | O_TRUNC));
    TRY("open(hello.txt, O_TRUNC|O_RDONLY)", open(SANDBOX "/hello.txt", O_RDONLY | O_TRUNC) >= 0);
    STAT("stat(hello.txt) after O_RDONLY|O_TRUNC", SANDBOX "/hello.txt");
    return 0;
}
