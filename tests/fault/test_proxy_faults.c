/* SPDX-License-Identifier: MIT */
/* test_proxy_faults.c — network faults between a client and Redis, made by the fault proxy
 * (tests/support/fault_proxy.h): lost replies, dropped connections, partitions, slow
 * replies.
 *
 * What is proven (here and in the files split from it):
 * - the proxy itself: it forwards requests and replies (large ones too) and counts them,
 *   drops every connection on command, loses exactly the reply of the n-th request after
 *   the server ran it, delays replies by the time asked, and black-holes traffic until the
 *   partition heals;
 * - reply lost (the connection drops after the server ran a command, before its reply
 *   arrived), with resends allowed: a lock acquire, a reentrant acquire, a release and the
 *   last release are each applied exactly once (hold counts read back with HGET, no phantom
 *   hold left after the releases); the same for the fair lock (and a fair waiter whose
 *   "busy" answer is lost is queued once) and for both halves of the read-write lock (one
 *   lease key per read hold); a fenced acquire takes one token; a permit-expirable acquire
 *   and release move exactly one permit. A plain semaphore acquire or release and a latch
 *   count-down (never resent: their effect is unknown) return OK or DLOCK_ECONN, never
 *   apply twice, and the client keeps working;
 * - reply lost with no resend left (retry_attempts 0): acquire and release fail with
 *   DLOCK_ECONN, the failed acquire's orphan hold is given back (handoff_drop.lua, once
 *   reconnected; the test waits for it), the owner's next acquire takes one hold, a
 *   repeated release settles an unsure one; a release that failed with DLOCK_ECONN and is
 *   left alone expires by its lease, and one followed by a new acquire and release leaves
 *   nothing held, whether it had run or not;
 * - both connections dropped under a waiter: it resubscribes and still gets the lock
 *   within moments of the release, not at its 30 s hint;
 * - partition longer than the lease while holding a watchdog lock: the holder's lost
 *   callback fires within watchdog_ms of the acquire call's start, no later than Redis lets
 *   the lease go, and before a client on the other side of the partition is granted the
 *   lock; after the partition heals the holder's release says DLOCK_ELOST and new
 *   acquisitions work. A partition longer than the reply timeout but shorter than the
 *   lease costs nothing: the lock stays held without a gap, no lost callback;
 * - slow replies: a 200 ms delay under a 30 s reply timeout only slows calls down; a
 *   1500 ms delay under a 500 ms timeout fails calls with DLOCK_ECONN within
 *   timeout_ms x (retry_attempts + 1), and the client recovers once the delay is gone.
 *
 * Every test starts its own redis-server and proxy and prints its figures ("# ...").
 *
 * Split by concern: the proxy itself, connections dropped under a waiter and slow replies
 * here; reply lost in test_proxy_reply_lost.c, partitions in test_proxy_partition.c. Helpers:
 * tests/support/proxy_helpers.h.
 */
#include "proxy_helpers.h"

/* ---- the proxy itself -------------------------------------------------------------------- */

static void test_proxy_forwards_requests_and_replies_large_ones_too_and_counts_them(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    fault_proxy *p = start_proxy(f);
    redisContext *ctx = raw_connect(p, 5000);
    assert_true(raw_ping(ctx));
    /* 3 MiB each way: more than a socket buffer, so the proxy must queue and resume */
    size_t big_len = 3u << 20;
    char *big = malloc(big_len);
    assert_non_null(big);
    for (size_t i = 0; i < big_len; i++)
        big[i] = (char)('a' + i % 26);
    redisReply *r = redisCommand(ctx, "SET big %b", big, big_len);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = redisCommand(ctx, "GET big");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(r->len, big_len);
    assert_memory_equal(r->str, big, big_len);
    freeReplyObject(r);
    free(big);
    fault_proxy_stats s = fault_proxy_stats_get(p);
    assert_int_equal(s.accepted, 1);
    assert_int_equal(s.open, 1);
    assert_int_equal(s.requests_up, 3);
    assert_int_equal(s.replies_down, 3);
    assert_true(s.bytes_up > big_len);
    assert_true(s.bytes_down > big_len);
    assert_int_equal(s.bytes_discarded, 0);
    assert_int_equal(s.closed_by_fault, 0);
    redisFree(ctx);

    /* a dlock client through it: both connections' handshakes and a round trip */
    dlock_client *c = connect_client_cfg(NULL, (test_client_cfg){.url = fault_proxy_url(p)});
    ASSERT_RC(dlock_client_ping(c), DLOCK_OK);
    dlock_lock *l = new_lock(c, "through");
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    s = fault_proxy_stats_get(p);
    printf("# proxy: %llu connections, %llu requests / %llu bytes up, %llu replies / %llu "
           "bytes down\n",
           (unsigned long long)s.accepted, (unsigned long long)s.requests_up,
           (unsigned long long)s.bytes_up, (unsigned long long)s.replies_down,
           (unsigned long long)s.bytes_down);
    assert_int_equal(s.accepted, 2);
    dlock_lock_free(l);
    dlock_client_free(c);
    fault_proxy_stop(p);
    redis_fixture_stop(f);
}

