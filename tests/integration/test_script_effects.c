/* SPDX-License-Identifier: MIT */
/* test_script_effects.c — a call that reports failure changed nothing in Redis, and a call
 * that changed something does not report failure, for the scripts of the lock, the fenced
 * lock, the semaphore, the permit-expirable semaphore and the latch.
 *
 * Redis does not undo a script's writes when a later command in it fails. The commands
 * that fail here: PUBLISH by an ACL user without channel permission (Redis 7's default for
 * new users, `resetchannels`), INCR of a fencing token counter at INT64_MAX or holding a
 * string that is not an integer, and counts that are not integers. Each test makes such a
 * call and reads the whole database back through the fixture's admin connection: a failed
 * call left it as it was; a successful one made its change. Then the permission is granted
 * (or the key put right) and the same call succeeds: what the client believes (its holds,
 * its permits) was never made wrong by the failure.
 *
 * Every test starts its own server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dlock.h"
#include "dlock_int.h"
#include "harness.h"
#include "lock_helpers.h" /* new_lock, new_fenced */
#include "redis_fixture.h"
#include "test_util.h"

#define LEASE_MS 60000

/* ---- a server with a user who may not publish ---------------------------------------------- */

typedef struct world {
    redis_fixture *f;
    dlock_client *admin;  /* the default user: every permission */
    dlock_client *no_pub; /* user "nopub": every command and key, no channel */
    char url[512];
} world;

/* Runs cmd, words split at spaces, on the admin connection; fails the test on an error. */
static void admin_ok(redis_fixture *f, const char *cmd) {
    char words[256];
    snprintf(words, sizeof(words), "%s", cmd);
    const char *argv[8];
    size_t lens[8];
    int argc = 0;
    for (char *save = NULL, *w = strtok_r(words, " ", &save); w && argc < 8;
         w = strtok_r(NULL, " ", &save)) {
        argv[argc] = w;
        lens[argc++] = strlen(w);
    }
    redisReply *r = redis_fixture_cmd_argv(f, argc, argv, lens);
    if (!r || r->type == REDIS_REPLY_ERROR)
        fail_msg("%s: %s", cmd, r ? r->str : "no reply");
    freeReplyObject(r);
}

static void world_start(world *w) {
    memset(w, 0, sizeof(*w));
    w->f = start_server();
    redisReply *r = redis_fixture_cmd(w->f, "ACL SETUSER nopub on >pw ~* resetchannels +@all");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    snprintf(w->url, sizeof(w->url), "%s?user=nopub&password=pw", redis_fixture_unix_url(w->f));
    w->admin = connect_client(w->f);
    w->no_pub = connect_client_cfg(w->f, (test_client_cfg){.url = w->url});
}

static void world_stop(world *w) {
    dlock_client_free(w->no_pub);
    dlock_client_free(w->admin);
    redis_fixture_stop(w->f);
}

static void grant_channels(world *w) {
    admin_ok(w->f, "ACL SETUSER nopub allchannels");
}

/* ---- the whole database, as text ----------------------------------------------------------- */

/* `call` failed with `want` and Redis is as `before` says. Frees before. */
#define ASSERT_FAILED_UNCHANGED(w, before, call, want)                                             \
    do {                                                                                           \
        ASSERT_RC(call, want);                                                                     \
        char *after_ = db_state((w)->f);                                                           \
        if (strcmp((before), after_) != 0)                                                         \
            fail_msg("%s failed but changed Redis.\nbefore:\n%s\nafter:\n%s", #call, (before),     \
                     after_);                                                                      \
        free(after_);                                                                              \
        free(before);                                                                              \
    } while (0)

static char *str_of(redis_fixture *f, const char *key) {
    return redis_fixture_str(f, "GET %s", key);
}

static void assert_string_key(redis_fixture *f, const char *key, const char *want) {
    char *v = str_of(f, key);
    if (!want && v)
        fail_msg("%s = \"%s\", expected no key", key, v);
    if (want && (!v || strcmp(v, want) != 0))
        fail_msg("%s = %s%s%s, expected \"%s\"", key, v ? "\"" : "", v ? v : "(nil)", v ? "\"" : "",
                 want);
    free(v);
}

/* ---- the lock ------------------------------------------------------------------------------ */

static bool is_held(dlock_lock *l) {
    bool held = false;
    ASSERT_RC(dlock_lock_is_held(l, &held), DLOCK_OK);
    return held;
}

