/* dlock/latch.h — the count-down latch (Redisson RCountDownLatch).
 *
 * A count in Redis that any client counts down; waiters are released when it reaches
 * zero. Unlike Java's CountDownLatch it can be set again once it has finished. Every call
 * returns DLOCK_OK or a negative DLOCK_E*, with the detail in dlock_last_error(). */
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

/* A latch named name on client c. No I/O. DLOCK_EINVAL, DLOCK_ENOMEM. */
DLOCK_EXTERN int dlock_latch_new(dlock_client *c, const char *name, dlock_latch **out);

/* Frees the handle; no I/O. From this call on every call on l is refused with
 * DLOCK_ECLOSED, also from callbacks. Calls in flight complete: awaits with
 * DLOCK_ECANCELED, a count down with its outcome; l stays valid inside their callbacks and
 * its memory goes after the last one. On the loop thread it returns at once (callbacks on
 * later turns); on another thread after they have all run. See "Freeing a handle" in
 * dlock.h. NULL ok. */
DLOCK_EXTERN void dlock_latch_free(dlock_latch *l);

/* Sets the count if the latch is unset or finished (trySetCount). *was_set (may be NULL)
 * says whether it did. count >= 0; 0 sets nothing (the latch is already at zero). */
DLOCK_EXTERN int dlock_latch_try_set_count(dlock_latch *l, int64_t count, bool *was_set);

/* Counts down by one; at zero the latch is deleted and every waiter released. Counting
 * down a finished latch does nothing. */
DLOCK_EXTERN int dlock_latch_count_down(dlock_latch *l);

/* The remaining count (0 when unset or finished). */
DLOCK_EXTERN int dlock_latch_count(dlock_latch *l, int64_t *out);

/* Waits until the count is zero: DLOCK_OK, or DLOCK_ETIMEDOUT after wait_ms (0 = look
 * once, DLOCK_FOREVER = no limit). Woken by the message of the last count down, and re-checks on a
 * timer too, so a lost message delays it but never blocks it forever. */
DLOCK_EXTERN int dlock_latch_await(dlock_latch *l, int64_t wait_ms);

/* Async twins: cb runs exactly once on the loop thread, never inside the call, unless the
 * call returns an error. */
typedef void (*dlock_latch_cb)(dlock_latch *l, int status, void *arg);
DLOCK_EXTERN int dlock_latch_await_async(dlock_latch *l, int64_t wait_ms, dlock_latch_cb cb,
                                         void *arg);
DLOCK_EXTERN int dlock_latch_count_down_async(dlock_latch *l, dlock_latch_cb cb, void *arg);

#ifdef __cplusplus
}
#endif

#endif
