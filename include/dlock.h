/* SPDX-License-Identifier: MIT */
/* dlock.h — umbrella header: everything but the libev adapter (dlock/adapters/libev.h).
 *
 * This comment states once what every public header relies on: how return codes are
 * listed, the callback contract, and what freeing a handle does.
 *
 * Return codes. A function that can fail returns int: DLOCK_OK (0) or a negative DLOCK_E*
 * of dlock/error.h, with the detail in the calling thread's dlock_last_error(). The last
 * paragraph of every public function's comment lists every code it can return, in one
 * form, the codes in the order of error.h's list:
 *
 *     Returns: DLOCK_OK; DLOCK_EINVAL (what is invalid); DLOCK_ENOMEM; DLOCK_E... (when).
 *
 * A code without a case in parentheses means what the table below says. A function that
 * returns no code says what it returns in the same place ("Returns: nothing."). An async
 * call adds the statuses its callback may get, in the same form ("Callback status: ...").
 *
 *   DLOCK_EINVAL     a bad argument or option, found before any I/O (but for a Sentinel
 *                    URL's master that no sentinel knows); nothing changed.
 *   DLOCK_ENOMEM     out of memory.
 *   DLOCK_ECONN      Redis could not be reached or did not answer in time (a command
 *                    gives up timeout_ms x (retry_attempts + 1) after it was queued), or
 *                    the connection dropped after a command that is not safe to send twice
 *                    had left: its effect is then unknown (each header says which calls).
 *   DLOCK_EAUTH      the server refuses the client's credentials (also on a reconnect).
 *   DLOCK_EREDIS     Redis answered with an error (a key of another type: WRONGTYPE; a
 *                    server that is loading, read-only or out of memory) or with a reply
 *                    dlock does not recognise; the server's text is in dlock_last_error().
 *   DLOCK_ECANCELED  the call was queued or waiting when its handle, or the client, was
 *                    freed (see "Freeing a handle" and dlock_client_free).
 *   DLOCK_ECLOSED    the handle's *_free has been called, or the client is closing: the
 *                    call was refused (a composite's call: a member's call was).
 *   DLOCK_EDEADLK    a blocking call made on the client's loop thread (a blocking
 *                    client's I/O thread, where every dlock callback runs; the
 *                    application's loop thread on the async face), where it would wait for
 *                    itself; nothing was sent.
 *   DLOCK_ENOPERM    the Redis ACL denies the client's user a command, a key or a channel
 *                    the call needs: the script's command or key, the channel a release
 *                    publishes on, the channel a waiting call subscribes to.
 * The other codes (DLOCK_ETIMEDOUT, DLOCK_ENOTOWNER, DLOCK_ELOST, DLOCK_EBUSY,
 * DLOCK_ENOSPC) are named with their case wherever they can happen.
 *
 * Callbacks. An async call (dlock_*_async) that returns DLOCK_OK calls its callback
 * exactly once; one that returns an error never calls it. The callback runs on the loop
 * thread of the client the call was made on, never inside the call that started it, with
 * dlock_last_error() holding the detail of a failed status for its duration. A blocking
 * call made from it fails with DLOCK_EDEADLK (but those that say they may be called on the
 * loop thread), and freeing the client from it fails with DLOCK_EBUSY (async face) or
 * DLOCK_EDEADLK (blocking face). Two exceptions to the contract:
 *   - freeing the client on the async face: dlock_client_free completes every pending
 *     call with DLOCK_ECANCELED, and those callbacks run inside dlock_client_free;
 *   - composites (dlock/multilock.h): a MultiLock's or RedLock's callbacks, and its lost
 *     callback, run on the loop thread of its first member's client (locks[0]), whichever
 *     clients the other members use.
 * The lost callback (dlock_lock_on_lost) and the log callback (dlock_options.log_cb) run on
 * the loop thread too, and follow the same rules.
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
