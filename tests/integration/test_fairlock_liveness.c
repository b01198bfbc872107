/* SPDX-License-Identifier: MIT */
/* test_fairlock_liveness.c — the fair lock's waiters that stopped refreshing and those that
 * did not: a newcomer never overtakes a waiter whose deadline has not passed; every waiter
 * whose deadline passed is dropped, not only the first; a SIGKILLed waiting process costs
 * the next waiter at most fair_wait_ms; live waiters keep their places while the holder
 * holds for 4 x fair_wait_ms. Split from test_fairlock.c; helpers:
 * tests/support/fairlock_helpers.h. Every test starts its own server. */
#include "fairlock_helpers.h"

/* ---- waiters that stopped refreshing ----------------------------------------------------- */

static void test_newcomer_does_not_overtake_a_waiter_until_its_deadline_passes(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_fair(c, "ghost");
    /* a waiter of another library (a Redisson client's: no entry in {ghost}:fair_waiters),
     * judged by Redisson's rule: first in line with 1500 ms left, while the lock is free */
    const long long ghost_ms = 1500;
    long long now = server_now_ms(f);
    freeReplyObject(redis_fixture_cmd(f, "RPUSH redisson_lock_queue:{ghost} ghost-client:1"));
    freeReplyObject(redis_fixture_cmd(f, "ZADD redisson_lock_timeout:{ghost} %lld ghost-client:1",
                                      now + ghost_ms));
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 30000), DLOCK_ETIMEDOUT); /* no overtaking */
    char q[512];
    bool ok = false;
    POLL_UNTIL(ok, (queue_dump(f, "ghost", q, sizeof(q)), strcmp(q, "ghost-client:1,") == 0),
               slack_ms(500));
    if (!ok)
        fail_msg("queue [%s], expected only the ghost", q);
    /* a patient acquire gets it when the ghost's deadline passes: its hint is that
     * deadline, no message is needed */
    ASSERT_RC(dlock_lock_try_acquire(l, slack_ms(10000), 30000), DLOCK_OK);
    int64_t took = test_now_ms() - start;
    ASSERT_BETWEEN(took, ghost_ms - 100, ghost_ms + slack_ms(500));
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_queue:{ghost}"), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_timeout:{ghost}"), 0);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    printf("# ghost waiter with %lld ms left: acquired after %lld ms\n", ghost_ms, (long long)took);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_every_waiter_whose_deadline_passed_is_dropped_not_only_the_first(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_fair(a, "expired");
    dlock_lock *lb = new_fair(b, "expired");
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    /* three dlock waiters as fair.lua writes them: Redisson's chained scores, each 5 minutes
     * after the one before, and dlock's own deadlines, by which x keeps its place for a
     * minute while y (second) and z (last) are past theirs */
    long long now = server_now_ms(f);
    freeReplyObject(redis_fixture_cmd(f, "RPUSH redisson_lock_queue:{expired} x:1 y:1 z:1"));
    freeReplyObject(redis_fixture_cmd(f,
                                      "ZADD redisson_lock_timeout:{expired} %lld x:1 %lld y:1 "
                                      "%lld z:1",
                                      now + 330000, now + 630000, now + 930000));
    freeReplyObject(redis_fixture_cmd(f, "ZADD {expired}:fair_waiters %lld x:1 %lld y:1 %lld z:1",
                                      now + 60000, now - 1, now - 5000));
    /* any script call drops them: here a newcomer's single attempt */
    ASSERT_RC(dlock_lock_try_acquire(lb, 0, 30000), DLOCK_ETIMEDOUT);
    char q[512];
    bool ok = false;
    POLL_UNTIL(ok, (queue_dump(f, "expired", q, sizeof(q)), strcmp(q, "x:1,") == 0), slack_ms(500));
    if (!ok)
        fail_msg("queue [%s], expected [x:1,]", q);
    redisReply *r = redis_fixture_cmd(f, "ZRANGE redisson_lock_timeout:{expired} 0 -1");
    assert_true(r && r->type == REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 1);
    assert_string_equal(r->element[0]->str, "x:1");
    freeReplyObject(r);
    r = redis_fixture_cmd(f, "ZRANGE {expired}:fair_waiters 0 -1");
    assert_true(r && r->type == REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 1);
    assert_string_equal(r->element[0]->str, "x:1");
    freeReplyObject(r);
    /* the holder's release drops nobody alive */
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    queue_dump(f, "expired", q, sizeof(q));
    assert_string_equal(q, "x:1,");
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* The child: its own client (made after the fork, with fair_wait_ms), 'C' on the pipe, then
 * on 'G' from the parent an acquire that waits until it is killed. */
static _Noreturn void waiting_child(const char *url, const char *name, int64_t fair_wait_ms,
                                    int wfd, int rfd) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.fair_wait_ms = fair_wait_ms;
    dlock_client *c = NULL;
    dlock_lock *l = NULL;
    if (dlock_client_new(&o, &c) != DLOCK_OK || dlock_fairlock_new(c, name, &l) != DLOCK_OK) {
        (void)!write(wfd, "E", 1);
        test_child_exit(1);
    }
    (void)!write(wfd, "C", 1);
    char go = 0;
    if (read(rfd, &go, 1) != 1 || go != 'G')
        test_child_exit(1);
    dlock_lock_acquire(l, 30000); /* killed while it waits */
    (void)!write(wfd, "A", 1);    /* it must not get here */
    for (;;)
        pause();
}

