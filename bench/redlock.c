/* SPDX-License-Identifier: MIT */
/* redlock.c — redlock_acquire: what a RedLock acquire costs next to what it is made of.
 *
 * Five clients, one per independent master (--redlock-urls), each with one member lock of
 * the same name; the RedLock (dlock_redlock_new, quorum 3) over them. One thread loops for
 * the duration, and each iteration measures, back to back so all four see the same
 * machine state:
 *
 *   client ping      dlock_client_ping on member 0's client: the blocking face's floor
 *   one lock         member 0 alone: try_acquire(wait 0) timed, then released
 *   five sequential  the 5 members one after another: the 5 acquires timed together,
 *                    then all released
 *   redlock          the RedLock: try_acquire(wait 0) timed, then released
 *
 * A RedLock sends to every member at once, so a plain one should cost about one round trip
 * (near "one lock") and far less than "five sequential"; a fenced one takes two parallel
 * round trips. It runs once with plain members (dlock_lock_new) and once with fenced ones
 * (dlock_fencedlock_new). Every lease is explicit (BENCH_LEASE_MS): no watchdog runs. */
#include <math.h>
#include <stdio.h>

#include "bench.h"
#include "dlock.h"

#define REDLOCK_QUORUM (BENCH_REDLOCK_MASTERS / 2 + 1)
#define REDLOCK_WARMUP 20
#define REDLOCK_MAX_ERRORS 1000 /* a run that keeps failing stops instead of spinning */

/* What one run owns; freed composite first, then members, then clients (each must
 * outlive what was made from it). */
typedef struct redlock_rig {
    dlock_client *clients[BENCH_REDLOCK_MASTERS];
    dlock_lock *members[BENCH_REDLOCK_MASTERS];
    dlock_lock *redlock;
} redlock_rig;

/* The four latencies of one run, one sample of each per iteration. */
typedef struct redlock_samples {
    bench_samples client_ping, one_lock, five_sequential, redlock;
} redlock_samples;

/* Counts and describes a failed call (whom: the measurement, or "setup"; what: the call);
 * true if rc is DLOCK_OK. */
static bool call_ok(const char *whom, const char *what, int rc, long long *errors) {
    if (rc == DLOCK_OK)
        return true;
    fprintf(stderr, "dlock-bench: redlock_acquire: %s: %s: %s (%s)\n", whom, what,
            dlock_err_name(rc), dlock_last_error());
    (*errors)++;
    return false;
}

static int rig_open(const bench_config *cfg, bool fenced, redlock_rig *rig, long long *errors) {
    char name[128];
    snprintf(name, sizeof(name), "dlock-bench:%s:redlock:%d", cfg->run_tag, fenced);
    for (int i = 0; i < BENCH_REDLOCK_MASTERS; i++) {
        dlock_options o;
        dlock_options_init(&o);
        o.url = cfg->redlock_urls[i];
        if (!call_ok("setup", "dlock_client_new", dlock_client_new(&o, &rig->clients[i]), errors))
            return -1;
        int rc = fenced ? dlock_fencedlock_new(rig->clients[i], name, &rig->members[i])
                        : dlock_lock_new(rig->clients[i], name, &rig->members[i]);
        if (!call_ok("setup", fenced ? "dlock_fencedlock_new" : "dlock_lock_new", rc, errors))
            return -1;
    }
    int rc = dlock_redlock_new(rig->members, BENCH_REDLOCK_MASTERS, &rig->redlock);
    return call_ok("setup", "dlock_redlock_new", rc, errors) ? 0 : -1;
}

static void rig_close(redlock_rig *rig) {
    dlock_lock_free(rig->redlock);
    for (int i = 0; i < BENCH_REDLOCK_MASTERS; i++)
        dlock_lock_free(rig->members[i]);
    for (int i = 0; i < BENCH_REDLOCK_MASTERS; i++)
        dlock_client_free(rig->clients[i]);
}

static void samples_free(redlock_samples *s) {
    bench_samples_free(&s->client_ping);
    bench_samples_free(&s->one_lock);
    bench_samples_free(&s->five_sequential);
    bench_samples_free(&s->redlock);
}

static void timed_ping(dlock_client *client, bench_samples *samples, long long *errors) {
    int64_t t0 = bench_now_ns();
    if (call_ok("client ping", "dlock_client_ping", dlock_client_ping(client), errors) &&
        bench_samples_push(samples, bench_now_ns() - t0) != 0)
        (*errors)++;
}

/* Takes locks[0..n) one after another (wait 0: one attempt each), timing the n acquires
 * together, then releases what it took. Samples only when all n were taken. whom names
 * the measurement in error messages. */
