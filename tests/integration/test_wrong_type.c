/* SPDX-License-Identifier: MIT */
/* test_wrong_type.c — a string that is not an integer under the name of a semaphore, an
 * expiring-permit semaphore or a latch.
 *
 * What is proven: every call that reads the count (latch await and count, semaphore
 * available, try_acquire, acquire, drain, permits available and acquire) answers
 * DLOCK_EREDIS at once, with a dlock_last_error() text that names the key and what it
 * holds, instead of reading the garbage as 0 (a latch taken for finished, a semaphore
 * taken for empty, where a DLOCK_FOREVER acquire would wait for ever); a wait for ever ends
 * with the error too (the test watchdog bounds it); and the value in Redis is left as it
 * was. Strings that only look like numbers ("12abc", " 5", "1e3", "3.0", "007",
 * one past INT64_MAX, "") are refused like "abc" where dlock reads the value itself (GET),
 * while every integer Redis can hold, INT64_MIN and INT64_MAX included, still reads as
 * itself. Every test starts its own server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60

/* Values that are not a base-10 int64 although Lua's tonumber or strtoll takes some. */
static const char *const NOT_INTEGERS[] = {
    "abc",
    "12abc",
    " 5",
    "5 ",
    "1e3",
    "3.0",
    "+7",
    "007",
    "-0",
    "-",
    "9223372036854775808",
    "-9223372036854775809",
    "",
};
#define N_NOT_INTEGERS (sizeof(NOT_INTEGERS) / sizeof(NOT_INTEGERS[0]))

static void set_string(redis_fixture *f, const char *key, const char *value) {
    redisReply *r = redis_fixture_cmd(f, "SET %s %b", key, value, strlen(value));
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
}

/* key still holds value, with no expiry, and nothing else was written. */
static void expect_unchanged(redis_fixture *f, const char *key, const char *value) {
    char *now = redis_fixture_str(f, "GET %s", key);
    assert_non_null(now);
    assert_string_equal(now, value);
    free(now);
    assert_int_equal(redis_fixture_int(f, "PTTL %s", key), -1);
    assert_int_equal(redis_fixture_info_int(f, "keyspace", "db0.keys"), 1);
}

/* Runs call, which must be DLOCK_EREDIS within a second (slack under valgrind) with a
 * last-error text naming key. */
#define EXPECT_WRONG_TYPE(call, key)                                                               \
    do {                                                                                           \
        int64_t start_ = test_now_ms();                                                            \
        ASSERT_RC(call, DLOCK_EREDIS);                                                             \
        ASSERT_BETWEEN(test_now_ms() - start_, 0, slack_ms(1000));                                 \
        if (!strstr(dlock_last_error(), key))                                                      \
            fail_msg("%s: last error \"%s\" does not name %s", #call, dlock_last_error(), key);    \
    } while (0)

/* A server and a blocking client of it, for one test. */
typedef struct session {
    redis_fixture *f;
    dlock_client *c;
} session;

static session session_open(const char *test) {
    test_watchdog_arm(BUDGET_S, test);
    session t;
    t.f = start_server();
    t.c = connect_client(t.f);
    return t;
}

static void session_close(session *t) {
    ASSERT_RC(dlock_client_free(t->c), DLOCK_OK);
    redis_fixture_stop(t->f);
}

static void test_latch_holding_a_non_integer_string_is_eredis_not_finished(void **state) {
    (void)state;
    session t = session_open(__func__);
    redis_fixture *f = t.f;
    dlock_client *c = t.c;
    dlock_latch *l = NULL;
    ASSERT_RC(dlock_latch_new(c, "latch-garbage", &l), DLOCK_OK);
    for (size_t i = 0; i < N_NOT_INTEGERS; i++) {
        set_string(f, "latch-garbage", NOT_INTEGERS[i]);
        int64_t count = 42;
        EXPECT_WRONG_TYPE(dlock_latch_count(l, &count), "latch-garbage");
        assert_int_equal(count, 42); /* not written on failure */
        EXPECT_WRONG_TYPE(dlock_latch_await(l, 0), "latch-garbage");
        EXPECT_WRONG_TYPE(dlock_latch_await(l, 2000), "latch-garbage");
        EXPECT_WRONG_TYPE(dlock_latch_await(l, DLOCK_FOREVER), "latch-garbage");
        expect_unchanged(f, "latch-garbage", NOT_INTEGERS[i]);
    }
    /* the text says what the key holds */
    set_string(f, "latch-garbage", "abc");
    ASSERT_RC(dlock_latch_await(l, DLOCK_FOREVER), DLOCK_EREDIS);
    if (!strstr(dlock_last_error(), "abc"))
        fail_msg("last error \"%s\" does not show the value", dlock_last_error());
    dlock_latch_free(l);
    session_close(&t);
}

static void test_semaphore_available_of_a_non_integer_string_is_eredis_not_zero(void **state) {
    (void)state;
    session t = session_open(__func__);
    redis_fixture *f = t.f;
    dlock_client *c = t.c;
    dlock_semaphore *s = NULL;
    ASSERT_RC(dlock_semaphore_new(c, "sem-garbage", &s), DLOCK_OK);
    for (size_t i = 0; i < N_NOT_INTEGERS; i++) {
        set_string(f, "sem-garbage", NOT_INTEGERS[i]);
        int64_t n = 42;
        EXPECT_WRONG_TYPE(dlock_semaphore_available(s, &n), "sem-garbage");
        assert_int_equal(n, 42);
        expect_unchanged(f, "sem-garbage", NOT_INTEGERS[i]);
    }
    dlock_semaphore_free(s);
    session_close(&t);
}

/* The strict reader takes every integer Redis itself takes, to the ends of the range. */
static void test_semaphore_available_reads_every_int64_string_as_itself(void **state) {
    (void)state;
    session t = session_open(__func__);
    redis_fixture *f = t.f;
    dlock_client *c = t.c;
    dlock_semaphore *s = NULL;
    ASSERT_RC(dlock_semaphore_new(c, "sem-numbers", &s), DLOCK_OK);
    static const struct {
        const char *text;
        int64_t value;
    } numbers[] = {
        {"0", 0},
        {"7", 7},
        {"-5", -5},
        {"9223372036854775807", INT64_MAX},
        {"-9223372036854775808", INT64_MIN},
    };
    for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
        set_string(f, "sem-numbers", numbers[i].text);
        int64_t n = 42;
        ASSERT_RC(dlock_semaphore_available(s, &n), DLOCK_OK);
        if (n != numbers[i].value)
            fail_msg("\"%s\" read as %lld", numbers[i].text, (long long)n);
    }
    dlock_semaphore_free(s);
    session_close(&t);
}

