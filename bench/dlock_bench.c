/* SPDX-License-Identifier: MIT */
/* dlock_bench.c — dlock-bench: measures dlock's locks against the physical floor of the
 * same server, in one run (workloads and output: the design notes' BENCHMARKS.md).
 *
 *   dlock-bench [--url URL] [--duration-ms MS] [--floor-n N] [--only WORKLOAD]
 *               [--placement TEXT] [--redlock-urls URL1,URL2,URL3,URL4,URL5]
 *
 * URL defaults to $DLOCK_URL (then redis://127.0.0.1:6379). Each dlock workload runs for
 * --duration-ms per parameter value (default 3000, or 1000 with QUICK=1 in the
 * environment); each floor takes --floor-n samples (default 20000, QUICK=1: 5000).
 * Workloads, in the order they run:
 *
 *   floor_ping          PING round trip (hiredis sync)
 *   floor_publish       PUBLISH -> message delivery (hiredis sync, subscriber thread)
 *   uncontended_pair    T = 1, 8, 32 threads, one lock each, one client
 *   contended_handoff   P = 2, 4, 16 threads on one lock of one client;
 *                       P = 2, 4 processes, one client each
 *   fair_order          P = 4, 16, 64 threads of two clients queue on one fair lock
 *   rwlock_mix          T = 8 threads of two clients on one read-write lock, 10 % and 50 %
 *                       writes, each section held 200 us
 *   floor_script        redis-benchmark EVALSHA of a lock-sized script, -P 1 and -P 16
 *   async_pairs         the async face: one client on a libev loop of this program, 256
 *                       acquire/release pairs in flight on 256 locks, one thread
 *   client_pair         T = 8, 32 threads, a client each, one lock each (against the
 *                       naive lock's uncontended_pair, a connection each)
 *   hold_10ms           P = 4 threads, P = 4 processes on one lock, 10 ms inside
 *   semaphore_pair      T = 1, 8, 32 threads, one 1-permit semaphore each, one client
 *   semaphore_contended P = 2, 4, 16 threads on one 1-permit semaphore of one client
 *   renewal_scale       N = 1k, 10k, 100k watchdog locks of one client (QUICK=1: 1k, 10k)
 *   waiters_scale       N = 1k, 10k async waiters on N locks (QUICK=1: 1k)
 *   redlock_acquire     T = 1, a RedLock over 5 masters (--redlock-urls; skipped without
 *                       them), plain then fenced members, against one member's acquire and
 *                       the 5 members taken one after another
 *   naive               the naive SET NX PX lock: uncontended_pair T = 1, 8, 32,
 *                       contended_handoff P = 2, 4, 16 threads and 2, 4 processes,
 *                       hold_10ms P = 4 threads (client "naive" in the JSON)
 *   layout_floor        dlock's own acquire.lua and release.lua over plain hiredis, a
 *                       connection per thread: uncontended_pair T = 1, 8 (client
 *                       "layout_floor": the ceiling of any client of Redisson's layout)
 *
 * --redlock-urls names the 5 independent redis-servers redlock_acquire puts its members
 * on; --url still serves the floor measured beside it. --placement says where the server
 * and this program run (bench/run.sh pins them to CPUs); it is copied into every JSON
 * object. Each dlock workload measures a short floor (PING and PUBLISH) just before it
 * runs and takes its ratios from it. Prints one JSON object per line per workload on
 * stdout; failures go to stderr. Exits 0 if no workload counted an error, 1 otherwise, 2
 * on a usage error. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "dlock.h"

static void usage(FILE *out) {
    fprintf(out, "usage: dlock-bench [--url URL] [--duration-ms MS] [--floor-n N] "
                 "[--only floor_ping|floor_publish|uncontended_pair|contended_handoff|fair_order"
                 "|rwlock_mix|floor_script|async_pairs|client_pair|hold_10ms|semaphore_pair"
                 "|semaphore_contended"
                 "|renewal_scale|waiters_scale|redlock_acquire|naive|layout_floor] "
                 "[--placement TEXT] [--redlock-urls URL1,URL2,URL3,URL4,URL5]\n");
}

static bool selected(const bench_config *cfg, const char *workload) {
    return !cfg->only || strcmp(cfg->only, workload) == 0;
}

/* --redlock-urls: exactly BENCH_REDLOCK_MASTERS non-empty URLs separated by commas, each
 * copied into cfg (a URL has no comma of its own). 0, or -1 with the reason on stderr. */
