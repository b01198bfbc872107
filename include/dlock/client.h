/* SPDX-License-Identifier: MIT */
/* dlock/client.h — the client: one connection set to one Redis, shared by every
 * primitive made from it.
 *
 * A client owns a command connection, a subscriber connection (opened on first wait),
 * with a Sentinel URL one more connection to a sentinel that watches for failovers, the
 * watchdog that renews held leases, and an event loop. dlock_client_new() gives the
 * blocking face: the client runs its own loop in an I/O thread and every blocking call is
 * safe from any thread. dlock_client_new_on_loop() (dlock/adapters/libev.h) gives the
 * async face on the application's own libev loop. */
#ifndef DLOCK_CLIENT_H
#define DLOCK_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "dlock/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dlock_client dlock_client;

/* The longest time dlock accepts anywhere (leases, waits count as "for ever" above it,
 * option times): ten years, in ms. Larger values are DLOCK_EINVAL, so that no deadline or
 * expiry computed from it can overflow, in the client or in Redis. */
#define DLOCK_MAX_TIME_MS (INT64_C(10) * 365 * 24 * 3600 * 1000)

/* Log levels passed to dlock_options.log_cb. */
enum { DLOCK_LOG_ERROR = 0, DLOCK_LOG_WARN = 1, DLOCK_LOG_INFO = 2, DLOCK_LOG_DEBUG = 3 };

typedef struct dlock_options {
    size_t size;                /* set by dlock_options_init; lets fields be added later */
    const char *url;            /* redis://[user:password@]host[:port][/db]
                                   rediss://...[?cacert=F&cert=F&key=F&sni=N&insecure=1]
                                   unix:///path/to/redis.sock[?db=N&user=U&password=P]
                                   redis-sentinel://[u:p@]host[:port][,host[:port]...]/MASTER[/db]
                                   rediss-sentinel://... (TLS to sentinels and master),
                                   sentinel_user=, sentinel_password= in the query
                                   redis-cluster://[u:p@]host[:port][,host[:port]...]
                                   rediss-cluster://... (TLS to every node); no /db
                                   Every form: ?sync_replicas=auto|0|N&sync_timeout_ms=MS
                                   (WAIT after each write but a release; auto and
                                   1000 by default).
                                   Another scheme is DLOCK_EINVAL naming these seven.
                                   NULL: $DLOCK_URL (when set and not empty), else
                                   redis://127.0.0.1:6379; "" is DLOCK_EINVAL */
    int64_t watchdog_ms;        /* 30000: lease of holds taken without one; renewed every third */
    int renew_batch;            /* 100: leases renewed per script call */
    int64_t timeout_ms;         /* 3000: reply timeout per command */
    int64_t connect_timeout_ms; /* 10000 */
    int retry_attempts;         /* 3: resends of a command whose connection dropped, when safe */
    int64_t retry_delay_ms;     /* 1000 (1..3600000): the longest wait between reconnect
                                   attempts. The first reconnect after a drop is at once;
                                   each further failure in a row (a connection that drops
                                   within a second of being made counts) waits 10 ms doubling
                                   up to this, jittered over its upper half; while the client
                                   holds watchdog leases, at most watchdog_ms/3; at least
                                   10 ms */
    int64_t fair_wait_ms;       /* 5000: how long a silent fair-lock waiter keeps its place */
    /* NULL: no logging. Called by the thread that runs the client's loop code at the time:
     * the loop thread, or (blocking face) a thread starting its own call while the I/O
     * thread sleeps; never two calls at once. */
    void (*log_cb)(int level, const char *msg, void *arg);
    void *log_arg;
    /* 0 (no bound): how long a watchdog hold may last. The watchdog stops renewing a hold
     * this long after it was taken; its lease then runs out in Redis (at most watchdog_ms
     * later), the lost callback says DLOCK_LOST_MAX_HOLD and the release DLOCK_ELOST.
     * 0..DLOCK_MAX_TIME_MS; a handle may set its own (dlock_lock_set_max_hold). */
    int64_t max_hold_ms;
    /* 50: how long, in microseconds, a blocking call alone on its client polls for its
     * reply before it sleeps (0..1000; 0: it sleeps at once). A nearby Redis answers in
     * tens of microseconds, about what it costs a CPU to sleep and be woken again; the
     * spin saves that wake-up on both ends, for at most this much of the caller's CPU per
     * reply. A spin that ends without its reply (a farther server, a busy CPU) makes the
     * next ones sleep at once, backing off to 1 in 1,025 (the answer of a WAIT, a
     * replica's round trip away, backs off apart); no more callers of the process spin at
     * once than the CPUs it may keep busy (its affinity, within its cgroup's CPU quota:
     * none below one CPU). dlock_stats counts the spins. */
    int64_t reply_spin_us;
} dlock_options;

