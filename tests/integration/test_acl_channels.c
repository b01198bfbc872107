/* SPDX-License-Identifier: MIT */
/* test_acl_channels.c — a user whose ACL has no channels (Redis 7 gives new users
 * `resetchannels` by default): the server refuses its SUBSCRIBE.
 *
 * What is proven: a waiting acquire (lock, semaphore) by that user ends promptly with
 * DLOCK_ENOPERM, long before its wait would, and dlock_last_error() names the channel, the
 * user and what to grant; the refusal does not make the client reconnect in a loop (the
 * server's count of connections stays small over the whole wait); a script whose PUBLISH
 * the ACL refuses is DLOCK_ENOPERM with the user named; and `dlock run` exits 77. A user
 * granted Redisson's lock channels only (not dlock's turn channel): its waits and releases
 * work as before, the turn channel refused once and not asked for again. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define WAIT_MS 2000
/* Connections the server may see while one waiter runs: the holder's two, the waiter's
 * command and subscriber connections, a reconnect or two after the refusal (the backoff),
 * and the fixture's own. A reconnect loop makes thousands. */
#define CONNECTIONS_MAX 20

/* A user with every key and command but no channel. */
static void add_user_without_channels(redis_fixture *f) {
    redisReply *r = redis_fixture_cmd(f, "ACL SETUSER nochan on >pw ~* resetchannels +@all");
    assert_non_null(r);
    assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
}

static const char *user_url(redis_fixture *f, char *buf, size_t size) {
    snprintf(buf, size, "unix://%s?user=nochan&password=pw", redis_fixture_socket(f));
    return buf;
}

static long long connections(redis_fixture *f) {
    return redis_fixture_info_int(f, "stats", "total_connections_received");
}

static void assert_names_channel_user_and_grant(const char *text, const char *channel) {
    if (!strstr(text, channel) || !strstr(text, "'nochan'") || !strstr(text, "ACL SETUSER nochan"))
        fail_msg("last error \"%s\" does not name channel %s, the user and the grant", text,
                 channel);
}

/* The waiter ended at start + elapsed; over the rest of WAIT_MS nothing reconnects in a
 * loop either. */
static void assert_few_connections_over_the_wait(redis_fixture *f, long long before,
                                                 int64_t started_ms) {
    int64_t rest = started_ms + WAIT_MS - test_now_ms();
    if (rest > 0)
        test_sleep_ms(rest); /* a window to count in, not a wait for something to happen */
    long long made = connections(f) - before;
    printf("# %lld connections in %d ms\n", made, WAIT_MS);
    ASSERT_BETWEEN(made, 1, CONNECTIONS_MAX);
}

static void test_lock_waiter_without_channel_permission_fails_promptly_with_enoperm(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    redis_fixture *f = start_server();
    add_user_without_channels(f);
    dlock_client *holder = connect_client(f);
    dlock_lock *held;
    ASSERT_RC(dlock_lock_new(holder, "acl-lock", &held), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(held, 30000), DLOCK_OK);

    long long before = connections(f);
    char url[PATH_MAX + 64];
    dlock_client *c =
        connect_client_cfg(NULL, (test_client_cfg){.url = user_url(f, url, sizeof(url))});
    dlock_lock *l;
    ASSERT_RC(dlock_lock_new(c, "acl-lock", &l), DLOCK_OK);
    int64_t t0 = test_now_ms();
    int rc = dlock_lock_try_acquire(l, WAIT_MS, 30000);
    int64_t took = test_now_ms() - t0;
    char text[256];
    snprintf(text, sizeof(text), "%s", dlock_last_error());
    assert_few_connections_over_the_wait(f, before, t0);
    if (rc != DLOCK_ENOPERM)
        fail_msg("rc = %s (%s), expected DLOCK_ENOPERM", dlock_err_name(rc), text);
    ASSERT_BETWEEN(took, 0, WAIT_MS / 2);
    assert_names_channel_user_and_grant(text, "redisson_lock__channel:{acl-lock}");

    bool is_held = true;
    ASSERT_RC(dlock_lock_is_held(l, &is_held), DLOCK_OK);
    assert_false(is_held);
    dlock_lock_free(l);
    dlock_client_free(c);
    dlock_lock_free(held);
    dlock_client_free(holder);
    redis_fixture_stop(f);
}

