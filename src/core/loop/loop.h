/* SPDX-License-Identifier: MIT */
/* loop.h — the event loop, behind one adapter: loop_ev.c is the one file of dlock that
 * includes <ev.h>.
 *
 * The core asks four things of a loop: one-shot timers (the scheduler drives every timer
 * of a client with one), a wake-up that another thread may send (the submit door, the
 * client's stop), readiness of the connections' sockets (sock.c reads and writes them
 * itself), and run / break for the I/O thread of the blocking face. Another loop library would
 * replace loop_ev.c and the typedef below, and nothing else.
 *
 * Watchers live inside their owners' structs as opaque storage (loop_ev.c checks at
 * compile time that its watchers fit), so starting one never allocates and never fails.
 * Everything here runs on the loop's thread, except dlock__loop_wake_send. */
#ifndef DLOCK_LOOP_H
#define DLOCK_LOOP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dlock/client.h"

/* The loop itself: libev's struct ev_loop, declared here and defined only in <ev.h>. The
 * application hands its own to dlock_client_new_on_loop (dlock/adapters/libev.h). */
typedef struct ev_loop dlock__loop;

typedef void (*dlock__loop_fn)(void *arg);

#define DLOCK__LOOP_WATCHER_SIZE 96
typedef struct dlock__loop_timer {
    _Alignas(max_align_t) unsigned char opaque[DLOCK__LOOP_WATCHER_SIZE];
} dlock__loop_timer;
typedef struct dlock__loop_wake {
    _Alignas(max_align_t) unsigned char opaque[DLOCK__LOOP_WATCHER_SIZE];
} dlock__loop_wake;

/* A loop of dlock's own (the blocking face's I/O thread); NULL when none can be made. */
dlock__loop *dlock__loop_new(void);
void dlock__loop_free(dlock__loop *loop);
/* Ends dlock__loop_run_shared (below) once the running callback returns. */
void dlock__loop_break(dlock__loop *loop);

/* A one-shot timer: fn(arg) runs once, delay_ms (>= 0) after it was started. Starting a
 * started timer restarts it; stopping a stopped one does nothing. */
void dlock__loop_timer_init(dlock__loop_timer *t, dlock__loop_fn fn, void *arg);
void dlock__loop_timer_start(dlock__loop *loop, dlock__loop_timer *t, int64_t delay_ms);
void dlock__loop_timer_stop(dlock__loop *loop, dlock__loop_timer *t);

/* A wake-up: once started, fn(arg) runs on the loop's thread after any thread sent it;
 * sends that come before it runs are folded into one run. */
void dlock__loop_wake_init(dlock__loop_wake *w, dlock__loop_fn fn, void *arg);
void dlock__loop_wake_start(dlock__loop *loop, dlock__loop_wake *w);
void dlock__loop_wake_stop(dlock__loop *loop, dlock__loop_wake *w);
void dlock__loop_wake_send(dlock__loop *loop, dlock__loop_wake *w); /* any thread */

/* Readiness of one file descriptor, for reading or for writing: once started, fn(arg) runs
 * on each loop turn on which fd is readable (writable), until stopped. Level-triggered:
 * data left unread makes it run again. Stopping a watcher from inside its own fn, and
 * then freeing its memory, is allowed. */
typedef struct dlock__loop_io {
    _Alignas(max_align_t) unsigned char opaque[DLOCK__LOOP_WATCHER_SIZE];
} dlock__loop_io;
void dlock__loop_io_init(dlock__loop_io *io, int fd, bool for_write, dlock__loop_fn fn, void *arg);
void dlock__loop_io_start(dlock__loop *loop, dlock__loop_io *io);
void dlock__loop_io_stop(dlock__loop *loop, dlock__loop_io *io);

/* ---- lending the loop to the threads that call into it (the blocking face) -----------------
 *
 * Without this, a blocking call costs two thread wake-ups besides the reply's: the caller
 * wakes the I/O thread to start it, and the I/O thread wakes the caller when it completes.
 * The first is avoidable: while the I/O thread sleeps in the poll it has nothing to do
 * with the loop, so the caller may start its call itself and write its command, and the
 * I/O thread wakes only for the reply.
 *
 * The I/O thread runs the loop holding share->mu (dlock__loop_run_shared) and lets go of
 * it only for the poll. A caller borrows the loop only then (dlock__loop_borrow never
 * waits: when the I/O thread is busy, the caller queues its call as before, and the busy
 * thread takes it in the same turn; so does a caller that finds the I/O thread back from
 * the poll and waiting for the mutex: however often callers come, the loop is lent
 * between the I/O thread's turns, never instead of them). A borrower runs loop-thread
 * code, with two rules:
 *   - the poll sleeps on the watchers it had when it began, so a change the borrower makes
 *     to one (a timer, a socket to watch) wakes the I/O thread when the loop is given back,
 *     and takes effect at once;
 *   - work that must happen before the give-back registers with dlock__loop_defer (a
 *     socket's write: all the bytes of one borrow leave in one send).
 * What reacts to I/O (replies, failures, user callbacks) stays on the I/O thread.
 *
 * The other wake-up, of the caller whose call completed, is made when the loop is let go
 * (the share's let_go hook): a caller woken while the I/O thread still held the loop would
 * find it busy, and on a machine with few CPUs would preempt the I/O thread mid-turn. */
