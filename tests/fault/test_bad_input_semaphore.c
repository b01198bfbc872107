/* SPDX-License-Identifier: MIT */
/* test_bad_input_semaphore.c — the bad-input catalogue (tests/support/bad_input.h) for
 * dlock/semaphore.h (semaphores and expirable permits): every call with each invalid
 * argument it can get returns its documented code and Redis sees nothing. Also: a permit
 * id in upper case names the same permit (the code accepts any hex case). */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "bad_input.h"
#include "dlock.h"
#include "harness.h"
#include "test_util.h"

/* Rows picked at random, with random invalid values (DLOCK_TEST_SCALE scales it). */
#define RANDOM_CALLS 2000

/* ---- the catalogue --------------------------------------------------------------------------- */

/* X(id, kind, expected, call): `call` may use `b`, the invalid values (bad_input.h). */

#define SEMAPHORE_CASES(X)                                                                         \
    CTOR_CASES(X, semaphore, out_sem)                                                              \
    X(sem_free_null, V_NONE, DLOCK_OK, (dlock_semaphore_free(NULL), DLOCK_OK))                     \
    X(sem_try_set_null, V_NONE, DLOCK_EINVAL,                                                      \
      dlock_semaphore_try_set_permits(NULL, 1, &BW.out_bool))                                      \
    X(sem_try_set_neg, V_NEG, DLOCK_EINVAL,                                                        \
      dlock_semaphore_try_set_permits(BW.sem, b->neg, &BW.out_bool))                               \
    X(sem_try_set_neg_no_out, V_NEG, DLOCK_EINVAL,                                                 \
      dlock_semaphore_try_set_permits(BW.sem, b->neg, NULL))                                       \
    X(sem_add_null, V_NONE, DLOCK_EINVAL, dlock_semaphore_add_permits(NULL, 1))                    \
    X(sem_add_null_neg, V_NEG, DLOCK_EINVAL, dlock_semaphore_add_permits(NULL, b->neg))            \
    X(sem_acquire_null, V_NONE, DLOCK_EINVAL, dlock_semaphore_acquire(NULL, 1))                    \
    X(sem_acquire_neg, V_NEG, DLOCK_EINVAL, dlock_semaphore_acquire(BW.sem, b->neg))               \
    X(sem_try_acquire_null, V_NONE, DLOCK_EINVAL, dlock_semaphore_try_acquire(NULL, 1, 0))         \
    X(sem_try_acquire_neg, V_NEG, DLOCK_EINVAL, dlock_semaphore_try_acquire(BW.sem, b->neg, 0))    \
    X(sem_try_acquire_wait, V_WAIT, DLOCK_EINVAL, dlock_semaphore_try_acquire(BW.sem, 1, b->wait)) \
    X(sem_release_null, V_NONE, DLOCK_EINVAL, dlock_semaphore_release(NULL, 1))                    \
    X(sem_release_neg, V_NEG, DLOCK_EINVAL, dlock_semaphore_release(BW.sem, b->neg))               \
    X(sem_available_null, V_NONE, DLOCK_EINVAL, dlock_semaphore_available(NULL, &BW.out_int))      \
    X(sem_available_out, V_NONE, DLOCK_EINVAL, dlock_semaphore_available(BW.sem, NULL))            \
    X(sem_drain_null, V_NONE, DLOCK_EINVAL, dlock_semaphore_drain(NULL, &BW.out_int))              \
    X(sem_drain_null_null, V_NONE, DLOCK_EINVAL, dlock_semaphore_drain(NULL, NULL))                \
    X(sem_acquire_async_null, V_NONE, DLOCK_EINVAL,                                                \
      dlock_semaphore_acquire_async(NULL, 1, 0, unexpected_sem_cb, NULL))                          \
    X(sem_acquire_async_neg, V_NEG, DLOCK_EINVAL,                                                  \
      dlock_semaphore_acquire_async(BW.sem, b->neg, 0, unexpected_sem_cb, NULL))                   \
    X(sem_acquire_async_wait, V_WAIT, DLOCK_EINVAL,                                                \
      dlock_semaphore_acquire_async(BW.sem, 1, b->wait, unexpected_sem_cb, NULL))                  \
    X(sem_acquire_async_no_cb, V_NONE, DLOCK_EINVAL,                                               \
      dlock_semaphore_acquire_async(BW.sem, 1, 0, NULL, NULL))                                     \
    X(sem_release_async_null, V_NONE, DLOCK_EINVAL,                                                \
      dlock_semaphore_release_async(NULL, 1, unexpected_sem_cb, NULL))                             \
    X(sem_release_async_neg, V_NEG, DLOCK_EINVAL,                                                  \
      dlock_semaphore_release_async(BW.sem, b->neg, unexpected_sem_cb, NULL))                      \
    X(sem_release_async_no_cb, V_NONE, DLOCK_EINVAL,                                               \
      dlock_semaphore_release_async(BW.sem, 1, NULL, NULL))