static void timed_acquire(const char *whom, dlock_lock *const *locks, int n, bench_samples *samples,
                          long long *errors) {
    int64_t t0 = bench_now_ns();
    int taken = 0;
    while (taken < n && call_ok(whom, "try_acquire",
                                dlock_lock_try_acquire(locks[taken], 0, BENCH_LEASE_MS), errors))
        taken++;
    int64_t elapsed = bench_now_ns() - t0;
    for (int i = 0; i < taken; i++)
        call_ok(whom, "release", dlock_lock_release(locks[i]), errors);
    if (taken == n && bench_samples_push(samples, elapsed) != 0)
        (*errors)++;
}

static void one_iteration(redlock_rig *rig, redlock_samples *s, long long *errors) {
    timed_ping(rig->clients[0], &s->client_ping, errors);
    timed_acquire("one lock", rig->members, 1, &s->one_lock, errors);
    timed_acquire("five sequential", rig->members, BENCH_REDLOCK_MASTERS, &s->five_sequential,
                  errors);
    timed_acquire("redlock", &rig->redlock, 1, &s->redlock, errors);
}

/* Warms up (connections, scripts loaded, caches), then iterates until the duration ends.
 * Returns the iterations measured. */
static long long run_iterations(const bench_config *cfg, redlock_rig *rig, redlock_samples *s,
                                long long *errors) {
    redlock_samples warmup = {0};
    for (int i = 0; i < REDLOCK_WARMUP; i++)
        one_iteration(rig, &warmup, errors);
    samples_free(&warmup);
    long long iterations = 0;
    int64_t deadline = bench_now_ns() + cfg->duration_ms * 1000000;
    while (bench_now_ns() < deadline && *errors < REDLOCK_MAX_ERRORS) {
        one_iteration(rig, s, errors);
        iterations++;
    }
    bench_samples_sort(&s->client_ping);
    bench_samples_sort(&s->one_lock);
    bench_samples_sort(&s->five_sequential);
    bench_samples_sort(&s->redlock);
    return iterations;
}

/* null in the JSON when either side has no samples (a run that only failed). */
static double ratio(double a, double b) {
    return a > 0 && b > 0 ? a / b : NAN;
}

static void report(const bench_config *cfg, const bench_floor *floor, bool fenced,
                   long long iterations, const redlock_samples *s, long long errors) {
    bench_json_begin(cfg, "redlock_acquire", "dlock");
    bench_json_open("params");
    bench_json_int("masters", BENCH_REDLOCK_MASTERS);
    bench_json_int("quorum", REDLOCK_QUORUM);
    bench_json_bool("fenced", fenced);
    bench_json_int("threads", 1);
    bench_json_int("duration_ms", cfg->duration_ms);
    bench_json_int("lease_ms", BENCH_LEASE_MS);
    char api[200];
    snprintf(api, sizeof(api),
             "dlock_redlock_new over %d %s members (a client per master); "
             "dlock_lock_try_acquire(wait 0, lease %d ms) + dlock_lock_release",
             BENCH_REDLOCK_MASTERS, fenced ? "dlock_fencedlock_new" : "dlock_lock_new",
             BENCH_LEASE_MS);
    bench_json_str("api", api);
    bench_json_close();
    bench_json_open("figures");
    bench_json_int("iterations", iterations);
    bench_json_latency("acquire", &s->redlock);
    double acquire = bench_samples_pct_us(&s->redlock, 0.5);
    double one_lock = bench_samples_pct_us(&s->one_lock, 0.5);
    double five = bench_samples_pct_us(&s->five_sequential, 0.5);
    bench_json_num("client_ping_p50_us", bench_samples_pct_us(&s->client_ping, 0.5));
    bench_json_num("one_lock_acquire_p50_us", one_lock);
    bench_json_num("five_sequential_acquire_p50_us", five);
    bench_json_num("ratio_acquire_p50_to_one_lock_acquire_p50", ratio(acquire, one_lock));
    bench_json_num("ratio_acquire_p50_to_five_sequential_p50", ratio(acquire, five));
    bench_json_floor(floor);
    bench_json_close();
    bench_json_end(errors);
}

long long bench_redlock_acquire(const bench_config *cfg, const bench_floor *floor, bool fenced) {
    long long errors = 0, iterations = 0;
    redlock_rig rig = {0};
    redlock_samples samples = {0};
    if (rig_open(cfg, fenced, &rig, &errors) == 0)
        iterations = run_iterations(cfg, &rig, &samples, &errors);
    report(cfg, floor, fenced, iterations, &samples, errors);
    rig_close(&rig);
    samples_free(&samples);
    return errors;
}
