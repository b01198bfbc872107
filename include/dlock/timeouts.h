/* SPDX-License-Identifier: MIT */
/* dlock/timeouts.h — the two special times a call may take, included by every public
 * header whose calls wait or lease (lock.h, spinlock.h, semaphore.h, latch.h), and by the
 * header of any new primitive whose calls wait.
 *
 * DLOCK_FOREVER as a wait_ms: wait until the object is obtained (the call then ends only
 * with it, an error, or DLOCK_ECANCELED when its handle is freed). Any other wait_ms is
 * >= 0; 0 means one attempt.
 *
 * DLOCK_WATCHDOG as a lease_ms: hold until released; the client's watchdog keeps the
 * lease alive (see lock.h).
 *
 * Both are -1, defined only if not defined yet (an application's own definition with the
 * same value does no harm). This header declares no function. */
#ifndef DLOCK_TIMEOUTS_H
#define DLOCK_TIMEOUTS_H

#ifndef DLOCK_FOREVER
#define DLOCK_FOREVER (-1) /* wait: until obtained */
#endif

#ifndef DLOCK_WATCHDOG
#define DLOCK_WATCHDOG (-1) /* lease: hold until released; the watchdog renews it */
#endif

#endif
