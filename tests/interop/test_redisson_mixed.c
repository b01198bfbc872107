/* SPDX-License-Identifier: MIT */
/* test_redisson_mixed.c — each primitive shared by dlock and the real Redisson 3.52.0 client
 * (redisson-cli) on one server.
 *
 * Locks (plain, fenced, fair, the write half): a Redisson `loop` process and two dlock
 * threads run rounds of the same protocol on the same keys (inside the lock: SET
 * NAME:holder me NX, a non-atomic read-modify-write of NAME:counter, GET NAME:holder is
 * still me, DEL it); the dlock sections also go through the checker. Proven: 0 overlaps on
 * either side, the counter equals the rounds of both, fenced tokens rise across languages
 * (each dlock holder's token is the newest issued, and as many tokens as acquisitions),
 * and for the read-write lock no dlock reader ever sees a writer of either language inside.
 * Semaphore, expiring permits and latch: a Redisson holder keeps dlock out and the other
 * way round, permits come back exactly, a Redisson permit whose lease ran out is taken by
 * dlock, and latches open across languages.
 *
 * Skipped (exit 77, the reason printed) without $DLOCK_REDISSON_CLI. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "checker.h"
#include "core_call.h"
#include "dlock.h"
#include "harness.h"
#include "redisson_peer.h"

#define BUDGET_S 180
#define LINE_MAX_LEN 1024
#define JAVA_ROUNDS 80
#define C_THREADS 2
#define C_ROUNDS 40

static int64_t peer_ms(int64_t ms) {
    return test_slack_ms(ms) + RJ_START_MS;
}

/* ---- the lock kinds ---------------------------------------------------------------------- */

typedef enum lock_kind { KIND_LOCK, KIND_FENCED, KIND_FAIR, KIND_WRITE } lock_kind;

static const char *const java_kind[] = {"lock", "fenced", "fair", "write"};

typedef struct mixed {
    redis_fixture *f;
    const char *name;
    lock_kind kind;
    checker *k;
    atomic_long overlaps;
    atomic_long stale_tokens; /* a dlock holder whose token is not the newest issued */
    atomic_bool writers_done;
    atomic_long reader_saw_writer;
    atomic_long reader_sections;
} mixed;

typedef struct worker {
    mixed *m;
    int id;
    dlock_client *c;
} worker;

static dlock_lock *open_lock(dlock_client *c, const mixed *m, dlock_rwlock **rw) {
    dlock_lock *l = NULL;
    *rw = NULL;
    switch (m->kind) {
    case KIND_LOCK:
        ASSERT_RC(dlock_lock_new(c, m->name, &l), DLOCK_OK);
        break;
    case KIND_FENCED:
        ASSERT_RC(dlock_fencedlock_new(c, m->name, &l), DLOCK_OK);
        break;
    case KIND_FAIR:
        ASSERT_RC(dlock_fairlock_new(c, m->name, &l), DLOCK_OK);
        break;
    case KIND_WRITE:
        ASSERT_RC(dlock_rwlock_new(c, m->name, rw), DLOCK_OK);
        l = dlock_rwlock_write(*rw);
        break;
    }
    return l;
}

static void close_lock(dlock_lock *l, dlock_rwlock *rw) {
    if (rw)
        dlock_rwlock_free(rw);
    else
        dlock_lock_free(l);
}

static void *c_worker_main(void *arg) {
    worker *w = arg;
    mixed *m = w->m;
    dlock_rwlock *rw;
    dlock_lock *l = open_lock(w->c, m, &rw);
    char me[16];
    snprintf(me, sizeof(me), "C%d", w->id);
    for (int i = 0; i < C_ROUNDS; i++) {
        int rc = dlock_lock_try_acquire(l, 60000, 30000);
        if (rc != DLOCK_OK) {
            checker_error(m->k, w->id, "acquire: %s", dlock_err_name(rc));
            break;
        }
        long slot = checker_enter(m->k, w->id);
        uint64_t token = 0;
        if (m->kind == KIND_FENCED) {
            dlock_lock_token(l, &token);
            long long issued = redis_fixture_int(m->f, "GET redisson_lock_token:{%s}", m->name);
            if (issued != (long long)token)
                atomic_fetch_add(&m->stale_tokens, 1);
        }
        rj_round_inside(m->f, m->name, me, &m->overlaps);
        checker_exit(m->k, slot, token);
        rc = dlock_lock_release(l);
        if (rc != DLOCK_OK)
            checker_error(m->k, w->id, "release: %s", dlock_err_name(rc));
    }
    checker_finished(m->k, w->id);
    close_lock(l, rw);
    return NULL;
}

