/* SPDX-License-Identifier: MIT */
/* contend.c — the pair and contention loops for any lock-like implementation (a
 * bench_impl: open, acquire, release, close), and the dlock workloads built on them:
 *
 *   hold_10ms            P workers on ONE dlock lock, 10 ms of work (a sleep) inside
 *   semaphore_pair       T threads, each on a dlock semaphore of its own with 1 permit,
 *                        loop acquire(1) + release(1)
 *   semaphore_contended  P threads on ONE dlock semaphore with 1 permit
 *
 * naive.c runs the naive SET NX PX lock through the same loops, so both measure exactly
 * what handoff.c and pair.c measure for dlock's lock:
 *
 *   pair        acquire call -> release return, per worker, for a fixed time
 *   hand-off    for consecutive sections of different workers, next acquire returned -
 *               previous release returned; and from the previous release CALL
 *   fairness    min/max sections per worker
 *   release     the release call alone (call -> return), every section
 *   overlaps    sections acquired before the section before them called its release (two
 *               holders at once: must be 0)
 *
 * Each contended row also carries the hand-off distributions as CDFs (101 quantiles,
 * bench_json_cdf) for the PNG bench/run.sh draws. The log of sections lives in
 * MAP_SHARED memory, so forked workers write to it too (processes mode: each child opens
 * its own connection or client after the fork). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "dlock.h"

#define CONTEND_MAX_WORKERS 64
#define CONTEND_SECTIONS_PER_S 200000 /* log capacity; far above what one lock reaches */
#define CONTEND_MAX_ERRORS 1000
#define PAIR_WARMUP 20

bool bench_quick(void) {
    const char *q = getenv("QUICK");
    return q && strcmp(q, "1") == 0;
}

void bench_json_cdf(const char *name, const bench_samples *sorted) {
    bench_json_open(name);
    for (int i = 0; i <= 100; i++) {
        char key[8];
        snprintf(key, sizeof(key), "%d", i);
        bench_json_num(key, bench_samples_pct_us(sorted, i / 100.0));
    }
    bench_json_close();
}

/* ---- uncontended pairs -------------------------------------------------------------------- */

typedef struct pair_worker {
    const bench_config *cfg;
    const bench_impl *impl;
    void *shared;
    char name[160];
    bench_gate *gate;
    bench_samples latency;
    int64_t end_ns;
    long long errors;
} pair_worker;

static void *pair_thread(void *arg) {
    pair_worker *w = arg;
    void *h = NULL;
    if (w->impl->open_worker(w->cfg, w->name, w->shared, &h) != 0) {
        w->errors++;
        bench_gate_wait(w->gate);
        return NULL;
    }
    for (int i = 0; i < PAIR_WARMUP; i++) {
        if (w->impl->acquire(h) != 0 || w->impl->release(h) != 0)
            w->errors++;
    }
    int64_t deadline = bench_gate_wait(w->gate);
    int64_t now = bench_now_ns();
    while (now < deadline && w->errors < CONTEND_MAX_ERRORS) {
        bool ok = w->impl->acquire(h) == 0;
        if (!ok || w->impl->release(h) != 0) {
            w->errors++;
            ok = false;
        }
        int64_t end = bench_now_ns();
        if (ok && bench_samples_push(&w->latency, end - now) != 0)
            w->errors++;
        now = end;
    }
    w->end_ns = now;
    w->impl->close_worker(h);
    return NULL;
}

