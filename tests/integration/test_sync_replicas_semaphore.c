/* SPDX-License-Identifier: MIT */
/* test_sync_replicas_semaphore.c — ?sync_replicas for the semaphore and the expiring-permits
 * semaphore: an acquisition too few replicas acknowledged is given back, every other write
 * stands. A master and one replica for the whole file (replica_pair.h); a test that pauses
 * the replica leaves it to the teardown to resume it.
 *
 *   auto (the default) and the replica in sync: an acquire sends one WAIT and succeeds;
 *   the replica paused: try_acquire(wait 1500) is DLOCK_ETIMEDOUT after ~1.5 s naming
 *     "0 of 1", the permits are back on the master (no permit id left in {N}:timeout), and
 *     the attempts were few (no tight loop);
 *   the replica resumed while an acquire waits: the acquire gets its permit within its wait;
 *   a WAIT the ACL refuses: an acquire gives its permits back and is DLOCK_ENOPERM;
 *   a release with the replica paused is DLOCK_OK, the permits are back, and it sent no
 *     WAIT (a release stands whatever the replicas say) and warns of nothing; a latch's
 *     count-down waits for its WAIT, stands, and warns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core_call.h"
#include "harness.h"
#include "replica_pair.h"

static dlock_client *client(void) {
    return connect_client_cfg(NULL, (test_client_cfg){.url = redis_fixture_unix_url(pair_master)});
}

static dlock_semaphore *semaphore_with(dlock_client *c, const char *name, int64_t permits) {
    dlock_semaphore *s;
    ASSERT_OK(dlock_semaphore_new(c, name, &s));
    ASSERT_OK(dlock_semaphore_try_set_permits(s, permits, NULL));
    return s;
}

static dlock_permits *permits_with(dlock_client *c, const char *name, int64_t permits) {
    dlock_permits *p;
    ASSERT_OK(dlock_permits_new(c, name, &p));
    ASSERT_OK(dlock_permits_try_set_permits(p, permits, NULL));
    return p;
}

/* The call just made failed because too few replicas acknowledged, and says so. */
static void assert_given_back_naming(const char *acked) {
    const char *why = dlock_last_error();
    if (!strstr(why, acked) || !strstr(why, "so it was given back"))
        fail_msg("the error \"%s\" does not say %s and given back", why, acked);
}

/* With the replica paused, acquire_1500(arg), an acquire waiting 1500 ms, is
 * DLOCK_ETIMEDOUT after about that long, naming "0 of 1" and the give-back; in few
 * attempts: each is an acquire and its give-back and waits for its WAIT (sync_timeout_ms,
 * 1000 ms by default, or the time left), so there are 2 to 4, never a tight loop. */
