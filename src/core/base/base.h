/* SPDX-License-Identifier: MIT */
/* base.h — the core's ground floor: what every file of src/core may use, and the part of a
 * client every floor may read.
 *
 * Memory, error texts, the clock, randomness, the log line and owner names are declared in
 * dlock_int.h (primitives use them too); this header adds the core-only ground: where a
 * client connects (the endpoint a URL names, url.c), its monitoring counters (stats.c),
 * its id (random.c), and the client in floors (below).
 *
 * The client in floors. A dlock_client is built like a house: each floor of src/core owns
 * a part of it, and a floor's part begins with the part of the floor below:
 *
 *   struct dlock_client  (client/client.h)  begins with
 *   dlock__client_engine (engine/engine.h)  begins with
 *   dlock__client_topology (topology/topology.h)  begins with
 *   dlock__client_net    (net/net.h)        begins with
 *   dlock__client_base   (here)
 *
 * A pointer to a struct, converted, points to its first member (C11 6.7.2.1), so every
 * floor takes the same dlock_client * and reads its own part and the parts below through
 * DLOCK__BASE(c), DLOCK__NET(c), DLOCK__TOPOLOGY(c), DLOCK__ENGINE(c), without seeing the
 * floors above: the transport cannot reach the watchdog's registry, because the type that
 * holds it is not declared where the transport is compiled. (libuv builds its handles the
 * same way.) client/client.c asserts at compile time that the chain holds. */
#ifndef DLOCK_CORE_BASE_H
#define DLOCK_CORE_BASE_H

#include <stdatomic.h>

#include "base/map.h"
#include "dlock_int.h"

/* A floor's part of c (a dlock_client * or a const one), const kept; anything else is a
 * compile error. */
#define DLOCK__PART(type, c)                                                                       \
    _Generic((c), const dlock_client *: (const type *)(const void *)(c),                       \
             dlock_client *: (type *)(void *)(c))

/* ---- connection endpoint (url.c) -------------------------------------------------------- */

typedef struct dlock__endpoint {
    bool is_unix;
    char *host; /* TCP: host name or address (no brackets) */
    int port;
    char *path; /* unix socket path */
    int db;
    char *user;     /* NULL: no ACL user */
    char *password; /* NULL: no AUTH */
    /* rediss:// */
    bool tls;
    bool tls_insecure; /* insecure=1: the server's certificate is not verified */
    char *tls_cacert;  /* NULL: the system's store */
    char *tls_cert;    /* client certificate and its key (mutual TLS), both or neither */
    char *tls_key;
    char *tls_sni; /* NULL: the host is the name sent and verified */
    /* ?sync_replicas= and ?sync_timeout_ms= (any URL form; replicas.c) */
    int sync_replicas;       /* DLOCK__SYNC_AUTO (the default), 0 (no WAIT) or N */
    int64_t sync_timeout_ms; /* WAIT's timeout; 1000 by default */
} dlock__endpoint;

#define DLOCK__SYNC_AUTO (-1)

/* Parses url into ep (strings owned by ep). DLOCK_EINVAL with the reason in err. */
int dlock__url_parse(const char *url, dlock__endpoint *ep, char *err, size_t errlen);
/* Every URL scheme a client takes ("redis://", ... "rediss-cluster://"), *count of them: the
 * list a mistyped scheme is answered with. */
const char *const *dlock__url_schemes(size_t *count);
void dlock__endpoint_free(dlock__endpoint *ep);

/* "host:port" ("[v6]:port") or "unix socket /path": where ep connects, never its
 * credentials. Returns buf. */
const char *dlock__endpoint_describe(const dlock__endpoint *ep, char *buf, size_t size);

/* ---- monitoring counters (stats.c) ------------------------------------------------------ */

/* dlock_client_stats()'s numbers: atomics written on the loop thread (calls_in_flight from
 * any thread) and read from any thread. */
