/* SPDX-License-Identifier: MIT */
/* test_lock_layout.c — the lock tests of test_lock.c, split from it by concern: the layout in
 * Redis; bad input. Helpers: tests/support/lock_helpers.h. Every test starts its own server. */
#include "lock_helpers.h"

/* ---- the layout in Redis ----------------------------------------------------------------- */

static void
test_layout_is_a_hash_of_client_id_colon_owner_to_hold_count_with_the_lease_as_pttl(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_fenced(c, "layout");
    ASSERT_RC(dlock_lock_acquire(l, 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, 20000), DLOCK_OK);
    char field[128], want[256], dump[512];
    owner_field(c, dlock_thread_owner(), field, sizeof(field));
    assert_int_equal(strlen(dlock_client_id(c)), 36);
    assert_true(dlock_thread_owner() >= DLOCK_THREAD_OWNER_BASE); /* above async owners */
    snprintf(want, sizeof(want), "%s=2;", field);
    hash_dump(f, "layout", dump, sizeof(dump));
    assert_string_equal(dump, want);
    char *type = redis_fixture_str(f, "TYPE layout");
    assert_string_equal(type, "hash");
    free(type);
    ASSERT_BETWEEN(pttl_of(f, "layout"), 19000, 20000);
    uint64_t token = 0;
    ASSERT_RC(dlock_lock_token(l, &token), DLOCK_OK);
    assert_int_equal(token, 2); /* one per acquisition, reentrant ones too */
    assert_int_equal(redis_fixture_int(f, "GET redisson_lock_token:{layout}"), (long long)token);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    snprintf(want, sizeof(want), "%s=1;", field);
    hash_dump(f, "layout", dump, sizeof(dump));
    assert_string_equal(dump, want);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS layout"), 0);
    /* the counter outlives the lock and never expires */
    assert_int_equal(redis_fixture_int(f, "GET redisson_lock_token:{layout}"), 2);
    assert_int_equal(pttl_of(f, "redisson_lock_token:{layout}"), -1);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* Subscribes a plain hiredis connection to channel, takes two holds on name (fenced),
 * releases both, then publishes a marker itself: the subscriber must see exactly "0" (from
 * the last release, none from the first) and then the marker. Checks the token key too. */
static void check_channel_and_token_key(const char *name, const char *channel,
                                        const char *token_key, const char *not_token_key) {
    redis_fixture *f = start_server();
    redisContext *sub = subscribe_to(f, channel);

    dlock_client *c = connect_client(f);
    dlock_lock *l = new_fenced(c, name);
    ASSERT_RC(dlock_lock_acquire(l, 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, 20000), DLOCK_OK);
    uint64_t token = 0;
    ASSERT_RC(dlock_lock_token(l, &token), DLOCK_OK);
    char *stored = redis_fixture_str(f, "GET %s", token_key);
    assert_non_null(stored);
    assert_int_equal(strtoull(stored, NULL, 10), token);
    free(stored);
    assert_int_equal(redis_fixture_int(f, "EXISTS %s", not_token_key), 0);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "PUBLISH %s marker", channel), 1);

    const char *want[2] = {"0", "marker"};
    for (int i = 0; i < 2; i++) {
        void *m = NULL;
        assert_int_equal(redisGetReply(sub, &m), REDIS_OK);
        redisReply *r = m;
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_int_equal(r->elements, 3);
        assert_string_equal(r->element[0]->str, "message");
        assert_string_equal(r->element[1]->str, channel);
        assert_string_equal(r->element[2]->str, want[i]);
        freeReplyObject(r);
    }
    redisFree(sub);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void
test_last_release_publishes_0_on_redisson_lock__channel_of_the_name_in_braces(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    check_channel_and_token_key("orders", "redisson_lock__channel:{orders}",
                                "redisson_lock_token:{orders}", "redisson_lock_token:orders");
}

/* What the server runs for a lock: a free lock is taken with one read (EXISTS of the lock and
 * its hand-off marker) and two writes; a held one is told busy without a write. The
 * commands a script runs count in INFO commandstats like a client's. */
static void test_a_free_lock_is_taken_with_one_read_and_two_writes(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "counted");
    const char *reads[] = {"exists", "hget", "get", "hexists"};
    const char *writes[] = {"hincrby", "pexpire"};
    long long before[6], after[6];
    for (int i = 0; i < 6; i++)
        before[i] = command_calls(f, i < 4 ? reads[i] : writes[i - 4]);
    ASSERT_RC(dlock_lock_acquire(l, 20000), DLOCK_OK);
    for (int i = 0; i < 6; i++)
        after[i] = command_calls(f, i < 4 ? reads[i] : writes[i - 4]);
    assert_int_equal(after[0] - before[0], 1); /* exists */
    assert_int_equal(after[1] - before[1], 0); /* hget */
    assert_int_equal(after[2] - before[2], 0); /* get */
    assert_int_equal(after[3] - before[3], 0); /* hexists */
    assert_int_equal(after[4] - before[4], 1); /* hincrby */
    assert_int_equal(after[5] - before[5], 1); /* pexpire */
    char field[128], want[256], dump[512];
    owner_field(c, dlock_thread_owner(), field, sizeof(field));
    snprintf(want, sizeof(want), "%s=1;", field);
    hash_dump(f, "counted", dump, sizeof(dump));
    assert_string_equal(dump, want);
    ASSERT_BETWEEN(pttl_of(f, "counted"), 19000, 20000);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS counted"), 0);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_name_with_a_brace_uses_token_key_and_channel_without_extra_braces(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    check_channel_and_token_key("user:{42}:cart", "redisson_lock__channel:user:{42}:cart",
                                "redisson_lock_token:user:{42}:cart",
                                "redisson_lock_token:{user:{42}:cart}");
}