static int64_t hold_count(dlock_lock *l) {
    int64_t n = -1;
    ASSERT_RC(dlock_lock_hold_count(l, &n), DLOCK_OK);
    return n;
}

static void test_last_release_without_channel_permission_changes_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    world w;
    world_start(&w);
    dlock_lock *l = new_lock(w.no_pub, "effects-lock");
    ASSERT_RC(dlock_lock_try_acquire(l, 0, LEASE_MS), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(l, 0, LEASE_MS), DLOCK_OK);

    /* a release that keeps a hold publishes nothing: it succeeds and gives the hold back */
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(hold_count(l), 1);
    assert_int_equal(redis_fixture_int(w.f, "HLEN effects-lock"), 1);

    /* the last one must publish "0": refused, and the lock stays as it was */
    char *before = db_state(w.f);
    ASSERT_FAILED_UNCHANGED(&w, before, dlock_lock_release(l), DLOCK_ENOPERM);
    assert_true(is_held(l));
    assert_int_equal(hold_count(l), 1);

    /* the hold the client still counts is there: its release is no DLOCK_ELOST */
    grant_channels(&w);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(w.f, "EXISTS effects-lock"), 0);
    assert_false(is_held(l));
    dlock_lock_free(l);
    world_stop(&w);
}

static void test_force_release_without_channel_permission_changes_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    world w;
    world_start(&w);
    dlock_lock *held = new_lock(w.admin, "effects-force");
    dlock_lock *l = new_lock(w.no_pub, "effects-force");
    ASSERT_RC(dlock_lock_try_acquire(held, 0, LEASE_MS), DLOCK_OK);

    char *before = db_state(w.f);
    bool was_locked = false;
    ASSERT_FAILED_UNCHANGED(&w, before, dlock_lock_force_release(l, &was_locked), DLOCK_ENOPERM);
    assert_true(is_held(held));

    grant_channels(&w);
    ASSERT_RC(dlock_lock_force_release(l, &was_locked), DLOCK_OK);
    assert_true(was_locked);
    assert_int_equal(redis_fixture_int(w.f, "EXISTS effects-force"), 0);
    dlock_lock_free(l);
    dlock_lock_free(held);
    world_stop(&w);
}

static void test_fenced_last_release_without_channel_permission_changes_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    world w;
    world_start(&w);
    dlock_lock *l = new_fenced(w.no_pub, "effects-fenced");
    ASSERT_RC(dlock_lock_try_acquire(l, 0, LEASE_MS), DLOCK_OK);
    assert_string_key(w.f, "redisson_lock_token:{effects-fenced}", "1");

    char *before = db_state(w.f);
    ASSERT_FAILED_UNCHANGED(&w, before, dlock_lock_release(l), DLOCK_ENOPERM);
    assert_true(is_held(l));

    grant_channels(&w);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(w.f, "EXISTS effects-fenced"), 0);
    dlock_lock_free(l);
    world_stop(&w);
}

/* ---- the fenced lock's token counter --------------------------------------------------------- */

#define TOKEN_KEY "redisson_lock_token:{effects-token}"

/* With the counter at `bad`, a fenced acquire fails with DLOCK_EREDIS and leaves Redis as
 * it was: no hash, not held, the counter as it was; a client takes the lock once the
 * counter holds 41, and gets token 42. */
static void acquire_refused_with_token(world *w, const char *bad, const char *why) {
    redisReply *r = redis_fixture_cmd(w->f, "SET %s %s", TOKEN_KEY, bad);
    freeReplyObject(r);
    dlock_lock *l = new_fenced(w->admin, "effects-token");
    char *before = db_state(w->f);
    ASSERT_FAILED_UNCHANGED(w, before, dlock_lock_try_acquire(l, 0, LEASE_MS), DLOCK_EREDIS);
    if (!strstr(dlock_last_error(), why))
        fail_msg("token \"%s\": last error \"%s\" does not say \"%s\"", bad, dlock_last_error(),
                 why);
    assert_int_equal(redis_fixture_int(w->f, "EXISTS effects-token"), 0);
    assert_false(is_held(l));
    assert_int_equal(hold_count(l), 0);
    dlock_lock_free(l);

    admin_ok(w->f, "SET " TOKEN_KEY " 41");
    dlock_lock *other = new_fenced(w->no_pub, "effects-token");
    ASSERT_RC(dlock_lock_try_acquire(other, 0, LEASE_MS), DLOCK_OK);
    uint64_t token = 0;
    ASSERT_RC(dlock_lock_token(other, &token), DLOCK_OK);
    assert_int_equal(token, 42);
    admin_ok(w->f, "DEL effects-token");
    dlock_lock_free(other);
}

