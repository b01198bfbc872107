/* SPDX-License-Identifier: MIT */
/* test_redisson_defects.c — the two ways dlock once went wrong beside the real Redisson
 * 3.52.0 client (issue 15), each with a Redisson peer (redisson-cli) on the same server.
 *
 * 1. Read-write lock: Redisson's read watchdog renews the hash but, when a reader on the
 *    name has two holds, its renewal script fails before it renews the timeout keys of the
 *    readers after that one. A Redisson reader is alive by Redisson's rule (its field in the
 *    live hash) though its timeout key is gone; dlock must not drop it, delete the hash
 *    under it, or let a writer in beside it.
 * 2. Fair lock: a Redisson acquisition lowers every waiter's score by its wait (5 min); the
 *    dlock waiter queued behind it must still be served in its turn, before the Redisson
 *    waiter that queued after it.
 *
 * It takes ~35 s: in 1 the Redisson reader holds for TEST_SLOW_MS (30 s), so that every check
 * falls inside its hold however loaded the machine is.
 *
 * Skipped (exit 77, the reason printed) without $DLOCK_REDISSON_CLI. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core_call.h"
#include "dlock.h"
#include "harness.h"
#include "redisson_peer.h"

#define BUDGET_S 120
#define LINE_MAX_LEN 1024

/* Lines the peers must print within: a JVM start plus Redisson's connect on a busy box. */
static int64_t peer_ms(int64_t ms) {
    return test_slack_ms(ms) + RJ_START_MS;
}

/* ---- 1. the read-write lock ---------------------------------------------------------------- */

