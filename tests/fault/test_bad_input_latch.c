/* SPDX-License-Identifier: MIT */
/* test_bad_input_latch.c — the bad-input catalogue (tests/support/bad_input.h) for
 * dlock/latch.h: every call with each invalid argument it can get returns its documented
 * code and Redis sees nothing. */
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

#define LATCH_CASES(X)                                                                             \
    CTOR_CASES(X, latch, out_latch)                                                                \
    X(latch_free_null, V_NONE, DLOCK_OK, (dlock_latch_free(NULL), DLOCK_OK))                       \
    X(latch_try_set_null, V_NONE, DLOCK_EINVAL, dlock_latch_try_set_count(NULL, 1, &BW.out_bool))  \
    X(latch_try_set_neg, V_NEG, DLOCK_EINVAL,                                                      \
      dlock_latch_try_set_count(BW.latch, b->neg, &BW.out_bool))                                   \
    X(latch_try_set_neg_no_out, V_NEG, DLOCK_EINVAL,                                               \
      dlock_latch_try_set_count(BW.latch, b->neg, NULL))                                           \
    X(latch_count_down_null, V_NONE, DLOCK_EINVAL, dlock_latch_count_down(NULL))                   \
    X(latch_count_null, V_NONE, DLOCK_EINVAL, dlock_latch_count(NULL, &BW.out_int))                \
    X(latch_count_out, V_NONE, DLOCK_EINVAL, dlock_latch_count(BW.latch, NULL))                    \
    X(latch_await_null, V_NONE, DLOCK_EINVAL, dlock_latch_await(NULL, 0))                          \
    X(latch_await_wait, V_WAIT, DLOCK_EINVAL, dlock_latch_await(BW.latch, b->wait))                \
    X(latch_await_async_null, V_NONE, DLOCK_EINVAL,                                                \
      dlock_latch_await_async(NULL, 0, unexpected_latch_cb, NULL))                                 \
    X(latch_await_async_wait, V_WAIT, DLOCK_EINVAL,                                                \
      dlock_latch_await_async(BW.latch, b->wait, unexpected_latch_cb, NULL))                       \
    X(latch_await_async_no_cb, V_NONE, DLOCK_EINVAL,                                               \
      dlock_latch_await_async(BW.latch, 0, NULL, NULL))                                            \
    X(latch_count_down_async_null, V_NONE, DLOCK_EINVAL,                                           \
      dlock_latch_count_down_async(NULL, unexpected_latch_cb, NULL))                               \
    X(latch_count_down_async_no_cb, V_NONE, DLOCK_EINVAL,                                          \
      dlock_latch_count_down_async(BW.latch, NULL, NULL))

/* Blocking calls on the async client's loop thread (this thread): DLOCK_EDEADLK, before
 * any I/O. Valid arguments otherwise. */
#define LOOP_THREAD_CASES(X)                                                                       \
    X(lt_latch_try_set, V_NONE, DLOCK_EDEADLK, dlock_latch_try_set_count(BW.l_latch, 1, NULL))     \
    X(lt_latch_count_down, V_NONE, DLOCK_EDEADLK, dlock_latch_count_down(BW.l_latch))              \
    X(lt_latch_count, V_NONE, DLOCK_EDEADLK, dlock_latch_count(BW.l_latch, &BW.out_int))           \
    X(lt_latch_await, V_NONE, DLOCK_EDEADLK, dlock_latch_await(BW.l_latch, 0))

LATCH_CASES(BAD_DEFINE_CALL)
LOOP_THREAD_CASES(BAD_DEFINE_CALL)

static const bad_case LATCH_TABLE[] = {LATCH_CASES(BAD_TABLE_ROW)};
static const bad_case LOOP_THREAD_TABLE[] = {LOOP_THREAD_CASES(BAD_TABLE_ROW)};

static const bad_group GROUPS[] = {
    BAD_GROUP("latch.h", LATCH_TABLE),
    BAD_GROUP("latch.h on the loop thread (DLOCK_EDEADLK)", LOOP_THREAD_TABLE),
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
