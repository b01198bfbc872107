/* SPDX-License-Identifier: MIT */
/* test_stats_idle.c — every gauge of dlock_client_stats() (calls_in_flight, waits,
 * leases_held, subscriptions) is back at its idle value, 0, once the work ends: for every
 * primitive, on both faces (clients with an I/O thread of their own, and clients on the
 * test's libev loop), MultiLock and RedLock included with members on two clients.
 *
 * One table: each kind of object goes through each scene, on each face, as a test of its
 * own. The scenes drive what a service lives through: a hold handed to a waiter of the
 * other client; a waiting call canceled by its handle's free; a waiting client freed
 * (handle, then client, at once); and the same hand-over with resends (SCRIPT FLUSH before
 * each side's call, every connection killed while the waiter sleeps). A few more tests
 * drive the internal work of the composites: a RedLock that fails its quorum and gives back
 * what it took, frees made on the client's loop thread (from a callback), a member's loss
 * carried home from another client, and a member's answer that finds its home client freed
 * (it stays where it is: no use of the freed client). After each, the test waits (polls, or runs
 * the loop) until every gauge of every client still open is idle, within a generous bound, then
 * asserts each one exactly, naming the gauge and the client (the admin client, which sets objects
 * up, included). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <ev.h>

#include "dlock.h"
#include "dlock/adapters/libev.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 120
#define NAME "idle"
#define WATCHDOG_MS 3000 /* a renewal every second: a lost lease is seen within seconds */
#define OWNER_A 5
#define OWNER_B 7
#define CLIENTS 3 /* c[0], c[1] stay open; c[2] is the client a scene frees */

/* ---- the gauges and their idle values ------------------------------------------------------ */

static const struct gauge {
    const char *name;
    size_t offset;
} GAUGES[] = {
    {"calls_in_flight", offsetof(dlock_stats, calls_in_flight)},
    {"waits", offsetof(dlock_stats, waits)},
    {"leases_held", offsetof(dlock_stats, leases_held)},
    {"subscriptions", offsetof(dlock_stats, subscriptions)},
};
#define NGAUGES (sizeof(GAUGES) / sizeof(GAUGES[0]))

static int64_t gauge_of(dlock_client *c, const struct gauge *g) {
    dlock_stats s;
    dlock_stats_init(&s);
    ASSERT_OK(dlock_client_stats(c, &s));
    int64_t v;
    memcpy(&v, (const char *)&s + g->offset, sizeof(v));
    return v;
}

/* ---- the world: a server and the clients of one face ---------------------------------------- */

typedef struct world {
    bool on_loop; /* the clients run on the test's libev loop, else on I/O threads */
    redis_fixture *f;
    struct ev_loop *loop;
    ev_timer tick;
    dlock_client *c[CLIENTS];
    dlock_client *admin; /* a blocking client that sets objects up and plays the outsider */
} world;

static dlock_client *client_new(world *w, bool on_loop) {
    test_client_cfg cfg = {.watchdog_ms = WATCHDOG_MS};
    if (!on_loop)
        return connect_client_cfg(w->f, cfg);
    dlock_options o;
    test_client_options(w->f, &cfg, &o);
    dlock_client *c = NULL;
    ASSERT_OK(dlock_client_new_on_loop(&o, w->loop, &c));
    sync_with_client(w->loop, c, slack_ms(5000)); /* connected */
    return c;
}

/* One step of waiting: the loop runs (its 2 ms tick bounds the turn), or a short sleep. */
static void step(world *w) {
    if (w->on_loop)
        ev_run(w->loop, EVRUN_ONCE);
    else
        test_sleep_ms(2);
}

#define WAIT_FOR(w, cond, what)                                                                    \
    do {                                                                                           \
        int64_t until_ = test_now_ms() + slack_ms(10000);                                          \
        while (!(cond)) {                                                                          \
            if (test_now_ms() >= until_)                                                           \
                fail_msg("%s: not within %lld ms", (what), (long long)slack_ms(10000));            \
            step(w);                                                                               \
        }                                                                                          \
    } while (0)

/* The clients still open: c[0..CLIENTS-1] (NULL once freed), then the admin. */
static dlock_client *client_at(world *w, int i) {
    return i < CLIENTS ? w->c[i] : w->admin;
}

