/* SPDX-License-Identifier: MIT */
/* lock_shapes.c — the lock family's replies as data (lock_shapes.h), transcribed from the
 * scripts' header comments: a hold count is >= 1 once acquired, a busy lock's pttl is -2
 * (gone), -1 (no expiry) or >= 0, a token is 0 unless fenced and >= 1 when fenced, a yes/no
 * is 1 or 0. */
#include "lock_shapes.h"

/* {0, pttl}: the holder's remaining lease (-2 gone, -1 no expiry) or a fair/rw hint. No
 * upper bound below INT64_MAX: the holder may be a Redisson client, whose leases are not
 * held to DLOCK_MAX_TIME_MS (the waiting engine saturates what it adds a hint to). */
#define LOCK_BUSY                                                                                  \
    {                                                                                              \
        .count = 2, .value = { DLOCK__SHAPE_RANGE(0, 0), DLOCK__SHAPE_RANGE(-2, INT64_MAX) }       \
    }

/* {0, pttl, joined}: busy, and the owner waits in line, joined it at `joined` (µs of the
 * server's clock, acquire.lua): the reentrant lock's waiting attempts. */
#define LOCK_BUSY_IN_LINE                                                                          \
    {                                                                                              \
        .count = 3, .value = {                                                                     \
            DLOCK__SHAPE_RANGE(0, 0),                                                              \
            DLOCK__SHAPE_RANGE(-2, INT64_MAX),                                                     \
            DLOCK__SHAPE_RANGE(1, INT64_MAX)                                                       \
        }                                                                                          \
    }

const dlock__reply_shape dlock__shape_lock_acquire = {
    "the lock's acquire script",
    "{1 or 2 (others in line), holds >= 1, token 0} or {0, pttl[, joined >= 1]}",
    3,
    {{.count = 3,
      .value = {DLOCK__SHAPE_RANGE(1, 2), DLOCK__SHAPE_RANGE(1, INT64_MAX),
                DLOCK__SHAPE_RANGE64(0, 0)}},
     LOCK_BUSY,
     LOCK_BUSY_IN_LINE},
};

const dlock__reply_shape dlock__shape_fenced_acquire = {
    "the fenced lock's acquire script",
    "{1 or 2 (others in line), holds >= 1, a token above the owner's last} or {0, pttl[, "
    "joined >= 1]}",
    3,
    {{.count = 3,
      .value = {DLOCK__SHAPE_RANGE(1, 2), DLOCK__SHAPE_RANGE(1, INT64_MAX),
                DLOCK__SHAPE_RANGE64(1, INT64_MAX)}},
     LOCK_BUSY,
     LOCK_BUSY_IN_LINE},
};

const dlock__reply_shape dlock__shape_lock_release = {
    "the lock's release script",
    "-1 (not held) or the holds left",
    1,
    {DLOCK__SHAPE_ONE_VALUE(DLOCK__SHAPE_RANGE(-1, INT64_MAX))},
};

const dlock__reply_shape dlock__shape_lock_force =
    DLOCK__SHAPE_YES_NO("the lock's force-release script");
const dlock__reply_shape dlock__shape_lock_owner_call =
    DLOCK__SHAPE_YES_NO("set_lease.lua/raise_token.lua");