long long bench_pairs(const bench_config *cfg, const bench_floor *floor, const bench_impl *impl,
                      const char *workload, int threads) {
    long long errors = 0;
    bench_gate gate = {0};
    pair_worker *workers = calloc((size_t)threads, sizeof(*workers));
    pthread_t *tids = calloc((size_t)threads, sizeof(*tids));
    redisContext *admin = bench_redis_connect(cfg->url, NULL);
    void *shared = NULL;
    char prefix[128];
    snprintf(prefix, sizeof(prefix), "dlock-bench:%s:%s:%s:%d", cfg->run_tag, impl->client,
             workload, threads);
    if (!workers || !tids || !admin ||
        (impl->open_shared && impl->open_shared(cfg, prefix, &shared) != 0)) {
        errors++;
        threads = 0;
    }
    int started = 0;
    for (int i = 0; i < threads; i++) {
        pair_worker *w = &workers[i];
        *w = (pair_worker){.cfg = cfg, .impl = impl, .shared = shared, .gate = &gate};
        snprintf(w->name, sizeof(w->name), "%s:%d", prefix, i);
        if (pthread_create(&tids[i], NULL, pair_thread, w) != 0) {
            errors++;
            break;
        }
        started++;
    }
    bench_counters before = {0}, after = {0};
    if (bench_gate_ready(&gate, started, 60000) != 0)
        errors++;
    if (admin && bench_counters_read(admin, RUSAGE_SELF, &before) != 0)
        errors++;
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
        bench_samples_free(&workers[i].latency);
    }
    if (admin && bench_counters_read(admin, RUSAGE_SELF, &after) != 0)
        errors++;
    bench_samples_sort(&latency);
    double seconds = (double)(end - start) / 1e9;
    double p50 = bench_samples_pct_us(&latency, 0.5);

    bench_json_begin(cfg, workload, impl->client);
    bench_json_open("params");
    bench_json_int("threads", started);
    bench_json_int("clients", impl->connection_per_worker ? started : 1);
    bench_json_int("duration_ms", cfg->duration_ms);
    bench_json_int("lease_ms", BENCH_LEASE_MS);
    bench_json_bool("watchdog", false);
    bench_json_str("api", impl->api);
    bench_json_close();
    bench_json_open("figures");
    bench_json_int("pairs", (long long)latency.n);
    bench_json_num("pairs_per_s", seconds > 0 ? (double)latency.n / seconds : 0);
    bench_json_latency("pair", &latency);
    bench_json_floor(floor);
    bench_json_num("ratio_pair_p50_to_2x_ping_p50",
                   floor->ping_p50_us > 0 ? p50 / (2 * floor->ping_p50_us) : NAN);
    bench_json_counters(&before, &after, (double)latency.n, "pair", true);
    bench_json_close();
    bench_json_end(errors);

    if (impl->close_shared)
        impl->close_shared(shared);
    if (admin)
        redisFree(admin);
    bench_samples_free(&latency);
    free(workers);
    free(tids);
    return errors;
}

/* ---- contention on one name --------------------------------------------------------------- */

typedef struct section {
    int32_t worker;
    int64_t acquire_ns, release_start_ns, release_ns;
} section;

typedef struct arena {
    bench_gate gate;
    _Atomic long long next;
    _Atomic long long errors;
    long long capacity;
    long long count[CONTEND_MAX_WORKERS];
    section log[];
} arena;

typedef struct contend_arg {
    const bench_config *cfg;
    const bench_impl *impl;
    arena *a;
    int worker;
    const char *name;
    void *shared;
    int64_t hold_ns;
} contend_arg;

static void contend_run(contend_arg *c) {
    arena *a = c->a;
    void *h = NULL;
    if (c->impl->open_worker(c->cfg, c->name, c->shared, &h) != 0) {
        atomic_fetch_add(&a->errors, 1);
        bench_gate_wait(&a->gate);
        return;
    }
    if (c->impl->acquire(h) != 0 || c->impl->release(h) != 0) /* warm-up */
        atomic_fetch_add(&a->errors, 1);
    int64_t deadline = bench_gate_wait(&a->gate);
    long long errors = 0;
    while (bench_now_ns() < deadline && errors < CONTEND_MAX_ERRORS) {
        if (c->impl->acquire(h) != 0) {
            atomic_fetch_add(&a->errors, 1);
            errors++;
            continue;
        }
        int64_t acquired = bench_now_ns();
        long long i = atomic_fetch_add(&a->next, 1);
        if (i < a->capacity) {
            a->log[i].worker = c->worker;
            a->log[i].acquire_ns = acquired;
        }
        if (c->hold_ns > 0)
            bench_sleep_ns(c->hold_ns);
        int64_t releasing = bench_now_ns();
        int rc = c->impl->release(h);
        int64_t released = bench_now_ns();
        if (rc != 0) {
            atomic_fetch_add(&a->errors, 1);
            errors++;
        }
        if (i >= a->capacity)
            break;
        a->log[i].release_start_ns = releasing;
        a->log[i].release_ns = released;
        a->count[c->worker]++;
    }
    c->impl->close_worker(h);
}

