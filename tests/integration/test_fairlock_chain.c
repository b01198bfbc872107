/* SPDX-License-Identifier: MIT */
/* test_fairlock_chain.c — Redisson's chained scores in redisson_lock_timeout:{N} when the
 * first in line takes the fair lock: everyone behind it moves REDISSON_WAIT (5 minutes)
 * closer, as a Redisson acquisition moves them; a member that is not in line keeps its score;
 * and the commands the acquisition runs do not grow with the line (up to 128 members the
 * sorted set is a listpack, where a ZSCORE and a ZINCRBY per waiter made each hand-off cost
 * O(waiters^2): 64 waiters, 2x the hand-off time); a release, which reads only the front of
 * the line, still drops a dead waiter at its back. Helpers: tests/support/fairlock_helpers.h.
 * The test starts its own server. */
#include "fairlock_helpers.h"

#define CHAIN_WAITERS 40
#define REDISSON_WAIT_MS 300000LL
#define LIVE_FOR_MS 60000LL

/* field joins the back of the line of "chain" with Redisson's score, and dlock's deadline
 * unless deadline is -1 (a Redisson client's waiter). */
static void join_line(redis_fixture *f, const char *field, long long score, long long deadline) {
    freeReplyObject(redis_fixture_cmd(f, "RPUSH redisson_lock_queue:{chain} %s", field));
    freeReplyObject(
        redis_fixture_cmd(f, "ZADD redisson_lock_timeout:{chain} %lld %s", score, field));
    if (deadline >= 0)
        freeReplyObject(redis_fixture_cmd(f, "ZADD {chain}:fair_waiters %lld %s", deadline, field));
}

/* The sorted-set commands the server ran so far that read or write one member's score. */
static long long member_score_commands(redis_fixture *f) {
    return command_calls(f, "zscore") + command_calls(f, "zincrby") + command_calls(f, "zadd");
}

static void
test_first_in_line_takes_it_and_everyone_behind_moves_redisson_wait_closer(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_fair(c, "chain");
    char me[FIELD_MAX];
    owner_field(c, dlock_thread_owner(), me, sizeof(me));
    /* the line as fair.lua writes it: this thread first, then CHAIN_WAITERS live dlock
     * waiters and a Redisson client's waiter, each REDISSON_WAIT after the one before; one
     * member of the sorted set is in no line */
    long long now = server_now_ms(f);
    join_line(f, me, now + REDISSON_WAIT_MS, now + LIVE_FOR_MS);
    char field[CHAIN_WAITERS][32];
    for (int i = 0; i < CHAIN_WAITERS; i++) {
        snprintf(field[i], sizeof(field[i]), "w:%d", i);
        join_line(f, field[i], now + REDISSON_WAIT_MS * (i + 2), now + LIVE_FOR_MS);
    }
    const long long redisson_score = now + REDISSON_WAIT_MS * (CHAIN_WAITERS + 2);
    join_line(f, "redisson:1", redisson_score, -1);
    freeReplyObject(redis_fixture_cmd(f, "ZADD redisson_lock_timeout:{chain} 12345 stray:1"));

    long long commands_before = member_score_commands(f);
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 30000), DLOCK_OK);
    long long commands = member_score_commands(f) - commands_before;

    for (int i = 0; i < CHAIN_WAITERS; i++) {
        assert_int_equal(redisson_score_of(f, "chain", field[i]), now + REDISSON_WAIT_MS * (i + 1));
        assert_int_equal(deadline_of(f, "chain", field[i]), now + LIVE_FOR_MS); /* untouched */
    }
    assert_int_equal(redisson_score_of(f, "chain", "redisson:1"),
                     redisson_score - REDISSON_WAIT_MS);
    assert_int_equal(redisson_score_of(f, "chain", "stray:1"), 12345);
    assert_int_equal(redisson_score_of(f, "chain", me), -1);
    assert_int_equal(deadline_of(f, "chain", me), -1);
    assert_int_equal(queue_len(f, "chain"), CHAIN_WAITERS + 1);
    /* one ZSCORE (is the first a dlock waiter?) and the set written back once; per waiter
     * it was a ZSCORE and a ZINCRBY (83 here) */
    if (commands > 3)
        fail_msg("the acquisition ran %lld ZSCORE/ZINCRBY/ZADD for a line of %d", commands,
                 CHAIN_WAITERS + 2);
    printf("# %lld ZSCORE/ZINCRBY/ZADD for a line of %d\n", commands, CHAIN_WAITERS + 2);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* A release looks at the front of the line only (the first waiter to wake), yet still drops
 * a dead dlock waiter wherever it stands: here the last of a long line. */
static void test_release_drops_a_dead_waiter_at_the_back_of_a_long_line(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_fair(c, "chain");
    ASSERT_RC(dlock_lock_acquire(l, 30000), DLOCK_OK);
    long long now = server_now_ms(f);
    char field[CHAIN_WAITERS][32];
    for (int i = 0; i < CHAIN_WAITERS; i++) {
        snprintf(field[i], sizeof(field[i]), "w:%d", i);
        bool last = i == CHAIN_WAITERS - 1;
        join_line(f, field[i], now + REDISSON_WAIT_MS * (i + 2),
                  last ? now - 1 : now + LIVE_FOR_MS);
    }
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(queue_len(f, "chain"), CHAIN_WAITERS - 1);
    assert_int_equal(redisson_score_of(f, "chain", field[CHAIN_WAITERS - 1]), -1);
    assert_int_equal(deadline_of(f, "chain", field[CHAIN_WAITERS - 1]), -1);
    assert_int_equal(deadline_of(f, "chain", field[CHAIN_WAITERS - 2]), now + LIVE_FOR_MS);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_first_in_line_takes_it_and_everyone_behind_moves_redisson_wait_closer),
        cmocka_unit_test(test_release_drops_a_dead_waiter_at_the_back_of_a_long_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
