/* test_redlock.c — the RedLock of src/multilock/multilock.c (dlock_redlock_new), blocking
 * face, against five real redis-servers, one client (or one per process) on each: the
 * members are locks of one name, "rl", on five independent masters.
 *
 * What is proven: with 5 masters up acquire takes every member and release frees them;
 * with 2 stopped it still succeeds on the other 3, quickly; with 3 stopped it fails in a
 * bounded time (the per-member answer budget, not the clients' command give-up) and leaves
 * nothing held on the 2 live ones; a minority taken when the quorum is missed is given
 * back; two RedLocks on the same names exclude each other; one paused master costs at most
 * the answer budget, not the wait, and its late acquisition gives itself back; a lock
 * whose validity ran out while it was being acquired is never reported held (a lease
 * shorter than the round trip never succeeds); ttl is the remaining validity (lease less
 * the drift); the watchdog extends every member and the composite is lost only when fewer
 * than a quorum remain; reentrant holds taken on different quorums are all given back;
 * fenced members: the token is the largest token of the granting majority, tokens of
 * successive holders rise when their majorities differ, and a RedLock mixing fenced and
 * plain members is refused; ownership per thread; the mutual-exclusion checker across four
 * processes on fenced members while the masters are paused one after another (no overlap,
 * exact count, every holder's token above the previous holder's); the 5 members are asked
 * at once (all 5 requests on the wire before any reply, behind proxies that hold replies).
 * The acquire latency is measured in bench/ (dlock-bench redlock_acquire).
 *
 * Every test starts its own servers. Records that a callback on a client's loop thread
 * writes live in static storage. Handles are freed composite first, then members, then
 * clients. */
#include <limits.h>
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
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core_call.h"
#include "dlock.h"
#include "fault_proxy.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60
#define N 5
#define QUORUM 3
#define NAME "rl"

/* ---- helpers ----------------------------------------------------------------------------- */

/* The drift RedLock allows for a lease (dlock/multilock.h): lease / 100 + 2 ms. */
static int64_t drift_of(int64_t lease_ms) {
    return lease_ms / 100 + 2;
}

static long long exists_on(redis_fixture *f) {
    return redis_fixture_int(f, "EXISTS " NAME);
}

/* "rl" keys present over the masters where alive[i] (NULL: all). */
static long long members_present(redis_fixture *f[N], const bool *alive) {
    long long n = 0;
    for (int i = 0; i < N; i++)
        if (!alive || alive[i])
            n += exists_on(f[i]);
    return n;
}

/* The calling thread's hold count in the key's hash for client c (0 if none). */
static long long holds_on(redis_fixture *f, dlock_client *c) {
    char field[128];
    snprintf(field, sizeof(field), "%s:%llu", dlock_client_id(c),
             (unsigned long long)dlock_thread_owner());
    redisReply *r = redis_fixture_cmd(f, "HGET " NAME " %s", field);
    assert_non_null(r);
    long long n = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    freeReplyObject(r);
    return n;
}

/* Polls until every master where alive[i] (NULL: all) has `holds` holds of the calling
 * thread through a's client on it. A quorum call returns at the quorum: the other members
 * may still be answering. */
static void expect_holds(redis_fixture *f[N], const masters_app *a, const bool *alive,
                         long long holds) {
    for (int i = 0; i < N; i++) {
        if (alive && !alive[i])
            continue;
        bool ok = false;
        POLL_UNTIL(ok, holds_on(f[i], a->c[i]) == holds, slack_ms(2000));
        if (!ok)
            fail_msg("master %d: %lld holds, expected %lld", i, holds_on(f[i], a->c[i]), holds);
    }
}

/* Polls until no "rl" key is left on the masters where alive[i] (NULL: all). */
static void expect_members_gone(redis_fixture *f[N], const bool *alive) {
    bool gone = false;
    POLL_UNTIL(gone, members_present(f, alive) == 0, slack_ms(2000));
    if (!gone)
        fail_msg("%lld member(s) still present", members_present(f, alive));
}

/* The parts of a failed acquisition's detail, "redlock: G of N members, Q needed, validity
 * V ms"; false when the detail says something else. */
static bool parse_round(const char *detail, int *got, long long *validity) {
    size_t g = 0, n = 0, q = 0;
    if (sscanf(detail, "redlock: %zu of %zu members, %zu needed, validity %lld ms", &g, &n, &q,
               validity) != 4)
        return false;
    *got = (int)g;
    return true;
}

/* ---- all masters up ---------------------------------------------------------------------- */

