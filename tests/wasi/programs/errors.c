/* errors.c — the errno of failing path and fd operations, by name. */
// @exit: 0
// @known: KD-NODE-DOT-PATHS stdout s/^stat(hello\.txt\/\.): 0$/stat(hello.txt\/.): -1 ENOTDIR (Not a directory)/
#include <dirent.h>
#include "common.h"

int main(void) {
    char buf[64];
    TRY("open(missing.txt)", open(SANDBOX "/missing.txt", O_RDONLY));
    TRY("open(missing-dir/x.txt)", open(SANDBOX "/missing-dir/x.txt", O_RDONLY));
    TRY("open(missing-dir/x.txt, O_CREAT)", open(SANDBOX "/missing-dir/x.txt", O_WRONLY | O_CREAT, 0644));
    TRY("open(hello.txt, O_DIRECTORY)", open(SANDBOX "/hello.txt", O_RDONLY | O_DIRECTORY));
    TRY("open(hello.txt/x) (a file as a dir)", open(SANDBOX "/hello.txt/x", O_RDONLY));
    TRY("open(hello.txt/) (trailing slash)", open(SANDBOX "/hello.txt/", O_RDONLY));
    TRY("open(sub, O_WRONLY) (a dir for writing)", open(SANDBOX "/sub", O_WRONLY));
    TRY("open(sub, O_RDWR)", open(SANDBOX "/sub", O_RDWR));
    TRY("open(sub, O_RDONLY) ok", open(SANDBOX "/sub", O_RDONLY) >= 0);
    TRY("open(sub/, O_RDONLY|O_DIRECTORY) ok", open(SANDBOX "/sub/", O_RDONLY | O_DIRECTORY) >= 0);
    TRY("open(sub, O_CREAT|O_WRONLY)", open(SANDBOX "/sub", O_CREAT | O_WRONLY, 0644));
    TRY("open(dangling, O_DIRECTORY)", open(SANDBOX "/dangling", O_RDONLY | O_DIRECTORY));
    TRY("opendir(hello.txt)", opendir(SANDBOX "/hello.txt") ? 0 : -1);
    TRY("opendir(missing)", opendir(SANDBOX "/missing") ? 0 : -1);

    /* paths wasi-libc cannot map onto a preopen */
    TRY("open(/etc/passwd) (no preopen)", open("/etc/passwd", O_RDONLY));
    TRY("open(relative.txt) (cwd is /)", open("relative.txt", O_RDONLY));
    TRY("open(/) (no preopen for /)", open("/", O_RDONLY));
    /* climbing out of the preopen: wasi-libc passes "../x" to the host */
    TRY("open(/sandbox/../etc/passwd)", open(SANDBOX "/../etc/passwd", O_RDONLY));
    TRY("open(/sandbox/sub/../../outside/secret.txt)", open(SANDBOX "/sub/../../outside/secret.txt", O_RDONLY));
    TRY("open(/sandbox/sub/../hello.txt) (stays inside)", open(SANDBOX "/sub/../hello.txt", O_RDONLY) >= 0);
    TRY("stat(/sandbox/..)", stat(SANDBOX "/..", &(struct stat){0}));
    TRY("mkdir(/sandbox/../x)", mkdir(SANDBOX "/../x", 0755));

    /* long names */
    char longname[400];
    memset(longname, 'n', sizeof longname);
    memcpy(longname, SANDBOX "/", 9);
    longname[9 + 300] = '\0';
    TRY("open(300-byte name, O_CREAT)", open(longname, O_WRONLY | O_CREAT, 0644));
    longname[9 + 255] = '\0';
    int fd = TRY("open(255-byte name, O_CREAT) ok", open(longname, O_WRONLY | O_CREAT, 0644) >= 0 ? 0 : -1);
    (void)fd;
    TRY("unlink(255-byte name)", unlink(longname));

    /* bad descriptors */
    TRY("read(99)", read(99, buf, 1));
    TRY("write(99)", write(99, "x", 1));
    TRY("close(99)", close(99));
    TRY("lseek(99)", lseek(99, 0, SEEK_SET));
    TRY("fstat(99)", fstat(99, &(struct stat){0}));
    TRY("ftruncate(99)", ftruncate(99, 0));
    TRY("fsync(99)", fsync(99));
    TRY("read(-1)", read(-1, buf, 1));
    /* (stdio descriptors: stdio.c) */

    /* trailing slashes and dot components */
    TRY("stat(hello.txt/.)", stat(SANDBOX "/hello.txt/.", &(struct stat){0}));
    TRY("stat(sub/.) ok", stat(SANDBOX "/sub/.", &(struct stat){0}));
    TRY("stat(sub/./deeper/../nested.txt) ok", stat(SANDBOX "/sub/./deeper/../nested.txt", &(struct stat){0}));
    TRY("stat(sub//nested.txt) ok", stat(SANDBOX "/sub//nested.txt", &(struct stat){0}));
    TRY("rename(hello.txt, sub/deeper/leaf.txt/x)", rename(SANDBOX "/hello.txt", SANDBOX "/sub/deeper/leaf.txt/x"));
    TRY("rename(sub, sub/deeper/inside) (into itself)", rename(SANDBOX "/sub", SANDBOX "/sub/deeper/inside"));
    TRY("access(hello.txt, R_OK)", access(SANDBOX "/hello.txt", R_OK));
    TRY("access(hello.txt, F_OK)", access(SANDBOX "/hello.txt", F_OK));
    TRY("access(missing, F_OK)", access(SANDBOX "/missing", F_OK));
    return 0;
}