static void
test_semaphore_waiter_without_channel_permission_fails_promptly_with_enoperm(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    redis_fixture *f = start_server();
    add_user_without_channels(f);
    long long before = connections(f);
    char url[PATH_MAX + 64];
    dlock_client *c =
        connect_client_cfg(NULL, (test_client_cfg){.url = user_url(f, url, sizeof(url))});
    dlock_semaphore *s;
    ASSERT_RC(dlock_semaphore_new(c, "acl-sem", &s), DLOCK_OK); /* no permits: it waits */
    int64_t t0 = test_now_ms();
    int rc = dlock_semaphore_try_acquire(s, 1, WAIT_MS);
    int64_t took = test_now_ms() - t0;
    char text[256];
    snprintf(text, sizeof(text), "%s", dlock_last_error());
    assert_few_connections_over_the_wait(f, before, t0);
    if (rc != DLOCK_ENOPERM)
        fail_msg("rc = %s (%s), expected DLOCK_ENOPERM", dlock_err_name(rc), text);
    ASSERT_BETWEEN(took, 0, WAIT_MS / 2);
    assert_names_channel_user_and_grant(text, "redisson_sc:{acl-sem}");

    /* the client still works: a call that needs no channel succeeds */
    int64_t available = -1;
    ASSERT_RC(dlock_semaphore_available(s, &available), DLOCK_OK);
    assert_int_equal(available, 0);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* Another waiter after a refusal asks the server again, and is refused again: within the
 * reconnect's backoff, not at its deadline. */
static void test_second_waiter_after_a_refusal_is_refused_too(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    redis_fixture *f = start_server();
    add_user_without_channels(f);
    char url[PATH_MAX + 64];
    dlock_client *c =
        connect_client_cfg(NULL, (test_client_cfg){.url = user_url(f, url, sizeof(url))});
    dlock_semaphore *s;
    ASSERT_RC(dlock_semaphore_new(c, "acl-sem2", &s), DLOCK_OK);
    for (int i = 0; i < 3; i++) {
        int64_t t0 = test_now_ms();
        ASSERT_RC(dlock_semaphore_try_acquire(s, 1, 10000), DLOCK_ENOPERM);
        /* the backoff's longest step: TEST_RETRY_DELAY_MS x 8 */
        ASSERT_BETWEEN(test_now_ms() - t0, 0, slack_ms(8 * TEST_RETRY_DELAY_MS + 500));
    }
    dlock_semaphore_free(s);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* A script whose PUBLISH the ACL refuses is the same permission error, with the user. */
static void test_release_whose_publish_is_refused_is_enoperm_naming_the_user(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    redis_fixture *f = start_server();
    add_user_without_channels(f);
    char url[PATH_MAX + 64];
    dlock_client *c =
        connect_client_cfg(NULL, (test_client_cfg){.url = user_url(f, url, sizeof(url))});
    dlock_lock *l;
    ASSERT_RC(dlock_lock_new(c, "acl-release", &l), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, 30000), DLOCK_OK); /* no wait: no SUBSCRIBE */
    ASSERT_RC(dlock_lock_release(l), DLOCK_ENOPERM);
    const char *text = dlock_last_error();
    if (!strstr(text, "'nochan'") || !strstr(text, "channel") || !strstr(text, "allchannels"))
        fail_msg("last error \"%s\" does not name the user and the channel grant", text);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- a user with Redisson's channels only ---------------------------------------------------- */

static long long subscribes_seen(redis_fixture *f) {
    return redis_fixture_info_int(f, "commandstats", "cmdstat_subscribe.calls") +
           redis_fixture_info_int(f, "commandstats", "cmdstat_subscribe.rejected_calls");
}

typedef struct turn_waiter {
    dlock_lock *l;
    blocking_call call;
} turn_waiter;

static int wait_then_release(void *arg) {
    turn_waiter *w = arg;
    int rc = dlock_lock_try_acquire(w->l, slack_ms(10000), 30000);
    return rc == DLOCK_OK ? dlock_lock_release(w->l) : rc;
}

/* The lock's channel is granted, dlock's turn channel is not: the turn channel's SUBSCRIBE
 * is refused once, the wait goes on and is woken by the release, whose PUBLISH of the turn
 * naming it (refused too) costs it nothing; the next wait asks for the lock's channel
 * only. */
static void
test_a_user_with_redissons_channels_only_waits_and_releases_without_turns(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    redis_fixture *f = start_server();
    redisReply *r = redis_fixture_cmd(
        f, "ACL SETUSER rlocks on >pw ~* resetchannels &redisson_lock__channel:* +@all");
    assert_non_null(r);
    assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    char url[PATH_MAX + 64];
    snprintf(url, sizeof(url), "unix://%s?user=rlocks&password=pw", redis_fixture_socket(f));
    dlock_client *a = connect_client_cfg(NULL, (test_client_cfg){.url = url});
    dlock_client *b = connect_client_cfg(NULL, (test_client_cfg){.url = url});
    dlock_lock *la, *lb;
    ASSERT_RC(dlock_lock_new(a, "acl-turns", &la), DLOCK_OK);
    ASSERT_RC(dlock_lock_new(b, "acl-turns", &lb), DLOCK_OK);
    /* a waiter in line (another client's, as if), so that a's hold is taken with others in
     * line and a's release hands the lock to it: a PUBLISH of the grant the ACL refuses */
    assert_int_equal(redis_fixture_int(f, "ZADD {acl-turns}:handoff_queue 1000 other:1"), 1);
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);

    long long before = subscribes_seen(f);
    turn_waiter w = {.l = lb};
    blocking_call_start(&w.call, wait_then_release, &w);
    /* both SUBSCRIBEs went out together: the lock's (granted) and the turn channel's; b's
     * client, refused the turn channel, cannot hear a grant: its waiter waits out of line */
    int64_t until = test_now_ms() + slack_ms(3000);
    while (subscribes_seen(f) - before < 2 && test_now_ms() < until)
        test_sleep_ms(2);
    assert_int_equal(subscribes_seen(f) - before, 2);
    assert_int_equal(redis_fixture_info_int(f, "commandstats", "cmdstat_subscribe.rejected_calls"),
                     1);
    /* the refused grant is no grant and no failed release: the lock is freed, its "0" wakes
     * b's waiter, which takes it */
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    ASSERT_RC(blocking_call_join(&w.call), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS acl-turns"), 0);
    redisReply *line = redis_fixture_cmd(f, "ZRANGE {acl-turns}:handoff_queue 0 -1");
    assert_non_null(line);
    assert_int_equal(line->type, REDIS_REPLY_ARRAY); /* other:1 still in line: never handed */
    assert_int_equal(line->elements, 1);
    assert_string_equal(line->element[0]->str, "other:1");
    freeReplyObject(line);
    assert_int_equal(redis_fixture_int(f, "DEL {acl-turns}:handoff_queue"), 1);

    /* the next wait of b's client asks for the lock's channel only */
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    before = subscribes_seen(f);
    turn_waiter w2 = {.l = lb};
    blocking_call_start_asleep(&w2.call, wait_then_release, &w2, f,
                               (asleep_sign){"redisson_lock__channel:{acl-turns}", 1, 2, NULL});
    assert_int_equal(subscribes_seen(f) - before, 1);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    ASSERT_RC(blocking_call_join(&w2.call), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS acl-turns"), 0);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lock_waiter_without_channel_permission_fails_promptly_with_enoperm),
        cmocka_unit_test(
            test_semaphore_waiter_without_channel_permission_fails_promptly_with_enoperm),
        cmocka_unit_test(test_second_waiter_after_a_refusal_is_refused_too),
        cmocka_unit_test(test_release_whose_publish_is_refused_is_enoperm_naming_the_user),
        cmocka_unit_test(test_a_user_with_redissons_channels_only_waits_and_releases_without_turns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