static void test_acquire_with_5_masters_up_takes_every_member_and_release_frees_them(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    masters_app_open(&a, f, N, NAME, NULL, false);
    bool flag = true;
    int64_t v = 0;
    ASSERT_RC(dlock_lock_is_locked(a.rl, &flag), DLOCK_OK);
    assert_false(flag);
    ASSERT_RC(dlock_lock_ttl(a.rl, &v), DLOCK_OK);
    assert_int_equal(v, -2);
    ASSERT_RC(dlock_lock_try_acquire(a.rl, 0, 20000), DLOCK_OK);
    expect_holds(f, &a, NULL, 1);
    for (int i = 0; i < N; i++)
        ASSERT_BETWEEN(redis_fixture_int(f[i], "PTTL " NAME), 15000, 20000);
    ASSERT_RC(dlock_lock_is_locked(a.rl, &flag), DLOCK_OK);
    assert_true(flag);
    ASSERT_RC(dlock_lock_is_held(a.rl, &flag), DLOCK_OK);
    assert_true(flag);
    ASSERT_RC(dlock_lock_hold_count(a.rl, &v), DLOCK_OK);
    assert_int_equal(v, 1);
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    expect_members_gone(f, NULL);
    ASSERT_RC(dlock_lock_is_held(a.rl, &flag), DLOCK_OK);
    assert_false(flag);
    ASSERT_RC(dlock_lock_ttl(a.rl, &v), DLOCK_OK);
    assert_int_equal(v, -2);
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_ENOTOWNER);
    assert_string_equal(dlock_lock_name(a.rl), "redlock(" NAME ",...)");
    masters_app_close(&a);
    masters_stop(f, N);
}

/* Acquires with lease on members whose clients have watchdog_ms, and checks the ttl right
 * after: at most lease - drift(lease), less only by the time the acquire and ttl took. */
static bool validity_after_acquire_is_right(int64_t watchdog_ms, int64_t lease) {
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    test_client_cfg cfg = {.watchdog_ms = watchdog_ms};
    masters_app_open(&a, f, N, NAME, &cfg, false);
    int64_t ttl = 0;
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_acquire(a.rl, lease), DLOCK_OK);
    ASSERT_RC(dlock_lock_ttl(a.rl, &ttl), DLOCK_OK);
    int64_t since = test_now_ms() - start;
    printf("# watchdog_ms %lld, lease %lld ms: ttl %lld ms, %lld ms after the start of acquire "
           "(drift %lld: expected %lld..%lld)\n",
           (long long)watchdog_ms, (long long)lease, (long long)ttl, (long long)since,
           (long long)drift_of(lease), (long long)(lease - drift_of(lease) - since - 50),
           (long long)(lease - drift_of(lease)));
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    masters_app_close(&a);
    masters_stop(f, N);
    return ttl >= lease - drift_of(lease) - since - slack_ms(50) && ttl <= lease - drift_of(lease);
}

static void test_ttl_is_the_remaining_validity_the_lease_less_the_clock_drift(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    /* the drift is the acquisition's lease's, whatever the clients' watchdog_ms */
    bool short_lease = validity_after_acquire_is_right(30000, 1000);
    bool short_watchdog = validity_after_acquire_is_right(1500, 10000);
    assert_true(short_lease);
    assert_true(short_watchdog);
}

/* ---- stopped masters --------------------------------------------------------------------- */

static void test_acquire_with_2_masters_stopped_succeeds_on_the_other_3(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    /* queries go member by member: short command limits keep them quick with 2 down */
    test_client_cfg cfg = {.timeout_ms = 300, .retry_attempts = 1};
    masters_app_open(&a, f, N, NAME, &cfg, false);
    assert_int_equal(redis_fixture_kill(f[1]), 0);
    assert_int_equal(redis_fixture_kill(f[3]), 0);
    const bool alive[N] = {true, false, true, false, true};
    const int64_t lease = 5000; /* answer budget lease / 10 = 500 ms */
    for (int round = 0; round < 3; round++) {
        int64_t start = test_now_ms();
        ASSERT_RC(dlock_lock_try_acquire(a.rl, 5000, lease), DLOCK_OK);
        int64_t took = test_now_ms() - start;
        ASSERT_BETWEEN(took, 0, slack_ms(900)); /* at most the answer budget, and some */
        expect_holds(f, &a, alive, 1);          /* the 3 alive are the quorum */
        bool held = false;
        int64_t q0 = test_now_ms();
        ASSERT_RC(dlock_lock_is_held(a.rl, &held), DLOCK_OK);
        int64_t q1 = test_now_ms();
        assert_true(held);
        int64_t ttl = 0;
        ASSERT_RC(dlock_lock_ttl(a.rl, &ttl), DLOCK_OK);
        int64_t q2 = test_now_ms();
        ASSERT_BETWEEN(ttl, 1, lease);
        start = test_now_ms();
        ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
        int64_t released = test_now_ms() - start;
        expect_members_gone(f, alive);
        printf("# 2 of 5 stopped: acquired in %lld ms, released in %lld ms; is_held took %lld "
               "ms, ttl %lld ms (said %lld)\n",
               (long long)took, (long long)released, (long long)(q1 - q0), (long long)(q2 - q1),
               (long long)ttl);
    }
    masters_app_close(&a);
    masters_stop(f, N);
}