static void test_proxy_drop_all_closes_every_connection_and_accepts_new_ones(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    fault_proxy *p = start_proxy(f);
    redisContext *a = raw_connect(p, 2000);
    redisContext *b = raw_connect(p, 2000);
    assert_true(raw_ping(a));
    assert_true(raw_ping(b));
    assert_int_equal(fault_proxy_drop_all(p), 2);
    assert_false(raw_ping(a));
    assert_false(raw_ping(b));
    redisContext *c = raw_connect(p, 2000);
    assert_true(raw_ping(c));
    fault_proxy_stats s = fault_proxy_stats_get(p);
    assert_int_equal(s.accepted, 3);
    assert_int_equal(s.open, 1);
    assert_int_equal(s.closed_by_fault, 2);
    redisFree(a);
    redisFree(b);
    redisFree(c);
    fault_proxy_stop(p);
    redis_fixture_stop(f);
}

static void
test_proxy_drop_after_request_runs_the_request_and_loses_exactly_its_reply(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    fault_proxy *p = start_proxy(f);
    redisContext *idle = raw_connect(p, 2000); /* sends nothing: never picked */
    redisContext *ctx = raw_connect(p, 2000);
    assert_int_equal(raw_int(ctx, "INCRBY n 0"), 0);
    /* n = 2: the first INCR's reply comes back, the second's is lost */
    fault_proxy_drop_after_request(p, 2);
    assert_int_equal(raw_int(ctx, "INCR n"), 1);
    assert_int_equal(raw_int(ctx, "INCR n"), LLONG_MIN);
    assert_int_equal(redis_fixture_int(f, "GET n"), 2); /* it ran, once */
    fault_proxy_stats s = fault_proxy_stats_get(p);
    assert_int_equal(s.replies_lost, 1);
    redisFree(ctx);

    /* n = 1 with two requests in one write: the first runs, its reply is lost, the second
     * never reaches the server */
    ctx = raw_connect(p, 2000);
    fault_proxy_drop_after_request(p, 1);
    redisAppendCommand(ctx, "INCR n");
    redisAppendCommand(ctx, "INCR n");
    void *reply = NULL;
    assert_int_equal(redisGetReply(ctx, &reply), REDIS_ERR);
    assert_null(reply);
    assert_int_equal(redis_fixture_int(f, "GET n"), 3);
    redisFree(ctx);

    /* the fault was used up: the next connection is forwarded normally */
    ctx = raw_connect(p, 2000);
    assert_int_equal(raw_int(ctx, "INCR n"), 4);
    assert_true(raw_ping(idle));
    s = fault_proxy_stats_get(p);
    assert_int_equal(s.replies_lost, 2);
    assert_int_equal(s.closed_by_fault, 2);
    redisFree(ctx);
    redisFree(idle);
    fault_proxy_stop(p);
    redis_fixture_stop(f);
}

