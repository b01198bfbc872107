/* test_latch.c — the count-down latch (Redisson RCountDownLatch) of src/semaphore/latch.c,
 * blocking and async faces, against a real redis-server.
 *
 * What is proven: await returns within 100 ms of the last of three count downs made by
 * other threads, and not before it; await's time bound; try_set_count only on an unset or
 * finished latch; count; counting down a finished latch changes nothing; the Redis layout
 * of REDIS_LAYOUT.md read back with plain commands (the count string, deleted at zero, and
 * the "redisson_countdownlatch__channel__{N}" channel with "1" on set and "0" at zero); a
 * lost "0" message (subscriber connection killed, or the count cleared without one) delays
 * await by at most the 5 s recheck and never blocks it; the async face on the
 * application's own libev loop; bad input (DLOCK_EINVAL with no I/O, a key of another
 * type).
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

static dlock_latch *new_latch(dlock_client *c, const char *name) {
    dlock_latch *l = NULL;
    ASSERT_RC(dlock_latch_new(c, name, &l), DLOCK_OK);
    return l;
}

static int64_t count_of(dlock_latch *l) {
    int64_t n = INT64_MIN;
    ASSERT_RC(dlock_latch_count(l, &n), DLOCK_OK);
    return n;
}

/* await's attempts are plain GETs */
static long long get_calls(redis_fixture *f) {
    return redis_fixture_info_int(f, "commandstats", "cmdstat_get.calls");
}

/* Publishes "end" on channel, then reads s up to it: the payloads before it as "a,b,". */
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

/* ---- await on its own thread ------------------------------------------------------------- */

typedef struct awaiter {
    dlock_latch *l;
    int64_t wait_ms;
    int rc;
    int64_t returned_us;
    atomic_bool returned;
} awaiter;

static void *await_on_thread(void *arg) {
    awaiter *w = arg;
    w->rc = dlock_latch_await(w->l, w->wait_ms);
    w->returned_us = test_now_us();
    atomic_store(&w->returned, true);
    return NULL;
}

/* Starts w on a new thread and returns once it sleeps: subscribed, both of its looks (the
 * first, and the one after the subscription was confirmed) done. */
static pthread_t start_awaiter_and_let_it_sleep(redis_fixture *f, const char *channel, awaiter *w) {
    long long gets_before = get_calls(f);
    atomic_init(&w->returned, false);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, await_on_thread, w), 0);
    bool asleep = false;
    POLL_UNTIL(asleep, numsub(f, channel) == 1 && get_calls(f) >= gets_before + 2,
               test_slack_ms(3000));
    assert_true(asleep);
    assert_false(atomic_load(&w->returned));
    return t;
}

/* ---- count down and await ---------------------------------------------------------------- */

typedef struct counter {
    dlock_latch *l;
    int64_t delay_ms;
    int rc;
    int64_t start_us, end_us;
} counter;

static void *count_down_later(void *arg) {
    counter *k = arg;
    test_sleep_ms(k->delay_ms);
    k->start_us = test_now_us();
    k->rc = dlock_latch_count_down(k->l);
    k->end_us = test_now_us();
    return NULL;
}