static void
test_acquire_with_3_masters_stopped_fails_in_bounded_time_and_leaves_nothing_held(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    masters_app_open(&a, f, N, NAME, NULL, false); /* default command limits: 3 s x 4 attempts */
    assert_int_equal(redis_fixture_kill(f[0]), 0);
    assert_int_equal(redis_fixture_kill(f[2]), 0);
    assert_int_equal(redis_fixture_kill(f[4]), 0);
    const bool alive[N] = {false, true, false, true, false};
    const int64_t lease = 10000, wait = 500; /* answer budget 1000 ms */
    for (int round = 0; round < 2; round++) {
        int64_t start = test_now_ms();
        int rc = dlock_lock_try_acquire(a.rl, wait, lease);
        int64_t took = test_now_ms() - start;
        printf("# 3 of 5 stopped: %s after %lld ms (%s)\n", dlock_err_name(rc), (long long)took,
               dlock_last_error());
        if (rc != DLOCK_ETIMEDOUT && rc != DLOCK_ECONN)
            fail_msg("try_acquire with 3 of 5 stopped = %s (%s)", dlock_err_name(rc),
                     dlock_last_error());
        /* the wait, plus at most one answer budget for the round under way */
        ASSERT_BETWEEN(took, wait - 50, wait + 1000 + slack_ms(500));
        /* nothing of ours left on the 2 live masters by the time it returned: their
         * releases were waited for (an application may free its clients right away) */
        assert_int_equal(members_present(f, alive), 0);
    }
    masters_app_close(&a);
    masters_stop(f, N);
}

static void test_a_minority_taken_when_the_quorum_is_missed_is_given_back(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    masters_app_open(&a, f, N, NAME, NULL, false);
    /* another application holds "rl" directly on masters 0, 1 and 2 */
    dlock_client *oc[3];
    dlock_lock *ol[3];
    for (int i = 0; i < 3; i++) {
        oc[i] = connect_client(f[i]);
        ASSERT_RC(dlock_lock_new(oc[i], NAME, &ol[i]), DLOCK_OK);
        ASSERT_RC(dlock_lock_acquire(ol[i], 30000), DLOCK_OK);
    }
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(a.rl, 400, 10000), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    ASSERT_BETWEEN(took, 350, slack_ms(1000));
    /* masters 3 and 4 were ours in every round, and are given back */
    const bool minority[N] = {false, false, false, true, true};
    bool clear = false;
    POLL_UNTIL(clear, members_present(f, minority) == 0, slack_ms(1000));
    assert_true(clear);
    for (int i = 0; i < 3; i++)
        assert_int_equal(holds_on(f[i], a.c[i]), 0);
    /* with master 2 freed, 3 of 5 agree */
    ASSERT_RC(dlock_lock_release(ol[2]), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(a.rl, slack_ms(2000), 10000), DLOCK_OK);
    const bool free_three[N] = {false, false, true, true, true};
    expect_holds(f, &a, free_three, 1); /* exactly a quorum was free */
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    expect_members_gone(f, free_three);
    for (int i = 0; i < 2; i++)
        ASSERT_RC(dlock_lock_release(ol[i]), DLOCK_OK);
    for (int i = 0; i < 3; i++) {
        dlock_lock_free(ol[i]);
        dlock_client_free(oc[i]);
    }
    masters_app_close(&a);
    masters_stop(f, N);
}

static void test_hold_count_and_is_held_of_a_redlock_held_on_3_of_5_count_its_quorum(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    masters_app_open(&a, f, N, NAME, NULL, false);
    /* another application holds "rl" directly on masters 0 and 1 */
    dlock_client *oc[2];
    dlock_lock *ol[2];
    for (int i = 0; i < 2; i++) {
        oc[i] = connect_client(f[i]);
        ASSERT_RC(dlock_lock_new(oc[i], NAME, &ol[i]), DLOCK_OK);
        ASSERT_RC(dlock_lock_acquire(ol[i], 30000), DLOCK_OK);
    }
    ASSERT_RC(dlock_lock_try_acquire(a.rl, 0, 10000), DLOCK_OK); /* masters 2, 3, 4 */
    ASSERT_RC(dlock_lock_try_acquire(a.rl, 0, 10000), DLOCK_OK); /* reentrant */
    bool held = false;
    int64_t count = -1;
    ASSERT_RC(dlock_lock_is_held(a.rl, &held), DLOCK_OK);
    assert_true(held);
    ASSERT_RC(dlock_lock_hold_count(a.rl, &count), DLOCK_OK);
    printf("# held on masters 2..4, twice: hold_count %lld\n", (long long)count);
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    const bool ours[N] = {false, false, true, true, true};
    expect_members_gone(f, ours);
    for (int i = 0; i < 2; i++) {
        ASSERT_RC(dlock_lock_release(ol[i]), DLOCK_OK);
        dlock_lock_free(ol[i]);
        dlock_client_free(oc[i]);
    }
    masters_app_close(&a);
    masters_stop(f, N);
    assert_int_equal(count, 2);
}

/* ---- two applications -------------------------------------------------------------------- */

