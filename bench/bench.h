/* SPDX-License-Identifier: MIT */
/* bench.h — what the files of dlock-bench share: the run's settings, clocks, latency
 * samples, the JSON line writer and a few synchronous hiredis helpers.
 *
 *   dlock_bench.c   command line, the list of workloads, the order they run in
 *   floor.c         the references: floor_ping, floor_publish (plain hiredis, no dlock)
 *   pair.c          uncontended_pair
 *   handoff.c       contended_handoff (threads and forked processes)
 *   fair.c          fair_order (P waiters of two clients on one fair lock)
 *   rwlock.c        rwlock_mix (T threads of two clients, reads and writes, one rwlock)
 *   contend.c       the pair and contention loops for any bench_impl; hold_10ms,
 *                   semaphore_pair, semaphore_contended
 *   naive.c         the naive SET NX PX lock (plain hiredis) through those loops
 *   scale.c         renewal_scale, waiters_scale, client_pair (a client per thread)
 *   async.c         async_pairs (the async face on a libev loop, 256 in flight)
 *   redlock.c       redlock_acquire (a RedLock over 5 masters against its parts)
 *   ceiling.c       floor_script (redis-benchmark EVALSHA of a lock-sized script)
 *   util.c          everything in this header
 *
 * Every workload prints one JSON object on one line of stdout (bench_json_*) and returns
 * the number of errors it counted; nothing else is written to stdout. */
#ifndef DLOCK_BENCH_H
#define DLOCK_BENCH_H

#include <hiredis/hiredis.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The lease every dlock workload takes: explicit, so the watchdog never runs during a
 * measurement. */
#define BENCH_LEASE_MS 30000
/* redlock_acquire's independent masters: the usual RedLock deployment. */
#define BENCH_REDLOCK_MASTERS 5

typedef struct bench_config {
    const char *url;       /* as given to dlock_options.url */
    const char *transport; /* "unix" or "tcp" */
    int64_t duration_ms;   /* per dlock workload (per thread count) */
    int floor_n;           /* round trips / messages per floor workload */
    const char *only;      /* run only this workload, or NULL */
    const char *placement; /* where the server and the client run (CPU pinning), as told */
    char redis_version[32];
    char run_tag[48]; /* makes this run's key and channel names unique */
    /* --redlock-urls split apart, one URL per master; [0] empty when not given. */
    char redlock_urls[BENCH_REDLOCK_MASTERS][512];
} bench_config;

/* A floor measured just before a dlock workload (bench_floor_adjacent), for its ratios. */
typedef struct bench_floor {
    int n; /* samples of each */
    double ping_p50_us;
    double publish_p50_us;
} bench_floor;

/* ---- time ---- */
int64_t bench_now_ns(void); /* CLOCK_MONOTONIC: comparable across the processes of a host */
void bench_sleep_ns(int64_t ns);

/* ---- a start line for workers (threads or forked processes: keep it in shared memory) ----
 * Each worker, once set up, calls bench_gate_wait: it says it is ready and waits for the
 * go. The main thread waits until every worker is ready (bench_gate_ready), reads the
 * server's counters, then opens the gate with the workers' deadline. */
typedef struct bench_gate {
    _Atomic int ready;
    _Atomic int go;
    _Atomic int64_t deadline_ns;
} bench_gate;

/* Returns the deadline (CLOCK_MONOTONIC ns) the worker stops at. */
int64_t bench_gate_wait(bench_gate *g);
/* Waits (up to timeout_ms) until n workers are ready. 0, or -1 on timeout. */
int bench_gate_ready(bench_gate *g, int n, int64_t timeout_ms);
/* Starts the workers: they run for duration_ms from now. Returns the start time. */
int64_t bench_gate_open(bench_gate *g, int64_t duration_ms);

/* ---- latency samples (ns), grown on demand ---- */
typedef struct bench_samples {
    int64_t *v;
    size_t n, cap;
} bench_samples;

int bench_samples_push(bench_samples *s, int64_t ns); /* 0, or -1 out of memory */
int bench_samples_append(bench_samples *dst, const bench_samples *src);
void bench_samples_sort(bench_samples *s);
/* q in [0, 1] of sorted samples, in microseconds; 0 when empty. */
double bench_samples_pct_us(const bench_samples *s, double q);
void bench_samples_free(bench_samples *s);

/* ---- one JSON object per line on stdout ---- */
/* Opens the object with the fields every workload has (workload, transport, versions). */
void bench_json_begin(const bench_config *cfg, const char *workload, const char *client);
void bench_json_open(const char *name); /* a nested object */
void bench_json_close(void);
void bench_json_int(const char *name, long long v);
void bench_json_num(const char *name, double v); /* NaN or inf: null */
void bench_json_str(const char *name, const char *v);
void bench_json_bool(const char *name, bool v);
/* p50, p99, max (µs) and n of sorted samples, as prefix_p50_us, ... */
void bench_json_latency(const char *prefix, const bench_samples *s);
void bench_json_end(long long errors); /* adds "errors", closes, prints, flushes */

/* ---- synchronous hiredis, for the floors and the server's counters ---- */
/* Connects to url (redis://[[user:]password@]host[:port][/db] or
 * unix:///path[?password=P&user=U]), AUTHs if the URL has credentials. NULL on failure,
 * with the reason on stderr. *transport (may be NULL) gets "unix" or "tcp". */
