/* test_semaphore.c — the semaphore (Redisson RSemaphore) of src/semaphore/semaphore.c,
 * blocking and async faces, against a real redis-server.
 *
 * What is proven: Redisson's own permit sequences (set, acquire, add, release, drain,
 * negative counts); a waiting acquire is woken by a release (of this client or another)
 * within 100 ms of it, and only once enough permits are back; a waiter does not poll;
 * a release's message wakes the waiters of one client in arrival order and stops at the
 * first that does not fit, so a later request for fewer permits is not woken ahead of an
 * earlier one for more (first attempts and the 5 s recheck are not ordered: semaphore.h),
 * and one that gave up hands on to the waiters it kept asleep; the Redis layout of REDIS_LAYOUT.md
 * read back with plain commands (the count string, the "redisson_sc:{N}" channel and its messages);
 * the async face on the application's own libev loop (callbacks exactly once, never inside the
 * call, DLOCK_ECANCELED when the handle goes); bad input (DLOCK_EINVAL with no I/O, a key of
 * another type); and that acquiring or releasing 0 permits does no I/O.
 *
 * Every test starts its own server. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core_call.h"
#include "dlock.h"
#include "dlock/adapters/libev.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60

/* ---- helpers ----------------------------------------------------------------------------- */

static dlock_semaphore *new_semaphore(dlock_client *c, const char *name) {
    dlock_semaphore *s = NULL;
    ASSERT_RC(dlock_semaphore_new(c, name, &s), DLOCK_OK);
    return s;
}

static int64_t available_of(dlock_semaphore *s) {
    int64_t n = INT64_MIN;
    ASSERT_RC(dlock_semaphore_available(s, &n), DLOCK_OK);
    return n;
}

/* Publishes "end" on channel (through the fixture), then reads s up to that message and
 * writes the payloads before it as "a,b,c," into buf. */
static void messages_until_end(redis_fixture *f, redisContext *s, const char *channel, char *buf,
                               size_t size) {
    freeReplyObject(redis_fixture_cmd(f, "PUBLISH %s end", channel));
    buf[0] = '\0';
    for (;;) {
        void *m = NULL;
        assert_int_equal(redisGetReply(s, &m), REDIS_OK);
        redisReply *r = m;
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_int_equal(r->elements, 3);
        assert_string_equal(r->element[0]->str, "message");
        assert_string_equal(r->element[1]->str, channel);
        bool end = strcmp(r->element[2]->str, "end") == 0;
        if (!end) {
            size_t used = strlen(buf);
            snprintf(buf + used, size - used, "%s,", r->element[2]->str);
        }
        freeReplyObject(r);
        if (end)
            return;
    }
}

/* ---- a blocking acquire on its own thread ------------------------------------------------ */

typedef struct waiter {
    dlock_semaphore *s;
    int64_t permits;
    int64_t wait_ms;
    int rc;
    int64_t returned_us;
    atomic_bool returned;
} waiter;

static void *acquire_on_thread(void *arg) {
    waiter *w = arg;
    w->rc = dlock_semaphore_try_acquire(w->s, w->permits, w->wait_ms);
    w->returned_us = test_now_us();
    atomic_store(&w->returned, true);
    return NULL;
}

/* Starts w on a new thread and returns once it sleeps as a waiter: its channel has
 * `subscribers` subscribed clients and at least `attempts` more script calls ran. */
static pthread_t start_waiter_and_let_it_sleep(redis_fixture *f, const char *channel, waiter *w,
                                               long long subscribers, int attempts) {
    long long scripts_before = script_calls(f);
    atomic_init(&w->returned, false);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, acquire_on_thread, w), 0);
    bool asleep = false;
    POLL_UNTIL(asleep,
               numsub(f, channel) == subscribers && script_calls(f) >= scripts_before + attempts,
               test_slack_ms(3000));
    if (!asleep)
        fail_msg("the waiter did not go to sleep (returned: %d, rc %s)",
                 (int)atomic_load(&w->returned), dlock_err_name(w->rc));
    assert_false(atomic_load(&w->returned));
    return t;
}

/* ---- Redisson's sequences ---------------------------------------------------------------- */

static void test_set_10_acquire_10_add_4_release_10_acquire_5_leaves_0_4_14_9(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "redisson-add");
    bool was_set = false;
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 10, &was_set), DLOCK_OK);
    assert_true(was_set);
    ASSERT_RC(dlock_semaphore_acquire(s, 10), DLOCK_OK);
    assert_int_equal(available_of(s), 0);
    ASSERT_RC(dlock_semaphore_add_permits(s, 4), DLOCK_OK);
    assert_int_equal(available_of(s), 4);
    ASSERT_RC(dlock_semaphore_release(s, 10), DLOCK_OK);
    assert_int_equal(available_of(s), 14);
    ASSERT_RC(dlock_semaphore_acquire(s, 5), DLOCK_OK);
    assert_int_equal(available_of(s), 9);
    assert_int_equal(redis_fixture_int(f, "GET redisson-add"), 9);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void
