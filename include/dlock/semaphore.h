/* SPDX-License-Identifier: MIT */
/* dlock/semaphore.h — counting semaphores: the semaphore (Redisson RSemaphore) and the
 * permit-expirable semaphore (RPermitExpirableSemaphore).
 *
 * A semaphore is a count of available permits in Redis, shared by every client that uses
 * its name. Permits have no owner: any thread or process may release them (as in Java).
 * A waiting acquire is woken by the release that makes enough permits available. When a
 * release's message reaches a client, its sleeping waiters are woken in arrival order, and
 * the wake stops at the first one whose request does not fit: a later request for fewer
 * permits is not woken ahead of an earlier request for more. That is all the order there
 * is: a new acquire's first attempt, a waiter's periodic re-check, and other clients'
 * waiters go straight to Redis, so a large request can still wait long behind a steady
 * stream of small ones (Redisson gives no order at all). docs/semaphore.md has the
 * details.
 *
 * The permit-expirable semaphore gives each acquired permit an id and an optional lease:
 * a permit whose holder died comes back to the pool when its lease ends (measured with
 * the Redis server's clock, never a client's).
 *
 * Every call's comment ends with its return codes in dlock.h's form; the callback
 * contract and "Freeing a handle" are dlock.h's too. A key of another type is DLOCK_EREDIS
 * (WRONGTYPE). Blocking calls are safe from any thread but the client's loop thread
 * (DLOCK_EDEADLK there).
 *
 * A note on faults: acquire and release of the plain semaphore change a bare count, so
 * when the connection drops after the command was sent the library cannot know whether it
 * ran; it does not send it again and returns DLOCK_ECONN (the permits may or may not
 * have moved). The permit-expirable semaphore has no such gap: its ids make every call
 * safe to repeat, and it is the one to use when a lost permit must come back. */
#ifndef DLOCK_SEMAPHORE_H
#define DLOCK_SEMAPHORE_H

#include <stdbool.h>
#include <stdint.h>

#include "dlock/client.h"
#include "dlock/export.h"
#include "dlock/timeouts.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- RSemaphore ------------------------------------------------------------------------ */

typedef struct dlock_semaphore dlock_semaphore;

/* A semaphore named name (any bytes but NUL, up to 64 KiB) on client c. No I/O; any
 * thread. The handle is the application's; free it with dlock_semaphore_free() before the
 * client. *out is written only on success.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL c or out, NULL or empty name, a name longer than
 *   64 KiB); DLOCK_ENOMEM. */
DLOCK_EXTERN int dlock_semaphore_new(dlock_client *c, const char *name, dlock_semaphore **out);

/* Frees the handle; no I/O. From this call on every call on s is refused with
 * DLOCK_ECLOSED, also from callbacks. Calls in flight complete: waiting acquires with
 * DLOCK_ECANCELED, the others with their outcome; s stays valid inside their callbacks and
 * its memory goes after the last one. On the loop thread it returns at once (callbacks on
 * later turns); on another thread after they have all run. See "Freeing a handle" in
 * dlock.h. NULL is a no-op.
 *
 * Returns: nothing. */
DLOCK_EXTERN void dlock_semaphore_free(dlock_semaphore *s);

/* Sets the number of permits if the semaphore does not exist yet (trySetPermits).
 * *was_set (may be NULL) says whether it did. Blocking: any thread but the loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL s, permits < 0); DLOCK_ENOMEM; DLOCK_ECONN;
 *   DLOCK_EAUTH; DLOCK_EREDIS; DLOCK_ECANCELED; DLOCK_ECLOSED; DLOCK_EDEADLK;
 *   DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_semaphore_try_set_permits(dlock_semaphore *s, int64_t permits,
                                                 bool *was_set);

/* Adds delta permits (negative takes them away; the count may go below zero). Creates
 * the semaphore at 0 + delta if needed. Wakes waiters when permits become available.
 * Blocking: any thread but the loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL s); DLOCK_ENOMEM; DLOCK_ECONN (the permits may or
 *   may not have been added); DLOCK_EAUTH; DLOCK_EREDIS; DLOCK_ECANCELED; DLOCK_ECLOSED;
 *   DLOCK_EDEADLK; DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_semaphore_add_permits(dlock_semaphore *s, int64_t delta);

/* Takes permits, waiting as long as it takes until that many are available. permits 0
 * succeeds at once. Blocking: any thread but the loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL s, permits < 0); DLOCK_ENOMEM; DLOCK_ECONN (the
 *   permits may or may not have been taken); DLOCK_EAUTH; DLOCK_EREDIS; DLOCK_ECANCELED (s
 *   freed while it waits); DLOCK_ECLOSED; DLOCK_EDEADLK; DLOCK_ENOPERM (the script, or the
 *   channel it waits on). */
DLOCK_EXTERN int dlock_semaphore_acquire(dlock_semaphore *s, int64_t permits);

