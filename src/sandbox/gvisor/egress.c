/*
 * egress.c — network egress for a gVisor sandbox: the execution's proxy
 * (net/gateway.c) and the network namespace runsc joins (net/netns.c).
 *
 * gVisor's design puts the isolation in the outer layer: the sandbox runs
 * with --network=host inside a namespace that has loopback and nothing
 * else, so the guest's sockets are real sockets of that namespace (no
 * netstack of gVisor's in the way) and the one place they can reach is
 * 127.0.0.1:3128, the proxy's listener made there before runsc starts.
 *
 * Invariants:
 *  - no grant, no namespace and no proxy: runsc keeps --network=none;
 *  - the namespace outlives the sandbox (the holder waits until
 *    gvisor_egress_stop), and the proxy stops only after the sandbox is
 *    gone, so every connection the guest made is counted and logged.
 */
#include <stdlib.h>
#include <string.h>

#include "gvisor.h"
#include "net.h"

bool gvisor_egress_start(gvisor_egress *e, gvisor_ctx *ctx, const al_policy *p, const char *id,
                         al_error *err) {
    memset(e, 0, sizeof *e);
    if (!egress_enabled(&p->egress)) return true;
    if (!egress_gateway_start(p, id, ctx->state, &e->gateway, err)) return false;
    e->netns = calloc(1, sizeof *e->netns);
    if (!e->netns) {
        gvisor_egress_stop(e, NULL);
        return sandbox_error(err, AL_ERR_NOMEM, "gvisor: out of memory");
    }
    int listen_fd;
    if (!egress_netns_open(e->netns, &listen_fd, err)) {
        free(e->netns);
        e->netns = NULL;
        gvisor_egress_stop(e, NULL);
        return false;
    }
    if (!egress_gateway_attach(e->gateway, listen_fd, err)) {
        gvisor_egress_stop(e, NULL);
        return false;
    }
    ctx->network_host = true;
    return true;
}

void gvisor_egress_read(const gvisor_egress *e, gvisor_egress_stats *out) {
    memset(out, 0, sizeof *out);
    if (!e->gateway) return;
    egress_stats s;
    egress_gateway_stats(e->gateway, &s);
    out->allowed = s.allowed;
    out->denied = s.denied;
    out->bytes = s.bytes;
}

const char *gvisor_egress_netns(const gvisor_egress *e) {
    return e->netns ? e->netns->path : NULL;
}

void gvisor_egress_stop(gvisor_egress *e, al_result *result) {
    egress_gateway_stop(e->gateway, result);
    e->gateway = NULL;
    if (e->netns) {
        egress_netns_close(e->netns);
        free(e->netns);
        e->netns = NULL;
    }
}
