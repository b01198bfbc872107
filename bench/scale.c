/* SPDX-License-Identifier: MIT */
/* scale.c — what many held locks, many waiters and many clients cost:
 *
 *   renewal_scale   one client (watchdog_ms 3000, so the watchdog renews every 1000 ms: one
 *                   "period") takes N locks with DLOCK_WATCHDOG through the async face and
 *                   holds them for 3 periods. Figures: Redis commands per period (every
 *                   cmdstat of INFO commandstats but INFO itself), EVALSHA per period and
 *                   locks renewed per script, client CPU per period (getrusage: the
 *                   client's I/O thread does the renewing), server CPU per period, client
 *                   RSS per held lock (RSS before the handles were made -> all held), lost
 *                   leases (must be 0) and a sample of 100 keys still held at the end.
 *   waiters_scale   a holder client holds N locks (lease 30 s); a second client — the one
 *                   measured — starts N async acquires (wait forever), one per lock, so N
 *                   waiters wait on N different locks at once. Once every channel is
 *                   subscribed (the sum of sub= over CLIENT LIST TYPE pubsub), the holder
 *                   releases all N as fast as its pipeline goes. Figures: subscriber
 *                   connections used by the waiting client, its channels, its RSS per
 *                   waiter, the time for all to be subscribed, for all N releases and for
 *                   all N waiters to be woken (acquire callback), the per-lock wake latency
 *                   (release callback in the holder -> acquire callback in the waiter),
 *                   and commands per waiter during the wake.
 *
 *   client_pair     T threads (T = 8, 32), each with a dlock client of its own (so a
 *                   connection and a loop thread each, as the naive lock has a connection
 *                   each), loop dlock_lock_acquire + dlock_lock_release on a lock of their
 *                   own: bench_pairs of contend.c, so it measures what uncontended_pair
 *                   measures and compares with the naive lock's uncontended_pair.
 *
 * N comes from dlock_bench.c (renewal: 1k, 10k, 100k; QUICK=1: 1k, 10k; waiters: 1k, 10k;
 * QUICK=1: 1k). All asynchronous calls are made from the main thread of the blocking face
 * (allowed from any thread); their callbacks run on the client's loop thread and only
 * touch atomics, timestamps and a semaphore. */
#include <errno.h>
#include <math.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "dlock.h"

#define SCALE_WINDOW 1000 /* async calls in flight at once */
#define SCALE_WATCHDOG_MS 3000
#define SCALE_PERIODS 3
#define SCALE_SAMPLE 100

static long rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, rss = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
        rss = 0;
    fclose(f);
    return rss * sysconf(_SC_PAGESIZE);
}

