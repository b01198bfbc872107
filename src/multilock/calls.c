/* SPDX-License-Identifier: MIT */
/* calls.c — the doors of a composite's public calls (the class table of lock_class.h that
 * DLOCK__COMPOSITE_CLASS fills), MultiLock's and RedLock's alike.
 *
 * Every call is an op of the home client, the first member's (composite.h): the async face
 * submits it and calls back on the home loop thread; the blocking face runs it
 * (dlock__op_run) and is refused on any member's loop thread, whose answer it would wait
 * for (DLOCK_EDEADLK). On the home loop an op goes to its kind's acquire or release (the
 * composite's kind table), to the queries both kinds share (query.c), or is answered from
 * the holdings at once.
 *
 * The top of the folder's shared floors: it calls query.c, holding.c and composite.c, and
 * reaches multilock.c and redlock.c only through the kind table. */
#include <stdbool.h>
#include <string.h>

#include "composite.h"

static composite *of(dlock_lock *l) {
    return (composite *)l; /* the base is the first member */
}

/* ---- ops ----------------------------------------------------------------------------- */

static int token_now(composite *cp, uint64_t owner, uint64_t *out) {
    holding *h = dlock__holding_find(cp, owner);
    if (!h || !h->has_token)
        return dlock__fail(DLOCK_ENOTOWNER, "this owner never acquired %s", cp->base.name);
    *out = h->token;
    return DLOCK_OK;
}

static int64_t hold_count_now(composite *cp, uint64_t owner) {
    holding *h = dlock__holding_find(cp, owner);
    return h ? h->depth : 0;
}

static void op_start(dlock__op *o) {
    comp_op *op = (comp_op *)o;
    if (!dlock__op_begin(o))
        return;
    composite *cp = op->cp;
    uint64_t token = 0;
    switch (op->call) {
    case OP_ACQUIRE:
        op->listed = true;
        op->next_acquiring = cp->acquiring;
        cp->acquiring = op;
        cp->kind->acquire(op);
        return;
    case OP_RELEASE:
        cp->kind->release(op);
        return;
    case OP_FORCE:
    case OP_QUERY:
        dlock__composite_query(op);
        return;
    case OP_HOLD_COUNT:
        op->answer = hold_count_now(cp, op->owner);
        dlock__composite_end(op, DLOCK_OK);
        return;
    case OP_TOKEN:
        if (token_now(cp, op->owner, &token) != DLOCK_OK) {
            dlock__composite_fail(op, DLOCK_ENOTOWNER, "%s", dlock_last_error());
            return;
        }
        op->answer = (int64_t)token;
        dlock__composite_end(op, DLOCK_OK);
        return;
    case OP_ON_LOST:
        cp->lost_cb = op->lost_cb;
        cp->lost_arg = op->lost_arg;
        dlock__composite_end(op, DLOCK_OK);
        return;
    }
}

static void op_prepare(comp_op *op, composite *cp, enum comp_call call, uint64_t owner) {
    memset(op, 0, sizeof(*op));
    dlock__op_init(&op->op, cp->home, op_start);
    op->op.handle = &cp->handle;
    op->cp = cp;
    op->call = call;
    op->owner = owner;
}

/* A blocking call that waits for the members' answers, on one of their loop threads,
 * would wait for itself. */
static int run_blocking(comp_op *op, bool asks_members) {
    composite *cp = op->cp;
    for (size_t i = 0; asks_members && i < cp->n; i++)
        if (dlock__on_loop_thread(dlock__member_client(cp->members[i])))
            return dlock__fail(DLOCK_EDEADLK, "%s: a blocking call on a member's loop thread",
                               cp->base.name);
    return dlock__op_run(&op->op);
}

static void async_complete(dlock__op *o) {
    comp_op *op = (comp_op *)o;
    op->cb(&op->cp->base, op->op.status, op->arg);
    dlock__free(op);
}

static int submit_async(composite *cp, enum comp_call call, uint64_t owner, int64_t wait_ms,
                        int64_t lease_ms, dlock_lock_cb cb, void *arg) {
    comp_op *op = dlock__malloc(sizeof(*op));
    if (!op)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    op_prepare(op, cp, call, owner);
    op->wait_ms = wait_ms;
    op->lease_ms = lease_ms;
    op->cb = cb;
    op->arg = arg;
    op->op.complete = async_complete;
    int rc = dlock__op_submit(&op->op);
    if (rc != DLOCK_OK)
        dlock__free(op);
    return rc;
}