/* Fills o with the defaults above. Always call it before setting fields. No I/O; any
 * thread. NULL is a no-op.
 *
 * Returns: nothing. */
DLOCK_EXTERN void dlock_options_init(dlock_options *o);

/* Blocking face. Parses the options (o may be NULL for all defaults; a bad URL or value is
 * DLOCK_EINVAL before any I/O), starts the client's I/O thread and connects: it blocks
 * until the command connection is ready (authenticated, database selected, scripts
 * loaded) or connect_timeout_ms has passed. Any thread. *out is written only on success;
 * the caller owns the client and frees it with dlock_client_free().
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL out, a bad URL or option, o->size not set, a TLS
 *   file that cannot be read; with a Sentinel URL, a master no sentinel knows; with a
 *   Cluster URL, a seed that is a plain Redis); DLOCK_ENOMEM; DLOCK_ECONN (Redis, every
 *   sentinel, or every Cluster seed, not reached within connect_timeout_ms); DLOCK_EAUTH
 *   (the credentials refused); DLOCK_EREDIS (the server refused the handshake otherwise,
 *   e.g. SELECT of a database it does not have; a Cluster seed's CLUSTER SLOTS answer is
 *   no slot map);
 *   DLOCK_ENOPERM (the ACL denies the user a command of the handshake: SELECT, SCRIPT
 *   LOAD). */
DLOCK_EXTERN int dlock_client_new(const dlock_options *o, dlock_client **out);

/* Closes the client: stops renewals (held leases then expire in Redis by their lease),
 * completes every pending operation with DLOCK_ECANCELED, closes the connections and, on
 * the blocking face, joins the I/O thread. Every primitive made from c must be freed
 * before. Blocking face: call from any thread but the loop thread; it returns once
 * everything is closed. Async face: call on the loop thread, outside any dlock callback;
 * the callbacks of canceled operations run inside this call (the one exception to "never
 * inside the call" of dlock.h's callback contract). On failure nothing was closed.
 *
 * Returns: DLOCK_OK (NULL c too); DLOCK_EINVAL (async face: called off the loop thread);
 *   DLOCK_EBUSY (async face: called from inside a dlock callback); DLOCK_EDEADLK (blocking
 *   face: called on the loop thread, e.g. from a dlock callback). */
DLOCK_EXTERN int dlock_client_free(dlock_client *c);

/* The client's random UUID, the first half of every owner field it writes. No I/O; any
 * thread.
 *
 * Returns: 36 lowercase characters, valid as long as c; "" for NULL c. */
DLOCK_EXTERN const char *dlock_client_id(const dlock_client *c);

/* The owner id the blocking face uses for the calling thread: unique per thread for the
 * life of the process (ids are never reused), never 0, and always at least
 * DLOCK_THREAD_OWNER_BASE, so async owner ids below it never collide with a thread.
 * No I/O; any thread.
 *
 * Returns: the calling thread's id. */
#define DLOCK_THREAD_OWNER_BASE (UINT64_C(1) << 62)
DLOCK_EXTERN uint64_t dlock_thread_owner(void);

/* One round trip (PING) on the command connection. Blocking; any thread but the loop
 * thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL c); DLOCK_ENOMEM; DLOCK_ECONN; DLOCK_EAUTH;
 *   DLOCK_EREDIS; DLOCK_ECANCELED (the client freed first); DLOCK_ECLOSED (the client
 *   closing); DLOCK_EDEADLK; DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_client_ping(dlock_client *c);

/* Async twin of dlock_client_ping. cb runs as dlock.h's callback contract says. Call from
 * the loop thread (async face) or any thread (blocking face).
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL c or cb); DLOCK_ENOMEM; DLOCK_ECLOSED.
 * Callback status: DLOCK_OK; DLOCK_ENOMEM; DLOCK_ECONN; DLOCK_EAUTH; DLOCK_EREDIS;
 *   DLOCK_ECANCELED (the client freed first); DLOCK_ECLOSED; DLOCK_ENOPERM. */
