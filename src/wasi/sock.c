/*
 * sock.c — sock_accept, sock_recv, sock_send, sock_shutdown.
 *
 * airlock grants no network capability at all to a wasm guest: preview1 has
 * no way to create a socket, so the only sockets a guest could use are ones
 * the host handed it as preopened descriptors, and the host never does. Every
 * call therefore fails with errno::notsup without looking at its arguments:
 * there is no descriptor these could legitimately act on, and answering
 * before touching anything leaves nothing to probe (not even which fds are
 * open). Network egress, when it comes, is a policy of the native/gVisor
 * backends, not of this host.
 */
#include "wasi_host.h"

al_trap_kind wasi_sock_accept(void *env, al_caller *caller, const al_value *args,
                              al_value *results) {
    return wasi_return(results, WASI_ENOTSUP);
}

al_trap_kind wasi_sock_recv(void *env, al_caller *caller, const al_value *args,
                            al_value *results) {
    return wasi_return(results, WASI_ENOTSUP);
}

al_trap_kind wasi_sock_send(void *env, al_caller *caller, const al_value *args,
                            al_value *results) {
    return wasi_return(results, WASI_ENOTSUP);
}

al_trap_kind wasi_sock_shutdown(void *env, al_caller *caller, const al_value *args,
                                al_value *results) {
    return wasi_return(results, WASI_ENOTSUP);
}
