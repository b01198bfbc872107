/* SPDX-License-Identifier: MIT */
/* engine.h — the engine floor: what every primitive's call runs on. The waiting engine
 * (wait.c), the watchdog (renew.c), the submit door between the caller's thread and the
 * loop (submit.c), handles (handle.c), an op's failure texts (op_error.c) and the
 * object-and-call helper of the non-lock primitives (object.c); and the client's engine
 * part. Their faces for the primitives are in dlock_int.h and dlock_object.h. */
#ifndef DLOCK_CORE_ENGINE_H
#define DLOCK_CORE_ENGINE_H

#include <poll.h>
#include <pthread.h>

#include "topology/topology.h"

/* ---- the waiting engine (wait.c) -------------------------------------------------------- */

typedef struct dlock__waits {
    dlock__map queues;         /* channel -> wait queue */
    dlock__waiter *no_channel; /* the waits without a channel (they sleep at their hint) */
    bool turns_refused;        /* the server refused a turn channel: ask for none again */
} dlock__waits;

void dlock__waits_init(dlock__waits *w);

void dlock__waits_close(dlock__waits *w, dlock_client *c); /* cancels every waiter */

/* ---- the watchdog registry (renew.c) ---------------------------------------------------- */

typedef struct dlock__renew {
    dlock__lease *held_head, *held_tail; /* held leases, ordered by confirmed_until_ms */
    dlock__lease *pending;               /* registered, acquire not yet confirmed */
    size_t held_count;
    dlock__timer tick_timer;
    dlock__timer expiry_timer;   /* the earliest confirmed_until_ms */
    uint64_t ticks, renew_calls; /* counters for tests and diagnostics */
    uint64_t renew_answers;      /* renew_calls settled (answered, failed or canceled) */
    int short_leases;            /* holds on a lease shorter than watchdog_ms, unconfirmed */
    int64_t short_lease_ms;      /* (a lock's grant: dlock__renew_short_lease) and its ms */
} dlock__renew;

void dlock__renew_init(dlock__renew *r, dlock_client *c);
/* The shortest lease the watchdog keeps or is about to keep (an acquire in flight), each
 * watchdog_ms long, or a short lease a hold stands on until confirmed
 * (dlock__renew_short_lease); 0 when there is none. The client gives it to the net floor as a hook
 * (dlock__client_net.shortest_lease_ms): the links' reconnect backoff stays below a third
 * of it (link.c). */
int64_t dlock__renew_shortest_lease_ms(const dlock_client *c);
void dlock__renew_close(dlock__renew *r, dlock_client *c); /* forgets every lease, no callback */
/* Renews every held lease now, not at the next tick (the client landed on a new master). */
void dlock__renew_now(dlock_client *c);

/* ---- the submit door (submit.c) --------------------------------------------------------- */

typedef struct dlock__submit {
    pthread_mutex_t mu;
    dlock__op *head, *tail;
    dlock__loop_wake wakeup;
    dlock__op *done; /* blocking calls completed, to wake when the loop is let go (under mu) */
} dlock__submit;

void dlock__submit_init(dlock__submit *s, dlock_client *c);
void dlock__submit_close(dlock__submit *s, dlock_client *c); /* completes queued ops: ECANCELED */
/* Wakes the callers of the blocking calls completed so far (the loop share's hook, run
 * whenever the loop is let go: loop.h). arg: the client's dlock__submit. */
void dlock__submit_wake_callers(void *arg);

/* ---- the lone caller's spin (spin.c) ------------------------------------------------------ */

#define DLOCK__SPIN_DEFAULT_US 50 /* dlock_options.reply_spin_us */
#define DLOCK__SPIN_MAX_US 1000
#define DLOCK__SPIN_BACKOFF_MAX 1024 /* waits that sleep at once after misses in a row, at most */
#define DLOCK__SPIN_GAVE_WAY_US 10   /* a turn of the spin this long ran another thread: stop */

/* One client's: touched only by the caller that reads its own reply (one at a time). */
typedef struct dlock__spin {
    int64_t budget_us; /* dlock_options.reply_spin_us; 0: never spin */
    unsigned skip;     /* waits left that sleep at once */
    unsigned backoff;  /* what the next miss sets skip to: 1, 2, 4 ... DLOCK__SPIN_BACKOFF_MAX */
} dlock__spin;

/* What a wait's spin came to (dlock_stats counts it). */
typedef struct dlock__spin_outcome {
    bool spun;       /* it spun (else it slept at once, or its reply was there already) */
    bool hit;        /* the reply came while it spun */
    int64_t spun_us; /* how long it spun */
} dlock__spin_outcome;

void dlock__spin_init(dlock__spin *s, int64_t budget_us);
/* poll(fds, n, -1) for a reply that is due, spinning first (poll with no timeout) for up to
 * the budget when the spin is not backing off and a CPU is free for it. Returns poll's. */
int dlock__spin_poll(dlock__spin *s, struct pollfd *fds, nfds_t n, dlock__spin_outcome *out);
/* The policy, apart (for its tests): the budget of this wait (0: sleep at once), then what
 * it came to. */
int64_t dlock__spin_due(dlock__spin *s);
void dlock__spin_ended(dlock__spin *s, bool replied);
/* A place for one more spinner of the process (at most one per CPU it may keep busy:
 * dlock__cpus_of_this_process); every true is followed by dlock__spinner_leave. */
bool dlock__spinner_enter(void);
void dlock__spinner_leave(void);

/* ---- handles (handle.c) ---------------------------------------------------------------- */

/* dlock_last_error() of a call on a freed handle (handle.c, and submit.c, which checks it
 * under the lock that orders it before the handle's free). */
#define DLOCK__HANDLE_CLOSED_TEXT "the handle has been freed: it takes no more calls"

/* ---- the client's engine part ------------------------------------------------------------- */

typedef struct dlock__client_engine {
    dlock__client_topology topology; /* first: see base.h */
    bool own_loop;                   /* the blocking face: the client runs its own loop */
    dlock__loop_share loop_share;    /* own_loop: lent to the calling threads (loop.h) */
    dlock__spin spin;                /* own_loop: the caller reading its own reply */
    dlock__spin wait_spin;           /* the same, for a reply a WAIT holds (spin.c) */
    pthread_t loop_thread;
    int callback_depth; /* > 0 while a user callback runs (async face) */
    dlock__submit submit;
    dlock__waits waits;
    dlock__renew renew;
    dlock__map shared; /* object key -> state shared by its handles */
} dlock__client_engine;

#define DLOCK__ENGINE(c) DLOCK__PART(dlock__client_engine, c)

#endif
