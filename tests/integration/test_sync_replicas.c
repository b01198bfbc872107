/* SPDX-License-Identifier: MIT */
/* test_sync_replicas.c — ?sync_replicas: a WAIT after every write but a release, and what
 * too few acknowledgements do. A master (TCP, for its replica) and one replica (REPLICAOF) for the
 * whole file; a test that pauses the replica (SIGSTOP: it acknowledges nothing) resumes it
 * and waits until it acknowledges again. A standalone server of its own where a test says.
 *
 *   auto (the default): a lock acquire sends WAIT 1 and succeeds; its release sends none,
 *     and the next acquisition's WAIT covers it;
 *   the replica paused: try_acquire(wait 1500) is DLOCK_ETIMEDOUT after ~1.5 s naming
 *     "0 of 1", nothing is held, and the attempts were few (no tight loop);
 *   a release with the replica paused is DLOCK_OK (and the lock is gone): it waits for no
 *     WAIT, and warns of nothing;
 *   a standalone server gets no WAIT; sync_replicas=0 sends none;
 *   a lone caller reads an acquisition's reply and its WAIT's itself (the I/O thread is not
 *     woken for them); it spins for the WAIT's answer (dlock_options.reply_spin_us) with a
 *     policy of its own: an answer that comes late (the replica paused) is one spin, a
 *     miss within the budget, that makes the next answer's wait sleep at once and leaves
 *     the policy for the server's own replies as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/engine.h"
#include "harness.h"
#include "io_thread_switches.h"
#include "replica_pair.h"
#include "spin_skip.h"
#include "stats_helpers.h"

static dlock_client *client_of(const char *url) {
    return connect_client_cfg(NULL, (test_client_cfg){.url = url});
}

/* ---- auto --------------------------------------------------------------------------------- */

static void test_auto_acquire_sends_wait_1_and_the_next_covers_the_release(void **state) {
    (void)state;
    dlock_client *c = client_of(redis_fixture_unix_url(pair_master));
    dlock_lock *l, *next;
    ASSERT_OK(dlock_lock_new(c, "synced", &l));
    ASSERT_OK(dlock_lock_new(c, "synced-next", &next));
    long long waits = command_calls(pair_master, "wait");
    ASSERT_OK(dlock_lock_acquire(l, 30000));
    assert_int_equal(command_calls(pair_master, "wait") - waits, 1);
    assert_int_equal(redis_fixture_int(pair_replica, "EXISTS synced"), 1); /* WAIT 1 returned 1 */
    ASSERT_OK(dlock_lock_release(l));
    assert_int_equal(command_calls(pair_master, "wait") - waits, 1); /* none of its own */
    ASSERT_OK(dlock_lock_acquire(next, 30000));
    assert_int_equal(command_calls(pair_master, "wait") - waits, 2);
    /* that WAIT 1 returned 1: the replica has every write before it, the release too */
    assert_int_equal(redis_fixture_int(pair_replica, "EXISTS synced"), 0);
    ASSERT_OK(dlock_lock_release(next));
    dlock_lock_free(next);
    dlock_lock_free(l);
    dlock_client_free(c);
}

static void
test_acquire_with_the_replica_paused_times_out_naming_0_of_1_and_holds_nothing(void **state) {
    (void)state;
    dlock_client *c = client_of(redis_fixture_unix_url(pair_master));
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(c, "unacked", &l));
    assert_int_equal(redis_fixture_pause(pair_replica), 0);
    long long scripts = script_calls(pair_master);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(l, 1500, 30000), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    const char *why = dlock_last_error();
    if (!strstr(why, "0 of 1 replicas acknowledged"))
        fail_msg("the error \"%s\" does not say 0 of 1 replicas acknowledged", why);
    if (took < 1400 || took > 1500 + test_prompt_ms())
        fail_msg("try_acquire(wait 1500) failed after %lld ms", (long long)took);
    assert_int_equal(redis_fixture_int(pair_master, "EXISTS unacked"), 0);
    /* each attempt waited for its WAIT: an acquire and its give-back per attempt, few */
    long long ran = script_calls(pair_master) - scripts;
    printf("# 1500 ms wait with the replica paused: %lld scripts (acquires and give-backs)\n", ran);
    assert_true(ran >= 2 && ran <= 8);
    dlock_lock_free(l);
    dlock_client_free(c);
}

