/* SPDX-License-Identifier: MIT */
/* test_spin.c — the lone caller's spin (spin.c): the policy (a hit keeps spinning, misses in
 * a row back off 1, 2, 4 ... to DLOCK__SPIN_BACKOFF_MAX waits, a hit ends the backoff, a
 * budget of 0 never spins), the cap of one spinner per CPU the process may run on, and the
 * wait itself on a socket pair: a reply there already is neither spun for nor counted, a
 * reply that comes after the budget is a miss, and no budget means no spin. (A hit needs a
 * reply within microseconds, which no busy machine promises: the integration test
 * test_reply_spin.c sees hits against a real server.) */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/engine.h"

/* The waits out of the next `waits` that would spin. */
static int spins_in(dlock__spin *s, int waits) {
    int n = 0;
    for (int i = 0; i < waits; i++)
        n += dlock__spin_due(s) > 0;
    return n;
}

static void test_a_budget_of_0_never_spins(void **state) {
    (void)state;
    dlock__spin s;
    dlock__spin_init(&s, 0);
    assert_int_equal(spins_in(&s, 100), 0);
}

static void test_hits_keep_spinning_with_the_whole_budget(void **state) {
    (void)state;
    dlock__spin s;
    dlock__spin_init(&s, 50);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(dlock__spin_due(&s), 50);
        dlock__spin_ended(&s, true);
    }
}

static void test_misses_in_a_row_back_off_doubling_to_the_cap(void **state) {
    (void)state;
    dlock__spin s;
    dlock__spin_init(&s, 50);
    unsigned want = 1;
    for (int miss = 0; miss < 14; miss++) {
        assert_int_equal(dlock__spin_due(&s), 50); /* this wait spins, and misses */
        dlock__spin_ended(&s, false);
        for (unsigned i = 0; i < want; i++) /* then that many sleep at once */
            if (dlock__spin_due(&s) != 0)
                fail_msg("after miss %d, wait %u of %u spun", miss + 1, i + 1, want);
        want = want * 2 > DLOCK__SPIN_BACKOFF_MAX ? DLOCK__SPIN_BACKOFF_MAX : want * 2;
    }
    /* a client whose replies never come within the budget spins once in MAX + 1 waits */
    int spun = 0;
    for (int i = 0; i < 10 * (DLOCK__SPIN_BACKOFF_MAX + 1); i++)
        if (dlock__spin_due(&s) > 0) {
            spun++;
            dlock__spin_ended(&s, false);
        }
    assert_int_equal(spun, 10);
}

static void test_a_hit_after_misses_ends_the_backoff(void **state) {
    (void)state;
    dlock__spin s;
    dlock__spin_init(&s, 50);
    for (int miss = 0; miss < 5; miss++) { /* backing off 16 waits by now */
        while (dlock__spin_due(&s) == 0)
            ;
        dlock__spin_ended(&s, false);
    }
    while (dlock__spin_due(&s) == 0)
        ;
    dlock__spin_ended(&s, true);
    assert_int_equal(spins_in(&s, 10), 10);
    dlock__spin_ended(&s, false); /* the next miss starts over at 1 */
    assert_int_equal(dlock__spin_due(&s), 0);
    assert_int_equal(dlock__spin_due(&s), 50);
}

static void test_no_more_spinners_than_cpus_to_keep_busy(void **state) {
    (void)state;
    int cpus = dlock__cpus_of_this_process(); /* test_cpus.c checks the reading */
    for (int i = 0; i < cpus; i++)
        assert_true(dlock__spinner_enter());
    assert_false(dlock__spinner_enter()); /* every CPU has a spinner */
    if (cpus > 0) {
        dlock__spinner_leave();
        assert_true(dlock__spinner_enter()); /* a place again */
    }
    for (int i = 0; i < cpus; i++)
        dlock__spinner_leave();
}

/* ---- the wait, on a socket pair --------------------------------------------------------- */

