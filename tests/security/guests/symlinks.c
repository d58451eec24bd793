/*
 * Case 4: symlinks inside a read-write preopen that point outside it.
 *
 * The test grants HOST/root as /work (rw) and creates, on the host:
 *   root/inside.txt          "INSIDE"
 *   root/etclink      -> /etc                  (absolute, out)
 *   root/passwdlink   -> /etc/passwd           (absolute, out, a file)
 *   root/outlink      -> ../outside            (relative, out)
 *   root/uplink       -> ../../../../../../../..
 *   root/sub/up2      -> ../..                 (one level above root)
 *   root/loop1 -> loop2, root/loop2 -> loop1, root/self -> self
 *   root/chain0 -> chain1 -> ... -> chain7 -> ../outside/secret.txt
 *   root/dangling_abs -> HOST/outside/created_abs   (absolute, does not exist)
 *   root/dangling_rel -> ../outside/created_rel     (relative, does not exist)
 *   root/inlink -> inside.txt, root/sub/inlink_up -> ../inside.txt  (benign)
 *   outside/secret.txt       "OUTSIDE-SECRET"
 * argv[1] is HOST. Following any link out must fail: reads, listings, stats,
 * writes, creates through dangling links, hard links to link targets; links
 * the guest makes itself must not help either. The benign ones are INFO only.
 */
#include "common.h"

static int pfd;

static void benign(const char *path) {
    char buf[64];
    if (slurp(path, buf, sizeof buf) >= 0)
        info("benign link %s readable: \"%s\"", path, buf);
    else
        info("benign link %s refused (errno %d)", path, errno);
}

/* path_link may succeed by linking the symlink itself; it must not hard-link
 * the target outside. */
static void try_link(__wasi_lookupflags_t flags, const char *from, const char *to) {
    char what[256], path[256], buf[64];
    snprintf(what, sizeof what, "path_link(flags %u, \"%s\" -> \"%s\")", flags, from, to);
    __wasi_errno_t e = __wasi_path_link((__wasi_fd_t)pfd, flags, from, (__wasi_fd_t)pfd, to);
    if (e != 0) {
        denied(e, "%s", what);
        return;
    }
    snprintf(path, sizeof path, "/work/%s", to);
    long n = slurp(path, buf, sizeof buf);
    if (n > 0 && (!strncmp(buf, "OUTSIDE", 7) || !strncmp(buf, "root:", 5)))
        leak(buf, (size_t)n, "%s hard-linked the target outside", what);
    else
        info("%s linked the symlink itself (reading it: errno %d)", what, n < 0 ? errno : 0);
}