test_set_10_acquire_10_add_minus_5_release_10_acquire_5_leaves_minus_5_5_0(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "redisson-reduce");
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 10, NULL), DLOCK_OK);
    ASSERT_RC(dlock_semaphore_acquire(s, 10), DLOCK_OK);
    ASSERT_RC(dlock_semaphore_add_permits(s, -5), DLOCK_OK);
    assert_int_equal(available_of(s), -5);
    /* nothing to take while the count is negative */
    ASSERT_RC(dlock_semaphore_try_acquire(s, 1, 0), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_semaphore_release(s, 10), DLOCK_OK);
    assert_int_equal(available_of(s), 5);
    ASSERT_RC(dlock_semaphore_acquire(s, 5), DLOCK_OK);
    assert_int_equal(available_of(s), 0);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_release_on_a_fresh_semaphore_makes_1_available(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "fresh");
    assert_int_equal(available_of(s), 0); /* absent counts as 0 */
    assert_int_equal(redis_fixture_int(f, "EXISTS fresh"), 0);
    ASSERT_RC(dlock_semaphore_release(s, 1), DLOCK_OK);
    assert_int_equal(available_of(s), 1);
    assert_int_equal(redis_fixture_int(f, "GET fresh"), 1);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_try_set_permits_sets_only_a_semaphore_that_does_not_exist(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "set-once");
    bool was_set = false;
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 3, &was_set), DLOCK_OK);
    assert_true(was_set);
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 7, &was_set), DLOCK_OK);
    assert_false(was_set);
    assert_int_equal(available_of(s), 3);
    /* taken down to 0 it still exists: still not set again */
    ASSERT_RC(dlock_semaphore_acquire(s, 3), DLOCK_OK);
    was_set = true;
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 7, &was_set), DLOCK_OK);
    assert_false(was_set);
    assert_int_equal(available_of(s), 0);
    /* 0 permits is a valid setting */
    dlock_semaphore *z = new_semaphore(c, "set-zero");
    ASSERT_RC(dlock_semaphore_try_set_permits(z, 0, &was_set), DLOCK_OK);
    assert_true(was_set);
    assert_int_equal(redis_fixture_int(f, "GET set-zero"), 0);
    dlock_semaphore_free(z);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_drain_returns_what_was_available_and_leaves_0(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "drained");
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 10, NULL), DLOCK_OK);
    ASSERT_RC(dlock_semaphore_acquire(s, 3), DLOCK_OK);
    int64_t drained = -1;
    ASSERT_RC(dlock_semaphore_drain(s, &drained), DLOCK_OK);
    assert_int_equal(drained, 7);
    assert_int_equal(available_of(s), 0);
    assert_int_equal(redis_fixture_int(f, "GET drained"), 0);
    /* again: nothing left to take */
    ASSERT_RC(dlock_semaphore_drain(s, &drained), DLOCK_OK);
    assert_int_equal(drained, 0);
    /* a semaphore that does not exist drains 0, and drained may be NULL */
    dlock_semaphore *none = new_semaphore(c, "never-set");
    drained = -1;
    ASSERT_RC(dlock_semaphore_drain(none, &drained), DLOCK_OK);
    assert_int_equal(drained, 0);
    ASSERT_RC(dlock_semaphore_drain(s, NULL), DLOCK_OK);
    dlock_semaphore_free(none);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_drain_of_a_negative_count_returns_0_and_leaves_it(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "negative");
    ASSERT_RC(dlock_semaphore_add_permits(s, -3), DLOCK_OK);
    assert_int_equal(available_of(s), -3);
    int64_t drained = -1;
    ASSERT_RC(dlock_semaphore_drain(s, &drained), DLOCK_OK);
    assert_int_equal(drained, 0);
    assert_int_equal(available_of(s), -3);
    assert_int_equal(redis_fixture_int(f, "GET negative"), -3);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- waking and waiting ------------------------------------------------------------------ */

/* rounds x: a thread of client `waiting` waits for 1 permit of an empty semaphore; the test
 * thread releases 1 through `releasing`. The waiter must not return before the release
 * starts, and must return within 100 ms of its end. */
