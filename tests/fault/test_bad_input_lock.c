/* SPDX-License-Identifier: MIT */
/* test_bad_input_lock.c — the bad-input catalogue (tests/support/bad_input.h) for
 * dlock/lock.h (plain, fenced and fair locks) and dlock/rwlock.h: every call with each
 * invalid argument it can get returns its documented code and Redis sees nothing. Leases
 * above DLOCK_MAX_TIME_MS are refused (they used to overflow in Redis). */
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

/* Every call of dlock/lock.h on a NULL handle. */
#define NULL_LOCK_CASES(X)                                                                         \
    X(lock_free_null, V_NONE, DLOCK_OK, (dlock_lock_free(NULL), DLOCK_OK))                         \
    X(lock_name_null, V_NONE, DLOCK_OK, is_null(dlock_lock_name(NULL)))                            \
    X(acquire_null, V_NONE, DLOCK_EINVAL, dlock_lock_acquire(NULL, 1000))                          \
    X(acquire_null_watchdog, V_NONE, DLOCK_EINVAL, dlock_lock_acquire(NULL, DLOCK_WATCHDOG))       \
    X(acquire_null_bad_lease, V_LEASE, DLOCK_EINVAL, dlock_lock_acquire(NULL, b->lease))           \
    X(try_acquire_null, V_NONE, DLOCK_EINVAL, dlock_lock_try_acquire(NULL, 0, 1000))               \
    X(release_null, V_NONE, DLOCK_EINVAL, dlock_lock_release(NULL))                                \
    X(force_release_null, V_NONE, DLOCK_EINVAL, dlock_lock_force_release(NULL, &BW.out_bool))      \
    X(force_release_null_null, V_NONE, DLOCK_EINVAL, dlock_lock_force_release(NULL, NULL))         \
    X(is_locked_null, V_NONE, DLOCK_EINVAL, dlock_lock_is_locked(NULL, &BW.out_bool))              \
    X(is_held_null, V_NONE, DLOCK_EINVAL, dlock_lock_is_held(NULL, &BW.out_bool))                  \
    X(hold_count_null, V_NONE, DLOCK_EINVAL, dlock_lock_hold_count(NULL, &BW.out_int))             \
    X(ttl_null, V_NONE, DLOCK_EINVAL, dlock_lock_ttl(NULL, &BW.out_int))                           \
    X(token_null, V_NONE, DLOCK_EINVAL, dlock_lock_token(NULL, &BW.out_token))                     \
    X(token_of_null, V_NONE, DLOCK_EINVAL, dlock_lock_token_of(NULL, 1, &BW.out_token))            \
    X(on_lost_null, V_NONE, DLOCK_EINVAL, dlock_lock_on_lost(NULL, unexpected_lost_cb, NULL))      \
    X(on_lost_null_null, V_NONE, DLOCK_EINVAL, dlock_lock_on_lost(NULL, NULL, NULL))               \
    X(acquire_async_null, V_NONE, DLOCK_EINVAL,                                                    \
      dlock_lock_acquire_async(NULL, 1, 0, 1000, unexpected_lock_cb, NULL))                        \
    X(release_async_null, V_NONE, DLOCK_EINVAL,                                                    \
      dlock_lock_release_async(NULL, 1, unexpected_lock_cb, NULL))

#define LOCK_CASES(X)                                                                              \
    CTOR_CASES(X, lock, out_lock)                                                                  \
    CTOR_CASES(X, fencedlock, out_lock)                                                            \
    CTOR_CASES(X, fairlock, out_lock)                                                              \
    NULL_LOCK_CASES(X)                                                                             \
    LOCK_KIND_CASES(X, lock)                                                                       \
    LOCK_KIND_CASES(X, fenced)                                                                     \
    LOCK_KIND_CASES(X, fair)                                                                       \
    NOT_FENCED_CASES(X, lock)                                                                      \
    NOT_FENCED_CASES(X, fair)                                                                      \
    /* fenced, never acquired by this thread or owner: ENOTOWNER, no I/O (lock.h) */               \
    X(fenced_token_never_acquired, V_NONE, DLOCK_ENOTOWNER,                                        \
      dlock_lock_token(BW.fenced, &BW.out_token))                                                  \
    X(fenced_token_of_never_acquired, V_NONE, DLOCK_ENOTOWNER,                                     \
      dlock_lock_token_of(BW.fenced, 12345, &BW.out_token))