static pid_t child_pid; /* the child while it runs, for the teardown */

static int kill_child(void **state) {
    (void)state;
    if (child_pid > 0) {
        kill(child_pid, SIGKILL);
        waitpid(child_pid, NULL, 0);
        child_pid = 0;
    }
    return 0;
}

static void
test_sigkilled_waiting_process_delays_the_next_waiter_by_at_most_fair_wait_ms(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t fair_wait = 2000;
    int up[2], down[2];
    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(down), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = test_fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        waiting_child(redis_fixture_unix_url(f), "dead-waiter", fair_wait, up[1], down[0]);
    }
    child_pid = pid;
    close(up[1]);
    close(down[0]);
    struct pollfd pfd = {.fd = up[0], .events = POLLIN};
    assert_int_equal(poll(&pfd, 1, (int)slack_ms(10000)), 1);
    char got = 0;
    assert_int_equal(read(up[0], &got, 1), 1);
    if (got != 'C')
        fail_msg("the child could not make its client");

    dlock_client *a = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_client *b = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_lock *la = new_fair(a, "dead-waiter");
    dlock_lock *lb = new_fair(b, "dead-waiter");
    atomic_store(&turns, 0);
    ASSERT_RC(dlock_lock_acquire(la, 60000), DLOCK_OK);
    assert_int_equal(write(down[1], "G", 1), 1);
    bool ok = false;
    POLL_UNTIL(ok, queue_len(f, "dead-waiter") == 1, slack_ms(5000));
    assert_true(ok); /* the child waits, first in line */
    waiter w = {.c = b, .l = lb, .wait_ms = slack_ms(30000)};
    pthread_t t = start_sleeping_waiter(f, "dead-waiter", &w);
    redisReply *r = redis_fixture_cmd(f, "LINDEX redisson_lock_queue:{dead-waiter} 0");
    assert_true(r && r->type == REDIS_REPLY_STRING);
    char child_field[FIELD_MAX];
    snprintf(child_field, sizeof(child_field), "%s", r->str);
    freeReplyObject(r);
    assert_string_not_equal(child_field, w.field);
    /* let the child refresh a few times: alive, it keeps its place */
    test_sleep_ms(fair_wait);
    char q[1024], want[1024];
    snprintf(want, sizeof(want), "%s,%s,", child_field, w.field);
    queue_dump(f, "dead-waiter", q, sizeof(q));
    assert_string_equal(q, want);

    assert_int_equal(kill(pid, SIGKILL), 0);
    int64_t killed_at = test_now_ms();
    long long left_ms = deadline_of(f, "dead-waiter", child_field) - server_now_ms(f);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    child_pid = 0;
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    ASSERT_BETWEEN(left_ms, 0, fair_wait);
    /* the release wakes the dead child, not us: we get in when its deadline passes */
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(w.rc, DLOCK_OK);
    int64_t took = w.returned_ms - killed_at;
    ASSERT_BETWEEN(took, left_ms - 100, left_ms + slack_ms(600));
    ASSERT_BETWEEN(took, 0, fair_wait + slack_ms(1500));
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_queue:{dead-waiter}"), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_timeout:{dead-waiter}"), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS {dead-waiter}:fair_waiters"), 0);
    printf("# waiter killed %lld ms before its deadline; the next one got the lock %lld ms "
           "after the kill (fair_wait_ms %lld)\n",
           left_ms, (long long)took, (long long)fair_wait);
    close(up[0]);
    close(down[1]);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void
