/* SPDX-License-Identifier: MIT */
/* test_wait_answers.c — the answer to the WAIT behind a write is a count of replicas (an
 * integer from 0 up), or it is not understood: a proxy in front of a real redis-server
 * (tests/support/reply_injector.h) answers the WAIT in the server's place with 2^63-1, -5,
 * a string, a status or an array. Each is a protocol violation: the call is DLOCK_ECONN
 * naming what arrived (whether a replica has the write is unknown), never DLOCK_OK (2^63-1
 * counted as every replica acknowledging) nor "only -5 of 1 replicas acknowledged"; the
 * client reconnects and the next write's true answer counts again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "dlock.h"
#include "client/client.h"
#include "harness.h"
#include "redis_fixture.h"
#include "reply_injector.h"
#include "test_util.h"

/* The WAIT command itself: the scripts a reconnect loads may say "wait" in their source. */
#define WAIT_REQUEST "$4\r\nWAIT\r\n"

typedef struct scene {
    redis_fixture *f;
    reply_injector *injector;
    dlock_client *c; /* through the injector, asking one replica of a server that has none */
} scene;

static int setup(void **state) {
    static scene s;
    memset(&s, 0, sizeof(s));
    s.f = start_server();
    assert_int_equal(reply_injector_start(redis_fixture_socket(s.f), &s.injector), 0);
    char url[200];
    /* sync_replicas=1 on a server without replicas: every write is followed by WAIT 1 100,
     * whose true answer is 0 (after 100 ms) */
    snprintf(url, sizeof(url), "%s?sync_replicas=1&sync_timeout_ms=100",
             reply_injector_url(s.injector));
    s.c = connect_client_cfg(NULL, (test_client_cfg){.url = url});
    *state = &s;
    return 0;
}

static int teardown(void **state) {
    scene *s = *state;
    dlock_client_free(s->c);
    reply_injector_stop(s->injector);
    redis_fixture_stop(s->f);
    test_watchdog_disarm();
    return 0;
}

/* The acquire of `name` with `answer` in place of its WAIT's: DLOCK_ECONN naming the
 * answer as a protocol violation. */
static void expect_not_a_count(scene *s, const char *name, const char *answer, const char *named) {
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(s->c, name, &l));
    reply_injector_replace(s->injector, WAIT_REQUEST, answer, strlen(answer));
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 30000), DLOCK_ECONN);
    const char *why = dlock_last_error();
    if (!strstr(why, "an answer to WAIT that is no count of replicas") || !strstr(why, named))
        fail_msg("answer %s: the error \"%s\" does not name it", named, why);
    /* the script ran: its hold is Redis's, bounded by its lease (never forever) */
    long long pttl = pttl_of(s->f, name);
    ASSERT_BETWEEN(pttl, 1, 30000);
    redis_fixture_int(s->f, "DEL %s", name);
    dlock_lock_free(l);
}

static void test_a_wait_answer_that_is_no_count_of_replicas_is_econn_naming_it(void **state) {
    scene *s = *state;
    test_watchdog_arm(60, __func__);
    /* before: DLOCK_OK, every replica taken to have the write */
    expect_not_a_count(s, "answered:max", ":9223372036854775807\r\n", "9223372036854775807");
    /* before: "only -5 of 1 replicas acknowledged" */
    expect_not_a_count(s, "answered:negative", ":-5\r\n", "-5");
    /* before: "only 0 of 1 replicas acknowledged" */
    expect_not_a_count(s, "answered:string", "$1\r\n1\r\n", "\"1\"");
    expect_not_a_count(s, "answered:status", "+OK\r\n", "OK");
    expect_not_a_count(s, "answered:array", "*1\r\n:1\r\n", "array");
    /* one above the bound, none more than a server can have */
    char above[48];
    snprintf(above, sizeof(above), ":%d\r\n", DLOCK__REPLICAS_MAX + 1);
    char above_text[24];
    snprintf(above_text, sizeof(above_text), "%d", DLOCK__REPLICAS_MAX + 1);
    expect_not_a_count(s, "answered:above", above, above_text);
}

/* A count is a count, also one above what was asked (WAIT counts every replica that has the
 * write): 3 of 1 is DLOCK_OK; 0 of 1 is "only 0 of 1". And after a bad answer the client is
 * back, its true answers heard again. */
static void test_counts_from_0_up_are_heard_also_after_a_bad_one(void **state) {
    scene *s = *state;
    test_watchdog_arm(60, __func__);
    expect_not_a_count(s, "answered:first", ":-1\r\n", "-1");
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(s->c, "answered:three", &l));
    reply_injector_replace(s->injector, WAIT_REQUEST, ":3\r\n", 4);
    ASSERT_OK(dlock_lock_try_acquire(l, 0, 30000));
    ASSERT_OK(dlock_lock_release(l)); /* the server's own answer, 0 of 1: a warning only */
    dlock_lock_free(l);
    ASSERT_OK(dlock_lock_new(s->c, "answered:none", &l));
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 30000), DLOCK_ETIMEDOUT);
    if (!strstr(dlock_last_error(), "0 of 1 replicas acknowledged"))
        fail_msg("the server's answer 0: \"%s\"", dlock_last_error());
    assert_int_equal(redis_fixture_int(s->f, "EXISTS answered:none"), 0);
    dlock_lock_free(l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_a_wait_answer_that_is_no_count_of_replicas_is_econn_naming_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_counts_from_0_up_are_heard_also_after_a_bad_one, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
