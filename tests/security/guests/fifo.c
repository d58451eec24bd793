/*
 * Case 18: a FIFO planted in the preopen by someone on the host, with a peer
 * that holds it open and never reads or writes. The guest's read (argv[2]
 * "read", default) or its 1 MiB write ("write") blocks inside the host:
 * --timeout must still end the run on time (a host that cannot interrupt a
 * blocking call hangs forever). argv[1]: the guest path of the FIFO.
 */
#include "common.h"

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "/work/fifo";
    int writing = argc > 2 && !strcmp(argv[2], "write");
    printf("opening %s\n", path);
    fflush(stdout);
    int fd = open(path, writing ? O_WRONLY : O_RDONLY);
    if (fd < 0) {
        denied(errno, "open(\"%s\")", path);
        return finish();
    }
    printf(writing ? "writing\n" : "reading\n");
    fflush(stdout);
    static char buf[1 << 20];
    ssize_t n = writing ? write(fd, buf, sizeof buf) : read(fd, buf, 64);
    if (n < 0)
        denied(errno, "%s(\"%s\")", writing ? "write" : "read", path);
    else
        info("%s %zd bytes", writing ? "wrote" : "read", n);
    close(fd);
    return finish();
}
