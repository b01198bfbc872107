/* home_timer.c — TEMPORARY: timers on a client's loop for the composites (a round's answer
 * budget, RedLock's pause between rounds), on the client's own scheduler.
 *
 * dlock_int.h offers primitives no timer of their own (they wait through the waiting
 * engine), and a composite waits for no Redis object, so this file reaches into the core
 * (core.h). It goes once dlock_int.h offers these three calls; until then it is the one
 * file outside src/core that includes core.h. */
#include "composite.h"
#include "core.h"

void dlock__home_timer_init(dlock__timer *t, dlock__timer_fn fn, void *arg) {
    dlock__timer_init(t, fn, arg);
}

void dlock__home_timer_start(dlock_client *home, dlock__timer *t, int64_t delay_ms) {
    if (dlock__client_closing(home))
        return; /* its scheduler is gone */
    if (dlock__timer_start(&home->sched, t, delay_ms) != DLOCK_OK)
        dlock__log(home, DLOCK_LOG_ERROR, "composite lock: out of memory for a timer");
}

void dlock__home_timer_stop(dlock_client *home, dlock__timer *t) {
    dlock__timer_stop(&home->sched, t);
}