static void test_two_redlocks_on_the_same_names_exclude_each_other(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a, b;
    masters_app_open(&a, f, N, NAME, NULL, false);
    masters_app_open(&b, f, N, NAME, NULL, false);
    ASSERT_RC(dlock_lock_acquire(a.rl, 30000), DLOCK_OK);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(b.rl, 300, 30000), DLOCK_ETIMEDOUT);
    ASSERT_BETWEEN(test_now_ms() - start, 250, slack_ms(800));
    bool flag = false;
    ASSERT_RC(dlock_lock_is_locked(b.rl, &flag), DLOCK_OK);
    assert_true(flag);
    ASSERT_RC(dlock_lock_is_held(b.rl, &flag), DLOCK_OK);
    assert_false(flag);
    /* a holds a quorum (a member a had not reached yet may have said yes to b first); b
     * gives back whatever it took */
    bool settled = false;
    int a_holds = 0, b_holds = 0;
    int64_t until = test_now_ms() + slack_ms(2000);
    do {
        a_holds = b_holds = 0;
        for (int i = 0; i < N; i++) {
            a_holds += holds_on(f[i], a.c[i]) == 1;
            b_holds += holds_on(f[i], b.c[i]) != 0;
        }
        settled = a_holds >= QUORUM && b_holds == 0;
        if (!settled)
            test_sleep_ms(5);
    } while (!settled && test_now_ms() < until);
    if (!settled)
        fail_msg("a holds %d of %d members, b %d (expected >= %d and 0)", a_holds, N, b_holds,
                 QUORUM);
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(b.rl, 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(a.rl, 0, 30000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_release(b.rl), DLOCK_OK);
    expect_members_gone(f, NULL);
    masters_app_close(&b);
    masters_app_close(&a);
    masters_stop(f, N);
}

typedef struct other_view {
    dlock_lock *rl;
    int release_rc, held_rc, try_rc;
    bool held;
} other_view;

static void *release_and_try_from_other_thread(void *arg) {
    other_view *v = arg;
    v->release_rc = dlock_lock_release(v->rl);
    v->held_rc = dlock_lock_is_held(v->rl, &v->held);
    v->try_rc = dlock_lock_try_acquire(v->rl, 0, 5000);
    return NULL;
}

static void test_another_thread_cannot_release_or_take_it(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    masters_app_open(&a, f, N, NAME, NULL, false);
    ASSERT_RC(dlock_lock_acquire(a.rl, 20000), DLOCK_OK);
    other_view v = {.rl = a.rl, .held = true};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, release_and_try_from_other_thread, &v), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(v.release_rc, DLOCK_ENOTOWNER);
    ASSERT_RC(v.held_rc, DLOCK_OK);
    assert_false(v.held);
    ASSERT_RC(v.try_rc, DLOCK_ETIMEDOUT);
    expect_holds(f, &a, NULL, 1);
    for (int i = 0; i < N; i++)
        assert_int_equal(redis_fixture_int(f[i], "HLEN " NAME), 1);
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    expect_members_gone(f, NULL);
    masters_app_close(&a);
    masters_stop(f, N);
}

/* ---- a paused master, a validity that runs out ------------------------------------------- */

static void test_one_paused_master_costs_at_most_the_answer_budget_not_the_wait(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    masters_app_open(&a, f, N, NAME, NULL, false);
    const int64_t lease = 3000, wait = 10000; /* answer budget 300 ms */
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(a.rl, wait, lease), DLOCK_OK);
    int64_t all_up = test_now_ms() - start;
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);

    assert_int_equal(redis_fixture_pause(f[2]), 0);
    start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(a.rl, wait, lease), DLOCK_OK);
    int64_t one_paused = test_now_ms() - start;
    printf("# lease %lld ms: acquired in %lld ms with 5 up, %lld ms with 1 of 5 paused\n",
           (long long)lease, (long long)all_up, (long long)one_paused);
    ASSERT_BETWEEN(one_paused, 0, slack_ms(900)); /* well under 1 s, far under the wait */
    const bool running[N] = {true, true, false, true, true};
    expect_holds(f, &a, running, 1);
    assert_int_equal(redis_fixture_resume(f[2]), 0);
    /* the paused master ran the acquisition when resumed: it gives itself back */
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    bool clear = false;
    POLL_UNTIL(clear, members_present(f, NULL) == 0, slack_ms(1000));
    assert_true(clear);
    masters_app_close(&a);
    masters_stop(f, N);
}

typedef struct timed_try {
    dlock_lock *rl;
    int64_t wait_ms, lease_ms;
    atomic_llong t0_ms; /* just before the call */
    int rc;
    char detail[256];
} timed_try;

static void *try_once(void *arg) {
    timed_try *t = arg;
    atomic_store(&t->t0_ms, test_now_ms());
    t->rc = dlock_lock_try_acquire(t->rl, t->wait_ms, t->lease_ms);
    snprintf(t->detail, sizeof(t->detail), "%s", dlock_last_error());
    if (t->rc == DLOCK_OK)
        dlock_lock_release(t->rl);
    return NULL;
}

