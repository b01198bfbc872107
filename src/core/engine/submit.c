/* SPDX-License-Identifier: MIT */
/* submit.c — the door between the user's threads and the client's loop thread.
 *
 * Every public call becomes an op that starts on the loop thread. Other threads push ops
 * on a mutex-protected queue and wake the loop (a loop.h wake-up); the loop drains the whole
 * queue in one turn, so the commands of many threads leave in one write. A blocking call
 * is "submit the op, wait on a semaphore until it completes"; an async call is "submit
 * the op, its complete callback runs later". Async calls made on the loop thread go
 * through the same queue, so a callback never runs inside the call that started it.
 *
 * calls_in_flight (dlock_client_stats) counts calls: raised when a call is queued or
 * started here, lowered when it completes, once (op->counted). Internal work that rides
 * the same queue (dlock__op_post: a free made on the loop thread, a MultiLock member's
 * answer carried to its home client) is not a call and is not counted. Counting it and
 * settling it when its start is done would make the gauge move for work nobody waits for,
 * and would need every such start to remember the settling (a handle's free may destroy
 * the memory its op lives in before it could): those it forgot grew the gauge without
 * end under MultiLock. The call an internal op serves is counted already, as its own op. */
#include <poll.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

void dlock__op_init(dlock__op *op, dlock_client *c, dlock__op_fn start) {
    memset(op, 0, sizeof(*op));
    op->client = c;
    op->start = start;
}

bool dlock__on_loop_thread(const dlock_client *c) {
    /* a thread that borrowed the loop runs loop-thread code and takes the same paths */
    return pthread_equal(pthread_self(), DLOCK__ENGINE(c)->loop_thread) ||
           (DLOCK__ENGINE(c)->own_loop && dlock__loop_held_here(DLOCK__NET(c)->loop));
}

static void drain(void *arg) {
    dlock__submit *s = arg;
    pthread_mutex_lock(&s->mu);
    dlock__op *op = s->head;
    s->head = s->tail = NULL;
    pthread_mutex_unlock(&s->mu);
    while (op) {
        dlock__op *next = op->next;
        op->next = NULL;
        op->start(op);
        op = next;
    }
}

void dlock__submit_init(dlock__submit *s, dlock_client *c) {
    s->head = s->tail = NULL; /* s->mu: made and destroyed with the client (client.c) */
    dlock__loop_wake_init(&s->wakeup, drain, s);
    dlock__loop_wake_start(DLOCK__NET(c)->loop, &s->wakeup);
}

void dlock__submit_close(dlock__submit *s, dlock_client *c) {
    pthread_mutex_lock(&s->mu);
    dlock__op *op = s->head;
    s->head = s->tail = NULL;
    pthread_mutex_unlock(&s->mu);
    while (op) {
        dlock__op *next = op->next;
        dlock__op_fail(op, DLOCK_ECANCELED, "client closed before the call started");
        dlock__op_complete(op, DLOCK_ECANCELED);
        op = next;
    }
    dlock__loop_wake_stop(DLOCK__NET(c)->loop, &s->wakeup);
}

/* Whether op may start: checked under the lock that close takes, so an op is either
 * drained by close or refused here, never stranded; and a handle's free queues its last
 * op through here too (handle.c): under this lock, an op is either queued before it or
 * refused. */
static int admit(const dlock__op *op) {
    if (atomic_load(&DLOCK__NET(op->client)->closing))
        return dlock__fail(DLOCK_ECLOSED, "client is closed or closing");
    if (op->handle && atomic_load(&op->handle->closed))
        return dlock__fail(DLOCK_ECLOSED, DLOCK__HANDLE_CLOSED_TEXT);
    return DLOCK_OK;
}

/* A call starts to count in calls_in_flight; called under the submit lock, so that close
 * (which completes what it drains) never sees a queued call not counted yet. */
static void count_call(dlock__op *op) {
    op->counted = true;
    dlock__stat_add(op->client, DLOCK__STAT_CALLS, 1);
}