static int parse_redlock_urls(const char *list, bench_config *cfg) {
    const char *p = list;
    for (int i = 0; i < BENCH_REDLOCK_MASTERS; i++) {
        size_t len = strcspn(p, ",");
        bool separated = i == BENCH_REDLOCK_MASTERS - 1 ? p[len] == '\0' : p[len] == ',';
        if (len == 0 || len >= sizeof(cfg->redlock_urls[i]) || !separated) {
            fprintf(stderr, "dlock-bench: --redlock-urls takes exactly %d URLs, comma-separated\n",
                    BENCH_REDLOCK_MASTERS);
            return -1;
        }
        memcpy(cfg->redlock_urls[i], p, len);
        cfg->redlock_urls[i][len] = '\0';
        p += len + 1;
    }
    return 0;
}

static int parse_args(int argc, char **argv, bench_config *cfg) {
    bool quick = getenv("QUICK") && strcmp(getenv("QUICK"), "1") == 0;
    cfg->url = getenv("DLOCK_URL") ? getenv("DLOCK_URL") : "redis://127.0.0.1:6379";
    cfg->duration_ms = quick ? 1000 : 3000;
    cfg->floor_n = quick ? 5000 : 20000;
    cfg->placement = "not pinned";
    for (int i = 1; i < argc; i += 2) { /* options come as "--name value" pairs */
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (!value) {
            usage(stderr);
            return -1;
        }
        if (strcmp(arg, "--url") == 0)
            cfg->url = value;
        else if (strcmp(arg, "--duration-ms") == 0)
            cfg->duration_ms = atoll(value);
        else if (strcmp(arg, "--floor-n") == 0)
            cfg->floor_n = atoi(value);
        else if (strcmp(arg, "--only") == 0)
            cfg->only = value;
        else if (strcmp(arg, "--placement") == 0)
            cfg->placement = value;
        else if (strcmp(arg, "--redlock-urls") == 0) {
            if (parse_redlock_urls(value, cfg) != 0)
                return -1;
        } else {
            usage(stderr);
            return -1;
        }
    }
    if (cfg->duration_ms <= 0 || cfg->floor_n <= 0) {
        fprintf(stderr, "dlock-bench: --duration-ms and --floor-n must be > 0\n");
        return -1;
    }
    static const char *const known[] = {"floor_ping",        "floor_publish", "uncontended_pair",
                                        "contended_handoff", "fair_order",    "rwlock_mix"};
    bool found = !cfg->only;
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]) && !found; i++)
        found = strcmp(cfg->only, known[i]) == 0;
    static const char *const more[] = {"floor_script",  "async_pairs",    "client_pair",
                                       "hold_10ms",     "semaphore_pair", "semaphore_contended",
                                       "renewal_scale", "waiters_scale",  "redlock_acquire",
                                       "naive",         "layout_floor"};
    for (size_t i = 0; i < sizeof(more) / sizeof(more[0]) && !found; i++)
        found = strcmp(cfg->only, more[i]) == 0;
    if (!found) {
        fprintf(stderr, "dlock-bench: unknown workload %s\n", cfg->only);
        return -1;
    }
    return 0;
}

/* The server's version and the transport, from a plain connection. */
static int probe_server(bench_config *cfg) {
    redisContext *rc = bench_redis_connect(cfg->url, &cfg->transport);
    if (!rc)
        return -1;
    int status = bench_redis_info(rc, "server", "redis_version", cfg->redis_version,
                                  sizeof(cfg->redis_version));
    if (status != 0)
        fprintf(stderr, "dlock-bench: no redis_version in INFO server\n");
    redisFree(rc);
    return status;
}

