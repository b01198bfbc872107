/* SPDX-License-Identifier: MIT */
/* reply_shape.c — the scripts' replies as data (reply_shape.h) and the one checker.
 *
 * Each table transcribes the reply of a script's header comment: a hold count is >= 1 once
 * acquired, a busy lock's pttl is -2 (gone), -1 (no expiry) or >= 0, a token is 0 unless fenced and
 * >= 1 when fenced, a yes/no is 1 or 0. Where a script may answer a 64-bit count as its digits
 * (int64_reply, beyond 2^53), the value is DLOCK__SHAPE_INT64; everything a script computes as a
 * Lua number, or a command's integer, is DLOCK__SHAPE_INT: there a string is not the script
 * speaking. */
#include <stdio.h>

#include "core.h"
#include "reply_shape.h"

/* ---- the checker ------------------------------------------------------------------------ */

static bool value_fits(const dlock__shape_value *v, const dlock__reply *r, int64_t *out) {
    int type = dlock__reply_type(r);
    if (type != DLOCK__REPLY_INTEGER &&
        !(v->kind == DLOCK__SHAPE_INT64 && type == DLOCK__REPLY_STRING))
        return false;
    int64_t value;
    if (dlock__reply_int64(r, &value) != DLOCK_OK || value < v->min || value > v->max)
        return false;
    *out = value;
    return true;
}

static bool form_fits(const dlock__shape_form *f, const dlock__reply *r, dlock__shape_values *out) {
    if (f->count == 0)
        return value_fits(&f->value[0], r, &out->value[0]);
    if (dlock__reply_type(r) != DLOCK__REPLY_ARRAY || dlock__reply_count(r) != f->count)
        return false;
    for (size_t i = 0; i < f->count; i++)
        if (!value_fits(&f->value[i], dlock__reply_at(r, i), &out->value[i]))
            return false;
    return true;
}

bool dlock__reply_shape_check(const dlock__reply_shape *s, const dlock__reply *r,
                              dlock__shape_values *out) {
    for (int i = 0; i < s->forms; i++) {
        dlock__shape_values got = {.form = i};
        if (form_fits(&s->form[i], r, &got)) {
            *out = got;
            return true;
        }
    }
    return false;
}

bool dlock__reply_shape_each(const dlock__shape_value *v, const dlock__reply *r, size_t n) {
    if (dlock__reply_type(r) != DLOCK__REPLY_ARRAY || dlock__reply_count(r) != n)
        return false;
    int64_t ignored;
    for (size_t i = 0; i < n; i++)
        if (!value_fits(v, dlock__reply_at(r, i), &ignored))
            return false;
    return true;
}

const char *dlock__reply_shape_mismatch(const dlock__reply_shape *s, const dlock__reply *r,
                                        char *buf, size_t size) {
    char got[160];
    dlock__reply_describe(r, got, sizeof(got));
    snprintf(buf, size, "%s, where %s answers %s", got, s->script, s->says);
    return buf;
}

/* ---- the tables ------------------------------------------------------------------------- */

#define INT_RANGE(lo, hi)                                                                          \
    { DLOCK__SHAPE_INT, (lo), (hi) }
#define INT64_RANGE(lo, hi)                                                                        \
    { DLOCK__SHAPE_INT64, (lo), (hi) }
#define ONE_VALUE(v)                                                                               \
    {                                                                                              \
        .count = 0, .value = { v }                                                                 \
    }
/* 1 or 0, as an integer */
#define YES_NO(name)                                                                               \
    {                                                                                              \
        name, "1 or 0", 1, {                                                                       \
            ONE_VALUE(INT_RANGE(0, 1))                                                             \
        }                                                                                          \
    }

/* {0, pttl}: the holder's remaining lease (-2 gone, -1 no expiry) or a fair/rw hint. No
 * upper bound below INT64_MAX: the holder may be a Redisson client, whose leases are not
 * held to DLOCK_MAX_TIME_MS (the waiting engine saturates what it adds a hint to). */
#define LOCK_BUSY                                                                                  \
    {                                                                                              \
        .count = 2, .value = { INT_RANGE(0, 0), INT_RANGE(-2, INT64_MAX) }                         \
    }

