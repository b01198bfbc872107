/* SPDX-License-Identifier: MIT */
/* test_lock_leases.c — the lock tests of test_lock.c, split from it by concern: ttl and leases; a
 * holder process killed; hand-off and no polling; lost leases; force release. Helpers:
 * tests/support/lock_helpers.h. Every test starts its own server.
 *
 * It takes 20..30 s: a lease the watchdog keeps, a killed holder's lease running out and a
 * lost lease's "no second report" are shown over whole lease periods, and a period that a
 * loaded machine's late renewal does not lose is seconds long (TEST_WATCHDOG_MS). */
#include "lock_helpers.h"

/* ---- ttl and leases ---------------------------------------------------------------------- */

static void test_ttl_is_minus_2_when_not_locked(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "ttl-free");
    int64_t ttl = 0;
    ASSERT_RC(dlock_lock_ttl(l, &ttl), DLOCK_OK);
    assert_int_equal(ttl, -2);
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    ASSERT_RC(dlock_lock_ttl(l, &ttl), DLOCK_OK);
    assert_int_equal(ttl, -2);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_ttl_follows_an_explicit_lease(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "ttl-lease");
    int64_t asked_at = test_now_ms();
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    int64_t ttl = 0;
    ASSERT_RC(dlock_lock_ttl(l, &ttl), DLOCK_OK);
    long long pttl = pttl_of(f, "ttl-lease");
    /* less only by what passed since the acquire was asked for (a loaded machine may take
     * a while), and 2 ms for two clocks that count whole ms */
    int64_t since = test_now_ms() - asked_at + 2;
    ASSERT_BETWEEN(ttl, 10000 - since, 10000);
    ASSERT_BETWEEN(pttl, 10000 - since, 10000);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_ttl_follows_watchdog_ms_with_the_watchdog(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = 7000});
    dlock_lock *l = new_lock(c, "ttl-watchdog");
    int64_t asked_at = test_now_ms();
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    int64_t ttl = 0;
    ASSERT_RC(dlock_lock_ttl(l, &ttl), DLOCK_OK);
    /* as above; a renewal may come between: up to 7000 */
    int64_t since = test_now_ms() - asked_at + 2;
    ASSERT_BETWEEN(ttl, 7000 - since, 7000);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void
