/* SPDX-License-Identifier: MIT */
/* test_wait_turns.c — the waiting engine's turns (src/core/engine/wait.c): a message on the waiting
 * channel that the object said, just before it on the turn channel, is the turn of another
 * client's owner wakes none of this client's waiters; a turn of one of its own owners, and a
 * message without a turn, wake as ever, and a turn that names one of its waiters wakes that
 * waiter alone; a turn let pass wakes the waiters turn_ms later when nothing came meanwhile. The
 * turn and the message go out from one script, as release.lua sends them. Helpers:
 * tests/support/wait_helpers.h. Every test starts its own server. */
#include "wait_helpers.h"

/* Long enough that no turn lapses during a test unless the test waits for it. */
#define NO_LAPSE_MS 60000
#define LAPSE_MS 200

static const dlock__wait_ops ops_turns = {
    .attempt = waiter_attempt, .wake_count = wake_one, .done = waiter_done, .turn_ms = NO_LAPSE_MS};
static const dlock__wait_ops ops_turns_lapsing = {
    .attempt = waiter_attempt, .wake_count = wake_one, .done = waiter_done, .turn_ms = LAPSE_MS};

/* ops->named: the turn is the waiter's turn_name. */
static bool named_by_turn_name(const dlock__waiter *w, const char *turn, size_t len) {
    const test_waiter *t = DLOCK__CONTAINER_OF(w, const test_waiter, w);
    return t->turn_name && strlen(t->turn_name) == len && memcmp(t->turn_name, turn, len) == 0;
}

static const dlock__wait_ops ops_turns_named = {.attempt = waiter_attempt,
                                                .wake_count = wake_one,
                                                .done = waiter_done,
                                                .turn_ms = NO_LAPSE_MS,
                                                .named = named_by_turn_name};

#define CHANNEL "t:{turns}:ch"
#define TURN_CHANNEL "t:{turns}:turn"

static dlock_stats stats_of(dlock_client *c) {
    dlock_stats s;
    dlock_stats_init(&s);
    assert_int_equal(dlock_client_stats(c, &s), DLOCK_OK);
    return s;
}

/* Two sleepers of the world's client on CHANNEL, listening for turns on TURN_CHANNEL, both
 * channels confirmed. */
static void two_sleepers(world *w, test_waiter **ws, const dlock__wait_ops *ops) {
    for (int i = 0; i < 2; i++) {
        ws[i] = waiter_reset(i, "t:{turns}", CHANNEL, DLOCK_FOREVER, -1, ops);
        ws[i]->turn_channel = TURN_CHANNEL;
    }
    start_waiters(w->c, ws, 2);
    wait_settled(ws, 2, 2);
    bool ok = false;
    POLL_UNTIL(ok, stats_of(w->c).subscriptions == 2, test_slack_ms(2000));
    assert_true(ok);
}

/* What release.lua does: the turn, then "0", from one script. */
static void release_with_turn(world *w, const char *owner_field) {
    redisReply *r = redis_fixture_cmd(
        w->f, "EVAL %s 2 %s %s %s",
        "redis.call('publish', KEYS[1], ARGV[1]); return redis.call('publish', KEYS[2], '0')",
        TURN_CHANNEL, CHANNEL, owner_field);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, 1); /* the client's one subscriber connection */
    freeReplyObject(r);
}

static void end_waits(world *w, test_waiter **ws) {
    cancel_waiters(w->c, ws, 2);
    bool ok = false;
    POLL_UNTIL(ok, done_calls_of(ws[0]) + done_calls_of(ws[1]) == 2, test_slack_ms(1000));
    assert_true(ok);
}

static void test_a_turn_of_another_clients_owner_lets_the_message_wake_nobody(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *ws[2];
    two_sleepers(w, ws, &ops_turns);
    dlock_stats before = stats_of(w->c);

    release_with_turn(w, "00000000-0000-4000-8000-000000000000:7");
    /* the message let pass is counted when it is read: by then the wake it did not make
     * would have been made */
    bool ok = false;
    POLL_UNTIL(ok, stats_of(w->c).wakes_spared == before.wakes_spared + 1, test_slack_ms(2000));
    assert_true(ok);
    dlock_stats after = stats_of(w->c);
    assert_int_equal(after.wakes, before.wakes);
    assert_int_equal(after.messages, before.messages + 2);
    for (int i = 0; i < 2; i++)
        assert_int_equal(look(ws[i]).woken_attempts, 0);

    /* the next message, without a turn, wakes one as ever */
    redisReply *r = redis_fixture_cmd(w->f, "PUBLISH %s 0", CHANNEL);
    assert_non_null(r);
    freeReplyObject(r);
    POLL_UNTIL(ok, look(ws[0]).woken_attempts == 1, test_slack_ms(2000));
    assert_true(ok);
    assert_int_equal(stats_of(w->c).wakes, before.wakes + 1);
    assert_int_equal(look(ws[1]).woken_attempts, 0);
    end_waits(w, ws);
}

