/* SPDX-License-Identifier: MIT */
/* renewal.c — dlock-bench-renewal: the performance issue's target 6, "100k held leases cost
 * <= 1,000 script calls per period, and the client CPU per period is stated".
 *
 *   dlock-bench-renewal --url URL [--locks N] [--placement TEXT]
 *
 * One client (watchdog_ms 3000: the watchdog renews every 1000 ms, one "period"; the default
 * renew_batch) takes N locks (default 100,000; QUICK=1: 10,000) with DLOCK_WATCHDOG through
 * the async face, WINDOW acquires in flight, and holds them for PERIODS periods. Measured
 * over those periods: the server's EVALSHA + EVAL calls (INFO commandstats: nothing else
 * runs scripts on the server meanwhile) and the client process' CPU (getrusage
 * RUSAGE_SELF: its loop thread does the renewing; the main thread sleeps), each divided by
 * the watchdog ticks in the window (renewals sent / N, from dlock_client_stats). Leases lost (the
 * lost callback) must be 0.
 *
 * Prints one JSON line (workload "renewal_target", bench.h's writer) on stdout, and on
 * stderr the target's line: the calls per period against 1,000 for 100k leases (N / 100
 * for another N), "met" or "missed", and the client CPU per period. Exits 1 when a lease
 * was lost or a call failed, 2 on bad arguments or setup failures. bench/run.sh runs it
 * after dlock-bench, against the same server. */
#include <errno.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench.h"
#include "dlock.h"

#define WATCHDOG_MS 3000
#define PERIOD_MS (WATCHDOG_MS / 3)
#define PERIODS 3
#define WINDOW 1000                    /* async calls in flight at once */
#define TARGET_CALLS_PER_100K 1000     /* the bound, for 100,000 leases */
#define CALL_TIMEOUT_NS 120000000000LL /* every acquire or release done within 120 s */

/* The async calls of one phase: a window of them in flight, a count of the done. */
typedef struct phase {
    sem_t window, done;
    _Atomic long long failed;
    _Atomic int first_error;
} phase;

static _Atomic long long lost;

static void on_lost(dlock_lock *l, uint64_t owner, int reason, void *arg) {
    (void)l, (void)owner, (void)reason, (void)arg;
    atomic_fetch_add(&lost, 1);
}

static void on_done(dlock_lock *l, int status, void *arg) {
    (void)l;
    phase *p = arg;
    if (status != DLOCK_OK && atomic_fetch_add(&p->failed, 1) == 0)
        atomic_store(&p->first_error, status);
    sem_post(&p->window);
    sem_post(&p->done);
}

static void sem_wait_all(sem_t *s) {
    while (sem_wait(s) != 0 && errno == EINTR)
        ;
}

