/* SPDX-License-Identifier: MIT */
/* fair.c — fair_order: P waiters queue on ONE fair lock (dlock_fairlock_new) and must get
 * it in the order they queued.
 *
 * P threads, alternating between two clients (two client ids, two connections). A round:
 * the main thread takes the lock (holder, a third client), then lets the waiters go one
 * at a time, each only once the one before it shows in the queue list in Redis (LLEN on a
 * plain connection), so the arrival order is known; the queue is read back once (LRANGE)
 * as the order to be served in. Then the holder releases and every waiter, in turn,
 * acquires, notes its place (the next index of a shared log, taken inside the section, so
 * the lock orders the log), and releases at once. Figures:
 *
 *   order_violations  places where the waiter served differs from the queue read back
 *                     (must be 0);
 *   hand-off          next.acquire_ns - previous.release_ns (the release returning in one
 *                     thread to the acquire returning in the next, as contended_handoff;
 *                     the first of a round counts from the holder's release);
 *   queue_per_waiter  how long one waiter took to show in the queue (thread wake-up,
 *                     first attempt, the LLEN poll);
 *   per hand-off      EVALSHA, PUBLISH, SUBSCRIBE calls (INFO commandstats) over the
 *                     serving phases only, and CPU.
 *
 * Rounds repeat until --duration-ms has passed (at least one). The lease is explicit
 * (BENCH_LEASE_MS): no watchdog renewal in the counts; the clients' fair_wait_ms is the
 * default (5 s), so a waiter refreshes its place every 1.67 s while it waits. */
#include <math.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench.h"
#include "dlock.h"

#define FAIR_MAX_WAITERS 256
#define FAIR_FIELD_MAX 96
#define FAIR_QUEUE_TIMEOUT_MS 10000

typedef struct fair_slot {
    int32_t worker;
    int64_t acquire_ns, release_ns;
} fair_slot;

typedef struct fair_shared {
    int waiters;
    sem_t go[FAIR_MAX_WAITERS]; /* posted: worker i queues for the next round */
    sem_t done;                 /* posted by each worker once it has released */
    _Atomic int stop;
    _Atomic int ready;      /* workers whose field is written */
    _Atomic long long next; /* the next log index of the round */
    _Atomic long long errors;
    fair_slot log[FAIR_MAX_WAITERS];
    char field[FAIR_MAX_WAITERS][FAIR_FIELD_MAX];
} fair_shared;

typedef struct fair_worker {
    fair_shared *s;
    int id;
    dlock_client *client;
    dlock_lock *lock;
} fair_worker;

static void fair_error(fair_shared *s, const char *what, int rc) {
    fprintf(stderr, "dlock-bench: fair_order: %s: %s (%s)\n", what, dlock_err_name(rc),
            dlock_last_error());
    atomic_fetch_add(&s->errors, 1);
}

static void *fair_worker_run(void *arg) {
    fair_worker *w = arg;
    fair_shared *s = w->s;
    snprintf(s->field[w->id], FAIR_FIELD_MAX, "%s:%llu", dlock_client_id(w->client),
             (unsigned long long)dlock_thread_owner());
    atomic_fetch_add(&s->ready, 1);
    for (;;) {
        while (sem_wait(&s->go[w->id]) != 0)
            ;
        if (atomic_load(&s->stop))
            return NULL;
        int rc = dlock_lock_acquire(w->lock, BENCH_LEASE_MS);
        if (rc != DLOCK_OK) {
            fair_error(s, "acquire", rc);
            sem_post(&s->done);
            continue;
        }
        int64_t acquired = bench_now_ns();
        long long i = atomic_fetch_add(&s->next, 1);
        rc = dlock_lock_release(w->lock);
        int64_t released = bench_now_ns();
        if (rc != DLOCK_OK)
            fair_error(s, "release", rc);
        if (i < s->waiters)
            s->log[i] =
                (fair_slot){.worker = w->id, .acquire_ns = acquired, .release_ns = released};
        sem_post(&s->done);
    }
}

/* LLEN of the queue key, or -1. */
static long long queue_len(redisContext *admin, const char *queue_key) {
    redisReply *r = redisCommand(admin, "LLEN %s", queue_key);
    long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r)
        freeReplyObject(r);
    return n;
}