enum dlock__stat {
    DLOCK__STAT_CALLS, /* gauges */
    DLOCK__STAT_WAITS,
    DLOCK__STAT_LEASES_HELD,
    DLOCK__STAT_SUBSCRIPTIONS,
    DLOCK__STAT_RENEWALS_SENT, /* counters */
    DLOCK__STAT_RENEWALS_LATE,
    DLOCK__STAT_RENEWAL_LAG_MAX,
    DLOCK__STAT_LEASES_LOST,
    DLOCK__STAT_RECONNECTS,
    DLOCK__STAT_MESSAGES,
    DLOCK__STAT_WAKES,
    DLOCK__STAT_WAKES_SPARED,
    DLOCK__STAT_ACQUIRE_FAILURES, /* DLOCK_STATS_CODES slots, by -code */
    DLOCK__STAT_ACQUIRE_WAIT_BUCKETS = DLOCK__STAT_ACQUIRE_FAILURES + DLOCK_STATS_CODES,
    DLOCK__STAT_ACQUIRE_WAIT_SUM_US = DLOCK__STAT_ACQUIRE_WAIT_BUCKETS + DLOCK_STATS_WAIT_BUCKETS,
    DLOCK__STAT_TIMEOUTS_BY_KIND, /* DLOCK_STATS_KINDS slots each */
    DLOCK__STAT_ERRORS_BY_KIND = DLOCK__STAT_TIMEOUTS_BY_KIND + DLOCK_STATS_KINDS,
    DLOCK__STAT_REPLY_SPINS = DLOCK__STAT_ERRORS_BY_KIND + DLOCK_STATS_KINDS,
    DLOCK__STAT_REPLY_SPIN_HITS,
    DLOCK__STAT_REPLY_SPIN_US,
    DLOCK__STAT_COUNT
};

typedef struct dlock__stats {
    _Atomic int64_t v[DLOCK__STAT_COUNT];
} dlock__stats;

void dlock__stat_add(dlock_client *c, enum dlock__stat which, int64_t delta);
void dlock__stat_set(dlock_client *c, enum dlock__stat which, int64_t value);
/* A wait (wait.c) on a handle of kind (dlock__handle.kind) ended with status after
 * waited_us: a failure by its code and by kind, or an obtained object's wait in its bucket
 * and the sum. */
void dlock__stat_wait_ended(dlock_client *c, const char *kind, int status, int64_t waited_us);
/* A renewal confirmed lag_ms after it was due: the worst lag, and late past late_ms. */
void dlock__stat_renewal(dlock_client *c, int64_t lag_ms, int64_t late_ms);

/* ---- the CPUs this process may keep busy (cpus.c) ---------------------------------------- */

/* affinity_cpus (at least 1), or fewer when the process's cgroup has a CPU quota: its
 * whole CPUs, the lowest from the process's cgroup up (0 when less than one). root: where
 * cgroups are mounted ("/sys/fs/cgroup"); self_cgroup: the text of /proc/self/cgroup. */
int dlock__cpus_to_keep_busy(const char *root, const char *self_cgroup, int affinity_cpus);
/* A cgroup v2 cpu.max ("150000 100000") in whole CPUs (1); -1 for "max ..." or no sense. */
int dlock__cpu_max_cpus(const char *text);
/* dlock__cpus_to_keep_busy for this process: the calling thread's affinity, its
 * /proc/self/cgroup, cgroups mounted at /sys/fs/cgroup. Reads files: not on a hot path. */
int dlock__cpus_of_this_process(void);

/* ---- randomness (random.c) ------------------------------------------------------------- */

/* A random (version 4) UUID in out, the client id; -1 when the kernel has no entropy. */
int dlock__random_uuid(char out[37]);

/* ---- the client's ground part ------------------------------------------------------------ */

typedef struct dlock__client_base {
    dlock_options opts; /* the caller's, validated; strings owned by the client */
    char id[37];        /* the client id (a random UUID), first half of every owner field */
    dlock__stats stats; /* dlock_client_stats() */
} dlock__client_base;

#define DLOCK__BASE(c) DLOCK__PART(dlock__client_base, c)

#endif
