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
 * steady stream of readers cannot keep a writer out (Redisson has no such rule). */
#ifndef DLOCK_RWLOCK_H
#define DLOCK_RWLOCK_H

#include "dlock/client.h"
#include "dlock/export.h"
#include "dlock/lock.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dlock_rwlock dlock_rwlock;

/* A read-write lock named name on client c. No I/O. DLOCK_EINVAL, DLOCK_ENOMEM. */
DLOCK_EXTERN int dlock_rwlock_new(dlock_client *c, const char *name, dlock_rwlock **out);

/* The halves; borrowed: they live as long as rw. Never free them with dlock_lock_free. */
DLOCK_EXTERN dlock_lock *dlock_rwlock_read(dlock_rwlock *rw);
DLOCK_EXTERN dlock_lock *dlock_rwlock_write(dlock_rwlock *rw);

/* Frees rw and its halves, as dlock_lock_free does each: calls on either half are refused
 * with DLOCK_ECLOSED from now on, and the callbacks of calls in flight on a half get that
 * half, valid during the callback; rw itself is gone when this returns (do not call
 * dlock_rwlock_read/write from those callbacks). NULL is a no-op. */
DLOCK_EXTERN void dlock_rwlock_free(dlock_rwlock *rw);

#ifdef __cplusplus
}
#endif

#endif