static void expect_woken_by_release(redis_fixture *f, dlock_semaphore *waiting,
                                    dlock_semaphore *releasing, const char *channel,
                                    const char *what) {
    const int rounds = 5;
    int64_t worst_us = INT64_MIN, total_us = 0;
    for (int i = 0; i < rounds; i++) {
        waiter w = {.s = waiting, .permits = 1, .wait_ms = test_slack_ms(10000)};
        pthread_t t = start_waiter_and_let_it_sleep(f, channel, &w, 1, 2);
        test_sleep_ms(20);
        assert_false(atomic_load(&w.returned));
        int64_t release_start_us = test_now_us();
        ASSERT_RC(dlock_semaphore_release(releasing, 1), DLOCK_OK);
        int64_t release_end_us = test_now_us();
        assert_int_equal(pthread_join(t, NULL), 0);
        ASSERT_RC(w.rc, DLOCK_OK);
        assert_true(w.returned_us >= release_start_us);
        int64_t latency_us = w.returned_us - release_end_us;
        ASSERT_BETWEEN(latency_us / 1000, -test_slack_ms(100), test_slack_ms(100));
        if (latency_us > worst_us)
            worst_us = latency_us;
        total_us += latency_us;
        assert_int_equal(available_of(releasing), 0);
    }
    printf("# release (%s) -> waiting acquire returns: mean %.2f ms, worst %.2f ms (%d rounds)\n",
           what, (double)total_us / rounds / 1000.0, (double)worst_us / 1000.0, rounds);
}