int main(int argc, char **argv) {
    const char *host = argc > 1 ? argv[1] : "/nonexistent";
    char buf[256], path[512];

    if (slurp("/work/inside.txt", buf, sizeof buf) < 0 || strcmp(buf, "INSIDE") != 0)
        wrong("sanity: cannot read /work/inside.txt (errno %d)", errno);
    pfd = find_preopen("/work");
    if (pfd < 0) {
        wrong("sanity: no preopen named /work");
        return finish();
    }
    const __wasi_rights_t R = rights_of((__wasi_fd_t)pfd);
    /* Sanity: directories inside can be listed, so a refused listing below
     * is the link's doing, not a broken opendir. */
    DIR *sd = opendir("/work/sub");
    if (!sd)
        wrong("sanity: cannot list /work/sub (errno %d)", errno);
    else
        closedir(sd);

    static const char *const reads[] = {
        "/work/etclink/passwd", "/work/passwdlink", "/work/outlink/secret.txt",
        "/work/uplink/etc/passwd", "/work/sub/up2/outside/secret.txt", "/work/chain0",
        "/work/etclink/../etc/passwd", "/work/sub/up2/root/inside.txt",
    };
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++)
        deny_open(reads[i], O_RDONLY);
    static const char *const dirs[] = {"/work/etclink", "/work/outlink", "/work/uplink",
                                       "/work/sub/up2", "/work/etclink/"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        deny_opendir(dirs[i]);
    deny_stat("/work/etclink/passwd");
    deny_stat("/work/passwdlink");
    deny_stat("/work/outlink/secret.txt");
    deny_stat("/work/dangling_abs");

    /* Loops: must fail (ELOOP), and the host must not spin. */
    deny_open("/work/loop1", O_RDONLY);
    deny_open("/work/self", O_RDONLY);
    deny_open("/work/loop1/x", O_RDONLY);
    deny_open("/work/self/self/self", O_RDONLY);
    deny_stat("/work/loop2");

    /* Raw, with and without following the last component. */
    static const char *const raw[] = {"etclink/passwd", "passwdlink", "outlink/secret.txt",
                                      "uplink/etc/passwd", "sub/up2/outside/secret.txt",
                                      "chain0", "etclink", "outlink", "loop1", "self"};
    for (size_t i = 0; i < sizeof raw / sizeof raw[0]; i++) {
        deny_path_open((__wasi_fd_t)pfd, __WASI_LOOKUPFLAGS_SYMLINK_FOLLOW, raw[i], 0, RIGHTS_READ);
        deny_path_open((__wasi_fd_t)pfd, 0, raw[i], 0, RIGHTS_READ);
    }
    deny_path_open((__wasi_fd_t)pfd, __WASI_LOOKUPFLAGS_SYMLINK_FOLLOW, "etclink",
                   __WASI_OFLAGS_DIRECTORY, RIGHTS_READ);
    deny_path_open((__wasi_fd_t)pfd, __WASI_LOOKUPFLAGS_SYMLINK_FOLLOW, "outlink",
                   __WASI_OFLAGS_DIRECTORY, RIGHTS_READ);

    /* Writes and creates through links. */
    deny_open("/work/outlink/secret.txt", O_WRONLY | O_TRUNC);
    deny_open("/work/outlink/secret.txt", O_WRONLY | O_APPEND);
    deny_open("/work/dangling_abs", O_CREAT | O_WRONLY);
    deny_open("/work/dangling_rel", O_CREAT | O_WRONLY);
    deny_open("/work/outlink/created_via_dir", O_CREAT | O_WRONLY);
    deny_path_open((__wasi_fd_t)pfd, __WASI_LOOKUPFLAGS_SYMLINK_FOLLOW, "dangling_rel",
                   __WASI_OFLAGS_CREAT, R);
    deny_path_open((__wasi_fd_t)pfd, __WASI_LOOKUPFLAGS_SYMLINK_FOLLOW, "dangling_abs",
                   __WASI_OFLAGS_CREAT, R);
    deny_rc(mkdir("/work/outlink/newdir", 0755), "mkdir(\"/work/outlink/newdir\")");
    deny_rc(unlink("/work/outlink/secret.txt"), "unlink(\"/work/outlink/secret.txt\")");
    deny_rc(rename("/work/inside.txt", "/work/outlink/moved.txt"),
            "rename(\"/work/inside.txt\", \"/work/outlink/moved.txt\")");
    deny_rc(symlink("x", "/work/outlink/newlink"), "symlink(\"x\", \"/work/outlink/newlink\")");
    deny_errno(__wasi_path_filestat_set_times((__wasi_fd_t)pfd, __WASI_LOOKUPFLAGS_SYMLINK_FOLLOW,
                                              "outlink/secret.txt", 1, 1,
                                              __WASI_FSTFLAGS_ATIM | __WASI_FSTFLAGS_MTIM),
               "path_filestat_set_times(\"outlink/secret.txt\")");
    deny_errno(__wasi_path_filestat_set_times((__wasi_fd_t)pfd, __WASI_LOOKUPFLAGS_SYMLINK_FOLLOW,
                                              "passwdlink", 1, 1,
                                              __WASI_FSTFLAGS_ATIM | __WASI_FSTFLAGS_MTIM),
               "path_filestat_set_times(\"passwdlink\", follow)");
    try_link(__WASI_LOOKUPFLAGS_SYMLINK_FOLLOW, "passwdlink", "hard_passwd");
    try_link(__WASI_LOOKUPFLAGS_SYMLINK_FOLLOW, "chain0", "hard_chain");
    try_link(0, "outlink/secret.txt", "hard_secret");

    /* Links made by the guest itself. */
    static const struct { const char *target, *link, *probe; } own[] = {
        {"/etc", "/work/g_etc", "/work/g_etc/passwd"},
        {"/etc/passwd", "/work/g_passwd", "/work/g_passwd"},
        {"../outside", "/work/g_out", "/work/g_out/secret.txt"},
        {"../../../../../../../../etc/passwd", "/work/g_up", "/work/g_up"},
        {"sub/up2/outside/secret.txt", "/work/g_via_up2", "/work/g_via_up2"},
    };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        if (symlink(own[i].target, own[i].link) == 0)
            info("symlink(\"%s\", \"%s\") created", own[i].target, own[i].link);
        else
            info("symlink(\"%s\", \"%s\") refused (errno %d)", own[i].target, own[i].link, errno);
        deny_open(own[i].probe, O_RDONLY);
    }
    snprintf(path, sizeof path, "%s/outside/secret.txt", host);
    if (symlink(path, "/work/g_abs") == 0)
        info("symlink(HOST/outside/secret.txt, \"/work/g_abs\") created");
    else
        info("symlink(HOST/outside/secret.txt, \"/work/g_abs\") refused (errno %d)", errno);
    deny_open("/work/g_abs", O_RDONLY);
    /* Dangling links of the guest's own, then O_CREAT through them. When the
     * host refuses to make such a link the attack ends there (and creating
     * the name then makes an ordinary file inside, which is fine). */
    static const char *const dangle[][2] = {{"../outside/g_created", "/work/g_dangle"},
                                            {NULL, "/work/g_dangle_abs"}};
    char abs_target[512];
    snprintf(abs_target, sizeof abs_target, "%s/outside/g_created_abs", host);
    for (size_t i = 0; i < 2; i++) {
        const char *target = dangle[i][0] ? dangle[i][0] : abs_target;
        if (symlink(target, dangle[i][1]) != 0) {
            denied(errno, "symlink(\"%s\", \"%s\")", dangle[i][0] ? target : "HOST/outside/g_created_abs",
                   dangle[i][1]);
            continue;
        }
        info("symlink(\"%s\", \"%s\") created", target, dangle[i][1]);
        deny_open(dangle[i][1], O_CREAT | O_WRONLY);
    }

    /* Benign links: whatever the policy, never judged. */
    benign("/work/inlink");
    benign("/work/sub/inlink_up");
    {
        char l[128];
        ssize_t n = readlink("/work/etclink", l, sizeof l - 1);
        if (n >= 0)
            info("readlink(/work/etclink) = \"%.*s\"", (int)n, l);
        else
            info("readlink(/work/etclink) refused (errno %d)", errno);
    }
    return finish();
}