static void test_a_single_attempt_with_the_replica_paused_holds_nothing(void **state) {
    (void)state;
    dlock_client *c = client_of(redis_fixture_unix_url(pair_master));
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(c, "unacked-once", &l));
    assert_int_equal(redis_fixture_pause(pair_replica), 0);
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 30000), DLOCK_ETIMEDOUT);
    assert_non_null(strstr(dlock_last_error(), "0 of 1"));
    assert_int_equal(redis_fixture_int(pair_master, "EXISTS unacked-once"), 0);
    assert_int_equal(redis_fixture_resume(pair_replica), 0);
    replica_pair_wait_acknowledged();
    ASSERT_OK(dlock_lock_try_acquire(l, 0, 30000)); /* acknowledged again: it stands */
    assert_int_equal(redis_fixture_int(pair_master, "EXISTS unacked-once"), 1);
    ASSERT_OK(dlock_lock_release(l));
    dlock_lock_free(l);
    dlock_client_free(c);
}

static void
test_release_with_the_replica_paused_is_ok_frees_the_lock_and_sends_no_wait(void **state) {
    (void)state;
    dlock_client *c = client_keeping_warnings(redis_fixture_unix_url(pair_master));
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(c, "released-unacked", &l));
    ASSERT_OK(dlock_lock_acquire(l, 30000));
    warnings_clear();
    assert_int_equal(redis_fixture_pause(pair_replica), 0);
    long long waits = command_calls(pair_master, "wait");
    ASSERT_OK(dlock_lock_release(l));
    assert_int_equal(redis_fixture_int(pair_master, "EXISTS released-unacked"), 0);
    assert_int_equal(command_calls(pair_master, "wait") - waits, 0);
    assert_false(warnings_have("replicas acknowledged"));
    dlock_lock_free(l);
    dlock_client_free(c);
}

/* ---- no WAIT ------------------------------------------------------------------------------- */

static void test_a_standalone_server_gets_no_wait(void **state) {
    (void)state;
    redis_fixture *alone = start_server();
    dlock_client *c = connect_client(alone);
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(c, "alone", &l));
    ASSERT_OK(dlock_lock_acquire(l, 30000));
    ASSERT_OK(dlock_lock_release(l));
    assert_int_equal(command_calls(alone, "role"), 1); /* it was asked, and has none */
    assert_int_equal(command_calls(alone, "wait"), 0);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(alone);
}

static void test_sync_replicas_0_sends_no_wait_even_with_the_replica_paused(void **state) {
    (void)state;
    char *url = replica_pair_url("?sync_replicas=0");
    dlock_client *c = client_of(url);
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(c, "unsynced", &l));
    assert_int_equal(redis_fixture_pause(pair_replica), 0);
    long long waits = command_calls(pair_master, "wait");
    ASSERT_OK(dlock_lock_try_acquire(l, 0, 30000));
    ASSERT_OK(dlock_lock_release(l));
    /* no WAIT reached the server (a WAIT would also have made the acquire time out, the
     * replica being paused) */
    assert_int_equal(command_calls(pair_master, "wait") - waits, 0);
    dlock_lock_free(l);
    dlock_client_free(c);
    free(url);
}

static void test_sync_replicas_n_asks_for_n(void **state) {
    (void)state;
    char *url = replica_pair_url("?sync_replicas=2&sync_timeout_ms=200");
    dlock_client *c = client_of(url);
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(c, "two", &l));
    /* only one exists; a single attempt gives its WAIT DLOCK__SYNC_MIN_MS (100), less than
     * sync_timeout_ms */
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 30000), DLOCK_ETIMEDOUT);
    assert_non_null(strstr(dlock_last_error(), "1 of 2 replicas acknowledged it within 100 ms"));
    ASSERT_RC(dlock_lock_try_acquire(l, 1000, 30000), DLOCK_ETIMEDOUT);
    assert_non_null(strstr(dlock_last_error(), "1 of 2 replicas acknowledged it within"));
    assert_int_equal(redis_fixture_int(pair_master, "EXISTS two"), 0);
    dlock_lock_free(l);
    dlock_client_free(c);
    free(url);
}

/* ---- a lone caller's acknowledged acquisition --------------------------------------------------
 */

#define ACKED_PAIRS 300

static void test_a_lone_caller_reads_its_acquisitions_wait_itself(void **state) {
    (void)state;
    dlock_options o;
    dlock_options_init(&o);
    o.url = redis_fixture_unix_url(pair_master);
    o.reply_spin_us = 1000;
    long before[MAX_TASKS], io[MAX_TASKS];
    int nbefore, nio;
    tasks_of_process(before, &nbefore);
    dlock_client *c = NULL;
    ASSERT_OK(dlock_client_new(&o, &c));
    threads_since(before, nbefore, io, &nio);
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(c, "lone-acked", &l));
    ASSERT_OK(dlock_lock_acquire(l, 30000)); /* scripts loaded, the replica counted */
    ASSERT_OK(dlock_lock_release(l));

    long waits = command_calls(pair_master, "wait");
    long slept = switches_of(io, nio);
    for (int i = 0; i < ACKED_PAIRS; i++) {
        ASSERT_OK(dlock_lock_acquire(l, 30000));
        ASSERT_OK(dlock_lock_release(l));
    }
    long woken = switches_of(io, nio) - slept;
    assert_int_equal(command_calls(pair_master, "wait") - waits, ACKED_PAIRS); /* one each */
    printf("# %d acknowledged pairs: the I/O thread slept %ld times\n", ACKED_PAIRS, woken);
    /* Were the I/O thread reading the acquisitions' replies, it would sleep again after
     * each: at least once per acquisition. Lent, it wakes for its own timers only. */
    assert_true(woken < ACKED_PAIRS);
    dlock_lock_free(l);
    dlock_client_free(c);
}

