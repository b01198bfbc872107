/* SPDX-License-Identifier: MIT */
/* test_rwlock_leases.c — the rwlock tests of test_rwlock.c, split from it by concern: reader
 * leases; the watchdog; a reader process killed; force release and the lost signal. Helpers:
 * tests/support/rwlock_helpers.h. Every test starts its own server.
 *
 * It takes about half a minute: Redisson's lease scenario runs on its own clock (holds of
 * 4 s, a writer in at 5 s), and kept or dead readers' leases are shown over whole lease
 * periods, which a loaded machine's late renewal must not lose (LIVE_WATCHDOG_MS). */
#include "rwlock_helpers.h"

/* the watchdog of a client whose holds must outlive the test (test_util.h), and its tick */
#define LIVE_WATCHDOG_MS TEST_WATCHDOG_MS
#define LIVE_TICK_MS (LIVE_WATCHDOG_MS / 3)

/* ---- reader leases ------------------------------------------------------------------------ */

/* Redisson's testReadLockLeaseTimeout: the second hold (3 s in) neither prolongs the first
 * nor outlives its own release. */
static void
test_read_hold_of_4_s_and_a_second_hold_at_3_s_released_let_a_writer_in_at_5_s(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "lease-4s"), *rb = new_rw(b, "lease-4s");
    char field[128], key1[256], key2[256];
    reader_field(a, dlock_thread_owner(), field, sizeof(field));
    timeout_key("lease-4s", field, 1, key1, sizeof(key1));
    timeout_key("lease-4s", field, 2, key2, sizeof(key2));
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(READ(ra), 1000, 4000), DLOCK_OK);
    int64_t first_done = test_now_ms(); /* the first hold runs out by first_done + 4000 */
    test_sleep_ms(3000 - (test_now_ms() - start));
    int64_t second_at = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(READ(ra), 1000, 4000), DLOCK_OK);
    long long pttl_key2 = pttl_of(f, key2), pttl_hash = pttl_of(f, "lease-4s");
    /* 4 s from the second hold (less what passed since it was asked for), not more */
    int64_t since_second = test_now_ms() - second_at + 2; /* 2 ms: clocks of whole ms */
    ASSERT_BETWEEN(pttl_key2, 4000 - since_second, 4000);
    ASSERT_BETWEEN(pttl_hash, 4000 - since_second, 4000);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    assert_int_equal(exists(f, key2), 0);
    /* the hash lives as long as the longest live hold: the first, about 1 s more (still there
     * unless a loaded machine got here after it ran out) */
    pttl_hash = pttl_of(f, "lease-4s");
    long long pttl_key1 = pttl_of(f, key1);
    bool first_surely_live = test_now_ms() - start < 4000;
    ASSERT_BETWEEN(pttl_hash, first_surely_live ? 1 : -2, 1200);
    ASSERT_BETWEEN(pttl_key1, first_surely_live ? 1 : -2, 1200);
    if (test_now_ms() - start < 3700)
        ASSERT_RC(dlock_lock_try_acquire(WRITE(rb), 0, 4000), DLOCK_ETIMEDOUT);
    test_sleep_ms(first_done + 5000 - test_now_ms());
    ASSERT_RC(dlock_lock_try_acquire(WRITE(rb), 0, 4000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(WRITE(rb)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_ELOST); /* its first hold ran out */
    assert_int_equal(live_keys(f), 0);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void
test_reader_whose_lease_ran_out_stops_counting_while_another_reader_renews(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f),
                 *b = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = LIVE_WATCHDOG_MS}),
                 *w = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "one-expires"), *rb = new_rw(b, "one-expires"),
                 *rw = new_rw(w, "one-expires");
    char field_a[128], key_a[256];
    reader_field(a, dlock_thread_owner(), field_a, sizeof(field_a));
    timeout_key("one-expires", field_a, 1, key_a, sizeof(key_a));
    ASSERT_RC(dlock_lock_acquire(READ(ra), 1000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(READ(rb), DLOCK_WATCHDOG), DLOCK_OK);
    bool expired = false;
    POLL_UNTIL(expired, exists(f, key_a) == 0, 1000 + test_prompt_ms());
    assert_true(expired);
    test_sleep_ms(2 * LIVE_TICK_MS); /* more than one renewal of b's hold since */
    assert_int_equal(exists(f, "one-expires"), 1);
    ASSERT_RC(dlock_lock_try_acquire(WRITE(rw), 0, 30000), DLOCK_ETIMEDOUT); /* b reads */
    /* a's field is gone or goes with the next change: it no longer keeps anyone out */
    ASSERT_RC(dlock_lock_release(READ(rb)), DLOCK_OK);
    assert_int_equal(exists(f, "one-expires"), 0);
    ASSERT_RC(dlock_lock_try_acquire(WRITE(rw), 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_ELOST);
    ASSERT_RC(dlock_lock_release(WRITE(rw)), DLOCK_OK);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rb);
    dlock_rwlock_free(rw);
    dlock_client_free(a);
    dlock_client_free(b);
    dlock_client_free(w);
    redis_fixture_stop(f);
}