static void test_fenced_acquire_with_the_token_at_int64_max_takes_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    world w;
    world_start(&w);
    acquire_refused_with_token(&w, "9223372036854775807", "cannot rise");
    world_stop(&w);
}

static void test_fenced_acquire_with_a_token_that_is_no_integer_takes_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    world w;
    world_start(&w);
    /* INCR takes none of these (out of range, leading zero, sign, exponent, space) */
    static const char *const BAD[] = {"abc",
                                      "9223372036854775808",
                                      "-9223372036854775809",
                                      "99999999999999999999",
                                      "01",
                                      "+1",
                                      "1e3",
                                      "1.5"};
    for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++)
        acquire_refused_with_token(&w, BAD[i], "WRONGTYPE " TOKEN_KEY);
    world_stop(&w);
}

static void test_fenced_token_just_below_int64_max_is_given_exactly(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    world w;
    world_start(&w);
    admin_ok(w.f, "SET " TOKEN_KEY " 9223372036854775806");
    dlock_lock *l = new_fenced(w.admin, "effects-token");
    ASSERT_RC(dlock_lock_try_acquire(l, 0, LEASE_MS), DLOCK_OK);
    uint64_t token = 0;
    ASSERT_RC(dlock_lock_token(l, &token), DLOCK_OK);
    assert_true(token == (uint64_t)INT64_MAX);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    /* and no further */
    ASSERT_RC(dlock_lock_try_acquire(l, 0, LEASE_MS), DLOCK_EREDIS);
    assert_false(is_held(l));
    dlock_lock_free(l);
    world_stop(&w);
}

/* ---- the semaphore ------------------------------------------------------------------------- */

static dlock_semaphore *new_semaphore(dlock_client *c, const char *name) {
    dlock_semaphore *s = NULL;
    ASSERT_RC(dlock_semaphore_new(c, name, &s), DLOCK_OK);
    return s;
}

static void test_semaphore_calls_without_channel_permission_change_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    world w;
    world_start(&w);
    dlock_semaphore *s = new_semaphore(w.no_pub, "effects-sem");

    char *before = db_state(w.f);
    bool was_set = true;
    ASSERT_FAILED_UNCHANGED(&w, before, dlock_semaphore_try_set_permits(s, 3, &was_set),
                            DLOCK_ENOPERM);
    assert_string_key(w.f, "effects-sem", NULL);

    admin_ok(w.f, "SET effects-sem 3");
    before = db_state(w.f);
    ASSERT_FAILED_UNCHANGED(&w, before, dlock_semaphore_add_permits(s, 1), DLOCK_ENOPERM);
    before = db_state(w.f);
    ASSERT_FAILED_UNCHANGED(&w, before, dlock_semaphore_add_permits(s, -1), DLOCK_ENOPERM);
    before = db_state(w.f);
    ASSERT_FAILED_UNCHANGED(&w, before, dlock_semaphore_release(s, 2), DLOCK_ENOPERM);
    assert_string_key(w.f, "effects-sem", "3");

    /* taking permits publishes nothing: it succeeds and takes them */
    ASSERT_RC(dlock_semaphore_try_acquire(s, 2, 0), DLOCK_OK);
    assert_string_key(w.f, "effects-sem", "1");
    int64_t drained = 0;
    ASSERT_RC(dlock_semaphore_drain(s, &drained), DLOCK_OK);
    assert_int_equal(drained, 1);
    assert_string_key(w.f, "effects-sem", "0");

    grant_channels(&w);
    ASSERT_RC(dlock_semaphore_release(s, 2), DLOCK_OK);
    ASSERT_RC(dlock_semaphore_add_permits(s, 1), DLOCK_OK);
    assert_string_key(w.f, "effects-sem", "3");
    dlock_semaphore_free(s);
    world_stop(&w);
}

