/* SPDX-License-Identifier: MIT */
/* semaphore_shapes.h — what the scripts of this folder answer (reply_shape.h's tables, in
 * semaphore_shapes.c): the semaphore's, the latch's and the permit semaphore's. Each call
 * class names its shape; the object helper (dlock_object.h) checks every reply against it
 * before the class reads anything. The tests and the fuzz target run each on any reply. */
#ifndef DLOCK_SEMAPHORE_SHAPES_H
#define DLOCK_SEMAPHORE_SHAPES_H

#include "reply_shape.h"

/* sem_try_set.lua, latch_try_set.lua, and permits.lua's try-set, release and lease update:
 * 1 or 0 */
extern const dlock__reply_shape dlock__shape_semaphore_try_set;
extern const dlock__reply_shape dlock__shape_latch_try_set;
extern const dlock__reply_shape dlock__shape_permits_yes_no;
/* sem_add.lua, sem_release.lua: the permits available now, any int64 (may be below 0);
 * permits.lua 'available' the same */
extern const dlock__reply_shape dlock__shape_semaphore_count;
extern const dlock__reply_shape dlock__shape_permits_available;
/* sem_drain.lua: the permits taken, >= 0 */
extern const dlock__reply_shape dlock__shape_semaphore_drain;
/* sem_acquire.lua: {1, left >= 0} taken | {0, available} not enough */
extern const dlock__reply_shape dlock__shape_semaphore_acquire;
/* latch_count_down.lua: the count now, >= 0 */
extern const dlock__reply_shape dlock__shape_latch_count_down;
/* permits.lua 'acquire': {1} taken | {0, hint >= -1} none free */
extern const dlock__reply_shape dlock__shape_permits_acquire;

#endif
