/* SPDX-License-Identifier: MIT */
/* test_sentinel_failover.c — failovers under clients of a redis-sentinel:// URL:
 *   - SENTINEL FAILOVER, and a SIGKILLed master, while 2 clients x 4 threads loop on 4 locks
 *     under the mutual-exclusion checker: no two sections of a lock overlap, and both
 *     clients make a successful call on the new master within 10 s (the time is printed);
 *   - a lease the promoted replica lacks is reported lost as soon as the client lands on
 *     the new master (not at the watchdog's next tick), its release is DLOCK_ELOST, and a
 *     lease the new master has stays held;
 *   - a waiter keeps waiting across a failover, subscribed again on the new master, and is
 *     woken there by the holder's release (whose lease the new master confirmed);
 *   - a failover the client did not hear of (its sentinel paused) is found once the old
 *     master turns replica (Redis 7.0 then drops its clients; a READONLY answer would send
 *     the client back to the sentinels too).
 * A fresh fixture (1 master + 1 replica + 3 sentinels) per test.
 *
 * It takes about half a minute: a fixture of five servers per test, and every failover is
 * the sentinels' (an election, then the promotion), which the tests wait for as a state;
 * nothing in it sleeps for a failover. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "checker.h"
#include "core_call.h"
#include "harness.h"
#include "sentinel_fixture.h"

#define CLIENTS 2
#define THREADS 4 /* per client */
#define LOCKS 4
#define WORKERS (CLIENTS * THREADS)
#define BACK_WITHIN_MS 10000

static sentinel_fixture *fx;

static int setup(void **state) {
    (void)state;
    test_watchdog_arm(60, "test_sentinel_failover");
    return sentinel_fixture_start(NULL, &fx);
}

static int teardown(void **state) {
    (void)state;
    sentinel_fixture_stop(fx);
    fx = NULL;
    test_watchdog_disarm();
    return 0;
}

static dlock_client *sentinel_client(int64_t watchdog_ms) {
    return connect_client_cfg(NULL, (test_client_cfg){.url = sentinel_fixture_url(fx),
                                                      .connect_timeout_ms = 1000,
                                                      .timeout_ms = 1000,
                                                      .watchdog_ms = watchdog_ms});
}

/* ---- the load: 2 clients x 4 threads on 4 locks ------------------------------------------ */

typedef struct load {
    dlock_client *c[CLIENTS];
    dlock_lock *l[CLIENTS][LOCKS]; /* each client's handle of each lock */
    checker *k[LOCKS];
    atomic_bool stop;
    atomic_long sections, failed_calls;
} load;

typedef struct worker {
    load *ld;
    int id;
    pthread_t thread;
} worker;

static void *worker_main(void *arg) {
    worker *w = arg;
    load *ld = w->ld;
    int client = w->id % CLIENTS;
    for (long i = 0; !atomic_load(&ld->stop); i++) {
        int k = (int)((i + w->id) % LOCKS);
        dlock_lock *l = ld->l[client][k];
        int rc = dlock_lock_try_acquire(l, 500, DLOCK_WATCHDOG);
        if (rc != DLOCK_OK) {
            atomic_fetch_add(&ld->failed_calls, 1); /* a failover: ECONN, ETIMEDOUT ... */
            continue;
        }
        long slot = checker_enter(ld->k[k], w->id);
        checker_exit(ld->k[k], slot, 0);
        atomic_fetch_add(&ld->sections, 1);
        if (dlock_lock_release(l) != DLOCK_OK) /* DLOCK_ELOST: the new master lacked it */
            atomic_fetch_add(&ld->failed_calls, 1);
    }
    for (int k = 0; k < LOCKS; k++)
        checker_finished(ld->k[k], w->id);
    return NULL;
}

static void load_start(load *ld, worker *w) {
    for (int i = 0; i < CLIENTS; i++) {
        ld->c[i] = sentinel_client(0);
        for (int k = 0; k < LOCKS; k++) {
            char name[32];
            snprintf(name, sizeof(name), "failover-%d", k);
            ASSERT_OK(dlock_lock_new(ld->c[i], name, &ld->l[i][k]));
        }
    }
    for (int k = 0; k < LOCKS; k++) {
        char name[32];
        snprintf(name, sizeof(name), "failover-%d", k);
        ld->k[k] = checker_new(name, WORKERS, 1000000, false);
    }
    for (int i = 0; i < WORKERS; i++) {
        w[i] = (worker){.ld = ld, .id = i};
        assert_int_equal(pthread_create(&w[i].thread, NULL, worker_main, &w[i]), 0);
    }
}