static void
test_a_lock_whose_validity_ran_out_during_acquisition_is_never_reported_held(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    masters_app_open(&a, f, N, NAME, NULL, false);

    /* A lease no longer than the drift leaves no validity at all, however fast Redis is. */
    for (int i = 0; i < 50; i++) {
        int rc = dlock_lock_try_acquire(a.rl, 0, 2);
        if (rc == DLOCK_OK)
            fail_msg("a 2 ms lease (drift 2 ms) was reported held");
        ASSERT_RC(rc, DLOCK_ETIMEDOUT);
    }

    /* A lease shorter than the round trip: 20 ms (validity at most 18 ms), with 3 of the
     * masters paused until 30 ms after the call began. Their answers come within the
     * member answer budget (50 ms) and make a quorum, but too late. */
    const int64_t lease = 20, resume_at = 30;
    int late_quorum = 0;
    /* at least 5 rounds, and on until the case was met (a loaded machine may answer after
     * the budget instead), within a bound */
    for (int round = 0; round < 5 || (late_quorum == 0 && round < 30); round++) {
        for (int i = 0; i < 3; i++)
            assert_int_equal(redis_fixture_pause(f[i]), 0);
        timed_try t = {.rl = a.rl, .wait_ms = 0, .lease_ms = lease};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, try_once, &t), 0);
        bool started = false;
        POLL_UNTIL(started, atomic_load(&t.t0_ms) != 0, slack_ms(2000));
        assert_true(started);
        int64_t left = atomic_load(&t.t0_ms) + resume_at - test_now_ms();
        test_sleep_ms(left);
        for (int i = 0; i < 3; i++)
            assert_int_equal(redis_fixture_resume(f[i]), 0);
        assert_int_equal(pthread_join(th, NULL), 0);
        if (t.rc == DLOCK_OK)
            fail_msg("round %d: held although the quorum answered %lld ms after the start of a "
                     "%lld ms lease",
                     round, (long long)resume_at, (long long)lease);
        ASSERT_RC(t.rc, DLOCK_ETIMEDOUT);
        int got = 0;
        long long validity = 0;
        if (parse_round(t.detail, &got, &validity) && got >= QUORUM && validity <= 0)
            late_quorum++;
        printf("# round %d: %s (%s)\n", round, dlock_err_name(t.rc), t.detail);
        bool clear = false;
        POLL_UNTIL(clear, members_present(f, NULL) == 0, slack_ms(1000));
        assert_true(clear);
    }
    /* the case was really met: a quorum that agreed after the validity was gone */
    if (!test_under_valgrind())
        assert_true(late_quorum >= 1);
    /* and a lease with room to spare still works */
    ASSERT_RC(dlock_lock_try_acquire(a.rl, 0, 5000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    masters_app_close(&a);
    masters_stop(f, N);
}

/* ---- the watchdog and the lost signal ---------------------------------------------------- */

static void
test_the_watchdog_extends_every_member_and_the_composite_is_lost_only_below_a_quorum(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    lost_reset();
    /* renewals every watchdog_ms / 3 must come in time on a loaded machine too */
    const int64_t watchdog_ms = slack_ms(900);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    test_client_cfg cfg = {.watchdog_ms = watchdog_ms};
    masters_app_open(&a, f, N, NAME, &cfg, false);
    ASSERT_RC(dlock_lock_on_lost(a.rl, record_lost, NULL), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(a.rl, DLOCK_WATCHDOG), DLOCK_OK);
    expect_holds(f, &a, NULL, 1); /* the members after the quorum too */
    int64_t start = test_now_ms();
    while (test_now_ms() - start < 3 * watchdog_ms + 200) {
        for (int i = 0; i < N; i++)
            ASSERT_BETWEEN(redis_fixture_int(f[i], "PTTL " NAME), 1, watchdog_ms);
        test_sleep_ms(100);
    }
    int64_t ttl = 0;
    ASSERT_RC(dlock_lock_ttl(a.rl, &ttl), DLOCK_OK);
    ASSERT_BETWEEN(ttl, 1, watchdog_ms);
    /* two members lost: 3 remain, a quorum; the composite is not lost */
    assert_int_equal(redis_fixture_int(f[0], "DEL " NAME), 1);
    assert_int_equal(redis_fixture_int(f[1], "DEL " NAME), 1);
    test_sleep_ms(2 * watchdog_ms);
    assert_int_equal(lost_calls(), 0);
    bool held = false;
    ASSERT_RC(dlock_lock_is_held(a.rl, &held), DLOCK_OK);
    assert_true(held);
    for (int i = 2; i < N; i++)
        ASSERT_BETWEEN(redis_fixture_int(f[i], "PTTL " NAME), 1, watchdog_ms);
    /* a third: fewer than a quorum; lost, once */
    assert_int_equal(redis_fixture_int(f[2], "DEL " NAME), 1);
    bool fired = false;
    POLL_UNTIL(fired, lost_calls() >= 1, slack_ms(3 * watchdog_ms));
    assert_true(fired);
    lost_record lost = lost_get();
    dlock_lock *which = lost.lock;
    uint64_t owner = lost.owner;
    int reason = lost.reason;
    assert_ptr_equal(which, a.rl);
    assert_true(owner == dlock_thread_owner());
    ASSERT_RC(reason, DLOCK_ELOST);
    ASSERT_RC(dlock_lock_is_held(a.rl, &held), DLOCK_OK);
    assert_false(held);
    /* release says so, and still frees the 2 members left */
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_ELOST);
    expect_members_gone(f, NULL);
    assert_int_equal(lost_calls(), 1);
    masters_app_close(&a);
    masters_stop(f, N);
}

/* ---- reentrant holds --------------------------------------------------------------------- */

