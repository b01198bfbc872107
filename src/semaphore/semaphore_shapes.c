/* SPDX-License-Identifier: MIT */
/* semaphore_shapes.c — this folder's script replies as data (semaphore_shapes.h),
 * transcribed from the scripts' header comments. A count of permits is int64_reply digits
 * beyond 2^53, so those values are DLOCK__SHAPE_INT64. */
#include "semaphore_shapes.h"

/* any 64-bit count: the permits available may go below 0 */
#define ANY_COUNT DLOCK__SHAPE_RANGE64(INT64_MIN, INT64_MAX)

const dlock__reply_shape dlock__shape_semaphore_try_set = DLOCK__SHAPE_YES_NO("sem_try_set.lua");
const dlock__reply_shape dlock__shape_latch_try_set = DLOCK__SHAPE_YES_NO("latch_try_set.lua");
const dlock__reply_shape dlock__shape_permits_yes_no = DLOCK__SHAPE_YES_NO("permits.lua");

const dlock__reply_shape dlock__shape_semaphore_count = {
    "sem_add.lua/sem_release.lua",
    "the permits available (a 64-bit integer)",
    1,
    {DLOCK__SHAPE_ONE_VALUE(ANY_COUNT)},
};

const dlock__reply_shape dlock__shape_permits_available = {
    "permits.lua",
    "the permits available (a 64-bit integer)",
    1,
    {DLOCK__SHAPE_ONE_VALUE(ANY_COUNT)},
};

const dlock__reply_shape dlock__shape_semaphore_drain = {
    "sem_drain.lua",
    "the permits taken (>= 0)",
    1,
    {DLOCK__SHAPE_ONE_VALUE(DLOCK__SHAPE_RANGE64(0, INT64_MAX))},
};

const dlock__reply_shape dlock__shape_semaphore_acquire = {
    "sem_acquire.lua",
    "{1, permits left >= 0} or {0, permits available}",
    2,
    {{.count = 2, .value = {DLOCK__SHAPE_RANGE(1, 1), DLOCK__SHAPE_RANGE64(0, INT64_MAX)}},
     {.count = 2, .value = {DLOCK__SHAPE_RANGE(0, 0), ANY_COUNT}}},
};

const dlock__reply_shape dlock__shape_latch_count_down = {
    "latch_count_down.lua",
    "the count left (>= 0)",
    1,
    {DLOCK__SHAPE_ONE_VALUE(DLOCK__SHAPE_RANGE64(0, INT64_MAX))},
};

const dlock__reply_shape dlock__shape_permits_acquire = {
    "permits.lua",
    "{1} or {0, ms until a lease ends (-1: none)}",
    2,
    {{.count = 1, .value = {DLOCK__SHAPE_RANGE(1, 1)}},
     {.count = 2, .value = {DLOCK__SHAPE_RANGE(0, 0), DLOCK__SHAPE_RANGE(-1, INT64_MAX)}}},
};
