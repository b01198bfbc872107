/* SPDX-License-Identifier: MIT */
/* pair.c — uncontended_pair: T threads share one dlock client; each loops
 * dlock_lock_acquire + dlock_lock_release on a lock name of its own for a fixed time.
 *
 * The lease is explicit (BENCH_LEASE_MS), so the watchdog neither registers nor renews
 * anything: a pair is exactly two scripts, and its floor is two PING round trips. With
 * T > 1 the threads' commands share the client's one connection (pipelined by the client's
 * loop), so pairs/s shows how the client scales toward the server's script ceiling.
 *
 * Beside the pairs, dlock_client_ping p50 (same blocking path, no script) is reported, so
 * the ratio to the floor can be split into "the path" and "the scripts". */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "bench.h"
#include "dlock.h"

#define PAIR_WARMUP 20
#define PAIR_MAX_ERRORS 1000 /* a thread that keeps failing stops instead of spinning */
#define CLIENT_PINGS 2000

/* dlock_client_ping, one at a time from one thread: one round trip through the blocking
 * face (submit queue, loop thread, back), the same path as each half of a pair but without
 * a script. Tells the cost of that path apart from the scripts'. */
static void measure_client_ping(dlock_client *client, bench_samples *rtt, long long *errors) {
    for (int i = 0; i < CLIENT_PINGS; i++) {
        int64_t t0 = bench_now_ns();
        int rc = dlock_client_ping(client);
        if (rc != DLOCK_OK) {
            (*errors)++;
            return;
        }
        if (bench_samples_push(rtt, bench_now_ns() - t0) != 0)
            (*errors)++;
    }
    bench_samples_sort(rtt);
}

typedef struct pair_worker {
    dlock_lock *lock;
    bench_gate *gate;
    bench_samples latency;
    int64_t end_ns;
    long long errors;
} pair_worker;

static int one_pair(dlock_lock *lock, long long *errors) {
    int rc = dlock_lock_acquire(lock, BENCH_LEASE_MS);
    if (rc != DLOCK_OK) {
        fprintf(stderr, "dlock-bench: acquire: %s (%s)\n", dlock_err_name(rc), dlock_last_error());
        (*errors)++;
        return rc;
    }
    rc = dlock_lock_release(lock);
    if (rc != DLOCK_OK) {
        fprintf(stderr, "dlock-bench: release: %s (%s)\n", dlock_err_name(rc), dlock_last_error());
        (*errors)++;
    }
    return rc;
}

static void *pair_main(void *arg) {
    pair_worker *w = arg;
    for (int i = 0; i < PAIR_WARMUP; i++)
        one_pair(w->lock, &w->errors);
    int64_t deadline = bench_gate_wait(w->gate);
    int64_t now = bench_now_ns();
    while (now < deadline && w->errors < PAIR_MAX_ERRORS) {
        int rc = one_pair(w->lock, &w->errors);
        int64_t end = bench_now_ns();
        if (rc == DLOCK_OK && bench_samples_push(&w->latency, end - now) != 0)
            w->errors++;
        now = end;
    }
    w->end_ns = now;
    return NULL;
}