static void
test_waiting_acquire_is_woken_within_100_ms_of_a_release_by_another_client(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_semaphore *sa = new_semaphore(a, "woken");
    dlock_semaphore *sb = new_semaphore(b, "woken");
    expect_woken_by_release(f, sa, sb, "redisson_sc:{woken}", "another client");
    dlock_semaphore_free(sa);
    dlock_semaphore_free(sb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void
test_waiting_acquire_is_woken_within_100_ms_of_a_release_by_another_thread_of_its_client(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_semaphore *sa = new_semaphore(a, "woken-here");
    expect_woken_by_release(f, sa, sa, "redisson_sc:{woken-here}", "same client");
    dlock_semaphore_free(sa);
    dlock_client_free(a);
    redis_fixture_stop(f);
}

static void
test_try_acquire_4_returns_after_the_second_of_two_releases_of_2_not_before(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_semaphore *sa = new_semaphore(a, "four");
    dlock_semaphore *sb = new_semaphore(b, "four");
    waiter w = {.s = sa, .permits = 4, .wait_ms = test_slack_ms(10000)};
    int64_t start_us = test_now_us();
    pthread_t t = start_waiter_and_let_it_sleep(f, "redisson_sc:{four}", &w, 1, 2);
    test_sleep_ms(300);
    assert_false(atomic_load(&w.returned));
    ASSERT_RC(dlock_semaphore_release(sb, 2), DLOCK_OK);
    int64_t first_us = test_now_us();
    test_sleep_ms(300);
    assert_false(atomic_load(&w.returned)); /* 2 of 4: it keeps waiting */
    assert_int_equal(redis_fixture_int(f, "GET four"), 2);
    int64_t second_start_us = test_now_us();
    ASSERT_RC(dlock_semaphore_release(sb, 2), DLOCK_OK);
    int64_t second_end_us = test_now_us();
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(w.rc, DLOCK_OK);
    assert_true(w.returned_us >= second_start_us);
    int64_t latency_ms = (w.returned_us - second_end_us) / 1000;
    ASSERT_BETWEEN(latency_ms, -test_slack_ms(100), test_slack_ms(100));
    assert_int_equal(available_of(sa), 0);
    printf("# try_acquire(4): first release of 2 at %lld ms, returned %lld ms after the second "
           "(%lld ms after its start)\n",
           (long long)((first_us - start_us) / 1000), (long long)latency_ms,
           (long long)((w.returned_us - start_us) / 1000));
    dlock_semaphore_free(sa);
    dlock_semaphore_free(sb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void test_try_acquire_300_ms_without_permits_times_out_after_300_to_800_ms(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "short");
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 2, NULL), DLOCK_OK);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_semaphore_try_acquire(s, 3, 300), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    assert_true(strlen(dlock_last_error()) > 0);
    ASSERT_BETWEEN(took, 300, test_slack_ms(800));
    start = test_now_ms();
    ASSERT_RC(dlock_semaphore_try_acquire(s, 3, 0), DLOCK_ETIMEDOUT);
    int64_t once = test_now_ms() - start;
    ASSERT_BETWEEN(once, 0, test_slack_ms(100));
    assert_int_equal(available_of(s), 2); /* nothing was taken by the failed tries */
    printf("# try_acquire(300 ms) timed out after %lld ms; wait 0 after %lld ms\n", (long long)took,
           (long long)once);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_waiter_sends_a_handful_of_commands_during_a_1500_ms_wait(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "quiet");
    const char *channel = "redisson_sc:{quiet}";
    /* a first short wait opens the subscriber connection, so its handshake is not counted */
    ASSERT_RC(dlock_semaphore_try_acquire(s, 1, 100), DLOCK_ETIMEDOUT);
    bool gone = false;
    POLL_UNTIL(gone, numsub(f, channel) == 0, test_slack_ms(1000));
    assert_true(gone);

    long long scripts_before = script_calls(f); /* INFO #1 */
    long long total_before = total_commands(f); /* INFO #2 */
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_semaphore_try_acquire(s, 1, 1500), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    test_sleep_ms(200);                                     /* the UNSUBSCRIBE lands */
    long long total = total_commands(f) - total_before - 1; /* INFO #2 itself */
    long long scripts = script_calls(f) - scripts_before;
    ASSERT_BETWEEN(took, 1500, test_slack_ms(2500));
    assert_int_equal(numsub(f, channel), 0);
    /* 3 attempts (at once, once subscribed, at the deadline; each an EVALSHA that runs a GET
     * inside), SUBSCRIBE, UNSUBSCRIBE: polling every few ms would be hundreds */
    printf("# 1500 ms wait: %lld script calls, total_commands_processed +%lld "
           "(in-script commands included, the test's INFO calls not)\n",
           scripts, total);
    ASSERT_BETWEEN(scripts, 2, 3);
    ASSERT_BETWEEN(total, 4, 10);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- arrival order within a client ------------------------------------------------------- */

static void
test_releases_of_1_serve_a_waiter_needing_3_before_a_later_waiter_needing_1_of_its_client(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_semaphore *sa = new_semaphore(a, "fifo");
    dlock_semaphore *sb = new_semaphore(b, "fifo");
    const char *channel = "redisson_sc:{fifo}";
    waiter three = {.s = sa, .permits = 3, .wait_ms = test_slack_ms(20000)};
    waiter one = {.s = sa, .permits = 1, .wait_ms = test_slack_ms(20000)};
    pthread_t t3 = start_waiter_and_let_it_sleep(f, channel, &three, 1, 2);
    /* the second waiter finds the subscription confirmed: one attempt, then it sleeps */
    pthread_t t1 = start_waiter_and_let_it_sleep(f, channel, &one, 1, 1);
    test_sleep_ms(50);
    for (int i = 1; i <= 2; i++) {
        ASSERT_RC(dlock_semaphore_release(sb, 1), DLOCK_OK);
        test_sleep_ms(200);
        if (atomic_load(&one.returned))
            fail_msg("the waiter needing 1 took a permit after release #%d, before the waiter "
                     "needing 3 (rc %s)",
                     i, dlock_err_name(one.rc));
        assert_false(atomic_load(&three.returned));
        assert_int_equal(redis_fixture_int(f, "GET fifo"), i);
    }
    int64_t third_start_us = test_now_us();
    ASSERT_RC(dlock_semaphore_release(sb, 1), DLOCK_OK);
    assert_int_equal(pthread_join(t3, NULL), 0);
    ASSERT_RC(three.rc, DLOCK_OK);
    assert_true(three.returned_us >= third_start_us);
    test_sleep_ms(200);
    assert_false(atomic_load(&one.returned)); /* the 3 permits went to the first waiter */
    assert_int_equal(redis_fixture_int(f, "GET fifo"), 0);
    int64_t fourth_start_us = test_now_us();
    ASSERT_RC(dlock_semaphore_release(sb, 1), DLOCK_OK);
    assert_int_equal(pthread_join(t1, NULL), 0);
    ASSERT_RC(one.rc, DLOCK_OK);
    assert_true(one.returned_us >= fourth_start_us);
    ASSERT_BETWEEN((one.returned_us - fourth_start_us) / 1000, 0, test_slack_ms(100));
    assert_int_equal(redis_fixture_int(f, "GET fifo"), 0);
    dlock_semaphore_free(sa);
    dlock_semaphore_free(sb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* When the waiter at the head gives up, the permits that did not fit it may fit the
 * waiters it kept asleep behind it: they must not sleep on until their 5 s recheck
 * (wait.c: "A waiter that leaves now hands its wake ... for a semaphore it may have been
 * the larger request that kept a smaller one asleep"). */
static void test_waiter_needing_1_gets_a_free_permit_within_100_ms_of_the_waiter_ahead_timing_out(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_semaphore *sa = new_semaphore(a, "fifo-gone");
    dlock_semaphore *sb = new_semaphore(b, "fifo-gone");
    const char *channel = "redisson_sc:{fifo-gone}";
    waiter three = {.s = sa, .permits = 3, .wait_ms = 1000};
    waiter one = {.s = sa, .permits = 1, .wait_ms = test_slack_ms(20000)};
    pthread_t t3 = start_waiter_and_let_it_sleep(f, channel, &three, 1, 2);
    pthread_t t1 = start_waiter_and_let_it_sleep(f, channel, &one, 1, 1);
    ASSERT_RC(dlock_semaphore_release(sb, 1), DLOCK_OK); /* fits the second, not the first */
    assert_int_equal(pthread_join(t3, NULL), 0);
    assert_int_equal(pthread_join(t1, NULL), 0);
    int64_t after_ms = (one.returned_us - three.returned_us) / 1000;
    int rc3 = three.rc, rc1 = one.rc;
    dlock_semaphore_free(sa);
    dlock_semaphore_free(sb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
    ASSERT_RC(rc3, DLOCK_ETIMEDOUT);
    ASSERT_RC(rc1, DLOCK_OK);
    printf("# the waiter needing 1 got the free permit %lld ms after the one ahead timed out\n",
           (long long)after_ms);
    ASSERT_BETWEEN(after_ms, -test_slack_ms(100), test_slack_ms(100));
}

/* ---- the layout -------------------------------------------------------------------------- */

static void test_layout_is_a_string_count_under_the_name(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "laid-out");
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 5, NULL), DLOCK_OK);
    char *type = redis_fixture_str(f, "TYPE laid-out");
    assert_string_equal(type, "string");
    free(type);
    char *v = redis_fixture_str(f, "GET laid-out");
    assert_string_equal(v, "5");
    free(v);
    assert_int_equal(redis_fixture_int(f, "PTTL laid-out"), -1); /* no lease */
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 1);         /* nothing else */
    ASSERT_RC(dlock_semaphore_acquire(s, 2), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "GET laid-out"), 3);
    /* a count written by someone else (a Redisson client) is what the library reads */
    freeReplyObject(redis_fixture_cmd(f, "SET laid-out 8"));
    assert_int_equal(available_of(s), 8);
    ASSERT_RC(dlock_semaphore_try_acquire(s, 8, 0), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "GET laid-out"), 0);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_channel_redisson_sc_carries_the_new_count_of_set_add_and_release(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "announced");
    const char *channel = "redisson_sc:{announced}";
    redisContext *sub = subscribe_to(f, channel);
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 5, NULL), DLOCK_OK); /* "5" */
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 9, NULL), DLOCK_OK); /* not set: nothing */
    ASSERT_RC(dlock_semaphore_acquire(s, 2), DLOCK_OK);               /* taking: nothing */
    ASSERT_RC(dlock_semaphore_release(s, 1), DLOCK_OK);               /* "4" */
    ASSERT_RC(dlock_semaphore_add_permits(s, 3), DLOCK_OK);           /* "7" */
    ASSERT_RC(dlock_semaphore_add_permits(s, -10), DLOCK_OK);         /* "-3" */
    ASSERT_RC(dlock_semaphore_release(s, 0), DLOCK_OK);               /* nothing */
    ASSERT_RC(dlock_semaphore_release(s, 13), DLOCK_OK);              /* "10" */
    ASSERT_RC(dlock_semaphore_drain(s, NULL), DLOCK_OK);              /* taking: nothing */
    char got[256];
    messages_until_end(f, sub, channel, got, sizeof(got));
    assert_string_equal(got, "5,4,7,-3,10,");
    redisFree(sub);

    /* a name holding a '{' is its own hash tag: no extra braces on the channel */
    dlock_semaphore *tagged = new_semaphore(c, "sem{tag}");
    sub = subscribe_to(f, "redisson_sc:sem{tag}");
    ASSERT_RC(dlock_semaphore_release(tagged, 2), DLOCK_OK);
    messages_until_end(f, sub, "redisson_sc:sem{tag}", got, sizeof(got));
    assert_string_equal(got, "2,");
    redisFree(sub);
    assert_int_equal(redis_fixture_int(f, "GET sem{tag}"), 2);
    dlock_semaphore_free(tagged);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_release_published_by_hand_on_the_channel_wakes_a_waiter(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "by-hand");
    waiter w = {.s = s, .permits = 2, .wait_ms = test_slack_ms(10000)};
    pthread_t t = start_waiter_and_let_it_sleep(f, "redisson_sc:{by-hand}", &w, 1, 2);
    /* what a Redisson client's release does: INCRBY then PUBLISH the new count */
    freeReplyObject(redis_fixture_cmd(f, "INCRBY by-hand 2"));
    int64_t published_us = test_now_us();
    freeReplyObject(redis_fixture_cmd(f, "PUBLISH redisson_sc:{by-hand} 2"));
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(w.rc, DLOCK_OK);
    ASSERT_BETWEEN((w.returned_us - published_us) / 1000, 0, test_slack_ms(100));
    assert_int_equal(redis_fixture_int(f, "GET by-hand"), 0);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- bad input --------------------------------------------------------------------------- */

