/* SPDX-License-Identifier: MIT */
/* client_timer.c — a timer on a client's loop for a primitive that waits for no Redis
 * object: a composite lock's answer budget and RedLock's pause between rounds.
 *
 * Everything that waits for an object waits through the waiting engine (wait.c), which
 * owns its timers; these three calls are for the rest, so that no primitive reaches into
 * the client's scheduler itself. Loop thread only. A closing client's timers never fire:
 * its scheduler is gone, and what was waiting is ended by the handle life cycle. */
#include "client/client.h"

void dlock__client_timer_init(dlock__timer *t, dlock__timer_fn fn, void *arg) {
    dlock__timer_init(t, fn, arg);
}

void dlock__client_timer_start(dlock_client *c, dlock__timer *t, int64_t delay_ms) {
    if (dlock__client_closing(c))
        return;
    if (dlock__timer_start(&DLOCK__NET(c)->sched, t, delay_ms) != DLOCK_OK)
        dlock__log(c, DLOCK_LOG_ERROR, "out of memory for a timer");
}

void dlock__client_timer_stop(dlock_client *c, dlock__timer *t) {
    dlock__timer_stop(&DLOCK__NET(c)->sched, t);
}
