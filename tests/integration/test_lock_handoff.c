/* SPDX-License-Identifier: MIT */
/* test_lock_handoff.c — the reentrant lock's hand-off (src/lock/acquire.lua): a waiter passed
 * over claims the next turn in the marker {N}:handoff, newcomers are refused while it names
 * another owner even when the lock is free, the waiter takes the lock on the next release
 * and the marker goes; a waiter that dies holds nobody back past the marker's lifetime; the
 * lock hash stays Redisson's. Every test starts its own server. */
#include <limits.h>

#include "kill_helpers.h"
#include "lock_helpers.h"

#define MARKER_MS 100 /* reentrant.c's HANDOFF_MARKER_MS */

/* The marker's value, or NULL; the caller frees it. */
static char *marker_of(redis_fixture *f, const char *marker) {
    return redis_fixture_str(f, "GET %s", marker);
}

/* Polls until the marker exists (a waiter claimed the next turn) and returns its value;
 * fails the test after a generous bound. */
static char *marker_claimed(redis_fixture *f, const char *marker) {
    for (int64_t until = test_now_ms() + slack_ms(3000); test_now_ms() < until; test_sleep_ms(2)) {
        char *owner = marker_of(f, marker);
        if (owner)
            return owner;
    }
    fail_msg("no waiter claimed the next turn in %s", marker);
    return NULL;
}

typedef struct waiter {
    dlock_lock *l;
    int64_t wait_ms;
    uint64_t owner;
    blocking_call call;
} waiter;

static int wait_for_lock(void *arg) {
    waiter *w = arg;
    w->owner = dlock_thread_owner();
    return dlock_lock_try_acquire(w->l, w->wait_ms, 30000);
}

/* The wait, then the release on the same thread (the same owner). */
static int wait_then_release(void *arg) {
    waiter *w = arg;
    int rc = wait_for_lock(w);
    return rc == DLOCK_OK ? dlock_lock_release(w->l) : rc;
}

/* ---- the claim and the refused newcomer -------------------------------------------------- */

/* The claim, the refused newcomer and the turn taken, on a lock or a fenced lock (whose
 * token still rises: 1 for the holder, 2 for the waiter). */
static void promised_turn(bool fenced) {
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f);
    dlock_lock *la = fenced ? new_fenced(a, "promised") : new_lock(a, "promised");
    dlock_lock *lb = fenced ? new_fenced(b, "promised") : new_lock(b, "promised");
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    char holder[128];
    owner_field(a, dlock_thread_owner(), holder, sizeof(holder));

    /* b waits; its second busy attempt (after its subscription) claims the next turn */
    waiter w = {.l = lb, .wait_ms = slack_ms(10000)};
    blocking_call_start_asleep(&w.call, wait_for_lock, &w, f,
                               (asleep_sign){"redisson_lock__channel:{promised}", 1, 2, NULL});
    char *claimed = marker_claimed(f, "{promised}:handoff");
    assert_true(strncmp(claimed, dlock_client_id(b), 36) == 0);
    ASSERT_BETWEEN(pttl_of(f, "{promised}:handoff"), 1, MARKER_MS);
    /* the lock hash is Redisson's, untouched by the claim */
    char dump[256], expected[256];
    hash_dump(f, "promised", dump, sizeof(dump));
    snprintf(expected, sizeof(expected), "%s=1;", holder);
    assert_string_equal(dump, expected);

    /* the lock freed without a message (b is not woken): a's newcomer acquire is refused.
     * (The marker is made to outlive a slow machine: its lifetime is not this test's.) */
    assert_int_equal(redis_fixture_int(f, "PEXPIRE {promised}:handoff 60000"), 1);
    assert_int_equal(redis_fixture_int(f, "DEL promised"), 1);
    ASSERT_RC(dlock_lock_try_acquire(la, 0, 30000), DLOCK_ETIMEDOUT);
    assert_int_equal(redis_fixture_int(f, "EXISTS promised"), 0);
    assert_false(blocking_call_returned(&w.call));

    /* the release's message wakes b, which takes its turn; the marker goes with it */
    assert_int_equal(redis_fixture_int(f, "PUBLISH redisson_lock__channel:{promised} 0"), 1);
    ASSERT_RC(blocking_call_join(&w.call), DLOCK_OK);
    char waiter_field[128];
    owner_field(b, w.owner, waiter_field, sizeof(waiter_field));
    assert_string_equal(claimed, waiter_field);
    hash_dump(f, "promised", dump, sizeof(dump));
    snprintf(expected, sizeof(expected), "%s=1;", waiter_field);
    assert_string_equal(dump, expected);
    assert_int_equal(redis_fixture_int(f, "EXISTS {promised}:handoff"), 0);
    assert_int_equal(redis_fixture_int(f, "GET redisson_lock_token:{promised}"),
                     fenced ? 2 : LLONG_MIN);
    free(claimed);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void
test_a_free_lock_promised_to_a_waiter_refuses_newcomers_until_it_takes_it(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    promised_turn(false);
}

static void test_a_fenced_lock_promised_to_a_waiter_gives_it_the_next_token(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    promised_turn(true);
}

/* ---- a tight loop of another client ------------------------------------------------------ */

typedef struct looper {
    dlock_lock *l;
    atomic_bool stop;
    long long cycles;
    int rc;
} looper;

/* Acquire, release, again at once, until told to stop: a releasing owner that always
 * comes back first, as a tight loop on a fast loopback does. */
static void *loop_acquire_release(void *arg) {
    looper *lp = arg;
    while (!atomic_load(&lp->stop) && lp->rc == DLOCK_OK) {
        lp->rc = dlock_lock_acquire(lp->l, 30000);
        if (lp->rc == DLOCK_OK)
            lp->rc = dlock_lock_release(lp->l);
        lp->cycles++;
    }
    return NULL;
}

