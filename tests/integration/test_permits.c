/* SPDX-License-Identifier: MIT */
/* test_permits.c — the permit-expirable semaphore (Redisson RPermitExpirableSemaphore) of
 * src/semaphore/permits.c, blocking and async faces, against a real redis-server.
 *
 * What is proven (here and in the files split from it): a permit with a lease comes back to the
 * pool by itself when the lease ends (measured with the server's clock), and a waiter on an empty
 * pool is woken by the earliest lease end, not by the 5 s recheck; a holder process killed with
 * SIGKILL gives its permit back within its lease; release and update_lease by id (expired, unknown
 * and already released ids are DLOCK_ENOTOWNER, and never give a permit back twice); the Redis
 * layout of REDIS_LAYOUT.md read back with plain commands (the count string, the
 * "{N}:timeout" sorted set of raw 16-byte ids scored by server TIME + lease, the no-lease
 * score, the "redisson_sc:{N}" channel and its messages); the async face on the
 * application's own libev loop; bad input (DLOCK_EINVAL with no I/O, malformed ids, keys
 * of another type).
 *
 * Every test starts its own server.
 *
 * Split by concern: leases, the killed holder, release and update_lease by id here; the layout
 * in test_permits_layout.c, bad input and the async face in test_permits_async.c. Helpers:
 * tests/support/permits_helpers.h.
 */
#include "permits_helpers.h"
#include "wake_count.h"

/* ---- leases ------------------------------------------------------------------------------ */