long long bench_uncontended_pair(const bench_config *cfg, const bench_floor *floor, int threads) {
    long long errors = 0;
    bench_gate gate = {0};
    pair_worker *workers = calloc((size_t)threads, sizeof(*workers));
    pthread_t *tids = calloc((size_t)threads, sizeof(*tids));
    redisContext *admin = bench_redis_connect(cfg->url, NULL);
    dlock_options o;
    dlock_options_init(&o);
    o.url = cfg->url;
    dlock_client *client = NULL;
    int rc = workers && tids && admin ? dlock_client_new(&o, &client) : DLOCK_ENOMEM;
    if (rc != DLOCK_OK) {
        fprintf(stderr, "dlock-bench: client: %s (%s)\n", dlock_err_name(rc), dlock_last_error());
        errors++;
    }
    bench_samples client_rtt = {0};
    if (client)
        measure_client_ping(client, &client_rtt, &errors);
    int started = 0;
    for (int i = 0; client && i < threads; i++) {
        char name[128];
        snprintf(name, sizeof(name), "dlock-bench:%s:pair:%d:%d", cfg->run_tag, threads, i);
        workers[i].gate = &gate;
        if ((rc = dlock_lock_new(client, name, &workers[i].lock)) != DLOCK_OK ||
            pthread_create(&tids[i], NULL, pair_main, &workers[i]) != 0) {
            errors++;
            break;
        }
        started++;
    }
    bench_counters before = {0}, after = {0};
    dlock_stats spins_before, spins_after;
    dlock_stats_init(&spins_before);
    dlock_stats_init(&spins_after);
    if (bench_gate_ready(&gate, started, 30000) != 0)
        errors++;
    if (admin && bench_counters_read(admin, RUSAGE_SELF, &before) != 0)
        errors++;
    if (client)
        dlock_client_stats(client, &spins_before);
    int64_t start = bench_gate_open(&gate, started == threads ? cfg->duration_ms : 0);
    bench_samples latency = {0};
    int64_t end = start;
    for (int i = 0; i < started; i++) {
        pthread_join(tids[i], NULL);
        errors += workers[i].errors;
        if (bench_samples_append(&latency, &workers[i].latency) != 0)
            errors++;
        if (workers[i].end_ns > end)
            end = workers[i].end_ns;
    }
    if (admin && bench_counters_read(admin, RUSAGE_SELF, &after) != 0)
        errors++;
    if (client)
        dlock_client_stats(client, &spins_after);
    bench_samples_sort(&latency);
    double seconds = (double)(end - start) / 1e9;
    double p50 = bench_samples_pct_us(&latency, 0.5);

    bench_json_begin(cfg, "uncontended_pair", "dlock");
    bench_json_open("params");
    bench_json_int("threads", threads);
    bench_json_int("clients", 1);
    bench_json_int("duration_ms", cfg->duration_ms);
    bench_json_int("lease_ms", BENCH_LEASE_MS);
    bench_json_bool("watchdog", false);
    bench_json_str("api", "dlock_lock_acquire(lease 30000 ms) + dlock_lock_release");
    bench_json_close();
    bench_json_open("figures");
    bench_json_int("pairs", (long long)latency.n);
    bench_json_num("pairs_per_s", seconds > 0 ? (double)latency.n / seconds : 0);
    bench_json_latency("pair", &latency);
    bench_json_floor(floor);
    bench_json_num("ratio_pair_p50_to_2x_ping_p50",
                   floor->ping_p50_us > 0 ? p50 / (2 * floor->ping_p50_us) : NAN);
    double client_p50 = bench_samples_pct_us(&client_rtt, 0.5);
    bench_json_num("client_ping_p50_us", client_p50);
    bench_json_num("ratio_pair_p50_to_2x_client_ping_p50",
                   client_p50 > 0 ? p50 / (2 * client_p50) : NAN);
    bench_json_counters(&before, &after, (double)latency.n, "pair", true);
    /* the lone caller's spin (dlock_options.reply_spin_us): how often a wait spun, how
     * often its reply came while it did, and the CPU time it cost, per pair */
    double pairs = latency.n > 0 ? (double)latency.n : NAN;
    bench_json_num("reply_spins_per_pair",
                   (double)(spins_after.reply_spins - spins_before.reply_spins) / pairs);
    bench_json_num("reply_spin_hits_per_pair",
                   (double)(spins_after.reply_spin_hits - spins_before.reply_spin_hits) / pairs);
    bench_json_num("reply_spin_us_per_pair",
                   (double)(spins_after.reply_spin_us - spins_before.reply_spin_us) / pairs);
    bench_json_close();
    bench_json_end(errors);

    for (int i = 0; i < threads && workers; i++) {
        dlock_lock_free(workers[i].lock);
        bench_samples_free(&workers[i].latency);
    }
    dlock_client_free(client);
    if (admin)
        redisFree(admin);
    bench_samples_free(&latency);
    bench_samples_free(&client_rtt);
    free(workers);
    free(tids);
    return errors;
}
