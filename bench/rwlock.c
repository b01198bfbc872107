/* SPDX-License-Identifier: MIT */
/* rwlock.c — rwlock_mix: T threads over 2 clients (two client ids, as two hosts would be)
 * on ONE read-write lock; each loops acquire, hold hold_us, release for a fixed time, taking
 * the write half with probability write_pct % and the read half otherwise.
 *
 * A section holds the lock for hold_us (a sleep) so that readers do overlap: with no work
 * inside, sections are too short to meet and a read-write lock measures like a mutex. The
 * lease is explicit (BENCH_LEASE_MS): no watchdog, every section is exactly two scripts
 * unless it waits.
 *
 * Figures: sections per second (read and write apart); the acquire latency, from the call
 * to its return, of reads and of writes (a read acquire that finds readers only is one round
 * trip; one that meets a writer, or a waiting writer, waits); how many readers were inside
 * at once (the most, and the mean seen by a reader as it entered); the commands per section.
 * Readers that wait behind a waiting writer (dlock's writer priority) show in the read
 * acquire tail, writers that wait for readers to drain in the write acquire figures. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "bench.h"
#include "dlock.h"

#define RW_CLIENTS 2
#define RW_MAX_THREADS 64
#define RW_MAX_ERRORS 1000

typedef struct rw_shared {
    bench_gate gate;
    _Atomic int readers_inside;
    _Atomic int most_readers_inside;
    _Atomic long long readers_seen_sum; /* readers inside as each reader entered, summed */
    _Atomic long long violations;       /* a writer met another section: must stay 0 */
    _Atomic int writer_inside;
} rw_shared;

typedef struct rw_worker {
    rw_shared *s;
    dlock_rwlock *rw;
    int write_pct;
    int64_t hold_us;
    unsigned seed;
    bench_samples read_acquire, write_acquire;
    int64_t end_ns;
    long long errors;
} rw_worker;

static void count_error(rw_worker *w, const char *what, int rc) {
    fprintf(stderr, "dlock-bench: rwlock_mix %s: %s (%s)\n", what, dlock_err_name(rc),
            dlock_last_error());
    w->errors++;
}

/* One section: acquire (timed), the in-section bookkeeping and hold, release. */
static void one_section(rw_worker *w, bool write, bool measure) {
    rw_shared *s = w->s;
    dlock_lock *l = write ? dlock_rwlock_write(w->rw) : dlock_rwlock_read(w->rw);
    int64_t t0 = bench_now_ns();
    int rc = dlock_lock_acquire(l, BENCH_LEASE_MS);
    int64_t acquired = bench_now_ns();
    if (rc != DLOCK_OK) {
        count_error(w, write ? "write acquire" : "read acquire", rc);
        return;
    }
    if (measure &&
        bench_samples_push(write ? &w->write_acquire : &w->read_acquire, acquired - t0) != 0)
        w->errors++;
    if (write) {
        int none = 0;
        if (!atomic_compare_exchange_strong(&s->writer_inside, &none, 1) ||
            atomic_load(&s->readers_inside) != 0)
            atomic_fetch_add(&s->violations, 1);
    } else {
        int inside = atomic_fetch_add(&s->readers_inside, 1) + 1;
        int most = atomic_load(&s->most_readers_inside);
        while (inside > most &&
               !atomic_compare_exchange_weak(&s->most_readers_inside, &most, inside)) {
        }
        if (measure)
            atomic_fetch_add(&s->readers_seen_sum, inside);
        if (atomic_load(&s->writer_inside) != 0)
            atomic_fetch_add(&s->violations, 1);
    }
    if (w->hold_us > 0)
        bench_sleep_ns(w->hold_us * 1000);
    if (write)
        atomic_store(&s->writer_inside, 0);
    else
        atomic_fetch_sub(&s->readers_inside, 1);
    rc = dlock_lock_release(l);
    if (rc != DLOCK_OK)
        count_error(w, write ? "write release" : "read release", rc);
}

static void *rw_main(void *arg) {
    rw_worker *w = arg;
    one_section(w, false, false); /* warm-up: the connections are hot, the scripts loaded */
    one_section(w, true, false);
    int64_t deadline = bench_gate_wait(&w->s->gate);
    int64_t now = bench_now_ns();
    while (now < deadline && w->errors < RW_MAX_ERRORS) {
        bool write = (int)((unsigned)rand_r(&w->seed) % 100) < w->write_pct;
        one_section(w, write, true);
        now = bench_now_ns();
    }
    w->end_ns = now;
    return NULL;
}