static void load_stop_and_check(load *ld, worker *w) {
    atomic_store(&ld->stop, true);
    for (int i = 0; i < WORKERS; i++)
        assert_int_equal(pthread_join(w[i].thread, NULL), 0);
    printf("# %ld sections, %ld calls failed during the failover\n", atomic_load(&ld->sections),
           atomic_load(&ld->failed_calls));
    for (int k = 0; k < LOCKS; k++) {
        checker_report r = checker_check(ld->k[k]);
        if (!r.ok)
            fail_msg("lock %d: %ld overlaps: %s", k, r.overlaps, r.first_problem);
        checker_free(ld->k[k]);
    }
    for (int i = 0; i < CLIENTS; i++) {
        for (int k = 0; k < LOCKS; k++)
            dlock_lock_free(ld->l[i][k]);
        dlock_client_free(ld->c[i]);
    }
}

/* Waits until client i has made a successful call on node new_master: an acquire of a name
 * never used before that is then found there (after the promotion the old master's writes
 * no longer reach it). Returns test_now_ms() of that success. */
/* The first successful try_acquire of client i whose lock the new master keeps (a busy
 * answer or, while the failover runs, a failed call are tried again; with only_busy, a
 * failed call fails the test: every call must either succeed or find the lock busy). */
static int64_t first_call_on_checked(load *ld, int i, int new_master, int64_t deadline_ms,
                                     bool only_busy) {
    redis_fixture *node = sentinel_fixture_node(fx, new_master);
    int64_t longest = 0; /* the longest try: a reconnect it rode through */
    for (int n = 0; test_now_ms() < deadline_ms; n++) {
        char name[48];
        snprintf(name, sizeof(name), "probe-%d-%d", i, n);
        dlock_lock *l;
        ASSERT_OK(dlock_lock_new(ld->c[i], name, &l));
        int64_t start = test_now_ms();
        int rc = dlock_lock_try_acquire(l, 0, 60000);
        int64_t at = test_now_ms();
        if (at - start > longest)
            longest = at - start;
        dlock_lock_free(l);
        if (only_busy && rc != DLOCK_OK && rc != DLOCK_ETIMEDOUT)
            fail_msg("client %d: a call failed: %s (%s)", i, dlock_strerror(rc),
                     dlock_last_error());
        if (rc == DLOCK_OK && redis_fixture_int(node, "EXISTS %s", name) == 1) {
            printf("# client %d: the longest try took %lld ms\n", i, (long long)longest);
            return at;
        }
        test_sleep_ms(10);
    }
    fail_msg("client %d made no successful call on the new master in time", i);
    return 0;
}

static int64_t first_call_on(load *ld, int i, int new_master, int64_t deadline_ms) {
    return first_call_on_checked(ld, i, new_master, deadline_ms, false);
}

static void failover_under_load(int (*fail_over)(sentinel_fixture *), const char *what) {
    load ld = {0};
    worker w[WORKERS];
    load_start(&ld, w);
    /* sections on the first master: waited for, not assumed after a fixed 500 ms (a busy
     * machine had made none by then) */
    bool started = false;
    POLL_UNTIL(started, atomic_load(&ld.sections) > 0, test_prompt_ms());
    long before = atomic_load(&ld.sections);
    int old_master = sentinel_fixture_master_index(fx);
    int64_t start = test_now_ms();
    int new_master = fail_over(fx);
    int64_t promoted = test_now_ms();
    assert_int_equal(new_master, 1 - old_master);
    for (int i = 0; i < CLIENTS; i++) {
        int64_t back = first_call_on(&ld, i, new_master, start + BACK_WITHIN_MS);
        printf("# %s: client %d's first successful call on the new master %lld ms after the "
               "failover began (%lld ms after the sentinels agreed)\n",
               what, i, (long long)(back - start), (long long)(back - promoted));
    }
    long at_promotion = atomic_load(&ld.sections);
    /* sections on the new master */
    bool more = false;
    POLL_UNTIL(more, atomic_load(&ld.sections) > at_promotion, test_prompt_ms());
    load_stop_and_check(&ld, w);
    assert_true(started && before > 0);
    assert_true(more);
}