static void test_semaphore_count_that_is_no_integer_is_wrongtype_and_stays(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    world w;
    world_start(&w);
    admin_ok(w.f, "SET effects-sem abc");
    dlock_semaphore *s = new_semaphore(w.admin, "effects-sem");
    int64_t n = 0;
    bool was_set = false;
#define REFUSED(call)                                                                              \
    do {                                                                                           \
        char *before_ = db_state(w.f);                                                             \
        ASSERT_FAILED_UNCHANGED(&w, before_, call, DLOCK_EREDIS);                                  \
        if (!strstr(dlock_last_error(), "WRONGTYPE effects-sem holds \"abc\""))                    \
            fail_msg("%s: last error \"%s\" does not say what the key holds", #call,               \
                     dlock_last_error());                                                          \
    } while (0)
    REFUSED(dlock_semaphore_try_set_permits(s, 1, &was_set));
    REFUSED(dlock_semaphore_add_permits(s, 1));
    REFUSED(dlock_semaphore_release(s, 1));
    REFUSED(dlock_semaphore_try_acquire(s, 1, 0));
    REFUSED(dlock_semaphore_drain(s, &n));
#undef REFUSED
    dlock_semaphore_free(s);
    world_stop(&w);
}

static void test_semaphore_count_is_exact_to_int64_max(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    world w;
    world_start(&w);
    dlock_semaphore *s = new_semaphore(w.admin, "effects-sem");
    admin_ok(w.f, "SET effects-sem 9223372036854775806");
    ASSERT_RC(dlock_semaphore_release(s, 1), DLOCK_OK);
    assert_string_key(w.f, "effects-sem", "9223372036854775807");
    char *before = db_state(w.f);
    ASSERT_FAILED_UNCHANGED(&w, before, dlock_semaphore_add_permits(s, 1), DLOCK_EREDIS);
    ASSERT_RC(dlock_semaphore_try_acquire(s, 9223372036854775806, 0), DLOCK_OK);
    assert_string_key(w.f, "effects-sem", "1");
    int64_t drained = 0;
    admin_ok(w.f, "SET effects-sem 9007199254740993"); /* 2^53 + 1: no double holds it */
    ASSERT_RC(dlock_semaphore_drain(s, &drained), DLOCK_OK);
    assert_true(drained == 9007199254740993);
    dlock_semaphore_free(s);
    world_stop(&w);
}

/* ---- the permit-expirable semaphore -------------------------------------------------------- */

static dlock_permits *new_permits(dlock_client *c, const char *name) {
    dlock_permits *p = NULL;
    ASSERT_RC(dlock_permits_new(c, name, &p), DLOCK_OK);
    return p;
}

static void test_permits_calls_without_channel_permission_change_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    world w;
    world_start(&w);
    dlock_permits *p = new_permits(w.no_pub, "effects-permits");

    char *before = db_state(w.f);
    bool was_set = true;
    ASSERT_FAILED_UNCHANGED(&w, before, dlock_permits_try_set_permits(p, 2, &was_set),
                            DLOCK_ENOPERM);
    assert_string_key(w.f, "effects-permits", NULL);

    /* acquiring publishes nothing: it succeeds and takes the permit */
    admin_ok(w.f, "SET effects-permits 2");
    dlock_permit_id id;
    ASSERT_RC(dlock_permits_acquire(p, 0, -1, &id), DLOCK_OK);
    assert_string_key(w.f, "effects-permits", "1");
    assert_int_equal(redis_fixture_int(w.f, "ZCARD {effects-permits}:timeout"), 1);

    before = db_state(w.f);
    ASSERT_FAILED_UNCHANGED(&w, before, dlock_permits_release(p, &id), DLOCK_ENOPERM);

    grant_channels(&w);
    ASSERT_RC(dlock_permits_release(p, &id), DLOCK_OK);
    assert_string_key(w.f, "effects-permits", "2");
    assert_int_equal(redis_fixture_int(w.f, "ZCARD {effects-permits}:timeout"), 0);
    dlock_permits_free(p);
    world_stop(&w);
}

/* Every call first gives back the permits whose lease ended, and publishes the new count:
 * refused, so the whole call is, and the expired permit stays until a call may publish. */
