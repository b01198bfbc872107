/* SPDX-License-Identifier: MIT */
/* dlock/lock.h — the lock handle and every call on it, for every kind of lock: the
 * reentrant lock (Redisson RLock), the fenced lock (RFencedLock) and the fair lock
 * (RFairLock) made here, and the kinds made by their own headers on the same handle type
 * (the read-write lock's halves, the spin lock, MultiLock, RedLock).
 *
 * A lock is held by an owner: on the blocking face the calling thread
 * (dlock_thread_owner()), on the async face an explicit non-zero id the application
 * chooses. Holds are reentrant: an owner may acquire again and must release as often.
 * Two threads of one process contend like two processes.
 *
 * Leases: lease_ms > 0 holds the lock for at most that long; nobody renews it, and Redis
 * frees it when it runs out. DLOCK_WATCHDOG holds it until released: the lease is the
 * client's watchdog_ms and the watchdog renews it every third of that. If the watchdog
 * cannot keep it (the key vanished, Redis restarted empty, Redis unreachable until the
 * lease ran out), the lost callback fires and the owner's next release says DLOCK_ELOST.
 *
 * Every call's comment ends with its return codes in dlock.h's form; the callback
 * contract and "Freeing a handle" are dlock.h's too. A lock key of another type is
 * DLOCK_EREDIS (WRONGTYPE). Blocking calls are safe from any thread but the client's loop
 * thread (DLOCK_EDEADLK there; a composite's: any member's client's loop thread). */
#ifndef DLOCK_LOCK_H
#define DLOCK_LOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "dlock/client.h"
#include "dlock/export.h"
#include "dlock/timeouts.h" /* DLOCK_FOREVER, DLOCK_WATCHDOG */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dlock_lock dlock_lock;

/* A reentrant lock (Redisson RLock) named name (any bytes but NUL, up to 64 KiB) on client
 * c. No I/O; any thread. The handle is the application's; free it with dlock_lock_free()
 * before the client. *out is written only on success.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL c or out, NULL or empty name, a name longer than
 *   64 KiB); DLOCK_ENOMEM. */
DLOCK_EXTERN int dlock_lock_new(dlock_client *c, const char *name, dlock_lock **out);

/* A fenced lock (RFencedLock): a reentrant lock whose every successful acquisition
 * (reentrant ones too) takes the next fencing token from the counter
 * "redisson_lock_token:{name}". Tokens never go backwards, across owners and clients: a
 * resource that remembers the highest token it saw and refuses lower ones is safe from a
 * holder that lost the lock without knowing (a long GC pause, a partition). No I/O; any
 * thread; ownership as dlock_lock_new.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (as dlock_lock_new); DLOCK_ENOMEM. */
DLOCK_EXTERN int dlock_fencedlock_new(dlock_client *c, const char *name, dlock_lock **out);

/* A fair lock (RFairLock): a reentrant lock whose waiters get it in arrival order, across
 * threads and clients. A waiter keeps its place in Redis by refreshing its own deadline
 * (the server's clock + the client's fair_wait_ms) while it waits; a waiter that stops
 * (its process died) is dropped fair_wait_ms after its last refresh, and one that gives
 * up (timeout) leaves at once. A release wakes only the first waiter. No I/O; any thread;
 * ownership as dlock_lock_new.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (as dlock_lock_new); DLOCK_ENOMEM. */
DLOCK_EXTERN int dlock_fairlock_new(dlock_client *c, const char *name, dlock_lock **out);

/* Frees the handle, of any kind (a composite too; never a read-write lock's half: see
 * dlock_rwlock_free). No I/O: holds still in place stop being renewed and expire by their
 * lease, and the lost callback runs no more. From this call on every call on l is refused
 * with DLOCK_ECLOSED, also from callbacks. Calls in flight on l complete: waiting acquires
 * with DLOCK_ECANCELED, the others with their outcome; l stays valid inside their
 * callbacks, and its memory goes after the last one. On the loop thread it returns at once
 * (the callbacks follow on later turns); on another thread it returns after they have all
 * run. See "Freeing a handle" in dlock.h. Must not race with other calls on the same
 * handle. NULL is a no-op.
 *
 * Returns: nothing. */
DLOCK_EXTERN void dlock_lock_free(dlock_lock *l);

/* The name given at creation. No I/O; any thread.
 *
 * Returns: the name, owned by l and valid as long as l (inside the callbacks of its calls
 *   after dlock_lock_free too); NULL for NULL l. */
DLOCK_EXTERN const char *dlock_lock_name(const dlock_lock *l);

/* Blocks until the calling thread holds the lock (Java's lock()), waiting for as long as it
 * takes. lease_ms: how long the hold lasts unless released (> 0), or DLOCK_WATCHDOG. Any
 * thread but the loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL l; lease_ms neither from 1 to DLOCK_MAX_TIME_MS nor
 *   DLOCK_WATCHDOG); DLOCK_ENOMEM; DLOCK_ECONN; DLOCK_EAUTH; DLOCK_EREDIS; DLOCK_ECANCELED
 *   (l freed while it waits); DLOCK_ECLOSED; DLOCK_EDEADLK; DLOCK_ENOPERM (the lock's
 *   script or its channel). */