static void
test_sentinel_failover_under_load_keeps_locks_exclusive_and_clients_return(void **state) {
    (void)state;
    failover_under_load(sentinel_fixture_failover, "SENTINEL FAILOVER");
}

static void test_killed_master_under_load_keeps_locks_exclusive_and_clients_return(void **state) {
    (void)state;
    failover_under_load(sentinel_fixture_kill_master, "SIGKILLed master");
}

/* ---- a waiter across a failover --------------------------------------------------------- */

static int acquire_handoff(void *arg) {
    return dlock_lock_try_acquire(arg, slack_ms(15000), 30000);
}

static void test_waiter_is_woken_on_the_new_master_by_the_holders_release(void **state) {
    (void)state;
    const char *channel = "redisson_lock__channel:{handoff}";
    dlock_client *holder = sentinel_client(0), *waiter = sentinel_client(0);
    dlock_lock *held, *wanted;
    ASSERT_OK(dlock_lock_new(holder, "handoff", &held));
    ASSERT_OK(dlock_lock_new(waiter, "handoff", &wanted));
    ASSERT_OK(dlock_lock_acquire(held, DLOCK_WATCHDOG));
    int old_master = sentinel_fixture_master_index(fx);
    redis_fixture *replica = sentinel_fixture_node(fx, 1 - old_master);
    bool ready = false;
    POLL_UNTIL(ready, redis_fixture_int(replica, "EXISTS handoff") == 1, slack_ms(3000));
    assert_true(ready);

    blocking_call wait;
    blocking_call_start(&wait, acquire_handoff, wanted);
    POLL_UNTIL(ready, numsub(sentinel_fixture_node(fx, old_master), channel) == 1, slack_ms(3000));
    assert_true(ready);
    int new_master = sentinel_fixture_failover(fx);
    assert_int_equal(new_master, 1 - old_master);
    /* the waiter's subscription is made again on the new master */
    POLL_UNTIL(ready, numsub(sentinel_fixture_node(fx, new_master), channel) == 1, slack_ms(3000));
    assert_true(ready);
    assert_false(blocking_call_returned(&wait));
    /* the holder's lease was confirmed there; its release wakes the waiter */
    int64_t released_us = test_now_us();
    ASSERT_OK(dlock_lock_release(held));
    ASSERT_OK(blocking_call_join(&wait));
    printf("# hand-off on the new master: %lld ms from the release\n",
           (long long)((wait.returned_us - released_us) / 1000));
    /* the holder's watchdog lease (30 s) is the waiter's hint: only the message is this soon */
    ASSERT_BETWEEN((wait.returned_us - released_us) / 1000, 0, test_prompt_ms());
    assert_int_equal(redis_fixture_int(sentinel_fixture_node(fx, new_master), "EXISTS handoff"), 1);
    dlock_lock_free(held); /* `wanted` is held by the waiting thread's owner, until its lease */
    dlock_lock_free(wanted);
    dlock_client_free(holder);
    dlock_client_free(waiter);
}

/* ---- a failover the client did not hear of ---------------------------------------------- */

/* A client whose sentinel user may ask for the master but not hear of failovers (no
 * &+switch-master: every sentinel refuses its SUBSCRIBE): it misses every +switch-master. */
static dlock_client *deaf_sentinel_client(void) {
    for (int i = 0; i < SENTINEL_FIXTURE_SENTINELS; i++) {
        redisReply *r = sentinel_fixture_sentinel_cmd(
            fx, i,
            "ACL SETUSER deaf on >dpw resetchannels -@all +sentinel|get-master-addr-by-name "
            "+subscribe");
        if (!r || r->type == REDIS_REPLY_ERROR)
            fail_msg("sentinel %d: ACL SETUSER: %s", i, r ? r->str : "no reply");
        freeReplyObject(r);
    }
    const char *url = sentinel_fixture_url(fx);
    size_t n = strlen(url) + 64;
    char *deaf = malloc(n);
    assert_non_null(deaf);
    snprintf(deaf, n, "%s%csentinel_user=deaf&sentinel_password=dpw", url,
             strchr(url, '?') ? '&' : '?');
    dlock_client *c = connect_client_cfg(
        NULL, (test_client_cfg){.url = deaf, .connect_timeout_ms = 1000, .timeout_ms = 1000});
    free(deaf);
    return c;
}

