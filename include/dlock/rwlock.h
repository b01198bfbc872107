/* SPDX-License-Identifier: MIT */
/* dlock/rwlock.h — the read-write lock (Redisson RReadWriteLock).
 *
 * Any number of readers, or one writer. The two halves are ordinary dlock_lock handles:
 * every call of dlock/lock.h works on each (acquire, try_acquire, release, leases and the
 * watchdog, the lost callback, the async face, is_locked as Redisson: the read half is
 * locked while readers hold it, the write half while a writer does).
 *
 * The writer may also take read holds (downgrade: releasing the write hold while holding
 * reads leaves the lock read-locked). A reader cannot upgrade: its write acquire waits
 * like any writer's and times out; it never deadlocks silently. Each read hold has its
 * own lease; a reader whose client died stops counting when its leases end, however long
 * the other readers renew theirs. While a writer waits, new readers wait behind it, so a
 * steady stream of readers cannot keep a writer out (Redisson has no such rule).
 *
 * Each half's calls return the codes dlock/lock.h lists for them; a half is never
 * fenced. */
#ifndef DLOCK_RWLOCK_H
#define DLOCK_RWLOCK_H

#include "dlock/client.h"
#include "dlock/export.h"
#include "dlock/lock.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dlock_rwlock dlock_rwlock;

/* A read-write lock named name (any bytes but NUL, up to 64 KiB) on client c. No I/O; any
 * thread. The handle is the application's; free it with dlock_rwlock_free() before the
 * client. *out is written only on success.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL c or out, NULL or empty name, a name longer than
 *   64 KiB); DLOCK_ENOMEM. */
DLOCK_EXTERN int dlock_rwlock_new(dlock_client *c, const char *name, dlock_rwlock **out);

/* The read half and the write half: ordinary dlock_lock handles, borrowed from rw (they
 * live as long as rw; never free them with dlock_lock_free). Neither is fenced
 * (dlock_lock_token is DLOCK_EINVAL). No I/O; any thread.
 *
 * Returns: the half; NULL for NULL rw. */
DLOCK_EXTERN dlock_lock *dlock_rwlock_read(dlock_rwlock *rw);
DLOCK_EXTERN dlock_lock *dlock_rwlock_write(dlock_rwlock *rw);

/* Frees rw and its halves, as dlock_lock_free does each: calls on either half are refused
 * with DLOCK_ECLOSED from now on, and the callbacks of calls in flight on a half get that
 * half, valid during the callback; rw itself is gone when this returns (do not call
 * dlock_rwlock_read/write from those callbacks). See "Freeing a handle" in dlock.h. NULL
 * is a no-op.
 *
 * Returns: nothing. */
DLOCK_EXTERN void dlock_rwlock_free(dlock_rwlock *rw);

#ifdef __cplusplus
}
#endif

#endif
