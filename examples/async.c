/* SPDX-License-Identifier: MIT */
/* async.c — the async face: dlock on the application's own libev loop, one thread for
 * everything.
 *
 * A report service runs its work as callbacks on one libev loop, as a network server
 * does. Its dlock client lives on that loop (dlock_client_new_on_loop, from
 * dlock/adapters/libev.h): dlock starts no thread, registers its watchers on the loop,
 * and calls back on it. Holders are owners the application numbers itself (1, 2, ...),
 * not threads, so many acquisitions can be in flight on the one thread.
 *
 * Reads the server from $DLOCK_URL (scripts/run-demo.sh starts a private redis-server and
 * sets it; ctest runs this program that way). Every step checks its result and the
 * program exits 0 only if each call answered as this comment says:
 *
 *   1. three workers (owners 1, 2, 3) ask for the fenced lock "example:async-report" at
 *      once: three acquisitions in flight. Each gets it in turn, reads its fencing token
 *      inside its acquire callback, keeps the lock for 150 ms on a loop timer (the loop
 *      serves everything else meanwhile) and gives it back with an async release. Never
 *      two inside at once; every token is higher than the one before.
 *   2. while the first worker holds it, owner 4 tries with a 50 ms wait: its callback
 *      says DLOCK_ETIMEDOUT.
 *   3. owner 5 holds "example:async-lease" under the watchdog (watchdog_ms 3000 here,
 *      renewed every second on the loop). An operator on another machine (here: another
 *      thread, with a blocking-face client of its own) force-releases it. The lost
 *      callback runs on the loop with DLOCK_ELOST, and owner 5's release then says
 *      DLOCK_ELOST.
 *   4. the handles, then the client, are freed on the loop thread.
 *
 * Build: it is example_async in <build>/examples (cmake); run it with
 *   scripts/run-demo.sh build/examples/example_async */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dlock.h"
#include "dlock/adapters/libev.h"

#define REPORT_LOCK "example:async-report"
#define LEASE_LOCK "example:async-lease"
#define IMPATIENT_OWNER 4u
#define LEASE_OWNER 5u
enum {
    WORKERS = 3,            /* owners 1..3 queue for the report lock together */
    HOLD_MS = 150,          /* each keeps it this long, on a loop timer */
    IMPATIENT_WAIT_MS = 50, /* owner 4's wait, well inside the first worker's hold */
    WATCHDOG_MS = 3000,     /* the client's lease; renewed every third of it */
    GUARD_MS = 20000        /* the whole program, or it fails */
};

typedef struct app app;

typedef struct worker {
    app *app;
    uint64_t owner;
    ev_timer hold; /* how long it keeps the lock */
} worker;

struct app {
    struct ev_loop *loop;
    dlock_client *client;
    dlock_lock *report; /* fenced; one handle serves every owner of the report lock */
    dlock_lock *lease;
    worker workers[WORKERS];
    ev_timer guard;
    pthread_t operator_thread;
    bool operator_started;
    int inside;       /* workers holding the report lock now */
    int workers_done; /* workers that gave it back */
    bool impatient_started;
    bool impatient_done; /* owner 4 heard back */
    uint64_t last_token;
    int lost_calls;
    bool ok; /* every check so far */
};

/* ---- small helpers ------------------------------------------------------------------------ */

/* Says whether rc is what the step expects; if not, prints the code's name and the
 * detail dlock keeps for the calling thread. */
static bool expect(app *a, int rc, int want, const char *what) {
    if (rc == want)
        return true;
    fprintf(stderr, "FAILED: %s: got %s, expected %s (%s)\n", what, dlock_err_name(rc),
            dlock_err_name(want), dlock_last_error());
    a->ok = false;
    return false;
}

static bool check(app *a, bool ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "FAILED: %s\n", what);
        a->ok = false;
    }
    return ok;
}

/* Ends the program's loop, successful or not. */
static void finish(app *a) {
    ev_break(a->loop, EVBREAK_ALL);
}

/* ---- step 3: a watchdog hold, lost behind the holder's back -------------------------------- */

/* The operator: a blocking-face client of its own (its own I/O thread), as another process
 * would have. It deletes the lock whoever holds it. */
