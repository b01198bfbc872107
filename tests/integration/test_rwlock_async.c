/* SPDX-License-Identifier: MIT */
/* test_rwlock_async.c — the rwlock tests of test_rwlock.c, split from it by concern: the async face
 * on a half. Helpers: tests/support/rwlock_helpers.h. Every test starts its own server. */
#include "rwlock_helpers.h"

/* ---- the async face on a half ------------------------------------------------------------- */

static struct {
    atomic_int status[4]; /* 1 = not yet called */
    atomic_int calls[4];
} async_rec;

static void async_done(dlock_lock *l, int status, void *arg) {
    (void)l;
    int i = (int)(intptr_t)arg;
    atomic_store(&async_rec.status[i], status);
    atomic_fetch_add(&async_rec.calls[i], 1);
}

static int await_async(int i) {
    bool called = false;
    POLL_UNTIL(called, atomic_load(&async_rec.calls[i]) > 0, slack_ms(5000));
    assert_true(called);
    int status = atomic_load(&async_rec.status[i]);
    atomic_store(&async_rec.calls[i], 0);
    return status;
}

static void test_async_owners_share_the_read_half_and_an_async_writer_waits_for_both(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_rwlock *rw = new_rw(c, "async");
    for (int i = 0; i < 4; i++)
        atomic_store(&async_rec.calls[i], 0);
    ASSERT_RC(dlock_lock_acquire_async(READ(rw), 7, 0, 30000, async_done, (void *)0), DLOCK_OK);
    ASSERT_RC(await_async(0), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire_async(READ(rw), 8, 0, 30000, async_done, (void *)1), DLOCK_OK);
    ASSERT_RC(await_async(1), DLOCK_OK);
    char f7[128], f8[128], w9[128], want[512], dump[1024];
    reader_field(c, 7, f7, sizeof(f7));
    reader_field(c, 8, f8, sizeof(f8));
    writer_field(c, 9, w9, sizeof(w9));
    snprintf(want, sizeof(want), "%s=1;%s=1;mode=read;", f7, f8);
    hash_dump_sorted(f, "async", dump, sizeof(dump));
    assert_string_equal(dump, want);
    ASSERT_RC(dlock_lock_acquire_async(WRITE(rw), 9, slack_ms(10000), 30000, async_done, (void *)2),
              DLOCK_OK);
    test_sleep_ms(200);
    assert_int_equal(atomic_load(&async_rec.calls[2]), 0); /* two readers hold it */
    ASSERT_RC(dlock_lock_release_async(READ(rw), 7, async_done, (void *)0), DLOCK_OK);
    ASSERT_RC(await_async(0), DLOCK_OK);
    test_sleep_ms(100);
    assert_int_equal(atomic_load(&async_rec.calls[2]), 0);
    ASSERT_RC(dlock_lock_release_async(READ(rw), 8, async_done, (void *)1), DLOCK_OK);
    ASSERT_RC(await_async(1), DLOCK_OK);
    ASSERT_RC(await_async(2), DLOCK_OK);
    snprintf(want, sizeof(want), "%s=1;mode=write;", w9);
    hash_dump_sorted(f, "async", dump, sizeof(dump));
    assert_string_equal(dump, want);
    ASSERT_RC(dlock_lock_release_async(READ(rw), 9, async_done, (void *)3), DLOCK_OK);
    ASSERT_RC(await_async(3), DLOCK_ENOTOWNER); /* the writer holds no read */
    ASSERT_RC(dlock_lock_release_async(WRITE(rw), 9, async_done, (void *)3), DLOCK_OK);
    ASSERT_RC(await_async(3), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    dlock_rwlock_free(rw);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_waiting_writer_canceled_by_free_leaves_the_line_and_readers_enter(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *w = connect_client(f), *n = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "canceled"), *rw = new_rw(w, "canceled"),
                 *rn = new_rw(n, "canceled");
    atomic_store(&async_rec.calls[0], 0);
    ASSERT_RC(dlock_lock_acquire(READ(ra), 30000), DLOCK_OK);
    long long scripts_before = script_calls(f);
    ASSERT_RC(dlock_lock_acquire_async(WRITE(rw), 9, DLOCK_FOREVER, 30000, async_done, (void *)0),
              DLOCK_OK);
    wait_until_asleep(f, "redisson_rwlock:{canceled}", 1, scripts_before, 1);
    assert_int_equal(redis_fixture_int(f, "ZCARD {canceled}:rwlock_writers"), 1);
    ASSERT_RC(dlock_lock_try_acquire(READ(rn), 0, 30000), DLOCK_ETIMEDOUT); /* held back */
    dlock_rwlock_free(rw); /* the waiting acquire ends with DLOCK_ECANCELED */
    ASSERT_RC(await_async(0), DLOCK_ECANCELED);
    bool gone = false;
    POLL_UNTIL(gone, exists(f, "{canceled}:rwlock_writers") == 0, slack_ms(1000));
    assert_true(gone);
    ASSERT_RC(dlock_lock_try_acquire(READ(rn), 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(rn)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rn);
    dlock_client_free(a);
    dlock_client_free(w);
    dlock_client_free(n);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_async_owners_share_the_read_half_and_an_async_writer_waits_for_both),
        cmocka_unit_test(test_waiting_writer_canceled_by_free_leaves_the_line_and_readers_enter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