test_ttl_is_minus_1_for_a_lock_without_expiry_and_its_waiter_times_out_on_time(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "no-expiry");
    /* a holder (e.g. another library) that set no lease */
    freeReplyObject(redis_fixture_cmd(f, "HSET no-expiry someone-else:1 1"));
    int64_t ttl = 0;
    ASSERT_RC(dlock_lock_ttl(l, &ttl), DLOCK_OK);
    assert_int_equal(ttl, -1);
    /* no hint from a lease that never ends: the waiter sleeps until its deadline */
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(l, 300, 10000), DLOCK_ETIMEDOUT);
    ASSERT_BETWEEN(test_now_ms() - start, 280, 300 + test_prompt_ms());
    assert_int_equal(redis_fixture_int(f, "HGET no-expiry someone-else:1"), 1);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_reentrant_acquire_resets_the_ttl_to_its_lease(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "ttl-reset");
    int64_t ttl = 0;
    ASSERT_RC(dlock_lock_acquire(l, 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_ttl(l, &ttl), DLOCK_OK);
    ASSERT_BETWEEN(ttl, 19000, 20000);
    /* shorter: the TTL goes down to the new lease, it is not the larger of the two */
    ASSERT_RC(dlock_lock_acquire(l, 3000), DLOCK_OK);
    ASSERT_RC(dlock_lock_ttl(l, &ttl), DLOCK_OK);
    ASSERT_BETWEEN(ttl, 2000, 3000);
    /* longer again */
    ASSERT_RC(dlock_lock_acquire(l, 15000), DLOCK_OK);
    ASSERT_RC(dlock_lock_ttl(l, &ttl), DLOCK_OK);
    ASSERT_BETWEEN(ttl, 14000, 15000);
    for (int i = 0; i < 3; i++)
        ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void
test_explicit_lease_expiry_lets_another_client_in_and_the_first_release_is_elost(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_lock(a, "short-lease");
    dlock_lock *lb = new_lock(b, "short-lease");
    int64_t start = test_now_ms(); /* the lease runs out 300 ms after this at the soonest */
    ASSERT_RC(dlock_lock_acquire(la, 300), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(lb, TEST_SLOW_MS, 30000), DLOCK_OK);
    int64_t took = test_now_ms() - start;
    /* when the lease ran out (its TTL is b's hint; 50 ms: Redis's clock is not ours), not at
     * b's deadline */
    ASSERT_BETWEEN(took, 250, 300 + test_prompt_ms());
    char field[128], want[256], dump[512];
    owner_field(b, dlock_thread_owner(), field, sizeof(field));
    snprintf(want, sizeof(want), "%s=1;", field);
    hash_dump(f, "short-lease", dump, sizeof(dump));
    assert_string_equal(dump, want);
    /* nobody released: the first owner's hold ran out, and its release says so, once */
    ASSERT_RC(dlock_lock_release(la), DLOCK_ELOST);
    ASSERT_RC(dlock_lock_release(la), DLOCK_ENOTOWNER);
    hash_dump(f, "short-lease", dump, sizeof(dump));
    assert_string_equal(dump, want); /* the new holder was not touched */
    ASSERT_RC(dlock_lock_release(lb), DLOCK_OK);
    printf("# lease 300 ms ran out, other client in after %lld ms\n", (long long)took);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void test_watchdog_keeps_the_lock_held_for_three_periods(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = TEST_WATCHDOG_MS});
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_lock(a, "kept");
    dlock_lock *lb = new_lock(b, "kept");
    ASSERT_RC(dlock_lock_acquire(la, DLOCK_WATCHDOG), DLOCK_OK);
    int64_t start = test_now_ms();
    long long min_pttl = TEST_WATCHDOG_MS;
    int checks = 0;
    while (test_now_ms() - start < 3 * TEST_WATCHDOG_MS + 500) {
        long long pttl = pttl_of(f, "kept");
        ASSERT_BETWEEN(pttl, 1, TEST_WATCHDOG_MS);
        if (pttl < min_pttl)
            min_pttl = pttl;
        ASSERT_RC(dlock_lock_try_acquire(lb, 0, 1000), DLOCK_ETIMEDOUT);
        checks++;
        test_sleep_ms(200);
    }
    int64_t held_for = test_now_ms() - start;
    assert_true(held_for >= 3 * TEST_WATCHDOG_MS);
    int64_t count = 0;
    ASSERT_RC(dlock_lock_hold_count(la, &count), DLOCK_OK);
    assert_int_equal(count, 1);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS kept"), 0);
    printf("# watchdog %d ms: held %lld ms, %d checks, lowest PTTL %lld ms\n", TEST_WATCHDOG_MS,
           (long long)held_for, checks, min_pttl);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- a holder process killed with SIGKILL ------------------------------------------------ */

/* The child: its own client (made after the fork), a watchdog hold, then 'A' on the pipe
 * and sleep until killed. Any failure writes 'E' and exits. */
static _Noreturn void holder_child(const char *url, const char *name, int64_t watchdog_ms,
                                   int wfd) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.watchdog_ms = watchdog_ms;
    dlock_client *c = NULL;
    dlock_lock *l = NULL;
    if (dlock_client_new(&o, &c) != DLOCK_OK || dlock_lock_new(c, name, &l) != DLOCK_OK ||
        dlock_lock_acquire(l, DLOCK_WATCHDOG) != DLOCK_OK) {
        (void)!write(wfd, "E", 1);
        test_child_exit(1);
    }
    (void)!write(wfd, "A", 1);
    for (;;)
        pause();
}

static pid_t holder_pid; /* the child while it runs, for the teardown */

static int kill_holder_child(void **state) {
    (void)state;
    if (holder_pid > 0) {
        kill(holder_pid, SIGKILL);
        waitpid(holder_pid, NULL, 0);
        holder_pid = 0;
    }
    return 0;
}