static void *contend_thread(void *arg) {
    contend_run(arg);
    return NULL;
}

long long bench_contend(const bench_config *cfg, const bench_floor *floor, const bench_impl *impl,
                        const char *workload, int workers, bool processes, int64_t hold_us) {
    if (workers < 1 || workers > CONTEND_MAX_WORKERS)
        return 1;
    long long capacity = CONTEND_SECTIONS_PER_S * (cfg->duration_ms / 1000 + 1);
    size_t size = sizeof(arena) + (size_t)capacity * sizeof(section);
    arena *a = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED) {
        perror("dlock-bench: mmap");
        return 1;
    }
    a->capacity = capacity;
    char name[160];
    snprintf(name, sizeof(name), "dlock-bench:%s:%s:%s:%s:%d", cfg->run_tag, impl->client, workload,
             processes ? "processes" : "threads", workers);
    redisContext *admin = bench_redis_connect(cfg->url, NULL);
    void *shared = NULL;
    long long errors = 0;
    if (!admin || (!processes && impl->open_shared && impl->open_shared(cfg, name, &shared) != 0))
        errors++;
    contend_arg args[CONTEND_MAX_WORKERS];
    pthread_t tids[CONTEND_MAX_WORKERS];
    pid_t pids[CONTEND_MAX_WORKERS];
    int started = 0;
    fflush(NULL); /* nothing buffered for the children to write twice */
    for (int i = 0; errors == 0 && i < workers; i++) {
        args[i] = (contend_arg){cfg, impl, a, i, name, shared, hold_us * 1000};
        if (processes) {
            pid_t pid = fork();
            if (pid == 0) {
                void *own = NULL;
                if (impl->open_shared && impl->open_shared(cfg, name, &own) != 0) {
                    atomic_fetch_add(&a->errors, 1);
                    bench_gate_wait(&a->gate);
                    _exit(1);
                }
                args[i].shared = own;
                contend_run(&args[i]);
                if (impl->close_shared)
                    impl->close_shared(own);
                _exit(0);
            }
            if (pid < 0)
                break;
            pids[i] = pid;
        } else if (pthread_create(&tids[i], NULL, contend_thread, &args[i]) != 0) {
            break;
        }
        started++;
    }
    if (started != workers)
        errors++;
    bench_counters before = {0}, after = {0};
    int who = processes ? RUSAGE_CHILDREN : RUSAGE_SELF;
    if (bench_gate_ready(&a->gate, started, 60000) != 0)
        errors++;
    if (admin && bench_counters_read(admin, who, &before) != 0)
        errors++;
    int64_t start = bench_gate_open(&a->gate, started == workers ? cfg->duration_ms : 0);
    for (int i = 0; i < started; i++) {
        if (!processes) {
            pthread_join(tids[i], NULL);
            continue;
        }
        int status = 0;
        if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
            errors++;
    }
    if (admin && bench_counters_read(admin, who, &after) != 0)
        errors++;
    errors += atomic_load(&a->errors);

    long long sections = atomic_load(&a->next), handoffs = 0, overlaps = 0;
    if (sections > capacity)
        sections = capacity;
    int64_t end = start;
    bench_samples latency = {0}, from_start = {0}, release = {0};
    for (long long i = 0; i < sections; i++) {
        const section *s = &a->log[i];
        if (s->release_ns > end)
            end = s->release_ns;
        if (bench_samples_push(&release, s->release_ns - s->release_start_ns) != 0)
            errors++;
        if (i > 0 && s->acquire_ns < a->log[i - 1].release_start_ns)
            overlaps++; /* acquired before the holder before it called its release */
        if (i == 0 || s->worker == a->log[i - 1].worker)
            continue;
        handoffs++;
        if (bench_samples_push(&latency, s->acquire_ns - a->log[i - 1].release_ns) != 0 ||
            bench_samples_push(&from_start, s->acquire_ns - a->log[i - 1].release_start_ns) != 0)
            errors++;
    }
    bench_samples_sort(&latency);
    bench_samples_sort(&from_start);
    bench_samples_sort(&release);
    long long lo = a->count[0], hi = a->count[0];
    for (int w = 1; w < workers; w++) {
        lo = a->count[w] < lo ? a->count[w] : lo;
        hi = a->count[w] > hi ? a->count[w] : hi;
    }
    double seconds = (double)(end - start) / 1e9;
    double per_s = seconds > 0 ? (double)sections / seconds : 0;
    double floor_us = floor->publish_p50_us > 0 && floor->ping_p50_us > 0
                          ? floor->publish_p50_us + floor->ping_p50_us
                          : NAN;

    bench_json_begin(cfg, workload, impl->client);
    bench_json_open("params");
    bench_json_int("workers", workers);
    bench_json_str("mode", processes ? "processes" : "threads");
    bench_json_int("clients", processes || impl->connection_per_worker ? workers : 1);
    bench_json_int("hold_us", hold_us);
    bench_json_int("duration_ms", cfg->duration_ms);
    bench_json_int("lease_ms", BENCH_LEASE_MS);
    bench_json_bool("watchdog", false);
    bench_json_str("api", impl->api);
    bench_json_close();
    bench_json_open("figures");
    bench_json_int("sections", sections);
    bench_json_num("sections_per_s", per_s);
    bench_json_int("overlaps", overlaps);
    if (hold_us > 0)
        bench_json_num("ratio_to_ideal_sections_per_s", per_s / (1e6 / (double)hold_us));
    bench_json_int("handoffs", handoffs);
    bench_json_num("handoff_share", sections > 1 ? (double)handoffs / (double)(sections - 1) : NAN);
    bench_json_latency("handoff", &latency);
    bench_json_int("min_sections_per_worker", lo);
    bench_json_int("max_sections_per_worker", hi);
    bench_json_num("fairness_min_max", hi > 0 ? (double)lo / (double)hi : NAN);
    bench_json_floor(floor);
    bench_json_num("ratio_handoff_p50_to_floor", bench_samples_pct_us(&latency, 0.5) / floor_us);
    bench_json_latency("handoff_from_release_start", &from_start);
    bench_json_num("ratio_handoff_from_release_start_p50_to_floor",
                   bench_samples_pct_us(&from_start, 0.5) / floor_us);
    bench_json_latency("release", &release); /* the release call alone, every section */
    bench_json_counters(&before, &after, (double)sections, "section", true);
    bench_json_cdf("handoff_cdf_us", &latency);
    bench_json_cdf("handoff_from_release_start_cdf_us", &from_start);
    bench_json_close();
    bench_json_end(errors);

    bench_samples_free(&latency);
    bench_samples_free(&from_start);
    bench_samples_free(&release);
    if (impl->close_shared && shared)
        impl->close_shared(shared);
    if (admin)
        redisFree(admin);
    munmap(a, size);
    return errors;
}