#define RWLOCK_CASES(X)                                                                            \
    CTOR_CASES(X, rwlock, out_rw)                                                                  \
    X(rwlock_read_null, V_NONE, DLOCK_OK, is_null(dlock_rwlock_read(NULL)))                        \
    X(rwlock_write_null, V_NONE, DLOCK_OK, is_null(dlock_rwlock_write(NULL)))                      \
    X(rwlock_free_null, V_NONE, DLOCK_OK, (dlock_rwlock_free(NULL), DLOCK_OK))                     \
    LOCK_KIND_CASES(X, rd)                                                                         \
    LOCK_KIND_CASES(X, wr)                                                                         \
    NOT_FENCED_CASES(X, rd)                                                                        \
    NOT_FENCED_CASES(X, wr)

/* Blocking calls on the async client's loop thread (this thread): DLOCK_EDEADLK, before
 * any I/O. Valid arguments otherwise. */
#define LOOP_THREAD_CASES(X)                                                                       \
    X(lt_acquire, V_NONE, DLOCK_EDEADLK, dlock_lock_acquire(BW.l_lock, 1000))                      \
    X(lt_acquire_watchdog, V_NONE, DLOCK_EDEADLK, dlock_lock_acquire(BW.l_lock, DLOCK_WATCHDOG))   \
    X(lt_try_acquire, V_NONE, DLOCK_EDEADLK, dlock_lock_try_acquire(BW.l_lock, 0, 1000))           \
    X(lt_release, V_NONE, DLOCK_EDEADLK, dlock_lock_release(BW.l_lock))                            \
    X(lt_force_release, V_NONE, DLOCK_EDEADLK, dlock_lock_force_release(BW.l_lock, NULL))          \
    X(lt_is_locked, V_NONE, DLOCK_EDEADLK, dlock_lock_is_locked(BW.l_lock, &BW.out_bool))          \
    X(lt_is_held, V_NONE, DLOCK_EDEADLK, dlock_lock_is_held(BW.l_lock, &BW.out_bool))              \
    X(lt_hold_count, V_NONE, DLOCK_EDEADLK, dlock_lock_hold_count(BW.l_lock, &BW.out_int))         \
    X(lt_ttl, V_NONE, DLOCK_EDEADLK, dlock_lock_ttl(BW.l_lock, &BW.out_int))                       \
    X(lt_fenced_acquire, V_NONE, DLOCK_EDEADLK, dlock_lock_try_acquire(BW.l_fenced, 0, 1000))      \
    /* token_of never blocks on the loop thread: it answers there, here ENOTOWNER */               \
    X(lt_fenced_token, V_NONE, DLOCK_ENOTOWNER,                                                    \
      dlock_lock_token_of(BW.l_fenced, 5, &BW.out_token))                                          \
    X(lt_fair_acquire, V_NONE, DLOCK_EDEADLK, dlock_lock_try_acquire(BW.l_fair, 0, 1000))          \
    X(lt_read_acquire, V_NONE, DLOCK_EDEADLK,                                                      \
      dlock_lock_try_acquire(dlock_rwlock_read(BW.l_rw), 0, 1000))                                 \
    X(lt_write_acquire, V_NONE, DLOCK_EDEADLK,                                                     \
      dlock_lock_try_acquire(dlock_rwlock_write(BW.l_rw), 0, 1000))

LOCK_CASES(BAD_DEFINE_CALL)
RWLOCK_CASES(BAD_DEFINE_CALL)
LOOP_THREAD_CASES(BAD_DEFINE_CALL)

static const bad_case LOCK_TABLE[] = {LOCK_CASES(BAD_TABLE_ROW)};
static const bad_case RWLOCK_TABLE[] = {RWLOCK_CASES(BAD_TABLE_ROW)};
static const bad_case LOOP_THREAD_TABLE[] = {LOOP_THREAD_CASES(BAD_TABLE_ROW)};

static const bad_group GROUPS[] = {
    BAD_GROUP("lock.h", LOCK_TABLE),
    BAD_GROUP("rwlock.h", RWLOCK_TABLE),
    BAD_GROUP("lock.h on the loop thread (DLOCK_EDEADLK)", LOOP_THREAD_TABLE),
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
