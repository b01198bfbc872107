/* SPDX-License-Identifier: MIT */
/* test_unsent_deadline.c — an acquisition whose command cannot be sent (the server is down,
 * the client knows it and is reconnecting) ends at its caller's wait, or after timeout_ms
 * when that is longer, not at the command's give-up time (timeout_ms x (retry_attempts +
 * 1): 500 ms x 8 = 4 s here): a try (wait 0) fails with DLOCK_ECONN after 500 ms, a wait of
 * 1.5 s after 1.5 s, and neither is sent later (the server, restarted with its data, never
 * sees the lock). A call whose wait outlasts the outage, and one that waits for ever, still
 * get the lock once the server is back. (Before, each of these waited the whole give-up
 * time — 12 s with the defaults: Redisson's "16 s past a 2 s wait" in another shape.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/client.h"
#include "core_call.h"
#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define TIMEOUT_MS 500
#define RETRIES 7
#define GIVE_UP_MS (TIMEOUT_MS * (RETRIES + 1))

typedef struct scene {
    redis_fixture *f;
    dlock_client *c;
    dlock_lock *l;
} scene;

static void read_link_ready(dlock_client *c, void *arg) {
    *(bool *)arg = DLOCK__NET(c)->conn.link.state == LINK_READY;
}

static bool command_link_ready(dlock_client *c) {
    bool ready;
    on_loop(c, read_link_ready, &ready);
    return ready;
}

/* A server that keeps acknowledged writes across a restart, a client with the default
 * give-up time, and a lock "unsent" it has taken and given back once. The server holds a
 * marker key, so that "the lock's key is absent after the restart" means something. */
static scene scene_start(void) {
    scene s = {0};
    redis_fixture_opts fo = {.appendonly = true};
    assert_int_equal(redis_fixture_start(&fo, &s.f), 0);
    s.c = connect_client_cfg(
        s.f, (test_client_cfg){.timeout_ms = TIMEOUT_MS, .retry_attempts = RETRIES});
    ASSERT_OK(dlock_lock_new(s.c, "unsent", &s.l));
    ASSERT_OK(dlock_lock_try_acquire(s.l, 0, 30000));
    ASSERT_OK(dlock_lock_release(s.l));
    redisReply *r = redis_fixture_cmd(s.f, "SET marker 1");
    assert_non_null(r);
    freeReplyObject(r);
    return s;
}

/* The server is killed, and the client knows: its command link is not ready. */
static void server_down(scene *s) {
    assert_int_equal(redis_fixture_kill(s->f), 0);
    bool down = false;
    POLL_UNTIL(down, !command_link_ready(s->c), test_slack_ms(5000));
    assert_true(down);
}

/* The server is back with its data, and the client on it again. */
static void server_back(scene *s) {
    assert_int_equal(redis_fixture_restart(s->f), 0);
    bool up = false;
    POLL_UNTIL(up, command_link_ready(s->c), test_slack_ms(5000));
    assert_true(up);
    assert_int_equal(redis_fixture_int(s->f, "EXISTS marker"), 1);
}

static void scene_end(scene *s) {
    dlock_lock_free(s->l);
    ASSERT_OK(dlock_client_free(s->c));
    redis_fixture_stop(s->f);
}

/* try_acquire(l, wait_ms) while the server is down: DLOCK_ECONN, after its wait or
 * TIMEOUT_MS, whichever is longer, well before the give-up time. */
static void expect_fails_at_its_wait(scene *s, int64_t wait_ms) {
    int64_t start = test_now_ms();
    int rc = dlock_lock_try_acquire(s->l, wait_ms, 30000);
    int64_t took = test_now_ms() - start;
    if (rc != DLOCK_ECONN)
        fail_msg("wait %lld: %s: %s", (long long)wait_ms, dlock_err_name(rc), dlock_last_error());
    int64_t least = wait_ms > TIMEOUT_MS ? wait_ms : TIMEOUT_MS;
    if (took < least - 5 || took >= GIVE_UP_MS * 3 / 4)
        fail_msg("wait %lld: failed after %lld ms (its wait %lld, give-up time %d)",
                 (long long)wait_ms, (long long)took, (long long)least, GIVE_UP_MS);
    print_message("wait %lld ms: DLOCK_ECONN after %lld ms: %s\n", (long long)wait_ms,
                  (long long)took, dlock_last_error());
}

static void test_a_try_and_a_short_wait_fail_at_their_wait_and_are_never_sent(void **state) {
    (void)state;
    test_watchdog_arm(90, __func__);
    scene s = scene_start();
    server_down(&s);
    expect_fails_at_its_wait(&s, 0);
    expect_fails_at_its_wait(&s, 1500);
    server_back(&s);
    ASSERT_OK(dlock_client_ping(s.c)); /* anything still queued went out before this */
    assert_int_equal(redis_fixture_int(s.f, "EXISTS unsent"), 0);
    /* the lock is free, and the same client takes it */
    ASSERT_OK(dlock_lock_try_acquire(s.l, 0, 30000));
    ASSERT_OK(dlock_lock_release(s.l));
    scene_end(&s);
}

typedef struct acquire_arg {
    dlock_lock *l;
    int64_t wait_ms; /* -1: dlock_lock_acquire, which waits for ever */
} acquire_arg;

static int acquire_then_release(void *arg) {
    acquire_arg *a = arg;
    int rc = a->wait_ms < 0 ? dlock_lock_acquire(a->l, 30000)
                            : dlock_lock_try_acquire(a->l, a->wait_ms, 30000);
    if (rc == DLOCK_OK)
        rc = dlock_lock_release(a->l);
    return rc;
}

static void test_a_wait_that_outlasts_the_outage_gets_the_lock(void **state) {
    (void)state;
    test_watchdog_arm(90, __func__);
    int64_t waits[] = {GIVE_UP_MS, -1}; /* the first within the give-up time */
    for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
        scene s = scene_start();
        server_down(&s);
        acquire_arg a = {.l = s.l, .wait_ms = waits[i]};
        blocking_call call;
        blocking_call_start(&call, acquire_then_release, &a);
        test_sleep_ms(TIMEOUT_MS * 2); /* past a try's: it must still wait */
        assert_false(blocking_call_returned(&call));
        server_back(&s);
        int rc = blocking_call_join(&call);
        if (rc != DLOCK_OK)
            fail_msg("wait %lld: %s: %s", (long long)waits[i], dlock_err_name(rc),
                     dlock_last_error());
        scene_end(&s);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_try_and_a_short_wait_fail_at_their_wait_and_are_never_sent),
        cmocka_unit_test(test_a_wait_that_outlasts_the_outage_gets_the_lock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
