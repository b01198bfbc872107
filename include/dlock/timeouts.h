/* dlock/timeouts.h — the two special times a call may take, shared by every public
 * header whose calls wait or lease (lock.h, semaphore.h, latch.h).
 *
 * DLOCK_FOREVER as a wait_ms: wait until the object is obtained (the call then ends only
 * with it, an error, or DLOCK_ECANCELED when its handle is freed). Any other wait_ms is
 * >= 0; 0 means one attempt.
 *
 * DLOCK_WATCHDOG as a lease_ms: hold until released; the client's watchdog keeps the
 * lease alive (see lock.h).
 *
 * Both are -1. They are defined only if not defined yet, with the same value, so a header
 * that still defines them itself does no harm. */
#ifndef DLOCK_TIMEOUTS_H
#define DLOCK_TIMEOUTS_H

#ifndef DLOCK_FOREVER
#define DLOCK_FOREVER (-1) /* wait: until obtained */
#endif

#ifndef DLOCK_WATCHDOG
#define DLOCK_WATCHDOG (-1) /* lease: hold until released; the watchdog renews it */
#endif

#endif