#define PERMITS_CASES(X)                                                                           \
    CTOR_CASES(X, permits, out_permits)                                                            \
    X(permits_free_null, V_NONE, DLOCK_OK, (dlock_permits_free(NULL), DLOCK_OK))                   \
    X(permits_try_set_null, V_NONE, DLOCK_EINVAL,                                                  \
      dlock_permits_try_set_permits(NULL, 1, &BW.out_bool))                                        \
    X(permits_try_set_neg, V_NEG, DLOCK_EINVAL,                                                    \
      dlock_permits_try_set_permits(BW.permits, b->neg, &BW.out_bool))                             \
    X(permits_acquire_null, V_NONE, DLOCK_EINVAL, dlock_permits_acquire(NULL, 0, -1, &BW.out_id))  \
    X(permits_acquire_wait, V_WAIT, DLOCK_EINVAL,                                                  \
      dlock_permits_acquire(BW.permits, b->wait, -1, &BW.out_id))                                  \
    X(permits_acquire_lease, V_LEASE, DLOCK_EINVAL,                                                \
      dlock_permits_acquire(BW.permits, 0, b->lease, &BW.out_id))                                  \
    X(permits_acquire_out, V_NONE, DLOCK_EINVAL, dlock_permits_acquire(BW.permits, 0, -1, NULL))   \
    X(permits_release_null, V_NONE, DLOCK_EINVAL, dlock_permits_release(NULL, &BW.good_id))        \
    X(permits_release_id, V_ID, DLOCK_EINVAL, dlock_permits_release(BW.permits, b->id))            \
    X(permits_lease_null, V_NONE, DLOCK_EINVAL,                                                    \
      dlock_permits_update_lease(NULL, &BW.good_id, 1000))                                         \
    X(permits_lease_id, V_ID, DLOCK_EINVAL, dlock_permits_update_lease(BW.permits, b->id, 1000))   \
    X(permits_lease_lease, V_LEASE, DLOCK_EINVAL,                                                  \
      dlock_permits_update_lease(BW.permits, &BW.good_id, b->lease))                               \
    X(permits_available_null, V_NONE, DLOCK_EINVAL, dlock_permits_available(NULL, &BW.out_int))    \
    X(permits_available_out, V_NONE, DLOCK_EINVAL, dlock_permits_available(BW.permits, NULL))      \
    X(permits_acquire_async_null, V_NONE, DLOCK_EINVAL,                                            \
      dlock_permits_acquire_async(NULL, 0, -1, unexpected_permits_cb, NULL))                       \
    X(permits_acquire_async_wait, V_WAIT, DLOCK_EINVAL,                                            \
      dlock_permits_acquire_async(BW.permits, b->wait, -1, unexpected_permits_cb, NULL))           \
    X(permits_acquire_async_lease, V_LEASE, DLOCK_EINVAL,                                          \
      dlock_permits_acquire_async(BW.permits, 0, b->lease, unexpected_permits_cb, NULL))           \
    X(permits_acquire_async_no_cb, V_NONE, DLOCK_EINVAL,                                           \
      dlock_permits_acquire_async(BW.permits, 0, -1, NULL, NULL))                                  \
    X(permits_release_async_null, V_NONE, DLOCK_EINVAL,                                            \
      dlock_permits_release_async(NULL, &BW.good_id, unexpected_permits_cb, NULL))                 \
    X(permits_release_async_id, V_ID, DLOCK_EINVAL,                                                \
      dlock_permits_release_async(BW.permits, b->id, unexpected_permits_cb, NULL))                 \
    X(permits_release_async_no_cb, V_NONE, DLOCK_EINVAL,                                           \
      dlock_permits_release_async(BW.permits, &BW.good_id, NULL, NULL))

/* Blocking calls on the async client's loop thread (this thread): DLOCK_EDEADLK, before
 * any I/O. Valid arguments otherwise. */
