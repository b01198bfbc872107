/* SPDX-License-Identifier: MIT */
/* test_bad_input_multilock.c — the bad-input catalogue (tests/support/bad_input.h) for
 * dlock/multilock.h (MultiLock and RedLock): every call with each invalid argument it can
 * get returns its documented code and Redis sees nothing; a composite on a member's loop
 * thread is DLOCK_EDEADLK (lt_multi_*, lt_red_*). */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bad_input.h"
#include "dlock.h"
#include "harness.h"
#include "test_util.h"

/* Rows picked at random, with random invalid values (DLOCK_TEST_SCALE scales it). */
#define RANDOM_CALLS 2000

/* ---- the catalogue --------------------------------------------------------------------------- */

/* X(id, kind, expected, call): `call` may use `b`, the invalid values (bad_input.h). */

#define COMPOSITE_CTOR_CASES(X, kind)                                                              \
    X(kind##_null_array, V_NONE, DLOCK_EINVAL, dlock_##kind##_new(NULL, 2, &BW.out_lock))          \
    X(kind##_null_array_n0, V_NONE, DLOCK_EINVAL, dlock_##kind##_new(NULL, 0, &BW.out_lock))       \
    X(kind##_n0, V_NONE, DLOCK_EINVAL, dlock_##kind##_new(BW.pair, 0, &BW.out_lock))               \
    X(kind##_null_out, V_NONE, DLOCK_EINVAL, dlock_##kind##_new(BW.pair, 2, NULL))                 \
    X(kind##_null_member, V_NONE, DLOCK_EINVAL, dlock_##kind##_new(BW.with_null, 2, &BW.out_lock)) \
    X(kind##_null_first, V_NONE, DLOCK_EINVAL, dlock_##kind##_new(BW.null_first, 2, &BW.out_lock)) \
    X(kind##_duplicate, V_NONE, DLOCK_EINVAL, dlock_##kind##_new(BW.dup, 2, &BW.out_lock))         \
    X(kind##_multilock_member, V_NONE, DLOCK_EINVAL,                                               \
      dlock_##kind##_new(BW.with_multi, 2, &BW.out_lock))                                          \
    X(kind##_redlock_member, V_NONE, DLOCK_EINVAL, dlock_##kind##_new(BW.with_red, 2, &BW.out_lock))

#define MULTILOCK_CASES(X)                                                                         \
    COMPOSITE_CTOR_CASES(X, multilock)                                                             \
    COMPOSITE_CTOR_CASES(X, redlock)                                                               \
    LOCK_KIND_CASES(X, multi)                                                                      \
    LOCK_KIND_CASES(X, red)                                                                        \
    NOT_FENCED_CASES(X, multi)                                                                     \
    NOT_FENCED_CASES(X, red) /* the async face's rows are LOCK_KIND_CASES' */

/* Blocking calls on the async client's loop thread (this thread): DLOCK_EDEADLK, before
 * any I/O. Valid arguments otherwise. */
#define LOOP_THREAD_CASES(X)                                                                       \
    X(lt_multi_acquire, V_NONE, DLOCK_EDEADLK, dlock_lock_try_acquire(BW.l_multi, 0, 1000))        \
    X(lt_multi_is_locked, V_NONE, DLOCK_EDEADLK, dlock_lock_is_locked(BW.l_multi, &BW.out_bool))   \
    X(lt_red_acquire, V_NONE, DLOCK_EDEADLK,                                                       \
      dlock_lock_try_acquire(BW.l_red, DLOCK_FOREVER, 1000))                                       \
    X(lt_red_release, V_NONE, DLOCK_EDEADLK, dlock_lock_release(BW.l_red))                         \
    X(lt_red_is_held, V_NONE, DLOCK_EDEADLK, dlock_lock_is_held(BW.l_red, &BW.out_bool))           \
    X(lt_red_ttl, V_NONE, DLOCK_EDEADLK, dlock_lock_ttl(BW.l_red, &BW.out_int))

MULTILOCK_CASES(BAD_DEFINE_CALL)
LOOP_THREAD_CASES(BAD_DEFINE_CALL)

static const bad_case MULTILOCK_TABLE[] = {MULTILOCK_CASES(BAD_TABLE_ROW)};
static const bad_case LOOP_THREAD_TABLE[] = {LOOP_THREAD_CASES(BAD_TABLE_ROW)};

static const bad_group GROUPS[] = {
    BAD_GROUP("multilock.h", MULTILOCK_TABLE),
    BAD_GROUP("multilock.h on the loop thread (DLOCK_EDEADLK)", LOOP_THREAD_TABLE),
};

int main(void) {
    bad_catalogue cat = {GROUPS, BAD_COUNT(GROUPS), RANDOM_CALLS};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(
            test_every_bad_argument_gets_its_documented_code_and_redis_sees_nothing, &cat),
        cmocka_unit_test_prestate(
            test_random_bad_arguments_get_their_documented_codes_and_redis_sees_nothing, &cat),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