static double cpu_us(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* Every command's calls but INFO's (ours), and EVALSHA + EVAL alone. */
static int command_calls(redisContext *rc, long long *all, long long *scripts) {
    redisReply *r = redisCommand(rc, "INFO commandstats");
    if (!r || r->type != REDIS_REPLY_STRING) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    *all = *scripts = 0;
    for (const char *p = strstr(r->str, "cmdstat_"); p; p = strstr(p + 1, "cmdstat_")) {
        const char *colon = strchr(p, ':'), *calls = strstr(p, "calls=");
        if (!colon || !calls)
            break;
        size_t n = (size_t)(colon - p) - 8;
        long long c = atoll(calls + 6);
        if (n == 4 && strncmp(p + 8, "info", 4) == 0)
            continue;
        *all += c;
        if ((n == 7 && strncmp(p + 8, "evalsha", 7) == 0) ||
            (n == 4 && strncmp(p + 8, "eval", 4) == 0))
            *scripts += c;
    }
    freeReplyObject(r);
    return 0;
}

static double server_cpu_us(redisContext *rc) {
    char user[32], sys[32];
    if (bench_redis_info(rc, "cpu", "used_cpu_user", user, sizeof(user)) != 0 ||
        bench_redis_info(rc, "cpu", "used_cpu_sys", sys, sizeof(sys)) != 0)
        return NAN;
    return (atof(user) + atof(sys)) * 1e6;
}

/* ---- a batch of async calls ---------------------------------------------------------------- */

typedef struct batch {
    sem_t slots; /* the window */
    sem_t all_done;
    _Atomic long long done, failed;
    long long n;
    int64_t *done_ns; /* per index, or NULL */
    int first_error;
} batch;

typedef struct op {
    batch *b;
    long long i;
} op;

static void batch_init(batch *b, long long n, int64_t *done_ns) {
    memset(b, 0, sizeof(*b));
    sem_init(&b->slots, 0, SCALE_WINDOW);
    sem_init(&b->all_done, 0, 0);
    b->n = n;
    b->done_ns = done_ns;
}

static void batch_destroy(batch *b) {
    sem_destroy(&b->slots);
    sem_destroy(&b->all_done);
}

static void op_done(op *o, int status) {
    batch *b = o->b;
    if (b->done_ns)
        b->done_ns[o->i] = bench_now_ns();
    if (status != DLOCK_OK && atomic_fetch_add(&b->failed, 1) == 0)
        b->first_error = status;
    sem_post(&b->slots);
    if (atomic_fetch_add(&b->done, 1) + 1 == b->n)
        sem_post(&b->all_done);
}

static void lock_cb(dlock_lock *l, int status, void *arg) {
    (void)l;
    op_done(arg, status);
}

/* Takes a window slot (windowed: up to SCALE_WINDOW in flight); a call that fails to start
 * counts as done and failed. */
static void batch_start(op *o, int rc) {
    if (rc != DLOCK_OK)
        op_done(o, rc);
}

/* Waits until all n are done, up to timeout_ms. 0 or -1. */
static int batch_wait(batch *b, int64_t timeout_ms) {
    if (b->n == 0)
        return 0;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    while (sem_timedwait(&b->all_done, &deadline) != 0) {
        if (errno != EINTR)
            return -1;
    }
    return 0;
}

static void slot_wait(batch *b) {
    while (sem_wait(&b->slots) != 0)
        ;
}

typedef enum { DO_ACQUIRE, DO_RELEASE } lock_verb;

/* Runs verb on every lock (owner, wait_ms, lease_ms for acquires), windowed or not.
 * Returns the failures (timeouts count as all failed). */
static long long lock_all(dlock_lock **locks, long long n, lock_verb verb, uint64_t owner,
                          int64_t wait_ms, int64_t lease_ms, bool windowed, int64_t *done_ns,
                          op *ops, batch *b, int64_t timeout_ms, bool wait) {
    batch_init(b, n, done_ns);
    for (long long i = 0; i < n; i++) {
        ops[i] = (op){b, i};
        if (windowed)
            slot_wait(b);
        int rc = verb == DO_ACQUIRE ? dlock_lock_acquire_async(locks[i], owner, wait_ms, lease_ms,
                                                               lock_cb, &ops[i])
                                    : dlock_lock_release_async(locks[i], owner, lock_cb, &ops[i]);
        batch_start(&ops[i], rc);
    }
    if (!wait)
        return 0;
    long long failed = batch_wait(b, timeout_ms) != 0 ? n - atomic_load(&b->done) : 0;
    failed += atomic_load(&b->failed);
    if (failed)
        fprintf(stderr, "dlock-bench: %lld of %lld async %s failed (first: %s)\n", failed, n,
                verb == DO_ACQUIRE ? "acquires" : "releases",
                b->first_error ? dlock_err_name(b->first_error) : "timed out");
    batch_destroy(b);
    return failed;
}

static dlock_client *new_client(const bench_config *cfg, int64_t watchdog_ms) {
    dlock_options o;
    dlock_options_init(&o);
    o.url = cfg->url;
    if (watchdog_ms > 0)
        o.watchdog_ms = watchdog_ms;
    dlock_client *c = NULL;
    int rc = dlock_client_new(&o, &c);
    if (rc != DLOCK_OK) {
        fprintf(stderr, "dlock-bench: client: %s (%s)\n", dlock_err_name(rc), dlock_last_error());
        return NULL;
    }
    return c;
}

/* N handles named prefix:i; NULL on failure (all freed). */
static dlock_lock **new_locks(dlock_client *c, const char *prefix, long long n) {
    dlock_lock **locks = calloc((size_t)n, sizeof(*locks));
    for (long long i = 0; locks && i < n; i++) {
        char name[160];
        snprintf(name, sizeof(name), "%s:%lld", prefix, i);
        if (dlock_lock_new(c, name, &locks[i]) != DLOCK_OK) {
            for (long long j = 0; j < i; j++)
                dlock_lock_free(locks[j]);
            free(locks);
            return NULL;
        }
    }
    return locks;
}

static void free_locks(dlock_lock **locks, long long n) {
    for (long long i = 0; locks && i < n; i++)
        dlock_lock_free(locks[i]);
    free(locks);
}

/* ---- renewal_scale ------------------------------------------------------------------------- */

static _Atomic long long lost_leases;

static void on_lost(dlock_lock *l, uint64_t owner, int reason, void *arg) {
    (void)l, (void)owner, (void)reason, (void)arg;
    atomic_fetch_add(&lost_leases, 1);
}

long long bench_renewal_scale(const bench_config *cfg, long long n) {
    long long errors = 0;
    char prefix[128];
    snprintf(prefix, sizeof(prefix), "dlock-bench:%s:renewal:%lld", cfg->run_tag, n);
    atomic_store(&lost_leases, 0);
    redisContext *admin = bench_redis_connect(cfg->url, NULL);
    dlock_client *c = admin ? new_client(cfg, SCALE_WATCHDOG_MS) : NULL;
    op *ops = calloc((size_t)n, sizeof(*ops));
    long rss0 = rss_bytes();
    dlock_lock **locks = c && ops ? new_locks(c, prefix, n) : NULL;
    if (!locks) {
        bench_json_begin(cfg, "renewal_scale", "dlock");
        bench_json_end(1);
        free(ops);
        dlock_client_free(c);
        if (admin)
            redisFree(admin);
        return 1;
    }
    for (long long i = 0; i < n; i++)
        dlock_lock_on_lost(locks[i], on_lost, NULL);
    batch b;
    int64_t t0 = bench_now_ns();
    errors +=
        lock_all(locks, n, DO_ACQUIRE, 1, 0, DLOCK_WATCHDOG, true, NULL, ops, &b, 120000, true);
    int64_t acquire_ns = bench_now_ns() - t0;
    long rss1 = rss_bytes();

    /* Hold for SCALE_PERIODS renewal periods. */
    long long all0 = 0, scripts0 = 0, all1 = 0, scripts1 = 0;
    bench_sleep_ns(100 * 1000000LL);
    double cpu0 = cpu_us(), server0 = server_cpu_us(admin);
    if (command_calls(admin, &all0, &scripts0) != 0)
        errors++;
    int64_t h0 = bench_now_ns();
    bench_sleep_ns((int64_t)SCALE_PERIODS * SCALE_WATCHDOG_MS / 3 * 1000000LL);
    if (command_calls(admin, &all1, &scripts1) != 0)
        errors++;
    double cpu1 = cpu_us(), server1 = server_cpu_us(admin);
    double periods = (double)(bench_now_ns() - h0) / 1e6 / (SCALE_WATCHDOG_MS / 3.0);

    /* Still held? A sample of keys, spread over the N. */
    int held = 0;
    for (int k = 0; k < SCALE_SAMPLE; k++) {
        long long i = (long long)k * n / SCALE_SAMPLE;
        redisReply *r = redisCommand(admin, "PTTL %s", dlock_lock_name(locks[i]));
        if (r && r->type == REDIS_REPLY_INTEGER && r->integer > 0)
            held++;
        if (r)
            freeReplyObject(r);
    }
    long long lost = atomic_load(&lost_leases);
    if (lost || held != SCALE_SAMPLE) {
        fprintf(stderr,
                "dlock-bench: renewal_scale N=%lld: %lld leases lost, %d of %d sampled "
                "keys held\n",
                n, lost, held, SCALE_SAMPLE);
        errors++;
    }
    t0 = bench_now_ns();
    errors += lock_all(locks, n, DO_RELEASE, 1, 0, 0, true, NULL, ops, &b, 120000, true);
    int64_t release_ns = bench_now_ns() - t0;

    double commands = (double)(all1 - all0) / periods,
           scripts = (double)(scripts1 - scripts0) / periods;
    bench_json_begin(cfg, "renewal_scale", "dlock");
    bench_json_open("params");
    bench_json_int("locks", n);
    bench_json_int("watchdog_ms", SCALE_WATCHDOG_MS);
    bench_json_int("period_ms", SCALE_WATCHDOG_MS / 3);
    bench_json_int("periods", SCALE_PERIODS);
    bench_json_int("renew_batch", 100);
    bench_json_str("api", "dlock_lock_acquire_async(owner 1, wait 0, DLOCK_WATCHDOG), "
                          "1000 in flight, one client");
    bench_json_close();
    bench_json_open("figures");
    bench_json_num("acquire_all_ms", (double)acquire_ns / 1e6);
    bench_json_num("acquires_per_s", (double)n / ((double)acquire_ns / 1e9));
    bench_json_num("commands_per_period", commands);
    bench_json_num("scripts_per_period", scripts);
    bench_json_num("locks_per_script", scripts > 0 ? (double)n / scripts : NAN);
    bench_json_num("client_cpu_ms_per_period", (cpu1 - cpu0) / 1000.0 / periods);
    bench_json_num("client_cpu_us_per_lock_per_period", (cpu1 - cpu0) / periods / (double)n);
    bench_json_num("server_cpu_ms_per_period", (server1 - server0) / 1000.0 / periods);
    bench_json_num("rss_mb_held", (double)rss1 / 1048576.0);
    bench_json_num("rss_bytes_per_lock", (double)(rss1 - rss0) / (double)n);
    bench_json_int("lost", lost);
    bench_json_int("sample_held", held);
    bench_json_int("sample", SCALE_SAMPLE);
    bench_json_num("release_all_ms", (double)release_ns / 1e6);
    bench_json_close();
    bench_json_end(errors);

    free_locks(locks, n);
    free(ops);
    dlock_client_free(c);
    redisFree(admin);
    return errors;
}

/* ---- waiters_scale ------------------------------------------------------------------------- */

/* Subscriber connections and their channels (sum of sub=), from CLIENT LIST TYPE pubsub. */
static int pubsub_clients(redisContext *rc, long long *conns, long long *channels) {
    redisReply *r = redisCommand(rc, "CLIENT LIST TYPE pubsub");
    if (!r || r->type != REDIS_REPLY_STRING) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    *conns = *channels = 0;
    for (const char *line = r->str; line && *line; line = strchr(line, '\n')) {
        if (*line == '\n')
            line++;
        if (!*line)
            break;
        (*conns)++;
        const char *sub = strstr(line, " sub=");
        const char *eol = strchr(line, '\n');
        if (sub && (!eol || sub < eol))
            *channels += atoll(sub + 5);
    }
    freeReplyObject(r);
    return 0;
}

long long bench_waiters_scale(const bench_config *cfg, long long n) {
    long long errors = 0;
    char prefix[128];
    snprintf(prefix, sizeof(prefix), "dlock-bench:%s:waiters:%lld", cfg->run_tag, n);
    redisContext *admin = bench_redis_connect(cfg->url, NULL);
    dlock_client *holder = admin ? new_client(cfg, 0) : NULL;
    dlock_lock **held = holder ? new_locks(holder, prefix, n) : NULL;
    op *ops = calloc((size_t)n, sizeof(*ops)), *wops = calloc((size_t)n, sizeof(*wops));
    int64_t *released = calloc((size_t)n, sizeof(int64_t)),
            *woken = calloc((size_t)n, sizeof(int64_t));
    long long conns0 = 0, channels0 = 0;
    batch b, wb;
    if (!held || !ops || !wops || !released || !woken ||
        pubsub_clients(admin, &conns0, &channels0) != 0 ||
        lock_all(held, n, DO_ACQUIRE, 1, 0, BENCH_LEASE_MS, true, NULL, ops, &b, 120000, true)) {
        bench_json_begin(cfg, "waiters_scale", "dlock");
        bench_json_end(1);
        free_locks(held, n);
        dlock_client_free(holder);
        if (admin)
            redisFree(admin);
        free(ops), free(wops), free(released), free(woken);
        return 1;
    }

    long rss0 = rss_bytes();
    dlock_client *waiter = new_client(cfg, 0);
    dlock_lock **waits = waiter ? new_locks(waiter, prefix, n) : NULL;
    long long conns = 0, channels = 0;
    int64_t subscribe_ns = 0, t0 = bench_now_ns();
    if (waits) {
        lock_all(waits, n, DO_ACQUIRE, 2, DLOCK_FOREVER, BENCH_LEASE_MS, false, woken, wops, &wb, 0,
                 false);
        int64_t give_up = t0 + 60000 * 1000000LL;
        while (bench_now_ns() < give_up) {
            if (pubsub_clients(admin, &conns, &channels) != 0) {
                errors++;
                break;
            }
            if (channels - channels0 >= n)
                break;
            bench_sleep_ns(5 * 1000000);
        }
        subscribe_ns = bench_now_ns() - t0;
        if (channels - channels0 < n) {
            fprintf(stderr, "dlock-bench: waiters_scale N=%lld: only %lld channels subscribed\n", n,
                    channels - channels0);
            errors++;
        }
    } else {
        errors++;
    }
    bench_sleep_ns(200 * 1000000LL); /* the attempts after the confirmations */
    long rss1 = rss_bytes();
    long long early = waits ? atomic_load(&wb.done) : 0;
    if (early) {
        fprintf(stderr, "dlock-bench: waiters_scale: %lld waiters done before the release\n",
                early);
        errors++;
    }

    bench_counters before = {0}, after = {0};
    if (bench_counters_read(admin, RUSAGE_SELF, &before) != 0)
        errors++;
    t0 = bench_now_ns();
    errors += lock_all(held, n, DO_RELEASE, 1, 0, 0, true, released, ops, &b, 120000, true);
    bool all_woken = false;
    if (waits) {
        if (batch_wait(&wb, 60000) != 0)
            errors += n - atomic_load(&wb.done);
        else
            all_woken = true;
        errors += atomic_load(&wb.failed);
        if (all_woken)
            batch_destroy(&wb);
    }
    if (bench_counters_read(admin, RUSAGE_SELF, &after) != 0)
        errors++;
    int64_t last_release = t0, last_wake = t0;
    bench_samples wake = {0};
    for (long long i = 0; waits && i < n; i++) {
        last_release = released[i] > last_release ? released[i] : last_release;
        last_wake = woken[i] > last_wake ? woken[i] : last_wake;
        if (woken[i] && released[i] && bench_samples_push(&wake, woken[i] - released[i]) != 0)
            errors++;
    }
    bench_samples_sort(&wake);

    bench_json_begin(cfg, "waiters_scale", "dlock");
    bench_json_open("params");
    bench_json_int("waiters", n);
    bench_json_int("locks", n);
    bench_json_int("lease_ms", BENCH_LEASE_MS);
    bench_json_str("api", "dlock_lock_acquire_async(owner 2, DLOCK_FOREVER) on N locks held by "
                          "another client, which then releases them all (1000 in flight)");
    bench_json_close();
    bench_json_open("figures");
    bench_json_int("subscriber_connections", conns - conns0);
    bench_json_int("channels", channels - channels0);
    bench_json_num("subscribe_all_ms", (double)subscribe_ns / 1e6);
    bench_json_num("rss_mb", (double)rss1 / 1048576.0);
    bench_json_num("rss_bytes_per_waiter", (double)(rss1 - rss0) / (double)n);
    bench_json_num("release_all_ms", (double)(last_release - t0) / 1e6);
    bench_json_num("wake_all_ms", (double)(last_wake - t0) / 1e6);
    bench_json_latency("wake", &wake);
    bench_json_counters(&before, &after, (double)n, "waiter", true);
    bench_json_close();
    bench_json_end(errors);

    if (all_woken)
        lock_all(waits, n, DO_RELEASE, 2, 0, 0, true, NULL, wops, &wb, 120000, true);
    bench_samples_free(&wake);
    free_locks(waits, n);
    free_locks(held, n);
    dlock_client_free(waiter);
    dlock_client_free(holder);
    redisFree(admin);
    free(ops), free(wops), free(released), free(woken);
    return errors;
}

/* ---- client_pair --------------------------------------------------------------------------- */

typedef struct own_client {
    dlock_client *client;
    dlock_lock *lock;
} own_client;

static void own_close(void *h) {
    own_client *w = h;
    if (!w)
        return;
    dlock_lock_free(w->lock);
    dlock_client_free(w->client);
    free(w);
}

static int own_open(const bench_config *cfg, const char *name, void *shared, void **out) {
    (void)shared;
    own_client *w = calloc(1, sizeof(*w));
    if (!w || !(w->client = new_client(cfg, 0))) {
        free(w);
        return -1;
    }
    int rc = dlock_lock_new(w->client, name, &w->lock);
    if (rc != DLOCK_OK) {
        fprintf(stderr, "dlock-bench: lock: %s (%s)\n", dlock_err_name(rc), dlock_last_error());
        own_close(w);
        return -1;
    }
    *out = w;
    return 0;
}

static int own_acquire(void *h) {
    own_client *w = h;
    int rc = dlock_lock_acquire(w->lock, BENCH_LEASE_MS);
    if (rc != DLOCK_OK)
        fprintf(stderr, "dlock-bench: acquire: %s (%s)\n", dlock_err_name(rc), dlock_last_error());
    return rc == DLOCK_OK ? 0 : -1;
}

static int own_release(void *h) {
    own_client *w = h;
    int rc = dlock_lock_release(w->lock);
    if (rc != DLOCK_OK)
        fprintf(stderr, "dlock-bench: release: %s (%s)\n", dlock_err_name(rc), dlock_last_error());
    return rc == DLOCK_OK ? 0 : -1;
}

static const bench_impl client_per_thread_impl = {
    .client = "dlock",
    .api = "dlock_lock_acquire(lease 30000 ms) + dlock_lock_release; a client per thread",
    .connection_per_worker = true,
    .open_worker = own_open,
    .close_worker = own_close,
    .acquire = own_acquire,
    .release = own_release,
};

long long bench_client_pair(const bench_config *cfg, const bench_floor *floor, int threads) {
    return bench_pairs(cfg, floor, &client_per_thread_impl, "client_pair", threads);
}
