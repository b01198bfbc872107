/* SPDX-License-Identifier: MIT */
/* every_reply_shape.h — every script's reply shape, from the folders that own them, for the
 * tests and the fuzz target that run each shape on any reply (test_reply_shape.c,
 * fuzz_reply_shape.c). A primitive with scripts of its own adds its shapes here. */
#ifndef DLOCK_TEST_EVERY_REPLY_SHAPE_H
#define DLOCK_TEST_EVERY_REPLY_SHAPE_H

#include <stddef.h>

#include "lock/lock_shapes.h"
#include "semaphore/semaphore_shapes.h"

static const dlock__reply_shape *const every_reply_shape[] = {
    &dlock__shape_lock_acquire,      &dlock__shape_fenced_acquire,  &dlock__shape_lock_release,
    &dlock__shape_lock_force,        &dlock__shape_lock_owner_call, &dlock__shape_semaphore_try_set,
    &dlock__shape_latch_try_set,     &dlock__shape_permits_yes_no,  &dlock__shape_semaphore_count,
    &dlock__shape_permits_available, &dlock__shape_semaphore_drain, &dlock__shape_semaphore_acquire,
    &dlock__shape_latch_count_down,  &dlock__shape_permits_acquire,
};
#define EVERY_REPLY_SHAPE_COUNT (sizeof(every_reply_shape) / sizeof(every_reply_shape[0]))

#endif
