/* SPDX-License-Identifier: MIT */
/* loop_ev.c — the loop adapter over libev (loop.h): the one file of dlock that includes
 * <ev.h>.
 *
 * Each watcher of loop.h is a libev watcher plus the callback it calls, kept in its
 * owner's opaque storage. A connection's socket has two io watchers, one for reading and
 * one for writing, which sock.c starts and stops as it needs them. */
#include <ev.h>

#include "core.h"
#include "dlock/adapters/libev.h" /* the application's declaration of dlock_client_new_on_loop:
                                     the compiler checks it against core.h's here */

typedef struct timer_impl {
    ev_timer watcher; /* first: libev hands its callback this address */
    dlock__loop_fn fn;
    void *arg;
} timer_impl;

typedef struct io_impl {
    ev_io watcher; /* first, as above */
    dlock__loop_fn fn;
    void *arg;
} io_impl;

typedef struct wake_impl {
    ev_async watcher; /* first, as above */
    dlock__loop_fn fn;
    void *arg;
} wake_impl;

_Static_assert(sizeof(timer_impl) <= sizeof(dlock__loop_timer), "DLOCK__LOOP_WATCHER_SIZE");
_Static_assert(sizeof(wake_impl) <= sizeof(dlock__loop_wake), "DLOCK__LOOP_WATCHER_SIZE");
_Static_assert(sizeof(io_impl) <= sizeof(dlock__loop_io), "DLOCK__LOOP_WATCHER_SIZE");
_Static_assert(_Alignof(io_impl) <= _Alignof(dlock__loop_io), "io alignment");
_Static_assert(_Alignof(timer_impl) <= _Alignof(dlock__loop_timer), "timer alignment");
_Static_assert(_Alignof(wake_impl) <= _Alignof(dlock__loop_wake), "wake-up alignment");

static timer_impl *timer_of(dlock__loop_timer *t) {
    return (timer_impl *)(void *)t->opaque;
}
static wake_impl *wake_of(dlock__loop_wake *w) {
    return (wake_impl *)(void *)w->opaque;
}
static io_impl *io_of(dlock__loop_io *io) {
    return (io_impl *)(void *)io->opaque;
}

/* ---- the loop --------------------------------------------------------------------------- */

dlock__loop *dlock__loop_new(void) {
    return ev_loop_new(EVFLAG_AUTO);
}

void dlock__loop_free(dlock__loop *loop) {
    ev_loop_destroy(loop);
}

void dlock__loop_run(dlock__loop *loop) {
    ev_run(loop, 0);
}

void dlock__loop_break(dlock__loop *loop) {
    ev_break(loop, EVBREAK_ALL);
}

/* ---- timers ----------------------------------------------------------------------------- */

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop;
    (void)revents;
    timer_impl *t = (timer_impl *)w;
    t->fn(t->arg);
}

void dlock__loop_timer_init(dlock__loop_timer *t, dlock__loop_fn fn, void *arg) {
    timer_impl *impl = timer_of(t);
    ev_init(&impl->watcher, on_timer);
    impl->fn = fn;
    impl->arg = arg;
}

void dlock__loop_timer_start(dlock__loop *loop, dlock__loop_timer *t, int64_t delay_ms) {
    timer_impl *impl = timer_of(t);
    ev_timer_stop(loop, &impl->watcher);
    ev_timer_set(&impl->watcher, delay_ms > 0 ? (double)delay_ms / 1000.0 : 0.0, 0.0);
    ev_timer_start(loop, &impl->watcher);
}

void dlock__loop_timer_stop(dlock__loop *loop, dlock__loop_timer *t) {
    ev_timer_stop(loop, &timer_of(t)->watcher);
}

/* ---- wake-ups --------------------------------------------------------------------------- */

static void on_wake(struct ev_loop *loop, ev_async *w, int revents) {
    (void)loop;
    (void)revents;
    wake_impl *impl = (wake_impl *)w;
    impl->fn(impl->arg);
}

void dlock__loop_wake_init(dlock__loop_wake *w, dlock__loop_fn fn, void *arg) {
    wake_impl *impl = wake_of(w);
    ev_async_init(&impl->watcher, on_wake);
    impl->fn = fn;
    impl->arg = arg;
}

void dlock__loop_wake_start(dlock__loop *loop, dlock__loop_wake *w) {
    ev_async_start(loop, &wake_of(w)->watcher);
}

void dlock__loop_wake_stop(dlock__loop *loop, dlock__loop_wake *w) {
    ev_async_stop(loop, &wake_of(w)->watcher);
}

void dlock__loop_wake_send(dlock__loop *loop, dlock__loop_wake *w) {
    ev_async_send(loop, &wake_of(w)->watcher);
}

/* ---- file descriptors ------------------------------------------------------------------ */

static void on_io(struct ev_loop *loop, ev_io *w, int revents) {
    (void)loop;
    (void)revents;
    io_impl *impl = (io_impl *)w;
    impl->fn(impl->arg); /* may stop and free the watcher: nothing touches it after */
}

void dlock__loop_io_init(dlock__loop_io *io, int fd, bool for_write, dlock__loop_fn fn, void *arg) {
    io_impl *impl = io_of(io);
    ev_io_init(&impl->watcher, on_io, fd, for_write ? EV_WRITE : EV_READ);
    impl->fn = fn;
    impl->arg = arg;
}

void dlock__loop_io_start(dlock__loop *loop, dlock__loop_io *io) {
    ev_io_start(loop, &io_of(io)->watcher); /* libev ignores a start of a started watcher */
}

void dlock__loop_io_stop(dlock__loop *loop, dlock__loop_io *io) {
    ev_io_stop(loop, &io_of(io)->watcher);
}
