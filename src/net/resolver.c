/*
 * resolver.c — name lookups for the egress proxy (issue 5) on worker
 * threads, so the proxy's single event loop never blocks in getaddrinfo
 * (one slow DNS server must not stall every other connection).
 *
 * Shape: a fixed ring of jobs and a fixed ring of results under one mutex;
 * workers wait on a condition variable, run getaddrinfo (AF_UNSPEC,
 * SOCK_STREAM, no AI_ADDRCONFIG: the sandbox's addresses do not matter, the
 * proxy connects from the host), and post the result, then make the eventfd
 * readable. The caller drains results with egress_resolver_take.
 *
 * Invariants:
 *  - at most RESOLVER_SLOTS lookups are outstanding (queued + running +
 *    finished but not taken), so both rings are fixed arrays and a
 *    sandboxed program that opens connection after connection to new names
 *    cannot make the host allocate without bound (the proxy refuses when
 *    the queue is full);
 *  - a result holds at most EGRESS_MAX_ADDRS distinct addresses with port 0;
 *    the proxy checks each one against the policy and connects only to
 *    those, so the number it has to check is bounded too;
 *  - the resolver owns the eventfd; egress_resolver_free closes it;
 *  - egress_resolver_free sets the stop flag, wakes every worker and joins
 *    them. Queued lookups are dropped, but a getaddrinfo already running
 *    cannot be interrupted: free waits for it (bounded by the resolver's own
 *    timeouts in resolv.conf, typically a few seconds per attempt). That is
 *    accepted: the alternative, detaching a thread that still uses the
 *    resolver's memory, would be a use-after-free.
 *  - worker threads block every signal, so a library thread never runs the
 *    embedder's signal handlers.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "net.h"

#define RESOLVER_SLOTS 64
#define RESOLVER_MAX_THREADS 16

typedef struct resolver_job {
    uint64_t token;
    char name[EGRESS_MAX_NAME + 1];
} resolver_job;

struct egress_resolver {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stopping;
    size_t outstanding;                       /* queued + running + finished */
    resolver_job jobs[RESOLVER_SLOTS];        /* ring: jobs_head, njobs */
    size_t jobs_head, njobs;
    egress_resolution results[RESOLVER_SLOTS]; /* ring: results_head, nresults */
    size_t results_head, nresults;
    int event_fd;
    pthread_t threads[RESOLVER_MAX_THREADS];
    unsigned nthreads;
};

/* Is b the same address as a (family and address bytes; ports are 0)? */
static bool same_address(const struct sockaddr_storage *a, socklen_t alen,
                         const struct sockaddr *b, socklen_t blen) {
    if (alen != blen || a->ss_family != b->sa_family)
        return false;
    if (b->sa_family == AF_INET) {
        const struct sockaddr_in *x = (const struct sockaddr_in *)(const void *)a;
        const struct sockaddr_in *y = (const struct sockaddr_in *)(const void *)b;
        return memcmp(&x->sin_addr, &y->sin_addr, sizeof x->sin_addr) == 0;
    }
    const struct sockaddr_in6 *x = (const struct sockaddr_in6 *)(const void *)a;
    const struct sockaddr_in6 *y = (const struct sockaddr_in6 *)(const void *)b;
    return memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr) == 0 &&
           x->sin6_scope_id == y->sin6_scope_id;
}

/* Copy getaddrinfo's list into out: IPv4/IPv6 only, lengths checked
 * against the family (never trust a length to fit sockaddr_storage
 * blindly), duplicates dropped, at most EGRESS_MAX_ADDRS, ports zeroed. */
static void copy_addresses(const struct addrinfo *list, egress_resolution *out) {
    for (const struct addrinfo *ai = list; ai && out->naddrs < EGRESS_MAX_ADDRS;
         ai = ai->ai_next) {
        if (!ai->ai_addr)
            continue;
        socklen_t want;
        if (ai->ai_family == AF_INET)
            want = sizeof(struct sockaddr_in);
        else if (ai->ai_family == AF_INET6)
            want = sizeof(struct sockaddr_in6);
        else
            continue;
        if (ai->ai_addrlen != want || ai->ai_addr->sa_family != ai->ai_family)
            continue;
        bool dup = false;
        for (size_t i = 0; i < out->naddrs && !dup; i++)
            dup = same_address(&out->addrs[i], out->addr_lens[i], ai->ai_addr, want);
        if (dup)
            continue;
        struct sockaddr_storage *slot = &out->addrs[out->naddrs];
        memset(slot, 0, sizeof *slot);
        memcpy(slot, ai->ai_addr, want);
        if (want == sizeof(struct sockaddr_in))
            ((struct sockaddr_in *)(void *)slot)->sin_port = 0;
        else
            ((struct sockaddr_in6 *)(void *)slot)->sin6_port = 0;
        out->addr_lens[out->naddrs++] = want;
    }
}