/* Redisson's testReadLockLeaseTimeoutDiffThreadsWRR, shortened: a write hold with a lease
 * that is never released keeps two readers out until it runs out, then both get in. */
static void test_write_lease_that_runs_out_lets_two_waiting_readers_in(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "write-lease"), *rb = new_rw(b, "write-lease");
    int64_t start = test_now_us(); /* the write lease runs out 1500 ms after this at the soonest */
    ASSERT_RC(dlock_lock_try_acquire(WRITE(ra), 1000, 1500), DLOCK_OK);
    /* each holds long enough that the other, woken by the same lease's end, surely gets in
     * meanwhile on a loaded machine */
    attempt r1 = {.l = READ(rb),
                  .wait_ms = slack_ms(10000),
                  .lease_ms = 30000,
                  .release = true,
                  .hold_ms = slack_ms(500)};
    attempt r2 = r1;
    pthread_t t1 = attempt_start(&r1), t2 = attempt_start(&r2);
    assert_int_equal(pthread_join(t1, NULL), 0);
    assert_int_equal(pthread_join(t2, NULL), 0);
    ASSERT_RC(r1.rc, DLOCK_OK);
    ASSERT_RC(r2.rc, DLOCK_OK);
    ASSERT_RC(r1.release_rc, DLOCK_OK);
    ASSERT_RC(r2.release_rc, DLOCK_OK);
    /* at the lease's end (their hint), not at their deadline of slack_ms(10000); the lower
     * bound leaves 50 ms for Redis's clock, which is not ours */
    ASSERT_BETWEEN((r1.acquired_us - start) / 1000, 1450, 1500 + test_prompt_ms());
    ASSERT_BETWEEN((r2.acquired_us - start) / 1000, 1450, 1500 + test_prompt_ms());
    /* together: each got in before the other released */
    assert_true(r1.acquired_us < r2.finished_us && r2.acquired_us < r1.finished_us);
    ASSERT_RC(dlock_lock_release(WRITE(ra)), DLOCK_ELOST);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- the watchdog ------------------------------------------------------------------------- */