const dlock__reply_shape dlock__shape_lock_acquire = {
    "the lock's acquire script",
    "{1, holds >= 1, token 0} or {0, pttl}",
    2,
    {{.count = 3, .value = {INT_RANGE(1, 1), INT_RANGE(1, INT64_MAX), INT64_RANGE(0, 0)}},
     LOCK_BUSY},
};

const dlock__reply_shape dlock__shape_fenced_acquire = {
    "the fenced lock's acquire script",
    "{1, holds >= 1, a token above the owner's last} or {0, pttl}",
    2,
    {{.count = 3, .value = {INT_RANGE(1, 1), INT_RANGE(1, INT64_MAX), INT64_RANGE(1, INT64_MAX)}},
     LOCK_BUSY},
};

const dlock__reply_shape dlock__shape_lock_release = {
    "the lock's release script",
    "-1 (not held) or the holds left",
    1,
    {ONE_VALUE(INT_RANGE(-1, INT64_MAX))},
};

const dlock__reply_shape dlock__shape_lock_force = YES_NO("the lock's force-release script");
const dlock__reply_shape dlock__shape_lock_owner_call = YES_NO("set_lease.lua/raise_token.lua");
const dlock__reply_shape dlock__shape_semaphore_try_set = YES_NO("sem_try_set.lua");
const dlock__reply_shape dlock__shape_latch_try_set = YES_NO("latch_try_set.lua");
const dlock__reply_shape dlock__shape_permits_yes_no = YES_NO("permits.lua");

const dlock__reply_shape dlock__shape_semaphore_count = {
    "sem_add.lua/sem_release.lua",
    "the permits available (a 64-bit integer)",
    1,
    {ONE_VALUE(INT64_RANGE(INT64_MIN, INT64_MAX))},
};

const dlock__reply_shape dlock__shape_permits_available = {
    "permits.lua",
    "the permits available (a 64-bit integer)",
    1,
    {ONE_VALUE(INT64_RANGE(INT64_MIN, INT64_MAX))},
};

const dlock__reply_shape dlock__shape_semaphore_drain = {
    "sem_drain.lua",
    "the permits taken (>= 0)",
    1,
    {ONE_VALUE(INT64_RANGE(0, INT64_MAX))},
};

const dlock__reply_shape dlock__shape_semaphore_acquire = {
    "sem_acquire.lua",
    "{1, permits left >= 0} or {0, permits available}",
    2,
    {{.count = 2, .value = {INT_RANGE(1, 1), INT64_RANGE(0, INT64_MAX)}},
     {.count = 2, .value = {INT_RANGE(0, 0), INT64_RANGE(INT64_MIN, INT64_MAX)}}},
};

const dlock__reply_shape dlock__shape_latch_count_down = {
    "latch_count_down.lua",
    "the count left (>= 0)",
    1,
    {ONE_VALUE(INT64_RANGE(0, INT64_MAX))},
};

const dlock__reply_shape dlock__shape_permits_acquire = {
    "permits.lua",
    "{1} or {0, ms until a lease ends (-1: none)}",
    2,
    {{.count = 1, .value = {INT_RANGE(1, 1)}},
     {.count = 2, .value = {INT_RANGE(0, 0), INT_RANGE(-1, INT64_MAX)}}},
};

const dlock__shape_value dlock__shape_renewed = INT_RANGE(0, 1);

const dlock__reply_shape *const dlock__reply_shapes[] = {
    &dlock__shape_lock_acquire,      &dlock__shape_fenced_acquire,  &dlock__shape_lock_release,
    &dlock__shape_lock_force,        &dlock__shape_lock_owner_call, &dlock__shape_semaphore_try_set,
    &dlock__shape_latch_try_set,     &dlock__shape_permits_yes_no,  &dlock__shape_semaphore_count,
    &dlock__shape_permits_available, &dlock__shape_semaphore_drain, &dlock__shape_semaphore_acquire,
    &dlock__shape_latch_count_down,  &dlock__shape_permits_acquire,
};
const size_t dlock__reply_shape_count =
    sizeof(dlock__reply_shapes) / sizeof(dlock__reply_shapes[0]);