static void test_a_waiter_gets_the_lock_against_an_owner_that_reacquires_at_once(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f);
    dlock_lock *la = new_lock(a, "tight"), *lb = new_lock(b, "tight");
    looper lp = {.l = la, .rc = DLOCK_OK};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, loop_acquire_release, &lp), 0);
    for (int round = 0; round < 20; round++) {
        waiter w = {.l = lb, .wait_ms = slack_ms(3000)};
        blocking_call_start(&w.call, wait_then_release, &w);
        ASSERT_RC(blocking_call_join(&w.call), DLOCK_OK);
    }
    atomic_store(&lp.stop, true);
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(lp.rc, DLOCK_OK);
    assert_true(lp.cycles > 0);
    printf("# 20 waits met %lld cycles of the tight loop\n", lp.cycles);
    assert_int_equal(redis_fixture_int(f, "EXISTS tight"), 0);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- a waiter killed --------------------------------------------------------------------- */

/* The child: its own client (made after the fork), then a wait for the lock that never
 * ends; killed while it waits. */
static _Noreturn void waiter_child(const char *url, const char *name) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    dlock_client *c = NULL;
    dlock_lock *l = NULL;
    if (dlock_client_new(&o, &c) != DLOCK_OK || dlock_lock_new(c, name, &l) != DLOCK_OK)
        test_child_exit(1);
    dlock_lock_acquire(l, 30000);
    test_child_exit(1); /* the parent holds the lock until the child is killed */
}

static void test_a_killed_waiter_holds_nobody_back_past_the_markers_lifetime(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *c = connect_client(f);
    dlock_lock *la = new_lock(a, "dead-waiter"), *lc = new_lock(c, "dead-waiter");
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    pid_t pid = fork_child();
    if (pid == 0)
        waiter_child(redis_fixture_unix_url(f), "dead-waiter");
    free(marker_claimed(f, "{dead-waiter}:handoff"));
    assert_int_equal(kill(pid, SIGKILL), 0);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    child_forget(pid);

    /* promised to the dead for no longer than the marker's lifetime */
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    int64_t released_at = test_now_ms();
    long long left = pttl_of(f, "{dead-waiter}:handoff");
    assert_true(left == -2 || (left >= 0 && left <= MARKER_MS));
    ASSERT_RC(dlock_lock_try_acquire(lc, slack_ms(2000), 30000), DLOCK_OK);
    int64_t took = test_now_ms() - released_at;
    ASSERT_BETWEEN(took, 0, MARKER_MS + slack_ms(200));
    printf("# the lock taken %lld ms after its release (the marker had %lld ms left)\n",
           (long long)took, left);
    ASSERT_RC(dlock_lock_release(lc), DLOCK_OK);
    dlock_lock_free(la);
    dlock_lock_free(lc);
    dlock_client_free(a);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- a waiter that does not wait --------------------------------------------------------- */

static void test_a_try_without_waiting_never_claims_a_turn(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f);
    dlock_lock *la = new_lock(a, "no-claim"), *lb = new_lock(b, "no-claim");
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    for (int i = 0; i < 5; i++)
        ASSERT_RC(dlock_lock_try_acquire(lb, 0, 30000), DLOCK_ETIMEDOUT);
    assert_int_equal(redis_fixture_int(f, "EXISTS {no-claim}:handoff"), 0);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(lb, 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(lb), DLOCK_OK);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* A waiter that claimed the next turn and then gave up takes its claim back: the lock it
 * leaves free is anybody's at once, not refused for the marker's lifetime. */
static void test_a_waiter_that_gave_up_takes_its_claim_back(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f);
    dlock_lock *la = new_lock(a, "left"), *lb = new_lock(b, "left");
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    waiter w = {.l = lb, .wait_ms = 60000};
    blocking_call_start(&w.call, wait_for_lock, &w);
    free(marker_claimed(f, "{left}:handoff"));
    /* the wait ends without the lock: freeing its handle cancels it */
    dlock_lock_free(lb);
    ASSERT_RC(blocking_call_join(&w.call), DLOCK_ECANCELED);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    /* another owner of the same client: its try follows the taking back on b's connection
     * (commands leave in order), well within the marker's 100 ms */
    dlock_lock *other = new_lock(b, "left");
    ASSERT_RC(dlock_lock_try_acquire(other, 0, 30000), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS {left}:handoff"), 0);
    ASSERT_RC(dlock_lock_release(other), DLOCK_OK);
    dlock_lock_free(other);
    dlock_lock_free(la);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- a marker of another type ------------------------------------------------------------ */

static void test_a_marker_of_another_type_is_refused_and_changes_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_lock *la = new_lock(a, "typed");
    assert_int_equal(redis_fixture_int(f, "HSET {typed}:handoff x 1"), 1);
    char *before = db_state(f);
    ASSERT_WRONGTYPE(dlock_lock_try_acquire(la, 0, 30000));
    char *after = db_state(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
    dlock_lock_free(la);
    dlock_client_free(a);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_free_lock_promised_to_a_waiter_refuses_newcomers_until_it_takes_it),
        cmocka_unit_test(test_a_fenced_lock_promised_to_a_waiter_gives_it_the_next_token),
        cmocka_unit_test(test_a_waiter_gets_the_lock_against_an_owner_that_reacquires_at_once),
        cmocka_unit_test_teardown(test_a_killed_waiter_holds_nobody_back_past_the_markers_lifetime,
                                  kill_children),
        cmocka_unit_test(test_a_try_without_waiting_never_claims_a_turn),
        cmocka_unit_test(test_a_waiter_that_gave_up_takes_its_claim_back),
        cmocka_unit_test(test_a_marker_of_another_type_is_refused_and_changes_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
