/*
 * gateway.c — one execution's egress, as a backend sees it: the proxy
 * (on a Unix socket in the state directory) started before the sandbox,
 * the relay attached once the sandbox's init has made its listener, both
 * stopped after the program ends and their counters put into the result.
 *
 * Invariants:
 *  - a policy that grants no network gets no gateway (NULL): no proxy
 *    thread, no socket, no listener in the sandbox;
 *  - the Unix socket is 0600 in the 0700 state directory and named after
 *    the execution, so another user cannot reach it and two executions
 *    never share one (nor one's limits or log);
 *  - egress_gateway_stop runs whatever happened to the sandbox, and frees
 *    everything (the relay first: nothing new reaches a stopping proxy).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "net.h"

struct egress_gateway {
    egress_proxy *proxy;
    egress_relay *relay;
    char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

static bool socket_path(egress_gateway *g, const char *state_dir, const char *id,
                        al_error *err) {
    int n = snprintf(g->socket_path, sizeof g->socket_path, "%s/egress-%s.sock", state_dir, id);
    if (n > 0 && (size_t)n < sizeof g->socket_path) return true;
    return egress_error(err, AL_ERR_ARGUMENT,
                        "egress: the state directory is too long a path for a Unix socket: "
                        "%.120s",
                        state_dir);
}

bool egress_gateway_start(const al_policy *policy, const char *execution_id,
                          const char *state_dir, egress_gateway **out, al_error *err) {
    *out = NULL;
    if (!egress_enabled(&policy->egress)) return true;
    egress_gateway *g = calloc(1, sizeof *g);
    if (!g) {
        return egress_error(err, AL_ERR_NOMEM, "egress: out of memory");
    }
    egress_config cfg;
    if (!socket_path(g, state_dir, execution_id, err) ||
        !egress_config_from_policy(&policy->egress, execution_id, &cfg, err)) {
        free(g);
        return false;
    }
    g->proxy = egress_proxy_start(&cfg, g->socket_path, err);
    if (!g->proxy) {
        free(g);
        return false;
    }
    *out = g;
    return true;
}

bool egress_gateway_attach(egress_gateway *g, int listen_fd, al_error *err) {
    if (g->relay) {
        return egress_error(err, AL_ERR_ARGUMENT, "egress: a listener is already attached");
    }
    g->relay = egress_relay_start(listen_fd, g->socket_path, err);
    return g->relay != NULL;
}

void egress_gateway_stats(const egress_gateway *g, egress_stats *out) {
    memset(out, 0, sizeof *out);
    if (g) egress_proxy_stats(g->proxy, out);
}

void egress_gateway_stop(egress_gateway *g, al_result *result) {
    if (!g) return;
    egress_relay_stop(g->relay);
    egress_stats stats;
    memset(&stats, 0, sizeof stats);
    egress_proxy_stop(g->proxy, &stats);
    if (result) {
        result->egress_allowed += stats.allowed;
        result->egress_denied += stats.denied;
        result->egress_bytes += stats.bytes;
    }
    free(g);
}
