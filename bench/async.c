/* SPDX-License-Identifier: MIT */
/* async.c — async_pairs: the async face at the server's ceiling. One client on the
 * benchmark's own libev loop (dlock_client_new_on_loop), one thread for everything, keeps
 * ASYNC_IN_FLIGHT acquisitions in flight on as many distinct lock names for the duration:
 * each slot loops dlock_lock_acquire_async(wait 0, lease 30 s) -> its callback starts
 * dlock_lock_release_async -> its callback counts the pair and starts the next acquire.
 *
 * No thread wakes another: every call is made and every callback runs on the loop, so the
 * pairs/s this reaches tells how close the client's pipeline comes to the server's script
 * ceiling (floor_script -P 16) divided by the scripts a pair needs. The first
 * ASYNC_WARMUP_MS of the run (the connection, SCRIPT LOAD, the first round of the slots)
 * are not counted: pairs are counted from then to the deadline, and the pair latency
 * (acquire call -> release callback) of those pairs is kept. The command calls and CPU per
 * pair are taken over the whole run (warm-up included), from the counters read before and
 * after it. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "bench.h"
#include "dlock.h"
#include "dlock/adapters/libev.h"

#define ASYNC_IN_FLIGHT 256
#define ASYNC_WARMUP_MS 300
#define ASYNC_MAX_ERRORS 1000
#define ASYNC_DRAIN_MS 10000 /* after the deadline, the slots in flight must finish by then */

typedef struct async_run async_run;

typedef struct slot {
    async_run *run;
    dlock_lock *lock;
    uint64_t owner;
    int64_t started_ns; /* the acquire call of the pair in flight */
    bool busy;
} slot;

struct async_run {
    struct ev_loop *loop;
    ev_timer guard;
    int64_t count_from_ns, deadline_ns;
    long long pairs_all, pairs_counted, errors;
    int busy;
    bench_samples latency;
    slot slots[ASYNC_IN_FLIGHT];
};

static void slot_idle(slot *s) {
    s->busy = false;
    if (--s->run->busy == 0)
        ev_break(s->run->loop, EVBREAK_ALL);
}

static void slot_error(slot *s, const char *what, int rc) {
    if (s->run->errors++ < 5)
        fprintf(stderr, "dlock-bench: async_pairs %s: %s (%s)\n", what, dlock_err_name(rc),
                dlock_last_error());
}

static void acquired(dlock_lock *l, int status, void *arg);

/* Starts the slot's next pair, unless the run is over or failing. */
static void slot_next(slot *s) {
    async_run *r = s->run;
    s->started_ns = bench_now_ns();
    if (s->started_ns >= r->deadline_ns || r->errors >= ASYNC_MAX_ERRORS) {
        slot_idle(s);
        return;
    }
    int rc = dlock_lock_acquire_async(s->lock, s->owner, 0, BENCH_LEASE_MS, acquired, s);
    if (rc != DLOCK_OK) {
        slot_error(s, "acquire_async", rc);
        slot_idle(s);
    }
}

static void released(dlock_lock *l, int status, void *arg) {
    (void)l;
    slot *s = arg;
    async_run *r = s->run;
    if (status != DLOCK_OK) {
        slot_error(s, "release callback", status);
        slot_idle(s);
        return;
    }
    int64_t now = bench_now_ns();
    r->pairs_all++;
    if (s->started_ns >= r->count_from_ns && now <= r->deadline_ns) {
        r->pairs_counted++;
        if (bench_samples_push(&r->latency, now - s->started_ns) != 0)
            r->errors++;
    }
    slot_next(s);
}

static void acquired(dlock_lock *l, int status, void *arg) {
    slot *s = arg;
    if (status != DLOCK_OK) { /* wait 0 on a name of its own: never taken, so a failure */
        slot_error(s, "acquire callback", status);
        slot_idle(s);
        return;
    }
    int rc = dlock_lock_release_async(l, s->owner, released, s);
    if (rc != DLOCK_OK) {
        slot_error(s, "release_async", rc);
        slot_idle(s);
    }
}

static void guard_expired(struct ev_loop *loop, ev_timer *t, int revents) {
    (void)revents;
    async_run *r = t->data;
    fprintf(stderr, "dlock-bench: async_pairs: %d pairs still in flight %d ms after the deadline\n",
            r->busy, ASYNC_DRAIN_MS);
    r->errors += r->busy;
    ev_break(loop, EVBREAK_ALL);
}

