/*
 * Case 6c: WASIX's socket calls (module "wasix_32v1": sock_open,
 * sock_connect). airlock does not provide them: link refusal or an error,
 * and nothing may reach the loopback listener whose port is argv[1].
 */
#include "common.h"

#define WASIX(name) __attribute__((import_module("wasix_32v1"), import_name(#name)))
int32_t wasix_sock_open(int32_t af, int32_t type, int32_t proto, int32_t ret_fd) WASIX(sock_open);
int32_t wasix_sock_connect(int32_t fd, int32_t addr) WASIX(sock_connect);

int main(int argc, char **argv) {
    int port = argc > 1 ? atoi(argv[1]) : 80;
    int32_t fd = -1;
    int32_t e = wasix_sock_open(1 /* inet4 */, 1 /* stream */, 0, (int32_t)(uintptr_t)&fd);
    if (e != 0) {
        denied(e, "wasix sock_open(inet4, stream)");
        fd = 3;
    }
    /* __wasi_addr_port_t: tag (u8) then port (u16 big endian) and 4 bytes. */
    static uint8_t addr[32];
    addr[0] = 1; /* inet4 */
    addr[2] = (uint8_t)(port >> 8);
    addr[3] = (uint8_t)port;
    addr[4] = 127;
    addr[7] = 1;
    e = wasix_sock_connect(fd, (int32_t)(uintptr_t)addr);
    if (e != 0)
        denied(e, "wasix sock_connect(127.0.0.1:%d)", port);
    else
        leak("", 0, "wasix sock_connect(127.0.0.1:%d) connected", port);
    return finish();
}
