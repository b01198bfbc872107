/* SPDX-License-Identifier: MIT */
/* dlock/multilock.h — composite locks: MultiLock (all members or none) and RedLock (a
 * quorum of members on independent Redis masters).
 *
 * Both return a dlock_lock handle: every call of dlock/lock.h works on it (acquire,
 * try_acquire, release, force_release, is_locked, is_held, hold_count, ttl, token, on_lost,
 * and the async face dlock_lock_acquire_async / dlock_lock_release_async, wait_ms 0 being
 * one attempt). The members are the application's lock handles of any kind but a
 * composite (dlock_lock_new, dlock_fencedlock_new, dlock_fairlock_new, dlock_spinlock_new,
 * a read-write lock's half), on any clients; they must outlive the composite, and their
 * lost callbacks are taken over by the composite (it reports a member's loss through its
 * own).
 *
 * Threads. A composite runs on the loop thread of its first member's client (locks[0]):
 * its async callbacks and its lost callback run there, never inside the call. It asks its
 * members at once (queries too: a member whose server is down costs one command time-out
 * per query, not one per member) through their async faces, whose answers are carried to
 * that thread. A blocking call is refused with DLOCK_EDEADLK on the loop thread of any
 * member's client, whose answer it would wait for; hold_count and token read the
 * composite's own record and may be called from its callbacks.
 *
 * dlock_lock_free on a composite follows dlock.h's "Freeing a handle": from then on its
 * calls are DLOCK_ECLOSED; an acquire in flight completes with DLOCK_ECANCELED and what it
 * took of the members is given back; other calls in flight complete with their outcome.
 * It hands the members' lost callbacks back at once; free it before its members. A member
 * freed first refuses every call with DLOCK_ECLOSED.
 *
 * Return codes: a composite's calls return what dlock/lock.h lists for them, a member's
 * failure becoming the composite's (a member freed first: DLOCK_ECLOSED); DLOCK_EDEADLK on
 * the loop thread of any member's client, but for hold_count, token and on_lost. */
#ifndef DLOCK_MULTILOCK_H
#define DLOCK_MULTILOCK_H

#include <stddef.h>

#include "dlock/export.h"
#include "dlock/lock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* MultiLock (Redisson RedissonMultiLock): acquire takes every member or none. Members are
 * taken in one canonical order (by name, then Redis server), so two MultiLocks over
 * overlapping sets never deadlock, with the wait shared across them; a member that cannot
 * be had in time makes every member already taken be released. Members are held under
 * the watchdog while the others are taken, then given the caller's lease (or kept under
 * the watchdog with DLOCK_WATCHDOG). release releases every member, continuing past one
 * that fails, and returns the first error. A member lost makes the composite lost.
 * is_locked / is_held: every member is; hold_count: the calling thread's acquisitions of
 * the composite not yet released; ttl: the least of the members'; token: the largest of
 * the fenced members' tokens of the latest acquisition. No I/O; any thread. *out is
 * written only on success; the caller owns it and frees it with dlock_lock_free() before
 * the members.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL locks or out, n 0, a NULL or repeated member, a
 *   composite member, a member of another composite); DLOCK_ENOMEM. */
DLOCK_EXTERN int dlock_multilock_new(dlock_lock *const *locks, size_t n, dlock_lock **out);

/* RedLock (the Redis "distlock" algorithm), members on n independent masters (n odd,
 * usually 5). acquire sends to every member at once, each with a deadline much shorter
 * than the lease, and holds the lock when at least n/2+1 members agree AND the validity
 * (lease - time taken - drift, drift = lease/100 + 2 ms, measured on the monotonic clock
 * from before the first send) is still positive; otherwise it releases every member and
 * tries again after a random pause, until the wait runs out (DLOCK_ETIMEDOUT). ttl is the
 * remaining validity: the quorum-th longest member TTL minus the drift. With
 * DLOCK_WATCHDOG the members' watchdogs extend them, and the composite counts as lost
 * once fewer than a quorum are still held. Fenced members (all or none: DLOCK_EINVAL
 * otherwise): token is the largest token of the majority that granted the lock, and
 * before acquire returns a majority of members has its token counter raised to it, so
 * tokens rise from holder to holder even when their majorities differ (a second parallel
 * round). See docs/multilock.md for what RedLock does and does not guarantee. No I/O; any
 * thread; ownership as dlock_multilock_new.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (as dlock_multilock_new; fenced and unfenced members
 *   mixed); DLOCK_ENOMEM. */
DLOCK_EXTERN int dlock_redlock_new(dlock_lock *const *locks, size_t n, dlock_lock **out);

#ifdef __cplusplus
}
#endif

#endif