static void *operator_main(void *arg) {
    (void)arg;
    dlock_client *client = NULL;
    dlock_lock *lock = NULL;
    bool was_locked = false;
    int rc = dlock_client_new(NULL, &client);
    if (rc == DLOCK_OK)
        rc = dlock_lock_new(client, LEASE_LOCK, &lock);
    if (rc == DLOCK_OK)
        rc = dlock_lock_force_release(lock, &was_locked);
    if (rc != DLOCK_OK || !was_locked)
        fprintf(stderr, "FAILED: operator's force_release: %s, was_locked %d (%s)\n",
                dlock_err_name(rc), was_locked, dlock_last_error());
    else
        printf("3. the operator force-released %s\n", LEASE_LOCK);
    dlock_lock_free(lock);
    dlock_client_free(client);
    return NULL;
}

static void lease_released(dlock_lock *l, int status, void *arg) {
    (void)l;
    app *a = arg;
    if (expect(a, status, DLOCK_ELOST, "owner 5's release after the loss"))
        printf("3. owner 5's release: DLOCK_ELOST, as the lost callback said\n");
    finish(a);
}

/* On the loop thread, once per lost lease. No blocking call here; async ones are fine. */
static void on_lease_lost(dlock_lock *l, uint64_t owner, int reason, void *arg) {
    app *a = arg;
    a->lost_calls++;
    check(a, owner == LEASE_OWNER, "the lost callback names owner 5");
    expect(a, reason, DLOCK_ELOST, "the lost callback's reason");
    printf("3. lost callback: owner %" PRIu64 " lost %s (%s)\n", owner, dlock_lock_name(l),
           dlock_err_name(reason));
    if (!expect(a, dlock_lock_release_async(l, owner, lease_released, a), DLOCK_OK,
                "release_async after the loss"))
        finish(a);
}

static void lease_acquired(dlock_lock *l, int status, void *arg) {
    app *a = arg;
    if (!expect(a, status, DLOCK_OK, "owner 5's watchdog acquire")) {
        finish(a);
        return;
    }
    printf("3. owner 5 holds %s under the watchdog (lease %d ms)\n", dlock_lock_name(l),
           WATCHDOG_MS);
    if (!check(a, pthread_create(&a->operator_thread, NULL, operator_main, NULL) == 0,
               "start the operator thread")) {
        finish(a);
        return;
    }
    a->operator_started = true;
}

static void start_step_3(app *a) {
    if (!expect(a,
                dlock_lock_acquire_async(a->lease, LEASE_OWNER, 5000, DLOCK_WATCHDOG,
                                         lease_acquired, a),
                DLOCK_OK, "acquire_async of owner 5"))
        finish(a);
}

/* ---- steps 1 and 2: three acquisitions in flight, one impatient ---------------------------- */

static void maybe_next_step(app *a) {
    if (a->workers_done == WORKERS && a->impatient_done)
        start_step_3(a);
}

static void worker_released(dlock_lock *l, int status, void *arg) {
    (void)l;
    worker *w = arg;
    app *a = w->app;
    expect(a, status, DLOCK_OK, "a worker's release");
    a->workers_done++;
    maybe_next_step(a);
}

/* The worker's time is up: out, and give the lock back. */
static void worker_hold_over(struct ev_loop *loop, ev_timer *t, int revents) {
    (void)loop;
    (void)revents;
    worker *w = t->data;
    app *a = w->app;
    a->inside--;
    printf("1. worker %" PRIu64 " releases\n", w->owner);
    if (!expect(a, dlock_lock_release_async(a->report, w->owner, worker_released, w), DLOCK_OK,
                "release_async of a worker"))
        finish(a);
}

static void impatient_done(dlock_lock *l, int status, void *arg) {
    (void)l;
    app *a = arg;
    if (expect(a, status, DLOCK_ETIMEDOUT, "owner 4's 50 ms try while worker 1 holds"))
        printf("2. owner 4 gave up after %d ms: DLOCK_ETIMEDOUT\n", IMPATIENT_WAIT_MS);
    a->impatient_done = true;
    maybe_next_step(a);
}