/* Like acquire, giving up after wait_ms (0 = one attempt, DLOCK_FOREVER = no limit;
 * dlock/timeouts.h). Blocking: any thread but the loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL s, permits < 0, wait_ms below 0 and not
 *   DLOCK_FOREVER); DLOCK_ENOMEM; DLOCK_ETIMEDOUT (not that many available in time; nothing
 *   taken); DLOCK_ECONN (as acquire); DLOCK_EAUTH; DLOCK_EREDIS; DLOCK_ECANCELED (s freed
 *   while it waits); DLOCK_ECLOSED; DLOCK_EDEADLK; DLOCK_ENOPERM (as acquire). */
DLOCK_EXTERN int dlock_semaphore_try_acquire(dlock_semaphore *s, int64_t permits, int64_t wait_ms);

/* Gives permits back (anybody may) and wakes waiters. permits 0 sends nothing (but is
 * refused as any call on a freed handle or a closing client). Blocking: any thread but the
 * loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL s, permits < 0); DLOCK_ENOMEM; DLOCK_ECONN (the
 *   permits may or may not have been given back); DLOCK_EAUTH; DLOCK_EREDIS;
 *   DLOCK_ECANCELED; DLOCK_ECLOSED; DLOCK_EDEADLK; DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_semaphore_release(dlock_semaphore *s, int64_t permits);

/* The number of available permits, into *out (0 if the semaphore does not exist; may be
 * negative). Blocking: any thread but the loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL s or out); DLOCK_ENOMEM; DLOCK_ECONN; DLOCK_EAUTH;
 *   DLOCK_EREDIS (the key holds something else than a count); DLOCK_ECANCELED;
 *   DLOCK_ECLOSED; DLOCK_EDEADLK; DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_semaphore_available(dlock_semaphore *s, int64_t *out);

/* Takes every available permit at once; *drained (may be NULL) says how many (0 if none
 * or the count is negative, which is then left as it is). Blocking: any thread but the
 * loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL s); DLOCK_ENOMEM; DLOCK_ECONN (the permits may or
 *   may not have been taken); DLOCK_EAUTH; DLOCK_EREDIS; DLOCK_ECANCELED; DLOCK_ECLOSED;
 *   DLOCK_EDEADLK; DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_semaphore_drain(dlock_semaphore *s, int64_t *drained);

/* Async twin of dlock_semaphore_try_acquire (wait_ms as there). cb runs as dlock.h's
 * callback contract says. Call from the loop thread (async face) or any thread (blocking
 * face).
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL s or cb, permits < 0, wait_ms as try_acquire);
 *   DLOCK_ENOMEM; DLOCK_ECLOSED.
 * Callback status: DLOCK_OK; DLOCK_ENOMEM; DLOCK_ETIMEDOUT; DLOCK_ECONN; DLOCK_EAUTH;
 *   DLOCK_EREDIS; DLOCK_ECANCELED (s or the client freed while it waits); DLOCK_ECLOSED (the
 *   client closing); DLOCK_ENOPERM (as try_acquire). */
typedef void (*dlock_semaphore_cb)(dlock_semaphore *s, int status, void *arg);
DLOCK_EXTERN int dlock_semaphore_acquire_async(dlock_semaphore *s, int64_t permits, int64_t wait_ms,
                                               dlock_semaphore_cb cb, void *arg);

/* Async twin of dlock_semaphore_release; cb and threads as dlock_semaphore_acquire_async.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL s or cb, permits < 0); DLOCK_ENOMEM; DLOCK_ECLOSED.
 * Callback status: DLOCK_OK; DLOCK_ENOMEM; DLOCK_ECONN (as release); DLOCK_EAUTH;
 *   DLOCK_EREDIS; DLOCK_ECANCELED; DLOCK_ECLOSED; DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_semaphore_release_async(dlock_semaphore *s, int64_t permits,
                                               dlock_semaphore_cb cb, void *arg);

/* ---- RPermitExpirableSemaphore --------------------------------------------------------- */

typedef struct dlock_permits dlock_permits;

/* A permit's id: 16 random bytes shown as 32 lowercase hex characters and a NUL. */
typedef struct {
    char hex[33];
} dlock_permit_id;

/* A permit-expirable semaphore named name (any bytes but NUL, up to 64 KiB) on client c.
 * No I/O; any thread. The handle is the application's; free it with dlock_permits_free()
 * before the client. *out is written only on success.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (as dlock_semaphore_new); DLOCK_ENOMEM. */
DLOCK_EXTERN int dlock_permits_new(dlock_client *c, const char *name, dlock_permits **out);

/* Frees the handle; no I/O. Permits still acquired come back when their leases end (a
 * permit without a lease stays taken until released by id). Calls in flight and calls
 * made after it behave as for dlock_semaphore_free: waiting acquires complete with
 * DLOCK_ECANCELED, new calls are refused with DLOCK_ECLOSED, p stays valid inside the
 * callbacks. NULL is a no-op.
 *
 * Returns: nothing. */
DLOCK_EXTERN void dlock_permits_free(dlock_permits *p);

