/* SPDX-License-Identifier: MIT */
/* test_sync_replicas_batch.c — ?sync_replicas=auto acknowledges writes in batches: one WAIT
 * covers every write sent before it on the connection, and at most 3 are out at a time, so
 * the writes sent while 3 are out share the next (conn.c). A master and one replica for the
 * whole file (replica_pair.h); the calls are made on the async face, on a loop the test runs
 * itself, so that several writes leave in one loop turn. A test that pauses the replica
 * (SIGSTOP: it acknowledges nothing) leaves it to the teardown to resume it.
 *
 *   the replica in sync: 8 acquisitions started together send 4 WAITs (the first 3 writes'
 *     own, and one shared by the 5 sent while those were out), not 8, and all hold;
 *   the replica paused: a batch of 6 acquisitions, an acquisition of a lock another client
 *     holds and a release: every acquisition is DLOCK_ETIMEDOUT "0 of 1" and given back
 *     (none held), the other client still holds its lock, the release is DLOCK_OK and the
 *     lock gone; 4 WAITs for the 7 acquisitions (the release sends none);
 *   a PING sent behind 3 WAITs that are out is answered when the third answers, before the
 *     WAIT of a write sent just before it (it waits for the WAITs out when it was sent,
 *     never for a later batch's);
 *   releases send no WAIT of their own and answer with the replica paused; the next
 *     acquisition's WAIT covers them (the replica has them once it answers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dlock.h"
#include "dlock/adapters/libev.h"
#include "harness.h"
#include "replica_pair.h"
#include "test_util.h"

#define LEASE_MS 30000
#define BATCH 6

/* ---- an application on the test's own loop, a client of the pair's master --------------- */

typedef struct app {
    struct ev_loop *loop;
    ev_timer tick;
    dlock_client *c;
} app;

static void app_start(app *a) {
    memset(a, 0, sizeof(*a));
    a->loop = polling_loop_new(&a->tick);
    dlock_options o;
    test_client_options(pair_master, NULL, &o);
    ASSERT_OK(dlock_client_new_on_loop(&o, a->loop, &a->c));
    sync_with_client(a->loop, a->c, test_slack_ms(5000)); /* connected, ROLE seen */
}

static void app_stop(app *a) {
    ASSERT_OK(dlock_client_free(a->c));
    polling_loop_free(a->loop, &a->tick);
}

/* ---- completion records ------------------------------------------------------------------ */

typedef struct done {
    int calls;
    int status;
    int order; /* when it ran among the callbacks of the test */
    char why[256];
} done;

static int callbacks_so_far;

static void record(done *d, int status) {
    d->calls++;
    d->status = status;
    d->order = ++callbacks_so_far;
    snprintf(d->why, sizeof(d->why), "%s", status == DLOCK_OK ? "" : dlock_last_error());
}

static void lock_done(dlock_lock *l, int status, void *arg) {
    (void)l;
    record(arg, status);
}

static void ping_done(dlock_client *c, int status, void *arg) {
    (void)c;
    record(arg, status);
}

static int count_done(const done *d, int n) {
    int calls = 0;
    for (int i = 0; i < n; i++)
        calls += d[i].calls;
    return calls;
}

static void run_until_done(app *a, const done *d, int n) {
    bool ok = false;
    RUN_LOOP_UNTIL(a->loop, ok, count_done(d, n) == n, slack_ms(20000));
    assert_true(ok);
    for (int i = 0; i < n; i++)
        assert_int_equal(d[i].calls, 1);
}

static dlock_lock *lock_of(app *a, const char *name) {
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(a->c, name, &l));
    return l;
}

/* locks[i] = the lock "<prefix>-<i>", for i < n. */
static void locks_named(app *a, const char *prefix, dlock_lock **locks, int n) {
    char name[32];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "%s-%d", prefix, i);
        locks[i] = lock_of(a, name);
    }
}

/* Acquires the n locks together, owner first_owner + i for locks[i] (at most 8); each must
 * hold. Each may wait: a single attempt (wait 0) gives its WAIT only 100 ms, which a replica
 * on a machine loaded with sanitizers and stress missed once (gate71: "0 of 1 replicas
 * acknowledged it within 100 ms"); a wait gives it the client's sync_timeout_ms (1 s). */
static void acquire_all(app *a, dlock_lock **locks, int n, uint64_t first_owner) {
    done acquired[8] = {0};
    assert_true(n <= 8);
    for (int i = 0; i < n; i++)
        ASSERT_OK(dlock_lock_acquire_async(locks[i], first_owner + (uint64_t)i, slack_ms(10000),
                                           LEASE_MS, lock_done, &acquired[i]));
    run_until_done(a, acquired, n);
    for (int i = 0; i < n; i++)
        ASSERT_RC(acquired[i].status, DLOCK_OK);
}