typedef struct late_writer {
    int fd;
    int delay_ms;
} late_writer;

static void *write_late(void *arg) {
    late_writer *w = arg;
    usleep((useconds_t)w->delay_ms * 1000);
    assert_int_equal(write(w->fd, "+PONG\r\n", 7), 7);
    return NULL;
}

static void test_a_reply_there_already_is_not_spun_for(void **state) {
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(write(sv[1], "+PONG\r\n", 7), 7);
    dlock__spin s;
    dlock__spin_init(&s, 1000);
    struct pollfd fds[1] = {{.fd = sv[0], .events = POLLIN}};
    dlock__spin_outcome out = {.spun = true, .hit = true, .spun_us = 5};
    assert_int_equal(dlock__spin_poll(&s, fds, 1, &out), 1);
    assert_true(fds[0].revents & POLLIN);
    assert_false(out.spun);
    assert_false(out.hit);
    assert_int_equal(out.spun_us, 0);
    assert_int_equal(s.backoff, 0); /* nothing learnt */
    close(sv[0]);
    close(sv[1]);
}

/* A wait under s for a reply that a writer sends delay_ms after the wait starts: it gets
 * the reply (readable), whatever it spun. */
static void wait_for_late_reply(dlock__spin *s, int delay_ms, dlock__spin_outcome *out) {
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    late_writer w = {.fd = sv[1], .delay_ms = delay_ms};
    pthread_t writer;
    assert_int_equal(pthread_create(&writer, NULL, write_late, &w), 0);
    struct pollfd fds[1] = {{.fd = sv[0], .events = POLLIN}};
    assert_int_equal(dlock__spin_poll(s, fds, 1, out), 1); /* slept, and woke with it */
    assert_true(fds[0].revents & POLLIN);
    assert_int_equal(pthread_join(writer, NULL), 0);
    close(sv[0]);
    close(sv[1]);
}

/* Whether this process may spin at all (a cgroup quota below one CPU: never). */
static bool may_spin(void) {
    if (!dlock__spinner_enter())
        return false;
    dlock__spinner_leave();
    return true;
}

static void test_a_reply_after_the_budget_is_a_miss_and_still_read(void **state) {
    (void)state;
    if (!may_spin()) {
        print_message("this process may keep no CPU busy (its cgroup's quota): no spin\n");
        skip();
    }
    dlock__spin s;
    dlock__spin_init(&s, 100); /* 100 us; the reply comes 50 ms after the wait starts */
    dlock__spin_outcome out;
    wait_for_late_reply(&s, 50, &out);
    assert_true(out.spun);
    assert_false(out.hit);
    assert_true(out.spun_us >= 0);
    /* out of budget: it spun at most the budget and a turn; a yield that gave the CPU away
     * ends it sooner */
    assert_true(out.spun_us <= 100 + DLOCK__SPIN_GAVE_WAY_US);
    assert_int_equal(dlock__spin_due(&s), 0); /* the next wait sleeps at once */
}

static void test_no_budget_sleeps_at_once(void **state) {
    (void)state;
    dlock__spin s;
    dlock__spin_init(&s, 0);
    dlock__spin_outcome out = {.spun = true};
    wait_for_late_reply(&s, 5, &out);
    assert_false(out.spun);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_budget_of_0_never_spins),
        cmocka_unit_test(test_hits_keep_spinning_with_the_whole_budget),
        cmocka_unit_test(test_misses_in_a_row_back_off_doubling_to_the_cap),
        cmocka_unit_test(test_a_hit_after_misses_ends_the_backoff),
        cmocka_unit_test(test_no_more_spinners_than_cpus_to_keep_busy),
        cmocka_unit_test(test_a_reply_there_already_is_not_spun_for),
        cmocka_unit_test(test_a_reply_after_the_budget_is_a_miss_and_still_read),
        cmocka_unit_test(test_no_budget_sleeps_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