static void lookup(const resolver_job *job, egress_resolution *out) {
    memset(out, 0, sizeof *out);
    out->token = job->token;
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    struct addrinfo *list = NULL;
    int rc = getaddrinfo(job->name, NULL, &hints, &list);
    if (rc != 0) {
        out->gai_error = rc;
        return;
    }
    copy_addresses(list, out);
    freeaddrinfo(list);
    if (out->naddrs == 0)
        out->gai_error = EAI_NODATA; /* only families we cannot use */
}

static void notify(egress_resolver *r) {
    uint64_t one = 1;
    /* EAGAIN only when the counter is about to overflow: it is readable
     * then anyway. */
    ssize_t n;
    do
        n = write(r->event_fd, &one, sizeof one);
    while (n < 0 && errno == EINTR);
}

static void *worker(void *arg) {
    egress_resolver *r = arg;
    /* egress_resolution is ~1 KiB: off the lock, on this thread's stack. */
    egress_resolution result;
    resolver_job job;
    pthread_mutex_lock(&r->lock);
    for (;;) {
        while (!r->stopping && r->njobs == 0)
            pthread_cond_wait(&r->wake, &r->lock);
        if (r->stopping)
            break;
        job = r->jobs[r->jobs_head];
        r->jobs_head = (r->jobs_head + 1) % RESOLVER_SLOTS;
        r->njobs--;
        pthread_mutex_unlock(&r->lock);

        lookup(&job, &result);

        pthread_mutex_lock(&r->lock);
        /* outstanding counted this job since submit, so there is room:
         * nresults <= outstanding <= RESOLVER_SLOTS. */
        size_t at = (r->results_head + r->nresults) % RESOLVER_SLOTS;
        r->results[at] = result;
        r->nresults++;
        notify(r);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

static void stop_threads(egress_resolver *r) {
    pthread_mutex_lock(&r->lock);
    r->stopping = true;
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->lock);
    for (unsigned i = 0; i < r->nthreads; i++)
        pthread_join(r->threads[i], NULL);
    r->nthreads = 0;
}

egress_resolver *egress_resolver_new(unsigned threads, int *notify_fd) {
    if (!notify_fd || threads == 0 || threads > RESOLVER_MAX_THREADS) {
        errno = EINVAL;
        return NULL;
    }
    egress_resolver *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (r->event_fd < 0) {
        free(r);
        return NULL;
    }
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->wake, NULL);

    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = 0;
    for (unsigned i = 0; i < threads && rc == 0; i++) {
        rc = pthread_create(&r->threads[i], NULL, worker, r);
        if (rc == 0)
            r->nthreads++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        egress_resolver_free(r);
        errno = rc;
        return NULL;
    }
    *notify_fd = r->event_fd;
    return r;
}

bool egress_resolver_submit(egress_resolver *r, uint64_t token, const char *name) {
    if (!r || !name) {
        errno = EINVAL;
        return false;
    }
    size_t len = strnlen(name, EGRESS_MAX_NAME + 1);
    if (len == 0 || len > EGRESS_MAX_NAME) {
        errno = EINVAL;
        return false;
    }
    pthread_mutex_lock(&r->lock);
    bool ok = !r->stopping && r->outstanding < RESOLVER_SLOTS;
    if (ok) {
        resolver_job *job = &r->jobs[(r->jobs_head + r->njobs) % RESOLVER_SLOTS];
        job->token = token;
        memcpy(job->name, name, len);
        job->name[len] = '\0';
        r->njobs++;
        r->outstanding++;
        pthread_cond_signal(&r->wake);
    }
    pthread_mutex_unlock(&r->lock);
    if (!ok)
        errno = EAGAIN;
    return ok;
}

bool egress_resolver_take(egress_resolver *r, egress_resolution *out) {
    if (!r || !out)
        return false;
    pthread_mutex_lock(&r->lock);
    bool ok = r->nresults > 0;
    if (ok) {
        *out = r->results[r->results_head];
        r->results_head = (r->results_head + 1) % RESOLVER_SLOTS;
        r->nresults--;
        r->outstanding--;
    }
    pthread_mutex_unlock(&r->lock);
    return ok;
}

void egress_resolver_free(egress_resolver *r) {
    if (!r)
        return;
    stop_threads(r);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
    close(r->event_fd);
    free(r);
}
