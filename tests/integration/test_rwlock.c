/* SPDX-License-Identifier: MIT */
/* test_rwlock.c — the read-write lock (Redisson RReadWriteLock) of src/rwlock, blocking face
 * (and one async test), against a real redis-server.
 *
 * What is proven: readers share and a writer waits for the last of them; a writer excludes
 * readers and a write release lets every blocked reader in at once (wake all); downgrade
 * (the writer reads, then releases the write) and no upgrade (a reader's write attempt times
 * out); per-hold reader leases, Redisson's lease cases, a reader whose lease ran out not
 * counting while another renews; the layout of REDIS_LAYOUT.md read back (mode, reader and
 * writer fields, one timeout key per read hold, PTTLs, the channel and its "0" / "1"
 * messages, names with a '{'); dlock's writer priority ({N}:rwlock_writers, held-back
 * readers, a writer that gives up or dies); the watchdog keeping read holds of two clients;
 * a SIGKILLed reader process whose hold runs out by its lease while a live reader renews
 * its own (the zombie case Redisson has); hold counts, is_locked and force_release per
 * half, the lost signal, DLOCK_ENOTOWNER; bad input; the async face on a half; a waiting
 * writer canceled by dlock_rwlock_free leaving the line; and that rw.lua applies a resent
 * acquire or release once.
 *
 * Every test starts its own server. Records that a callback on the client's loop thread
 * writes live in static storage, so a failed assert leaves nothing dangling. *
 * This file keeps sharing, wake-ups, downgrade, writer priority, hold counts and ownership;
 * the rest is split by concern: test_rwlock_leases.c (reader leases, the watchdog, a killed
 * reader, force release and the lost signal), test_rwlock_layout.c (the layout, bad input,
 * resends), test_rwlock_async.c (the async face); helpers: tests/support/rwlock_helpers.h.
 */
#include "rwlock_helpers.h"

/* ---- readers share, a writer waits -------------------------------------------------------- */

static void
test_readers_of_two_clients_share_and_a_writer_waits_for_the_last_of_them(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f), *w = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "shared"), *rb = new_rw(b, "shared"), *rw = new_rw(w, "shared");
    ASSERT_RC(dlock_lock_try_acquire(READ(ra), 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(READ(rb), 0, 30000), DLOCK_OK);
    /* a third reader: another thread of a's client */
    ASSERT_RC(try_from_other_thread(READ(ra), 0, true), DLOCK_OK);
    assert_mode(f, "shared", "read");
    assert_int_equal(redis_fixture_int(f, "HLEN shared"), 3); /* mode and two readers */
    ASSERT_RC(dlock_lock_try_acquire(WRITE(rw), 0, 30000), DLOCK_ETIMEDOUT);

    attempt wr = {.l = WRITE(rw), .wait_ms = slack_ms(10000), .lease_ms = 30000, .release = true};
    pthread_t t = start_and_let_it_sleep(f, "redisson_rwlock:{shared}", 1, &wr);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    test_sleep_ms(300); /* one reader left: the writer keeps waiting */
    assert_int_equal(atomic_load(&wr.done), 0);
    int64_t release_start_us = test_now_us();
    ASSERT_RC(dlock_lock_release(READ(rb)), DLOCK_OK);
    int64_t released_us = test_now_us();
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(wr.rc, DLOCK_OK);
    ASSERT_RC(wr.release_rc, DLOCK_OK);
    /* the readers' leases are 30 s, the writer's hint: only the release's message lets it in
     * within test_prompt_ms() */
    int64_t latency_ms = (wr.acquired_us - released_us) / 1000;
    assert_true(wr.acquired_us >= release_start_us); /* not before the last reader left */
    ASSERT_BETWEEN(latency_ms, -test_prompt_ms(), test_prompt_ms());
    printf("# the writer got in %.2f ms after the last reader released\n",
           (double)(wr.acquired_us - released_us) / 1000.0);
    assert_int_equal(exists(f, "shared"), 0);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rb);
    dlock_rwlock_free(rw);
    dlock_client_free(a);
    dlock_client_free(b);
    dlock_client_free(w);
    redis_fixture_stop(f);
}

