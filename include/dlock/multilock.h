/* dlock/multilock.h — composite locks: MultiLock (all members or none) and RedLock (a
 * quorum of members on independent Redis masters).
 *
 * Both return an ordinary dlock_lock handle: the blocking calls of dlock/lock.h work on it
 * (acquire, try_acquire, release, force_release, is_locked, is_held, hold_count, ttl,
 * token, on_lost). The async face is not available on composites yet: the async calls
 * return DLOCK_EINVAL. The members are the application's handles, made with
 * dlock_lock_new / dlock_fencedlock_new / dlock_fairlock_new on any clients; they must
 * outlive the composite, must not be composites themselves, and their lost callbacks are
 * taken over by the composite (it reports a member's loss through its own).
 *
 * dlock_lock_free on a composite frees it at once (it has no async calls to cancel; a
 * RedLock round still waiting for members keeps what it needs until they answer) and
 * hands the members' lost callbacks back; free it before its members. A member freed
 * first refuses every call with DLOCK_ECLOSED (dlock.h, "Freeing a handle"). */
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
 * the fenced members' tokens of the latest acquisition. DLOCK_EINVAL: no members, a NULL
 * or repeated member, a composite member, a member of another composite. */
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
 * round). See docs/multilock.md for what RedLock does and does not guarantee. */
DLOCK_EXTERN int dlock_redlock_new(dlock_lock *const *locks, size_t n, dlock_lock **out);

#ifdef __cplusplus
}
#endif

#endif