/* ---- dlock's lock and semaphore as bench_impls -------------------------------------------- */

static int dlock_fail(const char *what, int rc) {
    fprintf(stderr, "dlock-bench: %s: %s (%s)\n", what, dlock_err_name(rc), dlock_last_error());
    return -1;
}

static int dl_open_shared(const bench_config *cfg, const char *name, void **shared) {
    (void)name;
    dlock_options o;
    dlock_options_init(&o);
    o.url = cfg->url;
    dlock_client *c = NULL;
    int rc = dlock_client_new(&o, &c);
    if (rc != DLOCK_OK)
        return dlock_fail("client", rc);
    *shared = c;
    return 0;
}

static void dl_close_shared(void *shared) {
    dlock_client_free(shared);
}

static int dl_lock_open(const bench_config *cfg, const char *name, void *shared, void **out) {
    (void)cfg;
    dlock_lock *l = NULL;
    int rc = dlock_lock_new(shared, name, &l);
    if (rc != DLOCK_OK)
        return dlock_fail("lock", rc);
    *out = l;
    return 0;
}

static void dl_lock_close(void *h) {
    dlock_lock_free(h);
}

static int dl_lock_acquire(void *h) {
    int rc = dlock_lock_acquire(h, BENCH_LEASE_MS);
    return rc == DLOCK_OK ? 0 : dlock_fail("acquire", rc);
}