/* ---- a write release wakes every reader --------------------------------------------------- */

#define WAKE_READERS 10

typedef struct woken_reader {
    dlock_lock *l;
    atomic_int *inside;
    atomic_int *most_inside;
    int rc, release_rc;
    int64_t acquired_us;
} woken_reader;

/* Acquires, then stays inside until every reader is inside (or 5 s passed): proves the
 * readers hold the lock together, not one after another. */
static void *woken_reader_main(void *arg) {
    woken_reader *r = arg;
    r->rc = dlock_lock_try_acquire(r->l, slack_ms(15000), 30000);
    r->acquired_us = test_now_us();
    if (r->rc != DLOCK_OK)
        return NULL;
    int now = atomic_fetch_add(r->inside, 1) + 1;
    int most = atomic_load(r->most_inside);
    while (now > most && !atomic_compare_exchange_weak(r->most_inside, &most, now)) {
    }
    for (int64_t until = test_now_ms() + slack_ms(5000);
         atomic_load(r->most_inside) < WAKE_READERS && test_now_ms() < until;)
        test_sleep_ms(1);
    atomic_fetch_sub(r->inside, 1);
    r->release_rc = dlock_lock_release(r->l);
    return NULL;
}

static void
test_writer_excludes_readers_and_10_blocked_readers_all_enter_within_300_ms_of_the_write_release(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *w = connect_client(f), *b = connect_client(f), *c = connect_client(f);
    dlock_rwlock *rww = new_rw(w, "wake-all"), *rwb = new_rw(b, "wake-all"),
                 *rwc = new_rw(c, "wake-all");
    const int rounds = 3;
    int64_t worst_us = 0, total_us = 0;
    for (int round = 0; round < rounds; round++) {
        ASSERT_RC(dlock_lock_acquire(WRITE(rww), 30000), DLOCK_OK); /* no renewals in the way */
        ASSERT_RC(dlock_lock_try_acquire(READ(rwb), 0, 30000), DLOCK_ETIMEDOUT);
        atomic_int inside = 0, most_inside = 0;
        woken_reader readers[WAKE_READERS];
        pthread_t t[WAKE_READERS];
        long long scripts_before = script_calls(f);
        for (int i = 0; i < WAKE_READERS; i++) {
            /* half on each of two clients: every client's waiters are woken */
            readers[i] = (woken_reader){
                .l = READ(i % 2 ? rwb : rwc), .inside = &inside, .most_inside = &most_inside};
            assert_int_equal(pthread_create(&t[i], NULL, woken_reader_main, &readers[i]), 0);
        }
        wait_until_asleep(f, "redisson_rwlock:{wake-all}", 2, scripts_before, WAKE_READERS);
        assert_int_equal(atomic_load(&inside), 0); /* the writer excludes them */
        ASSERT_RC(dlock_lock_release(WRITE(rww)), DLOCK_OK);
        int64_t released_us = test_now_us();
        int64_t last_us = released_us;
        for (int i = 0; i < WAKE_READERS; i++) {
            assert_int_equal(pthread_join(t[i], NULL), 0);
            ASSERT_RC(readers[i].rc, DLOCK_OK);
            ASSERT_RC(readers[i].release_rc, DLOCK_OK);
            if (readers[i].acquired_us > last_us)
                last_us = readers[i].acquired_us;
        }
        assert_int_equal(atomic_load(&most_inside), WAKE_READERS); /* all inside at once */
        int64_t all_in_us = last_us - released_us;
        /* the writer's 30 s lease is the readers' hint: only the release's message lets them
         * all in within test_prompt_ms() */
        ASSERT_BETWEEN(all_in_us / 1000, 0, test_prompt_ms());
        if (all_in_us > worst_us)
            worst_us = all_in_us;
        total_us += all_in_us;
        assert_int_equal(exists(f, "wake-all"), 0);
    }
    printf("# write release -> all %d blocked readers (2 clients) inside: mean %.2f ms, worst "
           "%.2f ms (%d rounds)\n",
           WAKE_READERS, (double)total_us / rounds / 1000.0, (double)worst_us / 1000.0, rounds);
    dlock_rwlock_free(rww);
    dlock_rwlock_free(rwb);
    dlock_rwlock_free(rwc);
    dlock_client_free(w);
    dlock_client_free(b);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- downgrade, no upgrade ---------------------------------------------------------------- */

static void test_writer_that_reads_then_releases_the_write_hold_leaves_mode_read(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "downgrade"), *rb = new_rw(b, "downgrade");
    ASSERT_RC(dlock_lock_acquire(WRITE(ra), 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(READ(ra), 0, 30000), DLOCK_OK); /* the writer may read */
    assert_mode(f, "downgrade", "write");
    ASSERT_RC(dlock_lock_try_acquire(READ(rb), 0, 30000), DLOCK_ETIMEDOUT);
    ASSERT_RC(try_from_other_thread(READ(ra), 0, true), DLOCK_ETIMEDOUT); /* only the writer */
    bool locked = false;
    ASSERT_RC(dlock_lock_is_locked(WRITE(rb), &locked), DLOCK_OK);
    assert_true(locked);
    ASSERT_RC(dlock_lock_is_locked(READ(rb), &locked), DLOCK_OK);
    assert_false(locked); /* as Redisson: the mode says write */

    ASSERT_RC(dlock_lock_release(WRITE(ra)), DLOCK_OK);
    assert_mode(f, "downgrade", "read");
    char field[128];
    writer_field(a, dlock_thread_owner(), field, sizeof(field));
    assert_int_equal(redis_fixture_int(f, "HEXISTS downgrade %s", field), 0);
    int64_t holds = -1;
    ASSERT_RC(dlock_lock_hold_count(READ(ra), &holds), DLOCK_OK);
    assert_int_equal(holds, 1);
    ASSERT_RC(dlock_lock_is_locked(READ(rb), &locked), DLOCK_OK);
    assert_true(locked);
    ASSERT_RC(dlock_lock_is_locked(WRITE(rb), &locked), DLOCK_OK);
    assert_false(locked);
    /* readers share with the former writer; writers are kept out, the former one too */
    ASSERT_RC(dlock_lock_try_acquire(READ(rb), 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(WRITE(rb), 0, 30000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_try_acquire(WRITE(ra), 0, 30000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(rb)), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    /* and the lock is free for a writer again */
    ASSERT_RC(dlock_lock_try_acquire(WRITE(rb), 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(WRITE(rb)), DLOCK_OK);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void
test_reader_cannot_upgrade_its_write_attempt_times_out_and_it_still_reads(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "no-upgrade"), *rb = new_rw(b, "no-upgrade");
    ASSERT_RC(dlock_lock_acquire(READ(ra), 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(WRITE(ra), 0, 30000), DLOCK_ETIMEDOUT);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(WRITE(ra), 500, 30000), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    ASSERT_BETWEEN(took, 450, slack_ms(1200));
    int64_t holds = -1;
    ASSERT_RC(dlock_lock_hold_count(READ(ra), &holds), DLOCK_OK);
    assert_int_equal(holds, 1);
    ASSERT_RC(dlock_lock_hold_count(WRITE(ra), &holds), DLOCK_OK);
    assert_int_equal(holds, 0);
    assert_mode(f, "no-upgrade", "read");
    /* the attempt left the writers' line when it gave up: new readers are not held back */
    bool gone = false;
    POLL_UNTIL(gone, redis_fixture_int(f, "EXISTS {no-upgrade}:rwlock_writers") == 0,
               slack_ms(1000));
    assert_true(gone);
    ASSERT_RC(dlock_lock_try_acquire(READ(rb), 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(rb)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(WRITE(ra), 0, 30000), DLOCK_OK); /* now it may write */
    ASSERT_RC(dlock_lock_release(WRITE(ra)), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- dlock's writer priority -------------------------------------------------------------- */

static void test_waiting_writer_holds_new_readers_back_and_is_listed_with_a_server_clock_deadline(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t fair_wait_ms = 3000;
    dlock_client *a = connect_client(f),
                 *w = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait_ms}),
                 *n = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "priority"), *rw = new_rw(w, "priority"),
                 *rn = new_rw(n, "priority");
    ASSERT_RC(dlock_lock_acquire(READ(ra), 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(READ(rn), 0, 30000), DLOCK_OK); /* nobody waits yet */
    ASSERT_RC(dlock_lock_release(READ(rn)), DLOCK_OK);

    attempt wr = {.l = WRITE(rw), .wait_ms = 1500, .lease_ms = 30000, .release = true};
    pthread_t t = start_and_let_it_sleep(f, "redisson_rwlock:{priority}", 1, &wr);
    char wfield[128];
    /* the writer thread's owner id is not known here: read the one member */
    redisReply *r = redis_fixture_cmd(f, "ZRANGE {priority}:rwlock_writers 0 -1 WITHSCORES");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    snprintf(wfield, sizeof(wfield), "%s", r->element[0]->str);
    long long deadline = atoll(r->element[1]->str);
    freeReplyObject(r);
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "%s:", dlock_client_id(w));
    assert_memory_equal(wfield, prefix, strlen(prefix));
    assert_string_equal(wfield + strlen(wfield) - 6, ":write");
    long long now = server_now_ms(f);
    ASSERT_BETWEEN(deadline - now, fair_wait_ms - slack_ms(1000), fair_wait_ms);

    /* a new reader is held back; a reader already in may read more */
    ASSERT_RC(dlock_lock_try_acquire(READ(rn), 0, 30000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_try_acquire(READ(rn), 200, 30000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_try_acquire(READ(ra), 0, 30000), DLOCK_OK);
    int64_t holds = 0;
    ASSERT_RC(dlock_lock_hold_count(READ(ra), &holds), DLOCK_OK);
    assert_int_equal(holds, 2);

    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(wr.rc, DLOCK_ETIMEDOUT); /* a still reads */
    bool gone = false;
    POLL_UNTIL(gone, exists(f, "{priority}:rwlock_writers") == 0, slack_ms(1000));
    assert_true(gone);
    ASSERT_RC(dlock_lock_try_acquire(READ(rn), 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(rn)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rw);
    dlock_rwlock_free(rn);
    dlock_client_free(a);
    dlock_client_free(w);
    dlock_client_free(n);
    redis_fixture_stop(f);
}

static void test_writer_that_gives_up_lets_the_readers_it_held_back_in_at_once(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    /* the writer keeps its place fair_wait_ms = 3 x TEST_SLOW_MS */
    dlock_client *a = connect_client(f), *n = connect_client(f);
    dlock_client *w = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = 3 * TEST_SLOW_MS});
    dlock_rwlock *ra = new_rw(a, "gives-up"), *rw = new_rw(w, "gives-up"),
                 *rn = new_rw(n, "gives-up");
    /* held until released (the watchdog renews it): a fixed lease could run out within the
     * writer's wait, which the slack of a valgrind run makes 30 s */
    ASSERT_RC(dlock_lock_acquire(READ(ra), DLOCK_WATCHDOG), DLOCK_OK);
    /* outlasts the start of the reader on a loaded machine */
    attempt wr = {.l = WRITE(rw), .wait_ms = slack_ms(1500), .lease_ms = 30000};
    pthread_t tw = start_and_let_it_sleep(f, "redisson_rwlock:{gives-up}", 1, &wr);
    /* the held-back reader's hint is the writer's place in Redis (fair_wait_ms): it must be
     * the writer's "leave" message that lets it in within test_prompt_ms() */
    attempt rd = {.l = READ(rn), .wait_ms = slack_ms(10000), .lease_ms = 30000, .release = true};
    pthread_t tr = start_and_let_it_sleep(f, "redisson_rwlock:{gives-up}", 2, &rd);
    assert_int_equal(pthread_join(tw, NULL), 0);
    ASSERT_RC(wr.rc, DLOCK_ETIMEDOUT);
    assert_int_equal(pthread_join(tr, NULL), 0);
    ASSERT_RC(rd.rc, DLOCK_OK);
    ASSERT_RC(rd.release_rc, DLOCK_OK);
    int64_t after_ms = (rd.acquired_us - wr.acquired_us) / 1000;
    /* not before the writer's deadline, and soon after it gave up */
    assert_true(rd.acquired_us >= wr.started_us + (wr.wait_ms - 2) * 1000); /* 2: whole ms */
    ASSERT_BETWEEN(after_ms, -test_prompt_ms(), test_prompt_ms());
    printf("# the writer gave up; the reader it held back got in %.2f ms later\n",
           (double)(rd.acquired_us - wr.acquired_us) / 1000.0);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rw);
    dlock_rwlock_free(rn);
    dlock_client_free(a);
    dlock_client_free(w);
    dlock_client_free(n);
    redis_fixture_stop(f);
}

static void test_dead_waiting_writer_holds_readers_back_no_longer_than_its_deadline(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_rwlock *rw = new_rw(c, "ghost");
    /* a writer that joined the line and died: its deadline 1 s from now, never refreshed */
    long long deadline = server_now_ms(f) + 1000;
    assert_int_equal(
        redis_fixture_int(f, "ZADD {ghost}:rwlock_writers %lld ghost-client:1:write", deadline), 1);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(READ(rw), 0, 30000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_try_acquire(READ(rw), TEST_SLOW_MS, 30000), DLOCK_OK);
    int64_t took = test_now_ms() - start;
    /* at the ghost's deadline (the reader's hint), not at the reader's own */
    ASSERT_BETWEEN(took, 800, 1000 + test_prompt_ms());
    assert_int_equal(redis_fixture_int(f, "ZCARD {ghost}:rwlock_writers"), 0); /* purged */
    ASSERT_RC(dlock_lock_release(READ(rw)), DLOCK_OK);
    printf("# a dead writer (deadline 1000 ms) held a reader back for %lld ms\n", (long long)took);
    dlock_rwlock_free(rw);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- hold counts, ownership, is_locked ---------------------------------------------------- */

static void count_through(dlock_lock *l, int64_t seen[6]) {
    ASSERT_RC(dlock_lock_hold_count(l, &seen[0]), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(l, &seen[1]), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(l, &seen[2]), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(l, &seen[3]), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(l, &seen[4]), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(l, &seen[5]), DLOCK_OK);
}

static void test_hold_counts_of_each_half_go_0_1_0_2_1_0_and_count_apart(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_rwlock *rw = new_rw(c, "counted");
    const int64_t want[6] = {0, 1, 0, 2, 1, 0};
    dlock_lock *halves[2] = {READ(rw), WRITE(rw)};
    for (int h = 0; h < 2; h++) {
        int64_t seen[6];
        count_through(halves[h], seen);
        for (int i = 0; i < 6; i++)
            if (seen[i] != want[i])
                fail_msg("%s half: hold count #%d = %lld, expected %lld", h ? "write" : "read", i,
                         (long long)seen[i], (long long)want[i]);
        assert_int_equal(live_keys(f), 0);
    }
    /* a writer that also reads: each half counts its own holds */
    ASSERT_RC(dlock_lock_acquire(WRITE(rw), 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(READ(rw), 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(READ(rw), 10000), DLOCK_OK);
    int64_t r = 0, w = 0;
    bool held_r = false, held_w = false;
    ASSERT_RC(dlock_lock_hold_count(READ(rw), &r), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(WRITE(rw), &w), DLOCK_OK);
    ASSERT_RC(dlock_lock_is_held(READ(rw), &held_r), DLOCK_OK);
    ASSERT_RC(dlock_lock_is_held(WRITE(rw), &held_w), DLOCK_OK);
    assert_int_equal(r, 2);
    assert_int_equal(w, 1);
    assert_true(held_r && held_w);
    ASSERT_RC(dlock_lock_release(WRITE(rw)), DLOCK_OK);
    ASSERT_RC(dlock_lock_is_held(WRITE(rw), &held_w), DLOCK_OK);
    assert_false(held_w);
    ASSERT_RC(dlock_lock_release(READ(rw)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(rw)), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    dlock_rwlock_free(rw);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

typedef struct other_release {
    dlock_lock *l;
    int rc;
    bool held;
} other_release;

static void *release_from_other_thread(void *arg) {
    other_release *o = arg;
    int rc = dlock_lock_is_held(o->l, &o->held);
    o->rc = rc != DLOCK_OK ? rc : dlock_lock_release(o->l);
    return NULL;
}

static void
test_release_without_a_hold_is_enotowner_on_each_half_and_changes_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "owned"), *rb = new_rw(b, "owned");
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_ENOTOWNER); /* nobody holds anything */
    ASSERT_RC(dlock_lock_release(WRITE(ra)), DLOCK_ENOTOWNER);
    ASSERT_RC(dlock_lock_acquire(READ(ra), 30000), DLOCK_OK);
    char before[512], after[512];
    hash_dump_sorted(f, "owned", before, sizeof(before));
    other_release o = {.l = READ(ra)};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, release_from_other_thread, &o), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(o.rc, DLOCK_ENOTOWNER); /* another thread of the same client */
    assert_false(o.held);
    ASSERT_RC(dlock_lock_release(READ(rb)), DLOCK_ENOTOWNER);  /* another client */
    ASSERT_RC(dlock_lock_release(WRITE(ra)), DLOCK_ENOTOWNER); /* a reader is no writer */
    hash_dump_sorted(f, "owned", after, sizeof(after));
    assert_string_equal(before, after);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);

    ASSERT_RC(dlock_lock_acquire(WRITE(ra), 30000), DLOCK_OK);
    hash_dump_sorted(f, "owned", before, sizeof(before));
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_ENOTOWNER); /* a writer that never read */
    o = (other_release){.l = WRITE(ra)};
    assert_int_equal(pthread_create(&t, NULL, release_from_other_thread, &o), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(o.rc, DLOCK_ENOTOWNER);
    ASSERT_RC(dlock_lock_release(WRITE(rb)), DLOCK_ENOTOWNER);
    hash_dump_sorted(f, "owned", after, sizeof(after));
    assert_string_equal(before, after);
    ASSERT_RC(dlock_lock_release(WRITE(ra)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(WRITE(ra)), DLOCK_ENOTOWNER);
    assert_int_equal(live_keys(f), 0);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void test_is_locked_of_each_half_follows_the_mode_as_in_redisson(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "which"), *rb = new_rw(b, "which");
    expect_locked(rb, false, false);
    ASSERT_RC(dlock_lock_acquire(READ(ra), 30000), DLOCK_OK);
    expect_locked(rb, true, false);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    expect_locked(rb, false, false);
    ASSERT_RC(dlock_lock_acquire(WRITE(ra), 30000), DLOCK_OK);
    expect_locked(rb, false, true);
    ASSERT_RC(dlock_lock_acquire(READ(ra), 30000), DLOCK_OK);
    expect_locked(rb, false, true); /* Redisson's testWR */
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    expect_locked(rb, false, true);
    ASSERT_RC(dlock_lock_release(WRITE(ra)), DLOCK_OK);
    expect_locked(rb, false, false);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_readers_of_two_clients_share_and_a_writer_waits_for_the_last_of_them),
        cmocka_unit_test(
            test_writer_excludes_readers_and_10_blocked_readers_all_enter_within_300_ms_of_the_write_release),
        cmocka_unit_test(test_writer_that_reads_then_releases_the_write_hold_leaves_mode_read),
        cmocka_unit_test(test_reader_cannot_upgrade_its_write_attempt_times_out_and_it_still_reads),
        cmocka_unit_test(
            test_waiting_writer_holds_new_readers_back_and_is_listed_with_a_server_clock_deadline),
        cmocka_unit_test(test_writer_that_gives_up_lets_the_readers_it_held_back_in_at_once),
        cmocka_unit_test(test_dead_waiting_writer_holds_readers_back_no_longer_than_its_deadline),
        cmocka_unit_test(test_hold_counts_of_each_half_go_0_1_0_2_1_0_and_count_apart),
        cmocka_unit_test(test_release_without_a_hold_is_enotowner_on_each_half_and_changes_nothing),
        cmocka_unit_test(test_is_locked_of_each_half_follows_the_mode_as_in_redisson),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