typedef void (*dlock_client_cb)(dlock_client *c, int status, void *arg);
DLOCK_EXTERN int dlock_client_ping_async(dlock_client *c, dlock_client_cb cb, void *arg);

/* dlock_stats.acquire_failures has a slot per error code (by -code), and
 * acquire_wait_buckets one per bound below (microseconds: 0.5 ms to 30 s) and one past them. */
#define DLOCK_STATS_CODES 16
#define DLOCK_STATS_WAIT_BOUNDS_US                                                                 \
    500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, \
        10000000, 30000000
#define DLOCK_STATS_WAIT_BUCKETS 16
/* dlock_stats' ..._by_kind counters have a slot per kind of object, named in this order by
 * DLOCK_STATS_KIND_NAMES (e.g. `static const char *const kinds[] = {DLOCK_STATS_KIND_NAMES};`);
 * [0] "other" gathers a kind past the names, and the slots past the names stay 0 until a
 * later version names them. A fenced lock is a "lock". */
#define DLOCK_STATS_KINDS 16
#define DLOCK_STATS_KIND_NAMES                                                                     \
    "other", "lock", "spin_lock", "fair_lock", "read_lock", "write_lock", "semaphore", "permits",  \
        "latch"

/* What a client is doing and has been through, for monitoring: a snapshot filled by
 * dlock_client_stats(). Gauges say how things are now; counters only grow, from the
 * moment the client was made. docs/monitoring.md says which ones to alert on. */
typedef struct dlock_stats {
    size_t size; /* set by dlock_stats_init; lets fields be added later */
    /* gauges */
    int64_t calls_in_flight; /* calls submitted whose result is not delivered yet (waits too) */
    int64_t waits;           /* calls waiting for a busy object to be given back */
    int64_t leases_held;     /* leases the watchdog renews (holds taken without a lease) */
    int64_t subscriptions;   /* channels the subscriber connection is subscribed to */
    /* counters */
    uint64_t renewals_sent;     /* lease renewals sent (one per lease per watchdog tick) */
    uint64_t renewals_late;     /* renewals confirmed more than watchdog_ms/3 after they were due */
    int64_t renewal_lag_max_ms; /* the worst lag seen: confirmation time minus due time,
                                   where due = the previous confirmation's send time +
                                   watchdog_ms/3; the lease is lost at 2 x watchdog_ms/3 */
    uint64_t leases_lost;       /* holds lost, one per hold a lost callback reports: found
                                   gone (by a renewal, a release, an acquire or a query), not
                                   confirmed in time, or past their max_hold_ms */
    uint64_t reconnects;        /* command and subscriber connections made ready again
                                   (in a Cluster: every master's and shard's) */
    uint64_t messages;          /* pub/sub messages received */
    uint64_t wakes;             /* waiters a message woke (each then makes one attempt):
                                   as it came, or a lock's release let pass 100 ms late;
                                   and waiters a lock's release handed the lock to (no
                                   attempt) */
    uint64_t wakes_spared;      /* a lock's releases that woke none of this client's waiters
                                   because the release named (handed the lock to) another
                                   client's waiter (the hand-off: one waiter answers a
                                   release, not one in each process) */
    /* counters (added after the ones above): how acquires and awaits of every primitive ended (the
     * calls that count in `waits`: a try with no wait included), and how long those that got the
     * object waited. A composite's member calls count on the member's client. */
    uint64_t acquire_failures[DLOCK_STATS_CODES]; /* [-code]: the ones that ended with that
                                   DLOCK_E* code ([3]: DLOCK_ETIMEDOUT, a try that found the
                                   object busy included; [9]: DLOCK_ECANCELED); [0]: a code
                                   past the array */
    uint64_t acquire_wait_buckets[DLOCK_STATS_WAIT_BUCKETS]; /* the ones that got the object,
                                   by their wait from first attempt to result: [i] waited more
                                   than bound i-1 and at most bound i of
                                   DLOCK_STATS_WAIT_BOUNDS_US; the last, more than them all */
    uint64_t acquire_wait_sum_us; /* the sum of those waits, in microseconds */
    /* counters (added after the ones above): the failures of acquire_failures by the kind of
     * object the call was on, [k] the kind DLOCK_STATS_KIND_NAMES names k-th */
    uint64_t acquire_timeouts_by_kind[DLOCK_STATS_KINDS]; /* ended with DLOCK_ETIMEDOUT */
    uint64_t acquire_errors_by_kind[DLOCK_STATS_KINDS];   /* ended with any other code but
                                   DLOCK_ECANCELED (a call the application itself ended: a
                                   freed handle, a closed client) */
    /* counters (added after the ones above): the lone caller's spin (dlock_options.reply_spin_us)
     */
    uint64_t reply_spins;     /* waits for a reply that spun before sleeping */
    uint64_t reply_spin_hits; /* those whose reply came while they spun (no sleep) */
    uint64_t reply_spin_us;   /* the time they spun, in microseconds: the CPU the spin cost */
} dlock_stats;