static int enqueue(dlock__op *op, bool is_call) {
    dlock_client *c = op->client;
    dlock__submit *s = &DLOCK__ENGINE(c)->submit;
    pthread_mutex_lock(&s->mu);
    int rc = admit(op);
    if (rc != DLOCK_OK) {
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    op->next = NULL;
    bool was_empty = s->head == NULL;
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    if (is_call)
        count_call(op);
    pthread_mutex_unlock(&s->mu);
    if (was_empty)
        dlock__loop_wake_send(DLOCK__NET(c)->loop, &s->wakeup);
    return DLOCK_OK;
}

int dlock__op_submit(dlock__op *op) {
    return enqueue(op, true);
}

int dlock__op_post(dlock__op *op) {
    return enqueue(op, false);
}

/* Whether this thread holds c's own loop: it is the I/O thread, or borrowed the loop. */
static bool holds_own_loop(const dlock_client *c) {
    return DLOCK__ENGINE(c)->own_loop && dlock__on_loop_thread(c);
}

void dlock__submit_wake_callers(void *arg) {
    dlock__submit *s = arg;
    pthread_mutex_lock(&s->mu);
    dlock__op *op = s->done;
    s->done = NULL;
    pthread_mutex_unlock(&s->mu);
    while (op) {
        dlock__op *next = op->next; /* read first: a woken caller's op is gone */
        sem_post(op->blocking_waiter);
        op = next;
    }
}

void dlock__op_complete(dlock__op *op, int status) {
    if (op->counted) { /* before: complete may free op */
        op->counted = false;
        dlock__stat_add(op->client, DLOCK__STAT_CALLS, -1);
    }
    op->status = status;
    if (status != DLOCK_OK && !op->error_text[0])
        dlock__op_fail_reply(op, status, NULL);
    if (op->blocking_waiter) {
        dlock__submit *s = &DLOCK__ENGINE(op->client)->submit;
        if (!holds_own_loop(op->client)) {
            sem_post(op->blocking_waiter);
            return;
        }
        pthread_mutex_lock(&s->mu); /* woken when the loop is let go */
        op->next = s->done;
        s->done = op;
        pthread_mutex_unlock(&s->mu);
        return;
    }
    dlock__set_last_error(op->error_text);
    dlock_client *c = op->client;
    dlock__user_callback_enter(c);
    op->complete(op); /* may free op */
    dlock__user_callback_leave(c);
}

bool dlock__user_callbacks_elsewhere(const dlock_client *c) {
    return DLOCK__ENGINE(c)->own_loop && dlock__loop_held_here(DLOCK__NET(c)->loop);
}

void dlock__user_callback_enter(dlock_client *c) {
    /* The application's callbacks run on the loop's own thread, never on one that holds
     * the loop for a call of its own: one that borrowed it to start the call (no start
     * completes another op), or took it to read its reply (a primitive carries what that
     * reply would call back to the loop thread: dlock__user_callbacks_elsewhere). Either
     * way here is a broken rule. */
    if (DLOCK__ENGINE(c)->own_loop && dlock__loop_held_here(DLOCK__NET(c)->loop))
        abort();
    DLOCK__ENGINE(c)->callback_depth++;
}

void dlock__user_callback_leave(dlock_client *c) {
    DLOCK__ENGINE(c)->callback_depth--;
}

/* The socket the call's command went out on, lent to this thread (loop.h, "the lone
 * caller"), or -1. Only for a call alone on its client that sent one command (sent since
 * sent_before; a write under sync_replicas with the WAIT that acknowledges it alone) and
 * nothing else is in flight or queued: the replies on the socket are its own, and what
 * reacts to them can only be this call (and the lost callbacks a reply may fire, which go
 * to the I/O thread). One connection of plain bytes: not in a Cluster (a command per node),
 * not TLS. A call that sent more, or beside others, gives a lending still on back to the I/O
 * thread, which reads its reply. *waits: the reply due first is a WAIT's. */
static int lend_for(const dlock__op *op, uint64_t sent_before, uint64_t *generation, bool *waits) {
    dlock_client *c = op->client;
    dlock__conn *conn = &DLOCK__NET(c)->conn;
    uint64_t sent = conn->commands_sent - sent_before;
    if (DLOCK__TOPOLOGY(c)->cluster || !conn->link.sock || sent == 0)
        return -1; /* no reply of its own to read (the call needed no I/O): nothing changes */
    /* one caller at a time: two polling one socket could each read the other's reply, and
     * the one whose reply was read would sleep on; the bell wakes one of them */
    bool alone = sent == 1 && !atomic_load(&DLOCK__ENGINE(c)->loop_share.leading) &&
                 conn->link.state == LINK_READY &&
                 (conn->inflight.count == 1 || dlock__conn_one_write_and_its_wait(conn)) &&
                 conn->pending.count == 0 &&
                 atomic_load(&DLOCK__BASE(c)->stats.v[DLOCK__STAT_CALLS]) == 1;
    *generation = conn->link.generation;
    *waits = dlock__conn_next_is_wait_answer(conn);
    return dlock__sock_lend(conn->link.sock, DLOCK__ENGINE(c)->loop_share.bell, alone);
}

/* The lending of generation's socket, if it is still on; under the loop. */
static dlock__sock *still_lent(dlock_client *c, uint64_t generation) {
    dlock__link *link = &DLOCK__NET(c)->conn.link;
    if (link->generation != generation || !link->sock || !dlock__sock_lent(link->sock))
        return NULL;
    return link->sock;
}

/* Waits for the call's reply on the lent socket fd and reads it on this thread, until the
 * call is over, or the lending ends (the bell): the I/O thread then finishes the call as
 * for any other. The wait spins a little before it sleeps (spin.c). No time limit of its
 * own: the reply timeout runs on the I/O thread, and ends the lending when it drops the
 * connection. What the call's reply sent on (a script sent again as EVAL) is read here
 * too; replies still due when the call is over are the I/O thread's to read: the lending
 * ends. */
static void read_own_reply(dlock__op *op, int fd, uint64_t generation, bool waits) {
    dlock_client *c = op->client;
    dlock__loop_share *share = &DLOCK__ENGINE(c)->loop_share;
    for (;;) {
        struct pollfd ready[2] = {{.fd = fd, .events = POLLIN},
                                  {.fd = share->bell, .events = POLLIN}};
        /* waits (read under the loop: the lending's start, then each turn's): the reply
         * due next is a WAIT's, a replica's round trip away rather than the server's; its
         * spin learns apart (spin.c) */
        dlock__spin_outcome spin = {0};
        dlock__client_engine *e = DLOCK__ENGINE(c);
        int polled = dlock__spin_poll(waits ? &e->wait_spin : &e->spin, ready, 2, &spin);
        if (spin.spun) {
            dlock__stat_add(c, DLOCK__STAT_REPLY_SPINS, 1);
            dlock__stat_add(c, DLOCK__STAT_REPLY_SPIN_HITS, spin.hit ? 1 : 0);
            dlock__stat_add(c, DLOCK__STAT_REPLY_SPIN_US, spin.spun_us);
        }
        if (polled < 0)
            continue; /* EINTR */
        if (!dlock__loop_take(share))
            return; /* the client closes: that ends the call */
        if (ready[1].revents)
            dlock__loop_bell_clear(share->bell);
        dlock__sock *sock = still_lent(c, generation);
        if (sock && ready[0].revents)
            dlock__sock_read_lent(sock); /* may free sock */
        bool lent = still_lent(c, generation) != NULL;
        bool due = DLOCK__NET(c)->conn.inflight.count > 0 || DLOCK__NET(c)->conn.pending.count > 0;
        waits = dlock__conn_next_is_wait_answer(&DLOCK__NET(c)->conn);
        /* over once its completion uncounted it (read here, under the loop: its semaphore
         * may be posted later, by whichever thread lets go of the loop next) */
        bool over = !op->counted;
        dlock__loop_give_back(share); /* wakes this call's semaphore if it is over */
        if (!lent)
            return;
        if (!over) {
            if (due)
                continue; /* (the rest of) a reply of its own */
            return;       /* waiting for something else than a reply: a message, a timer */
        }
        if (due && dlock__loop_take(share)) {
            if ((sock = still_lent(c, generation)) != NULL &&
                (DLOCK__NET(c)->conn.inflight.count > 0 || DLOCK__NET(c)->conn.pending.count > 0))
                dlock__sock_lend(sock, share->bell, false);
            dlock__loop_give_back(share);
        }
        return;
    }
}

/* A blocking call started on the caller's thread, which borrows the loop while the I/O
 * thread sleeps in its poll (loop.h): no wake-up of the I/O thread to start it. Alone on
 * its client, the call also reads its own reply (read_own_reply); otherwise the I/O thread
 * does, and wakes it. Only when nothing is queued, so calls still start in the order they
 * were made. DLOCK__NOT_STARTED: the loop is busy (its thread takes the op from the queue
 * in the turn it is in), or this is not a client with a loop of its own. */
#define DLOCK__NOT_STARTED 1
static int start_here(dlock__op *op) {
    dlock_client *c = op->client;
    if (!DLOCK__ENGINE(c)->own_loop || !dlock__loop_borrow(&DLOCK__ENGINE(c)->loop_share))
        return DLOCK__NOT_STARTED;
    dlock__submit *s = &DLOCK__ENGINE(c)->submit;
    pthread_mutex_lock(&s->mu);
    int rc = s->head ? DLOCK__NOT_STARTED : admit(op);
    if (rc == DLOCK_OK)
        count_call(op);
    pthread_mutex_unlock(&s->mu);
    int lent_fd = -1;
    uint64_t generation = 0;
    bool waits = false;
    if (rc == DLOCK_OK) {
        uint64_t sent_before = DLOCK__NET(c)->conn.commands_sent;
        op->start(op);
        lent_fd = lend_for(op, sent_before, &generation, &waits);
    }
    if (lent_fd >= 0)
        atomic_store(&DLOCK__ENGINE(c)->loop_share.leading, true); /* under the loop */
    dlock__loop_give_back(&DLOCK__ENGINE(c)->loop_share);
    if (lent_fd >= 0) {
        read_own_reply(op, lent_fd, generation, waits);
        atomic_store(&DLOCK__ENGINE(c)->loop_share.leading, false);
    }
    return rc;
}

/* Set on a thread that, reading its own reply, carried a callback to the loop thread
 * (dlock__op_post_carried): its call returns once that callback has run, as it would
 * have had the loop thread read the reply. */
static _Thread_local bool carried;

int dlock__op_post_carried(dlock__op *op) {
    int rc = dlock__op_post(op);
    if (rc == DLOCK_OK)
        carried = true;
    return rc;
}

static void barrier_start(dlock__op *op) {
    dlock__op_complete(op, DLOCK_OK);
}

int dlock__op_run(dlock__op *op) {
    dlock_client *c = op->client;
    if (dlock__on_loop_thread(c))
        return dlock__fail(DLOCK_EDEADLK, "blocking call on the client's loop thread");
    sem_t done;
    sem_init(&done, 0, 0);
    op->blocking_waiter = &done;
    int rc = start_here(op);
    if (rc == DLOCK__NOT_STARTED)
        rc = dlock__op_submit(op);
    if (rc == DLOCK_OK) {
        while (sem_wait(&done) != 0)
            ; /* EINTR: keep waiting, the op is still running */
        rc = op->status;
        if (carried) { /* an op that does nothing, queued behind what was carried */
            carried = false;
            dlock__op barrier;
            dlock__op_init(&barrier, c, barrier_start);
            (void)dlock__op_run(&barrier); /* a closing client ran or dropped it already */
        }
        dlock__set_last_error(op->error_text);
    }
    sem_destroy(&done);
    return rc;
}

/* ---- script arguments ------------------------------------------------------------------- */

void dlock__args_bin(dlock__args *a, const void *p, size_t len) {
    if (a->n >= DLOCK__ARGS_MAX)
        abort(); /* a primitive's fixed argument list outgrew DLOCK__ARGS_MAX */
    a->v[a->n] = p;
    a->len[a->n++] = len;
}

void dlock__args_str(dlock__args *a, const char *s) {
    dlock__args_bin(a, s, strlen(s));
}

void dlock__args_int(dlock__args *a, long long value) {
    if (a->nnumbers >= (int)(sizeof(a->numbers) / sizeof(a->numbers[0])))
        abort();
    char *buf = a->numbers[a->nnumbers++];
    dlock__args_bin(a, buf, dlock__decimal(buf, value));
}