/* ---- the class calls ----------------------------------------------------------------- */

int dlock__composite_check(const dlock_lock *l) {
    return dlock__handle_check(&((const composite *)l)->handle);
}

int dlock__composite_acquire_async(dlock_lock *l, uint64_t owner, int64_t wait_ms, int64_t lease_ms,
                                   dlock_lock_cb cb, void *arg) {
    return submit_async(of(l), OP_ACQUIRE, owner, wait_ms, lease_ms, cb, arg);
}

int dlock__composite_release_async(dlock_lock *l, uint64_t owner, dlock_lock_cb cb, void *arg) {
    return submit_async(of(l), OP_RELEASE, owner, 0, 0, cb, arg);
}

int dlock__composite_try_acquire(dlock_lock *l, uint64_t owner, int64_t wait_ms, int64_t lease_ms) {
    comp_op op;
    op_prepare(&op, of(l), OP_ACQUIRE, owner);
    op.wait_ms = wait_ms;
    op.lease_ms = lease_ms;
    return run_blocking(&op, true);
}

int dlock__composite_release(dlock_lock *l, uint64_t owner) {
    comp_op op;
    op_prepare(&op, of(l), OP_RELEASE, owner);
    return run_blocking(&op, true);
}

int dlock__composite_force_release(dlock_lock *l, bool *was_locked) {
    comp_op op;
    op_prepare(&op, of(l), OP_FORCE, 0);
    int rc = run_blocking(&op, true);
    if (rc == DLOCK_OK && was_locked)
        *was_locked = op.answer != 0;
    return rc;
}

static int run_query(dlock_lock *l, uint64_t owner, enum dlock__member_query what,
                     int64_t *answer) {
    comp_op op;
    op_prepare(&op, of(l), OP_QUERY, owner);
    op.query = what;
    int rc = run_blocking(&op, true);
    if (rc == DLOCK_OK)
        *answer = op.answer;
    return rc;
}

int dlock__composite_is_locked(dlock_lock *l, bool *out) {
    int64_t v = 0;
    int rc = run_query(l, 0, DLOCK__MEMBER_IS_LOCKED, &v);
    if (rc == DLOCK_OK)
        *out = v != 0;
    return rc;
}

int dlock__composite_is_held(dlock_lock *l, uint64_t owner, bool *out) {
    int64_t v = 0;
    int rc = run_query(l, owner, DLOCK__MEMBER_IS_HELD, &v);
    if (rc == DLOCK_OK)
        *out = v != 0;
    return rc;
}

int dlock__composite_ttl(dlock_lock *l, uint64_t owner, int64_t *out_ms) {
    return run_query(l, owner, DLOCK__MEMBER_TTL, out_ms);
}

/* hold_count, token_of and on_lost need no member: read or set at home, at once on the
 * home loop thread (so they may be called from the composite's callbacks). */
int dlock__composite_hold_count(dlock_lock *l, uint64_t owner, int64_t *out) {
    composite *cp = of(l);
    if (dlock__on_loop_thread(cp->home)) {
        *out = hold_count_now(cp, owner);
        return DLOCK_OK;
    }
    comp_op op;
    op_prepare(&op, cp, OP_HOLD_COUNT, owner);
    int rc = run_blocking(&op, false);
    if (rc == DLOCK_OK)
        *out = op.answer;
    return rc;
}

int dlock__composite_token_of(dlock_lock *l, uint64_t owner, uint64_t *out) {
    composite *cp = of(l);
    if (!cp->fenced)
        return dlock__fail(DLOCK_EINVAL, "%s: no member is a fenced lock", cp->base.name);
    if (dlock__on_loop_thread(cp->home))
        return token_now(cp, owner, out);
    comp_op op;
    op_prepare(&op, cp, OP_TOKEN, owner);
    int rc = run_blocking(&op, false);
    if (rc == DLOCK_OK)
        *out = (uint64_t)op.answer;
    return rc;
}

int dlock__composite_on_lost(dlock_lock *l, dlock_lost_cb cb, void *arg) {
    composite *cp = of(l);
    if (dlock__on_loop_thread(cp->home)) {
        cp->lost_cb = cb;
        cp->lost_arg = arg;
        return DLOCK_OK;
    }
    comp_op op;
    op_prepare(&op, cp, OP_ON_LOST, 0);
    op.lost_cb = cb;
    op.lost_arg = arg;
    return run_blocking(&op, false);
}