/* The queue read back as worker ids into order[]; 0, or -1 (with the reason on stderr). */
static int queue_order(redisContext *admin, const char *queue_key, const fair_shared *s,
                       int *order) {
    redisReply *r = redisCommand(admin, "LRANGE %s 0 -1", queue_key);
    int status = r && r->type == REDIS_REPLY_ARRAY && (int)r->elements == s->waiters ? 0 : -1;
    for (int pos = 0; status == 0 && pos < s->waiters; pos++) {
        order[pos] = -1;
        for (int w = 0; w < s->waiters && order[pos] < 0; w++)
            if (strcmp(r->element[pos]->str, s->field[w]) == 0)
                order[pos] = w;
        if (order[pos] < 0)
            status = -1;
    }
    if (status != 0)
        fprintf(stderr, "dlock-bench: fair_order: the queue read back is not the waiters'\n");
    if (r)
        freeReplyObject(r);
    return status;
}

typedef struct fair_figures {
    long long rounds, handoffs, violations;
    bench_samples handoff, queue_per_waiter;
    int64_t serving_ns; /* time spent in the serving phases */
} fair_figures;

/* One round; the serving phase is bracketed by the counters. */
static long long fair_round(fair_shared *s, dlock_lock *holder, redisContext *admin,
                            const char *queue_key, int rusage_who, bench_counters *before,
                            bench_counters *after, fair_figures *f) {
    long long errors = 0;
    int rc = dlock_lock_acquire(holder, BENCH_LEASE_MS);
    if (rc != DLOCK_OK) {
        fair_error(s, "holder acquire", rc);
        return 1;
    }
    for (int i = 0; i < s->waiters; i++) {
        int64_t t0 = bench_now_ns();
        sem_post(&s->go[i]);
        int64_t give_up = t0 + (int64_t)FAIR_QUEUE_TIMEOUT_MS * 1000000;
        long long len;
        while ((len = queue_len(admin, queue_key)) < i + 1 && bench_now_ns() < give_up)
            bench_sleep_ns(20 * 1000);
        if (len != i + 1) {
            fprintf(stderr, "dlock-bench: fair_order: waiter %d not in the queue after %d ms\n", i,
                    FAIR_QUEUE_TIMEOUT_MS);
            errors++;
        }
        if (bench_samples_push(&f->queue_per_waiter, bench_now_ns() - t0) != 0)
            errors++;
    }
    int order[FAIR_MAX_WAITERS];
    for (int pos = 0; pos < s->waiters; pos++)
        order[pos] = -1;
    if (queue_order(admin, queue_key, s, order) != 0)
        errors++;
    atomic_store(&s->next, 0);
    bench_counters b = {0}, a = {0};
    if (bench_counters_read(admin, rusage_who, &b) != 0)
        errors++;
    int64_t serve_start = bench_now_ns();
    rc = dlock_lock_release(holder);
    int64_t holder_released = bench_now_ns();
    if (rc != DLOCK_OK)
        fair_error(s, "holder release", rc);
    for (int i = 0; i < s->waiters; i++)
        while (sem_wait(&s->done) != 0)
            ;
    f->serving_ns += bench_now_ns() - serve_start;
    if (bench_counters_read(admin, rusage_who, &a) != 0)
        errors++;
    /* sum this round's counters into the run's */
    before->evalsha += b.evalsha, after->evalsha += a.evalsha;
    before->eval += b.eval, after->eval += a.eval;
    before->publish += b.publish, after->publish += a.publish;
    before->subscribe += b.subscribe, after->subscribe += a.subscribe;
    before->unsubscribe += b.unsubscribe, after->unsubscribe += a.unsubscribe;
    before->server_cpu_us += b.server_cpu_us, after->server_cpu_us += a.server_cpu_us;
    before->client_cpu_us += b.client_cpu_us, after->client_cpu_us += a.client_cpu_us;

    long long served = atomic_load(&s->next);
    if (served != s->waiters)
        errors++;
    for (int pos = 0; pos < s->waiters && pos < served; pos++) {
        if (s->log[pos].worker != order[pos])
            f->violations++;
        int64_t prev_release = pos == 0 ? holder_released : s->log[pos - 1].release_ns;
        if (bench_samples_push(&f->handoff, s->log[pos].acquire_ns - prev_release) != 0)
            errors++;
        f->handoffs++;
    }
    f->rounds++;
    return errors;
}

