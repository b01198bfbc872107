/* SPDX-License-Identifier: MIT */
/* test_rwlock_layout.c — the rwlock tests of test_rwlock.c, split from it by concern: the layout;
 * bad input; resends are applied once. Helpers: tests/support/rwlock_helpers.h. Every test starts
 * its own server. */
#include "rwlock_helpers.h"

/* ---- the layout --------------------------------------------------------------------------- */

static void
test_layout_is_mode_reader_and_writer_fields_and_a_timeout_key_per_read_hold(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_rwlock *rw = new_rw(c, "layout");
    char rfield[128], wfield[128], key1[256], key2[256], want[512], dump[1024];
    reader_field(c, dlock_thread_owner(), rfield, sizeof(rfield));
    writer_field(c, dlock_thread_owner(), wfield, sizeof(wfield));
    timeout_key("layout", rfield, 1, key1, sizeof(key1));
    timeout_key("layout", rfield, 2, key2, sizeof(key2));

    ASSERT_RC(dlock_lock_acquire(WRITE(rw), 20000), DLOCK_OK);
    snprintf(want, sizeof(want), "%s=1;mode=write;", wfield);
    hash_dump_sorted(f, "layout", dump, sizeof(dump));
    assert_string_equal(dump, want);
    char *type = redis_fixture_str(f, "TYPE layout");
    assert_string_equal(type, "hash");
    free(type);
    ASSERT_BETWEEN(pttl_of(f, "layout"), 19000, 20000);

    /* the writer reads: a reader field and the hold's own timeout key */
    ASSERT_RC(dlock_lock_acquire(READ(rw), 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(READ(rw), 30000), DLOCK_OK);
    snprintf(want, sizeof(want), "%s=1;%s=2;mode=write;", wfield, rfield);
    hash_dump_sorted(f, "layout", dump, sizeof(dump));
    assert_string_equal(dump, want);
    char *v = redis_fixture_str(f, "GET %s", key1);
    assert_string_equal(v, "1");
    free(v);
    type = redis_fixture_str(f, "TYPE %s", key2);
    assert_string_equal(type, "string");
    free(type);
    ASSERT_BETWEEN(pttl_of(f, key1), 9000, 10000);
    ASSERT_BETWEEN(pttl_of(f, key2), 29000, 30000);
    ASSERT_BETWEEN(pttl_of(f, "layout"), 29000, 30000); /* the longest hold */

    ASSERT_RC(dlock_lock_release(WRITE(rw)), DLOCK_OK);
    snprintf(want, sizeof(want), "%s=2;mode=read;", rfield);
    hash_dump_sorted(f, "layout", dump, sizeof(dump));
    assert_string_equal(dump, want);
    ASSERT_BETWEEN(pttl_of(f, "layout"), 28000, 30000);

    /* releases go last hold first: the 30 s hold goes, the hash keeps the 10 s one's TTL */
    ASSERT_RC(dlock_lock_release(READ(rw)), DLOCK_OK);
    assert_int_equal(exists(f, key2), 0);
    ASSERT_BETWEEN(pttl_of(f, key1), 8000, 10000);
    ASSERT_BETWEEN(pttl_of(f, "layout"), 8000, 10000);
    snprintf(want, sizeof(want), "%s=1;mode=read;", rfield);
    hash_dump_sorted(f, "layout", dump, sizeof(dump));
    assert_string_equal(dump, want);
    int64_t ttl = 0;
    ASSERT_RC(dlock_lock_ttl(READ(rw), &ttl), DLOCK_OK);
    ASSERT_BETWEEN(ttl, 8000, 10000);
    ASSERT_RC(dlock_lock_release(READ(rw)), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    ASSERT_RC(dlock_lock_ttl(WRITE(rw), &ttl), DLOCK_OK);
    assert_int_equal(ttl, -2);
    dlock_rwlock_free(rw);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* Subscribes a plain hiredis connection to channel and runs, on name: write + release
 * ("1"), read + release ("0"), two readers and one release (nothing), the other release
 * ("0"), write + read, release the write ("1": readers may enter), release the read ("0");
 * then publishes a marker itself. The subscriber must see exactly that. Also checks the
 * timeout key's name. */
static void check_channel_and_keys(const char *name, const char *channel, const char *not_key) {
    redis_fixture *f = start_server();
    redisContext *sub = subscribe_to(f, channel);

    dlock_client *c = connect_client(f), *d = connect_client(f);
    dlock_rwlock *rw = new_rw(c, name), *rd = new_rw(d, name);
    ASSERT_RC(dlock_lock_acquire(WRITE(rw), 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(WRITE(rw)), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(READ(rw), 20000), DLOCK_OK);
    char field[128], key[512];
    reader_field(c, dlock_thread_owner(), field, sizeof(field));
    timeout_key(name, field, 1, key, sizeof(key));
    ASSERT_BETWEEN(pttl_of(f, key), 19000, 20000);
    assert_int_equal(live_keys(f), 3); /* N, the one timeout key and {N}:rwlock_readers */
    assert_int_equal(exists(f, not_key), 0);
    ASSERT_RC(dlock_lock_release(READ(rw)), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(READ(rw), 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(READ(rd), 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(rw)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(rd)), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(WRITE(rw), 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(READ(rw), 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(WRITE(rw)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(rw)), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    assert_int_equal(redis_fixture_int(f, "PUBLISH %s marker", channel), 1);

    const char *want[] = {"1", "0", "0", "1", "0", "marker"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        void *m = NULL;
        assert_int_equal(redisGetReply(sub, &m), REDIS_OK);
        redisReply *r = m;
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_int_equal(r->elements, 3);
        assert_string_equal(r->element[0]->str, "message");
        assert_string_equal(r->element[1]->str, channel);
        if (strcmp(r->element[2]->str, want[i]) != 0) {
            char got[32];
            snprintf(got, sizeof(got), "%s", r->element[2]->str);
            freeReplyObject(r);
            fail_msg("message %zu = \"%s\", expected \"%s\"", i, got, want[i]);
        }
        freeReplyObject(r);
    }
    redisFree(sub);
    dlock_rwlock_free(rw);
    dlock_rwlock_free(rd);
    dlock_client_free(c);
    dlock_client_free(d);
    redis_fixture_stop(f);
}

static void
test_write_release_publishes_1_and_a_read_release_that_frees_it_publishes_0(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    check_channel_and_keys("doc", "redisson_rwlock:{doc}", "doc:x");
}

static void
test_name_with_a_brace_uses_channel_and_timeout_keys_without_extra_braces(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    check_channel_and_keys("user:{7}:doc", "redisson_rwlock:user:{7}:doc", "{user:{7}:doc}:x");
}

/* ---- bad input ---------------------------------------------------------------------------- */

static void test_bad_arguments_are_einval_without_any_io(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_rwlock *rw = new_rw(c, "valid");
    long long before = redis_fixture_info_int(f, "stats", "total_commands_processed");

    dlock_rwlock *out = (dlock_rwlock *)&out; /* a sentinel: constructors leave it alone */
    dlock_rwlock *const sentinel = out;
    ASSERT_EINVAL(dlock_rwlock_new(NULL, "n", &out));
    ASSERT_EINVAL(dlock_rwlock_new(c, NULL, &out));
    ASSERT_EINVAL(dlock_rwlock_new(c, "", &out));
    ASSERT_EINVAL(dlock_rwlock_new(c, "n", NULL));
    size_t huge_len = 64 * 1024 + 1;
    char *huge = malloc(huge_len + 1);
    assert_non_null(huge);
    memset(huge, 'h', huge_len);
    huge[huge_len] = '\0';
    ASSERT_EINVAL(dlock_rwlock_new(c, huge, &out));
    free(huge);
    assert_ptr_equal(out, sentinel);
    assert_null(dlock_rwlock_read(NULL));
    assert_null(dlock_rwlock_write(NULL));
    dlock_rwlock_free(NULL);

    dlock_lock *halves[2] = {READ(rw), WRITE(rw)};
    for (int h = 0; h < 2; h++) {
        dlock_lock *l = halves[h];
        assert_non_null(l);
        assert_string_equal(dlock_lock_name(l), "valid");
        ASSERT_EINVAL(dlock_lock_acquire(l, 0));
        ASSERT_EINVAL(dlock_lock_acquire(l, -2));
        ASSERT_EINVAL(dlock_lock_try_acquire(l, -2, 1000));
        ASSERT_EINVAL(dlock_lock_try_acquire(l, 0, 0));
        ASSERT_EINVAL(dlock_lock_try_acquire(l, DLOCK_FOREVER, -100));
        bool b = false;
        int64_t n = 0;
        uint64_t token = 0;
        ASSERT_EINVAL(dlock_lock_is_locked(l, NULL));
        ASSERT_EINVAL(dlock_lock_is_held(l, NULL));
        ASSERT_EINVAL(dlock_lock_hold_count(l, NULL));
        ASSERT_EINVAL(dlock_lock_ttl(l, NULL));
        ASSERT_EINVAL(dlock_lock_token(l, &token)); /* not a fenced lock */
        ASSERT_EINVAL(dlock_lock_acquire_async(l, 0, 0, 1000, NULL, NULL));
        ASSERT_EINVAL(dlock_lock_release_async(l, 7, NULL, NULL));
        (void)b;
        (void)n;
    }
    long long after = redis_fixture_info_int(f, "stats", "total_commands_processed");
    assert_int_equal(after - before, 1); /* only the first INFO */
    assert_int_equal(live_keys(f), 0);
    dlock_rwlock_free(rw);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void
test_key_of_another_type_is_eredis_wrongtype_on_both_halves_and_unchanged(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_rwlock *rw = new_rw(c, "a-string");
    freeReplyObject(redis_fixture_cmd(f, "SET a-string x"));
    dlock_lock *halves[2] = {READ(rw), WRITE(rw)};
    for (int h = 0; h < 2; h++) {
        dlock_lock *l = halves[h];
        ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_EREDIS);
        assert_non_null(strstr(dlock_last_error(), "WRONGTYPE"));
        ASSERT_RC(dlock_lock_try_acquire(l, 0, DLOCK_WATCHDOG), DLOCK_EREDIS);
        ASSERT_RC(dlock_lock_try_acquire(l, 1000, 10000), DLOCK_EREDIS);
        ASSERT_RC(dlock_lock_release(l), DLOCK_EREDIS);
        bool b = false;
        ASSERT_RC(dlock_lock_is_locked(l, &b), DLOCK_EREDIS);
        ASSERT_RC(dlock_lock_is_held(l, &b), DLOCK_EREDIS);
        ASSERT_RC(dlock_lock_force_release(l, &b), DLOCK_EREDIS);
        assert_non_null(strstr(dlock_last_error(), "WRONGTYPE"));
    }
    char *v = redis_fixture_str(f, "GET a-string");
    assert_string_equal(v, "x");
    free(v);
    assert_int_equal(pttl_of(f, "a-string"), -1);
    assert_int_equal(live_keys(f), 1);
    dlock_rwlock_free(rw);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- resends are applied once ------------------------------------------------------------- */

/* rw.lua on N = "resent": KEYS N, channel, writers, key base; ARGV op, lease, field,
 * believed holds, fair_wait. */
static core_reply *rw_script(dlock_client *c, const char *op, const char *field,
                             const char *believed) {
    const char *args[] = {"resent",
                          "redisson_rwlock:{resent}",
                          "{resent}:rwlock_writers",
                          "{resent}",
                          op,
                          "30000",
                          field,
                          believed,
                          "5000",
                          NULL};
    core_reply *r = core_script(c, DLOCK__SCRIPT_RWLOCK_RW, DLOCK__CMD_RETRY_SAFE, 4, args);
    if (r->status != DLOCK_OK)
        fail_msg("script: %s (%s)", dlock_err_name(r->status), r->str ? r->str : "");
    return r;
}

static void expect_acquired(core_reply *r, long long holds) {
    assert_int_equal(r->type, DLOCK__REPLY_ARRAY);
    assert_int_equal(r->count, 3);
    assert_int_equal(r->elems[0].integer, 1);
    assert_int_equal(r->elems[1].integer, holds);
    core_reply_free(r);
}

static long long release_reply(core_reply *r) {
    assert_int_equal(r->type, DLOCK__REPLY_INTEGER);
    long long v = r->integer;
    core_reply_free(r);
    return v;
}

static void test_read_and_write_scripts_sent_twice_with_the_same_belief_apply_once(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    const char *reader = "0b7b5a80-0000-4000-8000-000000000001:42";
    const char *writer = "0b7b5a80-0000-4000-8000-000000000001:43:write";
    const char *k1 = "{resent}:0b7b5a80-0000-4000-8000-000000000001:42:rwlock_timeout:1";
    const char *k2 = "{resent}:0b7b5a80-0000-4000-8000-000000000001:42:rwlock_timeout:2";
    expect_acquired(rw_script(c, "read", reader, "0"), 1);
    expect_acquired(rw_script(c, "read", reader, "0"), 1);
    assert_int_equal(redis_fixture_int(f, "HGET resent %s", reader), 1);
    expect_acquired(rw_script(c, "read", reader, "1"), 2);
    expect_acquired(rw_script(c, "read", reader, "1"), 2);
    assert_int_equal(redis_fixture_int(f, "HGET resent %s", reader), 2);
    assert_int_equal(exists(f, k2), 1);
    assert_int_equal(live_keys(f), 4); /* N, 2 timeout keys, {resent}:rwlock_readers */
    assert_int_equal(release_reply(rw_script(c, "unread", reader, "2")), 1);
    assert_int_equal(release_reply(rw_script(c, "unread", reader, "2")), 1);
    assert_int_equal(exists(f, k2), 0);
    assert_int_equal(exists(f, k1), 1);
    assert_int_equal(release_reply(rw_script(c, "unread", reader, "1")), 0);
    assert_int_equal(release_reply(rw_script(c, "unread", reader, "1")), -1);
    assert_int_equal(live_keys(f), 0);

    expect_acquired(rw_script(c, "write", writer, "0"), 1);
    expect_acquired(rw_script(c, "write", writer, "0"), 1);
    expect_acquired(rw_script(c, "write", writer, "1"), 2);
    expect_acquired(rw_script(c, "write", writer, "1"), 2);
    assert_int_equal(redis_fixture_int(f, "HGET resent %s", writer), 2);
    assert_int_equal(release_reply(rw_script(c, "unwrite", writer, "2")), 1);
    assert_int_equal(release_reply(rw_script(c, "unwrite", writer, "2")), 1);
    assert_int_equal(release_reply(rw_script(c, "unwrite", writer, "1")), 0);
    assert_int_equal(release_reply(rw_script(c, "unwrite", writer, "1")), -1);
    assert_int_equal(live_keys(f), 0);
    /* read holds the client never learned of go with the owner's last release */
    expect_acquired(rw_script(c, "read", reader, "0"), 1);
    expect_acquired(rw_script(c, "read", reader, "1"), 2);
    expect_acquired(rw_script(c, "read", reader, "2"), 3);
    assert_int_equal(release_reply(rw_script(c, "unread", reader, "1")), 0);
    assert_int_equal(live_keys(f), 0);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_layout_is_mode_reader_and_writer_fields_and_a_timeout_key_per_read_hold),
        cmocka_unit_test(
            test_write_release_publishes_1_and_a_read_release_that_frees_it_publishes_0),
        cmocka_unit_test(test_name_with_a_brace_uses_channel_and_timeout_keys_without_extra_braces),
        cmocka_unit_test(test_bad_arguments_are_einval_without_any_io),
        cmocka_unit_test(test_key_of_another_type_is_eredis_wrongtype_on_both_halves_and_unchanged),
        cmocka_unit_test(test_read_and_write_scripts_sent_twice_with_the_same_belief_apply_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
