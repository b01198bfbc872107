/* SPDX-License-Identifier: MIT */
/* test_semaphore_counts.c — the semaphore's acquire and release scripts count exactly on both
 * of their paths: counts of up to 15 characters as Lua numbers (exact below 10^15 < 2^53; the
 * common case, kept cheap), longer ones as 64-bit strings. Sums and differences that cross
 * from one to the other, and counts near 2^53 and 2^63, read back from Redis (the count
 * string), from the calls' answers and from the release's message. Helpers:
 * tests/support/semaphore_helpers.h. The test starts its own server. */
#include "semaphore_helpers.h"

/* Sets the count string of name, then checks that releasing then acquiring `permits`
 * leaves it, message and answers, at count + permits and back at count. */
static void release_then_acquire(redis_fixture *f, dlock_semaphore *s, redisContext *sub,
                                 const char *count, int64_t permits, const char *sum) {
    freeReplyObject(redis_fixture_cmd(f, "SET counts %s", count));
    ASSERT_RC(dlock_semaphore_release(s, permits), DLOCK_OK);
    char *now = redis_fixture_str(f, "GET counts");
    assert_string_equal(now, sum);
    free(now);
    char messages[256];
    messages_until_end(f, sub, "redisson_sc:{counts}", messages, sizeof(messages));
    char want[64];
    snprintf(want, sizeof(want), "%s,", sum);
    assert_string_equal(messages, want);
    assert_int_equal(available_of(s), strtoll(sum, NULL, 10));
    ASSERT_RC(dlock_semaphore_try_acquire(s, permits, 0), DLOCK_OK);
    now = redis_fixture_str(f, "GET counts");
    assert_string_equal(now, count);
    free(now);
}

static void test_counts_exact_across_15_digits_2_pow_53_and_2_pow_63(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = new_semaphore(c, "counts");
    redisContext *sub = subscribe_to(f, "redisson_sc:{counts}");
    release_then_acquire(f, s, sub, "3", 4, "7");
    release_then_acquire(f, s, sub, "999999999999999", 1, "1000000000000000");
    release_then_acquire(f, s, sub, "999999999999999", 999999999999999, "1999999999999998");
    release_then_acquire(f, s, sub, "9007199254740991", 2, "9007199254740993");
    release_then_acquire(f, s, sub, "9223372036854775806", 1, "9223372036854775807");
    /* not enough: nothing taken, on either path */
    freeReplyObject(redis_fixture_cmd(f, "SET counts 999999999999999"));
    ASSERT_RC(dlock_semaphore_try_acquire(s, 1000000000000000, 0), DLOCK_ETIMEDOUT);
    char *now = redis_fixture_str(f, "GET counts");
    assert_string_equal(now, "999999999999999");
    free(now);
    ASSERT_RC(dlock_semaphore_try_acquire(s, 999999999999999, 0), DLOCK_OK);
    now = redis_fixture_str(f, "GET counts");
    assert_string_equal(now, "0");
    free(now);
    redisFree(sub);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_exact_across_15_digits_2_pow_53_and_2_pow_63),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