static void test_holder_process_killed_with_sigkill_frees_the_lock_within_its_lease(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t watchdog_ms = TEST_WATCHDOG_MS; /* the child's, until it is killed */
    int p[2];
    assert_int_equal(pipe(p), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = test_fork();
    assert_true(pid >= 0);
    holder_pid = pid;
    if (pid == 0) {
        close(p[0]);
        holder_child(redis_fixture_unix_url(f), "crashed-holder", watchdog_ms, p[1]);
    }
    close(p[1]);
    struct pollfd pfd = {.fd = p[0], .events = POLLIN};
    assert_int_equal(poll(&pfd, 1, (int)slack_ms(10000)), 1);
    char got = 0;
    assert_int_equal(read(p[0], &got, 1), 1);
    close(p[0]);
    if (got != 'A')
        fail_msg("the holder child could not take the lock");
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "crashed-holder");
    /* the child's watchdog renews: its PTTL goes back up at least once */
    long long lowest = pttl_of(f, "crashed-holder");
    ASSERT_BETWEEN(lowest, 1, watchdog_ms);
    bool renewed = false;
    for (int64_t until = test_now_ms() + slack_ms(2 * watchdog_ms);
         !renewed && test_now_ms() < until; test_sleep_ms(5)) {
        long long pttl = pttl_of(f, "crashed-holder");
        ASSERT_BETWEEN(pttl, 1, watchdog_ms);
        renewed = pttl > lowest + 100;
        if (pttl < lowest)
            lowest = pttl;
    }
    assert_true(renewed); /* just renewed: about watchdog_ms left */
    int64_t asked_at = test_now_ms();
    long long left = pttl_of(f, "crashed-holder"); /* less if a renewal is late */
    assert_true(left > 0);
    assert_int_equal(kill(pid, SIGKILL), 0);
    int64_t killed_at = test_now_ms();
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    holder_pid = 0;
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 10000), DLOCK_ETIMEDOUT); /* still its lease */
    ASSERT_RC(dlock_lock_try_acquire(l, slack_ms(10000), 10000), DLOCK_OK);
    int64_t in_at = test_now_ms();
    int64_t took = in_at - killed_at;
    /* not before the dead holder's lease ran out (50 ms: Redis's clock is not ours), and at
     * its end (the waiter's hint), not at the waiter's deadline */
    assert_true(in_at >= asked_at + left - 50);
    ASSERT_BETWEEN(took, 0, watchdog_ms + test_prompt_ms());
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    printf("# holder killed, lock taken %lld ms later (watchdog_ms %lld)\n", (long long)took,
           (long long)watchdog_ms);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- hand-off and no polling ------------------------------------------------------------- */

typedef struct timed_waiter {
    dlock_lock *l;
    int64_t wait_ms;
    int64_t acquired_us;
    blocking_call call;
} timed_waiter;

static int acquire_then_release(void *arg) {
    timed_waiter *w = arg;
    int rc = dlock_lock_try_acquire(w->l, w->wait_ms, 30000);
    w->acquired_us = test_now_us();
    if (rc == DLOCK_OK)
        dlock_lock_release(w->l);
    return rc;
}

/* Starts w on a new thread and returns once it sleeps as a waiter: subscribed, and both
 * of its attempts (the first, and the one after the subscription was confirmed) ran. */
static void start_waiter_and_let_it_sleep(redis_fixture *f, const char *channel, timed_waiter *w) {
    blocking_call_start_asleep(&w->call, acquire_then_release, w, f,
                               (asleep_sign){channel, 1, 2, NULL});
}