static void test_watchdog_keeps_read_holds_of_two_clients_for_three_periods(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t watchdog_ms = LIVE_WATCHDOG_MS;
    dlock_client *a = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = watchdog_ms}),
                 *b = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = watchdog_ms}),
                 *w = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "kept"), *rb = new_rw(b, "kept"), *rw = new_rw(w, "kept");
    ASSERT_RC(dlock_lock_acquire(READ(ra), DLOCK_WATCHDOG), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(READ(ra), DLOCK_WATCHDOG), DLOCK_OK); /* two holds, two keys */
    ASSERT_RC(dlock_lock_acquire(READ(rb), DLOCK_WATCHDOG), DLOCK_OK);
    char fa[128], fb[128], ka1[256], ka2[256], kb[256];
    reader_field(a, dlock_thread_owner(), fa, sizeof(fa));
    reader_field(b, dlock_thread_owner(), fb, sizeof(fb));
    timeout_key("kept", fa, 1, ka1, sizeof(ka1));
    timeout_key("kept", fa, 2, ka2, sizeof(ka2));
    timeout_key("kept", fb, 1, kb, sizeof(kb));
    int64_t start = test_now_ms();
    long long lowest = watchdog_ms;
    int checks = 0;
    while (test_now_ms() - start < 3 * watchdog_ms + 500) {
        const char *keys[] = {"kept", ka1, ka2, kb};
        for (int i = 0; i < 4; i++) {
            long long pttl = pttl_of(f, keys[i]);
            ASSERT_BETWEEN(pttl, 1, watchdog_ms);
            if (pttl < lowest)
                lowest = pttl;
        }
        ASSERT_RC(dlock_lock_try_acquire(WRITE(rw), 0, 1000), DLOCK_ETIMEDOUT);
        checks++;
        test_sleep_ms(200);
    }
    int64_t held_for = test_now_ms() - start;
    assert_true(held_for >= 3 * watchdog_ms);
    int64_t holds = 0;
    ASSERT_RC(dlock_lock_hold_count(READ(ra), &holds), DLOCK_OK);
    assert_int_equal(holds, 2);
    ASSERT_RC(dlock_lock_hold_count(READ(rb), &holds), DLOCK_OK);
    assert_int_equal(holds, 1);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(rb)), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    printf("# watchdog %lld ms: 3 read holds of 2 clients kept %lld ms, %d checks, lowest PTTL "
           "%lld ms\n",
           (long long)watchdog_ms, (long long)held_for, checks, lowest);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rb);
    dlock_rwlock_free(rw);
    dlock_client_free(a);
    dlock_client_free(b);
    dlock_client_free(w);
    redis_fixture_stop(f);
}

/* ---- a reader process killed with SIGKILL (the zombie case) ------------------------------- */

/* The child: its own client (made after the fork), a watchdog read hold, then its field on
 * the pipe and sleep until killed. Any failure writes "E" and exits. */
static _Noreturn void reader_child(const char *url, const char *name, int64_t watchdog_ms,
                                   int wfd) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.watchdog_ms = watchdog_ms;
    dlock_client *c = NULL;
    dlock_rwlock *rw = NULL;
    if (dlock_client_new(&o, &c) != DLOCK_OK || dlock_rwlock_new(c, name, &rw) != DLOCK_OK ||
        dlock_lock_acquire(dlock_rwlock_read(rw), DLOCK_WATCHDOG) != DLOCK_OK) {
        (void)!write(wfd, "E", 1);
        test_child_exit(1);
    }
    char field[128];
    int n = snprintf(field, sizeof(field), "%s:%llu", dlock_client_id(c),
                     (unsigned long long)dlock_thread_owner());
    (void)!write(wfd, field, (size_t)n);
    for (;;)
        pause();
}

static pid_t child_pid; /* the child while it runs, for the teardown */

static int kill_reader_child(void **state) {
    (void)state;
    if (child_pid > 0) {
        kill(child_pid, SIGKILL);
        waitpid(child_pid, NULL, 0);
        child_pid = 0;
    }
    return 0;
}

/* Forks the reader child on name and returns its reader field once it holds, after its
 * watchdog renewed its timeout key at least once. */
static void start_reader_child(redis_fixture *f, const char *name, int64_t watchdog_ms, char *field,
                               size_t size, char *key, size_t key_size) {
    int p[2];
    assert_int_equal(pipe(p), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = test_fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        reader_child(redis_fixture_unix_url(f), name, watchdog_ms, p[1]);
    }
    child_pid = pid;
    close(p[1]);
    struct pollfd pfd = {.fd = p[0], .events = POLLIN};
    assert_int_equal(poll(&pfd, 1, (int)slack_ms(10000)), 1);
    ssize_t n = read(p[0], field, size - 1);
    close(p[0]);
    assert_true(n > 0);
    field[n] = '\0';
    if (strcmp(field, "E") == 0)
        fail_msg("the reader child could not take its read hold");
    timeout_key(name, field, 1, key, key_size);
    long long lowest = pttl_of(f, key);
    ASSERT_BETWEEN(lowest, 1, watchdog_ms);
    bool renewed = false;
    for (int64_t until = test_now_ms() + slack_ms(2 * watchdog_ms);
         !renewed && test_now_ms() < until; test_sleep_ms(5)) {
        long long pttl = pttl_of(f, key);
        ASSERT_BETWEEN(pttl, 1, watchdog_ms);
        renewed = pttl > lowest + 100;
        if (pttl < lowest)
            lowest = pttl;
    }
    assert_true(renewed);
}