DLOCK_EXTERN int dlock_lock_acquire(dlock_lock *l, int64_t lease_ms);

/* Like acquire, but gives up after wait_ms (tryLock(wait, lease)): 0 is one attempt,
 * DLOCK_FOREVER is dlock_lock_acquire. Any thread but the loop thread. An attempt that
 * cannot be sent (the client is reconnecting; in a Cluster, the slot has no master) waits
 * for a connection until wait_ms ends too, but at least timeout_ms (dlock_options).
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (as acquire; wait_ms below 0 and not DLOCK_FOREVER);
 *   DLOCK_ENOMEM; DLOCK_ETIMEDOUT (still held by another owner when wait_ms ran out; nothing
 *   changed); DLOCK_ECONN (also when no attempt could be sent by then: nothing changed);
 *   DLOCK_EAUTH; DLOCK_EREDIS; DLOCK_ECANCELED (l freed while it
 *   waits); DLOCK_ECLOSED; DLOCK_EDEADLK; DLOCK_ENOPERM (as acquire). */
DLOCK_EXTERN int dlock_lock_try_acquire(dlock_lock *l, int64_t wait_ms, int64_t lease_ms);

/* Releases one hold of the calling thread (unlock()). The last release deletes the lock
 * and wakes a waiter of every client (the spin lock wakes nobody). Any thread but the
 * loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL l); DLOCK_ENOMEM; DLOCK_ENOTOWNER (the thread
 *   holds nothing; nothing changed); DLOCK_ELOST (a hold of the thread was lost while held:
 *   see above; the lost hold is forgotten, the thread's live holds are released);
 *   DLOCK_ECONN (the hold may still be in place: it then expires by its lease); DLOCK_EAUTH;
 *   DLOCK_EREDIS; DLOCK_ECANCELED; DLOCK_ECLOSED; DLOCK_EDEADLK; DLOCK_ENOPERM (the lock's
 *   script, or the channel the release publishes on: then nothing changed). */
DLOCK_EXTERN int dlock_lock_release(dlock_lock *l);

/* Deletes the lock whoever holds it and wakes its waiters (forceUnlock()). *was_locked
 * (may be NULL) says whether it was held. The holders' watchdogs report it lost. Any
 * thread but the loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL l); DLOCK_ENOMEM; DLOCK_ECONN; DLOCK_EAUTH;
 *   DLOCK_EREDIS; DLOCK_ECANCELED; DLOCK_ECLOSED; DLOCK_EDEADLK; DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_lock_force_release(dlock_lock *l, bool *was_locked);

/* Whether anybody holds the lock (isLocked()), into *out. Any thread but the loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL l or out); DLOCK_ENOMEM; DLOCK_ECONN; DLOCK_EAUTH;
 *   DLOCK_EREDIS; DLOCK_ECANCELED; DLOCK_ECLOSED; DLOCK_EDEADLK; DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_lock_is_locked(dlock_lock *l, bool *out);

/* Whether the calling thread holds it, as Redis sees it now (isHeldByCurrentThread()),
 * into *out. Any thread but the loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL l or out); DLOCK_ENOMEM; DLOCK_ECONN; DLOCK_EAUTH;
 *   DLOCK_EREDIS; DLOCK_ECANCELED; DLOCK_ECLOSED; DLOCK_EDEADLK; DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_lock_is_held(dlock_lock *l, bool *out);

/* The calling thread's reentrant hold count, as Redis sees it now (getHoldCount()), into
 * *out. Any thread but the loop thread. A composite answers from its own record, without
 * I/O, and may be asked on its callbacks' thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL l or out); DLOCK_ENOMEM; DLOCK_ECONN; DLOCK_EAUTH;
 *   DLOCK_EREDIS; DLOCK_ECANCELED; DLOCK_ECLOSED; DLOCK_EDEADLK (not for a composite);
 *   DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_lock_hold_count(dlock_lock *l, int64_t *out);

/* The lock's remaining lease in ms (remainTimeToLive()), into *out_ms: -2 not locked, -1
 * no expiry. Any thread but the loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL l or out_ms); DLOCK_ENOMEM; DLOCK_ECONN;
 *   DLOCK_EAUTH; DLOCK_EREDIS; DLOCK_ECANCELED; DLOCK_ECLOSED; DLOCK_EDEADLK;
 *   DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_lock_ttl(dlock_lock *l, int64_t *out_ms);

/* Fenced locks: the token of the calling thread's latest acquisition, into *out. No I/O:
 * the client's own record. Any thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL l or out; l not fenced); DLOCK_ENOMEM;
 *   DLOCK_ENOTOWNER (the thread never acquired l); DLOCK_ECANCELED; DLOCK_ECLOSED. */
DLOCK_EXTERN int dlock_lock_token(dlock_lock *l, uint64_t *out);

