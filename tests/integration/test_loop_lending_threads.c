/* SPDX-License-Identifier: MIT */
/* test_loop_lending_threads.c — a blocking call started on the caller's own thread (the I/O thread
 * lends its loop while it sleeps in the poll: src/core/loop/loop.h) behaves as one started on the
 * I/O thread:
 *   - a reply timeout it arms is kept even when the poll was sleeping toward a later time
 *     (the poll is woken when a borrower changes the loop's timers);
 *   - a command bigger than the socket takes at once is sent whole (the rest leaves from the
 *     I/O thread, which is woken to watch the socket);
 *   - many threads with calls in flight through one client each get their own reply, and
 *     a thread woken for its reply finds the loop free to start its next call. */
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core_call.h"
#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

/* The client's I/O thread has nothing to do for idle_ms: it sleeps in the poll, toward its
 * next timer (none is due soon: no lease, no wait, no call in flight). */
static void let_the_client_idle(int64_t idle_ms) {
    test_sleep_ms(idle_ms);
}

static void test_a_call_started_on_the_callers_thread_times_out_on_time(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    redis_fixture *f = start_server();
    /* Were the deadline lost, the poll would sleep on with no timer near: the ping would wait
     * until the test's own watchdog. So the bound below can be seconds, for a loaded machine. */
    const int64_t timeout_ms = 1000;
    dlock_client *c = connect_client_cfg(
        f, (test_client_cfg){.timeout_ms = timeout_ms, .retry_attempts = TEST_NO_RETRY});
    assert_int_equal(dlock_client_ping(c), DLOCK_OK);
    /* The reply deadline of that ping fires once, finds nothing overdue, and leaves no timer:
     * wait it out, so that the poll sleeps with no deadline near. */
    let_the_client_idle(2 * timeout_ms + 200);

    assert_int_equal(redis_fixture_pause(f), 0);
    int64_t start = test_now_ms();
    int rc = dlock_client_ping(c);
    int64_t took = test_now_ms() - start;
    assert_int_equal(redis_fixture_resume(f), 0);
    printf("# ping to a paused server: %s after %lld ms (timeout %lld ms)\n", dlock_err_name(rc),
           (long long)took, (long long)timeout_ms);
    assert_int_equal(rc, DLOCK_ECONN);
    ASSERT_BETWEEN(took, timeout_ms - 2, timeout_ms + test_slack_ms(4000));

    /* the client comes back once the server does */
    int64_t deadline = test_now_ms() + test_slack_ms(5000);
    while ((rc = dlock_client_ping(c)) != DLOCK_OK && test_now_ms() < deadline)
        test_sleep_ms(20);
    assert_int_equal(rc, DLOCK_OK);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_a_command_bigger_than_the_socket_takes_is_sent_whole(void **state) {
    (void)state;
    test_watchdog_arm(300, __func__);
    redis_fixture *f = start_server();
    /* a reply timeout far longer than the send takes: the one timer the poll sleeps toward
     * (the ping's reply deadline) is that far away */
    const int64_t timeout_ms = 100000;
    dlock_client *c = connect_client_cfg(f, (test_client_cfg){.timeout_ms = timeout_ms});
    assert_int_equal(dlock_client_ping(c), DLOCK_OK);
    let_the_client_idle(100);

    /* 16 MiB: far more than a socket's send buffer, so one send cannot take it */
    size_t size = 16u << 20;
    char *value = malloc(size + 1);
    assert_non_null(value);
    for (size_t i = 0; i < size; i++)
        value[i] = (char)('a' + i % 26);
    value[size] = '\0';
    const char *set[] = {"SET", "big", value, NULL};
    int64_t start = test_now_ms();
    core_reply *r = core_call(c, 0, set);
    int64_t took = test_now_ms() - start;
    printf("# SET of %zu bytes: %lld ms\n", size, (long long)took);
    assert_int_equal(r->status, DLOCK_OK);
    /* a send left half done would wait for the 100 s reply timeout */
    ASSERT_BETWEEN(took, 0, test_slack_ms(15000));
    assert_string_equal(r->str, "OK");
    core_reply_free(r);

    const char *strlen_argv[] = {"STRLEN", "big", NULL};
    r = core_call(c, 0, strlen_argv);
    assert_int_equal(r->status, DLOCK_OK);
    assert_int_equal(r->integer, (long long)size);
    core_reply_free(r);
    free(value);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- a caller whose calls need no I/O ------------------------------------------------------ */

typedef struct spinner {
    dlock_lock *lock;
    atomic_bool stop;
    long calls, failures;
} spinner;

/* Asks its own lock's fencing token, a call answered from the client's memory: started on
 * this thread each time the loop is free, and done before it gives the loop back. */
static void *spinner_main(void *arg) {
    spinner *s = arg;
    if (dlock_lock_acquire(s->lock, 30000) != DLOCK_OK) {
        s->failures++;
        return NULL;
    }
    while (!atomic_load(&s->stop)) {
        uint64_t token = 0;
        if (dlock_lock_token(s->lock, &token) != DLOCK_OK || token == 0)
            s->failures++;
        s->calls++;
    }
    if (dlock_lock_release(s->lock) != DLOCK_OK)
        s->failures++;
    return NULL;
}

static void test_a_caller_looping_on_calls_without_io_never_keeps_the_io_thread_out(void **state) {
    (void)state;
    if (test_under_valgrind()) {
        /* valgrind runs one thread at a time and leaves a thread that makes no system call
         * on the CPU for long stretches: there any spinning thread keeps every other one
         * out, the I/O thread and this one alike. The other stages run it. */
        printf("# skipped under valgrind: its scheduler, not the client's, decides here\n");
        skip();
    }
    test_watchdog_arm(120, __func__);
    redis_fixture *f = start_server();
    /* A lease the I/O thread renews every second. Were it kept out of the loop by the
     * spinner, it would renew nothing at all while the spinner runs (4 s, past the lease);
     * a lease long enough for a loaded machine still tells the two apart. */
    const int64_t watchdog_ms = 3000;
    const int64_t spin_ms = 4000;
    dlock_client *c = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = watchdog_ms});
    dlock_lock *held, *spun;
    assert_int_equal(dlock_fencedlock_new(c, "held", &held), DLOCK_OK);
    assert_int_equal(dlock_fencedlock_new(c, "spun", &spun), DLOCK_OK);
    assert_int_equal(dlock_lock_acquire(held, DLOCK_WATCHDOG), DLOCK_OK);
    dlock_stats before;
    dlock_stats_init(&before);
    assert_int_equal(dlock_client_stats(c, &before), DLOCK_OK);

    spinner s = {.lock = spun};
    atomic_init(&s.stop, false);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, spinner_main, &s), 0);
    /* meanwhile this thread's calls need the I/O thread (their replies), as the renewals do */
    int64_t longest_ping = 0, end = test_now_ms() + spin_ms;
    int pings = 0, ping_failures = 0;
    while (test_now_ms() < end) {
        int64_t start = test_now_ms();
        if (dlock_client_ping(c) != DLOCK_OK)
            ping_failures++;
        int64_t took = test_now_ms() - start;
        longest_ping = took > longest_ping ? took : longest_ping;
        pings++;
        test_sleep_ms(20);
    }
    atomic_store(&s.stop, true);
    pthread_join(t, NULL);

    dlock_stats st;
    dlock_stats_init(&st);
    assert_int_equal(dlock_client_stats(c, &st), DLOCK_OK);
    bool still_held = false;
    assert_int_equal(dlock_lock_is_held(held, &still_held), DLOCK_OK);
    printf("# %ld local calls beside %d pings (longest %lld ms): %llu renewals, worst lag "
           "%lld ms, %llu lost\n",
           s.calls, pings, (long long)longest_ping, (unsigned long long)st.renewals_sent,
           (long long)st.renewal_lag_max_ms, (unsigned long long)st.leases_lost);
    assert_int_equal(s.failures, 0);
    assert_true(s.calls > 0);
    /* every ping answered within its reply timeout, and the watchdog ran beside the
     * spinner: how fast is make bench's question, not this test's */
    assert_int_equal(ping_failures, 0);
    assert_true(st.renewals_sent > before.renewals_sent);
    assert_int_equal(st.leases_lost, 0);
    assert_true(still_held);
    assert_int_equal(dlock_lock_release(held), DLOCK_OK);
    dlock_lock_free(spun);
    dlock_lock_free(held);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- many threads, one client ------------------------------------------------------------- */