static bool all_idle(world *w) {
    for (int i = 0; i <= CLIENTS; i++)
        for (size_t g = 0; client_at(w, i) && g < NGAUGES; g++)
            if (gauge_of(client_at(w, i), &GAUGES[g]) != 0)
                return false;
    return true;
}

/* Waits for every gauge of every open client to be idle, then asserts each exactly. */
static void assert_idle(world *w) {
    int64_t until = test_now_ms() + slack_ms(10000);
    while (!all_idle(w) && test_now_ms() < until)
        step(w);
    for (int i = 0; i <= CLIENTS; i++)
        for (size_t g = 0; client_at(w, i) && g < NGAUGES; g++) {
            int64_t v = gauge_of(client_at(w, i), &GAUGES[g]);
            if (v != 0)
                fail_msg("client %d%s: stats.%s = %lld after the work ended, idle is 0", i,
                         i == CLIENTS ? " (admin)" : "", GAUGES[g].name, (long long)v);
        }
}

static void world_open(world *w, bool on_loop) {
    memset(w, 0, sizeof(*w));
    w->on_loop = on_loop;
    w->f = start_server();
    if (on_loop)
        w->loop = polling_loop_new(&w->tick);
    for (int i = 0; i < CLIENTS; i++)
        w->c[i] = client_new(w, on_loop);
    w->admin = client_new(w, false);
}

static void client_free(world *w, int i) {
    ASSERT_OK(dlock_client_free(w->c[i]));
    w->c[i] = NULL;
}

static void world_close(world *w) {
    for (int i = 0; i < CLIENTS; i++)
        if (w->c[i])
            client_free(w, i);
    ASSERT_OK(dlock_client_free(w->admin));
    if (w->loop)
        polling_loop_free(w->loop, &w->tick);
    redis_fixture_stop(w->f);
}

/* ---- the answers of async calls ---------------------------------------------------------- */

typedef struct subject subject;

typedef struct done {
    atomic_int calls;
    int status;
    subject *t; /* permits: where the permit's id goes */
} done;

static bool answered(done *d) {
    return atomic_load(&d->calls) > 0;
}

/* ---- a kind of object: one handle (or composite) on a client, and its calls ----------------- */

struct subject {
    dlock_lock *l; /* every lock kind; a composite */
    dlock_rwlock *rw;
    dlock_lock *members[3];
    size_t nmembers;
    dlock_semaphore *s;
    dlock_permits *p;
    dlock_permit_id id;
    dlock_latch *latch;
};

typedef struct kind {
    const char *what;
    /* role 0 (A, the holder) or 1 (B, the waiter) of the object, homed on client `home`; a
     * composite's other member lives on client `other` */
    void (*open)(world *w, subject *t, int role, int home, int other);
    void (*prepare)(world *w); /* the object's starting state, set through w->admin */
    int (*take)(subject *t);   /* blocking face; NULL: nothing to do */
    int (*give)(subject *t);
    int (*take_async)(subject *t, uint64_t owner, int64_t wait_ms, done *d);
    int (*give_async)(subject *t, uint64_t owner, done *d);
    int (*query)(subject *t); /* blocking face: a few reads */
    void (*free)(subject *t);
    bool waits_seen; /* a waiting B shows in stats.waits (a RedLock retries in rounds instead) */
} kind;

static void note_answer(done *d, int status) {
    d->status = status;
    atomic_fetch_add(&d->calls, 1); /* last: the test thread reads status after it */
}

static void lock_answered(dlock_lock *l, int status, void *arg) {
    (void)l;
    note_answer(arg, status);
}

static void sem_answered(dlock_semaphore *s, int status, void *arg) {
    (void)s;
    note_answer(arg, status);
}

static void permits_answered(dlock_permits *p, int status, const dlock_permit_id *id, void *arg) {
    (void)p;
    done *d = arg;
    if (status == DLOCK_OK && id)
        d->t->id = *id;
    note_answer(d, status);
}

static void latch_answered(dlock_latch *l, int status, void *arg) {
    (void)l;
    note_answer(arg, status);
}

/* locks: plain, fenced, fair, spin, read-write, and the composites over plain locks */

static void one_lock_open(world *w, subject *t, int home,
                          int (*make)(dlock_client *, const char *, dlock_lock **)) {
    ASSERT_OK(make(w->c[home], NAME, &t->l));
}

