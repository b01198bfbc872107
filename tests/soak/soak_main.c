/* SPDX-License-Identifier: MIT */
/* soak_main.c - dlock_soak: dlock run as a service runs, for SOAK_S seconds, with faults.
 *
 * Phases: start a private redis-server (tests/support's redis_fixture) and three clients
 * on it (two blocking, one on the soak's own libev loop), and, with SOAK_TOPOLOGY, a
 * Sentinel set and a Cluster with one blocking client each; work for SOAK_S with faults on a
 * schedule, sampling every SOAK_SAMPLE_S; stop the work and wait until every call has
 * returned and the gauges are idle; free the clients and check that the process's
 * descriptors and threads are back where they were before them, and that no lock is left
 * in Redis once the leases of holds a fault cut off have run out. Then the verdict: exit 1
 * naming what failed (a series that trends up, a gauge not at its idle value, an overlap,
 * a lost lease no fault explains, an outcome no fault explains, leftovers), else 0.
 *
 * Environment (all optional):
 *   SOAK_S          seconds of work (600)
 *   SOAK_SAMPLE_S   seconds between samples (5; 1 for runs under 120 s)
 *   SOAK_WARMUP_S   samples before it are not judged (a sixth of SOAK_S, at least 10)
 *   SOAK_FAULT_S    seconds between faults (30; 0: none)
 *   SOAK_THREADS    blocking threads per client (3)
 *   SOAK_AGENTS     async agents (4)
 *   SOAK_NAMES      names per kind (16, at most 256)
 *   SOAK_KINDS      the kinds to run, comma-separated (all): lock, fenced, fair, spin, read,
 *                   write, semaphore, permits, latch, multilock, redlock
 *   SOAK_TOPOLOGY   1: also run workers on a Sentinel and on a Cluster (sentinel_fixture,
 *                   cluster_fixture), with failovers and resharding among the faults,
 *                   when redis-sentinel and the cluster can be started (1); 0: not
 *   SOAK_PACE_MS    pause between one worker's operations (20)
 *   SOAK_OUT        directory for samples.csv, faults.csv, lost.csv (.)
 *   SOAK_SELFTEST   leak | overlap | lost: inject a defect the run must fail on
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cluster_fixture.h"
#include "sentinel_fixture.h"
#include "soak.h"
#include "soak_series.h"
#include "test_util.h"

/* How long stopping and the checks after it may take: the 60 s for the gauges, 10 + 10 s
 * for descriptors and threads, 45 s for the keys, and the calls that were running. */
#define STOP_BUDGET_S 300

soak_config soak_cfg;
atomic_bool soak_stopping;

static struct timespec started;

int64_t soak_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)(ts.tv_sec - started.tv_sec) * 1000 + (ts.tv_nsec - started.tv_nsec) / 1000000;
}

void soak_sleep_ms(int64_t ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (ms > 0 && nanosleep(&ts, &ts) != 0) {
    }
}

uint32_t soak_rand(void) {
    static _Thread_local uint32_t state;
    if (state == 0)
        state = (uint32_t)(uintptr_t)&state ^ (uint32_t)soak_now_ms() ^ 0x9e3779b9u;
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return state;
}

const char *soak_kind_name(enum soak_kind k) {
    static const char *const names[SOAK_KINDS] = {"lock",  "fenced",    "fair",      "spin",
                                                  "read",  "write",     "semaphore", "permits",
                                                  "latch", "multilock", "redlock"};
    return names[k];
}

enum soak_kind soak_next_kind(long *n) {
    for (;;) {
        enum soak_kind k = (enum soak_kind)((*n)++ % SOAK_KINDS);
        if (soak_cfg.kinds & (1u << k))
            return k;
    }
}

/* SOAK_KINDS: "lock,multilock" -> their bits; unset or empty: every kind. */
static unsigned parse_kinds(const char *v) {
    if (!v || !*v)
        return (1u << SOAK_KINDS) - 1;
    unsigned mask = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        int k = 0;
        while (k < SOAK_KINDS && strcmp(tok, soak_kind_name((enum soak_kind)k)) != 0)
            k++;
        if (k == SOAK_KINDS) {
            fprintf(stderr, "soak: SOAK_KINDS: no kind %s\n", tok);
            exit(2);
        }
        mask |= 1u << k;
    }
    return mask;
}