/* Kills the reader child. *key_left_until: the dead reader's key lives at least until then
 * (its PTTL read just before the kill: a late renewal on a loaded machine lowers it). */
static int64_t kill_child_now(redis_fixture *f, const char *key, int64_t *key_left_until) {
    int64_t asked_at = test_now_ms();
    long long left = pttl_of(f, key);
    assert_true(left > 0);
    *key_left_until = asked_at + left;
    assert_int_equal(kill(child_pid, SIGKILL), 0);
    int64_t killed_at = test_now_ms();
    int status = 0;
    assert_int_equal(waitpid(child_pid, &status, 0), child_pid);
    child_pid = 0;
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    return killed_at;
}

static void
test_dead_clients_read_hold_runs_out_while_a_live_reader_renews_and_the_writer_gets_in_after_it(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t watchdog_ms = LIVE_WATCHDOG_MS; /* the child's, until it is killed */
    char child_field[128], child_key[256];
    start_reader_child(f, "zombie", watchdog_ms, child_field, sizeof(child_field), child_key,
                       sizeof(child_key));
    dlock_client *live = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = LIVE_WATCHDOG_MS}),
                 *w = connect_client(f);
    dlock_rwlock *rl = new_rw(live, "zombie"), *rw = new_rw(w, "zombie");
    ASSERT_RC(dlock_lock_acquire(READ(rl), DLOCK_WATCHDOG), DLOCK_OK);
    int64_t key_left_until = 0;
    int64_t killed_at = kill_child_now(f, child_key, &key_left_until);
    attempt wr = {.l = WRITE(rw), .wait_ms = slack_ms(30000), .lease_ms = 30000, .release = true};
    pthread_t t = attempt_start(&wr);
    /* the dead reader's lease runs out: nobody renews its key, though the hash lives on */
    bool expired = false;
    POLL_UNTIL(expired, exists(f, child_key) == 0, watchdog_ms + test_prompt_ms());
    assert_true(expired);
    int64_t gone_seen_at = test_now_ms();
    int64_t key_gone_ms = gone_seen_at - killed_at;
    /* by its lease, not before: nobody deleted it */
    assert_true(gone_seen_at >= key_left_until - 50); /* Redis's clock is not ours */
    /* the live reader keeps renewing its own hold (three more renewals): the writer waits */
    test_sleep_ms(LIVE_WATCHDOG_MS);
    assert_int_equal(exists(f, "zombie"), 1);
    assert_int_equal(atomic_load(&wr.done), 0);
    int64_t release_start_us = test_now_us();
    ASSERT_RC(dlock_lock_release(READ(rl)), DLOCK_OK);
    int64_t released_us = test_now_us();
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(wr.rc, DLOCK_OK);
    ASSERT_RC(wr.release_rc, DLOCK_OK);
    int64_t latency_us = wr.acquired_us - released_us;
    assert_true(wr.acquired_us >= release_start_us); /* not before the live reader left */
    ASSERT_BETWEEN(latency_us / 1000, -test_prompt_ms(), test_prompt_ms());
    assert_int_equal(live_keys(f), 0);
    printf("# dead reader's key gone %lld ms after SIGKILL (watchdog_ms %lld); writer in %.2f ms "
           "after the live reader released\n",
           (long long)key_gone_ms, (long long)watchdog_ms, (double)latency_us / 1000.0);
    dlock_rwlock_free(rl);
    dlock_rwlock_free(rw);
    dlock_client_free(live);
    dlock_client_free(w);
    redis_fixture_stop(f);
}

