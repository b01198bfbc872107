/* SPDX-License-Identifier: MIT */
/* test_lock_refused_release.c — a last release Redis refuses changes nothing, also for
 * the watchdog: the lock stays held in Redis and renewed, and the owner's release after the
 * refusal is lifted succeeds (not DLOCK_ELOST).
 *
 * The last release of a watchdog hold stops renewing before it is sent, so that a renewal
 * cannot keep a lock its owner frees. The refusal used here: an ACL user without channel
 * permission (Redis 7's default for new users, `resetchannels`), whose release must
 * PUBLISH. Each test starts its own server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core_call.h" /* POLL_UNTIL */
#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60
#define WATCHDOG_MS 600

/* Runs an ACL command (no arguments to format) through f's admin connection. */
static void acl_ok(redis_fixture *f, const char *cmd) {
    redisReply *r = redis_fixture_cmd(f, cmd);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("%s: %s", cmd, r->str);
    freeReplyObject(r);
}

/* A client of user "nopub" on f: every command and key, no channel. */
static dlock_client *connect_without_channels(redis_fixture *f, char *url, size_t size) {
    acl_ok(f, "ACL SETUSER nopub on >pw ~* resetchannels +@all");
    snprintf(url, size, "%s?user=nopub&password=pw", redis_fixture_unix_url(f));
    return connect_client_cfg(f, (test_client_cfg){.url = url, .watchdog_ms = WATCHDOG_MS});
}

static void test_refused_last_release_of_a_watchdog_hold_keeps_it_renewed(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    char url[512];
    dlock_client *c = connect_without_channels(f, url, sizeof(url));
    dlock_lock *l = NULL;
    ASSERT_RC(dlock_lock_new(c, "refused-release", &l), DLOCK_OK);
    lost_record lost = {0};
    ASSERT_RC(dlock_lock_on_lost(l, record_lost_in, &lost), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);

    ASSERT_RC(dlock_lock_release(l), DLOCK_ENOPERM);

    /* more than two leases: unrenewed, the key would have expired by the first */
    bool gone = false;
    POLL_UNTIL(gone, redis_fixture_int(f, "EXISTS refused-release") == 0,
               test_slack_ms(3 * WATCHDOG_MS));
    assert_false(gone);
    assert_int_equal(lost_get_in(&lost).calls, 0);
    bool held = false;
    ASSERT_RC(dlock_lock_is_held(l, &held), DLOCK_OK);
    assert_true(held);

    acl_ok(f, "ACL SETUSER nopub allchannels");
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS refused-release"), 0);
    assert_int_equal(lost_get_in(&lost).calls, 0);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused_last_release_of_a_watchdog_hold_keeps_it_renewed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