static int64_t env_int(const char *name, int64_t dflt, int64_t lo, int64_t hi) {
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    long long n = strtoll(v, &end, 10);
    if (*end || n < lo || n > hi) {
        fprintf(stderr, "soak: %s=%s: want an integer from %lld to %lld\n", name, v, (long long)lo,
                (long long)hi);
        exit(2);
    }
    return n;
}

static void configure(void) {
    soak_cfg.run_ms = env_int("SOAK_S", 600, 10, 7 * 24 * 3600) * 1000;
    int64_t sample_default = soak_cfg.run_ms < 120000 ? 1 : 5;
    soak_cfg.sample_ms = env_int("SOAK_SAMPLE_S", sample_default, 1, 3600) * 1000;
    int64_t warmup_default = soak_cfg.run_ms / 6000 < 10 ? 10 : soak_cfg.run_ms / 6000;
    soak_cfg.warmup_ms = env_int("SOAK_WARMUP_S", warmup_default, 0, 7 * 24 * 3600) * 1000;
    soak_cfg.fault_ms = env_int("SOAK_FAULT_S", 30, 0, 3600) * 1000;
    soak_cfg.threads = (int)env_int("SOAK_THREADS", 3, 1, 64);
    soak_cfg.agents = (int)env_int("SOAK_AGENTS", 4, 1, 256);
    soak_cfg.names = (int)env_int("SOAK_NAMES", 16, 2, SOAK_MAX_NAMES / 3);
    soak_cfg.kinds = parse_kinds(getenv("SOAK_KINDS"));
    soak_cfg.topology = env_int("SOAK_TOPOLOGY", 1, 0, 1) == 1;
    soak_cfg.pace_ms = env_int("SOAK_PACE_MS", 20, 0, 60000);
    soak_cfg.watchdog_ms = 6000;
    soak_cfg.timeout_ms = 3000;
    soak_cfg.retry_ms = 500;
    const char *s = getenv("SOAK_SELFTEST");
    soak_cfg.selftest = s ? s : "";
    if (*soak_cfg.selftest && strcmp(s, "leak") && strcmp(s, "overlap") && strcmp(s, "lost")) {
        fprintf(stderr, "soak: SOAK_SELFTEST=%s: want leak, overlap or lost\n", s);
        exit(2);
    }
    const char *out = getenv("SOAK_OUT");
    soak_cfg.out_dir = out && *out ? out : ".";
}

/* Lock keys left in Redis (the objects that hold state only while held: not the
 * semaphores, permits and latches, nor the fenced locks' token counters). */
static long lock_keys_left(redis_fixture *redis) {
    static const char *const patterns[] = {"soak:lock:*", "soak:fenced:*", "soak:fair:*",
                                           "soak:spin:*", "soak:rw:*",     "soak:red:*",
                                           "soak:long:*", "*{soak:fair:*"};
    long n = 0;
    for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++) {
        redisReply *r = redis_fixture_cmd(redis, "KEYS %s", patterns[i]);
        if (r && r->type == REDIS_REPLY_ARRAY)
            n += (long)r->elements;
        if (r)
            freeReplyObject(r);
    }
    return n;
}

/* The Sentinel set and the Cluster, when they can be started: a run without them says so
 * and goes on. Every admin connection the faults will use is opened now, so that opening
 * one later does not count as a descriptor leak. */
static void start_topology(soak_targets *t) {
    if (sentinel_fixture_start(NULL, &t->sentinel) != 0) {
        printf("soak: no Sentinel (see above): no sentinel-failover faults\n");
        t->sentinel = NULL;
    }
    for (int i = 0; t->sentinel && i < SENTINEL_FIXTURE_NODES; i++)
        redis_fixture_int(sentinel_fixture_node(t->sentinel, i), "DBSIZE");
    if (cluster_fixture_start(NULL, &t->cluster) != 0) {
        printf("soak: no Cluster (see above): no cluster-reshard faults\n");
        t->cluster = NULL;
    }
    for (int i = 0; t->cluster && i < CLUSTER_FIXTURE_NODES; i++)
        redis_fixture_int(cluster_fixture_node(t->cluster, i), "DBSIZE");
    t->cluster_name_base = 2 * soak_cfg.names;
    fflush(stdout);
}

static int topology_client(const char *url, const dlock_options *base, dlock_client **out) {
    dlock_options o = *base;
    o.url = url;
    int rc = dlock_client_new(&o, out);
    if (rc != DLOCK_OK)
        fprintf(stderr, "soak: client of %s: %s\n", url, dlock_err_name(rc));
    return rc == DLOCK_OK ? 0 : -1;
}

