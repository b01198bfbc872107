/* SPDX-License-Identifier: MIT */
/* handoff.c — contended_handoff: P workers on ONE lock, each looping acquire, record,
 * release with no work inside, for a fixed time.
 *
 *   threads    P threads of one process share one client and one lock handle
 *   processes  P forked processes, each with its own client made after the fork
 *
 * Every critical section takes the next index of one shared log (an arena in
 * MAP_SHARED|MAP_ANONYMOUS memory, so forked workers write to it too) and records there
 * who held the lock, when its acquire returned and, after the release returned, when that
 * was (CLOCK_MONOTONIC, one clock for every process of the host). The lock itself orders
 * the log. Then, for consecutive sections held by different workers,
 *
 *   hand-off = next.acquire_ns - previous.release_ns
 *
 * the time from a release returning in one worker to the next acquire returning in
 * another. Its floor is one message delivery (the release's PUBLISH) plus one round trip
 * (the woken waiter's acquire), but it starts late: when the release's reply is back in
 * the releasing thread, the message is already on its way, and the waiter may be on its
 * way to Redis too. So a second figure starts where the floor does, when the release is
 * called: handoff_from_release_start = next.acquire_ns - previous.release_start_ns. Fairness is
 * min/max sections per worker, and wait (p50, p99, max) is each acquire call's time to
 * return: a worker passed over again and again shows in its max. The client CPU per section of the
 * process mode counts the children's whole lives (connect and warm-up too), and so do the
 * wakes per section (every client's dlock_client_stats wakes over the sections): a release
 * that wakes a waiter in every process shows as up to P - 1 wakes per section. overlaps
 * counts sections whose acquire returned before the section before them called its release
 * (two holders at once: must be 0). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "dlock.h"

#define HANDOFF_MAX_WORKERS 64
#define HANDOFF_SECTIONS_PER_S 200000 /* log capacity; far above what one lock reaches */
#define HANDOFF_MAX_ERRORS 1000
#define HANDOFF_SETTLE_US 1100000

typedef struct section {
    int32_t worker;
    int64_t acquire_start_ns, acquire_ns, release_start_ns, release_ns;
} section;

typedef struct arena {
    bench_gate gate;
    _Atomic long long next; /* the next section's index */
    _Atomic long long errors;
    _Atomic long long wakes; /* the clients' dlock_client_stats wakes */
    long long capacity;
    long long count[HANDOFF_MAX_WORKERS]; /* sections per worker, each written by its own */
    section log[];
} arena;

typedef struct worker_arg {
    arena *a;
    int worker;
    dlock_lock *lock;
} worker_arg;

static void count_error(arena *a, const char *what, int rc) {
    fprintf(stderr, "dlock-bench: %s: %s (%s)\n", what, dlock_err_name(rc), dlock_last_error());
    atomic_fetch_add(&a->errors, 1);
}

/* One worker's loop, in a thread or a child process. lock NULL: setup failed, only pass
 * the gate so the others are not kept waiting. */
static void worker_run(arena *a, int worker, dlock_lock *lock) {
    if (lock) { /* warm-up: the connection is hot, the scripts loaded */
        int rc = dlock_lock_acquire(lock, BENCH_LEASE_MS);
        if (rc != DLOCK_OK || (rc = dlock_lock_release(lock)) != DLOCK_OK)
            count_error(a, "warm-up", rc);
        /* and a second old, as a service's client is: a lock a release hands over is taken
         * from the message only on a command connection up for a second (before, the
         * waiter asks Redis once more: src/lock/engine_grant.c) */
        usleep(HANDOFF_SETTLE_US);
    }
    int64_t deadline = bench_gate_wait(&a->gate);
    long long errors = 0;
    while (lock && bench_now_ns() < deadline && errors < HANDOFF_MAX_ERRORS) {
        int64_t acquiring = bench_now_ns();
        int rc = dlock_lock_acquire(lock, BENCH_LEASE_MS);
        if (rc != DLOCK_OK) {
            count_error(a, "acquire", rc);
            errors++;
            continue;
        }
        int64_t acquired = bench_now_ns();
        long long i = atomic_fetch_add(&a->next, 1);
        if (i < a->capacity) {
            a->log[i].worker = worker;
            a->log[i].acquire_start_ns = acquiring;
            a->log[i].acquire_ns = acquired;
        }
        int64_t releasing = bench_now_ns();
        rc = dlock_lock_release(lock);
        int64_t released = bench_now_ns();
        if (rc != DLOCK_OK) {
            count_error(a, "release", rc);
            errors++;
        }
        if (i >= a->capacity)
            break; /* the log is full: everybody stops */
        a->log[i].release_start_ns = releasing;
        a->log[i].release_ns = released;
        a->count[worker]++;
    }
}