/* Makes the client and the handles, runs the loop until every slot is idle (or the guard
 * fires), frees everything on this thread (the loop thread). */
static void run_slots(const bench_config *cfg, async_run *r) {
    dlock_options o;
    dlock_options_init(&o);
    o.url = cfg->url;
    dlock_client *client = NULL;
    int rc = dlock_client_new_on_loop(&o, r->loop, &client);
    if (rc != DLOCK_OK) {
        fprintf(stderr, "dlock-bench: async_pairs client: %s (%s)\n", dlock_err_name(rc),
                dlock_last_error());
        r->errors++;
        return;
    }
    int made = 0;
    for (; made < ASYNC_IN_FLIGHT; made++) {
        char name[160];
        snprintf(name, sizeof(name), "dlock-bench:%s:async:%d", cfg->run_tag, made);
        slot *s = &r->slots[made];
        *s = (slot){.run = r, .owner = (uint64_t)made + 1};
        if ((rc = dlock_lock_new(client, name, &s->lock)) != DLOCK_OK) {
            slot_error(s, "lock", rc);
            break;
        }
    }
    int64_t start = bench_now_ns();
    r->count_from_ns = start + ASYNC_WARMUP_MS * 1000000LL;
    r->deadline_ns = r->count_from_ns + cfg->duration_ms * 1000000LL;
    ev_timer_init(&r->guard, guard_expired,
                  (double)(ASYNC_WARMUP_MS + cfg->duration_ms + ASYNC_DRAIN_MS) / 1000.0, 0.);
    r->guard.data = r;
    ev_timer_start(r->loop, &r->guard);
    for (int i = 0; made == ASYNC_IN_FLIGHT && i < made; i++) {
        r->busy++;
        r->slots[i].busy = true;
        slot_next(&r->slots[i]);
    }
    if (r->busy > 0)
        ev_run(r->loop, 0);
    ev_timer_stop(r->loop, &r->guard);
    for (int i = 0; i < made; i++)
        dlock_lock_free(r->slots[i].lock);
    if ((rc = dlock_client_free(client)) != DLOCK_OK) {
        fprintf(stderr, "dlock-bench: async_pairs client_free: %s\n", dlock_err_name(rc));
        r->errors++;
    }
}

long long bench_async_pairs(const bench_config *cfg, const bench_floor *floor) {
    async_run *r = calloc(1, sizeof(*r));
    redisContext *admin = bench_redis_connect(cfg->url, NULL);
    long long errors = 0;
    bench_counters before = {0}, after = {0};
    if (!r || !admin || !(r->loop = ev_loop_new(EVFLAG_AUTO)) ||
        bench_counters_read(admin, RUSAGE_SELF, &before) != 0) {
        errors++;
    } else {
        run_slots(cfg, r);
        errors += r->errors;
        if (bench_counters_read(admin, RUSAGE_SELF, &after) != 0)
            errors++;
    }
    long long counted = r ? r->pairs_counted : 0;
    if (r)
        bench_samples_sort(&r->latency);

    bench_json_begin(cfg, "async_pairs", "dlock");
    bench_json_open("params");
    bench_json_int("in_flight", ASYNC_IN_FLIGHT);
    bench_json_int("locks", ASYNC_IN_FLIGHT);
    bench_json_int("clients", 1);
    bench_json_int("threads", 1);
    bench_json_int("duration_ms", cfg->duration_ms);
    bench_json_int("warmup_ms", ASYNC_WARMUP_MS);
    bench_json_int("lease_ms", BENCH_LEASE_MS);
    bench_json_str("api", "dlock_client_new_on_loop (libev) + dlock_lock_acquire_async(wait 0, "
                          "lease 30000 ms) -> dlock_lock_release_async, 256 in flight on 256 "
                          "locks, one thread");
    bench_json_close();
    bench_json_open("figures");
    bench_json_int("pairs", counted);
    bench_json_num("pairs_per_s", (double)counted / ((double)cfg->duration_ms / 1000.0));
    if (r)
        bench_json_latency("pair", &r->latency);
    bench_json_floor(floor);
    bench_json_counters(&before, &after, r && r->pairs_all ? (double)r->pairs_all : 1, "pair",
                        true);
    bench_json_close();
    bench_json_end(errors);

    if (r) {
        bench_samples_free(&r->latency);
        if (r->loop)
            ev_loop_destroy(r->loop);
        free(r);
    }
    if (admin)
        redisFree(admin);
    return errors;
}