static void test_reentrant_holds_taken_on_different_quorums_are_all_given_back(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    masters_app a;
    masters_app_open(&a, f, N, NAME, NULL, false);
    ASSERT_RC(dlock_lock_acquire(a.rl, 30000), DLOCK_OK); /* all 5 */
    /* the second hold is taken while master 4 is paused: on masters 0..3 only */
    assert_int_equal(redis_fixture_pause(f[4]), 0);
    ASSERT_RC(dlock_lock_try_acquire(a.rl, 0, 30000), DLOCK_OK);
    assert_int_equal(redis_fixture_resume(f[4]), 0);
    /* (master 4 runs the second acquisition on resume; that late hold gives itself back) */
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(a.rl), DLOCK_OK);
    bool clear = false;
    POLL_UNTIL(clear, members_present(f, NULL) == 0, slack_ms(1000));
    char held[64] = "";
    for (int i = 0; i < N; i++)
        if (exists_on(f[i]))
            snprintf(held + strlen(held), sizeof(held) - strlen(held), " %d(holds %lld)", i,
                     holds_on(f[i], a.c[i]));
    masters_app_close(&a); /* before failing: a later test forks, and children inherit leaks */
    masters_stop(f, N);
    if (!clear)
        fail_msg("after 2 acquires and 2 releases still held on master(s)%s", held);
}

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

/* ---- the checker across processes -------------------------------------------------------- */

#define CHILDREN 4

typedef struct shared_section {
    int64_t enter_us, exit_us;
    uint64_t token;
    int worker;
} shared_section;

/* In a MAP_SHARED mapping, written by the children. */
typedef struct shared_log {
    int inside;     /* __atomic exchange: 1 while a section runs */
    long overlaps;  /* __atomic: enters that found another section running */
    long counter;   /* plain read, pause, plain write: loses updates on overlap */
    long next_slot; /* __atomic */
    long failures;  /* __atomic: calls that did not answer as expected */
    int ready;      /* __atomic: children connected; they start together */
    long contended; /* __atomic: acquisitions that had to wait (over 5 ms) */
    char first_failure[256];
    long cap;
    shared_section log[];
} shared_log;

static _Noreturn void checker_child(redis_fixture *f[N], shared_log *s, int worker, long sections) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dlock_client *c[N] = {0};
    dlock_lock *member[N] = {0}, *rl = NULL;
    int rc = DLOCK_OK;
    const char *what = "setup";
    for (int i = 0; i < N && rc == DLOCK_OK; i++) {
        rc = test_client_new(f[i], NULL, &c[i]);
        if (rc == DLOCK_OK)
            rc = dlock_fencedlock_new(c[i], NAME, &member[i]);
    }
    if (rc == DLOCK_OK)
        rc = dlock_redlock_new(member, N, &rl);
    __atomic_fetch_add(&s->ready, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&s->ready, __ATOMIC_SEQ_CST) < CHILDREN)
        usleep(500);
    for (long k = 0; rc == DLOCK_OK && k < sections; k++) {
        what = "acquire";
        int64_t asked = test_now_ms();
        rc = dlock_lock_try_acquire(rl, 60000, 5000);
        if (rc != DLOCK_OK)
            break;
        if (test_now_ms() - asked > 5)
            __atomic_fetch_add(&s->contended, 1, __ATOMIC_SEQ_CST);
        uint64_t token = 0;
        what = "token";
        rc = dlock_lock_token(rl, &token);
        if (rc != DLOCK_OK)
            break;
        if (__atomic_exchange_n(&s->inside, 1, __ATOMIC_SEQ_CST) != 0)
            __atomic_fetch_add(&s->overlaps, 1, __ATOMIC_SEQ_CST);
        int64_t enter = test_now_us();
        long v = *(volatile long *)&s->counter;
        usleep(3000); /* widen the window a lost update needs, and make the others wait */
        *(volatile long *)&s->counter = v + 1;
        long slot = __atomic_fetch_add(&s->next_slot, 1, __ATOMIC_SEQ_CST);
        int64_t exit_us = test_now_us();
        if (slot < s->cap)
            s->log[slot] = (shared_section){
                .enter_us = enter, .exit_us = exit_us, .token = token, .worker = worker};
        __atomic_store_n(&s->inside, 0, __ATOMIC_SEQ_CST);
        what = "release";
        rc = dlock_lock_release(rl);
        usleep(1000 + 1000 * (useconds_t)((worker * 7 + k * 13) % 5)); /* let the others in */
    }
    if (rc != DLOCK_OK && __atomic_fetch_add(&s->failures, 1, __ATOMIC_SEQ_CST) == 0)
        snprintf(s->first_failure, sizeof(s->first_failure), "worker %d: %s: %s (%s)", worker, what,
                 dlock_err_name(rc), dlock_last_error());
    dlock_lock_free(rl);
    for (int i = 0; i < N; i++)
        dlock_lock_free(member[i]);
    for (int i = 0; i < N; i++)
        dlock_client_free(c[i]);
    test_child_exit(rc == DLOCK_OK ? 0 : 1);
}

static pid_t checker_pids[CHILDREN];

