/* SPDX-License-Identifier: MIT */
/* lock_shapes.h — what the lock family's scripts answer (reply_shape.h's tables, in
 * lock_shapes.c): every lock kind's acquire, release and force-release script, and the
 * owner calls a composite makes. The lock engine checks each reply against these before it
 * reads anything; the tests and the fuzz target run each on any reply. */
#ifndef DLOCK_LOCK_SHAPES_H
#define DLOCK_LOCK_SHAPES_H

#include "reply_shape.h"

/* Every kind of lock (acquire.lua, fair.lua, rw.lua, the spin lock): {1, holds >= 1,
 * token 0} acquired | {0, pttl >= -2} busy | {0, pttl, joined >= 1} busy, the owner in the
 * reentrant lock's line (form 2). The fenced lock's token is
 * >= 1; the engine raises that floor to one past the owner's last token. */
extern const dlock__reply_shape dlock__shape_lock_acquire;
extern const dlock__reply_shape dlock__shape_fenced_acquire;
/* release: -1 the owner holds nothing | the holds left, >= 0 */
extern const dlock__reply_shape dlock__shape_lock_release;
/* force_release.lua, set_lease.lua, raise_token.lua: 1 or 0 */
extern const dlock__reply_shape dlock__shape_lock_force;
extern const dlock__reply_shape dlock__shape_lock_owner_call;

#endif