/* The same for an explicit owner (the async face's owners). It never blocks on the loop
 * thread, so it may be called there, e.g. from the acquire callback.
 *
 * Returns: as dlock_lock_token. */
DLOCK_EXTERN int dlock_lock_token_of(dlock_lock *l, uint64_t owner, uint64_t *out);

/* The lost callback's reason when a watchdog hold ran out because it reached its bound
 * (dlock_options.max_hold_ms, dlock_lock_set_max_hold): positive, so unlike every DLOCK_E*
 * code; dlock_err_name and dlock_strerror name it. The owner's release then says
 * DLOCK_ELOST, as for any lost hold. */
#define DLOCK_LOST_MAX_HOLD 1

/* Called once per lost lease, on the loop thread, with the owner whose holds were lost
 * and the reason: DLOCK_ELOST (renewal found the lock gone or taken), DLOCK_ECONN (no
 * renewal could be confirmed before the lease ran out), DLOCK_LOST_MAX_HOLD (the watchdog
 * stopped renewing at the hold's bound and the lease ran out). It must not make blocking
 * calls.
 * One callback per handle; NULL removes it. Set it before acquiring. Any thread; on the
 * loop thread it takes effect at once, elsewhere it returns once the callback before it
 * is no longer being called and will not be.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL l); DLOCK_ENOMEM; DLOCK_ECANCELED; DLOCK_ECLOSED. */
typedef void (*dlock_lost_cb)(dlock_lock *l, uint64_t owner, int reason, void *arg);
DLOCK_EXTERN int dlock_lock_on_lost(dlock_lock *l, dlock_lost_cb cb, void *arg);

/* Sets how long a watchdog hold taken through l may last, instead of the client's
 * dlock_options.max_hold_ms: the watchdog stops renewing a hold max_hold_ms after the
 * acquire that took it (the owner's first hold; reentrant ones do not extend it) was sent.
 * The lease then runs out in Redis, not deleted: other clients trust it, and the holder
 * may still be running. So the lock is free again at most watchdog_ms after the bound; the
 * lost callback says DLOCK_LOST_MAX_HOLD and the owner's release DLOCK_ELOST. Only a
 * fencing token keeps such a holder from the resource it guards. A hold with a lease_ms is
 * bounded by that lease alone. max_hold_ms: > 0 the bound; 0 no bound for l, whatever the
 * client's; DLOCK_MAX_HOLD_CLIENT the client's option again (the default). It applies to
 * holds taken after it (a hold already taken keeps its bound). A read-write lock's halves
 * are set one by one; a composite (MultiLock, RedLock) is bounded through its members:
 * set theirs, or their clients'. Any thread, no I/O.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL l, l a composite, max_hold_ms below
 *   DLOCK_MAX_HOLD_CLIENT or above DLOCK_MAX_TIME_MS; nothing changed); DLOCK_ECLOSED. */
#define DLOCK_MAX_HOLD_CLIENT INT64_C(-1)
DLOCK_EXTERN int dlock_lock_set_max_hold(dlock_lock *l, int64_t max_hold_ms);

/* Async face: acquire for owner, the application's non-zero id of the holder, waiting up to
 * wait_ms (0: one attempt; DLOCK_FOREVER), with lease_ms as dlock_lock_acquire. cb runs as
 * dlock.h's callback contract says (a composite's on its first member's loop thread).
 * Call from the loop thread (async face) or any thread (blocking face).
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL l or cb, owner 0, wait_ms or lease_ms as
 *   try_acquire); DLOCK_ENOMEM; DLOCK_ECLOSED.
 * Callback status: DLOCK_OK; DLOCK_ENOMEM; DLOCK_ETIMEDOUT; DLOCK_ECONN; DLOCK_EAUTH;
 *   DLOCK_EREDIS; DLOCK_ECANCELED (l or the client freed while it waits); DLOCK_ECLOSED (the
 *   client closing; a composite's member freed); DLOCK_ENOPERM. */
typedef void (*dlock_lock_cb)(dlock_lock *l, int status, void *arg);
DLOCK_EXTERN int dlock_lock_acquire_async(dlock_lock *l, uint64_t owner, int64_t wait_ms,
                                          int64_t lease_ms, dlock_lock_cb cb, void *arg);

/* Async face: releases one hold of owner, as dlock_lock_release. cb and threads as
 * dlock_lock_acquire_async.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL l or cb, owner 0); DLOCK_ENOMEM; DLOCK_ECLOSED.
 * Callback status: DLOCK_OK; DLOCK_ENOMEM; DLOCK_ENOTOWNER; DLOCK_ELOST; DLOCK_ECONN;
 *   DLOCK_EAUTH; DLOCK_EREDIS; DLOCK_ECANCELED; DLOCK_ECLOSED; DLOCK_ENOPERM (as
 *   dlock_lock_release). */
DLOCK_EXTERN int dlock_lock_release_async(dlock_lock *l, uint64_t owner, dlock_lock_cb cb,
                                          void *arg);

#ifdef __cplusplus
}
#endif

#endif
