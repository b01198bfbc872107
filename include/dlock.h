/* dlock.h — umbrella header: everything but the libev adapter.
 *
 * The callback contract of every async call (dlock_*_async):
 *   - the callback runs exactly once, on the client's loop thread, never inside the call
 *     that started it, unless that call returns an error (then it never runs);
 *   - dlock_last_error() inside it holds the detail of a failed status.
 *
 * Freeing a handle (dlock_lock_free, dlock_rwlock_free, dlock_semaphore_free,
 * dlock_permits_free, dlock_latch_free) while calls on it are in flight:
 *   - from the moment *_free is called, every call made on the handle is refused with
 *     DLOCK_ECLOSED and its callback never runs; this holds for calls made from inside
 *     the callbacks of the handle's own calls, the only place where the handle may still
 *     be used after *_free (dlock_lock_name() stays readable there);
 *   - calls that wait (an acquire on a busy object, an await) complete with
 *     DLOCK_ECANCELED, and so do calls queued but not started yet; calls whose command is
 *     already in Redis complete with its outcome (an acquire whose grant was on its way
 *     completes with DLOCK_OK, the hold then left as dlock_lock_free leaves every hold).
 *     A blocking call on another thread returns that status;
 *   - each callback gets the handle's pointer, valid for the whole callback; the handle's
 *     memory goes when the last of these callbacks has returned;
 *   - on the client's loop thread (the application's libev loop, or a callback on the
 *     blocking client's I/O thread) *_free returns at once and the callbacks run on later
 *     turns of the loop; on any other thread *_free returns only after every callback of
 *     the handle has run and the memory is gone (so do not call it while holding a mutex
 *     that those callbacks take). The wait is bounded by the reply timeouts of the commands
 *     in flight (timeout_ms x (retry_attempts + 1)).
 *   - *_free does no I/O: holds and permits taken are not given back (see each *_free);
 *     the lost callback of a freed lock handle no longer runs.
 * A handle must not be freed twice, nor used by other threads once *_free is called. */
#ifndef DLOCK_H
#define DLOCK_H

#include "dlock/version.h"
#include "dlock/error.h"
#include "dlock/client.h"
#include "dlock/lock.h"
#include "dlock/spinlock.h"
#include "dlock/rwlock.h"
#include "dlock/semaphore.h"
#include "dlock/latch.h"
#include "dlock/multilock.h"

#endif