static void
test_permit_with_a_300_ms_lease_is_back_in_the_pool_after_300_ms_unreleased(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "leased");
    ASSERT_RC(dlock_permits_try_set_permits(p, 3, NULL), DLOCK_OK);
    dlock_permit_id id;
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_permits_acquire(p, 0, 300, &id), DLOCK_OK);
    assert_int_equal(available_of(p), 2);
    bool back = false;
    POLL_UNTIL(back, available_of(p) == 3, 300 + test_prompt_ms());
    int64_t took = test_now_ms() - start;
    assert_true(back);
    ASSERT_BETWEEN(took, 290, 300 + test_prompt_ms()); /* by its lease, not before */
    assert_int_equal(redis_fixture_int(f, "ZCARD {leased}:timeout"), 0);
    assert_int_equal(redis_fixture_int(f, "GET leased"), 3);
    printf("# a 300 ms lease was back in the pool %lld ms after the acquire\n", (long long)took);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_waiter_on_an_empty_pool_gets_a_permit_when_the_earliest_lease_ends(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_permits *pa = new_permits(a, "earliest");
    dlock_permits *pb = new_permits(b, "earliest");
    ASSERT_RC(dlock_permits_try_set_permits(pa, 2, NULL), DLOCK_OK);
    dlock_permit_id long_id, short_id, got;
    ASSERT_RC(dlock_permits_acquire(pa, 0, 4000, &long_id), DLOCK_OK);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_permits_acquire(pa, 0, 300, &short_id), DLOCK_OK);
    /* nobody releases; the waiter's only news is the lease end it was told of */
    ASSERT_RC(dlock_permits_acquire(pb, test_slack_ms(4500), -1, &got), DLOCK_OK);
    int64_t took = test_now_ms() - start;
    ASSERT_BETWEEN(took, 290, test_slack_ms(1000));
    /* it got the short lease's permit: the long one is still held */
    ASSERT_RC(dlock_permits_release(pa, &short_id), DLOCK_ENOTOWNER);
    zentry z[4];
    assert_int_equal(timeout_set(f, "{earliest}:timeout", z, 4), 2);
    assert_string_equal(z[0].hex, long_id.hex);
    assert_string_equal(z[1].hex, got.hex);
    assert_int_equal(z[1].score, NO_LEASE_SCORE);
    printf("# waiter on an empty pool got the permit %lld ms after a 300 ms lease began\n",
           (long long)took);
    ASSERT_RC(dlock_permits_release(pb, &got), DLOCK_OK);
    ASSERT_RC(dlock_permits_release(pa, &long_id), DLOCK_OK);
    assert_int_equal(available_of(pa), 2);
    dlock_permits_free(pa);
    dlock_permits_free(pb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void test_waiter_on_an_empty_pool_is_woken_by_the_message_of_a_release_by_id(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_permits *pa = new_permits(a, "handed");
    dlock_permits *pb = new_permits(b, "handed");
    ASSERT_RC(dlock_permits_try_set_permits(pa, 1, NULL), DLOCK_OK);
    dlock_permit_id held;
    ASSERT_RC(dlock_permits_acquire(pa, 0, -1, &held), DLOCK_OK);
    waiter w = {.p = pb, .wait_ms = test_slack_ms(10000), .lease_ms = -1};
    int64_t began_ms = test_now_ms();
    start_waiter_and_let_it_sleep(f, "redisson_sc:{handed}", &w);
    uint64_t wakes_before = client_wakes(b);
    int64_t release_start_us = test_now_us();
    ASSERT_RC(dlock_permits_release(pa, &held), DLOCK_OK);
    int64_t release_end_us = test_now_us();
    ASSERT_RC(blocking_call_join(&w.call), DLOCK_OK);
    assert_true(w.call.returned_us >= release_start_us);
    ASSERT_BETWEEN((w.call.returned_us - release_end_us) / 1000, -test_prompt_ms(),
                   test_prompt_ms());
    /* let in by the release's message, not its re-check (wake_count.h) */
    assert_true(let_in_by_a_message(b, wakes_before, began_ms, w.call.returned_us / 1000));
    assert_true(is_lower_hex_32(w.id.hex));
    assert_string_not_equal(w.id.hex, held.hex);
    printf("# release by id -> waiting acquire returned %.2f ms later\n",
           (double)(w.call.returned_us - release_end_us) / 1000.0);
    ASSERT_RC(dlock_permits_release(pb, &w.id), DLOCK_OK);
    dlock_permits_free(pa);
    dlock_permits_free(pb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- a holder process killed with SIGKILL ------------------------------------------------ */

/* The child: its own client (made after the fork), one permit with a lease, then 'A' on the
 * pipe and sleep until killed. Any failure writes 'E' and exits. */
static _Noreturn void permit_holder_child(const char *url, const char *name, int64_t lease_ms,
                                          int wfd) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    dlock_client *c = NULL;
    dlock_permits *p = NULL;
    dlock_permit_id id;
    if (dlock_client_new(&o, &c) != DLOCK_OK || dlock_permits_new(c, name, &p) != DLOCK_OK ||
        dlock_permits_acquire(p, 0, lease_ms, &id) != DLOCK_OK) {
        (void)!write(wfd, "E", 1);
        test_child_exit(1);
    }
    (void)!write(wfd, "A", 1);
    for (;;)
        pause();
}

static pid_t holder_pid; /* the child while it runs, for the teardown */

static int kill_holder_child(void **state) {
    (void)state;
    if (holder_pid > 0) {
        kill(holder_pid, SIGKILL);
        waitpid(holder_pid, NULL, 0);
        holder_pid = 0;
    }
    return 0;
}

static void
test_holder_process_killed_with_sigkill_gives_its_permit_back_within_its_lease(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t lease_ms = 1000;
    freeReplyObject(redis_fixture_cmd(f, "SET crashed 1")); /* one permit */
    int p[2];
    assert_int_equal(pipe(p), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = test_fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        permit_holder_child(redis_fixture_unix_url(f), "crashed", lease_ms, p[1]);
    }
    holder_pid = pid;
    close(p[1]);
    struct pollfd pfd = {.fd = p[0], .events = POLLIN};
    assert_int_equal(poll(&pfd, 1, (int)test_slack_ms(10000)), 1);
    char got = 0;
    assert_int_equal(read(p[0], &got, 1), 1);
    close(p[0]);
    if (got != 'A')
        fail_msg("the holder child could not take the permit");
    assert_int_equal(kill(pid, SIGKILL), 0);
    int64_t killed_at = test_now_ms();
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    holder_pid = 0;
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    /* the dead child's permit is in the sorted set with its lease end */
    zentry z[2];
    assert_int_equal(timeout_set(f, "{crashed}:timeout", z, 2), 1);
    assert_int_equal(z[0].raw_len, 16);
    /* the local time is read before the server's: the lease ends no sooner than left_ms
     * after it (read after, a slow TIME reply would move that point late, and "not before
     * the lease ended" would demand more than the lease) */
    int64_t left_read_at = test_now_ms();
    long long left_ms = z[0].score - server_time_ms(f);
    ASSERT_BETWEEN(left_ms, -test_slack_ms(1000), lease_ms);

    dlock_client *c = connect_client(f);
    dlock_permits *pp = new_permits(c, "crashed");
    dlock_permit_id id;
    if (left_ms > 50)
        ASSERT_RC(dlock_permits_acquire(pp, 0, -1, &id), DLOCK_ETIMEDOUT); /* still its lease */
    ASSERT_RC(dlock_permits_acquire(pp, test_slack_ms(10000), -1, &id), DLOCK_OK);
    int64_t got_at = test_now_ms();
    int64_t took = got_at - killed_at;
    ASSERT_BETWEEN(took, 0, lease_ms + test_prompt_ms());
    assert_true(got_at - left_read_at >= left_ms - 5); /* not before the lease ended */
    assert_int_equal(timeout_set(f, "{crashed}:timeout", z, 2), 1);
    assert_string_equal(z[0].hex, id.hex);
    ASSERT_RC(dlock_permits_release(pp, &id), DLOCK_OK);
    assert_int_equal(available_of(pp), 1);
    printf("# holder killed %lld ms before its lease ended; permit taken %lld ms after the kill "
           "(lease %lld ms)\n",
           left_ms, (long long)took, (long long)lease_ms);
    dlock_permits_free(pp);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- release and update_lease by id ------------------------------------------------------ */

static void
test_release_of_an_expired_permit_is_enotowner_and_gives_nothing_back_twice(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "expired");
    ASSERT_RC(dlock_permits_try_set_permits(p, 1, NULL), DLOCK_OK);
    dlock_permit_id id;
    ASSERT_RC(dlock_permits_acquire(p, 0, 200, &id), DLOCK_OK);
    zentry z[2];
    assert_int_equal(timeout_set(f, "{expired}:timeout", z, 2), 1);
    wait_server_time_past(f, z[0].score);
    /* no call came since: the expired permit is still in the set; release finds it gone */
    ASSERT_RC(dlock_permits_release(p, &id), DLOCK_ENOTOWNER);
    assert_true(strlen(dlock_last_error()) > 0);
    assert_int_equal(available_of(p), 1); /* back once, by the expiry */
    assert_int_equal(redis_fixture_int(f, "ZCARD {expired}:timeout"), 0);
    ASSERT_RC(dlock_permits_release(p, &id), DLOCK_ENOTOWNER);
    assert_int_equal(available_of(p), 1);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_release_of_an_unknown_id_is_enotowner_and_changes_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "unknown");
    dlock_permits *other = new_permits(c, "unknown-other");
    ASSERT_RC(dlock_permits_try_set_permits(p, 2, NULL), DLOCK_OK);
    ASSERT_RC(dlock_permits_try_set_permits(other, 1, NULL), DLOCK_OK);
    dlock_permit_id mine, theirs;
    ASSERT_RC(dlock_permits_acquire(p, 0, -1, &mine), DLOCK_OK);
    ASSERT_RC(dlock_permits_acquire(other, 0, -1, &theirs), DLOCK_OK);
    redisContext *sub = subscribe_to(f, "redisson_sc:{unknown}");
    dlock_permit_id made_up = {.hex = "0123456789abcdef0123456789abcdef"};
    ASSERT_RC(dlock_permits_release(p, &made_up), DLOCK_ENOTOWNER);
    ASSERT_RC(dlock_permits_release(p, &theirs), DLOCK_ENOTOWNER); /* another semaphore's */
    dlock_permit_id upper = mine; /* the same id in capitals is the same 16 bytes */
    for (int i = 0; i < 32; i++)
        upper.hex[i] = (char)toupper((unsigned char)upper.hex[i]);
    char got[128];
    messages_until_end(f, sub, "redisson_sc:{unknown}", got, sizeof(got));
    assert_string_equal(got, ""); /* nothing was given back */
    redisFree(sub);
    assert_int_equal(available_of(p), 1);
    assert_int_equal(redis_fixture_int(f, "ZCARD {unknown}:timeout"), 1);
    assert_int_equal(available_of(other), 0);
    ASSERT_RC(dlock_permits_release(p, &upper), DLOCK_OK);
    assert_int_equal(available_of(p), 2);
    ASSERT_RC(dlock_permits_release(other, &theirs), DLOCK_OK);
    dlock_permits_free(other);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_release_of_an_already_released_permit_is_enotowner_the_second_time(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "twice");
    ASSERT_RC(dlock_permits_try_set_permits(p, 2, NULL), DLOCK_OK);
    dlock_permit_id a, b;
    ASSERT_RC(dlock_permits_acquire(p, 0, -1, &a), DLOCK_OK);
    ASSERT_RC(dlock_permits_acquire(p, 0, 10000, &b), DLOCK_OK);
    assert_string_not_equal(a.hex, b.hex);
    assert_int_equal(available_of(p), 0);
    ASSERT_RC(dlock_permits_release(p, &a), DLOCK_OK);
    assert_int_equal(available_of(p), 1);
    ASSERT_RC(dlock_permits_release(p, &a), DLOCK_ENOTOWNER);
    assert_int_equal(available_of(p), 1); /* not 2 */
    ASSERT_RC(dlock_permits_release(p, &b), DLOCK_OK);
    ASSERT_RC(dlock_permits_release(p, &b), DLOCK_ENOTOWNER);
    assert_int_equal(available_of(p), 2);
    assert_int_equal(redis_fixture_int(f, "ZCARD {twice}:timeout"), 0);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_update_lease_extends_a_300_ms_lease_to_5000_and_it_outlives_300_ms(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "extended");
    ASSERT_RC(dlock_permits_try_set_permits(p, 1, NULL), DLOCK_OK);
    dlock_permit_id id;
    ASSERT_RC(dlock_permits_acquire(p, 0, 300, &id), DLOCK_OK);
    int64_t before = server_time_ms(f);
    ASSERT_RC(dlock_permits_update_lease(p, &id, 5000), DLOCK_OK);
    int64_t after = server_time_ms(f);
    zentry z[2];
    assert_int_equal(timeout_set(f, "{extended}:timeout", z, 2), 1);
    assert_string_equal(z[0].hex, id.hex);
    ASSERT_BETWEEN(z[0].score, before + 5000, after + 5000);
    /* well past the first 300 ms, every look still finds it held */
    int64_t until = test_now_ms() + 900;
    while (test_now_ms() < until) {
        assert_int_equal(available_of(p), 0);
        test_sleep_ms(50);
    }
    ASSERT_RC(dlock_permits_release(p, &id), DLOCK_OK);
    assert_int_equal(available_of(p), 1);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_update_lease_shortens_a_lease_and_the_permit_expires_then(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "shortened");
    ASSERT_RC(dlock_permits_try_set_permits(p, 1, NULL), DLOCK_OK);
    dlock_permit_id id;
    ASSERT_RC(dlock_permits_acquire(p, 0, -1, &id), DLOCK_OK); /* no lease at all */
    test_sleep_ms(100);
    assert_int_equal(available_of(p), 0);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_permits_update_lease(p, &id, 300), DLOCK_OK);
    bool back = false;
    POLL_UNTIL(back, available_of(p) == 1, 300 + test_prompt_ms());
    int64_t took = test_now_ms() - start;
    assert_true(back);
    ASSERT_BETWEEN(took, 290, 300 + test_prompt_ms()); /* by its new lease, not before */
    ASSERT_RC(dlock_permits_release(p, &id), DLOCK_ENOTOWNER);
    ASSERT_RC(dlock_permits_update_lease(p, &id, 5000), DLOCK_ENOTOWNER); /* expired */
    assert_int_equal(available_of(p), 1);
    printf("# lease shortened to 300 ms: permit back %lld ms later\n", (long long)took);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_update_lease_of_an_unknown_id_is_enotowner_and_adds_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "lease-unknown");
    ASSERT_RC(dlock_permits_try_set_permits(p, 1, NULL), DLOCK_OK);
    dlock_permit_id made_up = {.hex = "fedcba9876543210fedcba9876543210"};
    ASSERT_RC(dlock_permits_update_lease(p, &made_up, 5000), DLOCK_ENOTOWNER);
    ASSERT_RC(dlock_permits_update_lease(p, &made_up, -1), DLOCK_ENOTOWNER);
    assert_int_equal(redis_fixture_int(f, "EXISTS {lease-unknown}:timeout"), 0);
    /* released: no longer known either */
    dlock_permit_id id;
    ASSERT_RC(dlock_permits_acquire(p, 0, -1, &id), DLOCK_OK);
    ASSERT_RC(dlock_permits_release(p, &id), DLOCK_OK);
    ASSERT_RC(dlock_permits_update_lease(p, &id, 5000), DLOCK_ENOTOWNER);
    assert_int_equal(redis_fixture_int(f, "EXISTS {lease-unknown}:timeout"), 0);
    assert_int_equal(available_of(p), 1);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_permit_with_a_300_ms_lease_is_back_in_the_pool_after_300_ms_unreleased),
        cmocka_unit_test(test_waiter_on_an_empty_pool_gets_a_permit_when_the_earliest_lease_ends),
        cmocka_unit_test(test_waiter_on_an_empty_pool_is_woken_by_the_message_of_a_release_by_id),
        cmocka_unit_test_teardown(
            test_holder_process_killed_with_sigkill_gives_its_permit_back_within_its_lease,
            kill_holder_child),
        cmocka_unit_test(
            test_release_of_an_expired_permit_is_enotowner_and_gives_nothing_back_twice),
        cmocka_unit_test(test_release_of_an_unknown_id_is_enotowner_and_changes_nothing),
        cmocka_unit_test(test_release_of_an_already_released_permit_is_enotowner_the_second_time),
        cmocka_unit_test(test_update_lease_extends_a_300_ms_lease_to_5000_and_it_outlives_300_ms),
        cmocka_unit_test(test_update_lease_shortens_a_lease_and_the_permit_expires_then),
        cmocka_unit_test(test_update_lease_of_an_unknown_id_is_enotowner_and_adds_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
