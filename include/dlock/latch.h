/* SPDX-License-Identifier: MIT */
/* dlock/latch.h — the count-down latch (Redisson RCountDownLatch).
 *
 * A count in Redis that any client counts down; waiters are released when it reaches
 * zero. Unlike Java's CountDownLatch it can be set again once it has finished.
 *
 * Every call's comment ends with its return codes in dlock.h's form; the callback
 * contract and "Freeing a handle" are dlock.h's too. A key of another type is DLOCK_EREDIS
 * (WRONGTYPE). Blocking calls are safe from any thread but the client's loop thread
 * (DLOCK_EDEADLK there). */
#ifndef DLOCK_LATCH_H
#define DLOCK_LATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "dlock/client.h"
#include "dlock/export.h"
#include "dlock/timeouts.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dlock_latch dlock_latch;

/* A latch named name (any bytes but NUL, up to 64 KiB) on client c. No I/O; any thread.
 * The handle is the application's; free it with dlock_latch_free() before the client.
 * *out is written only on success.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL c or out, NULL or empty name, a name longer than
 *   64 KiB); DLOCK_ENOMEM. */
DLOCK_EXTERN int dlock_latch_new(dlock_client *c, const char *name, dlock_latch **out);

/* Frees the handle; no I/O. From this call on every call on l is refused with
 * DLOCK_ECLOSED, also from callbacks. Calls in flight complete: awaits with
 * DLOCK_ECANCELED, a count down with its outcome; l stays valid inside their callbacks and
 * its memory goes after the last one. On the loop thread it returns at once (callbacks on
 * later turns); on another thread after they have all run. See "Freeing a handle" in
 * dlock.h. NULL is a no-op.
 *
 * Returns: nothing. */
DLOCK_EXTERN void dlock_latch_free(dlock_latch *l);

/* Sets the count if the latch is unset or finished (trySetCount). *was_set (may be NULL)
 * says whether it did. count 0 sets nothing (the latch is already at zero). Blocking: any
 * thread but the loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL l, count < 0); DLOCK_ENOMEM; DLOCK_ECONN;
 *   DLOCK_EAUTH; DLOCK_EREDIS; DLOCK_ECANCELED; DLOCK_ECLOSED; DLOCK_EDEADLK;
 *   DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_latch_try_set_count(dlock_latch *l, int64_t count, bool *was_set);

/* Counts down by one; at zero the latch is deleted and every waiter released. Counting
 * down a finished latch does nothing. Blocking: any thread but the loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL l); DLOCK_ENOMEM; DLOCK_ECONN (the count may or may
 *   not have gone down: a count down is not sent twice); DLOCK_EAUTH; DLOCK_EREDIS;
 *   DLOCK_ECANCELED; DLOCK_ECLOSED; DLOCK_EDEADLK; DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_latch_count_down(dlock_latch *l);

/* The remaining count, into *out (0 when unset or finished). Blocking: any thread but the
 * loop thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL l or out); DLOCK_ENOMEM; DLOCK_ECONN; DLOCK_EAUTH;
 *   DLOCK_EREDIS (the key holds something else than a count); DLOCK_ECANCELED;
 *   DLOCK_ECLOSED; DLOCK_EDEADLK; DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_latch_count(dlock_latch *l, int64_t *out);

/* Waits until the count is zero, for at most wait_ms (0 = look once, DLOCK_FOREVER = no
 * limit). Woken by the message of the last count down, and re-checks on a timer too, so a
 * lost message delays it but never blocks it forever. Blocking: any thread but the loop
 * thread.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL l, wait_ms below 0 and not DLOCK_FOREVER);
 *   DLOCK_ENOMEM; DLOCK_ETIMEDOUT (not zero in time); DLOCK_ECONN; DLOCK_EAUTH;
 *   DLOCK_EREDIS (as count); DLOCK_ECANCELED (l freed while it waits); DLOCK_ECLOSED;
 *   DLOCK_EDEADLK; DLOCK_ENOPERM (the command, or the channel it waits on). */
DLOCK_EXTERN int dlock_latch_await(dlock_latch *l, int64_t wait_ms);

/* Async twin of dlock_latch_await. cb runs as dlock.h's callback contract says. Call from
 * the loop thread (async face) or any thread (blocking face).
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL l or cb, wait_ms as await); DLOCK_ENOMEM;
 *   DLOCK_ECLOSED.
 * Callback status: DLOCK_OK; DLOCK_ENOMEM; DLOCK_ETIMEDOUT; DLOCK_ECONN; DLOCK_EAUTH;
 *   DLOCK_EREDIS; DLOCK_ECANCELED (l or the client freed while it waits); DLOCK_ECLOSED (the
 *   client closing); DLOCK_ENOPERM (as await). */
typedef void (*dlock_latch_cb)(dlock_latch *l, int status, void *arg);
DLOCK_EXTERN int dlock_latch_await_async(dlock_latch *l, int64_t wait_ms, dlock_latch_cb cb,
                                         void *arg);

/* Async twin of dlock_latch_count_down; cb and threads as dlock_latch_await_async.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL l or cb); DLOCK_ENOMEM; DLOCK_ECLOSED.
 * Callback status: DLOCK_OK; DLOCK_ENOMEM; DLOCK_ECONN (as count_down); DLOCK_EAUTH;
 *   DLOCK_EREDIS; DLOCK_ECANCELED; DLOCK_ECLOSED; DLOCK_ENOPERM. */
DLOCK_EXTERN int dlock_latch_count_down_async(dlock_latch *l, dlock_latch_cb cb, void *arg);

#ifdef __cplusplus
}
#endif

#endif