#define THREADS 16
#define CALLS 400

typedef struct echo_worker {
    dlock_client *c;
    int index;
    int mismatches, failures;
} echo_worker;

/* Each call asks the server to echo a value only this thread sends: a reply handed to the
 * wrong caller, or a caller woken before its reply, shows as a mismatch. */
static void *echo_main(void *arg) {
    echo_worker *w = arg;
    for (int i = 0; i < CALLS; i++) {
        char value[64];
        snprintf(value, sizeof(value), "thread-%d-call-%d", w->index, i);
        const char *argv[] = {"ECHO", value, NULL};
        core_reply *r = core_call(w->c, 0, argv);
        if (r->status != DLOCK_OK)
            w->failures++;
        else if (!r->str || strcmp(r->str, value) != 0)
            w->mismatches++;
        core_reply_free(r);
    }
    return NULL;
}

static void test_many_threads_each_get_their_own_reply(void **state) {
    (void)state;
    test_watchdog_arm(120, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    echo_worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (echo_worker){.c = c, .index = i};
        assert_int_equal(pthread_create(&t[i], NULL, echo_main, &w[i]), 0);
    }
    int mismatches = 0, failures = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        mismatches += w[i].mismatches;
        failures += w[i].failures;
    }
    dlock_stats s;
    dlock_stats_init(&s);
    assert_int_equal(dlock_client_stats(c, &s), DLOCK_OK);
    assert_int_equal(s.calls_in_flight, 0);
    printf("# %d threads x %d calls: %d failed, %d got another's reply\n", THREADS, CALLS, failures,
           mismatches);
    assert_int_equal(failures, 0);
    assert_int_equal(mismatches, 0);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_call_started_on_the_callers_thread_times_out_on_time),
        cmocka_unit_test(test_a_command_bigger_than_the_socket_takes_is_sent_whole),
        cmocka_unit_test(test_a_caller_looping_on_calls_without_io_never_keeps_the_io_thread_out),
        cmocka_unit_test(test_many_threads_each_get_their_own_reply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