/* The scripts' answers: acquire and drain read the count inside Redis. */
static void test_semaphore_acquire_and_drain_on_a_non_integer_string_are_eredis(void **state) {
    (void)state;
    session t = session_open(__func__);
    redis_fixture *f = t.f;
    dlock_client *c = t.c;
    dlock_semaphore *s = NULL;
    ASSERT_RC(dlock_semaphore_new(c, "sem-garbage", &s), DLOCK_OK);
    set_string(f, "sem-garbage", "abc");
    int64_t n = 42;
    EXPECT_WRONG_TYPE(dlock_semaphore_try_acquire(s, 1, 0), "sem-garbage");
    EXPECT_WRONG_TYPE(dlock_semaphore_try_acquire(s, 1, 2000), "sem-garbage");
    EXPECT_WRONG_TYPE(dlock_semaphore_try_acquire(s, 1, DLOCK_FOREVER), "sem-garbage");
    EXPECT_WRONG_TYPE(dlock_semaphore_acquire(s, 1), "sem-garbage");
    EXPECT_WRONG_TYPE(dlock_semaphore_drain(s, &n), "sem-garbage");
    assert_int_equal(n, 42);
    expect_unchanged(f, "sem-garbage", "abc");
    dlock_semaphore_free(s);
    session_close(&t);
}

static void test_permits_on_a_non_integer_string_are_eredis_and_take_nothing(void **state) {
    (void)state;
    session t = session_open(__func__);
    redis_fixture *f = t.f;
    dlock_client *c = t.c;
    dlock_permits *p = NULL;
    ASSERT_RC(dlock_permits_new(c, "permits-garbage", &p), DLOCK_OK);
    set_string(f, "permits-garbage", "abc");
    int64_t n = 42;
    dlock_permit_id id;
    EXPECT_WRONG_TYPE(dlock_permits_available(p, &n), "permits-garbage");
    assert_int_equal(n, 42);
    EXPECT_WRONG_TYPE(dlock_permits_acquire(p, 0, -1, &id), "permits-garbage");
    EXPECT_WRONG_TYPE(dlock_permits_acquire(p, DLOCK_FOREVER, 60000, &id), "permits-garbage");
    expect_unchanged(f, "permits-garbage", "abc"); /* no {permits-garbage}:timeout either */
    dlock_permits_free(p);
    session_close(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_latch_holding_a_non_integer_string_is_eredis_not_finished),
        cmocka_unit_test(test_semaphore_available_of_a_non_integer_string_is_eredis_not_zero),
        cmocka_unit_test(test_semaphore_available_reads_every_int64_string_as_itself),
        cmocka_unit_test(test_semaphore_acquire_and_drain_on_a_non_integer_string_are_eredis),
        cmocka_unit_test(test_permits_on_a_non_integer_string_are_eredis_and_take_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
