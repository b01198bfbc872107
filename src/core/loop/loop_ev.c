/* SPDX-License-Identifier: MIT */
/* loop_ev.c — the loop adapter over libev (loop.h): the one file of dlock that includes
 * <ev.h>.
 *
 * Each watcher of loop.h is a libev watcher plus the callback it calls, kept in its
 * owner's opaque storage. A connection's socket has two io watchers, one for reading and
 * one for writing, which sock.c starts and stops as it needs them. */
#include <errno.h>
#include <ev.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "loop/loop.h"
#include "dlock/adapters/libev.h" /* the application's declaration of dlock_client_new_on_loop:
                                     the compiler checks it against loop.h's here */

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

/* The loop share this thread borrowed, while it does (dlock__loop_borrow). */
static _Thread_local dlock__loop_share *borrowed;

/* A watcher of loop changed: if a borrower did it, the poll must wake to see it. */
static void changed(dlock__loop *loop) {
    if (borrowed && borrowed->loop == loop)
        borrowed->changed = true;
}

dlock__loop *dlock__loop_new(void) {
    return ev_loop_new(EVFLAG_AUTO);
}

void dlock__loop_free(dlock__loop *loop) {
    ev_loop_destroy(loop);
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
    changed(loop);
}

void dlock__loop_timer_stop(dlock__loop *loop, dlock__loop_timer *t) {
    ev_timer_stop(loop, &timer_of(t)->watcher);
    changed(loop);
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
    changed(loop);
}

void dlock__loop_wake_stop(dlock__loop *loop, dlock__loop_wake *w) {
    ev_async_stop(loop, &wake_of(w)->watcher);
    changed(loop);
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
    changed(loop);
}

void dlock__loop_io_lend(dlock__loop *loop, dlock__loop_io *io) {
    /* no changed(): a poll that sleeps on io wakes at most once for it, and libev then
     * drops the descriptor from its set (it reads an event nobody wants as "forget it") */
    ev_io_stop(loop, &io_of(io)->watcher);
}

void dlock__loop_io_stop(dlock__loop *loop, dlock__loop_io *io) {
    ev_io_stop(loop, &io_of(io)->watcher);
    changed(loop);
}

/* ---- lending the loop (loop.h) ---------------------------------------------------------- */

/* libev calls these around its poll (ev_set_loop_release_cb): the only time the I/O
 * thread does not hold share->mu. */
static void release_for_poll(struct ev_loop *loop) {
    dlock__loop_share *share = ev_userdata(loop);
    share->polling = true;
    pthread_mutex_unlock(&share->mu);
    share->let_go(share->let_go_arg);
}

static void acquire_after_poll(struct ev_loop *loop) {
    dlock__loop_share *share = ev_userdata(loop);
    /* A borrower that sees this gives the mutex up at once: a caller whose calls end
     * without I/O (a local query in a loop) could otherwise keep taking it first. */
    atomic_store(&share->io_wants, true);
    pthread_mutex_lock(&share->mu);
    atomic_store(&share->io_wants, false);
    share->polling = false;
}

static void nudged(void *arg) {
    (void)arg; /* waking the poll was all: the loop's next turn sees the new watchers */
}

void dlock__loop_share_init(dlock__loop_share *share, dlock__loop *loop, dlock__loop_fn let_go,
                            void *let_go_arg) {
    memset(share, 0, sizeof(*share));
    pthread_mutex_init(&share->mu, NULL);
    share->loop = loop;
    share->let_go = let_go;
    share->let_go_arg = let_go_arg;
    atomic_init(&share->io_wants, false);
    atomic_init(&share->leading, false);
    share->bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); /* -1: callers never lead */
    dlock__loop_wake_init(&share->nudge, nudged, NULL);
    dlock__loop_wake_start(loop, &share->nudge);
    ev_set_userdata(loop, share);
    ev_set_loop_release_cb(loop, release_for_poll, acquire_after_poll);
}

void dlock__loop_share_destroy(dlock__loop_share *share) {
    dlock__loop_wake_stop(share->loop, &share->nudge);
    ev_set_loop_release_cb(share->loop, NULL, NULL);
    if (share->bell >= 0)
        close(share->bell);
    pthread_mutex_destroy(&share->mu);
}

void dlock__loop_run_shared(dlock__loop_share *share) {
    pthread_mutex_lock(&share->mu);
    share->running = true;
    ev_run(share->loop, 0);
    share->running = false;
    pthread_mutex_unlock(&share->mu);
    share->let_go(share->let_go_arg);
}

bool dlock__loop_borrow(dlock__loop_share *share) {
    if (pthread_mutex_trylock(&share->mu) != 0)
        return false;
    if (!share->polling || atomic_load(&share->io_wants)) {
        /* the I/O thread has not started or has ended, or its poll is over */
        pthread_mutex_unlock(&share->mu);
        return false;
    }
    share->changed = false;
    borrowed = share;
    return true;
}

bool dlock__loop_take(dlock__loop_share *share) {
    pthread_mutex_lock(&share->mu);
    if (!share->running) {
        pthread_mutex_unlock(&share->mu);
        return false;
    }
    share->changed = false;
    borrowed = share;
    return true;
}

void dlock__loop_bell_ring(int bell) {
    uint64_t one = 1;
    ssize_t n;
    do /* a full counter (never here: it is emptied at each look) would still be rung */
        n = write(bell, &one, sizeof(one));
    while (n < 0 && errno == EINTR);
}

void dlock__loop_bell_clear(int bell) {
    uint64_t count;
    while (read(bell, &count, sizeof(count)) < 0 && errno == EINTR)
        ;
}

void dlock__loop_give_back(dlock__loop_share *share) {
    /* first come, first run; one may defer or take back others */
    while (share->ndeferred > 0) {
        dlock__loop_fn fn = share->deferred[0].fn;
        void *arg = share->deferred[0].arg;
        share->ndeferred--;
        memmove(&share->deferred[0], &share->deferred[1],
                (size_t)share->ndeferred * sizeof(share->deferred[0]));
        fn(arg);
    }
    borrowed = NULL;
    if (share->changed)
        ev_async_send(share->loop, &wake_of(&share->nudge)->watcher);
    pthread_mutex_unlock(&share->mu);
    share->let_go(share->let_go_arg);
}

bool dlock__loop_held_here(const dlock__loop *loop) {
    return borrowed && borrowed->loop == loop;
}

bool dlock__loop_defer(dlock__loop *loop, dlock__loop_fn fn, void *arg) {
    dlock__loop_share *share = borrowed;
    if (!share || share->loop != loop)
        return false;
    for (int i = 0; i < share->ndeferred; i++)
        if (share->deferred[i].fn == fn && share->deferred[i].arg == arg)
            return true;
    if (share->ndeferred == DLOCK__LOOP_DEFER_MAX)
        return false;
    share->deferred[share->ndeferred].fn = fn;
    share->deferred[share->ndeferred].arg = arg;
    share->ndeferred++;
    return true;
}

void dlock__loop_undefer(dlock__loop *loop, dlock__loop_fn fn, void *arg) {
    dlock__loop_share *share = borrowed;
    if (!share || share->loop != loop)
        return;
    for (int i = 0; i < share->ndeferred; i++) {
        if (share->deferred[i].fn == fn && share->deferred[i].arg == arg) {
            memmove(&share->deferred[i], &share->deferred[i + 1],
                    (size_t)(share->ndeferred - i - 1) * sizeof(share->deferred[0]));
            share->ndeferred--;
            return;
        }
    }
}
