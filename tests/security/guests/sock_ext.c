/*
 * Case 6b: socket calls some runtimes add to wasi_snapshot_preview1
 * (WasmEdge's sock_open / sock_connect). airlock does not provide them, so
 * the host must either refuse the module at link time or return an error;
 * nothing may reach the loopback listener whose port is argv[1].
 */
#include "common.h"

int32_t ext_sock_open(int32_t af, int32_t type, int32_t ret_fd) WASI_IMPORT(sock_open);
int32_t ext_sock_connect(int32_t fd, int32_t addr, int32_t port) WASI_IMPORT(sock_connect);

int main(int argc, char **argv) {
    int port = argc > 1 ? atoi(argv[1]) : 80;
    int32_t fd = -1;
    int32_t e = ext_sock_open(0 /* inet4 */, 1 /* stream */, (int32_t)(uintptr_t)&fd);
    if (e != 0) {
        denied(e, "sock_open(inet4, stream)");
        fd = 3;
    } else {
        info("sock_open returned fd %d", fd);
    }
    static uint8_t ip[4] = {127, 0, 0, 1};
    struct { uint32_t buf, len; } addr = {(uint32_t)(uintptr_t)ip, 4};
    e = ext_sock_connect(fd, (int32_t)(uintptr_t)&addr, port);
    if (e != 0)
        denied(e, "sock_connect(127.0.0.1:%d)", port);
    else
        leak("", 0, "sock_connect(127.0.0.1:%d) connected", port);
    return finish();
}