/* Adds c's wakes to the arena's, once per client, after its last section. */
static void add_wakes(arena *a, dlock_client *c) {
    dlock_stats st;
    dlock_stats_init(&st);
    if (c && dlock_client_stats(c, &st) == DLOCK_OK)
        atomic_fetch_add(&a->wakes, (long long)st.wakes);
}

static void *worker_thread(void *arg) {
    worker_arg *w = arg;
    worker_run(w->a, w->worker, w->lock);
    return NULL;
}

/* A forked worker: its own client, made after the fork (a client's I/O thread does not
 * survive fork). */
static void worker_process(arena *a, int worker, const char *url, const char *name) {
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    dlock_client *client = NULL;
    dlock_lock *lock = NULL;
    int rc = dlock_client_new(&o, &client);
    if (rc != DLOCK_OK || (rc = dlock_lock_new(client, name, &lock)) != DLOCK_OK)
        count_error(a, "worker setup", rc);
    worker_run(a, worker, lock);
    add_wakes(a, client);
    dlock_lock_free(lock);
    dlock_client_free(client);
}

/* Starts P threads (sharing one client) or P processes; returns how many started. */
static int start_workers(const bench_config *cfg, arena *a, int workers, bool processes,
                         const char *name, dlock_client **client, dlock_lock **lock,
                         pthread_t *tids, worker_arg *args, pid_t *pids) {
    if (!processes) {
        dlock_options o;
        dlock_options_init(&o);
        o.url = cfg->url;
        int rc = dlock_client_new(&o, client);
        if (rc != DLOCK_OK || (rc = dlock_lock_new(*client, name, lock)) != DLOCK_OK) {
            count_error(a, "setup", rc);
            return 0;
        }
    }
    for (int i = 0; i < workers; i++) {
        if (processes) {
            pid_t pid = fork();
            if (pid == 0) {
                worker_process(a, i, cfg->url, name);
                _exit(0);
            }
            if (pid < 0)
                return i;
            pids[i] = pid;
        } else {
            args[i] = (worker_arg){a, i, *lock};
            if (pthread_create(&tids[i], NULL, worker_thread, &args[i]) != 0)
                return i;
        }
    }
    return workers;
}

static void join_workers(arena *a, int started, bool processes, pthread_t *tids, pid_t *pids) {
    for (int i = 0; i < started; i++) {
        if (!processes) {
            pthread_join(tids[i], NULL);
            continue;
        }
        int status = 0;
        if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
            atomic_fetch_add(&a->errors, 1);
    }
}

typedef struct handoff_figures {
    long long sections, handoffs, overlaps;
    int64_t end_ns;
    bench_samples latency, from_start, wait;
    long long min_sections, max_sections;
} handoff_figures;

static int analyse(const arena *a, int workers, handoff_figures *f) {
    f->sections = atomic_load(&a->next);
    if (f->sections > a->capacity)
        f->sections = a->capacity;
    for (long long i = 0; i < f->sections; i++) {
        const section *s = &a->log[i];
        if (s->release_ns > f->end_ns)
            f->end_ns = s->release_ns;
        if (bench_samples_push(&f->wait, s->acquire_ns - s->acquire_start_ns) != 0)
            return -1;
        const section *prev = i > 0 ? &a->log[i - 1] : NULL;
        if (prev && s->acquire_ns < prev->release_start_ns)
            f->overlaps++;
        if (!prev || s->worker == prev->worker)
            continue;
        f->handoffs++;
        if (bench_samples_push(&f->latency, s->acquire_ns - prev->release_ns) != 0 ||
            bench_samples_push(&f->from_start, s->acquire_ns - prev->release_start_ns) != 0)
            return -1;
    }
    bench_samples_sort(&f->latency);
    bench_samples_sort(&f->from_start);
    bench_samples_sort(&f->wait);
    f->min_sections = f->max_sections = a->count[0];
    for (int w = 1; w < workers; w++) {
        if (a->count[w] < f->min_sections)
            f->min_sections = a->count[w];
        if (a->count[w] > f->max_sections)
            f->max_sections = a->count[w];
    }
    return 0;
}

