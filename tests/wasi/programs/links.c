/* links.c — path_link (hard links): link counts, shared content, errors. */
// @exit: 0
#include "common.h"

int main(void) {
    TRY("link(hello.txt, hard.txt)", link(SANDBOX "/hello.txt", SANDBOX "/hard.txt"));
    STAT("stat(hello.txt)", SANDBOX "/hello.txt");
    STAT("stat(hard.txt)", SANDBOX "/hard.txt");
    {
        struct stat a, b;
        stat(SANDBOX "/hello.txt", &a);
        stat(SANDBOX "/hard.txt", &b);
        printf("same inode: %s\n", a.st_ino == b.st_ino && a.st_dev == b.st_dev ? "yes" : "no");
    }
    int fd = open(SANDBOX "/hard.txt", O_WRONLY | O_APPEND);
    write(fd, "written via hard.txt\n", 21);
    close(fd);
    show_file("hello.txt", SANDBOX "/hello.txt");
    TRY("link(hello.txt, sub/hard2.txt) (another dir)", link(SANDBOX "/hello.txt", SANDBOX "/sub/hard2.txt"));
    STAT("stat(hello.txt)", SANDBOX "/hello.txt");
    TRY("link(hello.txt, hard.txt) (exists)", link(SANDBOX "/hello.txt", SANDBOX "/hard.txt"));
    TRY("link(missing, x)", link(SANDBOX "/missing", SANDBOX "/x"));
    TRY("link(sub, subhard) (a directory)", link(SANDBOX "/sub", SANDBOX "/subhard"));
    TRY("link(hello.txt, nope/x) (missing dir)", link(SANDBOX "/hello.txt", SANDBOX "/nope/x"));
    TRY("link(hello.txt/, x) (trailing slash on a file)", link(SANDBOX "/hello.txt/", SANDBOX "/x"));
    /* linkat without AT_SYMLINK_FOLLOW links the symlink itself */
    TRY("link(link-to-hello, hardlink-to-link)", link(SANDBOX "/link-to-hello", SANDBOX "/hardlink-to-link"));
    LSTAT("lstat(hardlink-to-link)", SANDBOX "/hardlink-to-link");
    TRY("linkat(link-to-hello, AT_SYMLINK_FOLLOW)",
        linkat(AT_FDCWD, SANDBOX "/link-to-hello", AT_FDCWD, SANDBOX "/hard-followed", AT_SYMLINK_FOLLOW));
    LSTAT("lstat(hard-followed)", SANDBOX "/hard-followed");
    TRY("unlink(hello.txt)", unlink(SANDBOX "/hello.txt"));
    STAT("stat(hard.txt) after unlinking the original", SANDBOX "/hard.txt");
    show_file("hard.txt", SANDBOX "/hard.txt");
    TRY("rename(hard.txt, sub/hard2.txt) (two links to the same file)", rename(SANDBOX "/hard.txt", SANDBOX "/sub/hard2.txt"));
    STAT("stat(sub/hard2.txt)", SANDBOX "/sub/hard2.txt");
    return 0;
}