/* Readies *s for dlock_client_stats(): zeroes it and sets s->size. No I/O; any thread.
 * NULL is a no-op.
 *
 * Returns: nothing. */
DLOCK_EXTERN void dlock_stats_init(dlock_stats *s);

/* Fills *out with c's gauges and counters. Cheap (a few atomic loads, no lock, no I/O, never
 * waits for the loop): fine to call every second, from any thread, the loop thread and
 * dlock callbacks included. The fields are read one by one, not as one atomic snapshot. The
 * caller owns out.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL c or out, out->size not set by dlock_stats_init). */
DLOCK_EXTERN int dlock_client_stats(dlock_client *c, dlock_stats *out);

/* One label of dlock_client_stats_prometheus()'s samples: name="value" (e.g. the service's
 * name), both NUL-terminated and owned by the caller. */
typedef struct dlock_metric_label {
    const char *name;  /* [a-zA-Z_][a-zA-Z0-9_]*, not "__..." (Prometheus's), "le", "code" or
                          "kind" */
    const char *value; /* any text: \\, " and newline are escaped as the format wants */
} dlock_metric_label;

/* Writes c's stats (dlock_client_stats) into buf in Prometheus's text exposition format,
 * version 0.0.4, for the application's own /metrics (serve it as Content-Type
 * "text/plain; version=0.0.4"): every metric named dlock_..., with its # HELP and # TYPE
 * lines; counters end in _total, renewal_lag_max_ms is dlock_renewal_lag_max_seconds,
 * acquire_failures is dlock_acquire_failures_total{code="DLOCK_E..."} (a sample per code),
 * the wait buckets the histogram dlock_acquire_wait_seconds (_bucket{le=...}, _sum, _count),
 * acquire_timeouts_by_kind and acquire_errors_by_kind dlock_acquire_timeouts_total{kind=...}
 * and dlock_acquire_errors_total{kind=...} (a sample per named kind, kind="other" when not 0).
 * Every sample carries the nlabels labels (none: labels may be NULL), in their order, then
 * its own code=, le= or kind=.
 * docs/monitoring.md shows the output. Cheap (a dlock_client_stats() and some formatting; no
 * allocation, no lock, no I/O): any thread, the loop thread and dlock callbacks included.
 * The caller owns labels and buf; nothing is kept after the call.
 *
 * The text is all or nothing, never cut short:
 *   - it fits (its length < size): buf holds it and a NUL, *len = its length (without the
 *     NUL), and the call returns DLOCK_OK;
 *   - it does not fit: buf[0] = '\0' (when size > 0; nothing else is written), *len = the
 *     length it needs without the NUL (so size = *len + 1 fits this snapshot; allow some
 *     slack, a counter may gain a digit by the next call: 8192 bytes hold it with a short
 *     label), and the call returns DLOCK_ENOSPC. buf NULL with size 0 only measures.
 *
 * Returns: DLOCK_OK; DLOCK_ENOSPC (buf too small, above); DLOCK_EINVAL (NULL c or len; NULL
 * buf with size > 0; NULL labels with nlabels > 0; a NULL name or value; a label name not
 * [a-zA-Z_][a-zA-Z0-9_]*, starting with "__", given twice, or "le", "code" or "kind", dlock's
 * own): then neither buf nor *len is touched. */
DLOCK_EXTERN int dlock_client_stats_prometheus(dlock_client *c, const dlock_metric_label *labels,
                                               size_t nlabels, char *buf, size_t size, size_t *len);

#ifdef __cplusplus
}
#endif

#endif