static void test_waiter_of_another_client_is_woken_by_the_release(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_lock(a, "handoff");
    dlock_lock *lb = new_lock(b, "handoff");
    const int rounds = 5;
    int64_t worst_us = INT64_MIN, total_us = 0;
    for (int i = 0; i < rounds; i++) {
        ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK); /* no renewals in the way */
        timed_waiter w = {.l = lb, .wait_ms = slack_ms(10000)};
        start_waiter_and_let_it_sleep(f, "redisson_lock__channel:{handoff}", &w);
        int64_t release_start_us = test_now_us();
        ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
        int64_t released_us = test_now_us();
        ASSERT_RC(blocking_call_join(&w.call), DLOCK_OK);
        int64_t latency_us = w.acquired_us - released_us;
        if (latency_us > worst_us)
            worst_us = latency_us;
        total_us += latency_us;
        assert_true(w.acquired_us >= release_start_us); /* not before the release */
        /* a's 30 s lease is b's hint: only the release's message lets b in this soon */
        ASSERT_BETWEEN(latency_us / 1000, -test_prompt_ms(), test_prompt_ms());
    }
    printf("# hand-off release -> waiter's acquire: mean %.2f ms, worst %.2f ms (%d rounds)\n",
           (double)total_us / rounds / 1000.0, (double)worst_us / 1000.0, rounds);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void test_waiter_sends_at_most_7_commands_during_a_1500_ms_wait(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture_opts fo = {.tcp = true};
    redis_fixture *f = NULL;
    assert_int_equal(redis_fixture_start(&fo, &f), 0);
    dlock_client *a = connect_client(f);
    dlock_options o;
    dlock_options_init(&o);
    o.url = redis_fixture_tcp_url(f); /* the waiter is the only client on TCP */
    dlock_client *b = NULL;
    ASSERT_RC(dlock_client_new(&o, &b), DLOCK_OK);
    dlock_lock *la = new_lock(a, "quiet");
    dlock_lock *lb = new_lock(b, "quiet");
    const char *channel = "redisson_lock__channel:{quiet}";
    /* an explicit lease: no renewal in the window; its 60 s PTTL is the waiter's hint */
    ASSERT_RC(dlock_lock_acquire(la, 60000), DLOCK_OK);
    /* a first short wait opens b's subscriber connection, so its handshake is not counted */
    ASSERT_RC(dlock_lock_try_acquire(lb, 100, 1000), DLOCK_ETIMEDOUT);
    bool gone = false;
    POLL_UNTIL(gone, numsub(f, channel) == 0, slack_ms(1000));
    assert_true(gone);

    redisContext *mon = monitor_open(f);
    long long total_before = redis_fixture_info_int(f, "stats", "total_commands_processed");
    long long scripts_before = script_calls(f);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(lb, 1500, 1000), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    ASSERT_BETWEEN(took, 1500, 1500 + test_prompt_ms());
    POLL_UNTIL(gone, numsub(f, channel) == 0, slack_ms(1000)); /* the UNSUBSCRIBE landed */
    assert_true(gone);
    long long scripts = script_calls(f) - scripts_before;
    long long total = redis_fixture_info_int(f, "stats", "total_commands_processed") - total_before;
    freeReplyObject(redis_fixture_cmd(f, "ECHO %s", "end-of-window"));
    char names[512];
    int waiter = monitor_count_tcp(mon, "end-of-window", names, sizeof(names));
    redisFree(mon);
    /* expected: 3 attempts (at once, once subscribed, at the deadline), SUBSCRIBE and
     * UNSUBSCRIBE of the lock's channel and of its turn channel. (total_commands_processed
     * also counts what the scripts run inside.) */
    printf("# 1500 ms wait: %d commands from the waiter [%s]; %lld script calls; "
           "total_commands_processed +%lld (fixture's own and in-script commands included)\n",
           waiter, names, scripts, total);
    ASSERT_BETWEEN(scripts, 2, 3);
    ASSERT_BETWEEN(waiter, scripts, 7);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- lost leases ------------------------------------------------------------------------- */

static void
test_key_deleted_behind_the_holder_fires_the_lost_callback_once_and_release_is_elost(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    lost_reset();
    redis_fixture *f = start_server();
    dlock_client *c = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = TEST_WATCHDOG_MS});
    dlock_lock *l = new_lock(c, "deleted");
    int cookie = 0;
    ASSERT_RC(dlock_lock_on_lost(l, record_lost, &cookie), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK); /* two holds, one lease */
    assert_int_equal(redis_fixture_int(f, "DEL deleted"), 1);
    int64_t deleted_at = test_now_ms();
    bool fired = false;
    POLL_UNTIL(fired, lost_calls() >= 1, TEST_WATCHDOG_MS / 3 + test_prompt_ms());
    assert_true(fired);
    lost_record lost = lost_get();
    int64_t after_ms = lost.first_ms - deleted_at;
    assert_ptr_equal(lost.lock, l);
    assert_int_equal(lost.owner, dlock_thread_owner());
    assert_int_equal(lost.reason, DLOCK_ELOST);
    assert_ptr_equal(lost.arg, &cookie);
    /* found gone by the next renewal (DLOCK_ELOST), a tick away */
    ASSERT_BETWEEN(after_ms, 0, TEST_WATCHDOG_MS / 3 + test_prompt_ms());
    test_sleep_ms(2 * TEST_WATCHDOG_MS / 3); /* more ticks: no second report */
    assert_int_equal(lost_calls(), 1);
    assert_int_equal(redis_fixture_int(f, "EXISTS deleted"), 0); /* nobody recreated it */

    /* both holds were lost: each release says so, then the owner holds nothing */
    ASSERT_RC(dlock_lock_release(l), DLOCK_ELOST);
    ASSERT_RC(dlock_lock_release(l), DLOCK_ELOST);
    ASSERT_RC(dlock_lock_release(l), DLOCK_ENOTOWNER);

    /* a new hold works and its lease is renewed past watchdog_ms */
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    int64_t count = 0;
    ASSERT_RC(dlock_lock_hold_count(l, &count), DLOCK_OK);
    assert_int_equal(count, 1);
    int64_t start = test_now_ms();
    while (test_now_ms() - start < TEST_WATCHDOG_MS + 500) {
        ASSERT_BETWEEN(pttl_of(f, "deleted"), 1, TEST_WATCHDOG_MS);
        test_sleep_ms(100);
    }
    assert_int_equal(lost_calls(), 1);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS deleted"), 0);
    assert_int_equal(lost_calls(), 1);
    printf("# key deleted: lost callback after %lld ms\n", (long long)after_ms);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_server_restarted_empty_fires_the_lost_callback_and_release_is_elost(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    lost_reset();
    redis_fixture *f = start_server();
    dlock_client *c = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = TEST_WATCHDOG_MS});
    dlock_lock *l = new_lock(c, "restarted");
    ASSERT_RC(dlock_lock_on_lost(l, record_lost, NULL), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    assert_int_equal(redis_fixture_restart(f), 0);
    int64_t restarted_at = test_now_ms();
    assert_int_equal(redis_fixture_int(f, "EXISTS restarted"), 0);
    bool fired = false;
    POLL_UNTIL(fired, lost_calls() >= 1, TEST_WATCHDOG_MS + test_prompt_ms());
    assert_true(fired);
    lost_record lost = lost_get();
    int64_t after_ms = lost.first_ms - restarted_at;
    int reason = lost.reason;
    assert_ptr_equal(lost.lock, l);
    assert_int_equal(lost.owner, dlock_thread_owner());
    /* ELOST when a renewal found it gone; ECONN if none could be confirmed in time */
    assert_true(reason == DLOCK_ELOST || reason == DLOCK_ECONN);
    ASSERT_RC(dlock_lock_release(l), DLOCK_ELOST);
    ASSERT_RC(dlock_lock_release(l), DLOCK_ENOTOWNER);
    assert_int_equal(lost_calls(), 1);
    /* the client works on the new server */
    ASSERT_RC(dlock_lock_acquire(l, 5000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    printf("# restart: lost callback (%s) after %lld ms\n", dlock_err_name(reason),
           (long long)after_ms);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_force_release_by_another_client_fires_the_holders_lost_callback(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    lost_reset();
    redis_fixture *f = start_server();
    dlock_client *a = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = TEST_WATCHDOG_MS});
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_lock(a, "forced");
    dlock_lock *lb = new_lock(b, "forced");
    ASSERT_RC(dlock_lock_on_lost(la, record_lost, NULL), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(la, DLOCK_WATCHDOG), DLOCK_OK);
    bool was_locked = false;
    ASSERT_RC(dlock_lock_force_release(lb, &was_locked), DLOCK_OK);
    int64_t forced_at = test_now_ms();
    assert_true(was_locked);
    bool fired = false;
    POLL_UNTIL(fired, lost_calls() >= 1, TEST_WATCHDOG_MS / 3 + test_prompt_ms());
    assert_true(fired);
    lost_record lost = lost_get();
    int64_t after_ms = lost.first_ms - forced_at;
    assert_ptr_equal(lost.lock, la);
    assert_int_equal(lost.owner, dlock_thread_owner());
    assert_int_equal(lost.reason, DLOCK_ELOST);
    ASSERT_BETWEEN(after_ms, 0, TEST_WATCHDOG_MS / 3 + test_prompt_ms());
    ASSERT_RC(dlock_lock_release(la), DLOCK_ELOST);
    assert_int_equal(lost_calls(), 1);
    printf("# force-released: holder's lost callback after %lld ms\n", (long long)after_ms);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- force release ----------------------------------------------------------------------- */

static void test_force_release_says_whether_the_lock_was_held(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "force-flag");
    bool was_locked = true;
    ASSERT_RC(dlock_lock_force_release(l, &was_locked), DLOCK_OK);
    assert_false(was_locked);
    ASSERT_RC(dlock_lock_acquire(l, 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_force_release(l, &was_locked), DLOCK_OK);
    assert_true(was_locked);
    assert_int_equal(redis_fixture_int(f, "EXISTS force-flag"), 0);
    ASSERT_RC(dlock_lock_force_release(l, &was_locked), DLOCK_OK);
    assert_false(was_locked);
    ASSERT_RC(dlock_lock_force_release(l, NULL), DLOCK_OK); /* was_locked may be NULL */
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_force_release_wakes_a_waiter_of_another_client(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_lock(a, "force-wake");
    dlock_lock *lb = new_lock(b, "force-wake");
    /* a 60 s lease: only the force release's message can let the waiter in soon */
    ASSERT_RC(dlock_lock_acquire(la, 60000), DLOCK_OK);
    timed_waiter w = {.l = lb, .wait_ms = 30000};
    start_waiter_and_let_it_sleep(f, "redisson_lock__channel:{force-wake}", &w);
    bool was_locked = false;
    int64_t force_start_us = test_now_us();
    ASSERT_RC(dlock_lock_force_release(la, &was_locked), DLOCK_OK);
    int64_t forced_us = test_now_us();
    assert_true(was_locked);
    ASSERT_RC(blocking_call_join(&w.call), DLOCK_OK);
    int64_t latency_ms = (w.acquired_us - forced_us) / 1000;
    assert_true(w.acquired_us >= force_start_us); /* not before the force release */
    ASSERT_BETWEEN(latency_ms, -test_prompt_ms(), test_prompt_ms());
    ASSERT_RC(dlock_lock_release(la), DLOCK_ELOST); /* its hold was taken away */
    printf("# force release -> waiter in: %lld ms\n", (long long)latency_ms);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ttl_is_minus_2_when_not_locked),
        cmocka_unit_test(test_ttl_follows_an_explicit_lease),
        cmocka_unit_test(test_ttl_follows_watchdog_ms_with_the_watchdog),
        cmocka_unit_test(
            test_ttl_is_minus_1_for_a_lock_without_expiry_and_its_waiter_times_out_on_time),
        cmocka_unit_test(test_reentrant_acquire_resets_the_ttl_to_its_lease),
        cmocka_unit_test(
            test_explicit_lease_expiry_lets_another_client_in_and_the_first_release_is_elost),
        cmocka_unit_test(test_watchdog_keeps_the_lock_held_for_three_periods),
        cmocka_unit_test_teardown(
            test_holder_process_killed_with_sigkill_frees_the_lock_within_its_lease,
            kill_holder_child),
        cmocka_unit_test(test_waiter_of_another_client_is_woken_by_the_release),
        cmocka_unit_test(test_waiter_sends_at_most_7_commands_during_a_1500_ms_wait),
        cmocka_unit_test(
            test_key_deleted_behind_the_holder_fires_the_lost_callback_once_and_release_is_elost),
        cmocka_unit_test(test_server_restarted_empty_fires_the_lost_callback_and_release_is_elost),
        cmocka_unit_test(test_force_release_by_another_client_fires_the_holders_lost_callback),
        cmocka_unit_test(test_force_release_says_whether_the_lock_was_held),
        cmocka_unit_test(test_force_release_wakes_a_waiter_of_another_client),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
