/* SPDX-License-Identifier: MIT */
/* test_owner.c — owner ids are unique per thread and stable within one; owner fields and
 * the Redisson key names are built as REDIS_LAYOUT.md says. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "client/client.h"

enum { THREADS = 32 };
static uint64_t ids[THREADS];

static void *take_owner(void *arg) {
    uint64_t *slot = arg;
    *slot = dlock_thread_owner();
    if (dlock_thread_owner() != *slot)
        *slot = 0; /* not stable within the thread: the test sees 0 */
    return NULL;
}

static void test_owner_ids_unique_per_thread(void **state) {
    (void)state;
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, take_owner, &ids[i]);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    uint64_t mine = dlock_thread_owner();
    for (int i = 0; i < THREADS; i++) {
        assert_true(ids[i] != 0);
        assert_true(ids[i] != mine);
        for (int j = 0; j < i; j++)
            assert_true(ids[i] != ids[j]);
    }
}

static void test_owner_id_is_stable_and_never_reused(void **state) {
    (void)state;
    uint64_t first = dlock_thread_owner();
    assert_true(first != 0);
    assert_true(dlock_thread_owner() == first);
    /* a thread that ended does not hand its id to the next one */
    uint64_t a = 0, b = 0;
    pthread_t t;
    pthread_create(&t, NULL, take_owner, &a);
    pthread_join(t, NULL);
    pthread_create(&t, NULL, take_owner, &b);
    pthread_join(t, NULL);
    assert_true(a != 0 && b != 0 && a != b);
}

static void test_key_names_follow_redisson(void **state) {
    (void)state;
    char *s = dlock__name_prefixed("redisson_lock__channel", "orders");
    assert_string_equal(s, "redisson_lock__channel:{orders}");
    dlock__free(s);
    s = dlock__name_prefixed("redisson_lock__channel", "{orders}:7");
    assert_string_equal(s, "redisson_lock__channel:{orders}:7");
    dlock__free(s);
    s = dlock__name_suffixed("sem", "timeout");
    assert_string_equal(s, "{sem}:timeout");
    dlock__free(s);
    s = dlock__name_suffixed("{sem}x", "timeout");
    assert_string_equal(s, "{sem}x:timeout");
    dlock__free(s);
}

static void test_name_checks(void **state) {
    (void)state;
    assert_int_equal(dlock__check_name(NULL), DLOCK_EINVAL);
    assert_non_null(strstr(dlock_last_error(), "NULL"));
    assert_int_equal(dlock__check_name(""), DLOCK_EINVAL);
    assert_non_null(strstr(dlock_last_error(), "empty"));
    static char huge[70 * 1024];
    memset(huge, 'n', sizeof(huge) - 1);
    assert_int_equal(dlock__check_name(huge), DLOCK_EINVAL);
    assert_non_null(strstr(dlock_last_error(), "longer"));
    assert_int_equal(dlock__check_name("a"), DLOCK_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_owner_ids_unique_per_thread),
        cmocka_unit_test(test_owner_id_is_stable_and_never_reused),
        cmocka_unit_test(test_key_names_follow_redisson),
        cmocka_unit_test(test_name_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