redisContext *bench_redis_connect(const char *url, const char **transport);
/* "dlock-bench: <who> <what>: <why>" on stderr, why being the error reply, "unexpected
 * reply", or rc's error when there is no reply; frees r. Returns -1. */
int bench_reply_error(const redisContext *rc, redisReply *r, const char *who, const char *what);
/* One field of INFO section (e.g. "server", "redis_version") into out. 0 or -1. */
int bench_redis_info(redisContext *rc, const char *section, const char *field, char *out,
                     size_t outlen);

/* What a workload cost, read before and after it: the calls of the commands a lock uses
 * (INFO commandstats), the server's CPU time (INFO cpu) and the client's (getrusage of
 * rusage_who: RUSAGE_SELF for threads, RUSAGE_CHILDREN for waited-for worker processes). */
typedef struct bench_counters {
    long long evalsha, eval, publish, subscribe, unsubscribe, wait;
    double server_cpu_us, client_cpu_us;
} bench_counters;
int bench_counters_read(redisContext *rc, int rusage_who, bench_counters *out); /* 0 or -1 */
/* Writes after - before divided by per (the sections, the pairs) as <name>_per_<unit>:
 * the command calls (if commands) and the CPU times. */
void bench_json_counters(const bench_counters *before, const bench_counters *after, double per,
                         const char *unit, bool commands);

/* ---- the workloads: each prints its JSON lines and returns its error count ---- */
long long bench_floor_ping(const bench_config *cfg);
long long bench_floor_publish(const bench_config *cfg);
/* Measures floor_n / 10 (at least 500) PINGs and messages quietly into floor. */
long long bench_floor_adjacent(const bench_config *cfg, bench_floor *floor);
/* Writes the floor as floor_n, floor_ping_p50_us, floor_publish_p50_us. */
void bench_json_floor(const bench_floor *floor);
long long bench_uncontended_pair(const bench_config *cfg, const bench_floor *floor, int threads);
long long bench_contended_handoff(const bench_config *cfg, const bench_floor *floor, int workers,
                                  bool processes);
long long bench_fair_order(const bench_config *cfg, const bench_floor *floor, int waiters);
long long bench_rwlock_mix(const bench_config *cfg, const bench_floor *floor, int threads,
                           int write_pct, int64_t hold_us);

/* ---- contend.c: any lock-like implementation through the same loops ---- */
/* open_shared (may be NULL) runs once per process: in the main thread for threads, in each
 * child for processes; open_worker in the worker's own thread or process, with the name
 * to lock (the one contended name, or the worker's own for pairs). acquire and release
 * return 0, or -1 with the reason on stderr. */
typedef struct bench_impl {
    const char *client; /* "dlock", "naive": the JSON's client */
    const char *api;    /* the JSON's params.api */
    bool connection_per_worker;
    int (*open_shared)(const bench_config *cfg, const char *name, void **shared);
    void (*close_shared)(void *shared);
    int (*open_worker)(const bench_config *cfg, const char *name, void *shared, void **worker);
    void (*close_worker)(void *worker);
    int (*acquire)(void *worker);
    int (*release)(void *worker);
} bench_impl;
bool bench_quick(void); /* QUICK=1 in the environment */
/* 101 quantiles (0..100 %, in us) of sorted samples as a nested object {"0": .., "100": ..}. */
void bench_json_cdf(const char *name, const bench_samples *sorted);
long long bench_pairs(const bench_config *cfg, const bench_floor *floor, const bench_impl *impl,
                      const char *workload, int threads);
long long bench_contend(const bench_config *cfg, const bench_floor *floor, const bench_impl *impl,
                        const char *workload, int workers, bool processes, int64_t hold_us);
long long bench_hold_10ms(const bench_config *cfg, const bench_floor *floor, int workers,
                          bool processes);
long long bench_semaphore_pair(const bench_config *cfg, const bench_floor *floor, int threads);
long long bench_semaphore_contended(const bench_config *cfg, const bench_floor *floor, int workers);
long long bench_naive_pair(const bench_config *cfg, const bench_floor *floor, int threads);
long long bench_naive_contend(const bench_config *cfg, const bench_floor *floor,
                              const char *workload, int workers, bool processes, int64_t hold_us);
/* dlock's lock scripts over plain hiredis, a connection per thread (layout_floor.c). */
long long bench_layout_floor_pair(const bench_config *cfg, const bench_floor *floor, int threads);
long long bench_renewal_scale(const bench_config *cfg, long long locks);
long long bench_waiters_scale(const bench_config *cfg, long long waiters);
long long bench_floor_script(const bench_config *cfg);
/* T threads, a dlock client each, a lock each: bench_pairs as "client_pair". */
long long bench_client_pair(const bench_config *cfg, const bench_floor *floor, int threads);
/* One client on a libev loop of its own, 256 acquire/release pairs in flight at once. */
long long bench_async_pairs(const bench_config *cfg, const bench_floor *floor);
/* Needs cfg->redlock_urls: one line per call, plain (fenced false) or fenced members. */
long long bench_redlock_acquire(const bench_config *cfg, const bench_floor *floor, bool fenced);

#endif