static void never_called(dlock_semaphore *s, int status, void *arg) {
    (void)s;
    (void)status;
    (*(int *)arg)++;
}

static void test_bad_arguments_are_einval_without_any_io(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "valid");
    long long before = total_commands(f);

    dlock_semaphore *out = (dlock_semaphore *)&out; /* a sentinel: constructors leave it */
    dlock_semaphore *const sentinel = out;
    ASSERT_EINVAL(dlock_semaphore_new(NULL, "n", &out));
    ASSERT_EINVAL(dlock_semaphore_new(c, NULL, &out));
    ASSERT_EINVAL(dlock_semaphore_new(c, "", &out));
    ASSERT_EINVAL(dlock_semaphore_new(c, "n", NULL));
    assert_ptr_equal(out, sentinel);

    bool was_set = false;
    int64_t n = 0;
    ASSERT_EINVAL(dlock_semaphore_try_set_permits(NULL, 1, &was_set));
    ASSERT_EINVAL(dlock_semaphore_try_set_permits(s, -1, &was_set));
    ASSERT_EINVAL(dlock_semaphore_try_set_permits(s, INT64_MIN, NULL));
    ASSERT_EINVAL(dlock_semaphore_add_permits(NULL, 1));
    ASSERT_EINVAL(dlock_semaphore_acquire(NULL, 1));
    ASSERT_EINVAL(dlock_semaphore_acquire(s, -1));
    ASSERT_EINVAL(dlock_semaphore_acquire(s, INT64_MIN));
    ASSERT_EINVAL(dlock_semaphore_try_acquire(NULL, 1, 0));
    ASSERT_EINVAL(dlock_semaphore_try_acquire(s, -1, 0));
    ASSERT_EINVAL(dlock_semaphore_try_acquire(s, 1, -2));
    ASSERT_EINVAL(dlock_semaphore_try_acquire(s, 1, -1000));
    ASSERT_EINVAL(dlock_semaphore_try_acquire(s, 1, INT64_MIN));
    ASSERT_EINVAL(dlock_semaphore_release(NULL, 1));
    ASSERT_EINVAL(dlock_semaphore_release(s, -1));
    ASSERT_EINVAL(dlock_semaphore_available(NULL, &n));
    ASSERT_EINVAL(dlock_semaphore_available(s, NULL));
    ASSERT_EINVAL(dlock_semaphore_drain(NULL, &n));

    int calls = 0;
    ASSERT_EINVAL(dlock_semaphore_acquire_async(NULL, 1, 0, never_called, &calls));
    ASSERT_EINVAL(dlock_semaphore_acquire_async(s, 1, 0, NULL, &calls));
    ASSERT_EINVAL(dlock_semaphore_acquire_async(s, -1, 0, never_called, &calls));
    ASSERT_EINVAL(dlock_semaphore_acquire_async(s, 1, -2, never_called, &calls));
    ASSERT_EINVAL(dlock_semaphore_release_async(NULL, 1, never_called, &calls));
    ASSERT_EINVAL(dlock_semaphore_release_async(s, 1, NULL, &calls));
    ASSERT_EINVAL(dlock_semaphore_release_async(s, -1, never_called, &calls));
    dlock_semaphore_free(NULL);

    test_sleep_ms(50);
    assert_int_equal(calls, 0); /* a call that returned an error never calls back */
    long long after = total_commands(f);
    assert_int_equal(after - before, 1); /* only the first INFO */
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_acquiring_or_releasing_0_permits_succeeds_at_once_without_io(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "nothing");
    long long before = total_commands(f);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_semaphore_acquire(s, 0), DLOCK_OK);
    ASSERT_RC(dlock_semaphore_try_acquire(s, 0, 0), DLOCK_OK);
    ASSERT_RC(dlock_semaphore_try_acquire(s, 0, 5000), DLOCK_OK);
    ASSERT_RC(dlock_semaphore_release(s, 0), DLOCK_OK);
    int64_t took = test_now_ms() - start;
    ASSERT_BETWEEN(took, 0, test_slack_ms(100));
    assert_int_equal(total_commands(f) - before, 1); /* only the first INFO */
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    /* and with no permit available at all: still at once */
    ASSERT_RC(dlock_semaphore_add_permits(s, -2), DLOCK_OK);
    before = total_commands(f);
    ASSERT_RC(dlock_semaphore_acquire(s, 0), DLOCK_OK);
    assert_int_equal(total_commands(f) - before, 1);
    assert_int_equal(redis_fixture_int(f, "GET nothing"), -2);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void
