/* SPDX-License-Identifier: MIT */
/* test_reply_shape.c — every script's reply shape (src/lock/lock_shapes.c,
 * src/semaphore/semaphore_shapes.c) against replies read from RESP bytes by hiredis' own reader, as
 * they arrive from a server: each shape takes what its script answers and refuses what it does not
 * ({1}, {1, 0}, {1, -5}, {1, "1", "7"}, a string, +OK, nil, [], a nested array, a token of 0, a
 * token that cannot rise), and the error text says what arrived and what the script answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "every_reply_shape.h"

/* The one reply in bytes (a complete RESP value), as hiredis' reader builds it. */
static redisReply *read_reply(const char *bytes) {
    redisReader *reader = redisReaderCreate();
    assert_non_null(reader);
    assert_int_equal(redisReaderFeed(reader, bytes, strlen(bytes)), REDIS_OK);
    void *reply = NULL;
    assert_int_equal(redisReaderGetReply(reader, &reply), REDIS_OK);
    redisReaderFree(reader);
    if (!reply)
        fail_msg("not one complete reply: %s", bytes);
    return reply;
}

static bool fits(const dlock__reply_shape *s, const char *bytes, dlock__shape_values *got) {
    redisReply *r = read_reply(bytes);
    dlock__shape_values ignored;
    bool ok = dlock__reply_shape_check(s, r, got ? got : &ignored);
    freeReplyObject(r);
    return ok;
}

static void expect_fits(const dlock__reply_shape *s, const char *bytes, int form, int64_t v0,
                        int64_t v1) {
    dlock__shape_values got = {.form = -1};
    if (!fits(s, bytes, &got))
        fail_msg("%s refused %s", s->script, bytes);
    assert_int_equal(got.form, form);
    assert_int_equal(got.value[0], v0);
    if (s->form[form].count > 1)
        assert_int_equal(got.value[1], v1);
}

static void expect_refused(const dlock__reply_shape *s, const char *bytes) {
    dlock__shape_values got = {.form = 77};
    if (fits(s, bytes, &got))
        fail_msg("%s took %s", s->script, bytes);
    assert_int_equal(got.form, 77); /* untouched */
}

#define NESTED "*2\r\n*2\r\n:1\r\n:1\r\n:0\r\n"

/* What no script of the library answers: each shape refuses all of it. */
static const char *const never_a_script_reply[] = {
    "$2\r\nOK\r\n",
    "+OK\r\n",
    "$-1\r\n",
    "*-1\r\n",
    "*0\r\n",
    NESTED,
    "*2\r\n:1\r\n:-5\r\n",
    "*3\r\n:1\r\n$1\r\n1\r\n$1\r\n7\r\n",
    "*4\r\n:1\r\n:1\r\n:0\r\n:0\r\n",
};

static void
test_every_shape_refuses_strings_status_nil_empty_nested_and_short_arrays(void **state) {
    (void)state;
    assert_true(EVERY_REPLY_SHAPE_COUNT >= 14);
    for (size_t i = 0; i < EVERY_REPLY_SHAPE_COUNT; i++)
        for (size_t j = 0; j < sizeof(never_a_script_reply) / sizeof(never_a_script_reply[0]); j++)
            expect_refused(every_reply_shape[i], never_a_script_reply[j]);
}

static void test_nothing_at_all_fits_no_shape(void **state) {
    (void)state;
    dlock__shape_values got;
    for (size_t i = 0; i < EVERY_REPLY_SHAPE_COUNT; i++)
        assert_false(dlock__reply_shape_check(every_reply_shape[i], NULL, &got));
}

static void test_lock_acquire_takes_acquired_and_busy_replies(void **state) {
    (void)state;
    const dlock__reply_shape *s = &dlock__shape_lock_acquire;
    expect_fits(s, "*3\r\n:1\r\n:1\r\n:0\r\n", 0, 1, 1);
    expect_fits(s, "*3\r\n:1\r\n:9007199254740991\r\n:0\r\n", 0, 1, 9007199254740991);
    expect_fits(s, "*3\r\n:2\r\n:1\r\n:0\r\n", 0, 2, 1); /* others in line */
    expect_fits(s, "*2\r\n:0\r\n:29950\r\n", 1, 0, 29950);
    expect_fits(s, "*2\r\n:0\r\n:-1\r\n", 1, 0, -1);
    expect_fits(s, "*2\r\n:0\r\n:-2\r\n", 1, 0, -2);
    /* a Redisson holder's lease is not held to DLOCK_MAX_TIME_MS */
    expect_fits(s, "*2\r\n:0\r\n:9223372036854775807\r\n", 1, 0, INT64_MAX);
}