static int kill_checker_children(void **state) {
    (void)state;
    for (int i = 0; i < CHILDREN; i++) {
        if (checker_pids[i] > 0) {
            kill(checker_pids[i], SIGKILL);
            waitpid(checker_pids[i], NULL, 0);
            checker_pids[i] = 0;
        }
    }
    return 0;
}

/* Pauses one master after another for a while, so that successive holders get different
 * majorities (and a paused master's late answers arrive after the round moved on). */
typedef struct pauser {
    redis_fixture **f;
    atomic_bool stop;
    int pauses;
} pauser;

static void *pause_masters(void *arg) {
    pauser *p = arg;
    for (int k = 0; !atomic_load(&p->stop); k = (k + 1) % N) {
        if (redis_fixture_pause(p->f[k]) != 0)
            break;
        test_sleep_ms(120);
        redis_fixture_resume(p->f[k]);
        p->pauses++;
        test_sleep_ms(60);
    }
    return NULL;
}

static int by_enter(const void *a, const void *b) {
    const shared_section *x = a, *y = b;
    return (x->enter_us > y->enter_us) - (x->enter_us < y->enter_us);
}

static void test_the_checker_across_4_processes_sees_no_overlap_the_exact_count_and_rising_tokens(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    long sections = test_scaled(40);
    long total = CHILDREN * sections;
    size_t size = sizeof(shared_log) + (size_t)total * sizeof(shared_section);
    shared_log *s = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(s != MAP_FAILED);
    memset(s, 0, size);
    s->cap = total;
    int64_t start = test_now_ms();
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < CHILDREN; i++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
            checker_child(f, s, i, sections);
        checker_pids[i] = pid;
    }
    pauser p = {.f = f};
    pthread_t pause_thread;
    assert_int_equal(pthread_create(&pause_thread, NULL, pause_masters, &p), 0);
    int failed_children = 0;
    for (int i = 0; i < CHILDREN; i++) {
        int status = 0;
        assert_int_equal(waitpid(checker_pids[i], &status, 0), checker_pids[i]);
        checker_pids[i] = 0;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed_children++;
    }
    atomic_store(&p.stop, true);
    assert_int_equal(pthread_join(pause_thread, NULL), 0);
    int64_t took = test_now_ms() - start;
    if (s->failures > 0 || failed_children > 0)
        fail_msg("%d children failed; %ld failures; first: %s", failed_children, s->failures,
                 s->first_failure);
    assert_int_equal(s->overlaps, 0);
    assert_int_equal(s->counter, total);
    assert_int_equal(s->next_slot, total);
    qsort(s->log, (size_t)total, sizeof(shared_section), by_enter);
    for (long i = 1; i < total; i++) {
        if (s->log[i].enter_us < s->log[i - 1].exit_us)
            fail_msg("sections %ld (worker %d) and %ld (worker %d) overlap", i - 1,
                     s->log[i - 1].worker, i, s->log[i].worker);
        /* the fencing rule across majorities: each holder's token beats the last one's */
        if (s->log[i].token <= s->log[i - 1].token)
            fail_msg("section %ld (worker %d) had token %llu after token %llu of section %ld", i,
                     s->log[i].worker, (unsigned long long)s->log[i].token,
                     (unsigned long long)s->log[i - 1].token, i - 1);
    }
    printf("# %d processes x %ld sections with masters paused in turn (%d pauses): %lld ms, "
           "%ld acquisitions waited, no overlap, counter %ld, tokens rising %llu..%llu\n",
           CHILDREN, sections, p.pauses, (long long)took, s->contended, s->counter,
           (unsigned long long)s->log[0].token, (unsigned long long)s->log[total - 1].token);
    munmap(s, size);
    assert_int_equal(members_present(f, NULL), 0);
    masters_stop(f, N);
}

/* ---- the members are asked at once ------------------------------------------------------ */

typedef struct proxied_try {
    dlock_lock *rl;
    atomic_int rc, release_rc;
    atomic_bool acquired; /* the acquire returned */
} proxied_try;

/* Acquire, then release (the owner is this thread). */
static void *try_through_proxies(void *arg) {
    proxied_try *t = arg;
    int rc = dlock_lock_try_acquire(t->rl, 0, 30000);
    atomic_store(&t->rc, rc);
    atomic_store(&t->acquired, true);
    atomic_store(&t->release_rc, rc == DLOCK_OK ? dlock_lock_release(t->rl) : rc);
    return NULL;
}

/* Masters asked and not yet answered, as the client sees it: the proxy forwarded a
 * request to the server since the baseline and has not delivered a byte back. */
static int asked_unanswered(fault_proxy *px[N], const fault_proxy_stats base[N]) {
    int n = 0;
    for (int i = 0; i < N; i++) {
        fault_proxy_stats now = fault_proxy_stats_get(px[i]);
        n += now.requests_up > base[i].requests_up && now.bytes_down == base[i].bytes_down;
    }
    return n;
}

/* Parallel, shown by what is on the wire rather than by a stopwatch: every master sits
 * behind a proxy that holds its replies 300 ms, and at one moment during the acquire all 5
 * requests have gone out while no reply has come back. Asked one after another, a member
 * would be asked only after the one before it answered: never more than 1 in flight. (The
 * latency is measured in bench/: dlock-bench's redlock_acquire.) */
