/* SPDX-License-Identifier: MIT */
/* engine.c — the lock engine's foundation (engine.h): the state shared by every handle of
 * one name, the holds of each owner, the owner's sequence, and the life of an op. The calls
 * themselves are in engine_acquire.c, engine_release.c and engine_query.c; the ordinary
 * handle they serve is assembled in ordinary.c. This file is their ground: it calls no
 * other file of src/lock (the wait's hooks are engine_acquire.c's own). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* ---- state shared by the handles of one name -------------------------------------------- */

/* The last handle of the name is gone: stop renewing (the holds expire by their lease). */
static void state_destroy(void *p) {
    lock_state *st = p;
    bool closing = dlock__client_closing(st->client); /* then the leases are gone already */
    hold *h = st->holds;
    while (h) {
        hold *next = h->next;
        if (!closing)
            dlock__lease_drop(h->watchdog);
        dlock__free(h->waiter_channel);
        dlock__free(h);
        h = next;
    }
}

static void on_lease_lost(dlock__lease *lease, void *owner_ctx, int reason) {
    (void)lease;
    hold *h = owner_ctx;
    h->watchdog = NULL; /* the core frees the lease */
    dlock__holds_lost(h, reason);
}

static void state_init(lock_state *st, const lock_handle *l) {
    st->client = l->client;
    st->kind = l->kind;
    st->lease_ops.renew_script = l->kind->renew_script;
    st->lease_ops.lost = on_lease_lost;
}

/* The handle's shared state, found or made on first use. Every handle whose owners write
 * the same fields of N shares it, whatever its kind (a fair and a plain handle of one name
 * are one lock in Redis): the key is the name and the field suffix. */
static lock_state *state_of(lock_handle *l) {
    if (l->state)
        return l->state;
    const char *what = l->kind->field_suffix ? "lock-fields:write" : "lock-fields";
    char *key = dlock__name_prefixed(what, l->base.name);
    lock_state *st = key ? dlock__shared_get(l->client, key, sizeof(*st), state_destroy) : NULL;
    dlock__free(key);
    if (!st)
        return NULL;
    if (!st->client) /* new */
        state_init(st, l);
    l->next_of_state = st->handles;
    st->handles = l;
    l->state = st;
    return st;
}

/* ---- holds ------------------------------------------------------------------------------ */

hold *dlock__hold_find(lock_state *st, uint64_t owner) {
    for (hold *h = st->holds; h; h = h->next)
        if (h->owner == owner)
            return h;
    return NULL;
}

void dlock__owner_field_of(const lock_handle *l, uint64_t owner,
                           char field[DLOCK__LOCK_FIELD_MAX]) {
    size_t n = dlock__owner_field(l->client, owner, field);
    if (l->kind->field_suffix)
        snprintf(field + n, DLOCK__LOCK_FIELD_MAX - n, "%s", l->kind->field_suffix);
}

hold *dlock__hold_get(lock_handle *l, uint64_t owner) {
    lock_state *st = l->state;
    hold *h = dlock__hold_find(st, owner);
    if (h)
        return h;
    h = dlock__calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->state = st;
    h->owner = owner;
    dlock__owner_field_of(l, owner, h->field);
    h->next = st->holds;
    st->holds = h;
    return h;
}

/* A handle's loss goes to its composite when it is a member, else to its own callback. */
static void tell_lost(lock_handle *l, uint64_t owner, int reason) {
    if (l->handle.closed) /* a freed handle reports nothing more */
        return;
    lost_to to = l->member_lost.fn ? l->member_lost : l->lost;
    if (to.fn)
        to.fn(&l->base, owner, reason, to.arg);
}

static void tell_handles_lost(lock_state *st, uint64_t owner, int reason) {
    dlock__user_callback_enter(st->client);
    for (lock_handle *l = st->handles; l; l = l->next_of_state)
        tell_lost(l, owner, reason);
    dlock__user_callback_leave(st->client);
}

/* A loss found on a thread that may not call the application back, on its way to the
 * loop thread. It is queued before any later call on the handles (a free among them), so
 * st is still there when it runs. */
typedef struct lost_carried {
    dlock__op op;
    lock_state *st;
    uint64_t owner;
    int reason;
} lost_carried;

static void lost_carried_run(dlock__op *o) {
    lost_carried *c = DLOCK__CONTAINER_OF(o, lost_carried, op);
    tell_handles_lost(c->st, c->owner, c->reason);
    dlock__free(c);
}

static void lost_carried_dropped(dlock__op *o) { /* the client closed first */
    dlock__free(DLOCK__CONTAINER_OF(o, lost_carried, op));
}

void dlock__holds_lost(hold *h, int reason) {
    if (h->count <= 0)
        return;
    lock_state *st = h->state;
    /* saturated: a count is what Redis said, up to INT64_MAX (each lost hold is one
     * DLOCK_ELOST to report; past INT64_MAX nobody releases that often) */
    h->lost = h->count > INT64_MAX - h->lost ? INT64_MAX : h->lost + h->count;
    h->count = 0;
    dlock__hold_unwatch(h);
    dlock__stat_lease_lost(st->client);
    if (!dlock__user_callbacks_elsewhere(st->client)) {
        tell_handles_lost(st, h->owner, reason);
        return;
    }
    lost_carried *c = dlock__calloc(1, sizeof(*c));
    if (!c)
        return; /* the callback is missed; the owner's release still says DLOCK_ELOST */
    dlock__op_init(&c->op, st->client, lost_carried_run);
    c->op.complete = lost_carried_dropped;
    c->st = st;
    c->owner = h->owner;
    c->reason = reason;
    if (dlock__op_post_carried(&c->op) != DLOCK_OK)
        dlock__free(c);
}

