/* SPDX-License-Identifier: MIT */
/* dlock/spinlock.h — the spin lock (Redisson RSpinLock): a reentrant lock that uses no
 * pub/sub. A waiting owner subscribes to nothing and a release publishes nothing; a busy
 * owner tries again after an exponential backoff instead, 1 ms doubling to 128 ms, less a
 * random part of up to a quarter of each step, and never later than the holder's lease
 * runs out. Prefer it where pub/sub is dear (Redis Cluster, where every PUBLISH goes to
 * every node; a user without channel permissions) and holds are short; prefer
 * dlock_lock_new where waits are long (each waiting owner sends an attempt every 128 ms)
 * or arrival order matters (nobody is first in line). See docs/spinlock.md.
 *
 * In Redis it is the reentrant lock's hash N ("<client-id>:<owner>" -> hold count, PEXPIRE
 * = lease) and nothing else, as Redisson's RSpinLock: both share a name's lock. */
#ifndef DLOCK_SPINLOCK_H
#define DLOCK_SPINLOCK_H

#include "dlock/client.h"
#include "dlock/export.h"
#include "dlock/lock.h"
#include "dlock/timeouts.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A spin lock named name (any bytes but NUL, up to 64 KiB) on client c. No I/O.
 *
 * Ownership: the handle is the application's; free it with dlock_lock_free() before the
 * client. It is an ordinary dlock_lock: every call of dlock/lock.h works on it as on a
 * reentrant lock (acquire, try_acquire, release, force_release, is_locked, is_held,
 * hold_count, ttl, on_lost, the async face; leases and DLOCK_WATCHDOG alike), except that
 * it is not fenced (dlock_lock_token is DLOCK_EINVAL) and waits by backoff: a release
 * wakes nobody, and a waiter sees it at its next attempt.
 *
 * Threads: safe from any thread (it only allocates). The handle's calls follow
 * dlock/lock.h: blocking calls from any thread but the client's loop thread (DLOCK_EDEADLK
 * there); async callbacks and the lost callback on the loop thread. A waiting acquire
 * subscribes to nothing and a release publishes nothing, so no call on a spin lock is
 * DLOCK_ENOPERM for a channel (for a script's command or key it still may be).
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL c or out, NULL or empty name, a name longer than
 *   64 KiB); DLOCK_ENOMEM. *out is written only on DLOCK_OK. */
DLOCK_EXTERN int dlock_spinlock_new(dlock_client *c, const char *name, dlock_lock **out);

#ifdef __cplusplus
}
#endif

#endif