static void test_the_5_members_are_asked_at_once_not_one_after_another(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    fault_proxy *px[N];
    masters_app a = {.n = N};
    for (int i = 0; i < N; i++) {
        assert_int_equal(fault_proxy_start(redis_fixture_unix_url(f[i]), &px[i]), 0);
        a.c[i] = connect_client_cfg(NULL, (test_client_cfg){.url = fault_proxy_url(px[i])});
        ASSERT_RC(dlock_lock_new(a.c[i], NAME, &a.member[i]), DLOCK_OK);
        ASSERT_RC(dlock_client_ping(a.c[i]), DLOCK_OK); /* connected, scripts loaded: idle */
    }
    ASSERT_RC(dlock_redlock_new(a.member, N, &a.rl), DLOCK_OK);
    fault_proxy_stats base[N];
    for (int i = 0; i < N; i++) {
        fault_proxy_delay_replies(px[i], 300);
        base[i] = fault_proxy_stats_get(px[i]);
    }
    proxied_try t = {.rl = a.rl};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, try_through_proxies, &t), 0);
    int most = 0;
    while (!atomic_load(&t.acquired)) {
        int n = asked_unanswered(px, base);
        if (n > most)
            most = n;
        test_sleep_ms(1);
    }
    assert_int_equal(pthread_join(th, NULL), 0);
    ASSERT_RC(atomic_load(&t.rc), DLOCK_OK); /* 300 ms is within the 1 s answer budget */
    printf("# masters asked and not yet answered at once during the acquire: %d of %d\n", most, N);
    assert_int_equal(most, N);
    ASSERT_RC(atomic_load(&t.release_rc), DLOCK_OK);

    /* the measure can tell: a MultiLock over the same members takes them one after
     * another, and never has more than one asked and unanswered */
    dlock_lock_free(a.rl);
    ASSERT_RC(dlock_multilock_new(a.member, N, &a.rl), DLOCK_OK);
    for (int i = 0; i < N; i++) {
        fault_proxy_delay_replies(px[i], 100);
        base[i] = fault_proxy_stats_get(px[i]);
    }
    proxied_try m = {.rl = a.rl};
    assert_int_equal(pthread_create(&th, NULL, try_through_proxies, &m), 0);
    int most_multi = 0;
    while (!atomic_load(&m.acquired)) {
        int n = asked_unanswered(px, base);
        if (n > most_multi)
            most_multi = n;
        test_sleep_ms(1);
    }
    assert_int_equal(pthread_join(th, NULL), 0);
    ASSERT_RC(atomic_load(&m.rc), DLOCK_OK);
    ASSERT_RC(atomic_load(&m.release_rc), DLOCK_OK);
    printf("# the same for a MultiLock (one member after another): %d\n", most_multi);
    assert_int_equal(most_multi, 1);
    masters_app_close(&a);
    for (int i = 0; i < N; i++)
        fault_proxy_stop(px[i]);
    assert_int_equal(members_present(f, NULL), 0);
    masters_stop(f, N);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acquire_with_5_masters_up_takes_every_member_and_release_frees_them),
        cmocka_unit_test(test_ttl_is_the_remaining_validity_the_lease_less_the_clock_drift),
        cmocka_unit_test(test_acquire_with_2_masters_stopped_succeeds_on_the_other_3),
        cmocka_unit_test(
            test_acquire_with_3_masters_stopped_fails_in_bounded_time_and_leaves_nothing_held),
        cmocka_unit_test(test_a_minority_taken_when_the_quorum_is_missed_is_given_back),
        cmocka_unit_test(test_hold_count_and_is_held_of_a_redlock_held_on_3_of_5_count_its_quorum),
        cmocka_unit_test(test_two_redlocks_on_the_same_names_exclude_each_other),
        cmocka_unit_test(test_another_thread_cannot_release_or_take_it),
        cmocka_unit_test(test_one_paused_master_costs_at_most_the_answer_budget_not_the_wait),
        cmocka_unit_test(
            test_the_watchdog_extends_every_member_and_the_composite_is_lost_only_below_a_quorum),
        cmocka_unit_test(
            test_a_lock_whose_validity_ran_out_during_acquisition_is_never_reported_held),
        cmocka_unit_test(test_reentrant_holds_taken_on_different_quorums_are_all_given_back),
        cmocka_unit_test(test_the_token_is_the_largest_its_majority_gave),
        cmocka_unit_test(test_fencing_tokens_of_successive_holders_rise_when_their_quorums_differ),
        cmocka_unit_test(test_a_redlock_of_fenced_and_plain_members_is_refused),
        cmocka_unit_test(test_an_acquisition_whose_token_a_majority_cannot_take_is_given_back),
        cmocka_unit_test(test_the_5_members_are_asked_at_once_not_one_after_another),
        cmocka_unit_test_teardown(
            test_the_checker_across_4_processes_sees_no_overlap_the_exact_count_and_rising_tokens,
            kill_checker_children),
    };
    const char *filter = getenv("DLOCK_TEST_FILTER");
    if (filter)
        cmocka_set_test_filter(filter);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