long long bench_fair_order(const bench_config *cfg, const bench_floor *floor, int waiters) {
    if (waiters < 1 || waiters > FAIR_MAX_WAITERS)
        return 1;
    fair_shared *s = calloc(1, sizeof(*s));
    if (!s)
        return 1;
    s->waiters = waiters;
    sem_init(&s->done, 0, 0);
    for (int i = 0; i < waiters; i++)
        sem_init(&s->go[i], 0, 0);
    char name[128], queue_key[160];
    snprintf(name, sizeof(name), "dlock-bench:%s:fair:%d", cfg->run_tag, waiters);
    snprintf(queue_key, sizeof(queue_key), "redisson_lock_queue:{%s}", name);
    long long errors = 0;
    redisContext *admin = bench_redis_connect(cfg->url, NULL);
    dlock_client *clients[3] = {NULL, NULL, NULL}; /* two for the waiters, one for the holder */
    dlock_lock *locks[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3 && admin; i++) {
        dlock_options o;
        dlock_options_init(&o);
        o.url = cfg->url;
        int rc = dlock_client_new(&o, &clients[i]);
        if (rc != DLOCK_OK || (rc = dlock_fairlock_new(clients[i], name, &locks[i])) != DLOCK_OK) {
            fair_error(s, "setup", rc);
            break;
        }
    }
    bool ready = admin && locks[2];
    fair_worker w[FAIR_MAX_WAITERS];
    pthread_t tids[FAIR_MAX_WAITERS];
    int started = 0;
    for (; ready && started < waiters; started++) {
        w[started] = (fair_worker){
            .s = s, .id = started, .client = clients[started % 2], .lock = locks[started % 2]};
        if (pthread_create(&tids[started], NULL, fair_worker_run, &w[started]) != 0)
            break;
    }
    if (started != waiters)
        errors++;
    while (started == waiters && atomic_load(&s->ready) < waiters)
        bench_sleep_ns(100 * 1000);

    fair_figures f = {0};
    bench_counters before = {0}, after = {0};
    int64_t deadline = bench_now_ns() + cfg->duration_ms * 1000000;
    for (int round = 1; started == waiters && (round == 1 || bench_now_ns() < deadline); round++) {
        long long e = fair_round(s, locks[2], admin, queue_key, RUSAGE_SELF, &before, &after, &f);
        errors += e;
        if (e)
            break; /* the state of the queue is unknown: stop here */
    }
    atomic_store(&s->stop, 1);
    for (int i = 0; i < started; i++)
        sem_post(&s->go[i]);
    for (int i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    errors += atomic_load(&s->errors);
    bench_samples_sort(&f.handoff);
    bench_samples_sort(&f.queue_per_waiter);
    double floor_us = floor->publish_p50_us > 0 && floor->ping_p50_us > 0
                          ? floor->publish_p50_us + floor->ping_p50_us
                          : NAN;

    bench_json_begin(cfg, "fair_order", "dlock");
    bench_json_open("params");
    bench_json_int("waiters", waiters);
    bench_json_str("mode", "threads");
    bench_json_int("clients", 2);
    bench_json_int("fair_wait_ms", 5000);
    bench_json_int("duration_ms", cfg->duration_ms);
    bench_json_int("lease_ms", BENCH_LEASE_MS);
    bench_json_bool("watchdog", false);
    bench_json_close();
    bench_json_open("figures");
    bench_json_int("rounds", f.rounds);
    bench_json_int("handoffs", f.handoffs);
    bench_json_int("order_violations", f.violations);
    bench_json_latency("handoff", &f.handoff);
    bench_json_floor(floor);
    bench_json_num("ratio_handoff_p50_to_floor", bench_samples_pct_us(&f.handoff, 0.5) / floor_us);
    bench_json_num("handoffs_per_s",
                   f.serving_ns > 0 ? (double)f.handoffs * 1e9 / (double)f.serving_ns : NAN);
    bench_json_latency("queue_per_waiter", &f.queue_per_waiter);
    bench_json_counters(&before, &after, (double)f.handoffs, "handoff", true);
    bench_json_close();
    bench_json_end(errors);

    bench_samples_free(&f.handoff);
    bench_samples_free(&f.queue_per_waiter);
    for (int i = 0; i < 3; i++) {
        dlock_lock_free(locks[i]);
        dlock_client_free(clients[i]);
    }
    if (admin)
        redisFree(admin);
    sem_destroy(&s->done);
    for (int i = 0; i < waiters; i++)
        sem_destroy(&s->go[i]);
    free(s);
    return errors;
}
