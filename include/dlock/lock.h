/* dlock/lock.h — the lock handle and every call on it, for every kind of lock: the
 * reentrant lock (Redisson RLock) and the fenced lock (RFencedLock) made here, and the
 * kinds made by their own headers on the same handle type (fair lock, the read-write
 * lock's halves, spin lock, MultiLock, RedLock).
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
 * Every call returns DLOCK_OK or a negative DLOCK_E*; the detail of a failure is in
 * dlock_last_error(). Bad arguments are DLOCK_EINVAL before any I/O. A lock key of
 * another type is DLOCK_EREDIS (WRONGTYPE). Blocking calls are safe from any thread but
 * the client's loop thread (DLOCK_EDEADLK there). */
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


/* A reentrant lock named name (any bytes but NUL, up to 64 KiB) on client c. No I/O. The
 * handle is the application's; free it with dlock_lock_free() before the client.
 * DLOCK_EINVAL (NULL client, NULL or empty name), DLOCK_ENOMEM. */
DLOCK_EXTERN int dlock_lock_new(dlock_client *c, const char *name, dlock_lock **out);

/* A fenced lock: a reentrant lock whose every successful acquisition (reentrant ones
 * too) takes the next fencing token from the counter "redisson_lock_token:{name}". Tokens
 * never go backwards, across owners and clients: a resource that remembers the highest
 * token it saw and refuses lower ones is safe from a holder that lost the lock without
 * knowing (a long GC pause, a partition). */
DLOCK_EXTERN int dlock_fencedlock_new(dlock_client *c, const char *name, dlock_lock **out);

/* A fair lock (RFairLock): a reentrant lock whose waiters get it in arrival order, across
 * threads and clients. A waiter keeps its place in Redis by refreshing its own deadline
 * (the server's clock + the client's fair_wait_ms) while it waits; a waiter that stops
 * (its process died) is dropped fair_wait_ms after its last refresh, and one that gives
 * up (timeout) leaves at once. A release wakes only the first waiter. */
DLOCK_EXTERN int dlock_fairlock_new(dlock_client *c, const char *name, dlock_lock **out);

/* Frees the handle. No I/O: holds still in place stop being renewed and expire by their
 * lease, and the lost callback runs no more. From this call on every call on l is refused
 * with DLOCK_ECLOSED, also from callbacks. Calls in flight on l complete: waiting acquires
 * with DLOCK_ECANCELED, the others with their outcome; l stays valid inside their
 * callbacks, and its memory goes after the last one. On the loop thread it returns at once
 * (the callbacks follow on later turns); on another thread it returns after they have all
 * run. See "Freeing a handle" in dlock.h. Must not race with other calls on the same
 * handle. NULL is a no-op. */
DLOCK_EXTERN void dlock_lock_free(dlock_lock *l);

/* The name given at creation. */
DLOCK_EXTERN const char *dlock_lock_name(const dlock_lock *l);

/* Blocks until the calling thread holds the lock (Java's lock()). lease_ms > 0 or
 * DLOCK_WATCHDOG. DLOCK_OK, DLOCK_EINVAL, DLOCK_ECONN, DLOCK_EREDIS, DLOCK_ECANCELED. */
DLOCK_EXTERN int dlock_lock_acquire(dlock_lock *l, int64_t lease_ms);

/* Like acquire, but gives up after wait_ms (tryLock(wait, lease)): DLOCK_ETIMEDOUT.
 * wait_ms 0 = one attempt; DLOCK_FOREVER = acquire. */
DLOCK_EXTERN int dlock_lock_try_acquire(dlock_lock *l, int64_t wait_ms, int64_t lease_ms);

/* Releases one hold of the calling thread (unlock()). The last release deletes the lock
 * and wakes a waiter of every client. DLOCK_ENOTOWNER if the thread holds nothing
 * (nothing changes), DLOCK_ELOST if the thread's hold was lost (see above; the lost hold
 * is forgotten), DLOCK_ECONN (the hold then expires by its lease). */
DLOCK_EXTERN int dlock_lock_release(dlock_lock *l);

/* Deletes the lock whoever holds it and wakes its waiters (forceUnlock()). *was_locked
 * (may be NULL) says whether it was held. The holders' watchdogs report it lost. */
DLOCK_EXTERN int dlock_lock_force_release(dlock_lock *l, bool *was_locked);

/* Whether anybody holds the lock (isLocked()). */
DLOCK_EXTERN int dlock_lock_is_locked(dlock_lock *l, bool *out);

/* Whether the calling thread holds it, as Redis sees it now (isHeldByCurrentThread()). */
DLOCK_EXTERN int dlock_lock_is_held(dlock_lock *l, bool *out);

/* The calling thread's reentrant hold count, as Redis sees it now (getHoldCount()). */
DLOCK_EXTERN int dlock_lock_hold_count(dlock_lock *l, int64_t *out);

/* The lock's remaining lease in ms (remainTimeToLive()): -2 not locked, -1 no expiry. */
DLOCK_EXTERN int dlock_lock_ttl(dlock_lock *l, int64_t *out_ms);

/* Fenced locks: the token of the calling thread's latest acquisition. DLOCK_EINVAL on
 * another lock kind, DLOCK_ENOTOWNER if the thread never acquired it. No I/O. */
DLOCK_EXTERN int dlock_lock_token(dlock_lock *l, uint64_t *out);

/* The same for an explicit owner (the async face's owners). It never blocks on the loop
 * thread, so it may be called there, e.g. from the acquire callback. */
DLOCK_EXTERN int dlock_lock_token_of(dlock_lock *l, uint64_t owner, uint64_t *out);

/* Called once per lost lease, on the loop thread, with the owner whose holds were lost
 * and the reason: DLOCK_ELOST (renewal found the lock gone or taken), DLOCK_ECONN (no
 * renewal could be confirmed before the lease ran out). It must not make blocking calls.
 * One callback per handle; NULL removes it. Set it before acquiring. */
typedef void (*dlock_lost_cb)(dlock_lock *l, uint64_t owner, int reason, void *arg);
DLOCK_EXTERN int dlock_lock_on_lost(dlock_lock *l, dlock_lost_cb cb, void *arg);

/* Async face. owner is the application's non-zero id of the holder. cb runs exactly once,
 * on the loop thread, never inside the call, unless the call itself returns an error.
 * Call from the loop thread (async face) or any thread (blocking face). */
typedef void (*dlock_lock_cb)(dlock_lock *l, int status, void *arg);
DLOCK_EXTERN int dlock_lock_acquire_async(dlock_lock *l, uint64_t owner, int64_t wait_ms,
                                          int64_t lease_ms, dlock_lock_cb cb, void *arg);
DLOCK_EXTERN int dlock_lock_release_async(dlock_lock *l, uint64_t owner, dlock_lock_cb cb,
                                          void *arg);

#ifdef __cplusplus
}
#endif

#endif
