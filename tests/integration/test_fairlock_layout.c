/* SPDX-License-Identifier: MIT */
/* test_fairlock_layout.c — the fair lock's layout in Redis (docs/fairlock.md), read back with
 * plain commands: the queue list in arrival order, dlock's deadlines in {N}:fair_waiters at
 * the server's TIME + fair_wait_ms, Redisson's chained scores in redisson_lock_timeout:{N},
 * one channel per waiter; a name with a '{' gets no extra braces. Split from
 * test_fairlock.c; helpers: tests/support/fairlock_helpers.h. Every test starts its own
 * server. */
#include "fairlock_helpers.h"

/* ---- the layout in Redis ----------------------------------------------------------------- */

static void
test_layout_queue_in_arrival_order_timeouts_at_server_time_plus_fair_wait_one_channel_each(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t fair_wait = 5000;
    dlock_client *a = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_client *b = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_client *c = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_lock *la = new_fair(a, "layout");
    dlock_lock *lb = new_fair(b, "layout");
    dlock_lock *lc = new_fair(c, "layout");
    atomic_store(&turns, 0);
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    char holder[FIELD_MAX], dump[512], want[1024];
    owner_field(a, dlock_thread_owner(), holder, sizeof(holder));
    snprintf(want, sizeof(want), "%s=1;", holder);
    hash_dump(f, "layout", dump, sizeof(dump));
    assert_string_equal(dump, want); /* the lock itself: as the reentrant lock */
    waiter wb = {.c = b, .l = lb, .wait_ms = slack_ms(30000)};
    waiter wc = {.c = c, .l = lc, .wait_ms = slack_ms(30000)};
    pthread_t tb = start_sleeping_waiter(f, "layout", &wb);
    pthread_t tc = start_sleeping_waiter(f, "layout", &wc);

    char *type = redis_fixture_str(f, "TYPE redisson_lock_queue:{layout}");
    assert_string_equal(type, "list");
    free(type);
    type = redis_fixture_str(f, "TYPE redisson_lock_timeout:{layout}");
    assert_string_equal(type, "zset");
    free(type);
    type = redis_fixture_str(f, "TYPE {layout}:fair_waiters");
    assert_string_equal(type, "zset");
    free(type);
    char q[1024];
    queue_dump(f, "layout", q, sizeof(q));
    snprintf(want, sizeof(want), "%s,%s,", wb.field, wc.field);
    assert_string_equal(q, want); /* first in line first */
    assert_int_equal(redis_fixture_int(f, "ZCARD redisson_lock_timeout:{layout}"), 2);
    assert_int_equal(redis_fixture_int(f, "ZCARD {layout}:fair_waiters"), 2);
    /* dlock's deadlines: the server's clock + fair_wait, refreshed at least every
     * fair_wait / 3 */
    long long now = server_now_ms(f);
    long long db = deadline_of(f, "layout", wb.field), dc = deadline_of(f, "layout", wc.field);
    ASSERT_BETWEEN(db - now, fair_wait - fair_wait / 3 - slack_ms(300), fair_wait + 50);
    ASSERT_BETWEEN(dc - now, fair_wait - fair_wait / 3 - slack_ms(300), fair_wait + 50);
    assert_int_equal(deadline_of(f, "layout", holder), -1); /* the holder is not in line */
    /* Redisson's chained scores: the first REDISSON_WAIT after the lease's end, each next
     * REDISSON_WAIT after the one before (a refresh may raise one by the ms the clock
     * moved) */
    const long long redisson_wait = 300000;
    long long lease_end = now + redis_fixture_int(f, "PTTL layout");
    long long rb = redisson_score_of(f, "layout", wb.field);
    long long rc = redisson_score_of(f, "layout", wc.field);
    ASSERT_BETWEEN(rb - lease_end, redisson_wait - 50, redisson_wait + 50);
    ASSERT_BETWEEN(rc - rb, redisson_wait - 50, redisson_wait + 50);
    assert_int_equal(redisson_score_of(f, "layout", holder), -1);
    /* one channel per waiter; nobody listens on the lock's own channel */
    char chb[512], chc[512];
    waiter_channel("layout", wb.field, chb, sizeof(chb));
    waiter_channel("layout", wc.field, chc, sizeof(chc));
    assert_int_equal(numsub(f, chb), 1);
    assert_int_equal(numsub(f, chc), 1);
    assert_int_equal(numsub(f, "redisson_lock__channel:{layout}"), 0);
    assert_int_equal(subscribed_channels_matching(f, "redisson_lock__channel:*"), 2);

    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    assert_int_equal(pthread_join(tb, NULL), 0);
    assert_int_equal(pthread_join(tc, NULL), 0);
    ASSERT_RC(wb.rc, DLOCK_OK);
    ASSERT_RC(wc.rc, DLOCK_OK);
    assert_int_equal(wb.turn, 1);
    assert_int_equal(wc.turn, 2);
    /* everybody served: nothing left behind */
    assert_int_equal(redis_fixture_int(f, "EXISTS layout"), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_queue:{layout}"), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_timeout:{layout}"), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS {layout}:fair_waiters"), 0);
    printf("# deadlines %lld and %lld ms ahead of the server's clock (fair_wait_ms %lld)\n",
           db - now, dc - now, (long long)fair_wait);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_lock_free(lc);
    dlock_client_free(a);
    dlock_client_free(b);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void
test_name_with_a_brace_uses_queue_timeout_and_channel_without_extra_braces(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    const char *name = "acct{7}:fair";
    dlock_lock *la = new_fair(a, name);
    dlock_lock *lb = new_fair(b, name);
    atomic_store(&turns, 0);
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    waiter w = {.c = b, .l = lb, .wait_ms = slack_ms(20000)};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, waiter_run, &w), 0);
    bool ok = false;
    POLL_UNTIL(ok, redis_fixture_int(f, "LLEN redisson_lock_queue:acct{7}:fair") == 1,
               slack_ms(3000));
    assert_true(ok);
    char channel[512];
    snprintf(channel, sizeof(channel), "redisson_lock__channel:acct{7}:fair:%s", w.field);
    POLL_UNTIL(ok, numsub(f, channel) == 1, slack_ms(3000));
    assert_true(ok);
    assert_int_equal(redis_fixture_int(f, "ZCARD redisson_lock_timeout:acct{7}:fair"), 1);
    assert_int_equal(redis_fixture_int(f, "ZCARD acct{7}:fair:fair_waiters"), 1);
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_queue:{acct{7}:fair}"), 0);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(w.rc, DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_queue:acct{7}:fair"), 0);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_layout_queue_in_arrival_order_timeouts_at_server_time_plus_fair_wait_one_channel_each),
        cmocka_unit_test(
            test_name_with_a_brace_uses_queue_timeout_and_channel_without_extra_braces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