#define ONE_LOCK_OPEN(fn, make)                                                                    \
    static void fn(world *w, subject *t, int role, int home, int other) {                          \
        (void)role;                                                                                \
        (void)other;                                                                               \
        one_lock_open(w, t, home, make);                                                           \
    }
ONE_LOCK_OPEN(plain_open, dlock_lock_new)
ONE_LOCK_OPEN(fenced_open, dlock_fencedlock_new)
ONE_LOCK_OPEN(fair_open, dlock_fairlock_new)
ONE_LOCK_OPEN(spin_open, dlock_spinlock_new)

/* A holds the write half, B waits for the read half. */
static void rw_open(world *w, subject *t, int role, int home, int other) {
    (void)other;
    ASSERT_OK(dlock_rwlock_new(w->c[home], NAME, &t->rw));
    t->l = role == 0 ? dlock_rwlock_write(t->rw) : dlock_rwlock_read(t->rw);
}

/* Members "idle.0", "idle.1", ...: even ones on home, odd ones on other. */
static void composite_open(world *w, subject *t, int home, int other, size_t n,
                           int (*make)(dlock_lock *const *, size_t, dlock_lock **)) {
    t->nmembers = n;
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof(name), NAME ".%zu", i);
        ASSERT_OK(dlock_lock_new(w->c[i % 2 ? other : home], name, &t->members[i]));
    }
    ASSERT_OK(make(t->members, n, &t->l));
}

static void multilock_open(world *w, subject *t, int role, int home, int other) {
    (void)role;
    composite_open(w, t, home, other, 2, dlock_multilock_new);
}

static void redlock_open(world *w, subject *t, int role, int home, int other) {
    (void)role;
    composite_open(w, t, home, other, 3, dlock_redlock_new);
}

static int lock_take(subject *t) {
    return dlock_lock_acquire(t->l, DLOCK_WATCHDOG);
}

static int lock_give(subject *t) {
    return dlock_lock_release(t->l);
}

static int lock_take_async(subject *t, uint64_t owner, int64_t wait_ms, done *d) {
    return dlock_lock_acquire_async(t->l, owner, wait_ms, DLOCK_WATCHDOG, lock_answered, d);
}

static int lock_give_async(subject *t, uint64_t owner, done *d) {
    return dlock_lock_release_async(t->l, owner, lock_answered, d);
}

static int lock_query(subject *t) {
    bool yes = false;
    int64_t ttl = 0;
    int rc = dlock_lock_is_locked(t->l, &yes);
    if (rc == DLOCK_OK)
        rc = dlock_lock_is_held(t->l, &yes);
    return rc == DLOCK_OK ? dlock_lock_ttl(t->l, &ttl) : rc;
}

static void lock_free(subject *t) {
    if (t->rw)
        dlock_rwlock_free(t->rw);
    else
        dlock_lock_free(t->l); /* a composite goes before its members */
    for (size_t i = 0; i < t->nmembers; i++)
        dlock_lock_free(t->members[i]);
}

#define LOCK_KIND(what_, open_, waits_seen_)                                                       \
    {                                                                                              \
        .what = (what_), .open = (open_), .take = lock_take, .give = lock_give,                    \
        .take_async = lock_take_async, .give_async = lock_give_async, .query = lock_query,         \
        .free = lock_free, .waits_seen = (waits_seen_),                                            \
    }

/* semaphore: one permit */

static void semaphore_open(world *w, subject *t, int role, int home, int other) {
    (void)role;
    (void)other;
    ASSERT_OK(dlock_semaphore_new(w->c[home], NAME, &t->s));
}

static void semaphore_prepare(world *w) {
    dlock_semaphore *s = NULL;
    ASSERT_OK(dlock_semaphore_new(w->admin, NAME, &s));
    ASSERT_OK(dlock_semaphore_try_set_permits(s, 1, NULL));
    dlock_semaphore_free(s);
}

static int semaphore_take(subject *t) {
    return dlock_semaphore_acquire(t->s, 1);
}

static int semaphore_give(subject *t) {
    return dlock_semaphore_release(t->s, 1);
}

static int semaphore_take_async(subject *t, uint64_t owner, int64_t wait_ms, done *d) {
    (void)owner;
    return dlock_semaphore_acquire_async(t->s, 1, wait_ms, sem_answered, d);
}

static int semaphore_give_async(subject *t, uint64_t owner, done *d) {
    (void)owner;
    return dlock_semaphore_release_async(t->s, 1, sem_answered, d);
}