static void set_lost_start(dlock__op *o) {
    lock_op *op = (lock_op *)o;
    if (!dlock__lock_op_begin(op))
        return;
    *(op->of_member ? &op->lock->member_lost : &op->lock->lost) = op->new_lost;
    dlock__lock_op_end(op, DLOCK_OK);
}

int dlock__lock_set_lost(lock_handle *l, bool of_member, lost_to to) {
    if (dlock__on_loop_thread(l->client)) {
        *(of_member ? &l->member_lost : &l->lost) = to;
        return DLOCK_OK;
    }
    lock_op op;
    dlock__lock_op_init(&op, l, set_lost_start, 0);
    op.of_member = of_member;
    op.new_lost = to;
    return dlock__lock_op_run(&op);
}

bool dlock__hold_watch(lock_handle *l, hold *h) {
    h->watchdog = dlock__lease_new(l->client, &h->state->lease_ops, l->base.name, h->field, h);
    return h->watchdog != NULL;
}

void dlock__hold_unwatch(hold *h) {
    if (h->watchdog) {
        dlock__lease_drop(h->watchdog);
        h->watchdog = NULL;
    }
}

static int64_t lease_value(const lock_handle *l, int64_t lease_ms) {
    return lease_ms == DLOCK_WATCHDOG ? dlock__client_watchdog_ms(l->client) : lease_ms;
}

dlock__lock_view dlock__view_of(const lock_handle *l, const hold *h, int64_t lease_ms) {
    return (dlock__lock_view){
        .client = l->client,
        .name = l->base.name,
        .channel = l->channel,
        .token_key = l->token_key,
        .field = h->field,
        .believed = h->count,
        .line = h->line,
        .lease_ms = lease_value(l, lease_ms),
        .data = l->kind_data,
    };
}

/* ---- the owner's sequence ------------------------------------------------------------------- */

/* (A sequence is needed when one owner's calls overlap on the async face, as when a RedLock's
 * round starts while a slow master has not yet answered the round before.) */
void dlock__hold_run(hold *h, lock_op *op, void (*send)(lock_op *op)) {
    op->send = send;
    if (!h->busy) {
        h->busy = true;
        send(op);
        return;
    }
    op->queue_next = NULL;
    if (h->queue_tail)
        h->queue_tail->queue_next = op;
    else
        h->queue_head = op;
    h->queue_tail = op;
}

/* The next of the owner's commands goes. Called before the settled op ends, since ending
 * it may free h. */
static void hold_next(hold *h) {
    lock_op *next = h->queue_head;
    if (!next) {
        h->busy = false;
        return;
    }
    h->queue_head = next->queue_next;
    if (!h->queue_head)
        h->queue_tail = NULL;
    next->send(next);
}

void dlock__hold_settled(lock_op *op, int status, int64_t hint_ms) {
    hold_next(op->hold);
    if (op->waiting)
        dlock__wait_result(&op->waiter, status, hint_ms);
    else
        dlock__lock_op_end(op, status);
}

/* ---- ops -------------------------------------------------------------------------------- */

void dlock__lock_op_init(lock_op *op, lock_handle *l, dlock__op_fn start, uint64_t owner) {
    memset(op, 0, sizeof(*op));
    dlock__op_init(&op->op, l->client, start);
    op->op.handle = &l->handle;
    op->lock = l;
    op->owner = owner;
}

bool dlock__lock_op_begin(lock_op *op) {
    if (!dlock__op_begin(&op->op))
        return false;
    if (!state_of(op->lock)) {
        dlock__lock_op_fail(op, DLOCK_ENOMEM, NULL);
        return false;
    }
    return true;
}

void dlock__lock_op_end(lock_op *op, int status) {
    dlock__op_end(&op->op, status);
}

void dlock__lock_op_fail(lock_op *op, int status, const dlock__reply *reply) {
    dlock__op_end_reply(&op->op, status, reply);
}

int dlock__lock_op_run(lock_op *op) {
    return dlock__op_run(&op->op);
}

static void async_complete(dlock__op *o) {
    lock_op *op = (lock_op *)o;
    if (op->face == FACE_ANSWER_CB)
        op->answer_cb(&op->lock->base, o->status, op->answer, op->arg);
    else
        op->cb(&op->lock->base, o->status, op->arg);
    dlock__free(op);
}

lock_op *dlock__lock_op_new(lock_handle *l, dlock__op_fn start, uint64_t owner) {
    lock_op *op = dlock__malloc(sizeof(*op));
    if (!op) {
        dlock__fail(DLOCK_ENOMEM, "out of memory");
        return NULL;
    }
    dlock__lock_op_init(op, l, start, owner);
    return op;
}

static int submit(lock_op *op) {
    op->op.complete = async_complete;
    int rc = dlock__op_submit(&op->op);
    if (rc != DLOCK_OK)
        dlock__free(op);
    return rc;
}

int dlock__lock_op_submit(lock_op *op, dlock_lock_cb cb, void *arg) {
    op->face = FACE_LOCK_CB;
    op->cb = cb;
    op->arg = arg;
    return submit(op);
}

int dlock__lock_op_submit_answer(lock_op *op, dlock__member_answer_cb cb, void *arg) {
    op->face = FACE_ANSWER_CB;
    op->answer_cb = cb;
    op->arg = arg;
    return submit(op);
}
