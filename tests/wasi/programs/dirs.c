/* dirs.c — path_create_directory, path_remove_directory, fd_readdir
 * (opendir/readdir/scandir/seekdir), path_rename of files and directories,
 * path_unlink_file, and their errors. */
// @exit: 0
// @known: KD-READDIR-DOTS stdout s/: dot entries: "\." x0 "\.\." x0$/: dot entries: "." x1 ".." x1/
// @known: KD-READDIR-DOTS stdout s/^scandir(sub): 2 entries incl\. dot entries? 0$/scandir(sub): 4 entries incl. dot entries? 2/
// @known: KD-NODE-DOT-PATHS stdout s/^\(rmdir(\/sandbox\/\.) \): -1 ENOTEMPTY .*/\1: -1 EINVAL (Invalid argument)/
#include <dirent.h>
#include "common.h"

static int cmpstr(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "LABEL: a b/ c@ ..." sorted, without "." and ".." (those go on their own
 * line: airlock lists them, node does not — KD-READDIR-DOTS); '/' marks a
 * directory, '@' a symlink, by d_type. */
static void list(const char *label, const char *path) {
    errno = 0;
    DIR *d = opendir(path);
    if (!d) {
        report(label, -1);
        return;
    }
    char *names[256];
    size_t n = 0;
    int dot = 0, dotdot = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        if (!strcmp(e->d_name, ".")) { dot++; continue; }
        if (!strcmp(e->d_name, "..")) { dotdot++; continue; }
        char *s = malloc(strlen(e->d_name) + 2);
        strcpy(s, e->d_name);
        if (e->d_type == DT_DIR) strcat(s, "/");
        else if (e->d_type == DT_LNK) strcat(s, "@");
        else if (e->d_type != DT_REG) strcat(s, "?");
        names[n++] = s;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmpstr);
    printf("%s:", label);
    for (size_t i = 0; i < n; i++) {
        printf(" %s", names[i]);
        free(names[i]);
    }
    printf("\n%s: dot entries: \".\" x%d \"..\" x%d\n", label, dot, dotdot);
}