static void test_dead_clients_read_hold_keeps_a_writer_out_no_longer_than_its_lease(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t watchdog_ms = LIVE_WATCHDOG_MS; /* the child's, until it is killed */
    char child_field[128], child_key[256];
    start_reader_child(f, "zombie-alone", watchdog_ms, child_field, sizeof(child_field), child_key,
                       sizeof(child_key));
    dlock_client *live = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = LIVE_WATCHDOG_MS}),
                 *w = connect_client(f);
    dlock_rwlock *rl = new_rw(live, "zombie-alone"), *rw = new_rw(w, "zombie-alone");
    /* a live reader renews its own hold for a while, then releases right after the kill */
    ASSERT_RC(dlock_lock_acquire(READ(rl), DLOCK_WATCHDOG), DLOCK_OK);
    test_sleep_ms(600);
    int64_t key_left_until = 0;
    int64_t killed_at = kill_child_now(f, child_key, &key_left_until);
    ASSERT_RC(dlock_lock_release(READ(rl)), DLOCK_OK);
    assert_int_equal(exists(f, "zombie-alone"), 1); /* the dead reader's lease still runs */
    ASSERT_RC(dlock_lock_try_acquire(WRITE(rw), 0, 30000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_try_acquire(WRITE(rw), slack_ms(10000), 30000), DLOCK_OK);
    int64_t in_at = test_now_ms();
    int64_t took = in_at - killed_at;
    /* not before the dead reader's lease ran out, and by then (its hint), not at the
     * writer's deadline */
    assert_true(in_at >= key_left_until - 50); /* Redis's clock is not ours */
    ASSERT_BETWEEN(took, 0, watchdog_ms + test_prompt_ms());
    char dump[512];
    hash_dump_sorted(f, "zombie-alone", dump, sizeof(dump));
    assert_null(strstr(dump, child_field)); /* the dead reader was purged */
    ASSERT_RC(dlock_lock_release(WRITE(rw)), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    printf("# reader killed, the writer got in %lld ms later (watchdog_ms %lld)\n", (long long)took,
           (long long)watchdog_ms);
    dlock_rwlock_free(rl);
    dlock_rwlock_free(rw);
    dlock_client_free(live);
    dlock_client_free(w);
    redis_fixture_stop(f);
}

/* ---- force release and the lost signal ---------------------------------------------------- */

/* Redisson's testForceUnlock, and the holder is told: its watchdog finds its hold gone. */
static void
test_force_release_of_each_half_frees_only_its_mode_and_the_holder_is_told(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = LIVE_WATCHDOG_MS}),
                 *b = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "forced"), *rb = new_rw(b, "forced");
    ASSERT_RC(dlock_lock_on_lost(READ(ra), record_lost, NULL), DLOCK_OK);
    ASSERT_RC(dlock_lock_on_lost(WRITE(ra), record_lost, NULL), DLOCK_OK);
    dlock_lock *halves[2] = {READ(ra), WRITE(ra)};
    for (int h = 0; h < 2; h++) {
        lost_reset();
        ASSERT_RC(dlock_lock_acquire(halves[h], DLOCK_WATCHDOG), DLOCK_OK);
        bool was_locked = true;
        /* the other half's force release leaves it alone */
        ASSERT_RC(dlock_lock_force_release(h ? READ(rb) : WRITE(rb), &was_locked), DLOCK_OK);
        assert_false(was_locked);
        expect_locked(rb, h == 0, h == 1);
        ASSERT_RC(dlock_lock_force_release(h ? WRITE(rb) : READ(rb), &was_locked), DLOCK_OK);
        assert_true(was_locked);
        expect_locked(rb, false, false);
        assert_int_equal(exists(f, "forced"), 0);
        bool told = false;
        POLL_UNTIL(told, lost_calls() > 0, LIVE_TICK_MS + test_prompt_ms());
        assert_true(told);
        lost_record lost = lost_get();
        int reason = lost.reason;
        dlock_lock *which = lost.lock;
        ASSERT_RC(reason, DLOCK_ELOST);
        assert_ptr_equal(which, halves[h]);
        ASSERT_RC(dlock_lock_release(halves[h]), DLOCK_ELOST);
        ASSERT_RC(dlock_lock_release(halves[h]), DLOCK_ENOTOWNER);
        assert_int_equal(lost_calls(), 1);
        ASSERT_RC(dlock_lock_force_release(READ(rb), &was_locked), DLOCK_OK);
        assert_false(was_locked);
    }
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void test_force_release_of_the_read_half_wakes_a_waiting_writer(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *w = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "forced-wake"), *rw = new_rw(w, "forced-wake");
    ASSERT_RC(dlock_lock_acquire(READ(ra), 30000), DLOCK_OK);
    attempt wr = {.l = WRITE(rw), .wait_ms = slack_ms(10000), .lease_ms = 30000, .release = true};
    pthread_t t = start_and_let_it_sleep(f, "redisson_rwlock:{forced-wake}", 1, &wr);
    bool was_locked = false;
    int64_t force_start_us = test_now_us();
    ASSERT_RC(dlock_lock_force_release(READ(ra), &was_locked), DLOCK_OK);
    int64_t forced_us = test_now_us();
    assert_true(was_locked);
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(wr.rc, DLOCK_OK);
    ASSERT_RC(wr.release_rc, DLOCK_OK);
    /* the reader's lease is 30 s, the writer's hint: only the force release's message lets
     * it in within test_prompt_ms() */
    assert_true(wr.acquired_us >= force_start_us); /* not before the force release */
    ASSERT_BETWEEN((wr.acquired_us - forced_us) / 1000, -test_prompt_ms(), test_prompt_ms());
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_ELOST);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rw);
    dlock_client_free(a);
    dlock_client_free(w);
    redis_fixture_stop(f);
}