#define LOOP_THREAD_CASES(X)                                                                       \
    X(lt_sem_try_set, V_NONE, DLOCK_EDEADLK, dlock_semaphore_try_set_permits(BW.l_sem, 1, NULL))   \
    X(lt_sem_add, V_NONE, DLOCK_EDEADLK, dlock_semaphore_add_permits(BW.l_sem, 1))                 \
    X(lt_sem_acquire, V_NONE, DLOCK_EDEADLK, dlock_semaphore_acquire(BW.l_sem, 1))                 \
    X(lt_sem_try_acquire, V_NONE, DLOCK_EDEADLK, dlock_semaphore_try_acquire(BW.l_sem, 1, 0))      \
    X(lt_sem_release, V_NONE, DLOCK_EDEADLK, dlock_semaphore_release(BW.l_sem, 1))                 \
    X(lt_sem_available, V_NONE, DLOCK_EDEADLK, dlock_semaphore_available(BW.l_sem, &BW.out_int))   \
    X(lt_sem_drain, V_NONE, DLOCK_EDEADLK, dlock_semaphore_drain(BW.l_sem, NULL))                  \
    X(lt_permits_try_set, V_NONE, DLOCK_EDEADLK,                                                   \
      dlock_permits_try_set_permits(BW.l_permits, 1, NULL))                                        \
    X(lt_permits_acquire, V_NONE, DLOCK_EDEADLK,                                                   \
      dlock_permits_acquire(BW.l_permits, 0, -1, &BW.out_id))                                      \
    X(lt_permits_release, V_NONE, DLOCK_EDEADLK, dlock_permits_release(BW.l_permits, &BW.good_id)) \
    X(lt_permits_lease, V_NONE, DLOCK_EDEADLK,                                                     \
      dlock_permits_update_lease(BW.l_permits, &BW.good_id, 1000))                                 \
    X(lt_permits_available, V_NONE, DLOCK_EDEADLK,                                                 \
      dlock_permits_available(BW.l_permits, &BW.out_int))

SEMAPHORE_CASES(BAD_DEFINE_CALL)
PERMITS_CASES(BAD_DEFINE_CALL)
LOOP_THREAD_CASES(BAD_DEFINE_CALL)

static const bad_case SEMAPHORE_TABLE[] = {SEMAPHORE_CASES(BAD_TABLE_ROW)};
static const bad_case PERMITS_TABLE[] = {PERMITS_CASES(BAD_TABLE_ROW)};
static const bad_case LOOP_THREAD_TABLE[] = {LOOP_THREAD_CASES(BAD_TABLE_ROW)};

static const bad_group GROUPS[] = {
    BAD_GROUP("semaphore.h: semaphore", SEMAPHORE_TABLE),
    BAD_GROUP("semaphore.h: permits", PERMITS_TABLE),
    BAD_GROUP("semaphore.h on the loop thread (DLOCK_EDEADLK)", LOOP_THREAD_TABLE),
};

/* The id struct says "32 lowercase hex characters" (what dlock writes); on the way in the
 * code reads hex digits of either case, so an id in upper case (or mixed) names the same
 * permit and is not DLOCK_EINVAL. */
static void test_permit_id_in_upper_case_names_the_same_permit(void **state) {
    (void)state;
    test_watchdog_arm(BAD_BUDGET_S, __func__);
    redis_fixture *f = NULL;
    assert_int_equal(redis_fixture_start(NULL, &f), 0);
    dlock_client *c = connect_client(f);
    dlock_permits *p;
    ASSERT_OK(dlock_permits_new(c, "upper", &p));
    ASSERT_OK(dlock_permits_try_set_permits(p, 2, NULL));
    dlock_permit_id id, upper, mixed;
    ASSERT_OK(dlock_permits_acquire(p, 0, -1, &id));
    for (int i = 0; i < 32; i++)
        assert_non_null(strchr("0123456789abcdef", id.hex[i])); /* written in lower case */
    upper = id;
    mixed = id;
    for (int i = 0; i < 32; i++) {
        if (id.hex[i] >= 'a')
            upper.hex[i] = (char)(id.hex[i] - 'a' + 'A');
        if (id.hex[i] >= 'a' && i % 2)
            mixed.hex[i] = upper.hex[i];
    }
    ASSERT_OK(dlock_permits_update_lease(p, &mixed, 60000));
    int64_t available = -1;
    ASSERT_OK(dlock_permits_available(p, &available));
    assert_int_equal(available, 1);
    ASSERT_OK(dlock_permits_release(p, &upper));
    ASSERT_OK(dlock_permits_available(p, &available));
    assert_int_equal(available, 2);
    assert_int_equal(dlock_permits_release(p, &id), DLOCK_ENOTOWNER); /* the same permit */
    dlock_permits_free(p);
    ASSERT_OK(dlock_client_free(c));
    redis_fixture_stop(f);
}

int main(void) {
    bad_catalogue cat = {GROUPS, BAD_COUNT(GROUPS), RANDOM_CALLS};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(
            test_every_bad_argument_gets_its_documented_code_and_redis_sees_nothing, &cat),
        cmocka_unit_test_prestate(
            test_random_bad_arguments_get_their_documented_codes_and_redis_sees_nothing, &cat),
        cmocka_unit_test(test_permit_id_in_upper_case_names_the_same_permit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