/* For the read-write lock: reads until the writers are done; a writer of either language
 * inside a read section leaves its name in NAME:holder. */
static void *c_reader_main(void *arg) {
    worker *w = arg;
    mixed *m = w->m;
    dlock_rwlock *rw = NULL;
    ASSERT_RC(dlock_rwlock_new(w->c, m->name, &rw), DLOCK_OK);
    while (!atomic_load(&m->writers_done)) {
        if (dlock_lock_try_acquire(dlock_rwlock_read(rw), 60000, 30000) != DLOCK_OK)
            break;
        long long held = redis_fixture_int(m->f, "EXISTS %s:holder", m->name);
        test_sleep_ms(2);
        held += redis_fixture_int(m->f, "EXISTS %s:holder", m->name);
        if (held != 0)
            atomic_fetch_add(&m->reader_saw_writer, 1);
        atomic_fetch_add(&m->reader_sections, 1);
        dlock_lock_release(dlock_rwlock_read(rw));
    }
    dlock_rwlock_free(rw);
    return NULL;
}

static void run_mixed_loop(lock_kind kind, const char *name) {
    redis_fixture *f = start_tcp_server();
    mixed m = {.f = f, .name = name, .kind = kind};
    m.k = checker_new(name, C_THREADS, 4 * C_ROUNDS, kind == KIND_FENCED);
    char rounds[16];
    snprintf(rounds, sizeof(rounds), "%d", JAVA_ROUNDS);
    rj_peer j;
    rj_start(&j, f, "J", 0,
             (const char *const[]){"loop", name, rounds, java_kind[kind], "500", NULL});
    char line[LINE_MAX_LEN];
    rj_wait_line(&j, "loop-begin", peer_ms(0), line, sizeof(line));

    worker w[C_THREADS + 1];
    pthread_t t[C_THREADS + 1];
    for (int i = 0; i <= C_THREADS; i++)
        w[i] = (worker){.m = &m, .id = i, .c = connect_client(f)};
    for (int i = 0; i < C_THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, c_worker_main, &w[i]), 0);
    if (kind == KIND_WRITE)
        assert_int_equal(pthread_create(&t[C_THREADS], NULL, c_reader_main, &w[C_THREADS]), 0);
    for (int i = 0; i < C_THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    int status = rj_wait_exit(&j, peer_ms(60000));
    atomic_store(&m.writers_done, true);
    if (kind == KIND_WRITE)
        assert_int_equal(pthread_join(t[C_THREADS], NULL), 0);

    assert_true(rj_find(&j, "loop-done", line, sizeof(line)));
    printf("# %s: java %s", java_kind[kind], strchr(line, ' ') + 1);
    checker_report r = checker_check(m.k);
    assert_int_equal(status, 0); /* Java: 0 overlaps, 0 lost, no token regressions */
    assert_int_equal(rj_value(line, "overlaps"), 0);
    assert_true(r.ok);
    assert_int_equal(atomic_load(&m.overlaps), 0);
    long long total = JAVA_ROUNDS + C_THREADS * C_ROUNDS;
    assert_int_equal(redis_fixture_int(f, "GET %s:counter", name), total);
    if (kind == KIND_FENCED) {
        assert_int_equal(atomic_load(&m.stale_tokens), 0);
        assert_int_equal(redis_fixture_int(f, "GET redisson_lock_token:{%s}", name), total);
        assert_int_equal(rj_value(line, "token_regressions"), 0);
    }
    if (kind == KIND_WRITE) {
        printf("# %ld dlock read sections beside the writers\n", atomic_load(&m.reader_sections));
        assert_int_equal(atomic_load(&m.reader_saw_writer), 0);
    }
    assert_int_equal(redis_fixture_int(f, "EXISTS %s", name), 0);
    rj_stop(&j);
    for (int i = 0; i <= C_THREADS; i++)
        dlock_client_free(w[i].c);
    checker_free(m.k);
    redis_fixture_stop(f);
}

static void test_lock_rounds_of_redisson_and_dlock_never_overlap_and_all_count(void **state) {
    (void)state;
    SKIP_WITHOUT_REDISSON();
    test_watchdog_arm(BUDGET_S, __func__);
    run_mixed_loop(KIND_LOCK, "mixed-lock");
}

static void
test_fenced_rounds_of_both_never_overlap_and_tokens_rise_across_languages(void **state) {
    (void)state;
    SKIP_WITHOUT_REDISSON();
    test_watchdog_arm(BUDGET_S, __func__);
    run_mixed_loop(KIND_FENCED, "mixed-fenced");
}