static void test_proxy_delay_replies_holds_each_reply_for_the_time_asked(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    fault_proxy *p = start_proxy(f);
    redisContext *ctx = raw_connect(p, 5000);
    assert_true(raw_ping(ctx));
    int64_t start = test_now_ms();
    assert_true(raw_ping(ctx));
    int64_t plain = test_now_ms() - start;
    /* long enough that "held from arrival" and "one after the other" (2 x delay) are seconds
     * apart, a margin a loaded machine does not eat */
    const int64_t delay = 2000;
    fault_proxy_delay_replies(p, delay);
    start = test_now_ms();
    assert_true(raw_ping(ctx));
    int64_t delayed = test_now_ms() - start;
    /* two pipelined requests: both replies held `delay` from their arrival, not 2 x delay */
    start = test_now_ms();
    redisAppendCommand(ctx, "PING");
    redisAppendCommand(ctx, "PING");
    void *r1 = NULL, *r2 = NULL;
    assert_int_equal(redisGetReply(ctx, &r1), REDIS_OK);
    assert_int_equal(redisGetReply(ctx, &r2), REDIS_OK);
    int64_t pipelined = test_now_ms() - start;
    freeReplyObject(r1);
    freeReplyObject(r2);
    fault_proxy_delay_replies(p, 0);
    start = test_now_ms();
    assert_true(raw_ping(ctx));
    int64_t after = test_now_ms() - start;
    printf("# delay: PING %lld ms plain, %lld ms with %lld ms delay (2 pipelined: %lld ms), "
           "%lld ms after it is removed\n",
           (long long)plain, (long long)delayed, (long long)delay, (long long)pipelined,
           (long long)after);
    ASSERT_BETWEEN(delayed, delay, delay + test_prompt_ms());
    ASSERT_BETWEEN(pipelined, delay, 2 * delay - 1);
    ASSERT_BETWEEN(after, 0, delay - 1); /* not held any more */
    redisFree(ctx);
    fault_proxy_stop(p);
    redis_fixture_stop(f);
}

static void test_proxy_blackhole_forwards_nothing_then_heals(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    fault_proxy *p = start_proxy(f);
    redisContext *quiet = raw_connect(p, 2000); /* idle through the partition */
    redisContext *talker = raw_connect(p, 300);
    assert_true(raw_ping(quiet));
    assert_true(raw_ping(talker));
    fault_proxy_blackhole(p, true);
    int64_t start = test_now_ms();
    assert_int_equal(raw_int(talker, "INCR bh"), LLONG_MIN); /* read timeout */
    int64_t took = test_now_ms() - start;
    ASSERT_BETWEEN(took, 290, 300 + test_prompt_ms());
    /* a connection made during the partition is accepted, and hears nothing */
    redisContext *newcomer = raw_connect(p, 300);
    assert_int_equal(raw_int(newcomer, "INCR bh"), LLONG_MIN);
    assert_int_equal(redis_fixture_int(f, "EXISTS bh"), 0); /* neither INCR reached Redis */
    fault_proxy_stats during = fault_proxy_stats_get(p);
    assert_int_equal(during.accepted, 3);
    assert_true(during.bytes_discarded > 0);

    fault_proxy_blackhole(p, false);
    /* the two that lost bytes are cut; the quiet one carries on */
    fault_proxy_stats healed = fault_proxy_stats_get(p);
    assert_int_equal(healed.closed_by_fault, 2);
    assert_int_equal(healed.open, 1);
    assert_true(raw_ping(quiet));
    redisContext *fresh = raw_connect(p, 2000);
    assert_int_equal(raw_int(fresh, "INCR bh"), 1);
    printf("# blackhole: request timed out after %lld ms, %llu bytes discarded\n", (long long)took,
           (unsigned long long)during.bytes_discarded);
    redisFree(quiet);
    redisFree(talker);
    redisFree(newcomer);
    redisFree(fresh);
    fault_proxy_stop(p);
    redis_fixture_stop(f);
}

/* ---- connections dropped under a waiter -------------------------------------------------- */

typedef struct waiter_thread {
    dlock_lock *l;
    int rc, release_rc;
    int64_t got_ms;
} waiter_thread;

static void *wait_then_release(void *arg) {
    waiter_thread *t = arg;
    t->rc = dlock_lock_try_acquire(t->l, 30000, 10000);
    t->got_ms = test_now_ms();
    if (t->rc == DLOCK_OK)
        t->release_rc = dlock_lock_release(t->l);
    return NULL;
}

static long long numsub_or_minus_one(redis_fixture *f, const char *channel) {
    redisReply *r = redis_fixture_cmd(f, "PUBSUB NUMSUB %s", channel);
    assert_non_null(r);
    long long n = r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? r->element[1]->integer : -1;
    freeReplyObject(r);
    return n;
}

/* The id of the one connection in subscribe mode, or -1 if there is not exactly one. */
static long long pubsub_client_id(redis_fixture *f) {
    char *list = redis_fixture_str(f, "CLIENT LIST TYPE pubsub");
    assert_non_null(list);
    long long id = -1;
    int lines = 0;
    for (char *line = list; line && *line;
         line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, "id=", 3) == 0) {
            id = strtoll(line + 3, NULL, 10);
            lines++;
        }
    }
    free(list);
    return lines == 1 ? id : -1;
}

