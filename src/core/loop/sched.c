/* SPDX-License-Identifier: MIT */
/* sched.c — the client's one place for timers.
 *
 * Waits, reply timeouts, reconnect backoff and the watchdog tick are all dlock__timer
 * entries in one binary min-heap ordered by (due time, start order), driven by a single
 * timer of the loop (loop.h) armed for the heap's top. Timers are embedded in their owners'
 * structs, so starting one allocates nothing but (rarely) a bigger heap array. */
#include <stdint.h>
#include <string.h>

#include "loop/sched.h"

static bool earlier(const dlock__timer *a, const dlock__timer *b) {
    return a->due_ms < b->due_ms || (a->due_ms == b->due_ms && a->seq < b->seq);
}

static void heap_set(dlock__sched *s, size_t i, dlock__timer *t) {
    s->heap[i] = t;
    t->heap_index = i;
}

static void sift_up(dlock__sched *s, size_t i) {
    dlock__timer *t = s->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!earlier(t, s->heap[parent]))
            break;
        heap_set(s, i, s->heap[parent]);
        i = parent;
    }
    heap_set(s, i, t);
}

static void sift_down(dlock__sched *s, size_t i) {
    dlock__timer *t = s->heap[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= s->count)
            break;
        if (child + 1 < s->count && earlier(s->heap[child + 1], s->heap[child]))
            child++;
        if (!earlier(s->heap[child], t))
            break;
        heap_set(s, i, s->heap[child]);
        i = child;
    }
    heap_set(s, i, t);
}

/* Arms the loop's timer for the heap's top, or stops it when the heap is empty. */
static void rearm(dlock__sched *s) {
    if (!s->loop)
        return;
    if (s->count == 0) {
        dlock__loop_timer_stop(s->loop, &s->watcher);
        return;
    }
    dlock__loop_timer_start(s->loop, &s->watcher, s->heap[0]->due_ms - s->now_ms());
}

static void on_watcher(void *arg) {
    dlock__sched *s = arg;
    dlock__sched_run_due(s, s->now_ms());
}

void dlock__sched_init(dlock__sched *s, dlock__loop *loop) {
    memset(s, 0, sizeof(*s));
    s->loop = loop;
    s->now_ms = dlock__now_ms;
    dlock__loop_timer_init(&s->watcher, on_watcher, s);
}

void dlock__sched_close(dlock__sched *s) {
    for (size_t i = 0; i < s->count; i++)
        s->heap[i]->heap_index = SIZE_MAX;
    if (s->loop)
        dlock__loop_timer_stop(s->loop, &s->watcher);
    dlock__free(s->heap);
    s->heap = NULL;
    s->count = s->cap = 0;
}

void dlock__timer_init(dlock__timer *t, dlock__timer_fn fn, void *arg) {
    memset(t, 0, sizeof(*t));
    t->heap_index = SIZE_MAX;
    t->fn = fn;
    t->arg = arg;
}

bool dlock__timer_active(const dlock__timer *t) {
    return t->heap_index != SIZE_MAX;
}

static void remove_at(dlock__sched *s, size_t i) {
    dlock__timer *t = s->heap[i];
    t->heap_index = SIZE_MAX;
    s->count--;
    if (i == s->count)
        return;
    heap_set(s, i, s->heap[s->count]);
    if (i > 0 && earlier(s->heap[i], s->heap[(i - 1) / 2]))
        sift_up(s, i);
    else
        sift_down(s, i);
}

int dlock__timer_start_at(dlock__sched *s, dlock__timer *t, int64_t due_ms) {
    bool was_top = dlock__timer_active(t) && t->heap_index == 0;
    if (dlock__timer_active(t))
        remove_at(s, t->heap_index);
    if (s->count == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        dlock__timer **heap = dlock__realloc(s->heap, cap * sizeof(*heap));
        if (!heap)
            return DLOCK_ENOMEM;
        s->heap = heap;
        s->cap = cap;
    }
    t->due_ms = due_ms;
    t->seq = s->next_seq++;
    heap_set(s, s->count++, t);
    sift_up(s, t->heap_index);
    if (t->heap_index == 0 || was_top)
        rearm(s);
    return DLOCK_OK;
}

int dlock__timer_start(dlock__sched *s, dlock__timer *t, int64_t delay_ms) {
    int64_t now = s->now_ms();
    if (delay_ms < 0)
        delay_ms = 0;
    return dlock__timer_start_at(s, t, delay_ms > INT64_MAX - now ? INT64_MAX : now + delay_ms);
}

void dlock__timer_stop(dlock__sched *s, dlock__timer *t) {
    if (!dlock__timer_active(t))
        return;
    bool was_top = t->heap_index == 0;
    remove_at(s, t->heap_index);
    if (was_top)
        rearm(s);
}

void dlock__sched_run_due(dlock__sched *s, int64_t now_ms) {
    /* Only timers started before this pass run in it: one that a callback (re)starts for
     * "now" runs on the next loop turn, so a timer that keeps restarting itself cannot
     * starve the loop. */
    uint64_t started_before = s->next_seq;
    while (s->count > 0 && s->heap[0]->due_ms <= now_ms && s->heap[0]->seq < started_before) {
        dlock__timer *t = s->heap[0];
        remove_at(s, 0);
        t->fn(t, t->arg);
    }
    rearm(s);
}
