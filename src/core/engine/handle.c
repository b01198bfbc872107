/* SPDX-License-Identifier: MIT */
/* handle.c — the life cycle of a primitive's handle and of the ops that work on it.
 *
 * A handle (a lock, a semaphore, ...) may be freed by the application while calls on it
 * are still queued or in Redis. Its life, as dlock_int.h states it: open -> closed by its
 * *_free (new calls refused, on any thread) -> freeing on the loop thread (its waits
 * canceled; ops already in Redis end with their outcome) -> gone when its last op has
 * ended. The memory outlives every callback of its ops, so a callback may read the handle
 * it gets; and since nothing can be queued on it once closed, no op can start on freed
 * memory. The free itself travels through the submit door (submit.c), behind the calls
 * made before it. */
#include <string.h>

#include "engine/engine.h"

void dlock__handle_init(dlock__handle *h, dlock_client *c, void (*destroy)(dlock__handle *)) {
    memset(h, 0, sizeof(*h));
    h->client = c;
    h->destroy = destroy;
}

int dlock__handle_check(const dlock__handle *h) {
    if (atomic_load(&h->closed))
        return dlock__fail(DLOCK_ECLOSED, DLOCK__HANDLE_CLOSED_TEXT);
    return DLOCK_OK;
}

/* Loop thread: the handle goes once it is being freed and its last op has ended. A
 * blocking free waiting for that returns after it. */
static void handle_destroy_if_done(dlock__handle *h) {
    if (!h->freeing || h->ops_in_flight > 0)
        return;
    dlock__op *waiter = h->free_waiter;
    h->destroy(h);
    if (waiter)
        dlock__op_complete(waiter, DLOCK_OK);
}

bool dlock__op_begin(dlock__op *op) {
    dlock__handle *h = op->handle;
    if (!h)
        return true;
    h->ops_in_flight++;
    if (atomic_load(&h->closed)) { /* queued before the free */
        dlock__op_fail(op, DLOCK_ECANCELED, "the handle was freed before the call started");
        dlock__op_end(op, DLOCK_ECANCELED);
        return false;
    }
    return true;
}

void dlock__op_end(dlock__op *op, int status) {
    dlock__handle *h = op->handle;
    dlock__op_complete(op, status); /* the async face may free op */
    if (h) {
        h->ops_in_flight--;
        handle_destroy_if_done(h);
    }
}

void dlock__op_end_reply(dlock__op *op, int status, const dlock__reply *reply) {
    dlock__op_fail_reply(op, status, reply);
    dlock__op_end(op, status);
}

/* Loop thread: cancel what waits on h; it goes when its last op ends. */
static void handle_free_on_loop(dlock__handle *h) {
    h->freeing = true;
    for (dlock__waiter *w = h->waiters; w; w = w->handle_next)
        dlock__wait_cancel(w);
    handle_destroy_if_done(h);
}

/* The free made on the loop thread, queued behind the calls made before it. */
static void free_start(dlock__op *o) {
    handle_free_on_loop(DLOCK__CONTAINER_OF(o, dlock__handle, free_call));
}

/* The free made off the loop thread: it completes when the handle is gone. */
typedef struct blocking_free {
    dlock__op op;
    dlock__handle *target;
} blocking_free;

static void blocking_free_start(dlock__op *o) {
    dlock__handle *h = ((blocking_free *)o)->target;
    h->free_waiter = o;
    handle_free_on_loop(h);
}

void dlock__handle_free(dlock__handle *h) {
    dlock_client *c = h->client;
    atomic_store(&h->closed, true);
    if (dlock__on_loop_thread(c)) {
        /* Through the submit queue all the same: async calls made just before are queued
         * there and must start (and see the handle closed) before it goes. */
        dlock__op_init(&h->free_call, c, free_start);
        h->free_call.complete = free_start; /* the client closed before it started */
        if (dlock__op_post(&h->free_call) != DLOCK_OK)
            handle_free_on_loop(h); /* the client is closing: its queue is drained already */
        return;
    }
    blocking_free op;
    dlock__op_init(&op.op, c, blocking_free_start);
    op.target = h;
    if (dlock__op_run(&op.op) != DLOCK_OK) {
        /* The client is closing: its loop runs nothing more and its watchdog has
         * forgotten every lease. Only the memory is left. */
        h->destroy(h);
    }
}