static void test_a_turn_of_one_of_its_own_owners_wakes_as_ever(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *ws[2];
    two_sleepers(w, ws, &ops_turns);
    dlock_stats before = stats_of(w->c);
    char field[DLOCK__OWNER_FIELD_MAX];
    dlock__owner_field(w->c, 42, field);

    release_with_turn(w, field);
    bool ok = false;
    POLL_UNTIL(ok, look(ws[0]).woken_attempts == 1, test_slack_ms(2000));
    assert_true(ok);
    dlock_stats after = stats_of(w->c);
    assert_int_equal(after.wakes, before.wakes + 1);
    assert_int_equal(after.wakes_spared, before.wakes_spared);
    assert_int_equal(look(ws[1]).woken_attempts, 0); /* one wake, the oldest sleeper's */
    end_waits(w, ws);
}

/* The turn names the younger of two sleepers: it alone looks, though a message without a
 * turn would have woken the older. */
static void test_a_turn_that_names_a_waiter_wakes_that_waiter_alone(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    char names[2][DLOCK__OWNER_FIELD_MAX];
    for (int i = 0; i < 2; i++)
        dlock__owner_field(w->c, 100 + (uint64_t)i, names[i]);
    test_waiter *ws[2];
    for (int i = 0; i < 2; i++) {
        ws[i] = waiter_reset(i, "t:{turns}", CHANNEL, DLOCK_FOREVER, -1, &ops_turns_named);
        ws[i]->turn_channel = TURN_CHANNEL;
        ws[i]->turn_name = names[i];
    }
    start_waiters(w->c, ws, 2);
    wait_settled(ws, 2, 2);
    bool ok = false;
    POLL_UNTIL(ok, stats_of(w->c).subscriptions == 2, test_slack_ms(2000));
    assert_true(ok);
    dlock_stats before = stats_of(w->c);

    release_with_turn(w, names[1]);
    POLL_UNTIL(ok, look(ws[1]).woken_attempts == 1, test_slack_ms(2000));
    assert_true(ok);
    wait_settled(ws, 2, 2);
    assert_int_equal(look(ws[0]).woken_attempts, 0);
    dlock_stats after = stats_of(w->c);
    assert_int_equal(after.wakes, before.wakes + 1);
    assert_int_equal(after.wakes_spared, before.wakes_spared);
    end_waits(w, ws);
}

/* Another client's owner whose id merely begins like this client's is not this client's. */
static void test_an_owner_field_is_ours_only_with_our_whole_id_and_a_colon(void **state) {
    world *w = *state;
    char field[DLOCK__OWNER_FIELD_MAX];
    size_t len = dlock__owner_field(w->c, 42, field);
    assert_true(dlock__owner_field_is_ours(w->c, field, len));
    size_t id_len = strlen(dlock_client_id(w->c));
    assert_false(dlock__owner_field_is_ours(w->c, field, id_len));     /* the id alone */
    assert_false(dlock__owner_field_is_ours(w->c, field, id_len - 1)); /* shorter */
    field[id_len] = 'x';
    assert_false(dlock__owner_field_is_ours(w->c, field, len)); /* a longer id */
    field[id_len] = ':';
    field[0] = field[0] == 'f' ? 'e' : 'f';
    assert_false(dlock__owner_field_is_ours(w->c, field, len)); /* another id */
}

/* The named owner never takes its turn: the waiters here look turn_ms after the message
 * they let pass, as that message would have made them. */
static void test_a_turn_let_pass_wakes_the_waiters_once_it_has_lapsed(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    test_waiter *ws[2];
    two_sleepers(w, ws, &ops_turns_lapsing);
    dlock_stats before = stats_of(w->c);

    int64_t sent = test_now_ms();
    release_with_turn(w, "00000000-0000-4000-8000-000000000000:7");
    bool ok = false;
    POLL_UNTIL(ok, look(ws[0]).woken_attempts == 1, test_slack_ms(LAPSE_MS + 2000));
    assert_true(ok);
    pthread_mutex_lock(&mu);
    int64_t attempt_at = ws[0]->attempt_ms[ws[0]->attempts - 1];
    pthread_mutex_unlock(&mu);
    printf("# the turn let pass woke a waiter %lld ms after the release\n",
           (long long)(attempt_at - sent));
    ASSERT_BETWEEN(attempt_at - sent, LAPSE_MS, LAPSE_MS + test_slack_ms(1000));
    dlock_stats after = stats_of(w->c);
    assert_int_equal(after.wakes_spared, before.wakes_spared + 1);
    assert_int_equal(after.wakes, before.wakes + 1); /* the message's wake, made late */
    assert_int_equal(look(ws[1]).woken_attempts, 0); /* it wakes as "0" does: one */
    end_waits(w, ws);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_a_turn_of_another_clients_owner_lets_the_message_wake_nobody, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_turn_of_one_of_its_own_owners_wakes_as_ever, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_turn_that_names_a_waiter_wakes_that_waiter_alone,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_an_owner_field_is_ours_only_with_our_whole_id_and_a_colon, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_turn_let_pass_wakes_the_waiters_once_it_has_lapsed,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
