/* SPDX-License-Identifier: MIT */
/* lock_class.h — what a dlock_lock handle is: one table of calls per class of handle.
 *
 * Every public dlock_lock_* call checks its arguments (api.c: the handle, check below,
 * wait_ms, lease_ms, a non-zero owner and a callback for the async face, out pointers not
 * NULL), then goes to the handle's class:
 * the ordinary class (every lock kind standing on the lock engine: reentrant, fenced,
 * fair, the read-write lock's halves, the spin lock) or a composite class (MultiLock,
 * RedLock: src/multilock). Nothing else tells the classes apart, so a public call cannot
 * forget one, and a new class is a new table, not a new branch in every call.
 *
 * The async calls follow the library's callback contract (dlock.h): cb exactly once unless
 * the call returned an error, never from inside the call. The ordinary class calls back on
 * its client's loop thread; a composite on its first member's client's loop thread. The
 * blocking calls take the calling thread's owner (dlock_thread_owner()) from the public
 * call; a blocking call made on the loop thread its answer needs is DLOCK_EDEADLK. */
#ifndef DLOCK_LOCK_CLASS_H
#define DLOCK_LOCK_CLASS_H

#include <stdbool.h>
#include <stdint.h>

#include "dlock/lock.h"

typedef struct dlock__lock_class {
    const char *what; /* "lock", "MultiLock", "RedLock": in error texts */

    /* Optional, any thread, first thing of every public call but dlock_lock_name and
     * dlock_lock_free: DLOCK_OK while the handle takes calls, DLOCK_ECLOSED (with its text)
     * once its free has begun. NULL: the handle is always open until freed. */
    int (*check)(const dlock_lock *l);

    /* async face (NULL: the class has none, and the call is DLOCK_EINVAL) */
    int (*acquire_async)(dlock_lock *l, uint64_t owner, int64_t wait_ms, int64_t lease_ms,
                         dlock_lock_cb cb, void *arg);
    int (*release_async)(dlock_lock *l, uint64_t owner, dlock_lock_cb cb, void *arg);

    /* blocking face */
    int (*try_acquire)(dlock_lock *l, uint64_t owner, int64_t wait_ms, int64_t lease_ms);
    int (*release)(dlock_lock *l, uint64_t owner);
    int (*force_release)(dlock_lock *l, bool *was_locked);
    int (*is_locked)(dlock_lock *l, bool *out);
    int (*is_held)(dlock_lock *l, uint64_t owner, bool *out);
    int (*hold_count)(dlock_lock *l, uint64_t owner, int64_t *out);
    int (*ttl)(dlock_lock *l, uint64_t owner, int64_t *out_ms);
    /* No I/O for the ordinary class; never blocks on a loop thread. */
    int (*token_of)(dlock_lock *l, uint64_t owner, uint64_t *out);

    int (*on_lost)(dlock_lock *l, dlock_lost_cb cb, void *arg);
    /* Any thread, no I/O; max_hold_ms checked. NULL: the class has no bound of its own
     * (a composite's holds are its members'), and the call is DLOCK_EINVAL. */
    int (*set_max_hold)(dlock_lock *l, int64_t max_hold_ms);
    /* From dlock_lock_free (any thread, l not NULL): the class's free protocol. */
    void (*free)(dlock_lock *l);
} dlock__lock_class;

/* The first member of every handle, whatever its class: dlock_lock_* reads cls and name. */
struct dlock_lock {
    const dlock__lock_class *cls;
    char *name; /* owned by the class's handle; freed by its free */
};

#endif
