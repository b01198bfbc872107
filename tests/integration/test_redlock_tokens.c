/* SPDX-License-Identifier: MIT */
/* test_redlock_tokens.c — the redlock tests of test_redlock.c, split from it by concern: fencing
 * tokens. Helpers: tests/support/redlock_helpers.h. Every test starts its own server. */
#include "redlock_helpers.h"

/* ---- fencing tokens ---------------------------------------------------------------------- */

/* How many masters' token counters are at value. */
static int tokens_at(redis_fixture *f[N], long long value) {
    int n = 0;
    for (int i = 0; i < N; i++)
        n += redis_fixture_int(f[i], "GET redisson_lock_token:{" NAME "}") == value;
    return n;
}

static void test_the_token_is_the_largest_its_majority_gave(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    const long long counters[N] = {4, 17, 9, 0, 2};
    for (int i = 0; i < N; i++)
        if (counters[i])
            assert_int_equal(
                redis_fixture_int(f[i], "INCRBY redisson_lock_token:{" NAME "} %lld", counters[i]),
                counters[i]);
    masters_app a;
    masters_app_open(&a, f, N, NAME, NULL, true);
    uint64_t token = 0;
    ASSERT_RC(dlock_lock_token(a.rl, &token), DLOCK_ENOTOWNER);
    ASSERT_RC(dlock_lock_acquire(a.rl, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_token(a.rl, &token), DLOCK_OK);
    /* the largest token of the majority that granted it: 18 when master 1 (17 + 1) was in
     * it, as it is unless master 1 answered after three others (a slow machine, e.g.
     * under a sanitizer); the largest of any three of 5 10 18 3 1 is 5, 10 or 18. The
     * majority's counters were raised to it. */
    printf("# counters 4 17 9 0 2: token %llu\n", (unsigned long long)token);
    assert_true(token == 18 || token == 10 || token == 5);
    assert_true(tokens_at(f, (long long)token) >= QUORUM);
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    masters_app_close(&a);
    /* plain members have no tokens */
    masters_app_open(&a, f, N, NAME, NULL, false);
    ASSERT_RC(dlock_lock_acquire(a.rl, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_token(a.rl, &token), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    masters_app_close(&a);
    masters_stop(f, N);
}

/* The fencing round's error path: a won majority whose token cannot be made a floor on a
 * majority is given back whole. Masters 2..4 refuse SET to the client's ACL user (the
 * raise needs it; acquiring and releasing do not), masters 0 and 1 start at 100, and
 * another application holds "rl" on master 4. Every majority that can grant therefore
 * includes master 0 or 1, the token is 101, and only 0 and 1 can confirm it: at most 2
 * of 5 (fewer when the round is decided by the refusals before they answer). */
static void test_an_acquisition_whose_token_a_majority_cannot_take_is_given_back(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    dlock_client *other_client = connect_client(f[4]);
    dlock_lock *other = NULL;
    ASSERT_RC(dlock_lock_new(other_client, NAME, &other), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(other, 60000), DLOCK_OK);
    masters_app a = {.n = N};
    for (int i = 0; i < N; i++) {
        char url[512];
        if (i < 2) {
            assert_int_equal(redis_fixture_int(f[i], "INCRBY redisson_lock_token:{" NAME "} 100"),
                             100);
            snprintf(url, sizeof(url), "%s", redis_fixture_unix_url(f[i]));
        } else {
            redisReply *r = redis_fixture_cmd(f[i], "ACL SETUSER nosets on >pw ~* &* +@all -set");
            assert_non_null(r);
            assert_int_equal(r->type, REDIS_REPLY_STATUS);
            freeReplyObject(r);
            snprintf(url, sizeof(url), "%s?user=nosets&password=pw", redis_fixture_unix_url(f[i]));
        }
        a.c[i] = connect_client_cfg(NULL, (test_client_cfg){.url = url});
        ASSERT_RC(dlock_fencedlock_new(a.c[i], NAME, &a.member[i]), DLOCK_OK);
    }
    ASSERT_RC(dlock_redlock_new(a.member, N, &a.rl), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(a.rl, 0, 10000), DLOCK_ETIMEDOUT);
    printf("# %s\n", dlock_last_error());
    const char *said = strstr(dlock_last_error(), "the token was confirmed by ");
    if (!said)
        fail_msg("last error \"%s\" is not about the token", dlock_last_error());
    unsigned confirmed = N, of = 0;
    assert_int_equal(sscanf(said, "the token was confirmed by %u of %u", &confirmed, &of), 2);
    assert_int_equal(of, N);
    ASSERT_BETWEEN(confirmed, 0, 2);
    /* given back, and never reported held */
    const bool ours[N] = {true, true, true, true, false};
    expect_members_gone(f, ours);
    uint64_t token = 0;
    ASSERT_RC(dlock_lock_token(a.rl, &token), DLOCK_ENOTOWNER);
    int64_t holds = -1;
    ASSERT_RC(dlock_lock_hold_count(a.rl, &holds), DLOCK_OK);
    assert_int_equal(holds, 0);
    for (int i = 2; i < 4; i++) { /* at most the INCR of the acquire, never raised */
        long long t = redis_fixture_int(f[i], "GET redisson_lock_token:{" NAME "}");
        if (t != 1 && t != LLONG_MIN)
            fail_msg("master %d: token counter %lld, expected 1 or none", i, t);
    }
    masters_app_close(&a);
    ASSERT_RC(dlock_lock_release(other), DLOCK_OK);
    dlock_lock_free(other);
    dlock_client_free(other_client);
    masters_stop(f, N);
}

static void test_a_redlock_of_fenced_and_plain_members_is_refused(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    dlock_client *c[N];
    dlock_lock *m[N];
    for (int i = 0; i < N; i++) {
        c[i] = connect_client(f[i]);
        ASSERT_RC(i == 2 ? dlock_lock_new(c[i], NAME, &m[i])
                         : dlock_fencedlock_new(c[i], NAME, &m[i]),
                  DLOCK_OK);
    }
    dlock_lock *rl = (dlock_lock *)&rl; /* not touched on failure */
    ASSERT_RC(dlock_redlock_new(m, N, &rl), DLOCK_EINVAL);
    assert_ptr_equal(rl, (dlock_lock *)&rl);
    assert_non_null(strstr(dlock_last_error(), "fenced"));
    /* the members were not claimed: a MultiLock may still have them (its token is the
     * largest of its fenced members', rising with each since every holder holds all) */
    ASSERT_RC(dlock_multilock_new(m, N, &rl), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(rl, 10000), DLOCK_OK);
    uint64_t t1 = 0, t2 = 0;
    ASSERT_RC(dlock_lock_token(rl, &t1), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(rl), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(rl, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_token(rl, &t2), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(rl), DLOCK_OK);
    assert_true(t1 >= 1 && t2 > t1);
    dlock_lock_free(rl);
    for (int i = 0; i < N; i++) {
        dlock_lock_free(m[i]);
        dlock_client_free(c[i]);
    }
    masters_stop(f, N);
}

/* Tokens must rise from one holder to the next also when their quorums differ: here a
 * contender that keeps winning only masters 0 and 1 (the others being held) drives their
 * counters ahead; holder X then gets all 5, and holder Y, with masters 0 and 1 down, gets
 * 2, 3 and 4. Y's token must exceed X's, or a resource that keeps the highest token seen
 * refuses the legitimate holder (or, the other way round, accepts a stale one). */
static void test_fencing_tokens_of_successive_holders_rise_when_their_quorums_differ(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app x, y;
    masters_app_open(&x, f, N, NAME, NULL, true);
    masters_app_open(&y, f, N, NAME, NULL, true);
    /* masters 2..4 held directly by a third party; x's rounds win only masters 0 and 1 */
    dlock_client *oc[N] = {0};
    dlock_lock *ol[N] = {0};
    for (int i = 2; i < N; i++) {
        oc[i] = connect_client(f[i]);
        ASSERT_RC(dlock_fencedlock_new(oc[i], NAME, &ol[i]), DLOCK_OK);
        ASSERT_RC(dlock_lock_acquire(ol[i], 30000), DLOCK_OK);
    }
    for (int i = 0; i < 5; i++)
        ASSERT_RC(dlock_lock_try_acquire(x.rl, 0, 10000), DLOCK_ETIMEDOUT);
    for (int i = 2; i < N; i++) {
        ASSERT_RC(dlock_lock_release(ol[i]), DLOCK_OK);
        dlock_lock_free(ol[i]);
        dlock_client_free(oc[i]);
    }
    uint64_t tx = 0, ty = 0;
    ASSERT_RC(dlock_lock_acquire(x.rl, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_token(x.rl, &tx), DLOCK_OK);
    /* X's token (the largest its quorum gave) became the counter of at least a quorum of
     * masters while X held them: the members of its quorum were raised to it */
    assert_true(tokens_at(f, (long long)tx) >= QUORUM);
    ASSERT_RC(dlock_lock_release(x.rl), DLOCK_OK);
    assert_int_equal(redis_fixture_kill(f[0]), 0);
    assert_int_equal(redis_fixture_kill(f[1]), 0);
    ASSERT_RC(dlock_lock_try_acquire(y.rl, 5000, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_token(y.rl, &ty), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(y.rl), DLOCK_OK);
    printf("# token of X (all 5 masters) %llu, of Y after it (masters 2..4) %llu\n",
           (unsigned long long)tx, (unsigned long long)ty);
    masters_app_close(&y);
    masters_app_close(&x);
    masters_stop(f, N);
    if (ty <= tx)
        fail_msg("the next holder's token %llu is not above the previous holder's %llu",
                 (unsigned long long)ty, (unsigned long long)tx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_token_is_the_largest_its_majority_gave),
        cmocka_unit_test(test_fencing_tokens_of_successive_holders_rise_when_their_quorums_differ),
        cmocka_unit_test(test_a_redlock_of_fenced_and_plain_members_is_refused),
        cmocka_unit_test(test_an_acquisition_whose_token_a_majority_cannot_take_is_given_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