static void worker_acquired(dlock_lock *l, int status, void *arg) {
    worker *w = arg;
    app *a = w->app;
    if (!expect(a, status, DLOCK_OK, "a worker's acquire")) {
        finish(a);
        return;
    }
    check(a, a->inside == 0, "one worker inside at a time");
    a->inside++;
    /* dlock_lock_token_of never blocks: the callback is the place to read the token */
    uint64_t token = 0;
    expect(a, dlock_lock_token_of(l, w->owner, &token), DLOCK_OK, "token_of in the callback");
    check(a, token > a->last_token, "each holder's token is higher than the last");
    a->last_token = token;
    printf("1. worker %" PRIu64 " holds %s, token %" PRIu64 "\n", w->owner, dlock_lock_name(l),
           token);
    if (!a->impatient_started) { /* the first holder: owner 4 tries while it holds */
        a->impatient_started = true;
        if (!expect(a,
                    dlock_lock_acquire_async(l, IMPATIENT_OWNER, IMPATIENT_WAIT_MS, 5000,
                                             impatient_done, a),
                    DLOCK_OK, "acquire_async of owner 4"))
            finish(a);
    }
    ev_timer_init(&w->hold, worker_hold_over, HOLD_MS / 1000.0, 0);
    w->hold.data = w;
    ev_timer_start(a->loop, &w->hold);
}

static void start_steps_1_and_2(app *a) {
    for (int i = 0; i < WORKERS; i++) {
        worker *w = &a->workers[i];
        w->app = a;
        w->owner = (uint64_t)i + 1;
        /* in flight together; the callback runs later, on the loop, never inside the call */
        if (!expect(a,
                    dlock_lock_acquire_async(a->report, w->owner, 10000, DLOCK_WATCHDOG,
                                             worker_acquired, w),
                    DLOCK_OK, "acquire_async of a worker")) {
            finish(a);
            return;
        }
    }
    printf("1. three acquisitions in flight on one thread\n");
}

/* ---- the program ---------------------------------------------------------------------------- */

static void guard_expired(struct ev_loop *loop, ev_timer *t, int revents) {
    (void)loop;
    (void)revents;
    app *a = t->data;
    check(a, false, "the steps ended within the guard time");
    finish(a);
}

int main(void) {
    /* the adapter's rule: the loop thread writes to sockets, so SIGPIPE must not kill it */
    signal(SIGPIPE, SIG_IGN);
    app a;
    memset(&a, 0, sizeof(a));
    a.ok = true;
    a.loop = ev_loop_new(EVFLAG_AUTO);
    if (!a.loop) {
        fprintf(stderr, "FAILED: ev_loop_new\n");
        return 1;
    }

    dlock_options opts;
    dlock_options_init(&opts);
    opts.watchdog_ms = WATCHDOG_MS; /* url NULL: $DLOCK_URL, else redis://127.0.0.1:6379 */
    /* returns at once: the connection is made in the background while the loop runs, and
     * calls made before it is up wait for it */
    if (expect(&a, dlock_client_new_on_loop(&opts, a.loop, &a.client), DLOCK_OK,
               "dlock_client_new_on_loop") &&
        expect(&a, dlock_fencedlock_new(a.client, REPORT_LOCK, &a.report), DLOCK_OK,
               "dlock_fencedlock_new") &&
        expect(&a, dlock_lock_new(a.client, LEASE_LOCK, &a.lease), DLOCK_OK, "dlock_lock_new") &&
        expect(&a, dlock_lock_on_lost(a.lease, on_lease_lost, &a), DLOCK_OK, "on_lost")) {
        ev_timer_init(&a.guard, guard_expired, GUARD_MS / 1000.0, 0);
        a.guard.data = &a;
        ev_timer_start(a.loop, &a.guard);
        start_steps_1_and_2(&a);
        ev_run(a.loop, 0); /* the application's loop: until finish() */
        ev_timer_stop(a.loop, &a.guard);
    }
    if (a.operator_started)
        pthread_join(a.operator_thread, NULL);
    check(&a, a.workers_done == WORKERS, "every worker held and released the report lock");
    check(&a, a.lost_calls == 1, "the lost callback ran once");

    /* 4. handles before the client; on the loop thread, where the async face frees */
    for (int i = 0; i < WORKERS; i++)
        ev_timer_stop(a.loop, &a.workers[i].hold);
    dlock_lock_free(a.report);
    dlock_lock_free(a.lease);
    expect(&a, dlock_client_free(a.client), DLOCK_OK, "dlock_client_free");
    ev_loop_destroy(a.loop);
    printf(a.ok ? "async: every step answered as documented\n" : "async: FAILED\n");
    return a.ok ? 0 : 1;
}