static void assert_given_back_after_1500_ms(int (*acquire_1500)(void *arg), void *arg) {
    assert_int_equal(redis_fixture_pause(pair_replica), 0);
    long long scripts = script_calls(pair_master);
    int64_t start = test_now_ms();
    ASSERT_RC(acquire_1500(arg), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    assert_given_back_naming("0 of 1 replicas acknowledged it");
    if (took < 1400 || took > slack_ms(2600))
        fail_msg("an acquire waiting 1500 ms failed after %lld ms", (long long)took);
    long long ran = script_calls(pair_master) - scripts;
    printf("# 1500 ms wait with the replica paused: %lld scripts (acquires and give-backs)\n", ran);
    ASSERT_BETWEEN(ran, 2, 8);
}

/* ---- the replica in sync ----------------------------------------------------------------- */

static void test_semaphore_acquire_sends_one_wait_and_stands(void **state) {
    (void)state;
    dlock_client *c = client();
    dlock_semaphore *s = semaphore_with(c, "sem-synced", 3);
    long long waits = command_calls(pair_master, "wait");
    ASSERT_OK(dlock_semaphore_try_acquire(s, 2, 30000));
    assert_int_equal(command_calls(pair_master, "wait") - waits, 1);
    assert_int_equal(redis_fixture_int(pair_master, "GET sem-synced"), 1);
    assert_int_equal(redis_fixture_int(pair_replica, "GET sem-synced"), 1); /* WAIT 1 returned 1 */
    dlock_semaphore_free(s);
    dlock_client_free(c);
}

static void test_permits_acquire_sends_one_wait_and_stands(void **state) {
    (void)state;
    dlock_client *c = client();
    dlock_permits *p = permits_with(c, "pm-synced", 2);
    long long waits = command_calls(pair_master, "wait");
    dlock_permit_id id;
    ASSERT_OK(dlock_permits_acquire(p, 30000, 60000, &id));
    assert_int_equal(command_calls(pair_master, "wait") - waits, 1);
    assert_int_equal(redis_fixture_int(pair_master, "GET pm-synced"), 1);
    assert_int_equal(redis_fixture_int(pair_replica, "ZCARD {pm-synced}:timeout"), 1);
    dlock_permits_free(p);
    dlock_client_free(c);
}

/* ---- the replica paused: acquisitions given back ---------------------------------------- */

static int semaphore_acquire_1500(void *s) {
    return dlock_semaphore_try_acquire(s, 1, 1500);
}

static void
test_semaphore_acquire_with_the_replica_paused_times_out_and_gives_the_permits_back(void **state) {
    (void)state;
    dlock_client *c = client();
    dlock_semaphore *s = semaphore_with(c, "sem-unacked", 3);
    assert_given_back_after_1500_ms(semaphore_acquire_1500, s);
    assert_int_equal(redis_fixture_int(pair_master, "GET sem-unacked"), 3);
    dlock_semaphore_free(s);
    dlock_client_free(c);
}

static int permits_acquire_1500(void *p) {
    dlock_permit_id id;
    return dlock_permits_acquire(p, 1500, 60000, &id);
}

static void
test_permits_acquire_with_the_replica_paused_times_out_and_leaves_no_permit(void **state) {
    (void)state;
    dlock_client *c = client();
    dlock_permits *p = permits_with(c, "pm-unacked", 2);
    assert_given_back_after_1500_ms(permits_acquire_1500, p);
    assert_int_equal(redis_fixture_int(pair_master, "GET pm-unacked"), 2);
    assert_int_equal(redis_fixture_int(pair_master, "ZCARD {pm-unacked}:timeout"), 0);
    dlock_permits_free(p);
    dlock_client_free(c);
}

static void test_a_single_attempt_with_the_replica_paused_takes_nothing(void **state) {
    (void)state;
    dlock_client *c = client();
    dlock_semaphore *s = semaphore_with(c, "sem-once", 1);
    dlock_permits *p = permits_with(c, "pm-once", 1);
    assert_int_equal(redis_fixture_pause(pair_replica), 0);
    ASSERT_RC(dlock_semaphore_try_acquire(s, 1, 0), DLOCK_ETIMEDOUT);
    assert_given_back_naming("0 of 1");
    dlock_permit_id id;
    ASSERT_RC(dlock_permits_acquire(p, 0, -1, &id), DLOCK_ETIMEDOUT);
    assert_given_back_naming("0 of 1");
    assert_int_equal(redis_fixture_int(pair_master, "GET sem-once"), 1);
    assert_int_equal(redis_fixture_int(pair_master, "GET pm-once"), 1);
    assert_int_equal(redis_fixture_int(pair_master, "ZCARD {pm-once}:timeout"), 0);
    dlock_permits_free(p);
    dlock_semaphore_free(s);
    dlock_client_free(c);
}

static int acquire_one_within_10_s(void *arg) {
    return dlock_semaphore_try_acquire(arg, 1, 10000);
}

static void test_an_acquire_gets_its_permit_once_the_replica_is_back_within_its_wait(void **state) {
    (void)state;
    dlock_client *c = client();
    dlock_semaphore *s = semaphore_with(c, "sem-later", 3);
    assert_int_equal(redis_fixture_pause(pair_replica), 0);
    long long scripts = script_calls(pair_master);
    blocking_call call;
    blocking_call_start(&call, acquire_one_within_10_s, s);
    bool given_back = false; /* an acquire and its give-back ran: the first attempt failed */
    POLL_UNTIL(given_back, script_calls(pair_master) - scripts >= 2, slack_ms(5000));
    assert_true(given_back);
    assert_false(blocking_call_returned(&call));
    assert_int_equal(redis_fixture_resume(pair_replica), 0);
    ASSERT_OK(blocking_call_join(&call));
    assert_int_equal(redis_fixture_int(pair_master, "GET sem-later"), 2);
    assert_int_equal(redis_fixture_int(pair_replica, "GET sem-later"), 2); /* it was acknowledged */
    dlock_semaphore_free(s);
    dlock_client_free(c);
}

/* ---- a WAIT the ACL refuses ------------------------------------------------------------- */

static void test_a_wait_the_acl_refuses_gives_the_permits_back_and_is_enoperm(void **state) {
    (void)state;
    freeReplyObject(redis_fixture_cmd(pair_master, "ACL SETUSER nowait on >pw ~* &* +@all -wait"));
    char *url = replica_pair_url("?user=nowait&password=pw");
    dlock_client *c = connect_client_cfg(NULL, (test_client_cfg){.url = url});
    dlock_semaphore *s = semaphore_with(c, "sem-nowait", 2); /* stands, unacknowledged */
    dlock_permits *p = permits_with(c, "pm-nowait", 2);
    ASSERT_RC(dlock_semaphore_try_acquire(s, 1, 30000), DLOCK_ENOPERM);
    assert_non_null(strstr(dlock_last_error(), "WAIT refused"));
    assert_non_null(strstr(dlock_last_error(), "given back"));
    dlock_permit_id id;
    ASSERT_RC(dlock_permits_acquire(p, 30000, 60000, &id), DLOCK_ENOPERM);
    assert_int_equal(redis_fixture_int(pair_master, "GET sem-nowait"), 2);
    assert_int_equal(redis_fixture_int(pair_master, "GET pm-nowait"), 2);
    assert_int_equal(redis_fixture_int(pair_master, "ZCARD {pm-nowait}:timeout"), 0);
    dlock_permits_free(p);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    free(url);
    freeReplyObject(redis_fixture_cmd(pair_master, "ACL DELUSER nowait"));
}

/* ---- the replica paused: releases stand, with no WAIT ------------------------------------ */

static void test_releases_with_the_replica_paused_are_ok_and_send_no_wait(void **state) {
    (void)state;
    dlock_client *c = client_keeping_warnings(redis_fixture_unix_url(pair_master));
    dlock_semaphore *s = semaphore_with(c, "sem-released", 2);
    dlock_permits *p = permits_with(c, "pm-released", 2);
    ASSERT_OK(dlock_semaphore_try_acquire(s, 2, 30000));
    dlock_permit_id id;
    ASSERT_OK(dlock_permits_acquire(p, 30000, 60000, &id));
    warnings_clear();
    assert_int_equal(redis_fixture_pause(pair_replica), 0);
    long long waits = command_calls(pair_master, "wait");
    ASSERT_OK(dlock_semaphore_release(s, 2));
    assert_int_equal(redis_fixture_int(pair_master, "GET sem-released"), 2);
    ASSERT_OK(dlock_permits_release(p, &id));
    assert_int_equal(redis_fixture_int(pair_master, "GET pm-released"), 2);
    assert_int_equal(redis_fixture_int(pair_master, "ZCARD {pm-released}:timeout"), 0);
    assert_int_equal(command_calls(pair_master, "wait") - waits, 0);
    assert_false(warnings_have("replicas acknowledged"));
    /* a count-down is no release: it waits for its WAIT, stands, and says so */
    dlock_latch *l;
    ASSERT_OK(dlock_latch_new(c, "latch-unacked", &l));
    redisReply *r = redis_fixture_cmd(pair_master, "SET latch-unacked 2");
    assert_non_null(r);
    freeReplyObject(r);
    ASSERT_OK(dlock_latch_count_down(l));
    assert_int_equal(redis_fixture_int(pair_master, "GET latch-unacked"), 1);
    assert_int_equal(command_calls(pair_master, "wait") - waits, 1);
    assert_true(warnings_have("semaphore/latch_count_down: 0 of 1 replicas acknowledged the "
                              "write within 1000 ms; it stands (sync_replicas)"));
    dlock_latch_free(l);
    dlock_permits_free(p);
    dlock_semaphore_free(s);
    dlock_client_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_semaphore_acquire_sends_one_wait_and_stands,
                                  replica_pair_resume_teardown),
        cmocka_unit_test_teardown(test_permits_acquire_sends_one_wait_and_stands,
                                  replica_pair_resume_teardown),
        cmocka_unit_test_teardown(
            test_semaphore_acquire_with_the_replica_paused_times_out_and_gives_the_permits_back,
            replica_pair_resume_teardown),
        cmocka_unit_test_teardown(
            test_permits_acquire_with_the_replica_paused_times_out_and_leaves_no_permit,
            replica_pair_resume_teardown),
        cmocka_unit_test_teardown(test_a_single_attempt_with_the_replica_paused_takes_nothing,
                                  replica_pair_resume_teardown),
        cmocka_unit_test_teardown(
            test_an_acquire_gets_its_permit_once_the_replica_is_back_within_its_wait,
            replica_pair_resume_teardown),
        cmocka_unit_test_teardown(test_a_wait_the_acl_refuses_gives_the_permits_back_and_is_enoperm,
                                  replica_pair_resume_teardown),
        cmocka_unit_test_teardown(test_releases_with_the_replica_paused_are_ok_and_send_no_wait,
                                  replica_pair_resume_teardown),
    };
    return cmocka_run_group_tests(tests, replica_pair_group_setup, replica_pair_group_teardown);
}
