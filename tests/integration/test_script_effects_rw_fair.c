/* SPDX-License-Identifier: MIT */
/* test_script_effects_rw_fair.c — a read-write or fair lock call that reports failure
 * changed nothing in Redis, and one that reports success did change it.
 *
 * The failing command is a refused PUBLISH: the user has every key and command but no
 * channel (Redis 7 gives new ACL users `resetchannels`). Redis does not undo a script's
 * writes when a later command fails, so the scripts (src/rwlock/rw.lua, src/fairlock/
 * fair.lua) publish before they write. Each case takes the whole database (db_state in
 * harness.h: every key's DUMP and whether it expires), makes the call as that user, and
 * compares. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dlock.h"
#include "harness.h"

#define BUDGET_S 60

/* A client of f as a user that may use every key and command but no channel. */
static dlock_client *connect_without_channels(redis_fixture *f) {
    redisReply *r = redis_fixture_cmd(f, "ACL SETUSER nochan on >pw ~* resetchannels +@all");
    assert_true(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    char url[1024];
    snprintf(url, sizeof(url), "unix://%s?user=nochan&password=pw", redis_fixture_socket(f));
    return connect_client_cfg(NULL, (test_client_cfg){.url = url});
}

/* rc is a failure and Redis is as `before` was. */
static void assert_failed_unchanged(redis_fixture *f, int rc, const char *before,
                                    const char *what) {
    if (rc == DLOCK_OK)
        fail_msg("%s: DLOCK_OK, expected a refused PUBLISH", what);
    char *after = db_state(f);
    if (strcmp(before, after) != 0)
        fail_msg("%s failed (%s: %s) but changed Redis:\nbefore:\n%s\nafter:\n%s", what,
                 dlock_err_name(rc), dlock_last_error(), before, after);
    free(after);
}

typedef struct scene {
    redis_fixture *f;
    dlock_client *c;
    char *before;
} scene;

static void scene_open(scene *s) {
    s->f = start_server();
    s->c = connect_without_channels(s->f);
    s->before = NULL;
}

/* Redis as it is now becomes s->before (db_state). */
static void snapshot(scene *s) {
    free(s->before);
    s->before = db_state(s->f);
}

static void scene_close(scene *s) {
    free(s->before);
    dlock_client_free(s->c);
    redis_fixture_stop(s->f);
}

static void
test_last_read_release_refused_its_publish_leaves_the_read_lock_as_it_was(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    scene s;
    scene_open(&s);
    dlock_rwlock *rw = NULL;
    ASSERT_RC(dlock_rwlock_new(s.c, "rw", &rw), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(dlock_rwlock_read(rw), 0, 30000), DLOCK_OK); /* changed */
    assert_int_equal(redis_fixture_int(s.f, "HLEN rw"), 2);
    snapshot(&s);
    assert_failed_unchanged(s.f, dlock_lock_release(dlock_rwlock_read(rw)), s.before,
                            "read release");
    bool was_locked = false;
    assert_failed_unchanged(s.f, dlock_lock_force_release(dlock_rwlock_read(rw), &was_locked),
                            s.before, "force release of the read half");
    dlock_rwlock_free(rw);
    scene_close(&s);
}

static void test_write_release_refused_its_publish_leaves_the_write_lock_as_it_was(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    scene s;
    scene_open(&s);
    dlock_rwlock *rw = NULL;
    ASSERT_RC(dlock_rwlock_new(s.c, "rw", &rw), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(dlock_rwlock_write(rw), 0, 30000), DLOCK_OK);
    /* a downgrade: the write release would leave the read hold and publish "1" */
    ASSERT_RC(dlock_lock_try_acquire(dlock_rwlock_read(rw), 0, 30000), DLOCK_OK);
    snapshot(&s);
    assert_failed_unchanged(s.f, dlock_lock_release(dlock_rwlock_write(rw)), s.before,
                            "write release");
    char *mode = redis_fixture_str(s.f, "HGET rw mode");
    assert_string_equal(mode, "write");
    free(mode);
    dlock_rwlock_free(rw);
    scene_close(&s);
}

/* A dlock waiter "x:1" first in line of the fair lock `name`, alive for a minute. */
static void put_waiter_in_line(redis_fixture *f, const char *name) {
    redisReply *r = redis_fixture_cmd(f, "TIME");
    long long now = atoll(r->element[0]->str) * 1000;
    freeReplyObject(r);
    freeReplyObject(redis_fixture_cmd(f, "RPUSH redisson_lock_queue:{%s} x:1", name));
    freeReplyObject(
        redis_fixture_cmd(f, "ZADD redisson_lock_timeout:{%s} %lld x:1", name, now + 600000));
    freeReplyObject(redis_fixture_cmd(f, "ZADD {%s}:fair_waiters %lld x:1", name, now + 60000));
}

static void test_fair_release_refused_its_wake_up_leaves_lock_and_line_as_they_were(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    scene s;
    scene_open(&s);
    dlock_lock *l = NULL;
    ASSERT_RC(dlock_fairlock_new(s.c, "fair", &l), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 30000), DLOCK_OK);
    put_waiter_in_line(s.f, "fair");
    snapshot(&s);
    assert_failed_unchanged(s.f, dlock_lock_release(l), s.before, "fair release");
    bool was_locked = false;
    assert_failed_unchanged(s.f, dlock_lock_force_release(l, &was_locked), s.before,
                            "fair force release");
    assert_int_equal(redis_fixture_int(s.f, "EXISTS fair"), 1);
    dlock_lock_free(l);
    scene_close(&s);
}

static void test_fair_calls_that_publish_nothing_succeed_and_change_redis(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    scene s;
    scene_open(&s);
    dlock_lock *l = NULL;
    ASSERT_RC(dlock_fairlock_new(s.c, "fair", &l), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 30000), DLOCK_OK);
    assert_int_equal(redis_fixture_int(s.f, "EXISTS fair"), 1);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK); /* nobody in line: no wake-up */
    assert_int_equal(redis_fixture_int(s.f, "EXISTS fair"), 0);
    dlock_lock_free(l);
    scene_close(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_last_read_release_refused_its_publish_leaves_the_read_lock_as_it_was),
        cmocka_unit_test(test_write_release_refused_its_publish_leaves_the_write_lock_as_it_was),
        cmocka_unit_test(test_fair_release_refused_its_wake_up_leaves_lock_and_line_as_they_were),
        cmocka_unit_test(test_fair_calls_that_publish_nothing_succeed_and_change_redis),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
