/* SPDX-License-Identifier: MIT */
/* test_fairlock_async.c — the fair lock's bad input (each DLOCK_EINVAL without any I/O, a
 * key of another type) and its async face: 500 async waiters of two clients served in queue
 * order, and a handle freed under a waiting acquire leaves the queue without delaying the
 * next. Split from test_fairlock.c; helpers: tests/support/fairlock_helpers.h. Every test
 * starts its own server. */
#include "fairlock_helpers.h"

/* ---- bad input --------------------------------------------------------------------------- */

static void on_acquired_keep(dlock_lock *l, int status, void *arg);

static void test_bad_arguments_are_einval_without_any_io(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_options o;
    dlock_options_init(&o);
    assert_int_equal(o.fair_wait_ms, 5000);
    o.url = redis_fixture_unix_url(f);
    o.fair_wait_ms = 2; /* a third of it would be 0: no refresh interval */
    dlock_client *bad = (dlock_client *)&o;
    ASSERT_RC(dlock_client_new(&o, &bad), DLOCK_EINVAL);
    assert_ptr_equal(bad, (dlock_client *)&o);
    dlock_client *c = connect_client(f);
    dlock_lock *sentinel = (dlock_lock *)&o, *l = sentinel;
    ASSERT_RC(dlock_fairlock_new(NULL, "x", &l), DLOCK_EINVAL);
    ASSERT_RC(dlock_fairlock_new(c, NULL, &l), DLOCK_EINVAL);
    ASSERT_RC(dlock_fairlock_new(c, "", &l), DLOCK_EINVAL);
    ASSERT_RC(dlock_fairlock_new(c, "x", NULL), DLOCK_EINVAL);
    assert_ptr_equal(l, sentinel);
    l = new_fair(c, "x");
    long long before = redis_fixture_info_int(f, "stats", "total_commands_processed");
    ASSERT_RC(dlock_lock_try_acquire(l, -5, 1000), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_try_acquire(l, 100, 0), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_try_acquire(l, 100, -7), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_acquire_async(l, 0, 100, 1000, on_acquired_keep, NULL), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_acquire_async(l, 5, 100, 1000, NULL, NULL), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_hold_count(l, NULL), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_try_acquire(NULL, 0, 1000), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_release(NULL), DLOCK_EINVAL);
    uint64_t token = 9;
    ASSERT_RC(dlock_lock_token(l, &token), DLOCK_EINVAL); /* not a fenced lock */
    assert_int_equal(token, 9);
    /* the INFO itself is the only command the server saw */
    assert_int_equal(redis_fixture_info_int(f, "stats", "total_commands_processed"), before + 1);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    dlock_lock_free(NULL);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_lock_key_of_another_type_is_eredis_and_nothing_changes(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_fair(c, "a-string");
    freeReplyObject(redis_fixture_cmd(f, "SET a-string hello"));
    ASSERT_RC(dlock_lock_try_acquire(l, 200, 1000), DLOCK_EREDIS);
    assert_non_null(strstr(dlock_last_error(), "WRONGTYPE"));
    ASSERT_RC(dlock_lock_release(l), DLOCK_EREDIS);
    ASSERT_RC(dlock_lock_force_release(l, NULL), DLOCK_EREDIS);
    char *v = redis_fixture_str(f, "GET a-string");
    assert_string_equal(v, "hello");
    free(v);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 1); /* no queue, no timeout left */
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- the async face: 500 waiters, and a handle freed under a waiting acquire ------------- */

/* One async owner's acquire, recorded by its callback (which releases at once). */
typedef struct async_waiter {
    dlock_lock *l;
    uint64_t owner;
    int status;
    int turn; /* 1-based order of the acquire callbacks */
    int release_status;
    bool released;
    int64_t acquired_us;
} async_waiter;

static int async_turns;

static void on_released(dlock_lock *l, int status, void *arg) {
    (void)l;
    async_waiter *w = arg;
    w->release_status = status;
    w->released = true;
}

static void on_acquired_release_at_once(dlock_lock *l, int status, void *arg) {
    async_waiter *w = arg;
    w->status = status;
    w->turn = ++async_turns;
    w->acquired_us = test_now_us();
    if (status == DLOCK_OK && dlock_lock_release_async(l, w->owner, on_released, w) != DLOCK_OK)
        w->release_status = -1000;
}

static void on_acquired_keep(dlock_lock *l, int status, void *arg) {
    (void)l;
    async_waiter *w = arg;
    w->status = status;
    w->turn = ++async_turns;
    w->acquired_us = test_now_us();
}

static void test_500_async_waiters_of_two_clients_are_served_in_queue_order(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    /* no refresh falls in the test (one every 10 s): every message and script call
     * below is a hand-off's */
    app_open(&a, &(test_client_cfg){.fair_wait_ms = 30000}, 2);
    dlock_client *const clients[2] = {a.c, a.c2};
    long n = test_scaled(500);
    if (n < 50)
        n = 50;
    const char *name = "five-hundred";
    dlock_lock *l[2];
    for (int i = 0; i < 2; i++)
        ASSERT_RC(dlock_fairlock_new(clients[i], name, &l[i]), DLOCK_OK);
    async_waiter holder = {.l = l[0], .owner = 1, .status = 1};
    async_turns = 0;
    ASSERT_RC(dlock_lock_acquire_async(l[0], 1, 0, 60000, on_acquired_keep, &holder), DLOCK_OK);
    bool ok = false;
    RUN_LOOP_UNTIL(a.loop, ok, holder.turn == 1, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(holder.status, DLOCK_OK);
    async_turns = 0;

    async_waiter *w = calloc((size_t)n, sizeof(*w));
    assert_non_null(w);
    long long scripts_queueing = script_calls(a.f);
    int64_t queue_start = test_now_ms();
    for (long i = 0; i < n; i++) {
        /* alternating clients, owners 1000 + i; submitted in order, but two clients'
         * connections need not deliver in that order: the queue in Redis is the truth */
        w[i] = (async_waiter){.l = l[i % 2], .owner = 1000 + (uint64_t)i, .status = 1};
        ASSERT_RC(dlock_lock_acquire_async(w[i].l, w[i].owner, DLOCK_FOREVER, 60000,
                                           on_acquired_release_at_once, &w[i]),
                  DLOCK_OK);
    }
    /* all asleep: in line, subscribed, and their attempt after the subscription done */
    RUN_LOOP_UNTIL(a.loop, ok,
                   queue_len(a.f, name) == n && channels_of(a.f, name) == n &&
                       script_calls(a.f) >= scripts_queueing + 2 * n,
                   slack_ms(20000));
    if (!ok)
        fail_msg("%lld in line, %lld channels, %lld script calls of %ld waiters",
                 queue_len(a.f, name), channels_of(a.f, name), script_calls(a.f) - scripts_queueing,
                 n);
    int64_t queued_ms = test_now_ms() - queue_start;
    /* the queue, read once: position -> waiter */
    long *expected = calloc((size_t)n, sizeof(*expected));
    assert_non_null(expected);
    redisReply *r = redis_fixture_cmd(a.f, "LRANGE redisson_lock_queue:{%s} 0 -1", name);
    assert_true(r && r->type == REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, (size_t)n);
    for (long pos = 0; pos < n; pos++) {
        expected[pos] = -1;
        for (int k = 0; k < 2 && expected[pos] < 0; k++) {
            const char *id = dlock_client_id(clients[k]);
            size_t idlen = strlen(id);
            const char *s = r->element[pos]->str;
            if (strncmp(s, id, idlen) == 0 && s[idlen] == ':') {
                long i = (long)(strtoull(s + idlen + 1, NULL, 10) - 1000);
                if (i >= 0 && i < n && i % 2 == k)
                    expected[pos] = i;
            }
        }
        if (expected[pos] < 0)
            fail_msg("queue position %ld holds an unknown field %s", pos, r->element[pos]->str);
    }
    freeReplyObject(r);
    long long scripts_before = script_calls(a.f);
    long long publish_before = redis_fixture_info_int(a.f, "commandstats", "cmdstat_publish.calls");

    async_waiter holder_release = {0};
    ASSERT_RC(dlock_lock_release_async(l[0], 1, on_released, &holder_release), DLOCK_OK);
    int64_t released_us = test_now_us();
    RUN_LOOP_UNTIL(a.loop, ok, async_turns == n && w[expected[n - 1]].released, slack_ms(30000));
    if (!ok)
        fail_msg("%d of %ld waiters served", async_turns, n);
    int64_t chain_us = w[expected[n - 1]].acquired_us - released_us;
    long long scripts = script_calls(a.f) - scripts_before;
    long long publishes =
        redis_fixture_info_int(a.f, "commandstats", "cmdstat_publish.calls") - publish_before;
    ASSERT_RC(holder_release.release_status, DLOCK_OK);
    long violations = 0, first_violation = -1;
    for (long pos = 0; pos < n; pos++) {
        async_waiter *x = &w[expected[pos]];
        ASSERT_RC(x->status, DLOCK_OK);
        ASSERT_RC(x->release_status, DLOCK_OK);
        if (x->turn != pos + 1 && violations++ == 0)
            first_violation = pos;
    }
    if (violations)
        fail_msg("%ld waiters served out of queue order; first at position %ld (turn %d)",
                 violations, first_violation, w[expected[first_violation]].turn);
    /* one acquire and one release per waiter (and the holder's release), one message per
     * release to the next in line only; at most one more message and attempt per hand-off
     * (a taker may tell the next in line about its lease). A herd would be O(n^2). */
    ASSERT_BETWEEN(scripts, 2 * n + 1, 3 * n + 1);
    ASSERT_BETWEEN(publishes, n, 2 * n);
    assert_int_equal(redis_fixture_int(a.f, "EXISTS %s", name), 0);
    assert_int_equal(queue_len(a.f, name), 0);
    printf("# %ld waiters of 2 clients queued in %lld ms, served in queue order in %.1f ms "
           "(%.3f ms per hand-off); %lld script calls, %lld PUBLISH\n",
           n, (long long)queued_ms, (double)chain_us / 1000.0,
           (double)chain_us / 1000.0 / (double)n, scripts, publishes);
    free(expected);
    free(w);
    for (int i = 0; i < 2; i++)
        dlock_lock_free(l[i]);
    app_close(&a);
}

static void
test_async_waiter_whose_handle_is_freed_leaves_the_queue_and_the_next_is_not_delayed(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    /* a stale place would cost the next waiter fair_wait_ms, and its refresh comes every
     * fair_wait_ms / 3 = TEST_SLOW_MS; the holder's lease is 60 s: only the release's message
     * lets it in within test_prompt_ms() */
    app_open(&a, &(test_client_cfg){.fair_wait_ms = 3 * TEST_SLOW_MS}, 2);
    dlock_client *const clients[2] = {a.c, a.c2};
    const char *name = "canceled";
    dlock_lock *mine = NULL, *doomed = NULL, *other = NULL;
    ASSERT_RC(dlock_fairlock_new(clients[0], name, &mine), DLOCK_OK);
    ASSERT_RC(dlock_fairlock_new(clients[0], name, &doomed), DLOCK_OK);
    ASSERT_RC(dlock_fairlock_new(clients[1], name, &other), DLOCK_OK);
    async_turns = 0;
    async_waiter holder = {.l = mine, .owner = 1, .status = 1};
    async_waiter canceled = {.l = doomed, .owner = 2, .status = 1};
    async_waiter next = {.l = other, .owner = 3, .status = 1};
    ASSERT_RC(dlock_lock_acquire_async(mine, 1, 0, 60000, on_acquired_keep, &holder), DLOCK_OK);
    bool ok = false;
    RUN_LOOP_UNTIL(a.loop, ok, holder.turn == 1, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(holder.status, DLOCK_OK);
    async_turns = 0;
    ASSERT_RC(
        dlock_lock_acquire_async(doomed, 2, DLOCK_FOREVER, 60000, on_acquired_keep, &canceled),
        DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, queue_len(a.f, name) == 1, slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(dlock_lock_acquire_async(other, 3, DLOCK_FOREVER, 60000, on_acquired_keep, &next),
              DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, queue_len(a.f, name) == 2, slack_ms(5000));
    assert_true(ok);
    char f2[FIELD_MAX], f3[FIELD_MAX], want[512], q[1024];
    owner_field(clients[0], 2, f2, sizeof(f2));
    owner_field(clients[1], 3, f3, sizeof(f3));
    snprintf(want, sizeof(want), "%s,%s,", f2, f3);
    queue_dump(a.f, name, q, sizeof(q));
    assert_string_equal(q, want);
    char channel[512];
    waiter_channel(name, f3, channel, sizeof(channel));
    RUN_LOOP_UNTIL(a.loop, ok, numsub(a.f, channel) == 1, slack_ms(5000)); /* asleep */
    assert_true(ok);

    dlock_lock_free(doomed); /* its waiting acquire is canceled */
    int64_t freed_ms = test_now_ms();
    RUN_LOOP_UNTIL(a.loop, ok, canceled.turn > 0, slack_ms(2000));
    assert_true(ok);
    ASSERT_RC(canceled.status, DLOCK_ECANCELED);
    snprintf(want, sizeof(want), "%s,", f3);
    RUN_LOOP_UNTIL(a.loop, ok, (queue_dump(a.f, name, q, sizeof(q)), strcmp(q, want) == 0),
                   test_prompt_ms());
    if (!ok)
        fail_msg("queue [%s], expected [%s]", q, want);
    int64_t left_ms = test_now_ms() - freed_ms;
    async_waiter holder_release = {0};
    ASSERT_RC(dlock_lock_release_async(mine, 1, on_released, &holder_release), DLOCK_OK);
    int64_t released_us = test_now_us();
    RUN_LOOP_UNTIL(a.loop, ok, next.turn > 0, test_prompt_ms());
    assert_true(ok);
    ASSERT_RC(next.status, DLOCK_OK);
    int64_t latency_ms = (next.acquired_us - released_us) / 1000;
    ASSERT_BETWEEN(latency_ms, 0, test_prompt_ms());
    async_waiter next_release = {0};
    ASSERT_RC(dlock_lock_release_async(other, 3, on_released, &next_release), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, next_release.released && holder_release.released, slack_ms(3000));
    assert_true(ok);
    ASSERT_RC(next_release.release_status, DLOCK_OK);
    assert_int_equal(canceled.turn, 1); /* the cancellation came first, exactly once */
    assert_int_equal(next.turn, 2);
    printf("# canceled waiter out of the queue within %lld ms; next in %lld ms after the "
           "release\n",
           (long long)left_ms, (long long)latency_ms);
    dlock_lock_free(mine);
    dlock_lock_free(other);
    app_close(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments_are_einval_without_any_io),
        cmocka_unit_test(test_lock_key_of_another_type_is_eredis_and_nothing_changes),
        cmocka_unit_test(test_500_async_waiters_of_two_clients_are_served_in_queue_order),
        cmocka_unit_test(
            test_async_waiter_whose_handle_is_freed_leaves_the_queue_and_the_next_is_not_delayed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
