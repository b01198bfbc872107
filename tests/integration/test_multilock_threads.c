/* SPDX-License-Identifier: MIT */
/* test_multilock_threads.c — the multilock tests of test_multilock.c, split from it by concern: two
 * threads. Helpers: tests/support/multilock_helpers.h. Every test starts its own server. */
#include "multilock_helpers.h"

/* ---- two threads, overlapping sets, opposite orders -------------------------------------- */

/* The members: "ov:a" on server 0, "ov:b" on 1, "ov:c" and "ov:d" on 2. Thread 0 takes
 * {a, b, c} given in that order, thread 1 {c, b, a, d} given in the reverse order plus one
 * of its own. Each thread has its own handles (a handle's lost callback belongs to one
 * composite); with shared_clients they are on the same three clients, else each thread has
 * clients of its own, as two processes would: other client ids, which the application
 * cannot line up. A MultiLock's order must then still be the same for both (the same
 * servers and names), or each can take one member the other waits for. */
typedef struct overlap_worker {
    dlock_client *c[NSERVERS];
    int index;
    long rounds;
    long done;
    int bad_rc;
    char bad_detail[256];
} overlap_worker;

static struct {
    atomic_int inside;   /* sections in progress on the shared members */
    atomic_long counter; /* bumped with a separate load and store */
    atomic_int overlaps; /* an enter that found another section in progress */
} overlap;

static void *overlap_work(void *arg) {
    overlap_worker *w = arg;
    dlock_lock *members[4];
    size_t n;
    if (w->index == 0) {
        members[0] = new_lock(w->c[0], "ov:a");
        members[1] = new_lock(w->c[1], "ov:b");
        members[2] = new_lock(w->c[2], "ov:c");
        n = 3;
    } else {
        members[0] = new_lock(w->c[2], "ov:c");
        members[1] = new_lock(w->c[1], "ov:b");
        members[2] = new_lock(w->c[0], "ov:a");
        members[3] = new_lock(w->c[2], "ov:d");
        n = 4;
    }
    dlock_lock *m = NULL;
    w->bad_rc = dlock_multilock_new(members, n, &m);
    for (long i = 0; w->bad_rc == DLOCK_OK && i < w->rounds; i++) {
        int rc = dlock_lock_try_acquire(m, slack_ms(5000), 30000);
        if (rc != DLOCK_OK) {
            w->bad_rc = rc;
            snprintf(w->bad_detail, sizeof(w->bad_detail), "round %ld: %s", i, dlock_last_error());
            break;
        }
        if (atomic_fetch_add(&overlap.inside, 1) != 0)
            atomic_fetch_add(&overlap.overlaps, 1);
        long v = atomic_load_explicit(&overlap.counter, memory_order_relaxed);
        if (i % 4 == 0)
            sched_yield();
        atomic_store_explicit(&overlap.counter, v + 1, memory_order_relaxed);
        atomic_fetch_sub(&overlap.inside, 1);
        rc = dlock_lock_release(m);
        if (rc != DLOCK_OK) {
            w->bad_rc = rc;
            snprintf(w->bad_detail, sizeof(w->bad_detail), "release %ld: %s", i,
                     dlock_last_error());
            break;
        }
        w->done++;
    }
    dlock_lock_free(m);
    free_locks(members, n);
    return NULL;
}

/* Whether clients x and y (one per server) order the servers oppositely by client id. */
static bool orders_reversed(dlock_client *const *x, dlock_client *const *y) {
    for (int i = 0; i < NSERVERS; i++)
        for (int j = i + 1; j < NSERVERS; j++)
            if ((strcmp(dlock_client_id(x[i]), dlock_client_id(x[j])) < 0) ==
                (strcmp(dlock_client_id(y[i]), dlock_client_id(y[j])) < 0))
                return false;
    return true;
}

static void run_overlapping_threads(bool shared_clients) {
    cluster cl;
    cluster_start(&cl, 0);
    atomic_store(&overlap.inside, 0);
    atomic_store(&overlap.counter, 0);
    atomic_store(&overlap.overlaps, 0);
    overlap_worker w[2];
    memset(w, 0, sizeof(w));
    for (int k = 0; k < 2; k++) {
        w[k].index = k;
        w[k].rounds = test_scaled(150);
        for (int i = 0; i < NSERVERS; i++)
            w[k].c[i] = shared_clients ? cl.c[i] : connect_client(cl.f[i]);
    }
    if (!shared_clients) {
        /* Client ids are random, so two applications' clients may sort the servers any
         * way. Make it the unlucky way: thread 1's clients sort the three servers in the
         * reverse of thread 0's order (re-connecting them until they do). */
        for (int tries = 0; !orders_reversed(w[0].c, w[1].c); tries++) {
            assert_true(tries < 300);
            int i = tries % NSERVERS;
            ASSERT_RC(dlock_client_free(w[1].c[i]), DLOCK_OK);
            w[1].c[i] = connect_client(cl.f[i]);
        }
    }
    pthread_t t[2];
    int64_t start = test_now_ms();
    for (int k = 0; k < 2; k++)
        assert_int_equal(pthread_create(&t[k], NULL, overlap_work, &w[k]), 0);
    for (int k = 0; k < 2; k++)
        assert_int_equal(pthread_join(t[k], NULL), 0);
    int64_t took = test_now_ms() - start;
    long long left = exists(cl.f[0], "ov:a") + exists(cl.f[1], "ov:b") + exists(cl.f[2], "ov:c") +
                     exists(cl.f[2], "ov:d");
    /* everything freed before any verdict */
    if (!shared_clients)
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < NSERVERS; i++)
                ASSERT_RC(dlock_client_free(w[k].c[i]), DLOCK_OK);
    cluster_stop(&cl);
    for (int k = 0; k < 2; k++)
        if (w[k].bad_rc != DLOCK_OK)
            fail_msg("thread %d: %s (%s) after %ld rounds", k, dlock_err_name(w[k].bad_rc),
                     w[k].bad_detail, w[k].done);
    assert_int_equal(atomic_load(&overlap.overlaps), 0);
    assert_int_equal(atomic_load(&overlap.counter), w[0].rounds + w[1].rounds);
    assert_int_equal(left, 0);
    printf("# %s clients: 2 x %ld rounds in %lld ms, no overlap, no timeout\n",
           shared_clients ? "shared" : "separate", w[0].rounds, (long long)took);
}

static void
test_overlapping_multilocks_in_opposite_orders_on_shared_clients_never_deadlock(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    run_overlapping_threads(true);
}

static void
test_overlapping_multilocks_in_opposite_orders_on_separate_clients_never_deadlock(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    run_overlapping_threads(false);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_overlapping_multilocks_in_opposite_orders_on_shared_clients_never_deadlock),
        cmocka_unit_test(
            test_overlapping_multilocks_in_opposite_orders_on_separate_clients_never_deadlock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