/* ---- the replica in sync ------------------------------------------------------------------ */

static void test_acquisitions_started_together_share_a_wait_and_all_hold(void **state) {
    (void)state;
    app a;
    app_start(&a);
    dlock_lock *locks[8];
    char name[32];
    locks_named(&a, "together", locks, 8);
    long long waits = command_calls(pair_master, "wait");
    acquire_all(&a, locks, 8, 100);
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof(name), "together-%d", i);
        assert_int_equal(redis_fixture_int(pair_replica, "EXISTS %s", name), 1);
    }
    /* the first 3 writes' own WAITs, then one for the 5 sent while those were out */
    assert_int_equal(command_calls(pair_master, "wait") - waits, 4);
    for (int i = 0; i < 8; i++)
        dlock_lock_free(locks[i]);
    app_stop(&a);
}

/* ---- the replica paused ------------------------------------------------------------------- */

static void test_a_batch_the_replica_never_got_gives_every_acquisition_back(void **state) {
    (void)state;
    /* another client holds "theirs", acknowledged */
    dlock_client *other =
        connect_client_cfg(NULL, (test_client_cfg){.url = redis_fixture_unix_url(pair_master)});
    dlock_lock *theirs_held;
    ASSERT_OK(dlock_lock_new(other, "theirs", &theirs_held));
    ASSERT_OK(dlock_lock_acquire(theirs_held, LEASE_MS));

    app a;
    app_start(&a);
    dlock_lock *mine[BATCH];
    char name[32];
    for (int i = 0; i < BATCH; i++) {
        snprintf(name, sizeof(name), "batch-%d", i);
        mine[i] = lock_of(&a, name);
    }
    dlock_lock *theirs = lock_of(&a, "theirs");
    dlock_lock *released = lock_of(&a, "released");
    done held = {0};
    ASSERT_OK(dlock_lock_acquire_async(released, 900, 0, LEASE_MS, lock_done, &held));
    run_until_done(&a, &held, 1);
    ASSERT_RC(held.status, DLOCK_OK); /* acknowledged: the replica is still running */

    assert_int_equal(redis_fixture_pause(pair_replica), 0);
    long long waits = command_calls(pair_master, "wait");
    done d[BATCH + 2] = {0}; /* mine..., theirs, released */
    callbacks_so_far = 0;
    for (int i = 0; i < BATCH; i++)
        ASSERT_OK(
            dlock_lock_acquire_async(mine[i], 100 + (uint64_t)i, 0, LEASE_MS, lock_done, &d[i]));
    ASSERT_OK(dlock_lock_acquire_async(theirs, 200, 0, LEASE_MS, lock_done, &d[BATCH]));
    ASSERT_OK(dlock_lock_release_async(released, 900, lock_done, &d[BATCH + 1]));
    run_until_done(&a, d, BATCH + 2);

    for (int i = 0; i < BATCH; i++) { /* each acquired, unacknowledged, given back */
        ASSERT_RC(d[i].status, DLOCK_ETIMEDOUT);
        if (!strstr(d[i].why, "only 0 of 1 replicas acknowledged"))
            fail_msg("acquisition %d: \"%s\" does not say 0 of 1 acknowledged", i, d[i].why);
        snprintf(name, sizeof(name), "batch-%d", i);
        assert_int_equal(redis_fixture_int(pair_master, "EXISTS %s", name), 0);
    }
    /* never acquired: nothing to give back, and the holder's lock is left alone */
    ASSERT_RC(d[BATCH].status, DLOCK_ETIMEDOUT);
    assert_null(strstr(d[BATCH].why, "replicas acknowledged"));
    assert_int_equal(redis_fixture_int(pair_master, "EXISTS theirs"), 1);
    /* a release stands, acknowledged or not */
    ASSERT_RC(d[BATCH + 1].status, DLOCK_OK);
    assert_int_equal(redis_fixture_int(pair_master, "EXISTS released"), 0);
    /* the first 3 writes' own WAITs, then one for the 5 sent while those were out */
    assert_int_equal(command_calls(pair_master, "wait") - waits, 4);

    ASSERT_OK(dlock_lock_release(theirs_held)); /* still theirs */
    for (int i = 0; i < BATCH; i++)
        dlock_lock_free(mine[i]);
    dlock_lock_free(theirs);
    dlock_lock_free(released);
    app_stop(&a);
    dlock_lock_free(theirs_held);
    dlock_client_free(other);
}

static void latch_done(dlock_latch *l, int status, void *arg) {
    (void)l;
    record(arg, status);
}