static void test_lock_acquire_refuses_holds_below_one_tokens_and_odd_tags(void **state) {
    (void)state;
    const dlock__reply_shape *s = &dlock__shape_lock_acquire;
    expect_refused(s, "*1\r\n:1\r\n");
    expect_refused(s, "*2\r\n:1\r\n:0\r\n");
    expect_refused(s, "*2\r\n:1\r\n:-5\r\n");
    expect_refused(s, "*3\r\n:1\r\n:0\r\n:0\r\n");                    /* no hold */
    expect_refused(s, "*3\r\n:1\r\n:-9223372036854775808\r\n:0\r\n"); /* Lua's INT64_MAX */
    expect_refused(s, "*3\r\n:1\r\n:1\r\n:5\r\n");                    /* a token: not fenced */
    expect_refused(s, "*3\r\n:3\r\n:1\r\n:0\r\n");
    expect_refused(s, "*2\r\n:0\r\n:-3\r\n");
    expect_refused(s, "*2\r\n:0\r\n$4\r\n1500\r\n"); /* a pttl is an integer */
    expect_refused(s, "*3\r\n:1\r\n$1\r\n1\r\n:0\r\n");
    expect_refused(s, "*3\r\n:1\r\n:1\r\n" NESTED);
    expect_refused(s, ":1\r\n");
    expect_refused(s, ":0\r\n");
}

static void test_fenced_acquire_takes_tokens_from_one_as_integers_or_digits(void **state) {
    (void)state;
    const dlock__reply_shape *s = &dlock__shape_fenced_acquire;
    dlock__shape_values got;
    assert_true(fits(s, "*3\r\n:1\r\n:1\r\n:1\r\n", &got));
    assert_int_equal(got.value[2], 1);
    /* beyond 2^53 acquire.lua answers the token's digits */
    assert_true(fits(s, "*3\r\n:1\r\n:2\r\n$19\r\n9223372036854775807\r\n", &got));
    assert_int_equal(got.value[1], 2);
    assert_int_equal(got.value[2], INT64_MAX);
    expect_refused(s, "*3\r\n:1\r\n:1\r\n:0\r\n"); /* token 0 */
    expect_refused(s, "*3\r\n:1\r\n:1\r\n:-4\r\n");
    expect_refused(s, "*3\r\n:1\r\n:1\r\n$19\r\n9223372036854775808\r\n"); /* past int64 */
    expect_refused(s, "*3\r\n:1\r\n:1\r\n$3\r\n007\r\n");
    expect_refused(s, "*3\r\n:1\r\n:1\r\n$2\r\n 7\r\n");
}

/* The engine raises the token's floor to one past the owner's last token; past INT64_MAX
 * nothing can rise, and it sets max below min. */
static void test_a_token_floor_refuses_tokens_that_do_not_rise(void **state) {
    (void)state;
    dlock__reply_shape s = dlock__shape_fenced_acquire;
    s.form[0].value[2].min = 8;
    expect_refused(&s, "*3\r\n:1\r\n:1\r\n:7\r\n");
    expect_refused(&s, "*3\r\n:1\r\n:1\r\n:1\r\n");
    expect_fits(&s, "*3\r\n:1\r\n:1\r\n:8\r\n", 0, 1, 1);
    s.form[0].value[2].max = 0;
    expect_refused(&s, "*3\r\n:1\r\n:1\r\n$19\r\n9223372036854775807\r\n");
    expect_refused(&s, "*3\r\n:1\r\n:1\r\n:8\r\n");
    expect_fits(&s, "*2\r\n:0\r\n:10\r\n", 1, 0, 10); /* busy still reads */
}

static void test_release_is_minus_one_or_the_holds_left(void **state) {
    (void)state;
    const dlock__reply_shape *s = &dlock__shape_lock_release;
    expect_fits(s, ":-1\r\n", 0, -1, 0);
    expect_fits(s, ":0\r\n", 0, 0, 0);
    expect_fits(s, ":41\r\n", 0, 41, 0);
    expect_refused(s, ":-2\r\n");
    expect_refused(s, "$1\r\n0\r\n");
    expect_refused(s, "*1\r\n:0\r\n");
}

static void test_yes_no_replies_are_the_integers_one_and_zero(void **state) {
    (void)state;
    const dlock__reply_shape *yes_no[] = {
        &dlock__shape_lock_force,    &dlock__shape_lock_owner_call, &dlock__shape_semaphore_try_set,
        &dlock__shape_latch_try_set, &dlock__shape_permits_yes_no,
    };
    for (size_t i = 0; i < sizeof(yes_no) / sizeof(yes_no[0]); i++) {
        expect_fits(yes_no[i], ":1\r\n", 0, 1, 0);
        expect_fits(yes_no[i], ":0\r\n", 0, 0, 0);
        expect_refused(yes_no[i], ":2\r\n");
        expect_refused(yes_no[i], ":-1\r\n");
        expect_refused(yes_no[i], "$1\r\n1\r\n");
    }
}