/* ---- bad input --------------------------------------------------------------------------- */

static void noop_lost(dlock_lock *l, uint64_t owner, int reason, void *arg) {
    (void)l;
    (void)owner;
    (void)reason;
    (void)arg;
}

static void test_bad_arguments_are_einval_without_any_io(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "valid");
    dlock_lock *fl = new_fenced(c, "valid-fenced");
    long long before = redis_fixture_info_int(f, "stats", "total_commands_processed");

    dlock_lock *out = (dlock_lock *)&out; /* a sentinel: constructors leave it alone */
    dlock_lock *const sentinel = out;
    ASSERT_EINVAL(dlock_lock_new(NULL, "n", &out));
    ASSERT_EINVAL(dlock_lock_new(c, NULL, &out));
    ASSERT_EINVAL(dlock_lock_new(c, "", &out));
    ASSERT_EINVAL(dlock_lock_new(c, "n", NULL));
    ASSERT_EINVAL(dlock_fencedlock_new(NULL, "n", &out));
    ASSERT_EINVAL(dlock_fencedlock_new(c, NULL, &out));
    ASSERT_EINVAL(dlock_fencedlock_new(c, "", &out));
    ASSERT_EINVAL(dlock_fencedlock_new(c, "n", NULL));
    assert_ptr_equal(out, sentinel);

    ASSERT_EINVAL(dlock_lock_acquire(NULL, 1000));
    ASSERT_EINVAL(dlock_lock_acquire(l, 0));
    ASSERT_EINVAL(dlock_lock_acquire(l, -2));
    ASSERT_EINVAL(dlock_lock_acquire(l, INT64_MIN));
    ASSERT_EINVAL(dlock_lock_try_acquire(NULL, 0, 1000));
    ASSERT_EINVAL(dlock_lock_try_acquire(l, -2, 1000));
    ASSERT_EINVAL(dlock_lock_try_acquire(l, -1000, 1000));
    ASSERT_EINVAL(dlock_lock_try_acquire(l, INT64_MIN, 1000));
    ASSERT_EINVAL(dlock_lock_try_acquire(l, 0, 0));
    ASSERT_EINVAL(dlock_lock_try_acquire(l, 0, -2));
    ASSERT_EINVAL(dlock_lock_try_acquire(l, DLOCK_FOREVER, -100));
    ASSERT_EINVAL(dlock_lock_release(NULL));
    bool b = false;
    int64_t n = 0;
    uint64_t token = 0;
    ASSERT_EINVAL(dlock_lock_force_release(NULL, &b));
    ASSERT_EINVAL(dlock_lock_is_locked(NULL, &b));
    ASSERT_EINVAL(dlock_lock_is_locked(l, NULL));
    ASSERT_EINVAL(dlock_lock_is_held(NULL, &b));
    ASSERT_EINVAL(dlock_lock_is_held(l, NULL));
    ASSERT_EINVAL(dlock_lock_hold_count(NULL, &n));
    ASSERT_EINVAL(dlock_lock_hold_count(l, NULL));
    ASSERT_EINVAL(dlock_lock_ttl(NULL, &n));
    ASSERT_EINVAL(dlock_lock_ttl(l, NULL));
    ASSERT_EINVAL(dlock_lock_token(NULL, &token));
    ASSERT_EINVAL(dlock_lock_token(fl, NULL));
    ASSERT_EINVAL(dlock_lock_token_of(NULL, 1, &token));
    ASSERT_EINVAL(dlock_lock_token_of(fl, 1, NULL));
    ASSERT_EINVAL(dlock_lock_on_lost(NULL, noop_lost, NULL));
    assert_null(dlock_lock_name(NULL));
    dlock_lock_free(NULL);

    long long after = redis_fixture_info_int(f, "stats", "total_commands_processed");
    assert_int_equal(after - before, 1); /* only the first INFO */
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    assert_string_equal(dlock_lock_name(l), "valid");
    dlock_lock_free(l);
    dlock_lock_free(fl);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_name_over_64_kib_is_einval_and_64_kib_works(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    size_t max = 64 * 1024;
    char *name = malloc(max + 2);
    memset(name, 'n', max + 1);
    name[max + 1] = '\0';
    dlock_lock *l = NULL;
    long long before = redis_fixture_info_int(f, "stats", "total_commands_processed");
    ASSERT_RC(dlock_lock_new(c, name, &l), DLOCK_EINVAL);
    ASSERT_RC(dlock_fencedlock_new(c, name, &l), DLOCK_EINVAL);
    assert_null(l);
    assert_int_equal(redis_fixture_info_int(f, "stats", "total_commands_processed") - before, 1);
    name[max] = '\0';
    ASSERT_RC(dlock_lock_new(c, name, &l), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    const char *argv[] = {"EXISTS", name};
    size_t lens[] = {6, max};
    redisReply *r = redis_fixture_cmd_argv(f, 2, argv, lens);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    dlock_lock_free(l);
    free(name);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_long_binary_ish_name_with_spaces_braces_and_utf8_works(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    const char *piece = "lock name \xc3\xa9t\xc3\xa9 {tag} \xe2\x82\xac\t\xf0\x9f\x94\x92 % ";
    size_t want_len = 10 * 1024, plen = strlen(piece);
    char *name = malloc(want_len + plen + 1);
    name[0] = '\0';
    size_t len = 0;
    while (len < want_len) {
        memcpy(name + len, piece, plen + 1);
        len += plen;
    }
    dlock_lock *l = new_fenced(c, name);
    assert_string_equal(dlock_lock_name(l), name);
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    uint64_t token = 0;
    ASSERT_RC(dlock_lock_token(l, &token), DLOCK_OK);

    char field[128];
    owner_field(c, dlock_thread_owner(), field, sizeof(field));
    const char *hget[] = {"HGET", name, field};
    size_t hget_len[] = {4, len, strlen(field)};
    redisReply *r = redis_fixture_cmd_argv(f, 3, hget, hget_len);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "1");
    freeReplyObject(r);
    /* the name holds a '{': the token key is prefixed without extra braces */
    char *token_key = malloc(len + 64);
    int klen = snprintf(token_key, len + 64, "redisson_lock_token:%s", name);
    const char *get[] = {"GET", token_key};
    size_t get_len[] = {3, (size_t)klen};
    r = redis_fixture_cmd_argv(f, 2, get, get_len);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(strtoull(r->str, NULL, 10), token);
    freeReplyObject(r);
    int64_t count = 0;
    ASSERT_RC(dlock_lock_hold_count(l, &count), DLOCK_OK);
    assert_int_equal(count, 1);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 1); /* only the token counter */
    free(token_key);
    dlock_lock_free(l);
    free(name);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void
test_lock_key_of_another_type_is_eredis_wrongtype_and_the_key_is_unchanged(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "a-string");
    freeReplyObject(redis_fixture_cmd(f, "SET a-string x"));
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_EREDIS);
    assert_non_null(strstr(dlock_last_error(), "WRONGTYPE"));
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_EREDIS);
    assert_non_null(strstr(dlock_last_error(), "WRONGTYPE"));
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 10000), DLOCK_EREDIS);
    ASSERT_RC(dlock_lock_try_acquire(l, 2000, 10000), DLOCK_EREDIS);
    ASSERT_RC(dlock_lock_release(l), DLOCK_EREDIS);
    assert_non_null(strstr(dlock_last_error(), "WRONGTYPE"));
    bool held = true;
    ASSERT_RC(dlock_lock_is_held(l, &held), DLOCK_EREDIS);
    char *v = redis_fixture_str(f, "GET a-string");
    assert_string_equal(v, "x");
    free(v);
    assert_int_equal(pttl_of(f, "a-string"), -1);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 1);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_force_release_of_a_string_key_is_eredis_and_the_key_is_unchanged(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "a-string");
    freeReplyObject(redis_fixture_cmd(f, "SET a-string x PX 50000"));
    bool was_locked = false;
    ASSERT_RC(dlock_lock_force_release(l, &was_locked), DLOCK_EREDIS);
    assert_non_null(strstr(dlock_last_error(), "WRONGTYPE"));
    char *v = redis_fixture_str(f, "GET a-string");
    assert_string_equal(v, "x");
    free(v);
    ASSERT_BETWEEN(pttl_of(f, "a-string"), 40000, 50000);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_layout_is_a_hash_of_client_id_colon_owner_to_hold_count_with_the_lease_as_pttl),
        cmocka_unit_test(
            test_last_release_publishes_0_on_redisson_lock__channel_of_the_name_in_braces),
        cmocka_unit_test(test_a_free_lock_is_taken_with_one_read_and_two_writes),
        cmocka_unit_test(test_name_with_a_brace_uses_token_key_and_channel_without_extra_braces),
        cmocka_unit_test(test_bad_arguments_are_einval_without_any_io),
        cmocka_unit_test(test_name_over_64_kib_is_einval_and_64_kib_works),
        cmocka_unit_test(test_long_binary_ish_name_with_spaces_braces_and_utf8_works),
        cmocka_unit_test(
            test_lock_key_of_another_type_is_eredis_wrongtype_and_the_key_is_unchanged),
        cmocka_unit_test(test_force_release_of_a_string_key_is_eredis_and_the_key_is_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