static void test_read_hash_deleted_behind_the_readers_fires_each_lost_callback_once(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = LIVE_WATCHDOG_MS});
    dlock_rwlock *ra = new_rw(a, "deleted");
    ASSERT_RC(dlock_lock_on_lost(READ(ra), record_lost, NULL), DLOCK_OK);
    lost_reset();
    ASSERT_RC(dlock_lock_acquire(READ(ra), DLOCK_WATCHDOG), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(READ(ra), DLOCK_WATCHDOG), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "DEL deleted"), 1);
    bool told = false;
    POLL_UNTIL(told, lost_calls() > 0, LIVE_TICK_MS + test_prompt_ms());
    assert_true(told);
    test_sleep_ms(2 * LIVE_TICK_MS); /* more renewal ticks: still one call */
    assert_int_equal(lost_calls(), 1);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_ELOST);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_ELOST);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_ENOTOWNER);
    dlock_rwlock_free(ra);
    dlock_client_free(a);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_read_hold_of_4_s_and_a_second_hold_at_3_s_released_let_a_writer_in_at_5_s),
        cmocka_unit_test(
            test_reader_whose_lease_ran_out_stops_counting_while_another_reader_renews),
        cmocka_unit_test(test_write_lease_that_runs_out_lets_two_waiting_readers_in),
        cmocka_unit_test(test_watchdog_keeps_read_holds_of_two_clients_for_three_periods),
        cmocka_unit_test_teardown(
            test_dead_clients_read_hold_runs_out_while_a_live_reader_renews_and_the_writer_gets_in_after_it,
            kill_reader_child),
        cmocka_unit_test_teardown(
            test_dead_clients_read_hold_keeps_a_writer_out_no_longer_than_its_lease,
            kill_reader_child),
        cmocka_unit_test(
            test_force_release_of_each_half_frees_only_its_mode_and_the_holder_is_told),
        cmocka_unit_test(test_force_release_of_the_read_half_wakes_a_waiting_writer),
        cmocka_unit_test(test_read_hash_deleted_behind_the_readers_fires_each_lost_callback_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
