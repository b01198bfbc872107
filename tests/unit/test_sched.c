/* SPDX-License-Identifier: MIT */
/* test_sched.c — the scheduler fires timers in due order (start order among equals),
 * never early, and a stopped or restarted timer does not fire at its old time. Driven by a
 * fake clock through dlock__sched_run_due, then once on a real libev loop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ev.h> /* the test drives a real libev loop; the core keeps it behind loop.h */

#include "client/client.h"

static int64_t fake_now;
static int64_t fake_clock(void) {
    return fake_now;
}

static int fired[1024];
static int nfired;

static void record(dlock__timer *t, void *arg) {
    (void)t;
    fired[nfired++] = (int)(intptr_t)arg;
}

static void sched_fake(dlock__sched *s) {
    dlock__sched_init(s, NULL); /* no loop: the test drives time */
    s->now_ms = fake_clock;
    fake_now = 1000;
    nfired = 0;
}

static void test_fires_in_due_order(void **state) {
    (void)state;
    dlock__sched s;
    sched_fake(&s);
    dlock__timer t[5];
    int64_t delays[5] = {50, 10, 40, 20, 30};
    for (int i = 0; i < 5; i++) {
        dlock__timer_init(&t[i], record, (void *)(intptr_t)i);
        assert_int_equal(dlock__timer_start(&s, &t[i], delays[i]), DLOCK_OK);
    }
    dlock__sched_run_due(&s, 1009);
    assert_int_equal(nfired, 0); /* nothing early */
    dlock__sched_run_due(&s, 1035);
    assert_int_equal(nfired, 3);
    assert_int_equal(fired[0], 1);
    assert_int_equal(fired[1], 3);
    assert_int_equal(fired[2], 4);
    dlock__sched_run_due(&s, 2000);
    assert_int_equal(nfired, 5);
    assert_int_equal(fired[3], 2);
    assert_int_equal(fired[4], 0);
    dlock__sched_close(&s);
}

static void test_equal_due_times_fire_in_start_order(void **state) {
    (void)state;
    dlock__sched s;
    sched_fake(&s);
    dlock__timer t[8];
    for (int i = 0; i < 8; i++) {
        dlock__timer_init(&t[i], record, (void *)(intptr_t)i);
        dlock__timer_start_at(&s, &t[i], 1500);
    }
    dlock__sched_run_due(&s, 1500);
    assert_int_equal(nfired, 8);
    for (int i = 0; i < 8; i++)
        assert_int_equal(fired[i], i);
    dlock__sched_close(&s);
}

static void test_stopped_timer_never_fires(void **state) {
    (void)state;
    dlock__sched s;
    sched_fake(&s);
    dlock__timer a, b, c;
    dlock__timer_init(&a, record, (void *)1);
    dlock__timer_init(&b, record, (void *)2);
    dlock__timer_init(&c, record, (void *)3);
    dlock__timer_start(&s, &a, 10);
    dlock__timer_start(&s, &b, 20);
    dlock__timer_start(&s, &c, 30);
    dlock__timer_stop(&s, &b);
    assert_false(dlock__timer_active(&b));
    dlock__timer_stop(&s, &b); /* twice is harmless */
    dlock__sched_run_due(&s, 5000);
    assert_int_equal(nfired, 2);
    assert_int_equal(fired[0], 1);
    assert_int_equal(fired[1], 3);
    dlock__sched_close(&s);
}

static void test_restart_moves_the_due_time(void **state) {
    (void)state;
    dlock__sched s;
    sched_fake(&s);
    dlock__timer a, b;
    dlock__timer_init(&a, record, (void *)1);
    dlock__timer_init(&b, record, (void *)2);
    dlock__timer_start(&s, &a, 10);
    dlock__timer_start(&s, &b, 20);
    dlock__timer_start(&s, &a, 100); /* restart a: later than b now */
    dlock__sched_run_due(&s, 1050);
    assert_int_equal(nfired, 1);
    assert_int_equal(fired[0], 2);
    dlock__sched_run_due(&s, 1100);
    assert_int_equal(nfired, 2);
    assert_int_equal(fired[1], 1);
    dlock__sched_close(&s);
}

/* A callback restarting its own timer "now" runs again on the next pass, not forever in
 * this one. */
static int self_restarts;
static dlock__sched *self_sched;
static void restart_self(dlock__timer *t, void *arg) {
    (void)arg;
    self_restarts++;
    dlock__timer_start(self_sched, t, 0);
}

static void test_self_restarting_timer_does_not_starve(void **state) {
    (void)state;
    dlock__sched s;
    sched_fake(&s);
    self_sched = &s;
    self_restarts = 0;
    dlock__timer t;
    dlock__timer_init(&t, restart_self, NULL);
    dlock__timer_start(&s, &t, 0);
    dlock__sched_run_due(&s, fake_now);
    assert_int_equal(self_restarts, 1);
    dlock__sched_run_due(&s, fake_now);
    assert_int_equal(self_restarts, 2);
    dlock__sched_close(&s);
    assert_false(dlock__timer_active(&t));
}

/* Random starts and stops against a sorted model. */
static void test_random_operations_match_a_model(void **state) {
    (void)state;
    dlock__sched s;
    sched_fake(&s);
    enum { N = 300 };
    static dlock__timer t[N];
    static int64_t due[N];
    static bool active[N];
    srand(42);
    for (int i = 0; i < N; i++) {
        dlock__timer_init(&t[i], record, (void *)(intptr_t)i);
        active[i] = false;
    }
    for (int step = 0; step < 3000; step++) {
        int i = rand() % N;
        if (rand() % 3 == 0) {
            dlock__timer_stop(&s, &t[i]);
            active[i] = false;
        } else {
            due[i] = fake_now + rand() % 1000;
            dlock__timer_start_at(&s, &t[i], due[i]);
            active[i] = true;
        }
    }
    int expected = 0;
    for (int i = 0; i < N; i++)
        expected += active[i];
    dlock__sched_run_due(&s, fake_now + 1000);
    assert_int_equal(nfired, expected);
    for (int k = 1; k < nfired; k++)
        assert_true(due[fired[k - 1]] <= due[fired[k]]);
    dlock__sched_close(&s);
}

/* On a real loop: a 30 ms timer fires after 30 ms and not much later. */
static void stop_loop(dlock__timer *t, void *arg) {
    (void)t;
    ev_break((struct ev_loop *)arg, EVBREAK_ALL);
}

static void test_real_loop_fires_on_time(void **state) {
    (void)state;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    dlock__sched s;
    dlock__sched_init(&s, loop);
    dlock__timer t;
    dlock__timer_init(&t, stop_loop, loop);
    int64_t start = dlock__now_ms();
    dlock__timer_start(&s, &t, 30);
    ev_run(loop, 0);
    int64_t took = dlock__now_ms() - start;
    assert_true(took >= 30);
    assert_true(took < 1000);
    dlock__sched_close(&s);
    ev_loop_destroy(loop);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fires_in_due_order),
        cmocka_unit_test(test_equal_due_times_fire_in_start_order),
        cmocka_unit_test(test_stopped_timer_never_fires),
        cmocka_unit_test(test_restart_moves_the_due_time),
        cmocka_unit_test(test_self_restarting_timer_does_not_starve),
        cmocka_unit_test(test_random_operations_match_a_model),
        cmocka_unit_test(test_real_loop_fires_on_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
