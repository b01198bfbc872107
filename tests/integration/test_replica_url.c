/* SPDX-License-Identifier: MIT */
/* test_replica_url.c — a plain URL that names a replica: a write is refused at once with
 * the server's READONLY as DLOCK_EREDIS, nothing is retried and nothing changes (under
 * Sentinel or in a Cluster a READONLY instead means the master moved, and the command is
 * sent again once the client has found it: tests/fault/test_sentinel_failover.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"
#include "replica_pair.h"

static void test_plain_url_naming_a_replica_gets_readonly_at_once(void **state) {
    (void)state;
    dlock_client *c = connect_client_cfg(
        NULL, (test_client_cfg){.url = redis_fixture_unix_url(pair_replica), .timeout_ms = 1000});
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(c, "on-a-replica", &l));
    /* the server's refusal itself, not DLOCK_ECONN after the give-up time of a command
     * sent again and again to a node that stays a replica */
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 10000), DLOCK_EREDIS);
    if (!strstr(dlock_last_error(), "READONLY"))
        fail_msg("unexpected text: %s", dlock_last_error());
    assert_int_equal(redis_fixture_int(pair_replica, "EXISTS on-a-replica"), 0);
    dlock_lock_free(l);
    dlock_client_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_url_naming_a_replica_gets_readonly_at_once),
    };
    return cmocka_run_group_tests(tests, replica_pair_group_setup, replica_pair_group_teardown);
}