int main(int argc, char **argv) {
    bench_config cfg = {0};
    if (parse_args(argc, argv, &cfg) != 0)
        return 2;
    signal(SIGPIPE, SIG_IGN); /* a dropped connection is an error to count, not a death */
    if (probe_server(&cfg) != 0)
        return 1;
    snprintf(cfg.run_tag, sizeof(cfg.run_tag), "%ld-%lld", (long)getpid(), (long long)time(NULL));

    long long errors = 0;
    if (selected(&cfg, "floor_ping"))
        errors += bench_floor_ping(&cfg);
    if (selected(&cfg, "floor_publish"))
        errors += bench_floor_publish(&cfg);
    bench_floor floor;
    static const int pair_threads[] = {1, 8, 32};
    for (size_t i = 0; i < 3 && selected(&cfg, "uncontended_pair"); i++) {
        errors += bench_floor_adjacent(&cfg, &floor);
        errors += bench_uncontended_pair(&cfg, &floor, pair_threads[i]);
    }
    static const struct {
        int workers;
        bool processes;
    } handoffs[] = {{2, false}, {4, false}, {16, false}, {2, true}, {4, true}};
    for (size_t i = 0; i < 5 && selected(&cfg, "contended_handoff"); i++) {
        errors += bench_floor_adjacent(&cfg, &floor);
        errors += bench_contended_handoff(&cfg, &floor, handoffs[i].workers, handoffs[i].processes);
    }
    static const int fair_waiters[] = {4, 16, 64};
    for (size_t i = 0; i < 3 && selected(&cfg, "fair_order"); i++) {
        errors += bench_floor_adjacent(&cfg, &floor);
        errors += bench_fair_order(&cfg, &floor, fair_waiters[i]);
    }
    static const int rwlock_write_pcts[] = {10, 50};
    for (size_t i = 0; i < 2 && selected(&cfg, "rwlock_mix"); i++) {
        errors += bench_floor_adjacent(&cfg, &floor);
        errors += bench_rwlock_mix(&cfg, &floor, 8, rwlock_write_pcts[i], 200);
    }
    if (selected(&cfg, "floor_script"))
        errors += bench_floor_script(&cfg);
    if (selected(&cfg, "async_pairs")) {
        errors += bench_floor_adjacent(&cfg, &floor);
        errors += bench_async_pairs(&cfg, &floor);
    }
    for (size_t i = 1; i < 3 && selected(&cfg, "client_pair"); i++) {
        errors += bench_floor_adjacent(&cfg, &floor);
        errors += bench_client_pair(&cfg, &floor, pair_threads[i]);
    }
    for (int processes = 0; processes < 2 && selected(&cfg, "hold_10ms"); processes++) {
        errors += bench_floor_adjacent(&cfg, &floor);
        errors += bench_hold_10ms(&cfg, &floor, 4, processes);
    }
    for (size_t i = 0; i < 3 && selected(&cfg, "semaphore_pair"); i++) {
        errors += bench_floor_adjacent(&cfg, &floor);
        errors += bench_semaphore_pair(&cfg, &floor, pair_threads[i]);
    }
    static const int semaphore_workers[] = {2, 4, 16};
    for (size_t i = 0; i < 3 && selected(&cfg, "semaphore_contended"); i++) {
        errors += bench_floor_adjacent(&cfg, &floor);
        errors += bench_semaphore_contended(&cfg, &floor, semaphore_workers[i]);
    }
    static const long long renewal_locks[] = {1000, 10000, 100000};
    for (size_t i = 0; i < (bench_quick() ? 2 : 3) && selected(&cfg, "renewal_scale"); i++)
        errors += bench_renewal_scale(&cfg, renewal_locks[i]);
    static const long long waiters[] = {1000, 10000};
    for (size_t i = 0; i < (bench_quick() ? 1 : 2) && selected(&cfg, "waiters_scale"); i++)
        errors += bench_waiters_scale(&cfg, waiters[i]);
    if (selected(&cfg, "redlock_acquire") && !cfg.redlock_urls[0][0])
        fprintf(stderr,
                "dlock-bench: redlock_acquire skipped: it needs %d independent masters "
                "(--redlock-urls)\n",
                BENCH_REDLOCK_MASTERS);
    for (int fenced = 0; fenced < 2 && cfg.redlock_urls[0][0] && selected(&cfg, "redlock_acquire");
         fenced++) {
        errors += bench_floor_adjacent(&cfg, &floor);
        errors += bench_redlock_acquire(&cfg, &floor, fenced);
    }
    for (size_t i = 0; i < 3 && selected(&cfg, "naive"); i++) {
        errors += bench_floor_adjacent(&cfg, &floor);
        errors += bench_naive_pair(&cfg, &floor, pair_threads[i]);
    }
    for (size_t i = 0; i < 5 && selected(&cfg, "naive"); i++) {
        errors += bench_floor_adjacent(&cfg, &floor);
        errors += bench_naive_contend(&cfg, &floor, "contended_handoff", handoffs[i].workers,
                                      handoffs[i].processes, 0);
    }
    if (selected(&cfg, "naive")) {
        errors += bench_floor_adjacent(&cfg, &floor);
        errors += bench_naive_contend(&cfg, &floor, "hold_10ms", 4, false, 10000);
    }
    for (size_t i = 0; i < 2 && selected(&cfg, "layout_floor"); i++) {
        errors += bench_floor_adjacent(&cfg, &floor);
        errors += bench_layout_floor_pair(&cfg, &floor, pair_threads[i]);
    }
    if (errors)
        fprintf(stderr, "dlock-bench: %lld error(s), see the JSON's \"errors\"\n", errors);
    return errors ? 1 : 0;
}