static void test_missed_failover_is_found_when_the_old_master_turns_replica(void **state) {
    (void)state;
    test_watchdog_arm(120, "test_missed_failover");
    dlock_client *c = deaf_sentinel_client();
    int64_t start = test_now_ms();
    int new_master = sentinel_fixture_failover(fx);
    assert_true(new_master >= 0);
    for (int i = 0; i < SENTINEL_FIXTURE_SENTINELS; i++) /* it heard nothing */
        assert_int_equal(sentinel_fixture_sentinel_subscribers(fx, i), 0);
    /* Redis 7.0 leaves the old master a master for 8-18 s; once the sentinels turn it into
     * a replica, its READONLY answer sends the client back to the sentinels, and the call
     * that met it is sent again on the new master (it did not run): no call fails */
    load ld = {.c = {c}};
    int64_t back = first_call_on_checked(&ld, 0, new_master, start + slack_ms(30000), true);
    printf("# missed failover: first successful call on the new master %lld ms after it began\n",
           (long long)(back - start));
    dlock_client_free(c);
}

/* ---- a lease the new master lacks ------------------------------------------------------- */

static void test_lease_the_promoted_replica_lacks_is_reported_lost_at_once(void **state) {
    (void)state;
    /* watchdog 60 s: its next tick would come 20 s after the acquire, far after the bound */
    dlock_client *c = sentinel_client(60000);
    dlock_lock *lacking, *kept;
    lost_record lacking_lost = {0}, kept_lost = {0};
    ASSERT_OK(dlock_lock_new(c, "lacking", &lacking));
    ASSERT_OK(dlock_lock_new(c, "kept", &kept));
    ASSERT_OK(dlock_lock_on_lost(lacking, record_lost_in, &lacking_lost));
    ASSERT_OK(dlock_lock_on_lost(kept, record_lost_in, &kept_lost));
    ASSERT_OK(dlock_lock_acquire(lacking, DLOCK_WATCHDOG));
    ASSERT_OK(dlock_lock_acquire(kept, DLOCK_WATCHDOG));

    /* Both reached the replica; then "lacking" goes from it alone (a write the replica
     * never got, as a failover can lose one). */
    redis_fixture *replica = sentinel_fixture_node(fx, sentinel_fixture_replica_index(fx));
    bool replicated = false;
    POLL_UNTIL(replicated, redis_fixture_int(replica, "EXISTS lacking kept") == 2, slack_ms(3000));
    assert_true(replicated);
    freeReplyObject(redis_fixture_cmd(replica, "CONFIG SET replica-read-only no"));
    assert_int_equal(redis_fixture_int(replica, "DEL lacking"), 1);

    int64_t start = test_now_ms();
    assert_true(sentinel_fixture_failover(fx) >= 0);
    int64_t promoted = test_now_ms();
    /* once the sentinels agree, the client lands within a reconnect backoff (100 ms) */
    bool lost = false;
    POLL_UNTIL(lost, lost_get_in(&lacking_lost).calls > 0, test_prompt_ms());
    if (!lost)
        fail_msg("the lease the new master lacks was not reported lost within %lld ms of the "
                 "promotion",
                 (long long)test_prompt_ms());
    lost_record r = lost_get_in(&lacking_lost);
    printf("# lost signal %lld ms after the failover began (%lld ms after the sentinels "
           "agreed)\n",
           (long long)(r.first_ms - start), (long long)(r.first_ms - promoted));
    assert_int_equal(r.reason, DLOCK_ELOST);
    ASSERT_RC(dlock_lock_release(lacking), DLOCK_ELOST);
    /* the lease the new master has was confirmed there, not reported */
    assert_int_equal(lost_get_in(&kept_lost).calls, 0);
    ASSERT_OK(dlock_lock_release(kept));
    dlock_lock_free(lacking);
    dlock_lock_free(kept);
    dlock_client_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_sentinel_failover_under_load_keeps_locks_exclusive_and_clients_return, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_killed_master_under_load_keeps_locks_exclusive_and_clients_return, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_lease_the_promoted_replica_lacks_is_reported_lost_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_waiter_is_woken_on_the_new_master_by_the_holders_release, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_missed_failover_is_found_when_the_old_master_turns_replica, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