static void
test_both_connections_dropped_under_a_waiter_it_still_gets_the_lock_at_the_release(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    fault_proxy *p = start_proxy(f);
    dlock_client *holder = connect_client(f);
    dlock_client *waiting = connect_client_cfg(NULL, (test_client_cfg){.url = fault_proxy_url(p)});
    dlock_lock *lh = new_lock(holder, "dropped-wait");
    dlock_lock *lw = new_lock(waiting, "dropped-wait");
    /* a long lease: the waiter's hint says "come back in 30 s", so only the message or the
     * attempt after the resubscription can bring it in early */
    ASSERT_RC(dlock_lock_acquire(lh, 30000), DLOCK_OK);
    waiter_thread t = {.l = lw, .rc = 1};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, wait_then_release, &t), 0);
    const char *channel = "redisson_lock__channel:{dropped-wait}";
    bool subscribed = false;
    POLL_UNTIL(subscribed, numsub_or_minus_one(f, channel) == 1, test_slack_ms(3000));
    assert_true(subscribed);
    assert_int_equal(fault_proxy_stats_get(p).open, 2); /* command + subscriber */
    long long old_id = pubsub_client_id(f);
    assert_true(old_id > 0);

    assert_int_equal(fault_proxy_drop_all(p), 2);
    int64_t dropped_at = test_now_ms();
    /* back: a new subscriber connection (another id), the only one, on the channel */
    bool back = false;
    long long new_id = -1;
    POLL_UNTIL(back,
               (new_id = pubsub_client_id(f)) > 0 && new_id != old_id &&
                   numsub_or_minus_one(f, channel) == 1 && fault_proxy_stats_get(p).open == 2,
               test_slack_ms(5000));
    assert_true(back);
    int64_t resubscribed_after = test_now_ms() - dropped_at;
    test_sleep_ms(50); /* let the attempt that follows the resubscription come back busy */
    int64_t released_at = test_now_ms();
    ASSERT_RC(dlock_lock_release(lh), DLOCK_OK);
    assert_int_equal(pthread_join(th, NULL), 0);
    ASSERT_RC(t.rc, DLOCK_OK);
    ASSERT_RC(t.release_rc, DLOCK_OK);
    int64_t handoff = t.got_ms - released_at;
    printf("# drop all under a waiter: resubscribed %lld ms after the drop; lock handed over "
           "%lld ms after the release\n",
           (long long)resubscribed_after, (long long)handoff);
    ASSERT_BETWEEN(handoff, 0, test_prompt_ms()); /* not at its 30 s hint */
    assert_int_equal(redis_fixture_int(f, "EXISTS dropped-wait"), 0);
    dlock_lock_free(lh);
    dlock_lock_free(lw);
    dlock_client_free(holder);
    dlock_client_free(waiting);
    fault_proxy_stop(p);
    redis_fixture_stop(f);
}

/* ---- slow replies ------------------------------------------------------------------------ */

static void
test_replies_delayed_less_than_the_timeout_succeed_slower_without_a_reconnect(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    fault_proxy *p = start_proxy(f);
    dlock_client *c = connect_client_cfg(NULL, (test_client_cfg){.url = fault_proxy_url(p),
                                                                 .timeout_ms = TEST_SLOW_MS,
                                                                 .retry_attempts = 1});
    dlock_lock *l = new_lock(c, "slow");
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_client_ping(c), DLOCK_OK);
    int64_t plain = test_now_ms() - start;
    uint64_t accepted = fault_proxy_stats_get(p).accepted;

    fault_proxy_delay_replies(p, 200);
    int64_t took[4];
    start = test_now_ms();
    ASSERT_RC(dlock_client_ping(c), DLOCK_OK);
    took[0] = test_now_ms() - start;
    start = test_now_ms();
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    took[1] = test_now_ms() - start;
    int64_t count = 0;
    start = test_now_ms();
    ASSERT_RC(dlock_lock_hold_count(l, &count), DLOCK_OK);
    took[2] = test_now_ms() - start;
    assert_int_equal(count, 1);
    start = test_now_ms();
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    took[3] = test_now_ms() - start;
    fault_proxy_pass(p);
    printf("# delay 200 ms, timeout %d ms: ping %lld ms (plain %lld), acquire %lld, "
           "hold_count %lld, release %lld\n",
           TEST_SLOW_MS, (long long)took[0], (long long)plain, (long long)took[1],
           (long long)took[2], (long long)took[3]);
    for (int i = 0; i < 4; i++)
        ASSERT_BETWEEN(took[i], 199, 200 + test_prompt_ms()); /* the delay, not a timeout */
    assert_int_equal(redis_fixture_int(f, "EXISTS slow"), 0);
    /* no reply timed out: the client never reconnected */
    fault_proxy_stats s = fault_proxy_stats_get(p);
    assert_int_equal(s.accepted, accepted);
    assert_int_equal(s.closed_by_fault, 0);
    dlock_lock_free(l);
    dlock_client_free(c);
    fault_proxy_stop(p);
    redis_fixture_stop(f);
}