/* Polls cond for up to budget_ms; true once it holds. */
#define WAIT_UNTIL(cond, budget_ms)                                                                \
    ({                                                                                             \
        int64_t until_ = soak_now_ms() + (budget_ms);                                              \
        while (!(cond) && soak_now_ms() < until_)                                                  \
            soak_sleep_ms(100);                                                                    \
        (cond);                                                                                    \
    })

int main(void) {
    clock_gettime(CLOCK_MONOTONIC, &started);
    configure();
    soak_marks_init();
    if (soak_series_init() != 0)
        return 2;
    printf("soak: %llds of work, a sample every %llds (warm-up %llds), a fault every %llds, "
           "%d threads x 2 clients + %d async agents, %d names per kind%s%s\n",
           (long long)(soak_cfg.run_ms / 1000), (long long)(soak_cfg.sample_ms / 1000),
           (long long)(soak_cfg.warmup_ms / 1000), (long long)(soak_cfg.fault_ms / 1000),
           soak_cfg.threads, soak_cfg.agents, soak_cfg.names,
           *soak_cfg.selftest ? ", SELFTEST " : "", soak_cfg.selftest);
    fflush(stdout);

    /* The start may hang too (a server that never answers): the same watchdog guards it. Its
     * thread starts here, before the threads are counted. */
    test_watchdog_arm(STOP_BUDGET_S, "soak: the start (fixtures and clients)");
    redis_fixture *redis = NULL;
    if (redis_fixture_start(NULL, &redis) != 0)
        return 2;
    soak_targets targets = {.redis = redis};
    if (soak_cfg.topology)
        start_topology(&targets);
    long fds_before = soak_count_fds(), threads_before = soak_count_threads();

    dlock_options o;
    dlock_options_init(&o);
    o.url = redis_fixture_unix_url(redis);
    o.watchdog_ms = soak_cfg.watchdog_ms;
    o.timeout_ms = soak_cfg.timeout_ms;
    o.retry_delay_ms = soak_cfg.retry_ms;
    dlock_client *clients[SOAK_CLIENTS] = {NULL, NULL, NULL};
    for (int i = 0; i < 2; i++) {
        int rc = dlock_client_new(&o, &clients[i]);
        if (rc != DLOCK_OK) {
            fprintf(stderr, "soak: client %d: %s\n", i + 1, dlock_err_name(rc));
            return 2;
        }
    }
    if (soak_async_start(&o, clients[0]) != 0)
        return 2;
    clients[2] = soak_async_client();

    if (targets.sentinel &&
        topology_client(sentinel_fixture_url(targets.sentinel), &o, &clients[3]) != 0)
        return 2;
    if (targets.cluster) {
        char url[512];
        snprintf(url, sizeof url, "redis-cluster://%s", cluster_fixture_hosts(targets.cluster));
        if (topology_client(url, &o, &clients[4]) != 0)
            return 2;
    }
    if (soak_faults_start(&targets) != 0 ||
        soak_blocking_start(clients[0], clients[1], 0, "blocking") != 0 ||
        (clients[3] && soak_blocking_start(clients[3], clients[3], soak_cfg.names, "sentinel")) ||
        (clients[4] &&
         soak_blocking_start(clients[4], clients[4], targets.cluster_name_base, "cluster")))
        return 2;

    test_watchdog_disarm();

    /* The work phase. */
    int64_t work_start = soak_now_ms();
    for (int64_t next = work_start; soak_now_ms() - work_start < soak_cfg.run_ms;
         next += soak_cfg.sample_ms) {
        while (soak_now_ms() < next)
            soak_sleep_ms(50);
        if (!strcmp(soak_cfg.selftest, "leak") && open("/dev/null", O_RDONLY) < 0)
            perror("soak: selftest leak");
        soak_series_sample(soak_now_ms() - work_start, clients, redis, false);
        if ((next - work_start) % 60000 < soak_cfg.sample_ms) {
            printf("soak: %4llds, %ld ops, %ld faults, %ld overlaps, %ld leases lost\n",
                   (long long)((soak_now_ms() - work_start) / 1000), soak_ops_total(),
                   soak_faults_injected(), soak_overlaps(), soak_lost_total());
            fflush(stdout);
        }
    }

    /* The work ends: nothing new starts, what runs finishes. A call that never returns (a
     * waiter hung, a callback lost) would keep the soak here: the watchdog then ends it,
     * failing, with every server it started killed. */
    test_watchdog_arm(STOP_BUDGET_S, "soak: the work's end (a call that never returned)");
    atomic_store(&soak_stopping, true);
    soak_faults_stop();
    soak_blocking_join();
    soak_async_quiesce();
    bool idle = WAIT_UNTIL(soak_series_gauges_idle(clients), 60000);
    soak_series_sample(soak_now_ms() - work_start, clients, redis, true);

    soak_async_finish();
    clients[2] = NULL;
    for (int i = 0; i < SOAK_CLIENTS; i++)
        dlock_client_free(clients[i]);
    bool fds_back = WAIT_UNTIL(soak_count_fds() <= fds_before, 10000);
    bool threads_back = WAIT_UNTIL(soak_count_threads() <= threads_before, 10000);
    /* Holds a fault cut off expire by their lease: 30 s at most. */
    bool keys_gone = WAIT_UNTIL(lock_keys_left(redis) == 0, 45000);

    test_watchdog_disarm();

    /* The verdict. */
    int failing = soak_series_judge();
    printf("\n");
    soak_faults_report(soak_cfg.out_dir);
    printf("\n%-10s %9s %9s %9s %9s %9s %9s %9s\n", "kind", "ok", "timedout", "conn", "lost",
           "notowner", "other", "async ok");
    long ops = 0;
    for (int k = 0; k < SOAK_KINDS; k++) {
        long all = 0, async_ok = soak_outcome_count(k, 1, DLOCK_OK);
        for (int f = 0; f < 2; f++)
            for (int s = 0; s < SOAK_STATUSES; s++)
                all += soak_outcome_count(k, f, -s);
        long sum[5] = {0};
        static const int shown[5] = {DLOCK_OK, DLOCK_ETIMEDOUT, DLOCK_ECONN, DLOCK_ELOST,
                                     DLOCK_ENOTOWNER};
        for (int i = 0; i < 5; i++)
            sum[i] = soak_outcome_count(k, 0, shown[i]) + soak_outcome_count(k, 1, shown[i]);
        long other = all - sum[0] - sum[1] - sum[2] - sum[3] - sum[4];
        ops += all;
        printf("%-10s %9ld %9ld %9ld %9ld %9ld %9ld %9ld\n", soak_kind_name(k), sum[0], sum[1],
               sum[2], sum[3], sum[4], other, async_ok);
    }

    long overlaps = soak_overlaps(), unexplained = soak_lost_unexplained();
    long bad_overlaps = soak_overlaps_unexplained(soak_loss_grace_ms());
    long bad = soak_bad_outcomes(), left = keys_gone ? 0 : lock_keys_left(redis);
    printf("\noperations %ld, faults %ld, leases lost %ld (%ld not explained by a fault), "
           "overlaps %ld (%ld not after a lease lost on that name)\n",
           ops, soak_faults_injected(), soak_lost_total(), unexplained, overlaps, bad_overlaps);
    int verdict = 0;
    if (failing) {
        printf("FAIL: %d series (marked FAIL in the table): %s\n", failing, soak_series_failing());
        verdict = 1;
    }
    if (!idle) {
        printf("FAIL: the gauges did not return to idle within 60 s of the work's end\n");
        verdict = 1;
    }
    if (bad_overlaps) {
        printf("FAIL: %ld overlaps not after a lease lost on that name; the first overlap: %s\n",
               bad_overlaps, soak_first_overlap());
        verdict = 1;
    }
    if (unexplained) {
        printf("FAIL: %ld leases lost that no fault explains (lost.csv)\n", unexplained);
        verdict = 1;
    }
    if (bad) {
        printf("FAIL: %ld outcomes no fault explains; the first: %s\n", bad, soak_first_bad());
        verdict = 1;
    }
    if (!fds_back || !threads_back) {
        printf("FAIL: after the clients were freed: %ld descriptors (%ld before them), %ld "
               "threads (%ld before)\n",
               soak_count_fds(), fds_before, soak_count_threads(), threads_before);
        verdict = 1;
    }
    if (left) {
        printf("FAIL: %ld lock keys left in Redis 45 s after the clients were freed\n", left);
        verdict = 1;
    }
    printf("%s\n", verdict ? "soak: FAIL" : "soak: PASS");
    soak_series_close();
    cluster_fixture_stop(targets.cluster);
    sentinel_fixture_stop(targets.sentinel);
    redis_fixture_stop(redis);
    return verdict;
}