test_live_waiters_keep_their_places_while_the_holder_holds_4_times_fair_wait_ms(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t fair_wait = 1000, watchdog = 1500;
    dlock_client *a = connect_client_cfg(
        f, (test_client_cfg){.fair_wait_ms = fair_wait, .watchdog_ms = watchdog});
    dlock_client *b = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_client *c = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_client *d = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait});
    dlock_lock *la = new_fair(a, "long-hold");
    dlock_lock *lb = new_fair(b, "long-hold");
    dlock_lock *lc = new_fair(c, "long-hold");
    dlock_lock *ld = new_fair(d, "long-hold");
    atomic_store(&turns, 0);
    /* the watchdog keeps it: the waiters' hint is never the end of a lease */
    ASSERT_RC(dlock_lock_acquire(la, DLOCK_WATCHDOG), DLOCK_OK);
    waiter first = {.c = b, .l = lb, .wait_ms = DLOCK_FOREVER};
    waiter second = {.c = c, .l = lc, .wait_ms = DLOCK_FOREVER};
    pthread_t t1 = start_sleeping_waiter(f, "long-hold", &first);
    pthread_t t2 = start_sleeping_waiter(f, "long-hold", &second);
    char want[1024], q[1024];
    snprintf(want, sizeof(want), "%s,%s,", first.field, second.field);
    long long scripts_before = script_calls(f);
    long long last_deadline = deadline_of(f, "long-hold", first.field);
    int refreshes = 0, checks = 0;
    long long least_left = fair_wait;
    int64_t start = test_now_ms();
    while (test_now_ms() - start < 4 * fair_wait) {
        queue_dump(f, "long-hold", q, sizeof(q));
        if (strcmp(q, want) != 0)
            fail_msg("after %lld ms the queue is [%s], expected [%s]",
                     (long long)(test_now_ms() - start), q, want);
        long long now = server_now_ms(f);
        long long d1 = deadline_of(f, "long-hold", first.field);
        long long d2 = deadline_of(f, "long-hold", second.field);
        if (d1 - now < least_left)
            least_left = d1 - now;
        if (d2 - now < least_left)
            least_left = d2 - now;
        if (d1 != last_deadline)
            refreshes++;
        last_deadline = d1;
        assert_true(d1 > now && d2 > now);
        ASSERT_BETWEEN(redis_fixture_int(f, "PTTL long-hold"), 1, watchdog);
        checks++;
        test_sleep_ms(50);
    }
    long long scripts = script_calls(f) - scripts_before;
    int64_t held_ms = test_now_ms() - start;
    /* refreshed every third of fair_wait: about 12 times in 4 x fair_wait, no more */
    ASSERT_BETWEEN(refreshes, 8, 14);
    /* both waiters' refreshes, and the holder's watchdog renewals (a script too, every
     * watchdog / 3 = 500 ms) */
    ASSERT_BETWEEN(scripts, 2 * 8 + 6, 2 * 14 + 10);
    /* a newcomer queues behind them */
    waiter third = {.c = d, .l = ld, .wait_ms = DLOCK_FOREVER};
    pthread_t t3 = start_queued_waiter(f, "long-hold", &third);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    assert_int_equal(pthread_join(t1, NULL), 0);
    assert_int_equal(pthread_join(t2, NULL), 0);
    assert_int_equal(pthread_join(t3, NULL), 0);
    ASSERT_RC(first.rc, DLOCK_OK);
    ASSERT_RC(second.rc, DLOCK_OK);
    ASSERT_RC(third.rc, DLOCK_OK);
    assert_int_equal(first.turn, 1);
    assert_int_equal(second.turn, 2);
    assert_int_equal(third.turn, 3);
    printf("# held %lld ms (fair_wait_ms %lld): %d checks, first waiter refreshed %d times, "
           "%lld script calls by both, least deadline left %lld ms\n",
           (long long)held_ms, (long long)fair_wait, checks, refreshes, scripts, least_left);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_lock_free(lc);
    dlock_lock_free(ld);
    dlock_client_free(a);
    dlock_client_free(b);
    dlock_client_free(c);
    dlock_client_free(d);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_newcomer_does_not_overtake_a_waiter_until_its_deadline_passes),
        cmocka_unit_test(test_every_waiter_whose_deadline_passed_is_dropped_not_only_the_first),
        cmocka_unit_test_teardown(
            test_sigkilled_waiting_process_delays_the_next_waiter_by_at_most_fair_wait_ms,
            kill_child),
        cmocka_unit_test(
            test_live_waiters_keep_their_places_while_the_holder_holds_4_times_fair_wait_ms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