static int semaphore_query(subject *t) {
    int64_t n = 0;
    return dlock_semaphore_available(t->s, &n);
}

static void semaphore_free(subject *t) {
    dlock_semaphore_free(t->s);
}

/* expirable permits: one permit, leased */

static void permits_open(world *w, subject *t, int role, int home, int other) {
    (void)role;
    (void)other;
    ASSERT_OK(dlock_permits_new(w->c[home], NAME, &t->p));
}

static void permits_prepare(world *w) {
    dlock_permits *p = NULL;
    ASSERT_OK(dlock_permits_new(w->admin, NAME, &p));
    ASSERT_OK(dlock_permits_try_set_permits(p, 1, NULL));
    dlock_permits_free(p);
}

static int permits_take(subject *t) {
    return dlock_permits_acquire(t->p, DLOCK_FOREVER, 60000, &t->id);
}

static int permits_give(subject *t) {
    return dlock_permits_release(t->p, &t->id);
}

static int permits_take_async(subject *t, uint64_t owner, int64_t wait_ms, done *d) {
    (void)owner;
    d->t = t;
    return dlock_permits_acquire_async(t->p, wait_ms, 60000, permits_answered, d);
}

static int permits_give_async(subject *t, uint64_t owner, done *d) {
    (void)owner;
    return dlock_permits_release_async(t->p, &t->id, permits_answered, d);
}

static int permits_query(subject *t) {
    int64_t n = 0;
    return dlock_permits_available(t->p, &n);
}

static void permits_free(subject *t) {
    dlock_permits_free(t->p);
}

/* latch: set to 1 by prepare; A counts it down, B awaits it */

static void latch_open(world *w, subject *t, int role, int home, int other) {
    (void)role;
    (void)other;
    ASSERT_OK(dlock_latch_new(w->c[home], NAME, &t->latch));
}

static void latch_prepare(world *w) {
    dlock_latch *l = NULL;
    ASSERT_OK(dlock_latch_new(w->admin, NAME, &l));
    ASSERT_OK(dlock_latch_try_set_count(l, 1, NULL));
    dlock_latch_free(l);
}

static int latch_give(subject *t) {
    return dlock_latch_count_down(t->latch);
}

static int latch_take_async(subject *t, uint64_t owner, int64_t wait_ms, done *d) {
    (void)owner;
    return dlock_latch_await_async(t->latch, wait_ms, latch_answered, d);
}

static int latch_give_async(subject *t, uint64_t owner, done *d) {
    (void)owner;
    return dlock_latch_count_down_async(t->latch, latch_answered, d);
}

static int latch_query(subject *t) {
    int64_t n = 0;
    return dlock_latch_count(t->latch, &n);
}

static void latch_free(subject *t) {
    dlock_latch_free(t->latch);
}

static const kind KINDS[] = {
    LOCK_KIND("lock", plain_open, true),
    LOCK_KIND("fencedlock", fenced_open, true),
    LOCK_KIND("fairlock", fair_open, true),
    LOCK_KIND("spinlock", spin_open, true),
    LOCK_KIND("rwlock", rw_open, true),
    LOCK_KIND("multilock", multilock_open, true),
    LOCK_KIND("redlock", redlock_open, false),
    {"semaphore", semaphore_open, semaphore_prepare, semaphore_take, semaphore_give,
     semaphore_take_async, semaphore_give_async, semaphore_query, semaphore_free, true},
    {"permits", permits_open, permits_prepare, permits_take, permits_give, permits_take_async,
     permits_give_async, permits_query, permits_free, true},
    {"latch", latch_open, latch_prepare, NULL, latch_give, latch_take_async, latch_give_async,
     latch_query, latch_free, true},
};
#define NKINDS (sizeof(KINDS) / sizeof(KINDS[0]))

/* ---- the two sides' calls, on either face -------------------------------------------------- */

/* A's take and give: blocking on the blocking face, async on the loop face (where the
 * test's thread is the loop's and may not block). */
static void side_take(world *w, const kind *k, subject *t) {
    if (!w->on_loop) {
        if (k->take)
            ASSERT_OK(k->take(t));
        return;
    }
    if (!k->take)
        return;
    done d = {.t = t};
    ASSERT_OK(k->take_async(t, OWNER_A, DLOCK_FOREVER, &d));
    WAIT_FOR(w, answered(&d), "A's take");
    ASSERT_OK(d.status);
}

