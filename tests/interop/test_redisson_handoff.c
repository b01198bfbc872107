/* SPDX-License-Identifier: MIT */
/* test_redisson_handoff.c — a Redisson waiter beside dlock waiters that hand the lock to each
 * other (the grant, release.lua).
 *
 * A release that grants the lock to the first dlock waiter in line never frees it, and a
 * Redisson RLock waiter only ever gets in when the lock is free (its "0" on
 * redisson_lock__channel:{N}). Under continuous dlock contention a Redisson waiter would so
 * wait for ever. Proven here: three dlock threads, each with its own client, take and give
 * back one lock in a loop, with others always in line; a Redisson `trylock` with a generous
 * wait (TEST_SLOW_MS) still gets the lock while they go on, and nobody holds it beside it.
 *
 * Skipped (exit 77, the reason printed) without $DLOCK_REDISSON_CLI. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core_call.h"
#include "dlock.h"
#include "harness.h"
#include "redisson_peer.h"

#define BUDGET_S 180
#define LINE_MAX_LEN 1024
#define C_THREADS 3

static int64_t peer_ms(int64_t ms) {
    return test_slack_ms(ms) + RJ_START_MS;
}

typedef struct contention {
    redis_fixture *f;
    atomic_bool stop;
    atomic_long rounds;
    atomic_long errors;
    atomic_long overlaps; /* a dlock holder that found another inside */
} contention;

typedef struct worker {
    contention *s;
    dlock_client *c;
    int id;
} worker;

/* Takes and gives back the lock until told to stop; inside, it marks the lock as its own
 * (SET NX) so that two holders at once are seen. */
static void *c_worker_main(void *arg) {
    worker *w = arg;
    contention *s = w->s;
    dlock_lock *l = NULL;
    ASSERT_RC(dlock_lock_new(w->c, "busy", &l), DLOCK_OK);
    char me[16];
    snprintf(me, sizeof(me), "C%d", w->id);
    while (!atomic_load(&s->stop)) {
        int rc = dlock_lock_try_acquire(l, 60000, 30000);
        if (rc != DLOCK_OK) {
            atomic_fetch_add(&s->errors, 1);
            break;
        }
        char *set = redis_fixture_str(s->f, "SET busy:holder %s NX", me);
        if (!set)
            atomic_fetch_add(&s->overlaps, 1);
        free(set);
        test_sleep_ms(1);
        freeReplyObject(redis_fixture_cmd(s->f, "DEL busy:holder"));
        atomic_fetch_add(&s->rounds, 1);
        if (dlock_lock_release(l) != DLOCK_OK)
            atomic_fetch_add(&s->errors, 1);
    }
    dlock_lock_free(l);
    return NULL;
}

static void
test_redisson_waiter_gets_the_lock_while_dlock_waiters_hand_it_to_each_other(void **state) {
    (void)state;
    SKIP_WITHOUT_REDISSON();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_tcp_server();
    contention s = {.f = f};
    worker w[C_THREADS];
    pthread_t t[C_THREADS];
    for (int i = 0; i < C_THREADS; i++) {
        w[i] = (worker){.s = &s, .c = connect_client(f), .id = i};
        assert_int_equal(pthread_create(&t[i], NULL, c_worker_main, &w[i]), 0);
    }
    /* the dlock threads hand the lock on before the Redisson waiter comes */
    int64_t until = test_now_ms() + test_slack_ms(10000);
    while (atomic_load(&s.rounds) < 100 && test_now_ms() < until)
        test_sleep_ms(5);
    assert_true(atomic_load(&s.rounds) >= 100);

    char wait_ms[24];
    snprintf(wait_ms, sizeof(wait_ms), "%d", TEST_SLOW_MS);
    rj_peer j;
    rj_start(&j, f, "J", 0, (const char *const[]){"trylock", "busy", wait_ms, "30000", NULL});
    char line[LINE_MAX_LEN];
    rj_wait_line(&j, "trylock-begin", peer_ms(0), line, sizeof(line));
    long before = atomic_load(&s.rounds);
    int status = rj_wait_exit(&j, peer_ms(TEST_SLOW_MS));
    long during = atomic_load(&s.rounds) - before;

    atomic_store(&s.stop, true);
    for (int i = 0; i < C_THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    printf("# %ld dlock rounds while Redisson waited (exit %d)\n", during, status);
    assert_true(during > 0); /* the dlock threads contended all along */
    assert_int_equal(status, 0);
    assert_true(rj_find(&j, "acquired", line, sizeof(line)));
    printf("# Redisson waited %lld ms\n", rj_value(line, "waited_ms"));
    assert_int_equal(atomic_load(&s.errors), 0);
    assert_int_equal(atomic_load(&s.overlaps), 0);
    rj_stop(&j);
    for (int i = 0; i < C_THREADS; i++)
        dlock_client_free(w[i].c);
    redis_fixture_stop(f);
}

int main(void) {
    if (redisson_absent())
        return REDISSON_SKIPPED;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_redisson_waiter_gets_the_lock_while_dlock_waiters_hand_it_to_each_other),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
