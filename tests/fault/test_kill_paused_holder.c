/* SPDX-License-Identifier: MIT */
/* test_kill_paused_holder.c — a holder paused past its lease.
 *
 * What is proven:
 * - a holder paused past its lease (a forked child holding a fenced watchdog lock,
 *   watchdog_ms 1500, SIGSTOPped): Redis frees the lock, another client takes it with a
 *   higher token; after SIGCONT the child's lost callback fires once, its release says
 *   DLOCK_ELOST, and the other client's hold is untouched.
 *
 * The test starts its own redis-server and prints its figures ("# ..."). */
#include "kill_helpers.h"

/* ---- scenario 7: a holder paused past its lease ------------------------------------------- */

#define PAUSED_WATCHDOG_MS 1500

typedef struct paused_report {
    int acquire_rc;
    uint64_t token;
    int lost_calls;
    int lost_reason;
    bool lost_owner_is_thread;
    int release_rc;
    int second_release_rc;
} paused_report;

/* The paused holder: acquire, report, wait for the parent's 'C' (sent after SIGCONT), wait
 * for the lost callback, release twice, report. */
static _Noreturn void paused_holder_main(const char *url, int report_fd, int cont_fd) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    paused_report rep = {.acquire_rc = DLOCK_EINVAL, .release_rc = 1, .second_release_rc = 1};
    lost_record seen = {0};
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.watchdog_ms = PAUSED_WATCHDOG_MS;
    dlock_client *c = NULL;
    dlock_lock *l = NULL;
    int status = 1;
    if (dlock_client_new(&o, &c) == DLOCK_OK && dlock_fencedlock_new(c, "paused", &l) == DLOCK_OK &&
        dlock_lock_on_lost(l, record_lost_in, &seen) == DLOCK_OK) {
        rep.acquire_rc = dlock_lock_acquire(l, DLOCK_WATCHDOG);
        if (rep.acquire_rc == DLOCK_OK)
            dlock_lock_token(l, &rep.token);
        (void)!write(report_fd, &rep, sizeof(rep));
        char cont = 0;
        if (rep.acquire_rc == DLOCK_OK && read(cont_fd, &cont, 1) == 1 && cont == 'C') {
            bool lost = false;
            POLL_UNTIL(lost, lost_get_in(&seen).calls > 0, test_slack_ms(5000));
            (void)lost;        /* the parent checks the count */
            test_sleep_ms(50); /* a second call would come now */
            lost_record got = lost_get_in(&seen);
            rep.lost_calls = got.calls;
            rep.lost_reason = got.reason;
            rep.lost_owner_is_thread = got.owner == dlock_thread_owner();
            rep.release_rc = dlock_lock_release(l);
            rep.second_release_rc = dlock_lock_release(l);
            status = 0;
        }
    } else {
        (void)!write(report_fd, &rep, sizeof(rep));
    }
    (void)!write(report_fd, &rep, sizeof(rep));
    dlock_lock_free(l);
    dlock_client_free(c);
    test_child_exit(status);
}

static void
test_holder_paused_past_its_lease_is_told_lost_and_its_successor_keeps_the_lock(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    int report[2], cont[2];
    assert_int_equal(pipe(report), 0);
    assert_int_equal(pipe(cont), 0);
    pid_t pid = fork_child();
    if (pid == 0) {
        close(report[0]);
        close(cont[1]);
        paused_holder_main(redis_fixture_unix_url(f), report[1], cont[0]);
    }
    close(report[1]);
    close(cont[0]);
    paused_report first;
    assert_true(read_full(report[0], &first, sizeof(first), test_slack_ms(10000)));
    ASSERT_RC(first.acquire_rc, DLOCK_OK);
    assert_true(first.token > 0);

    assert_int_equal(kill(pid, SIGSTOP), 0);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
    assert_true(WIFSTOPPED(status));
    int64_t paused_at = test_now_ms();
    /* nothing renews the lease now: Redis lets it go within watchdog_ms */
    bool expired = false;
    POLL_UNTIL(expired, redis_fixture_int(f, "EXISTS paused") == 0,
               PAUSED_WATCHDOG_MS + test_slack_ms(1000));
    int64_t expired_after = test_now_ms() - paused_at;
    if (!expired)
        fail_msg("the paused holder's lock still exists %lld ms later", (long long)expired_after);

    dlock_client *c = connect_client(f);
    dlock_lock *l = NULL;
    ASSERT_RC(dlock_fencedlock_new(c, "paused", &l), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 30000), DLOCK_OK);
    uint64_t token = 0;
    ASSERT_RC(dlock_lock_token(l, &token), DLOCK_OK);
    if (token <= first.token)
        fail_msg("successor's token %llu not above the paused holder's %llu",
                 (unsigned long long)token, (unsigned long long)first.token);

    assert_int_equal(kill(pid, SIGCONT), 0);
    assert_int_equal(write(cont[1], "C", 1), 1);
    paused_report last;
    assert_true(read_full(report[0], &last, sizeof(last), test_slack_ms(15000)));
    assert_int_equal(waitpid(pid, &status, 0), pid);
    child_forget(pid);
    close(report[0]);
    close(cont[1]);
    printf("# holder paused, lease gone %lld ms later; tokens %llu then %llu; lost callback x%d "
           "(%s), release %s, again %s\n",
           (long long)expired_after, (unsigned long long)first.token, (unsigned long long)token,
           last.lost_calls, dlock_err_name(last.lost_reason), dlock_err_name(last.release_rc),
           dlock_err_name(last.second_release_rc));
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(last.lost_calls, 1);
    if (last.lost_reason != DLOCK_ELOST && last.lost_reason != DLOCK_ECONN)
        fail_msg("lost reason %s", dlock_err_name(last.lost_reason));
    assert_true(last.lost_owner_is_thread);
    ASSERT_RC(last.release_rc, DLOCK_ELOST);
    ASSERT_RC(last.second_release_rc, DLOCK_ENOTOWNER); /* the lost hold was forgotten */

    /* the successor's hold is untouched by the paused holder's renewal and releases */
    bool held = false;
    ASSERT_RC(dlock_lock_is_held(l, &held), DLOCK_OK);
    assert_true(held);
    long long pttl = redis_fixture_int(f, "PTTL paused");
    ASSERT_BETWEEN(pttl, 1, 30000);
    assert_int_equal(redis_fixture_int(f, "HLEN paused"), 1);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS paused"), 0);
    assert_int_equal(redis_fixture_int(f, "GET redisson_lock_token:{paused}"), (long long)token);

    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(
            test_holder_paused_past_its_lease_is_told_lost_and_its_successor_keeps_the_lock,
            kill_children),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