static void
test_await_returns_within_100_ms_of_the_third_count_down_by_three_threads(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_latch *la = new_latch(a, "three");
    dlock_latch *lb = new_latch(b, "three");
    bool was_set = false;
    ASSERT_RC(dlock_latch_try_set_count(la, 3, &was_set), DLOCK_OK);
    assert_true(was_set);
    awaiter w = {.l = la, .wait_ms = test_slack_ms(10000)};
    pthread_t wt =
        start_awaiter_and_let_it_sleep(f, "redisson_countdownlatch__channel__{three}", &w);
    counter k[3];
    pthread_t kt[3];
    for (int i = 0; i < 3; i++) {
        k[i] = (counter){.l = lb, .delay_ms = 150 * (i + 1)};
        assert_int_equal(pthread_create(&kt[i], NULL, count_down_later, &k[i]), 0);
    }
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_join(kt[i], NULL), 0);
    assert_int_equal(pthread_join(wt, NULL), 0);
    ASSERT_RC(w.rc, DLOCK_OK);
    int64_t last_start_us = 0, last_end_us = 0;
    for (int i = 0; i < 3; i++) {
        ASSERT_RC(k[i].rc, DLOCK_OK);
        if (k[i].start_us > last_start_us)
            last_start_us = k[i].start_us;
        if (k[i].end_us > last_end_us)
            last_end_us = k[i].end_us;
    }
    assert_true(w.returned_us >= last_start_us); /* not before the third */
    int64_t latency_us = w.returned_us - last_end_us;
    ASSERT_BETWEEN(latency_us / 1000, -test_slack_ms(100), test_slack_ms(100));
    assert_int_equal(count_of(la), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS three"), 0);
    printf("# await returned %.2f ms after the third count down ended\n",
           (double)latency_us / 1000.0);
    dlock_latch_free(la);
    dlock_latch_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void test_await_300_ms_on_a_counting_latch_times_out_after_300_to_800_ms(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = new_latch(c, "slow");
    ASSERT_RC(dlock_latch_try_set_count(l, 1, NULL), DLOCK_OK);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_latch_await(l, 300), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    assert_true(strlen(dlock_last_error()) > 0);
    ASSERT_BETWEEN(took, 300, test_slack_ms(800));
    start = test_now_ms();
    ASSERT_RC(dlock_latch_await(l, 0), DLOCK_ETIMEDOUT);
    int64_t once = test_now_ms() - start;
    ASSERT_BETWEEN(once, 0, test_slack_ms(100));
    assert_int_equal(count_of(l), 1);
    printf("# await(300 ms) timed out after %lld ms; await(0) after %lld ms\n", (long long)took,
           (long long)once);
    dlock_latch_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_await_on_an_unset_or_finished_latch_returns_at_once(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = new_latch(c, "done");
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_latch_await(l, 0), DLOCK_OK);
    ASSERT_RC(dlock_latch_await(l, DLOCK_FOREVER), DLOCK_OK);
    ASSERT_RC(dlock_latch_try_set_count(l, 1, NULL), DLOCK_OK);
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
    ASSERT_RC(dlock_latch_await(l, DLOCK_FOREVER), DLOCK_OK);
    ASSERT_BETWEEN(test_now_ms() - start, 0, test_slack_ms(200));
    assert_int_equal(numsub(f, "redisson_countdownlatch__channel__{done}"), 0); /* no wait */
    dlock_latch_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- set, count, count down -------------------------------------------------------------- */

static void test_try_set_count_sets_only_an_unset_or_finished_latch(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = new_latch(c, "reset");
    bool was_set = false;
    ASSERT_RC(dlock_latch_try_set_count(l, 2, &was_set), DLOCK_OK);
    assert_true(was_set);
    ASSERT_RC(dlock_latch_try_set_count(l, 5, &was_set), DLOCK_OK);
    assert_false(was_set); /* still counting: 0 */
    assert_int_equal(count_of(l), 2);
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
    was_set = true;
    ASSERT_RC(dlock_latch_try_set_count(l, 5, &was_set), DLOCK_OK);
    assert_false(was_set);
    assert_int_equal(count_of(l), 1);
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
    ASSERT_RC(dlock_latch_try_set_count(l, 1, &was_set), DLOCK_OK);
    assert_true(was_set); /* finished: 1 */
    assert_int_equal(count_of(l), 1);
    ASSERT_RC(dlock_latch_try_set_count(l, 1, NULL), DLOCK_OK); /* was_set may be NULL */
    assert_int_equal(count_of(l), 1);
    /* 0 "sets" a latch that is at zero already: nothing is written */
    dlock_latch *z = new_latch(c, "zero");
    ASSERT_RC(dlock_latch_try_set_count(z, 0, &was_set), DLOCK_OK);
    assert_true(was_set);
    assert_int_equal(redis_fixture_int(f, "EXISTS zero"), 0);
    assert_int_equal(count_of(z), 0);
    dlock_latch_free(z);
    dlock_latch_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_count_is_the_remaining_count_and_0_when_unset_or_finished(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = new_latch(c, "counted");
    int64_t seen[5];
    seen[0] = count_of(l);
    ASSERT_RC(dlock_latch_try_set_count(l, 3, NULL), DLOCK_OK);
    seen[1] = count_of(l);
    for (int i = 2; i < 5; i++) {
        ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
        seen[i] = count_of(l);
    }
    const int64_t want[5] = {0, 3, 2, 1, 0};
    for (int i = 0; i < 5; i++)
        if (seen[i] != want[i])
            fail_msg("count #%d = %lld, expected %lld", i, (long long)seen[i], (long long)want[i]);
    /* a count written by another client (Redisson) is what count reads */
    freeReplyObject(redis_fixture_cmd(f, "SET counted 42"));
    assert_int_equal(count_of(l), 42);
    dlock_latch_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_count_down_of_a_finished_latch_changes_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = new_latch(c, "finished");
    const char *channel = "redisson_countdownlatch__channel__{finished}";
    ASSERT_RC(dlock_latch_try_set_count(l, 1, NULL), DLOCK_OK);
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
    redisContext *sub = subscribe_to(f, channel);
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
    char got[64];
    messages_until_end(f, sub, channel, got, sizeof(got));
    assert_string_equal(got, ""); /* no second "0" */
    redisFree(sub);
    assert_int_equal(redis_fixture_int(f, "EXISTS finished"), 0); /* not -1, not -2 */
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    assert_int_equal(count_of(l), 0);
    /* and an unset latch alike */
    dlock_latch *never = new_latch(c, "never-set");
    ASSERT_RC(dlock_latch_count_down(never), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    dlock_latch_free(never);
    dlock_latch_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- the layout -------------------------------------------------------------------------- */

static void test_layout_is_a_string_count_deleted_at_zero(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = new_latch(c, "laid-out");
    ASSERT_RC(dlock_latch_try_set_count(l, 2, NULL), DLOCK_OK);
    char *type = redis_fixture_str(f, "TYPE laid-out");
    assert_string_equal(type, "string");
    free(type);
    char *v = redis_fixture_str(f, "GET laid-out");
    assert_string_equal(v, "2");
    free(v);
    assert_int_equal(redis_fixture_int(f, "PTTL laid-out"), -1);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 1);
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "GET laid-out"), 1);
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS laid-out"), 0);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    dlock_latch_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_channel_carries_1_when_a_count_is_set_and_0_when_it_reaches_zero(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = new_latch(c, "announced");
    const char *channel = "redisson_countdownlatch__channel__{announced}";
    redisContext *sub = subscribe_to(f, channel);
    ASSERT_RC(dlock_latch_try_set_count(l, 2, NULL), DLOCK_OK); /* "1" */
    ASSERT_RC(dlock_latch_try_set_count(l, 7, NULL), DLOCK_OK); /* not set: nothing */
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);             /* 1 left: nothing */
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);             /* "0" */
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);             /* finished: nothing */
    ASSERT_RC(dlock_latch_try_set_count(l, 0, NULL), DLOCK_OK); /* sets nothing: nothing */
    ASSERT_RC(dlock_latch_try_set_count(l, 1, NULL), DLOCK_OK); /* "1" */
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);             /* "0" */
    char got[64];
    messages_until_end(f, sub, channel, got, sizeof(got));
    assert_string_equal(got, "1,0,1,0,");
    redisFree(sub);

    /* braces are always added around the name, even one that holds a '{' already */
    dlock_latch *tagged = new_latch(c, "l{t}");
    sub = subscribe_to(f, "redisson_countdownlatch__channel__{l{t}}");
    ASSERT_RC(dlock_latch_try_set_count(tagged, 1, NULL), DLOCK_OK);
    ASSERT_RC(dlock_latch_count_down(tagged), DLOCK_OK);
    messages_until_end(f, sub, "redisson_countdownlatch__channel__{l{t}}", got, sizeof(got));
    assert_string_equal(got, "1,0,");
    redisFree(sub);
    dlock_latch_free(tagged);
    dlock_latch_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- lost messages ----------------------------------------------------------------------- */