static void test_counts_are_int64_as_integers_or_their_digits(void **state) {
    (void)state;
    const dlock__reply_shape *any[] = {&dlock__shape_semaphore_count,
                                       &dlock__shape_permits_available};
    for (size_t i = 0; i < 2; i++) {
        expect_fits(any[i], ":-3\r\n", 0, -3, 0);
        expect_fits(any[i], "$20\r\n-9223372036854775808\r\n", 0, INT64_MIN, 0);
        expect_fits(any[i], "$16\r\n9007199254740993\r\n", 0, 9007199254740993, 0);
        expect_refused(any[i], "$5\r\n12abc\r\n");
        expect_refused(any[i], "$0\r\n\r\n");
        expect_refused(any[i], "$2\r\n-0\r\n");
    }
    expect_fits(&dlock__shape_semaphore_drain, ":0\r\n", 0, 0, 0);
    expect_refused(&dlock__shape_semaphore_drain, ":-1\r\n");
    expect_fits(&dlock__shape_latch_count_down, ":4\r\n", 0, 4, 0);
    expect_refused(&dlock__shape_latch_count_down, ":-1\r\n");
}

static void test_semaphore_and_permit_acquires_have_their_two_forms(void **state) {
    (void)state;
    const dlock__reply_shape *sem = &dlock__shape_semaphore_acquire;
    expect_fits(sem, "*2\r\n:1\r\n:3\r\n", 0, 1, 3);
    expect_fits(sem, "*2\r\n:0\r\n:-2\r\n", 1, 0, -2);
    expect_refused(sem, "*2\r\n:1\r\n:-1\r\n"); /* took permits, left below zero */
    expect_refused(sem, "*1\r\n:1\r\n");

    const dlock__reply_shape *permits = &dlock__shape_permits_acquire;
    expect_fits(permits, "*1\r\n:1\r\n", 0, 1, 0);
    expect_fits(permits, "*2\r\n:0\r\n:250\r\n", 1, 0, 250);
    expect_fits(permits, "*2\r\n:0\r\n:-1\r\n", 1, 0, -1);
    expect_refused(permits, "*2\r\n:1\r\n:250\r\n");
    expect_refused(permits, "*1\r\n:0\r\n");
    expect_refused(permits, "*2\r\n:0\r\n:-2\r\n");
}

static bool each_renewed(const char *bytes, size_t n) {
    redisReply *r = read_reply(bytes);
    bool ok = dlock__reply_shape_each(&dlock__shape_renewed, r, n);
    freeReplyObject(r);
    return ok;
}

static void test_a_renewal_is_one_integer_one_or_zero_per_lease(void **state) {
    (void)state;
    assert_true(each_renewed("*3\r\n:1\r\n:0\r\n:1\r\n", 3));
    assert_false(each_renewed("*3\r\n:1\r\n:0\r\n:1\r\n", 2));
    assert_false(each_renewed("*2\r\n:1\r\n:2\r\n", 2));
    assert_false(each_renewed("*2\r\n:1\r\n$1\r\n1\r\n", 2));
    assert_false(each_renewed(":1\r\n", 1));
    assert_false(each_renewed("*1\r\n" NESTED, 1));
}

static void test_the_mismatch_says_what_arrived_and_what_the_script_answers(void **state) {
    (void)state;
    char text[256];
    redisReply *r = read_reply("*3\r\n:1\r\n$1\r\n1\r\n$1\r\n7\r\n");
    dlock__reply_shape_mismatch(&dlock__shape_lock_acquire, r, text, sizeof(text));
    freeReplyObject(r);
    assert_string_equal(text, "an array of 3 elements [the integer 1, the string \"1\", the string "
                              "\"7\"], where the lock's acquire script answers {1 or 2 (others in "
                              "line), holds >= 1, token 0} or {0, pttl[, joined >= 1]}");

    r = read_reply("*6\r\n" NESTED ":1\r\n+OK\r\n$-1\r\n:5\r\n:6\r\n");
    dlock__reply_shape_mismatch(&dlock__shape_lock_release, r, text, sizeof(text));
    freeReplyObject(r);
    assert_non_null(strstr(text, "an array of 6 elements [an array of 2 elements, the integer 1, "
                                 "the status \"OK\", nothing, ...]"));

    /* cut to the buffer, always terminated */
    r = read_reply("*2\r\n:1\r\n:2\r\n");
    dlock__reply_shape_mismatch(&dlock__shape_lock_release, r, text, 12);
    freeReplyObject(r);
    assert_string_equal(text, "an array of");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_shape_refuses_strings_status_nil_empty_nested_and_short_arrays),
        cmocka_unit_test(test_nothing_at_all_fits_no_shape),
        cmocka_unit_test(test_lock_acquire_takes_acquired_and_busy_replies),
        cmocka_unit_test(test_lock_acquire_refuses_holds_below_one_tokens_and_odd_tags),
        cmocka_unit_test(test_fenced_acquire_takes_tokens_from_one_as_integers_or_digits),
        cmocka_unit_test(test_a_token_floor_refuses_tokens_that_do_not_rise),
        cmocka_unit_test(test_release_is_minus_one_or_the_holds_left),
        cmocka_unit_test(test_yes_no_replies_are_the_integers_one_and_zero),
        cmocka_unit_test(test_counts_are_int64_as_integers_or_their_digits),
        cmocka_unit_test(test_semaphore_and_permit_acquires_have_their_two_forms),
        cmocka_unit_test(test_a_renewal_is_one_integer_one_or_zero_per_lease),
        cmocka_unit_test(test_the_mismatch_says_what_arrived_and_what_the_script_answers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