static void side_give(world *w, const kind *k, subject *t, uint64_t owner) {
    if (!w->on_loop && owner == OWNER_A) {
        ASSERT_OK(k->give(t));
        return;
    }
    done d = {.t = t};
    ASSERT_OK(k->give_async(t, owner, &d));
    WAIT_FOR(w, answered(&d), "a give");
    ASSERT_OK(d.status);
}

static int64_t total_waits(world *w) {
    int64_t n = 0;
    for (int i = 0; i < CLIENTS; i++)
        if (w->c[i])
            n += gauge_of(w->c[i], &GAUGES[1]);
    return n;
}

/* B's take, started while A holds: returns once B waits (or, for a RedLock, has tried a
 * round: every member said busy). */
static void waiter_start(world *w, const kind *k, subject *b, done *d) {
    long long scripts = script_calls(w->f);
    ASSERT_OK(k->take_async(b, OWNER_B, DLOCK_FOREVER, d));
    if (k->waits_seen)
        WAIT_FOR(w, total_waits(w) >= 1, "B waits");
    else
        WAIT_FOR(w, script_calls(w->f) >= scripts + (long long)b->nmembers, "B tried a round");
    assert_false(answered(d));
}

/* ---- the scenes ------------------------------------------------------------------------------ */

enum scene { HAND_OVER, CANCEL, CLIENT_FREED, RESENDS, NSCENES };
static const char *const SCENE_NAMES[] = {"hand-over", "canceled wait", "waiting client freed",
                                          "resends"};

static void script_flush(world *w) {
    redisReply *r = redis_fixture_cmd(w->f, "SCRIPT FLUSH");
    assert_non_null(r);
    freeReplyObject(r);
}

static uint64_t reconnects_of(dlock_client *c) {
    dlock_stats s;
    dlock_stats_init(&s);
    ASSERT_OK(dlock_client_stats(c, &s));
    return s.reconnects;
}

/* Every connection of the clients killed; returns once both clients are back. */
static void kill_connections(world *w) {
    uint64_t before[2] = {reconnects_of(w->c[0]), reconnects_of(w->c[1])};
    assert_true(redis_fixture_client_kill_type(w->f, "normal") >= 2);
    (void)redis_fixture_client_kill_type(w->f, "pubsub");
    WAIT_FOR(w, reconnects_of(w->c[0]) > before[0] && reconnects_of(w->c[1]) > before[1],
             "both clients reconnected");
}

static void run_scene(world *w, const kind *k, enum scene scene) {
    if (k->prepare)
        k->prepare(w);
    subject a = {0}, b = {0};
    int b_home = scene == CLIENT_FREED ? 2 : 1;
    k->open(w, &a, 0, 0, 1);
    k->open(w, &b, 1, b_home, 0);
    if (scene == RESENDS)
        script_flush(w); /* A's first script call: NOSCRIPT, then sent again with its body */
    side_take(w, k, &a);
    done bd = {.t = &b};
    waiter_start(w, k, &b, &bd);
    switch (scene) {
    case HAND_OVER:
    case RESENDS:
        if (scene == RESENDS) {
            kill_connections(w); /* B's wait subscribes again and looks again */
            script_flush(w);     /* A's give: NOSCRIPT, sent again */
        }
        side_give(w, k, &a, OWNER_A);
        WAIT_FOR(w, answered(&bd), "B's take");
        /* B's attempt cut by the kill may end its wait with DLOCK_ECONN: a semaphore's is
         * not sent again, taking twice would not be the same */
        if (scene != RESENDS || bd.status != DLOCK_ECONN)
            ASSERT_OK(bd.status);
        if (k->take && bd.status == DLOCK_OK) /* a latch's awaiter has nothing to give */
            side_give(w, k, &b, OWNER_B);
        if (!w->on_loop) {
            ASSERT_OK(k->query(&a));
            ASSERT_OK(k->query(&b));
        }
        k->free(&b);
        break;
    case CANCEL:
        k->free(&b); /* on the loop face: on the loop thread, carried out on a later turn */
        WAIT_FOR(w, answered(&bd), "B's canceled take");
        ASSERT_RC(bd.status, DLOCK_ECANCELED);
        side_give(w, k, &a, OWNER_A);
        break;
    case CLIENT_FREED:
        k->free(&b);
        client_free(w, 2); /* on the loop face the free is still queued: the client ends it */
        assert_true(answered(&bd));
        ASSERT_RC(bd.status, DLOCK_ECANCELED);
        side_give(w, k, &a, OWNER_A);
        break;
    case NSCENES:
        break;
    }
    k->free(&a);
    assert_idle(w);
}