test_every_call_on_a_hash_key_is_eredis_wrongtype_and_the_key_is_unchanged(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "a-hash");
    freeReplyObject(redis_fixture_cmd(f, "HSET a-hash f v"));
    int64_t n = 0;
    bool was_set = false;
    ASSERT_WRONGTYPE(dlock_semaphore_try_set_permits(s, 3, &was_set));
    ASSERT_WRONGTYPE(dlock_semaphore_add_permits(s, 3));
    ASSERT_WRONGTYPE(dlock_semaphore_add_permits(s, -3));
    ASSERT_WRONGTYPE(dlock_semaphore_try_acquire(s, 1, 0));
    ASSERT_WRONGTYPE(dlock_semaphore_try_acquire(s, 1, 2000));
    ASSERT_WRONGTYPE(dlock_semaphore_acquire(s, 1)); /* forever: the error ends the wait */
    ASSERT_WRONGTYPE(dlock_semaphore_release(s, 1));
    ASSERT_WRONGTYPE(dlock_semaphore_available(s, &n));
    ASSERT_WRONGTYPE(dlock_semaphore_drain(s, &n));
#undef ASSERT_WRONGTYPE
    char *type = redis_fixture_str(f, "TYPE a-hash");
    assert_string_equal(type, "hash");
    free(type);
    assert_int_equal(redis_fixture_int(f, "HLEN a-hash"), 1);
    char *v = redis_fixture_str(f, "HGET a-hash f");
    assert_string_equal(v, "v");
    free(v);
    assert_int_equal(redis_fixture_int(f, "PTTL a-hash"), -1);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 1);
    assert_int_equal(numsub(f, "redisson_sc:{a-hash}"), 0); /* no waiter was left behind */
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- the async face ---------------------------------------------------------------------- */

