/* SPDX-License-Identifier: MIT */
/* sched.h — the client's timers: one binary heap on one loop timer (sched.c). Core files
 * only; a primitive starts timers through dlock__client_timer_* (dlock_int.h). */
#ifndef DLOCK_CORE_SCHED_H
#define DLOCK_CORE_SCHED_H

#include "base/base.h"
#include "loop/loop.h"

/* Every timer of a client lives in one binary heap driven by one loop timer. Timers due at
 * the same millisecond fire in the order they were started. */

typedef struct dlock__sched {
    dlock__loop *loop; /* NULL: no loop, a test drives dlock__sched_run_due */
    dlock__loop_timer watcher;
    dlock__timer **heap;
    size_t count, cap;
    uint64_t next_seq;
    int64_t (*now_ms)(void); /* the clock; tests may replace it */
} dlock__sched;

void dlock__sched_init(dlock__sched *s, dlock__loop *loop);
void dlock__sched_close(dlock__sched *s); /* drops every timer without firing it */
void dlock__timer_init(dlock__timer *t, dlock__timer_fn fn, void *arg);
int dlock__timer_start_at(dlock__sched *s, dlock__timer *t, int64_t due_ms); /* restarts */
int dlock__timer_start(dlock__sched *s, dlock__timer *t, int64_t delay_ms);
void dlock__timer_stop(dlock__sched *s, dlock__timer *t);
bool dlock__timer_active(const dlock__timer *t);
/* Fire every timer due at now_ms (the loop's timer does this; tests call it directly). */
void dlock__sched_run_due(dlock__sched *s, int64_t now_ms);

#endif