static void test_a_late_wait_answer_is_a_miss_of_the_wait_spin_alone(void **state) {
    (void)state;
    skip_unless_it_may_spin();
    dlock_options o;
    dlock_options_init(&o);
    o.url = redis_fixture_unix_url(pair_master);
    o.reply_spin_us = 1000;
    dlock_client *c = NULL;
    ASSERT_OK(dlock_client_new(&o, &c));
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(c, "late-answer", &l));
    ASSERT_OK(dlock_lock_acquire(l, 30000)); /* scripts loaded, the replica counted */
    ASSERT_OK(dlock_lock_release(l));
    /* Fresh policies (only this thread, the lone caller, touches them): the server's own
     * replies are never spun for, so a spin below can only be for a WAIT's answer. */
    dlock__client_engine *e = DLOCK__ENGINE(c);
    dlock__spin_init(&e->spin, 0);
    dlock__spin_init(&e->wait_spin, 1000);

    assert_int_equal(redis_fixture_pause(pair_replica), 0);
    dlock_stats before = stats_of(c);
    /* one attempt: its WAIT waits 100 ms (the least an attempt's WAIT is given) for nobody */
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 30000), DLOCK_ETIMEDOUT);
    assert_non_null(strstr(dlock_last_error(), "0 of 1"));
    dlock_stats after = stats_of(c);
    assert_int_equal(after.reply_spins, before.reply_spins + 1);
    assert_int_equal(after.reply_spin_hits, before.reply_spin_hits);
    /* at most its budget and one turn (a turn that gave the CPU away ends it) */
    assert_true(after.reply_spin_us - before.reply_spin_us <= 1000 + 10);
    /* the miss backs off the WAIT's policy, not the one of the server's replies */
    assert_int_equal(e->wait_spin.backoff, 1);
    assert_int_equal(e->wait_spin.skip, 1);
    assert_int_equal(e->spin.backoff, 0);
    assert_int_equal(e->spin.skip, 0);

    assert_int_equal(redis_fixture_resume(pair_replica), 0);
    replica_pair_wait_acknowledged();
    /* the next answer's wait sleeps at once: no spin (or there is no wait for it: an answer
     * read with the acquisition's reply, on a machine that kept the caller from its poll) */
    ASSERT_OK(dlock_lock_try_acquire(l, 0, 30000));
    assert_int_equal(stats_of(c).reply_spins, after.reply_spins);
    ASSERT_OK(dlock_lock_release(l));
    dlock_lock_free(l);
    dlock_client_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_auto_acquire_sends_wait_1_and_the_next_covers_the_release,
                                  replica_pair_resume_teardown),
        cmocka_unit_test_teardown(
            test_acquire_with_the_replica_paused_times_out_naming_0_of_1_and_holds_nothing,
            replica_pair_resume_teardown),
        cmocka_unit_test_teardown(test_a_single_attempt_with_the_replica_paused_holds_nothing,
                                  replica_pair_resume_teardown),
        cmocka_unit_test_teardown(
            test_release_with_the_replica_paused_is_ok_frees_the_lock_and_sends_no_wait,
            replica_pair_resume_teardown),
        cmocka_unit_test_teardown(test_a_standalone_server_gets_no_wait,
                                  replica_pair_resume_teardown),
        cmocka_unit_test_teardown(test_sync_replicas_0_sends_no_wait_even_with_the_replica_paused,
                                  replica_pair_resume_teardown),
        cmocka_unit_test_teardown(test_sync_replicas_n_asks_for_n, replica_pair_resume_teardown),
        cmocka_unit_test_teardown(test_a_lone_caller_reads_its_acquisitions_wait_itself,
                                  replica_pair_resume_teardown),
        cmocka_unit_test_teardown(test_a_late_wait_answer_is_a_miss_of_the_wait_spin_alone,
                                  replica_pair_resume_teardown),
    };
    return cmocka_run_group_tests(tests, replica_pair_group_setup, replica_pair_group_teardown);
}