/* Acquires (acquire) or releases every lock, WINDOW at a time. The failures. */
static long long run_phase(dlock_lock **locks, long long n, bool acquire) {
    phase p;
    memset(&p, 0, sizeof(p));
    sem_init(&p.window, 0, WINDOW);
    sem_init(&p.done, 0, 0);
    long long started = 0;
    for (long long i = 0; i < n; i++) {
        sem_wait_all(&p.window);
        int rc = acquire ? dlock_lock_acquire_async(locks[i], 1, 0, DLOCK_WATCHDOG, on_done, &p)
                         : dlock_lock_release_async(locks[i], 1, on_done, &p);
        if (rc == DLOCK_OK) {
            started++;
        } else {
            sem_post(&p.window);
            if (atomic_fetch_add(&p.failed, 1) == 0)
                atomic_store(&p.first_error, rc);
        }
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += CALL_TIMEOUT_NS / 1000000000LL;
    long long done = 0;
    while (done < started) {
        if (sem_timedwait(&p.done, &until) == 0)
            done++;
        else if (errno != EINTR)
            break;
    }
    long long failed = atomic_load(&p.failed) + (started - done);
    if (failed)
        fprintf(stderr, "dlock-bench-renewal: %lld of %lld %s failed (first: %s)\n", failed, n,
                acquire ? "acquires" : "releases",
                atomic_load(&p.first_error) ? dlock_err_name(atomic_load(&p.first_error))
                                            : "timed out");
    if (done < started)
        exit(1); /* callbacks still to come would touch p */
    sem_destroy(&p.window);
    sem_destroy(&p.done);
    return failed;
}

static uint64_t renewals_sent(dlock_client *c) {
    dlock_stats st;
    dlock_stats_init(&st);
    return dlock_client_stats(c, &st) == DLOCK_OK ? st.renewals_sent : 0;
}

static int usage(void) {
    fprintf(stderr, "usage: dlock-bench-renewal --url URL [--locks N] [--placement TEXT]\n");
    return 2;
}

int main(int argc, char **argv) {
    bench_config cfg = {.placement = "not stated"};
    const char *quick = getenv("QUICK");
    long long n = quick && strcmp(quick, "1") == 0 ? 10000 : 100000;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--url") == 0)
            cfg.url = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--locks") == 0)
            n = atoll(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--placement") == 0)
            cfg.placement = argv[++i];
        else
            return usage();
    }
    if (!cfg.url || n <= 0)
        return usage();
    redisContext *admin = bench_redis_connect(cfg.url, &cfg.transport);
    if (!admin || bench_redis_info(admin, "server", "redis_version", cfg.redis_version,
                                   sizeof(cfg.redis_version)) != 0)
        return 2;
    snprintf(cfg.run_tag, sizeof(cfg.run_tag), "%lld", (long long)time(NULL));

    dlock_options o;
    dlock_options_init(&o);
    o.url = cfg.url;
    o.watchdog_ms = WATCHDOG_MS;
    int renew_batch = o.renew_batch;
    dlock_client *c = NULL;
    int rc = dlock_client_new(&o, &c);
    dlock_lock **locks = calloc((size_t)n, sizeof(*locks));
    if (rc != DLOCK_OK || !locks) {
        fprintf(stderr, "dlock-bench-renewal: client: %s (%s)\n", dlock_err_name(rc),
                dlock_last_error());
        return 2;
    }
    for (long long i = 0; i < n; i++) {
        char name[96];
        snprintf(name, sizeof(name), "dlock-bench:%s:renewal-target:%lld", cfg.run_tag, i);
        if (dlock_lock_new(c, name, &locks[i]) != DLOCK_OK ||
            dlock_lock_on_lost(locks[i], on_lost, NULL) != DLOCK_OK)
            return 2;
    }

    long long errors = run_phase(locks, n, true);
    /* The window starts half a period after a tick, so it holds PERIODS whole ticks, each of
     * which sends its calls within milliseconds; the ticks in it are counted all the same
     * (renewals sent / N) and divide the figures. */
    uint64_t sent = renewals_sent(c);
    int64_t give_up = bench_now_ns() + 3LL * PERIOD_MS * 1000000LL;
    while (renewals_sent(c) < sent + (uint64_t)n && bench_now_ns() < give_up)
        bench_sleep_ns(1000000LL);
    bench_sleep_ns(PERIOD_MS / 2 * 1000000LL);
    bench_counters before, after;
    uint64_t sent0 = renewals_sent(c);
    if (bench_counters_read(admin, RUSAGE_SELF, &before) != 0)
        return 2;
    bench_sleep_ns((int64_t)PERIODS * PERIOD_MS * 1000000LL);
    if (bench_counters_read(admin, RUSAGE_SELF, &after) != 0)
        return 2;
    double periods = (double)(renewals_sent(c) - sent0) / (double)n;
    long long lost_now = atomic_load(&lost);
    errors += lost_now + run_phase(locks, n, false);
    if (periods < 1) {
        fprintf(stderr, "dlock-bench-renewal: no renewal in %d periods\n", PERIODS);
        errors++;
    }

    double scripts = (double)(after.evalsha + after.eval - before.evalsha - before.eval) / periods;
    double cpu_ms = (after.client_cpu_us - before.client_cpu_us) / 1000.0 / periods;
    double target = (double)TARGET_CALLS_PER_100K * (double)n / 100000.0;
    bool met = scripts <= target && lost_now == 0;
    bench_json_begin(&cfg, "renewal_target", "dlock");
    bench_json_open("params");
    bench_json_int("locks", n);
    bench_json_int("watchdog_ms", WATCHDOG_MS);
    bench_json_int("period_ms", PERIOD_MS);
    bench_json_int("renew_batch", renew_batch);
    bench_json_str("api", "dlock_lock_acquire_async(owner 1, wait 0, DLOCK_WATCHDOG), "
                          "1000 in flight, one client");
    bench_json_close();
    bench_json_open("figures");
    bench_json_num("periods", periods);
    bench_json_num("scripts_per_period", scripts);
    bench_json_num("target_scripts_per_period", target);
    bench_json_bool("met", met);
    bench_json_num("client_cpu_ms_per_period", cpu_ms);
    bench_json_num("client_cpu_us_per_lease_per_period", cpu_ms * 1000.0 / (double)n);
    bench_json_num("server_cpu_ms_per_period",
                   (after.server_cpu_us - before.server_cpu_us) / 1000.0 / periods);
    bench_json_int("lost", lost_now);
    bench_json_close();
    bench_json_end(errors);
    fprintf(stderr,
            "target 6, renewal: %lld held leases cost %.0f script calls per period (<= %.0f): "
            "%s; client CPU %.1f ms per %d ms period (%.2f us per lease); %lld lost\n",
            n, scripts, target, met ? "met" : "missed", cpu_ms, PERIOD_MS,
            cpu_ms * 1000.0 / (double)n, lost_now);

    for (long long i = 0; i < n; i++)
        dlock_lock_free(locks[i]);
    free(locks);
    dlock_client_free(c);
    redisFree(admin);
    return errors ? 1 : 0;
}
