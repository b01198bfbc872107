/* SPDX-License-Identifier: MIT */
/* test_permits_layout.c — the permits tests of test_permits.c, split from it by concern: the
 * layout. Helpers: tests/support/permits_helpers.h. Every test starts its own server. */
#include "permits_helpers.h"

/* ---- the layout -------------------------------------------------------------------------- */

static void
test_layout_is_a_count_and_a_timeout_zset_of_raw_ids_scored_by_server_time(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "perm");
    bool was_set = false;
    ASSERT_RC(dlock_permits_try_set_permits(p, 3, &was_set), DLOCK_OK);
    assert_true(was_set);
    ASSERT_RC(dlock_permits_try_set_permits(p, 9, &was_set), DLOCK_OK);
    assert_false(was_set);
    dlock_permit_id leased, unleased;
    int64_t before = server_time_ms(f);
    ASSERT_RC(dlock_permits_acquire(p, 0, 10000, &leased), DLOCK_OK);
    int64_t after = server_time_ms(f);
    ASSERT_RC(dlock_permits_acquire(p, 0, -1, &unleased), DLOCK_OK);
    assert_true(is_lower_hex_32(leased.hex));
    assert_true(is_lower_hex_32(unleased.hex));
    assert_string_not_equal(leased.hex, unleased.hex);

    char *type = redis_fixture_str(f, "TYPE perm");
    assert_string_equal(type, "string");
    free(type);
    assert_int_equal(redis_fixture_int(f, "GET perm"), 1);
    type = redis_fixture_str(f, "TYPE {perm}:timeout");
    assert_string_equal(type, "zset");
    free(type);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 2);
    zentry z[4];
    assert_int_equal(timeout_set(f, "{perm}:timeout", z, 4), 2);
    assert_int_equal(z[0].raw_len, 16);
    assert_int_equal(z[1].raw_len, 16);
    assert_string_equal(z[0].hex, leased.hex); /* the 16 raw bytes of the id */
    assert_string_equal(z[1].hex, unleased.hex);
    ASSERT_BETWEEN(z[0].score, before + 10000 - 1000, after + 10000 + 1000);
    assert_int_equal(z[1].score, NO_LEASE_SCORE);
    printf("# lease end score - (server TIME before acquire + lease) = %lld ms\n",
           z[0].score - (before + 10000));

    /* update_lease moves the scores: a lease to none, none to a lease */
    ASSERT_RC(dlock_permits_update_lease(p, &leased, -1), DLOCK_OK);
    before = server_time_ms(f);
    ASSERT_RC(dlock_permits_update_lease(p, &unleased, 20000), DLOCK_OK);
    after = server_time_ms(f);
    assert_int_equal(timeout_set(f, "{perm}:timeout", z, 4), 2);
    assert_string_equal(z[0].hex, unleased.hex);
    ASSERT_BETWEEN(z[0].score, before + 20000 - 1000, after + 20000 + 1000);
    assert_string_equal(z[1].hex, leased.hex);
    assert_int_equal(z[1].score, NO_LEASE_SCORE);

    /* a permit that a Redisson client put in the set is released by its hex id */
    const char raw[16] = "\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee\xff";
    const char *zadd[] = {"ZADD", "{perm}:timeout", "922337203685477", raw};
    size_t zadd_len[] = {4, 14, 15, 16};
    freeReplyObject(redis_fixture_cmd_argv(f, 4, zadd, zadd_len));
    dlock_permit_id foreign = {.hex = "00112233445566778899aabbccddeeff"};
    ASSERT_RC(dlock_permits_release(p, &foreign), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "GET perm"), 2);

    ASSERT_RC(dlock_permits_release(p, &leased), DLOCK_OK);
    ASSERT_RC(dlock_permits_release(p, &unleased), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "GET perm"), 4);
    assert_int_equal(redis_fixture_int(f, "EXISTS {perm}:timeout"), 0);

    /* a name holding a '{' is its own hash tag: "N:timeout", no extra braces */
    dlock_permits *tagged = new_permits(c, "perm{t}");
    ASSERT_RC(dlock_permits_try_set_permits(tagged, 1, NULL), DLOCK_OK);
    dlock_permit_id t;
    ASSERT_RC(dlock_permits_acquire(tagged, 0, -1, &t), DLOCK_OK);
    assert_int_equal(timeout_set(f, "perm{t}:timeout", z, 4), 1);
    assert_string_equal(z[0].hex, t.hex);
    assert_int_equal(redis_fixture_int(f, "GET perm{t}"), 0);
    ASSERT_RC(dlock_permits_release(tagged, &t), DLOCK_OK);
    dlock_permits_free(tagged);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_channel_redisson_sc_carries_the_new_count_of_set_release_and_expiry(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "perm-ch");
    const char *channel = "redisson_sc:{perm-ch}";
    redisContext *sub = subscribe_to(f, channel);
    dlock_permit_id short_lease, unleased;
    ASSERT_RC(dlock_permits_try_set_permits(p, 2, NULL), DLOCK_OK);       /* "2" */
    ASSERT_RC(dlock_permits_try_set_permits(p, 5, NULL), DLOCK_OK);       /* nothing */
    ASSERT_RC(dlock_permits_acquire(p, 0, 200, &short_lease), DLOCK_OK);  /* nothing */
    ASSERT_RC(dlock_permits_acquire(p, 0, -1, &unleased), DLOCK_OK);      /* nothing */
    ASSERT_RC(dlock_permits_update_lease(p, &unleased, 60000), DLOCK_OK); /* nothing */
    ASSERT_RC(dlock_permits_release(p, &unleased), DLOCK_OK);             /* "1" */
    zentry z[2];
    assert_int_equal(timeout_set(f, "{perm-ch}:timeout", z, 2), 1);
    wait_server_time_past(f, z[0].score);
    assert_int_equal(available_of(p), 2);                               /* expiry: "2" */
    ASSERT_RC(dlock_permits_release(p, &short_lease), DLOCK_ENOTOWNER); /* nothing */
    char got[128];
    messages_until_end(f, sub, channel, got, sizeof(got));
    assert_string_equal(got, "2,1,2,");
    redisFree(sub);

    sub = subscribe_to(f, "redisson_sc:perm{t}");
    dlock_permits *tagged = new_permits(c, "perm{t}");
    ASSERT_RC(dlock_permits_try_set_permits(tagged, 4, NULL), DLOCK_OK);
    messages_until_end(f, sub, "redisson_sc:perm{t}", got, sizeof(got));
    assert_string_equal(got, "4,");
    redisFree(sub);
    dlock_permits_free(tagged);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_layout_is_a_count_and_a_timeout_zset_of_raw_ids_scored_by_server_time),
        cmocka_unit_test(test_channel_redisson_sc_carries_the_new_count_of_set_release_and_expiry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