static void test_fair_rounds_of_both_never_overlap_and_all_count(void **state) {
    (void)state;
    SKIP_WITHOUT_REDISSON();
    test_watchdog_arm(BUDGET_S, __func__);
    run_mixed_loop(KIND_FAIR, "mixed-fair");
}

static void
test_write_rounds_of_both_never_overlap_and_dlock_readers_never_see_a_writer(void **state) {
    (void)state;
    SKIP_WITHOUT_REDISSON();
    test_watchdog_arm(BUDGET_S, __func__);
    run_mixed_loop(KIND_WRITE, "mixed-rw");
}

/* ---- semaphore, expiring permits, latch ---------------------------------------------------- */

static void
test_semaphore_permits_held_by_redisson_keep_dlock_out_and_come_back_exactly(void **state) {
    (void)state;
    SKIP_WITHOUT_REDISSON();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_tcp_server();
    dlock_client *c = connect_client(f);
    dlock_semaphore *s = NULL;
    ASSERT_RC(dlock_semaphore_new(c, "sem", &s), DLOCK_OK);
    bool set = false;
    ASSERT_RC(dlock_semaphore_try_set_permits(s, 2, &set), DLOCK_OK);
    assert_true(set);
    rj_peer j1, j2;
    rj_start(&j1, f, "S1", 0, (const char *const[]){"semaphore", "sem", "-1", "1", "3000", NULL});
    rj_start(&j2, f, "S2", 0, (const char *const[]){"semaphore", "sem", "-1", "1", "3000", NULL});
    char line[LINE_MAX_LEN];
    rj_wait_line(&j1, "acquired", peer_ms(0), line, sizeof(line));
    rj_wait_line(&j2, "acquired", peer_ms(0), line, sizeof(line));
    ASSERT_RC(dlock_semaphore_try_acquire(s, 1, 0), DLOCK_ETIMEDOUT);
    bool still_held = !rj_find(&j1, "released", line, sizeof(line)) &&
                      !rj_find(&j2, "released", line, sizeof(line));
    assert_true(still_held); /* both Java permits were out while dlock was refused */
    /* a Redisson release wakes the dlock waiter */
    ASSERT_RC(dlock_semaphore_try_acquire(s, 1, peer_ms(3000)), DLOCK_OK);
    /* and a dlock hold keeps a Redisson acquirer out: one left, J takes it, then none */
    rj_peer j3;
    rj_start(&j3, f, "S3", 0,
             (const char *const[]){"semaphore", "sem", "-1", "2", "10", "300", NULL});
    assert_int_equal(rj_wait_exit(&j1, peer_ms(3000)), 0);
    assert_int_equal(rj_wait_exit(&j2, peer_ms(3000)), 0);
    assert_int_equal(rj_wait_exit(&j3, peer_ms(300)), 1); /* 2 wanted, 1 free: timeout */
    ASSERT_RC(dlock_semaphore_release(s, 1), DLOCK_OK);
    int64_t available = -1;
    ASSERT_RC(dlock_semaphore_available(s, &available), DLOCK_OK);
    assert_int_equal(available, 2);
    rj_stop(&j1);
    rj_stop(&j2);
    rj_stop(&j3);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void
test_expiring_permit_of_redisson_keeps_dlock_out_until_released_or_expired(void **state) {
    (void)state;
    SKIP_WITHOUT_REDISSON();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_tcp_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = NULL;
    ASSERT_RC(dlock_permits_new(c, "pes", &p), DLOCK_OK);
    bool set = false;
    ASSERT_RC(dlock_permits_try_set_permits(p, 1, &set), DLOCK_OK);
    char line[LINE_MAX_LEN];
    dlock_permit_id id;
    /* a Redisson permit with a 10 s lease, released after 1.5 s */
    rj_peer j1;
    rj_start(&j1, f, "P1", 0, (const char *const[]){"pes", "pes", "-1", "10000", "1500", NULL});
    rj_wait_line(&j1, "acquired", peer_ms(0), line, sizeof(line));
    ASSERT_RC(dlock_permits_acquire(p, 0, 5000, &id), DLOCK_ETIMEDOUT);
    assert_false(rj_find(&j1, "released", line, sizeof(line)));
    /* a lease far beyond the next JVM's start-up, which may take seconds on a busy machine */
    ASSERT_RC(dlock_permits_acquire(p, peer_ms(1500), 120000, &id), DLOCK_OK);
    assert_int_equal(rj_wait_exit(&j1, peer_ms(1500)), 0);
    /* a dlock permit keeps a Redisson acquirer out */
    rj_peer j2;
    rj_start(&j2, f, "P2", 0, (const char *const[]){"pes", "pes", "-1", "5000", "10", "300", NULL});
    assert_int_equal(rj_wait_exit(&j2, peer_ms(300)), 1);
    ASSERT_RC(dlock_permits_release(p, &id), DLOCK_OK);
    /* a Redisson permit whose 800 ms lease runs out is dlock's to take */
    rj_peer j3;
    rj_start(&j3, f, "P3", 0, (const char *const[]){"pes", "pes", "-1", "800", "3000", NULL});
    rj_wait_line(&j3, "acquired", peer_ms(0), line, sizeof(line));
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_permits_acquire(p, slack_ms(3000), 5000, &id), DLOCK_OK);
    ASSERT_BETWEEN(test_now_ms() - start, 0, slack_ms(1500));
    assert_int_equal(rj_wait_exit(&j3, peer_ms(3000)), 1); /* its permit had expired */
    ASSERT_RC(dlock_permits_release(p, &id), DLOCK_OK);
    int64_t available = -1;
    ASSERT_RC(dlock_permits_available(p, &available), DLOCK_OK);
    assert_int_equal(available, 1);
    rj_stop(&j1);
    rj_stop(&j2);
    rj_stop(&j3);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_latch_opens_across_languages_in_both_directions(void **state) {
    (void)state;
    SKIP_WITHOUT_REDISSON();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_tcp_server();
    dlock_client *c = connect_client(f);
    dlock_latch *l = NULL, *l2 = NULL;
    ASSERT_RC(dlock_latch_new(c, "gate", &l), DLOCK_OK);
    ASSERT_RC(dlock_latch_new(c, "gate2", &l2), DLOCK_OK);
    bool set = false;
    ASSERT_RC(dlock_latch_try_set_count(l, 2, &set), DLOCK_OK);
    char line[LINE_MAX_LEN];
    /* a Redisson waiter opens when the last count-down (dlock's) comes */
    rj_peer waiter, down;
    rj_start(&waiter, f, "W", 0, (const char *const[]){"latch-await", "gate", "20000", NULL});
    rj_wait_line(&waiter, "await-begin", peer_ms(0), line, sizeof(line));
    assert_int_equal(rj_value(line, "count"), 2);
    rj_start(&down, f, "D", 0, (const char *const[]){"latch-countdown", "gate", NULL});
    assert_int_equal(rj_wait_exit(&down, peer_ms(0)), 0);
    int64_t count = -1;
    ASSERT_RC(dlock_latch_count(l, &count), DLOCK_OK);
    assert_int_equal(count, 1);
    assert_false(rj_ended(&waiter));
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
    assert_int_equal(rj_wait_exit(&waiter, test_slack_ms(2000)), 0);
    assert_true(rj_find(&waiter, "opened", line, sizeof(line)));
    /* a dlock waiter opens on Redisson's count-down of a latch Redisson set */
    rj_peer setter, down2;
    rj_start(&setter, f, "T", 0, (const char *const[]){"latch-set", "gate2", "1", NULL});
    assert_int_equal(rj_wait_exit(&setter, peer_ms(0)), 0);
    ASSERT_RC(dlock_latch_await(l2, 0), DLOCK_ETIMEDOUT);
    rj_start(&down2, f, "D2", 0, (const char *const[]){"latch-countdown", "gate2", NULL});
    ASSERT_RC(dlock_latch_await(l2, peer_ms(0)), DLOCK_OK);
    assert_int_equal(rj_wait_exit(&down2, peer_ms(0)), 0);
    rj_stop(&waiter);
    rj_stop(&down);
    rj_stop(&setter);
    rj_stop(&down2);
    dlock_latch_free(l);
    dlock_latch_free(l2);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    if (redisson_absent())
        return REDISSON_SKIPPED;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lock_rounds_of_redisson_and_dlock_never_overlap_and_all_count),
        cmocka_unit_test(test_fenced_rounds_of_both_never_overlap_and_tokens_rise_across_languages),
        cmocka_unit_test(test_fair_rounds_of_both_never_overlap_and_all_count),
        cmocka_unit_test(
            test_write_rounds_of_both_never_overlap_and_dlock_readers_never_see_a_writer),
        cmocka_unit_test(
            test_semaphore_permits_held_by_redisson_keep_dlock_out_and_come_back_exactly),
        cmocka_unit_test(
            test_expiring_permit_of_redisson_keeps_dlock_out_until_released_or_expired),
        cmocka_unit_test(test_latch_opens_across_languages_in_both_directions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