/* ---- the composites' internal work ----------------------------------------------------------- */

static bool is_locked(dlock_lock *l) {
    bool locked = true;
    ASSERT_OK(dlock_lock_is_locked(l, &locked));
    return locked;
}

/* A RedLock over idle.0 (client 0), idle.1 (client 1), idle.2 (client 0) finds idle.1 and
 * idle.2 held by an outsider: it takes idle.0, fails its quorum and gives idle.0 back. */
static void redlock_gives_back(world *w) {
    dlock_lock *outsider[2] = {NULL, NULL};
    ASSERT_OK(dlock_lock_new(w->admin, NAME ".1", &outsider[0]));
    ASSERT_OK(dlock_lock_new(w->admin, NAME ".2", &outsider[1]));
    for (int i = 0; i < 2; i++)
        ASSERT_OK(dlock_lock_try_acquire(outsider[i], 0, 60000));
    subject r = {0};
    redlock_open(w, &r, 0, 0, 1);
    done d = {0};
    ASSERT_OK(lock_take_async(&r, OWNER_A, 0, &d));
    WAIT_FOR(w, answered(&d), "the RedLock's acquire");
    ASSERT_RC(d.status, DLOCK_ETIMEDOUT);
    dlock_lock *first = NULL;
    ASSERT_OK(dlock_lock_new(w->admin, NAME ".0", &first));
    WAIT_FOR(w, !is_locked(first), "idle.0 given back");
    dlock_lock_free(first);
    lock_free(&r);
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(dlock_lock_release(outsider[i]));
        dlock_lock_free(outsider[i]);
    }
    assert_idle(w);
}

/* A handle that frees itself from its own callback: the free runs on the client's loop
 * thread (the I/O thread of a blocking client). For a composite, its members go after. */
typedef struct self_free {
    subject t;
    done taken, released;
} self_free;

static void freed_on_release(dlock_lock *l, int status, void *arg) {
    self_free *s = arg;
    dlock_lock_free(l);
    note_answer(&s->released, status);
}

static void release_on_take(dlock_lock *l, int status, void *arg) {
    self_free *s = arg;
    int rc = dlock_lock_release_async(l, OWNER_A, freed_on_release, s);
    if (rc != DLOCK_OK)
        note_answer(&s->released, rc);
    note_answer(&s->taken, status);
}

static void frees_on_the_loop_thread(world *w, const kind *k) {
    self_free s = {0};
    k->open(w, &s.t, 0, 0, 1);
    ASSERT_OK(dlock_lock_acquire_async(s.t.l, OWNER_A, DLOCK_FOREVER, DLOCK_WATCHDOG,
                                       release_on_take, &s));
    WAIT_FOR(w, answered(&s.taken) && answered(&s.released), "take, release and free");
    ASSERT_OK(s.taken.status);
    ASSERT_OK(s.released.status);
    for (size_t i = 0; i < s.t.nmembers; i++)
        dlock_lock_free(s.t.members[i]);
    assert_idle(w);
}

static atomic_int losses;

static void count_loss(dlock_lock *l, uint64_t owner, int reason, void *arg) {
    (void)l;
    (void)owner;
    (void)reason;
    (void)arg;
    atomic_fetch_add(&losses, 1);
}

/* A MultiLock homed on client 0 holds idle.1 through client 1; an outsider deletes idle.1:
 * client 1's watchdog finds the lease gone and the loss is carried home to client 0. */
static void loss_carried_home(world *w) {
    atomic_store(&losses, 0);
    subject m = {0};
    multilock_open(w, &m, 0, 0, 1);
    ASSERT_OK(dlock_lock_on_lost(m.l, count_loss, NULL));
    side_take(w, &KINDS[5], &m);
    dlock_lock *outsider = NULL;
    ASSERT_OK(dlock_lock_new(w->admin, NAME ".1", &outsider));
    bool was_locked = false;
    ASSERT_OK(dlock_lock_force_release(outsider, &was_locked));
    assert_true(was_locked);
    WAIT_FOR(w, atomic_load(&losses) >= 1, "the loss told at home");
    dlock_lock_free(outsider);
    done d = {0};
    ASSERT_OK(lock_give_async(&m, w->on_loop ? OWNER_A : dlock_thread_owner(), &d));
    WAIT_FOR(w, answered(&d), "the lost MultiLock's release");
    lock_free(&m);
    assert_idle(w);
}

