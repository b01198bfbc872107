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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
/* Runs loop on the calling thread until a callback calls dlock__loop_break. */
void dlock__loop_run(dlock__loop *loop);
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

#endif