static void
test_replies_delayed_beyond_the_timeout_fail_econn_in_bounded_time_then_recover(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    fault_proxy *p = start_proxy(f);
    const int64_t timeout_ms = 500;
    const int retries = 1;
    const int64_t give_up_ms = timeout_ms * (retries + 1);
    dlock_client *c =
        connect_client_cfg(NULL, (test_client_cfg){.url = fault_proxy_url(p),
                                                   .timeout_ms = timeout_ms,
                                                   .retry_attempts = test_retries(retries),
                                                   .connect_timeout_ms = timeout_ms});
    dlock_lock *l = new_lock(c, "too-slow");
    ASSERT_RC(dlock_client_ping(c), DLOCK_OK);

    fault_proxy_delay_replies(p, 1500);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_client_ping(c), DLOCK_ECONN);
    int64_t ping_took = test_now_ms() - start;
    start = test_now_ms();
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_ECONN);
    int64_t acquire_took = test_now_ms() - start;
    assert_true(strlen(dlock_last_error()) > 0);

    fault_proxy_pass(p);
    int64_t healed_at = test_now_ms();
    int rc = DLOCK_ECONN;
    while (rc != DLOCK_OK && test_now_ms() - healed_at < test_slack_ms(5000))
        rc = dlock_client_ping(c);
    ASSERT_RC(rc, DLOCK_OK);
    int64_t back_after = test_now_ms() - healed_at;
    /* the failed acquire may have run in Redis (its reply was only late): the next acquire
     * of the same owner takes that hold as its own, so one release frees the lock */
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    int64_t count = 0;
    ASSERT_RC(dlock_lock_hold_count(l, &count), DLOCK_OK);
    assert_int_equal(count, 1);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS too-slow"), 0);
    printf("# delay 1500 ms, timeout %lld ms x %d sends: ping ECONN after %lld ms, acquire "
           "ECONN after %lld ms; back %lld ms after the delay was removed\n",
           (long long)timeout_ms, retries + 1, (long long)ping_took, (long long)acquire_took,
           (long long)back_after);
    /* at least one reply timeout, and it ends (DLOCK_ECONN, where the late reply would have
     * said OK, proves the timeouts ended it) */
    ASSERT_BETWEEN(ping_took, timeout_ms - 2, give_up_ms + test_prompt_ms());
    ASSERT_BETWEEN(acquire_took, timeout_ms - 2, give_up_ms + test_prompt_ms());
    dlock_lock_free(l);
    dlock_client_free(c);
    fault_proxy_stop(p);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proxy_forwards_requests_and_replies_large_ones_too_and_counts_them),
        cmocka_unit_test(test_proxy_drop_all_closes_every_connection_and_accepts_new_ones),
        cmocka_unit_test(
            test_proxy_drop_after_request_runs_the_request_and_loses_exactly_its_reply),
        cmocka_unit_test(test_proxy_delay_replies_holds_each_reply_for_the_time_asked),
        cmocka_unit_test(test_proxy_blackhole_forwards_nothing_then_heals),
        cmocka_unit_test(
            test_both_connections_dropped_under_a_waiter_it_still_gets_the_lock_at_the_release),
        cmocka_unit_test(
            test_replies_delayed_less_than_the_timeout_succeed_slower_without_a_reconnect),
        cmocka_unit_test(
            test_replies_delayed_beyond_the_timeout_fail_econn_in_bounded_time_then_recover),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