/* A RedLock homed on client 2, with a member on client 0, asks its members while the
 * server holds every command (CLIENT PAUSE); the RedLock, its members and client 2 are freed
 * meanwhile. Client 0's member answers once the pause ends, to a home client that is gone:
 * the answer stays where it is. The pause is long (5 s) so that the frees, which need no
 * server, come first however slow the machine. */
static void home_freed_before_an_answer(world *w) {
    subject r = {0};
    redlock_open(w, &r, 0, 2, 0);
    redisReply *pause = redis_fixture_cmd(w->f, "CLIENT PAUSE 5000");
    assert_non_null(pause);
    freeReplyObject(pause);
    done d = {0};
    ASSERT_OK(lock_take_async(&r, OWNER_A, DLOCK_FOREVER, &d));
    WAIT_FOR(w, gauge_of(w->c[0], &GAUGES[0]) >= 1, "the member's call on client 0");
    lock_free(&r);
    client_free(w, 2);
    assert_true(answered(&d));
    ASSERT_RC(d.status, DLOCK_ECANCELED);
    assert_idle(w);
}

/* ---- the table ------------------------------------------------------------------------------- */

enum special {
    NONE,
    GIVE_BACK,
    FREE_LOCK_ON_LOOP,
    FREE_MULTILOCK_ON_LOOP,
    LOSS_CARRIED,
    HOME_FREED_FIRST
};
static const char *const SPECIAL_NAMES[] = {"",
                                            "a RedLock that fails its quorum gives back",
                                            "a lock freed on the loop thread",
                                            "a MultiLock freed on the loop thread",
                                            "a member's loss carried home",
                                            "a member answers after its home client was freed"};
#define NSPECIALS 5

typedef struct test_case {
    bool on_loop;
    const kind *k;
    enum scene scene;
    enum special special;
    char name[128];
} test_case;

static void run_case(void **state) {
    const test_case *tc = *state;
    test_watchdog_arm(BUDGET_S, tc->name);
    world w;
    world_open(&w, tc->on_loop);
    switch (tc->special) {
    case NONE:
        run_scene(&w, tc->k, tc->scene);
        break;
    case GIVE_BACK:
        redlock_gives_back(&w);
        break;
    case FREE_LOCK_ON_LOOP:
        frees_on_the_loop_thread(&w, &KINDS[0]);
        break;
    case FREE_MULTILOCK_ON_LOOP:
        frees_on_the_loop_thread(&w, &KINDS[5]);
        break;
    case LOSS_CARRIED:
        loss_carried_home(&w);
        break;
    case HOME_FREED_FIRST:
        home_freed_before_an_answer(&w);
        break;
    }
    world_close(&w);
    test_watchdog_disarm();
}

#define NCASES (2 * (NKINDS * NSCENES + NSPECIALS))

int main(void) {
    static test_case cases[NCASES];
    static struct CMUnitTest tests[NCASES];
    size_t n = 0;
    for (int face = 0; face < 2; face++) {
        const char *face_name = face ? "loop face" : "blocking face";
        for (size_t k = 0; k < NKINDS; k++)
            for (int s = 0; s < NSCENES; s++) {
                test_case *tc = &cases[n];
                *tc = (test_case){.on_loop = face, .k = &KINDS[k], .scene = (enum scene)s};
                snprintf(tc->name, sizeof(tc->name), "%s, %s: %s", face_name, KINDS[k].what,
                         SCENE_NAMES[s]);
                tests[n] = (struct CMUnitTest){tc->name, run_case, NULL, NULL, tc};
                n++;
            }
        for (int sp = 1; sp <= NSPECIALS; sp++) {
            test_case *tc = &cases[n];
            *tc = (test_case){.on_loop = face, .special = (enum special)sp};
            snprintf(tc->name, sizeof(tc->name), "%s: %s", face_name, SPECIAL_NAMES[sp]);
            tests[n] = (struct CMUnitTest){tc->name, run_case, NULL, NULL, tc};
            n++;
        }
    }
    return _cmocka_run_group_tests("stats_idle", tests, n, NULL, NULL);
}