/* Sets the number of available permits if the semaphore does not exist yet. *was_set (may
 * be NULL) says whether it did. Blocking: any thread but the loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL p, permits < 0); DLOCK_ENOMEM; DLOCK_ECONN;
 *   DLOCK_EAUTH; DLOCK_EREDIS; DLOCK_ECANCELED; DLOCK_ECLOSED; DLOCK_EDEADLK;
 *   DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_permits_try_set_permits(dlock_permits *p, int64_t permits, bool *was_set);

/* Takes one permit, waiting up to wait_ms (0 = one attempt, DLOCK_FOREVER = no limit), and
 * writes its id to *out. lease_ms > 0: the permit comes back by itself after that long;
 * -1: it is held until released. A waiter on an empty pool wakes when a permit is released
 * or the earliest lease ends. Blocking: any thread but the loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL p or out, wait_ms below 0 and not DLOCK_FOREVER,
 *   lease_ms neither from 1 to DLOCK_MAX_TIME_MS nor -1); DLOCK_ENOMEM; DLOCK_ETIMEDOUT (no
 *   permit free in time; nothing taken); DLOCK_ECONN (*out is written too: the permit may
 *   have been taken before the connection failed, and releasing that id gives it back, or
 *   says DLOCK_ENOTOWNER if it was not taken); DLOCK_EAUTH; DLOCK_EREDIS; DLOCK_ECANCELED
 *   (p freed while it waits); DLOCK_ECLOSED; DLOCK_EDEADLK; DLOCK_ENOPERM (the script, or
 *   the channel it waits on). */
DLOCK_EXTERN int dlock_permits_acquire(dlock_permits *p, int64_t wait_ms, int64_t lease_ms,
                                       dlock_permit_id *out);

/* Gives the permit back. Blocking: any thread but the loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL p or id, an id that is not 32 hex digits);
 *   DLOCK_ENOMEM; DLOCK_ENOTOWNER (the id is unknown, already released or its lease has
 *   ended; nothing changed); DLOCK_ECONN; DLOCK_EAUTH; DLOCK_EREDIS; DLOCK_ECANCELED;
 *   DLOCK_ECLOSED; DLOCK_EDEADLK; DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_permits_release(dlock_permits *p, const dlock_permit_id *id);

/* Sets a held permit's lease to lease_ms from now (-1: no lease). Blocking: any thread but
 * the loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL p or id, an id that is not 32 hex digits, lease_ms
 *   as acquire); DLOCK_ENOMEM; DLOCK_ENOTOWNER (as release); DLOCK_ECONN; DLOCK_EAUTH;
 *   DLOCK_EREDIS; DLOCK_ECANCELED; DLOCK_ECLOSED; DLOCK_EDEADLK; DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_permits_update_lease(dlock_permits *p, const dlock_permit_id *id,
                                            int64_t lease_ms);

/* The number of available permits, after giving back the expired ones, into *out.
 * Blocking: any thread but the loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL p or out); DLOCK_ENOMEM; DLOCK_ECONN; DLOCK_EAUTH;
 *   DLOCK_EREDIS; DLOCK_ECANCELED; DLOCK_ECLOSED; DLOCK_EDEADLK; DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_permits_available(dlock_permits *p, int64_t *out);

/* Async twin of dlock_permits_acquire: the callback gets the permit's id, valid during the
 * callback, NULL unless status is DLOCK_OK (so a permit that an acquire ending in
 * DLOCK_ECONN may have taken comes back only by its lease). cb runs as dlock.h's callback
 * contract says. Call from the loop thread (async face) or any thread (blocking face).
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL p or cb, wait_ms or lease_ms as acquire);
 *   DLOCK_ENOMEM; DLOCK_ECLOSED.
 * Callback status: DLOCK_OK; DLOCK_ENOMEM; DLOCK_ETIMEDOUT; DLOCK_ECONN; DLOCK_EAUTH;
 *   DLOCK_EREDIS; DLOCK_ECANCELED (p or the client freed while it waits); DLOCK_ECLOSED (the
 *   client closing); DLOCK_ENOPERM (as acquire). */
typedef void (*dlock_permits_cb)(dlock_permits *p, int status, const dlock_permit_id *id,
                                 void *arg);
DLOCK_EXTERN int dlock_permits_acquire_async(dlock_permits *p, int64_t wait_ms, int64_t lease_ms,
                                             dlock_permits_cb cb, void *arg);

/* Async twin of dlock_permits_release: the callback gets the released id (NULL unless
 * status is DLOCK_OK). cb and threads as dlock_permits_acquire_async.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL p or cb, id as release); DLOCK_ENOMEM;
 *   DLOCK_ECLOSED.
 * Callback status: DLOCK_OK; DLOCK_ENOMEM; DLOCK_ENOTOWNER; DLOCK_ECONN; DLOCK_EAUTH;
 *   DLOCK_EREDIS; DLOCK_ECANCELED; DLOCK_ECLOSED; DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_permits_release_async(dlock_permits *p, const dlock_permit_id *id,
                                             dlock_permits_cb cb, void *arg);

#ifdef __cplusplus
}
#endif

#endif