typedef struct done {
    int calls;
    int status;
    int order; /* when it ran among all callbacks of the test */
    dlock_semaphore *s;
    int64_t at_ms;
} done;

static int callbacks_so_far;

static void record_done(dlock_semaphore *s, int status, void *arg) {
    done *d = arg;
    d->calls++;
    d->status = status;
    d->order = ++callbacks_so_far;
    d->s = s;
    d->at_ms = test_now_ms();
}

static void
test_async_acquire_of_2_completes_after_the_second_async_release_of_1_once_each(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 1);
    ASSERT_RC(dlock_semaphore_new(a.c, "async-sem", &a.s), DLOCK_OK);
    callbacks_so_far = 0;
    done acq = {0}, rel1 = {0}, rel2 = {0}, now = {0};
    bool ok = false;

    long long scripts_before = script_calls(a.f);
    ASSERT_RC(dlock_semaphore_acquire_async(a.s, 2, DLOCK_FOREVER, record_done, &acq), DLOCK_OK);
    assert_int_equal(acq.calls, 0); /* never inside the call */
    RUN_LOOP_UNTIL(a.loop, ok,
                   numsub(a.f, "redisson_sc:{async-sem}") == 1 &&
                       script_calls(a.f) >= scripts_before + 2,
                   test_slack_ms(5000));
    assert_true(ok);
    run_loop_for(a.loop, 50);
    assert_int_equal(acq.calls, 0);

    ASSERT_RC(dlock_semaphore_release_async(a.s, 1, record_done, &rel1), DLOCK_OK);
    assert_int_equal(rel1.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, rel1.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(rel1.status, DLOCK_OK);
    assert_ptr_equal(rel1.s, a.s);
    run_loop_for(a.loop, 100);
    assert_int_equal(acq.calls, 0); /* 1 of 2 */
    assert_int_equal(redis_fixture_int(a.f, "GET async-sem"), 1);

    ASSERT_RC(dlock_semaphore_release_async(a.s, 1, record_done, &rel2), DLOCK_OK);
    assert_int_equal(rel2.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, acq.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(acq.status, DLOCK_OK);
    assert_ptr_equal(acq.s, a.s);
    assert_int_equal(rel2.calls, 1);
    assert_true(rel2.order < acq.order);
    ASSERT_BETWEEN(acq.at_ms - rel2.at_ms, 0, test_slack_ms(100));
    assert_int_equal(redis_fixture_int(a.f, "GET async-sem"), 0);

    /* wait 0 with nothing available: DLOCK_ETIMEDOUT through the callback */
    ASSERT_RC(dlock_semaphore_acquire_async(a.s, 1, 0, record_done, &now), DLOCK_OK);
    assert_int_equal(now.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, now.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(now.status, DLOCK_ETIMEDOUT);

    run_loop_for(a.loop, 100); /* nothing is called twice */
    assert_int_equal(acq.calls, 1);
    assert_int_equal(rel1.calls, 1);
    assert_int_equal(rel2.calls, 1);
    assert_int_equal(now.calls, 1);
    assert_int_equal(callbacks_so_far, 4);
    printf("# async release -> waiting async acquire of 2: %lld ms\n",
           (long long)(acq.at_ms - rel2.at_ms));
    app_close(&a);
}

static void test_async_acquire_of_0_calls_back_ok_once_without_io(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 1);
    ASSERT_RC(dlock_semaphore_new(a.c, "async-zero", &a.s), DLOCK_OK);
    callbacks_so_far = 0;
    done acq = {0}, rel = {0};
    bool ok = false;
    long long before = total_commands(a.f);
    ASSERT_RC(dlock_semaphore_acquire_async(a.s, 0, DLOCK_FOREVER, record_done, &acq), DLOCK_OK);
    ASSERT_RC(dlock_semaphore_release_async(a.s, 0, record_done, &rel), DLOCK_OK);
    assert_int_equal(acq.calls, 0);
    assert_int_equal(rel.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, acq.calls > 0 && rel.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(acq.status, DLOCK_OK);
    ASSERT_RC(rel.status, DLOCK_OK);
    run_loop_for(a.loop, 50);
    assert_int_equal(acq.calls, 1);
    assert_int_equal(rel.calls, 1);
    assert_int_equal(total_commands(a.f) - before, 1);
    app_close(&a);
}

static void
test_semaphore_free_with_a_waiting_async_acquire_calls_it_back_canceled_once(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 1);
    ASSERT_RC(dlock_semaphore_new(a.c, "async-canceled", &a.s), DLOCK_OK);
    callbacks_so_far = 0;
    done acq = {0};
    bool ok = false;
    ASSERT_RC(dlock_semaphore_acquire_async(a.s, 1, DLOCK_FOREVER, record_done, &acq), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, numsub(a.f, "redisson_sc:{async-canceled}") == 1,
                   test_slack_ms(5000));
    assert_true(ok);
    run_loop_for(a.loop, 20);
    assert_int_equal(acq.calls, 0);
    dlock_semaphore_free(a.s);
    a.s = NULL;
    assert_int_equal(acq.calls, 0); /* not inside the call */
    RUN_LOOP_UNTIL(a.loop, ok, acq.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(acq.status, DLOCK_ECANCELED);
    RUN_LOOP_UNTIL(a.loop, ok, numsub(a.f, "redisson_sc:{async-canceled}") == 0,
                   test_slack_ms(2000));
    assert_true(ok);
    /* a release now finds nobody waiting: the permit stays */
    freeReplyObject(redis_fixture_cmd(a.f, "SET async-canceled 1"));
    freeReplyObject(redis_fixture_cmd(a.f, "PUBLISH redisson_sc:{async-canceled} 1"));
    run_loop_for(a.loop, 100);
    assert_int_equal(acq.calls, 1);
    assert_int_equal(redis_fixture_int(a.f, "GET async-canceled"), 1);
    app_close(&a); /* dlock_semaphore_free(NULL) is a no-op */
}

int main(void) {
    signal(SIGPIPE, SIG_IGN); /* the adapter's rule for the application's loop thread */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_10_acquire_10_add_4_release_10_acquire_5_leaves_0_4_14_9),
        cmocka_unit_test(
            test_set_10_acquire_10_add_minus_5_release_10_acquire_5_leaves_minus_5_5_0),
        cmocka_unit_test(test_release_on_a_fresh_semaphore_makes_1_available),
        cmocka_unit_test(test_try_set_permits_sets_only_a_semaphore_that_does_not_exist),
        cmocka_unit_test(test_drain_returns_what_was_available_and_leaves_0),
        cmocka_unit_test(test_drain_of_a_negative_count_returns_0_and_leaves_it),
        cmocka_unit_test(
            test_waiting_acquire_is_woken_within_100_ms_of_a_release_by_another_client),
        cmocka_unit_test(
            test_waiting_acquire_is_woken_within_100_ms_of_a_release_by_another_thread_of_its_client),
        cmocka_unit_test(
            test_try_acquire_4_returns_after_the_second_of_two_releases_of_2_not_before),
        cmocka_unit_test(test_try_acquire_300_ms_without_permits_times_out_after_300_to_800_ms),
        cmocka_unit_test(test_waiter_sends_a_handful_of_commands_during_a_1500_ms_wait),
        cmocka_unit_test(
            test_releases_of_1_serve_a_waiter_needing_3_before_a_later_waiter_needing_1_of_its_client),
        cmocka_unit_test(
            test_waiter_needing_1_gets_a_free_permit_within_100_ms_of_the_waiter_ahead_timing_out),
        cmocka_unit_test(test_layout_is_a_string_count_under_the_name),
        cmocka_unit_test(test_channel_redisson_sc_carries_the_new_count_of_set_add_and_release),
        cmocka_unit_test(test_release_published_by_hand_on_the_channel_wakes_a_waiter),
        cmocka_unit_test(test_bad_arguments_are_einval_without_any_io),
        cmocka_unit_test(test_acquiring_or_releasing_0_permits_succeeds_at_once_without_io),
        cmocka_unit_test(
            test_every_call_on_a_hash_key_is_eredis_wrongtype_and_the_key_is_unchanged),
        cmocka_unit_test(
            test_async_acquire_of_2_completes_after_the_second_async_release_of_1_once_each),
        cmocka_unit_test(test_async_acquire_of_0_calls_back_ok_once_without_io),
        cmocka_unit_test(
            test_semaphore_free_with_a_waiting_async_acquire_calls_it_back_canceled_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