#define DLOCK__LOOP_DEFER_MAX 8
typedef struct dlock__loop_share {
    pthread_mutex_t mu;
    dlock__loop *loop;
    bool running;          /* dlock__loop_run_shared has begun and not ended; under mu */
    bool polling;          /* the I/O thread sleeps in the poll; under mu */
    int bell;              /* a caller waiting for its own reply polls it too (below); -1: none */
    atomic_bool leading;   /* a caller waits for its own reply (below): one at a time */
    atomic_bool io_wants;  /* the poll is over, the I/O thread waits for mu: lend no more */
    bool changed;          /* the borrower changed a watcher; under mu */
    dlock__loop_fn let_go; /* runs each time the loop is let go (the poll, a give-back) */
    void *let_go_arg;
    dlock__loop_wake nudge; /* wakes the poll after such a change */
    int ndeferred;
    struct {
        dlock__loop_fn fn;
        void *arg;
    } deferred[DLOCK__LOOP_DEFER_MAX];
} dlock__loop_share;

/* Readies share for a loop of dlock's own, before its thread runs it. let_go(arg) runs
 * each time the loop is let go, just after: before the I/O thread polls, when a borrower
 * gives it back, when the loop ends. */
void dlock__loop_share_init(dlock__loop_share *share, dlock__loop *loop, dlock__loop_fn let_go,
                            void *let_go_arg);
void dlock__loop_share_destroy(dlock__loop_share *share);
/* Runs the loop on the calling thread (the I/O thread) until a callback calls
 * dlock__loop_break, holding share->mu except while it polls. */
void dlock__loop_run_shared(dlock__loop_share *share);
/* True when the calling thread now holds the loop (the I/O thread sleeps in the poll);
 * false at once otherwise. Every true is followed by dlock__loop_give_back. */
bool dlock__loop_borrow(dlock__loop_share *share);
/* Runs the deferred work in the order it came, wakes the poll if a watcher changed, and
 * lets go of the loop. */
void dlock__loop_give_back(dlock__loop_share *share);
/* True on a thread that borrowed loop now. */
bool dlock__loop_held_here(const dlock__loop *loop);
/* On a borrowing thread: fn(arg) runs at the give-back (once, however often it is asked
 * for). False when the loop is not borrowed by this thread, or the list is full: the
 * caller then does what it would do on the loop thread. */
bool dlock__loop_defer(dlock__loop *loop, dlock__loop_fn fn, void *arg);
/* Takes back a deferred fn(arg) (its arg is about to go), if there is one. */
void dlock__loop_undefer(dlock__loop *loop, dlock__loop_fn fn, void *arg);

/* ---- the lone caller reads its own reply ---------------------------------------------------
 *
 * Borrowing saves the wake-up that starts a call, not the one that ends it: the reply
 * still wakes the I/O thread, which then wakes the caller. A caller alone on its client
 * (nothing else in flight) may instead wait on the connection's socket itself and read its
 * reply there, as a hand-written client over a blocking socket does: one wake-up per call.
 * For that the I/O thread must not be watching that socket, or the reply would wake it
 * too: the connection lends its socket (sock.c stops the watcher with
 * dlock__loop_io_lend, which does not wake the poll; the poll may still wake once for the
 * first reply, and then forgets the socket), and keeps it lent across the caller's
 * following calls. Anything else that needs the socket takes it back (a command of someone
 * else's, a failure, a short idle time), and rings the share's bell, which the waiting
 * caller polls beside the socket: it then leaves the reply to the I/O thread as before.
 * The caller reads with dlock__loop_take, under the same rules as a borrower; and since
 * what reacts to a reply may call the application back, those callbacks are carried to the
 * I/O thread, and the call returns after they ran (dlock__user_callbacks_elsewhere,
 * dlock__op_post_carried: dlock_int.h). */

/* Stops io without waking the poll (a lent socket: loop.h above). */
void dlock__loop_io_lend(dlock__loop *loop, dlock__loop_io *io);
/* Takes the loop for a caller whose socket is readable: waits while the I/O thread runs a
 * turn. False once the loop has ended (the client is closing). Every true is followed by
 * dlock__loop_give_back. */
bool dlock__loop_take(dlock__loop_share *share);
/* Rings the bell (any thread; the eventfd of dlock__loop_share.bell). */
void dlock__loop_bell_ring(int bell);
/* Empties the bell before a caller looks at why it rang. */
void dlock__loop_bell_clear(int bell);

/* The async face's constructor as the library sees it: dlock/adapters/libev.h declares it
 * for the application with <ev.h>; loop_ev.c, which includes both, has the compiler check
 * that the two agree (client.c defines it). */
DLOCK_EXTERN int dlock_client_new_on_loop(const dlock_options *o, dlock__loop *loop,
                                          dlock_client **out);

#endif