long long bench_rwlock_mix(const bench_config *cfg, const bench_floor *floor, int threads,
                           int write_pct, int64_t hold_us) {
    if (threads < 1 || threads > RW_MAX_THREADS)
        return 1;
    long long errors = 0;
    rw_shared shared = {0};
    rw_worker workers[RW_MAX_THREADS] = {0};
    pthread_t tids[RW_MAX_THREADS];
    dlock_client *clients[RW_CLIENTS] = {0};
    dlock_rwlock *locks[RW_CLIENTS] = {0};
    redisContext *admin = bench_redis_connect(cfg->url, NULL);
    char name[128];
    snprintf(name, sizeof(name), "dlock-bench:%s:rwlock:%d:%d", cfg->run_tag, threads, write_pct);
    bool ready = admin != NULL;
    for (int c = 0; c < RW_CLIENTS && ready; c++) {
        dlock_options o;
        dlock_options_init(&o);
        o.url = cfg->url;
        int rc = dlock_client_new(&o, &clients[c]);
        if (rc == DLOCK_OK)
            rc = dlock_rwlock_new(clients[c], name, &locks[c]);
        if (rc != DLOCK_OK) {
            fprintf(stderr, "dlock-bench: rwlock_mix setup: %s (%s)\n", dlock_err_name(rc),
                    dlock_last_error());
            ready = false;
        }
    }
    if (!ready)
        errors++;
    int started = 0;
    for (int i = 0; ready && i < threads; i++) {
        workers[i] = (rw_worker){.s = &shared,
                                 .rw = locks[i % RW_CLIENTS],
                                 .write_pct = write_pct,
                                 .hold_us = hold_us,
                                 .seed = 0x5eedu + (unsigned)i};
        if (pthread_create(&tids[i], NULL, rw_main, &workers[i]) != 0) {
            errors++;
            break;
        }
        started++;
    }
    bench_counters before = {0}, after = {0};
    if (bench_gate_ready(&shared.gate, started, 30000) != 0)
        errors++;
    if (admin && bench_counters_read(admin, RUSAGE_SELF, &before) != 0)
        errors++;
    int64_t start = bench_gate_open(&shared.gate, started == threads ? cfg->duration_ms : 0);
    bench_samples reads = {0}, writes = {0};
    int64_t end = start;
    for (int i = 0; i < started; i++) {
        pthread_join(tids[i], NULL);
        errors += workers[i].errors;
        if (bench_samples_append(&reads, &workers[i].read_acquire) != 0 ||
            bench_samples_append(&writes, &workers[i].write_acquire) != 0)
            errors++;
        if (workers[i].end_ns > end)
            end = workers[i].end_ns;
    }
    if (admin && bench_counters_read(admin, RUSAGE_SELF, &after) != 0)
        errors++;
    long long violations = atomic_load(&shared.violations);
    if (violations) {
        fprintf(stderr, "dlock-bench: rwlock_mix: %lld exclusion violations\n", violations);
        errors += violations;
    }
    bench_samples_sort(&reads);
    bench_samples_sort(&writes);
    double seconds = (double)(end - start) / 1e9;
    long long sections = (long long)(reads.n + writes.n);

    bench_json_begin(cfg, "rwlock_mix", "dlock");
    bench_json_open("params");
    bench_json_int("threads", threads);
    bench_json_int("clients", RW_CLIENTS);
    bench_json_int("write_pct", write_pct);
    bench_json_int("hold_us", hold_us);
    bench_json_int("duration_ms", cfg->duration_ms);
    bench_json_int("lease_ms", BENCH_LEASE_MS);
    bench_json_bool("watchdog", false);
    bench_json_str("api", "dlock_rwlock read/write halves: dlock_lock_acquire(lease 30000 ms) + "
                          "dlock_lock_release");
    bench_json_close();
    bench_json_open("figures");
    bench_json_int("sections", sections);
    bench_json_num("sections_per_s", seconds > 0 ? (double)sections / seconds : 0);
    bench_json_num("reads_per_s", seconds > 0 ? (double)reads.n / seconds : 0);
    bench_json_num("writes_per_s", seconds > 0 ? (double)writes.n / seconds : 0);
    bench_json_latency("read_acquire", &reads);
    bench_json_latency("write_acquire", &writes);
    bench_json_int("most_readers_inside", atomic_load(&shared.most_readers_inside));
    bench_json_num("mean_readers_inside_at_entry",
                   reads.n ? (double)atomic_load(&shared.readers_seen_sum) / (double)reads.n : NAN);
    bench_json_int("violations", violations);
    bench_json_floor(floor);
    bench_json_num("ratio_read_acquire_p50_to_ping_p50",
                   floor->ping_p50_us > 0 ? bench_samples_pct_us(&reads, 0.5) / floor->ping_p50_us
                                          : NAN);
    bench_json_counters(&before, &after, (double)sections, "section", true);
    bench_json_close();
    bench_json_end(errors);

    for (int c = 0; c < RW_CLIENTS; c++) {
        dlock_rwlock_free(locks[c]);
        dlock_client_free(clients[c]);
    }
    for (int i = 0; i < started; i++) {
        bench_samples_free(&workers[i].read_acquire);
        bench_samples_free(&workers[i].write_acquire);
    }
    bench_samples_free(&reads);
    bench_samples_free(&writes);
    if (admin)
        redisFree(admin);
    return errors;
}