static void test_permits_expired_lease_without_channel_permission_changes_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    world w;
    world_start(&w);
    dlock_permits *p = new_permits(w.no_pub, "effects-permits");
    admin_ok(w.f, "SET effects-permits 0");
    admin_ok(w.f, "ZADD {effects-permits}:timeout 1 expired-permit-id");

    int64_t available = -1;
    char *before = db_state(w.f);
    ASSERT_FAILED_UNCHANGED(&w, before, dlock_permits_available(p, &available), DLOCK_ENOPERM);
    dlock_permit_id id;
    before = db_state(w.f);
    ASSERT_FAILED_UNCHANGED(&w, before, dlock_permits_acquire(p, 0, -1, &id), DLOCK_ENOPERM);

    grant_channels(&w);
    ASSERT_RC(dlock_permits_available(p, &available), DLOCK_OK);
    assert_int_equal(available, 1);
    assert_int_equal(redis_fixture_int(w.f, "ZCARD {effects-permits}:timeout"), 0);
    dlock_permits_free(p);
    world_stop(&w);
}

/* ---- the latch ----------------------------------------------------------------------------- */

static dlock_latch *new_latch(dlock_client *c, const char *name) {
    dlock_latch *l = NULL;
    ASSERT_RC(dlock_latch_new(c, name, &l), DLOCK_OK);
    return l;
}

static void test_latch_calls_without_channel_permission_change_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    world w;
    world_start(&w);
    dlock_latch *l = new_latch(w.no_pub, "effects-latch");

    char *before = db_state(w.f);
    bool was_set = true;
    ASSERT_FAILED_UNCHANGED(&w, before, dlock_latch_try_set_count(l, 2, &was_set), DLOCK_ENOPERM);
    assert_string_key(w.f, "effects-latch", NULL);

    /* counting down to 1 publishes nothing: it succeeds and counts */
    admin_ok(w.f, "SET effects-latch 2");
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
    assert_string_key(w.f, "effects-latch", "1");

    /* to 0 it publishes "0": refused, still at 1 */
    before = db_state(w.f);
    ASSERT_FAILED_UNCHANGED(&w, before, dlock_latch_count_down(l), DLOCK_ENOPERM);

    grant_channels(&w);
    ASSERT_RC(dlock_latch_count_down(l), DLOCK_OK);
    assert_string_key(w.f, "effects-latch", NULL);
    ASSERT_RC(dlock_latch_try_set_count(l, 2, &was_set), DLOCK_OK);
    assert_true(was_set);
    assert_string_key(w.f, "effects-latch", "2");
    dlock_latch_free(l);
    world_stop(&w);
}

static void test_latch_count_that_is_no_integer_is_wrongtype_and_stays(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    world w;
    world_start(&w);
    admin_ok(w.f, "SET effects-latch 1.5");
    dlock_latch *l = new_latch(w.admin, "effects-latch");
    char *before = db_state(w.f);
    ASSERT_FAILED_UNCHANGED(&w, before, dlock_latch_count_down(l), DLOCK_EREDIS);
    assert_non_null(strstr(dlock_last_error(), "WRONGTYPE effects-latch holds \"1.5\""));
    bool was_set = true;
    before = db_state(w.f);
    ASSERT_FAILED_UNCHANGED(&w, before, dlock_latch_try_set_count(l, 3, &was_set), DLOCK_EREDIS);
    dlock_latch_free(l);
    world_stop(&w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_last_release_without_channel_permission_changes_nothing),
        cmocka_unit_test(test_force_release_without_channel_permission_changes_nothing),
        cmocka_unit_test(test_fenced_last_release_without_channel_permission_changes_nothing),
        cmocka_unit_test(test_fenced_acquire_with_the_token_at_int64_max_takes_nothing),
        cmocka_unit_test(test_fenced_acquire_with_a_token_that_is_no_integer_takes_nothing),
        cmocka_unit_test(test_fenced_token_just_below_int64_max_is_given_exactly),
        cmocka_unit_test(test_semaphore_calls_without_channel_permission_change_nothing),
        cmocka_unit_test(test_semaphore_count_that_is_no_integer_is_wrongtype_and_stays),
        cmocka_unit_test(test_semaphore_count_is_exact_to_int64_max),
        cmocka_unit_test(test_permits_calls_without_channel_permission_change_nothing),
        cmocka_unit_test(test_permits_expired_lease_without_channel_permission_changes_nothing),
        cmocka_unit_test(test_latch_calls_without_channel_permission_change_nothing),
        cmocka_unit_test(test_latch_count_that_is_no_integer_is_wrongtype_and_stays),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