long long bench_contended_handoff(const bench_config *cfg, const bench_floor *floor, int workers,
                                  bool processes) {
    if (workers < 1 || workers > HANDOFF_MAX_WORKERS)
        return 1;
    long long capacity = HANDOFF_SECTIONS_PER_S * (cfg->duration_ms / 1000 + 1);
    size_t size = sizeof(arena) + (size_t)capacity * sizeof(section);
    arena *a = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED) {
        perror("dlock-bench: mmap");
        return 1;
    }
    a->capacity = capacity;
    char name[128];
    snprintf(name, sizeof(name), "dlock-bench:%s:handoff:%s:%d", cfg->run_tag,
             processes ? "processes" : "threads", workers);
    redisContext *admin = bench_redis_connect(cfg->url, NULL);
    dlock_client *client = NULL;
    dlock_lock *lock = NULL;
    pthread_t tids[HANDOFF_MAX_WORKERS];
    worker_arg args[HANDOFF_MAX_WORKERS];
    pid_t pids[HANDOFF_MAX_WORKERS];
    fflush(NULL); /* nothing buffered for the children to write twice */
    int started =
        admin ? start_workers(cfg, a, workers, processes, name, &client, &lock, tids, args, pids)
              : 0;
    long long errors = started == workers ? 0 : 1;
    bench_counters before = {0}, after = {0};
    if (bench_gate_ready(&a->gate, started, 30000) != 0)
        errors++;
    if (admin &&
        bench_counters_read(admin, processes ? RUSAGE_CHILDREN : RUSAGE_SELF, &before) != 0)
        errors++;
    int64_t start = bench_gate_open(&a->gate, started == workers ? cfg->duration_ms : 0);
    join_workers(a, started, processes, tids, pids);
    if (!processes)
        add_wakes(a, client);
    if (admin && bench_counters_read(admin, processes ? RUSAGE_CHILDREN : RUSAGE_SELF, &after) != 0)
        errors++;
    handoff_figures f = {.end_ns = start};
    if (analyse(a, workers, &f) != 0)
        errors++;
    errors += atomic_load(&a->errors);
    double seconds = (double)(f.end_ns - start) / 1e9;
    double floor_us = floor->publish_p50_us > 0 && floor->ping_p50_us > 0
                          ? floor->publish_p50_us + floor->ping_p50_us
                          : NAN;

    bench_json_begin(cfg, "contended_handoff", "dlock");
    bench_json_open("params");
    bench_json_int("workers", workers);
    bench_json_str("mode", processes ? "processes" : "threads");
    bench_json_int("clients", processes ? workers : 1);
    bench_json_int("duration_ms", cfg->duration_ms);
    bench_json_int("lease_ms", BENCH_LEASE_MS);
    bench_json_bool("watchdog", false);
    bench_json_close();
    bench_json_open("figures");
    bench_json_int("sections", f.sections);
    bench_json_num("sections_per_s", seconds > 0 ? (double)f.sections / seconds : 0);
    bench_json_int("handoffs", f.handoffs);
    bench_json_num("handoff_share", f.sections > 1 ? (double)f.handoffs / (f.sections - 1) : NAN);
    bench_json_int("overlaps", f.overlaps);
    bench_json_latency("handoff", &f.latency);
    bench_json_int("min_sections_per_worker", f.min_sections);
    bench_json_int("max_sections_per_worker", f.max_sections);
    bench_json_num("fairness_min_max",
                   f.max_sections > 0 ? (double)f.min_sections / (double)f.max_sections : NAN);
    bench_json_floor(floor);
    bench_json_num("ratio_handoff_p50_to_floor", bench_samples_pct_us(&f.latency, 0.5) / floor_us);
    bench_json_latency("handoff_from_release_start", &f.from_start);
    bench_json_num("ratio_handoff_from_release_start_p50_to_floor",
                   bench_samples_pct_us(&f.from_start, 0.5) / floor_us);
    bench_json_latency("wait", &f.wait); /* acquire call -> return, every section */
    /* waiters a release woke (each makes an attempt): 1 per section is the floor */
    bench_json_num("wakes_per_section",
                   f.sections > 0 ? (double)atomic_load(&a->wakes) / (double)f.sections : NAN);
    bench_json_counters(&before, &after, (double)f.sections, "section", true);
    bench_json_cdf("handoff_cdf_us", &f.latency); /* for the PNG bench/run.sh draws */
    bench_json_cdf("handoff_from_release_start_cdf_us", &f.from_start);
    bench_json_close();
    bench_json_end(errors);

    bench_samples_free(&f.latency);
    bench_samples_free(&f.from_start);
    bench_samples_free(&f.wait);
    dlock_lock_free(lock);
    dlock_client_free(client);
    if (admin)
        redisFree(admin);
    munmap(a, size);
    return errors;
}