int main(void) {
    list("list /sandbox", SANDBOX);
    list("list /sandbox/sub", SANDBOX "/sub");
    list("list /sandbox/empty", SANDBOX "/empty");
    list("list /sandbox/link-to-sub (a symlink to a dir)", SANDBOX "/link-to-sub");
    list("list /sandbox/hello.txt (a file)", SANDBOX "/hello.txt");
    list("list /sandbox/missing", SANDBOX "/missing");

    /* mkdir */
    TRY("mkdir(d1)", mkdir(SANDBOX "/d1", 0755));
    TRY("mkdir(d1) again", mkdir(SANDBOX "/d1", 0755));
    TRY("mkdir(d1/d2)", mkdir(SANDBOX "/d1/d2", 0755));
    TRY("mkdir(d1/d2/) (trailing slash)", mkdir(SANDBOX "/d1/d2/d3/", 0755));
    TRY("mkdir(nope/x) (missing parent)", mkdir(SANDBOX "/nope/x", 0755));
    TRY("mkdir(hello.txt) (a file)", mkdir(SANDBOX "/hello.txt", 0755));
    TRY("mkdir(hello.txt/x) (parent is a file)", mkdir(SANDBOX "/hello.txt/x", 0755));
    TRY("mkdir(dangling) (a dangling symlink)", mkdir(SANDBOX "/dangling", 0755));
    put_file(SANDBOX "/d1/file.txt", "in d1\n");
    put_file(SANDBOX "/d1/d2/deep.txt", "deep\n");
    list("list d1", SANDBOX "/d1");

    /* many entries: readdir has to come back for more */
    mkdir(SANDBOX "/many", 0755);
    for (int i = 0; i < 150; i++) {
        char p[64];
        snprintf(p, sizeof p, SANDBOX "/many/entry-with-a-longish-name-%03d", i);
        put_file(p, "");
    }
    {
        DIR *d = opendir(SANDBOX "/many");
        int count = 0;
        struct dirent *e;
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) count++;
        printf("many: %d entries besides . and ..\n", count);
        rewinddir(d);
        count = 0;
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) count++;
        printf("many after rewinddir: %d entries besides . and ..\n", count);
        /* telldir/seekdir: remember the position after 10 real entries,
         * read 5 names, seek back, read 5 again: same names */
        rewinddir(d);
        int seen = 0;
        while (seen < 10 && (e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) seen++;
        long pos = telldir(d);
        char first[5][64], again[5][64];
        for (int i = 0; i < 5; i++) {
            e = readdir(d);
            snprintf(first[i], 64, "%s", e ? e->d_name : "(end)");
        }
        seekdir(d, pos);
        for (int i = 0; i < 5; i++) {
            e = readdir(d);
            snprintf(again[i], 64, "%s", e ? e->d_name : "(end)");
        }
        int same = 1;
        for (int i = 0; i < 5; i++) same &= !strcmp(first[i], again[i]);
        printf("seekdir(telldir()) reads the same 5 names again: %s\n", same ? "yes" : "no");
        closedir(d);
    }
    {
        struct dirent **nl;
        errno = 0;
        int n = scandir(SANDBOX "/sub", &nl, NULL, alphasort);
        printf("scandir(sub): %d entries incl. dot entries? ", n);
        int dots = 0;
        for (int i = 0; i < n; i++) {
            if (!strcmp(nl[i]->d_name, ".") || !strcmp(nl[i]->d_name, "..")) dots++;
        }
        printf("%d\nscandir(sub) names:", dots);
        for (int i = 0; i < n; i++) {
            if (strcmp(nl[i]->d_name, ".") && strcmp(nl[i]->d_name, ".."))
                printf(" %s", nl[i]->d_name);
            free(nl[i]);
        }
        printf("\n");
        if (n >= 0) free(nl);
    }

    /* rmdir */
    TRY("rmdir(d1) (not empty)", rmdir(SANDBOX "/d1"));
    TRY("rmdir(hello.txt) (a file)", rmdir(SANDBOX "/hello.txt"));
    TRY("rmdir(missing)", rmdir(SANDBOX "/missing"));
    TRY("rmdir(link-to-sub) (a symlink to a dir)", rmdir(SANDBOX "/link-to-sub"));
    TRY("rmdir(empty)", rmdir(SANDBOX "/empty"));
    TRY("rmdir(empty) again", rmdir(SANDBOX "/empty"));
    TRY("rmdir(/sandbox/.) ", rmdir(SANDBOX "/."));

    /* unlink */
    TRY("unlink(d1/file.txt)", unlink(SANDBOX "/d1/file.txt"));
    TRY("unlink(d1/file.txt) again", unlink(SANDBOX "/d1/file.txt"));
    TRY("unlink(d1) (a directory)", unlink(SANDBOX "/d1"));
    TRY("unlink(hello.txt/) (trailing slash on a file)", unlink(SANDBOX "/hello.txt/"));
    TRY("unlink(link-to-sub) (a symlink to a dir)", unlink(SANDBOX "/link-to-sub"));
    STAT("stat(sub) after unlinking the link to it", SANDBOX "/sub");
    TRY("remove(d1/d2/deep.txt)", remove(SANDBOX "/d1/d2/deep.txt"));
    TRY("remove(d1/d2) (a dir)", remove(SANDBOX "/d1/d2"));

    /* rename */
    put_file(SANDBOX "/a.txt", "file a\n");
    put_file(SANDBOX "/b.txt", "file b\n");
    TRY("rename(a.txt, c.txt)", rename(SANDBOX "/a.txt", SANDBOX "/c.txt"));
    STAT("stat(a.txt)", SANDBOX "/a.txt");
    show_file("c.txt", SANDBOX "/c.txt");
    TRY("rename(c.txt, b.txt) (replaces)", rename(SANDBOX "/c.txt", SANDBOX "/b.txt"));
    show_file("b.txt", SANDBOX "/b.txt");
    TRY("rename(b.txt, b.txt) (same)", rename(SANDBOX "/b.txt", SANDBOX "/b.txt"));
    TRY("rename(missing, x)", rename(SANDBOX "/missing", SANDBOX "/x"));
    TRY("rename(b.txt, nope/b.txt) (missing dir)", rename(SANDBOX "/b.txt", SANDBOX "/nope/b.txt"));
    TRY("rename(b.txt, d1) (file onto dir)", rename(SANDBOX "/b.txt", SANDBOX "/d1"));
    TRY("rename(d1, b.txt) (dir onto file)", rename(SANDBOX "/d1", SANDBOX "/b.txt"));
    TRY("rename(d1, dir-renamed)", rename(SANDBOX "/d1", SANDBOX "/dir-renamed"));
    list("list dir-renamed", SANDBOX "/dir-renamed");
    mkdir(SANDBOX "/target-empty", 0755);
    TRY("rename(dir-renamed, target-empty) (onto an empty dir)", rename(SANDBOX "/dir-renamed", SANDBOX "/target-empty"));
    mkdir(SANDBOX "/full", 0755);
    put_file(SANDBOX "/full/x", "x\n");
    TRY("rename(target-empty, full) (onto a non-empty dir)", rename(SANDBOX "/target-empty", SANDBOX "/full"));
    TRY("rename(full, full/inside) (into itself)", rename(SANDBOX "/full", SANDBOX "/full/inside"));
    TRY("rename(b.txt, sub/deeper/b.txt) (across dirs)", rename(SANDBOX "/b.txt", SANDBOX "/sub/deeper/b.txt"));
    TRY("rename(sub/deeper, moved-deeper) (dir across dirs)", rename(SANDBOX "/sub/deeper", SANDBOX "/moved-deeper"));
    TRY("rename(link-to-hello, renamed-link) (a symlink)", rename(SANDBOX "/link-to-hello", SANDBOX "/renamed-link"));
    show_file("through renamed-link", SANDBOX "/renamed-link");
    list("list /sandbox at the end", SANDBOX);
    return 0;
}