static void test_a_ping_behind_waits_waits_for_those_only(void **state) {
    (void)state;
    app a;
    app_start(&a);
    dlock_latch *latches[4];
    char name[32];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), "behind-%d", i);
        redisReply *r = redis_fixture_cmd(pair_master, "SET %s 2", name);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STATUS);
        freeReplyObject(r);
        ASSERT_OK(dlock_latch_new(a.c, name, &latches[i]));
    }

    /* Four count-downs and a PING in one turn, the replica paused: the first 3 count-downs
     * go each with a WAIT, which waits its full time; the fourth and the PING queue on the
     * server behind them. The PING's answer comes right after the third WAIT's; the fourth
     * count-down's own WAIT goes only when the first answers, and answers after its time,
     * after the PING's. (A count-down stands whatever the replicas say, but its call waits
     * for its WAIT; a release would not: it has none.) */
    assert_int_equal(redis_fixture_pause(pair_replica), 0);
    long long waits = command_calls(pair_master, "wait");
    callbacks_so_far = 0;
    done d[5] = {0}; /* the count-downs, then the ping */
    for (int i = 0; i < 4; i++)
        ASSERT_OK(dlock_latch_count_down_async(latches[i], latch_done, &d[i]));
    ASSERT_OK(dlock_client_ping_async(a.c, ping_done, &d[4]));
    run_until_done(&a, d, 5);
    for (int i = 0; i < 5; i++)
        ASSERT_RC(d[i].status, DLOCK_OK);
    if (!(d[2].order < d[4].order && d[4].order < d[3].order))
        fail_msg("callbacks in the order count-downs %d %d %d %d, ping %d: the ping waited for "
                 "the fourth count-down's WAIT, or not for the third's",
                 d[0].order, d[1].order, d[2].order, d[3].order, d[4].order);
    assert_int_equal(command_calls(pair_master, "wait") - waits, 4);
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), "behind-%d", i);
        assert_int_equal(redis_fixture_int(pair_master, "GET %s", name), 1);
        dlock_latch_free(latches[i]);
    }
    app_stop(&a);
}

/* A release stands whatever the replicas say, so its call waits for no WAIT of its own: with
 * the replica paused, releases answer at once, and the next acquisition's WAIT, which covers
 * every write before it, is the one that waits. */
static void test_releases_wait_for_no_wait_the_next_acquisitions_covers_them(void **state) {
    (void)state;
    app a;
    app_start(&a);
    dlock_lock *locks[3];
    char name[32];
    locks_named(&a, "freed", locks, 3);
    acquire_all(&a, locks, 3, 1);

    assert_int_equal(redis_fixture_pause(pair_replica), 0);
    long long waits = command_calls(pair_master, "wait");
    callbacks_so_far = 0;
    done d[3] = {0};
    for (int i = 0; i < 3; i++)
        ASSERT_OK(dlock_lock_release_async(locks[i], 1 + (uint64_t)i, lock_done, &d[i]));
    run_until_done(&a, d, 3);
    for (int i = 0; i < 3; i++) {
        ASSERT_RC(d[i].status, DLOCK_OK);
        snprintf(name, sizeof(name), "freed-%d", i);
        assert_int_equal(redis_fixture_int(pair_master, "EXISTS %s", name), 0);
    }
    assert_int_equal(command_calls(pair_master, "wait") - waits, 0); /* answered, paused */

    /* the replica back: an acquisition's WAIT 1 answers 1 only once the replica has every
     * write before it, the releases included */
    assert_int_equal(redis_fixture_resume(pair_replica), 0);
    replica_pair_wait_acknowledged();
    done again = {0}; /* waits: an attempt the replica is still too slow for is given back */
    ASSERT_OK(dlock_lock_acquire_async(locks[0], 9, slack_ms(10000), LEASE_MS, lock_done, &again));
    run_until_done(&a, &again, 1);
    ASSERT_RC(again.status, DLOCK_OK);
    assert_int_equal(redis_fixture_int(pair_replica, "EXISTS freed-1"), 0);
    assert_int_equal(redis_fixture_int(pair_replica, "EXISTS freed-2"), 0);
    done freed = {0};
    ASSERT_OK(dlock_lock_release_async(locks[0], 9, lock_done, &freed));
    run_until_done(&a, &freed, 1);
    ASSERT_RC(freed.status, DLOCK_OK);
    for (int i = 0; i < 3; i++)
        dlock_lock_free(locks[i]);
    app_stop(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_acquisitions_started_together_share_a_wait_and_all_hold,
                                  replica_pair_resume_teardown),
        cmocka_unit_test_teardown(test_a_batch_the_replica_never_got_gives_every_acquisition_back,
                                  replica_pair_resume_teardown),
        cmocka_unit_test_teardown(test_a_ping_behind_waits_waits_for_those_only,
                                  replica_pair_resume_teardown),
        cmocka_unit_test_teardown(test_releases_wait_for_no_wait_the_next_acquisitions_covers_them,
                                  replica_pair_resume_teardown),
    };
    return cmocka_run_group_tests(tests, replica_pair_group_setup, replica_pair_group_teardown);
}