static void
test_dlock_writer_never_enters_beside_a_redisson_reader_whose_timeout_key_its_watchdog_left_to_expire(
    void **state) {
    (void)state;
    SKIP_WITHOUT_REDISSON();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_tcp_server();
    dlock_client *d = connect_client(f), *w = connect_client(f);
    dlock_rwlock *rd = NULL, *rw = NULL;
    ASSERT_RC(dlock_rwlock_new(d, "rw", &rd), DLOCK_OK);
    ASSERT_RC(dlock_rwlock_new(w, "rw", &rw), DLOCK_OK);
    /* a dlock reader with two holds: Redisson's renewal script stops at its second hold */
    ASSERT_RC(dlock_lock_acquire(dlock_rwlock_read(rd), DLOCK_WATCHDOG), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(dlock_rwlock_read(rd), DLOCK_WATCHDOG), DLOCK_OK);

    /* The reader holds for TEST_SLOW_MS: every check below must fall inside its hold, and a
     * loaded machine once took more than the 6 s it held before (the writer then got in
     * after the reader had simply left). */
    rj_peer j;
    char hold[24];
    snprintf(hold, sizeof(hold), "%d", TEST_SLOW_MS);
    rj_start(&j, f, "reader", 900, (const char *const[]){"read", "rw", hold, NULL});
    char line[LINE_MAX_LEN], field[128], key[256];
    rj_wait_line(&j, "acquired", peer_ms(0), line, sizeof(line));
    rj_string(line, "field", field, sizeof(field));
    snprintf(key, sizeof(key), "{rw}:%s:rwlock_timeout:1", field);
    /* the state Redisson's watchdog leaves: its hold's timeout key gone, the hash renewed */
    bool gone = false;
    POLL_UNTIL(gone, pttl_of(f, key) == -2, test_slack_ms(3000));
    if (!gone)
        fail_msg("Redisson 3.52's read watchdog renewed %s: the precondition of this test", key);
    assert_int_equal(redis_fixture_int(f, "HEXISTS rw %s", field), 1);

    /* the dlock reader leaves: the hash and the Redisson reader stay */
    ASSERT_RC(dlock_lock_release(dlock_rwlock_read(rd)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(dlock_rwlock_read(rd)), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "HEXISTS rw %s", field), 1);
    assert_true(pttl_of(f, "rw") > 0);
    /* and a dlock writer stays out while the Redisson reader holds */
    ASSERT_RC(dlock_lock_try_acquire(dlock_rwlock_write(rw), 0, 30000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_try_acquire(dlock_rwlock_write(rw), 1500, 30000), DLOCK_ETIMEDOUT);
    assert_false(rj_find(&j, "released", line, sizeof(line)));
    /* the Redisson reader ends its hold normally (exit 4 would mean it was lost) */
    assert_int_equal(rj_wait_exit(&j, peer_ms(TEST_SLOW_MS)), 0);
    ASSERT_RC(dlock_lock_try_acquire(dlock_rwlock_write(rw), slack_ms(2000), 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(dlock_rwlock_write(rw)), DLOCK_OK);

    rj_stop(&j);
    dlock_rwlock_free(rd);
    dlock_rwlock_free(rw);
    dlock_client_free(d);
    dlock_client_free(w);
    redis_fixture_stop(f);
}

/* ---- 2. the fair lock ---------------------------------------------------------------------- */

typedef struct c_waiter {
    dlock_lock *l;
    int rc;
    long long acquired_ms; /* wall clock, as the peers' lines */
    int64_t hold_ms;
} c_waiter;

static void *c_waiter_main(void *arg) {
    c_waiter *cw = arg;
    cw->rc = dlock_lock_try_acquire(cw->l, 60000, 30000);
    if (cw->rc == DLOCK_OK) {
        cw->acquired_ms = wall_ms();
        test_sleep_ms(cw->hold_ms);
        cw->rc = dlock_lock_release(cw->l);
    }
    return NULL;
}

static long long queue_len(redis_fixture *f) {
    return redis_fixture_int(f, "LLEN redisson_lock_queue:{line}");
}

static void wait_queue_len(redis_fixture *f, long long n) {
    bool ok = false;
    POLL_UNTIL(ok, queue_len(f) == n, peer_ms(0));
    if (!ok)
        fail_msg("queue length %lld, expected %lld", queue_len(f), n);
}

static void
test_mixed_fair_line_is_served_in_arrival_order_across_redisson_acquisitions(void **state) {
    (void)state;
    SKIP_WITHOUT_REDISSON();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_tcp_server();
    dlock_client *c0 = connect_client(f), *c2 = connect_client(f);
    dlock_lock *l0 = NULL, *l2 = NULL;
    ASSERT_RC(dlock_fairlock_new(c0, "line", &l0), DLOCK_OK);
    ASSERT_RC(dlock_fairlock_new(c2, "line", &l2), DLOCK_OK);
    /* C0 holds; J1, C2, J3 queue in that order */
    ASSERT_RC(dlock_lock_acquire(l0, 30000), DLOCK_OK);
    rj_peer j1, j3;
    rj_start(&j1, f, "J1", 0, (const char *const[]){"fairlock", "line", "400", NULL});
    wait_queue_len(f, 1);
    c_waiter cw = {.l = l2, .hold_ms = 400};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, c_waiter_main, &cw), 0);
    wait_queue_len(f, 2);
    rj_start(&j3, f, "J3", 0, (const char *const[]){"fairlock", "line", "400", NULL});
    wait_queue_len(f, 3);
    ASSERT_RC(dlock_lock_release(l0), DLOCK_OK);

    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(cw.rc, DLOCK_OK);
    assert_int_equal(rj_wait_exit(&j1, peer_ms(5000)), 0);
    assert_int_equal(rj_wait_exit(&j3, peer_ms(5000)), 0);
    char l1[LINE_MAX_LEN], l3[LINE_MAX_LEN], r1[LINE_MAX_LEN];
    rj_find(&j1, "acquired", l1, sizeof(l1));
    rj_find(&j1, "released", r1, sizeof(r1));
    rj_find(&j3, "acquired", l3, sizeof(l3));
    long long a1 = rj_epoch_ms(l1), a3 = rj_epoch_ms(l3);
    printf("# served: J1 at +0, C2 at +%lld ms, J3 at +%lld ms (J1 released at +%lld)\n",
           cw.acquired_ms - a1, a3 - a1, rj_epoch_ms(r1) - a1);
    /* each held 400 ms: the order is plain in the wall-clock stamps */
    assert_true(a1 < cw.acquired_ms);
    assert_true(cw.acquired_ms < a3);
    /* C2 got in no sooner than J1's 400 ms hold allowed (5 ms for two whole-ms clocks; J1's
     * "released" line itself comes after its unlock returned, and a busy JVM prints it late:
     * 72 ms after C2 was in was seen), and did not wait for a refresh: it was woken by J1's
     * release */
    assert_true(cw.acquired_ms >= a1 + 400 - 5);
    ASSERT_BETWEEN(cw.acquired_ms - rj_epoch_ms(r1), -slack_ms(500), slack_ms(500));
    assert_int_equal(queue_len(f), 0);

    rj_stop(&j1);
    rj_stop(&j3);
    dlock_lock_free(l0);
    dlock_lock_free(l2);
    dlock_client_free(c0);
    dlock_client_free(c2);
    redis_fixture_stop(f);
}

int main(void) {
    if (redisson_absent())
        return REDISSON_SKIPPED;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_dlock_writer_never_enters_beside_a_redisson_reader_whose_timeout_key_its_watchdog_left_to_expire),
        cmocka_unit_test(
            test_mixed_fair_line_is_served_in_arrival_order_across_redisson_acquisitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