static void
test_await_returns_when_its_subscriber_is_killed_and_misses_the_last_count_down(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_latch *la = new_latch(a, "lost");
    dlock_latch *lb = new_latch(b, "lost");
    ASSERT_RC(dlock_latch_try_set_count(lb, 2, NULL), DLOCK_OK);
    awaiter w = {.l = la, .wait_ms = test_slack_ms(20000)};
    pthread_t t = start_awaiter_and_let_it_sleep(f, "redisson_countdownlatch__channel__{lost}", &w);
    ASSERT_RC(dlock_latch_count_down(lb), DLOCK_OK);
    test_sleep_ms(100);
    assert_false(atomic_load(&w.returned));
    /* The "0" is published while the waiter's subscriber connection is gone: it is killed,
     * and kept out (no room for another client) until the count down is done. */
    long long clients = redis_fixture_info_int(f, "clients", "connected_clients");
    /* one below: the killed connection's slot does not let it back in */
    freeReplyObject(redis_fixture_cmd(f, "CONFIG SET maxclients %lld", clients - 1));
    assert_true(redis_fixture_client_kill_type(f, "pubsub") >= 1);
    ASSERT_RC(dlock_latch_count_down(lb), DLOCK_OK);
    int64_t last_us = test_now_us();
    long long listeners = numsub(f, "redisson_countdownlatch__channel__{lost}");
    test_sleep_ms(200);
    assert_false(atomic_load(&w.returned));
    freeReplyObject(redis_fixture_cmd(f, "CONFIG SET maxclients 10000")); /* the default */
    assert_int_equal(listeners, 0);                                       /* nobody heard the "0" */
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(w.rc, DLOCK_OK);
    int64_t took_ms = (w.returned_us - last_us) / 1000;
    ASSERT_BETWEEN(took_ms, 200, 5500 + test_slack_ms(500));
    printf("# subscriber killed before the last count down: await returned %lld ms after it\n",
           (long long)took_ms);
    dlock_latch_free(la);
    dlock_latch_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void
test_await_returns_by_the_5_s_recheck_when_the_count_is_cleared_without_a_message(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = new_latch(c, "silent");
    ASSERT_RC(dlock_latch_try_set_count(l, 1, NULL), DLOCK_OK);
    awaiter w = {.l = l, .wait_ms = test_slack_ms(20000)};
    int64_t asleep_us = test_now_us();
    pthread_t t =
        start_awaiter_and_let_it_sleep(f, "redisson_countdownlatch__channel__{silent}", &w);
    long long gets = get_calls(f);
    /* no message will come: the count goes away behind the latch's back */
    assert_int_equal(redis_fixture_int(f, "DEL silent"), 1);
    int64_t cleared_us = test_now_us();
    test_sleep_ms(1000);
    assert_false(atomic_load(&w.returned));
    assert_int_equal(get_calls(f), gets); /* asleep, not polling */
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(w.rc, DLOCK_OK);
    int64_t took_ms = (w.returned_us - cleared_us) / 1000;
    ASSERT_BETWEEN((w.returned_us - asleep_us) / 1000, 4900, 5000 + test_slack_ms(1000));
    printf("# count cleared without a message: await returned %lld ms later (the recheck)\n",
           (long long)took_ms);
    dlock_latch_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- bad input --------------------------------------------------------------------------- */

static void count_calls(dlock_latch *l, int status, void *arg) {
    (void)l;
    (void)status;
    (*(int *)arg)++;
}

static void test_bad_arguments_are_einval_without_any_io(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = new_latch(c, "valid");
    long long before = total_commands(f);

    dlock_latch *out = (dlock_latch *)&out;
    dlock_latch *const sentinel = out;
    ASSERT_EINVAL(dlock_latch_new(NULL, "n", &out));
    ASSERT_EINVAL(dlock_latch_new(c, NULL, &out));
    ASSERT_EINVAL(dlock_latch_new(c, "", &out));
    ASSERT_EINVAL(dlock_latch_new(c, "n", NULL));
    assert_ptr_equal(out, sentinel);

    bool was_set = false;
    int64_t n = 0;
    ASSERT_EINVAL(dlock_latch_try_set_count(NULL, 1, &was_set));
    ASSERT_EINVAL(dlock_latch_try_set_count(l, -1, &was_set));
    ASSERT_EINVAL(dlock_latch_try_set_count(l, INT64_MIN, NULL));
    ASSERT_EINVAL(dlock_latch_count_down(NULL));
    ASSERT_EINVAL(dlock_latch_count(NULL, &n));
    ASSERT_EINVAL(dlock_latch_count(l, NULL));
    ASSERT_EINVAL(dlock_latch_await(NULL, 0));
    ASSERT_EINVAL(dlock_latch_await(l, -2));
    ASSERT_EINVAL(dlock_latch_await(l, INT64_MIN));

    int calls = 0;
    ASSERT_EINVAL(dlock_latch_await_async(NULL, 0, count_calls, &calls));
    ASSERT_EINVAL(dlock_latch_await_async(l, 0, NULL, &calls));
    ASSERT_EINVAL(dlock_latch_await_async(l, -2, count_calls, &calls));
    ASSERT_EINVAL(dlock_latch_count_down_async(NULL, count_calls, &calls));
    ASSERT_EINVAL(dlock_latch_count_down_async(l, NULL, &calls));
    dlock_latch_free(NULL);

    test_sleep_ms(50);
    assert_int_equal(calls, 0);
    assert_int_equal(total_commands(f) - before, 1); /* only the first INFO */
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    dlock_latch_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void
test_every_call_on_a_hash_key_is_eredis_wrongtype_and_the_key_is_unchanged(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = new_latch(c, "a-hash");
    freeReplyObject(redis_fixture_cmd(f, "HSET a-hash f v"));
    bool was_set = false;
    int64_t n = 0;
    ASSERT_WRONGTYPE(dlock_latch_try_set_count(l, 3, &was_set));
    ASSERT_WRONGTYPE(dlock_latch_count_down(l));
    ASSERT_WRONGTYPE(dlock_latch_count(l, &n));
    ASSERT_WRONGTYPE(dlock_latch_await(l, 0));
    ASSERT_WRONGTYPE(dlock_latch_await(l, DLOCK_FOREVER)); /* the error ends the wait */
#undef ASSERT_WRONGTYPE
    char *type = redis_fixture_str(f, "TYPE a-hash");
    assert_string_equal(type, "hash");
    free(type);
    assert_int_equal(redis_fixture_int(f, "HLEN a-hash"), 1);
    char *v = redis_fixture_str(f, "HGET a-hash f");
    assert_string_equal(v, "v");
    free(v);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 1);
    assert_int_equal(numsub(f, "redisson_countdownlatch__channel__{a-hash}"), 0);
    dlock_latch_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- the async face ---------------------------------------------------------------------- */

typedef struct done {
    int calls;
    int status;
    int order;
    dlock_latch *l;
    int64_t at_ms;
} done;

static int callbacks_so_far;

static void record_done(dlock_latch *l, int status, void *arg) {
    done *d = arg;
    d->calls++;
    d->status = status;
    d->order = ++callbacks_so_far;
    d->l = l;
    d->at_ms = test_now_ms();
}

static void test_async_await_completes_after_the_second_async_count_down_once_each(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 1);
    ASSERT_RC(dlock_latch_new(a.c, "async-latch", &a.latch), DLOCK_OK);
    callbacks_so_far = 0;
    done await = {0}, down1 = {0}, down2 = {0}, look = {0}, after = {0};
    bool ok = false;
    freeReplyObject(redis_fixture_cmd(a.f, "SET async-latch 2")); /* as try_set_count does */

    ASSERT_RC(dlock_latch_await_async(a.latch, 0, record_done, &look), DLOCK_OK);
    assert_int_equal(look.calls, 0); /* never inside the call */
    RUN_LOOP_UNTIL(a.loop, ok, look.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(look.status, DLOCK_ETIMEDOUT);

    long long gets_before = get_calls(a.f);
    ASSERT_RC(dlock_latch_await_async(a.latch, DLOCK_FOREVER, record_done, &await), DLOCK_OK);
    assert_int_equal(await.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok,
                   numsub(a.f, "redisson_countdownlatch__channel__{async-latch}") == 1 &&
                       get_calls(a.f) >= gets_before + 2,
                   test_slack_ms(5000));
    assert_true(ok);

    ASSERT_RC(dlock_latch_count_down_async(a.latch, record_done, &down1), DLOCK_OK);
    assert_int_equal(down1.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, down1.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(down1.status, DLOCK_OK);
    assert_ptr_equal(down1.l, a.latch);
    run_loop_for(a.loop, 100);
    assert_int_equal(await.calls, 0);
    assert_int_equal(redis_fixture_int(a.f, "GET async-latch"), 1);

    ASSERT_RC(dlock_latch_count_down_async(a.latch, record_done, &down2), DLOCK_OK);
    assert_int_equal(down2.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, await.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(await.status, DLOCK_OK);
    assert_ptr_equal(await.l, a.latch);
    assert_int_equal(down2.calls, 1);
    assert_true(down2.order < await.order);
    ASSERT_BETWEEN(await.at_ms - down2.at_ms, 0, test_slack_ms(100));
    assert_int_equal(redis_fixture_int(a.f, "EXISTS async-latch"), 0);

    /* finished: await is OK through the callback, still not inside the call */
    ASSERT_RC(dlock_latch_await_async(a.latch, 0, record_done, &after), DLOCK_OK);
    assert_int_equal(after.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, after.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(after.status, DLOCK_OK);

    run_loop_for(a.loop, 100); /* nothing is called twice */
    assert_int_equal(look.calls, 1);
    assert_int_equal(await.calls, 1);
    assert_int_equal(down1.calls, 1);
    assert_int_equal(down2.calls, 1);
    assert_int_equal(after.calls, 1);
    assert_int_equal(callbacks_so_far, 5);
    printf("# async count down -> waiting async await: %lld ms\n",
           (long long)(await.at_ms - down2.at_ms));
    app_close(&a);
}

static void test_latch_free_with_a_waiting_async_await_calls_it_back_canceled_once(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 1);
    ASSERT_RC(dlock_latch_new(a.c, "async-canceled", &a.latch), DLOCK_OK);
    done await = {0};
    bool ok = false;
    freeReplyObject(redis_fixture_cmd(a.f, "SET async-canceled 1"));
    ASSERT_RC(dlock_latch_await_async(a.latch, DLOCK_FOREVER, record_done, &await), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok,
                   numsub(a.f, "redisson_countdownlatch__channel__{async-canceled}") == 1,
                   test_slack_ms(5000));
    assert_true(ok);
    run_loop_for(a.loop, 20);
    assert_int_equal(await.calls, 0);
    dlock_latch_free(a.latch);
    a.latch = NULL;
    assert_int_equal(await.calls, 0); /* not inside the call */
    RUN_LOOP_UNTIL(a.loop, ok, await.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(await.status, DLOCK_ECANCELED);
    RUN_LOOP_UNTIL(a.loop, ok,
                   numsub(a.f, "redisson_countdownlatch__channel__{async-canceled}") == 0,
                   test_slack_ms(2000));
    assert_true(ok);
    freeReplyObject(redis_fixture_cmd(a.f, "DEL async-canceled"));
    freeReplyObject(
        redis_fixture_cmd(a.f, "PUBLISH redisson_countdownlatch__channel__{async-canceled} 0"));
    run_loop_for(a.loop, 100);
    assert_int_equal(await.calls, 1);
    app_close(&a);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN); /* the adapter's rule for the application's loop thread */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_await_returns_within_100_ms_of_the_third_count_down_by_three_threads),
        cmocka_unit_test(test_await_300_ms_on_a_counting_latch_times_out_after_300_to_800_ms),
        cmocka_unit_test(test_await_on_an_unset_or_finished_latch_returns_at_once),
        cmocka_unit_test(test_try_set_count_sets_only_an_unset_or_finished_latch),
        cmocka_unit_test(test_count_is_the_remaining_count_and_0_when_unset_or_finished),
        cmocka_unit_test(test_count_down_of_a_finished_latch_changes_nothing),
        cmocka_unit_test(test_layout_is_a_string_count_deleted_at_zero),
        cmocka_unit_test(test_channel_carries_1_when_a_count_is_set_and_0_when_it_reaches_zero),
        cmocka_unit_test(
            test_await_returns_when_its_subscriber_is_killed_and_misses_the_last_count_down),
        cmocka_unit_test(
            test_await_returns_by_the_5_s_recheck_when_the_count_is_cleared_without_a_message),
        cmocka_unit_test(test_bad_arguments_are_einval_without_any_io),
        cmocka_unit_test(
            test_every_call_on_a_hash_key_is_eredis_wrongtype_and_the_key_is_unchanged),
        cmocka_unit_test(test_async_await_completes_after_the_second_async_count_down_once_each),
        cmocka_unit_test(test_latch_free_with_a_waiting_async_await_calls_it_back_canceled_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