static int dl_lock_release(void *h) {
    int rc = dlock_lock_release(h);
    return rc == DLOCK_OK ? 0 : dlock_fail("release", rc);
}

static const bench_impl dlock_lock_impl = {
    .client = "dlock",
    .api = "dlock_lock_acquire(lease 30000 ms) + dlock_lock_release; threads share one client",
    .open_shared = dl_open_shared,
    .close_shared = dl_close_shared,
    .open_worker = dl_lock_open,
    .close_worker = dl_lock_close,
    .acquire = dl_lock_acquire,
    .release = dl_lock_release,
};

static int dl_sem_open(const bench_config *cfg, const char *name, void *shared, void **out) {
    (void)cfg;
    dlock_semaphore *s = NULL;
    int rc = dlock_semaphore_new(shared, name, &s);
    if (rc == DLOCK_OK && (rc = dlock_semaphore_try_set_permits(s, 1, NULL)) != DLOCK_OK)
        dlock_semaphore_free(s);
    if (rc != DLOCK_OK)
        return dlock_fail("semaphore", rc);
    *out = s;
    return 0;
}

static void dl_sem_close(void *h) {
    dlock_semaphore_free(h);
}

static int dl_sem_acquire(void *h) {
    int rc = dlock_semaphore_acquire(h, 1);
    return rc == DLOCK_OK ? 0 : dlock_fail("semaphore acquire", rc);
}

static int dl_sem_release(void *h) {
    int rc = dlock_semaphore_release(h, 1);
    return rc == DLOCK_OK ? 0 : dlock_fail("semaphore release", rc);
}

static const bench_impl dlock_semaphore_impl = {
    .client = "dlock",
    .api = "dlock_semaphore_acquire(1) + dlock_semaphore_release(1), 1 permit; threads share "
           "one client",
    .open_shared = dl_open_shared,
    .close_shared = dl_close_shared,
    .open_worker = dl_sem_open,
    .close_worker = dl_sem_close,
    .acquire = dl_sem_acquire,
    .release = dl_sem_release,
};

long long bench_hold_10ms(const bench_config *cfg, const bench_floor *floor, int workers,
                          bool processes) {
    return bench_contend(cfg, floor, &dlock_lock_impl, "hold_10ms", workers, processes, 10000);
}

long long bench_semaphore_pair(const bench_config *cfg, const bench_floor *floor, int threads) {
    return bench_pairs(cfg, floor, &dlock_semaphore_impl, "semaphore_pair", threads);
}

long long bench_semaphore_contended(const bench_config *cfg, const bench_floor *floor,
                                    int workers) {
    return bench_contend(cfg, floor, &dlock_semaphore_impl, "semaphore_contended", workers, false,
                         0);
}
