/* SPDX-License-Identifier: MIT */
/* multilock.c — MultiLock (Redisson RedissonMultiLock): every member or none.
 *
 * No Redis data of its own (composite.c). An acquisition takes the members one after
 * another in the canonical order, each under the watchdog so that none expires while a
 * later one is awaited, the wait shared among them. A member that cannot be had in time
 * makes every member already taken be given back, and that is awaited before the
 * acquisition fails with the member's error. Once all are held, a lease > 0 is set on every
 * member at once. A release releases every member at once, continuing past one that fails;
 * the error it reports is the first in the reverse of the canonical order. Each step is a
 * round (round.c) on the home loop.
 *
 * A kind (composite.h): it calls round.c, holding.c and composite.c, and fills its class
 * table with the doors of calls.c. */
#include <stdio.h>

#include "composite.h"

static void take_next(comp_op *op);

static void text(comp_op *op, const member_call *c) {
    dlock__format_fit(op->op.error_text, sizeof(op->op.error_text), "member %s: %s",
                      dlock_lock_name(op->cp->members[c->index]), c->detail);
}

static void oom_text(comp_op *op) {
    snprintf(op->op.error_text, sizeof(op->op.error_text), "out of memory");
}

static void given_back(round *r) {
    comp_op *op = r->ctx;
    op->round = NULL;
    dlock__round_done(r);
    dlock__composite_end(op, op->status);
}

/* Gives back members [0, count), awaited, then ends op with status (its text set). */
static void fail_after_give_back(comp_op *op, size_t count, int status) {
    composite *cp = op->cp;
    op->status = status;
    round *r = dlock__round_new(cp, CALL_RELEASE, op->owner);
    if (!r) {
        for (size_t i = 0; i < count; i++)
            dlock__release_unwaited(cp, i, op->owner);
        dlock__composite_end(op, status);
        return;
    }
    for (size_t i = 0; i < count; i++)
        dlock__round_ask(r, i);
    op->round = r;
    dlock__round_send(r, 0, -1, given_back, op);
}

static void held(comp_op *op) {
    composite *cp = op->cp;
    if (dlock__holding_add(cp, op->owner, NULL, op->lease_ms) != DLOCK_OK) {
        oom_text(op);
        fail_after_give_back(op, cp->n, DLOCK_ENOMEM);
        return;
    }
    /* every member is held by every holder, so the largest of the members' tokens rises
     * from one holder to the next with each member's own */
    if (cp->fenced)
        dlock__holding_set_token(cp, op->owner, op->token);
    dlock__composite_end(op, DLOCK_OK);
}

static void on_leases_set(round *r) {
    comp_op *op = r->ctx;
    op->round = NULL;
    for (size_t i = 0; i < op->cp->n; i++) {
        if (r->calls[i].answer != ANSWER_YES) {
            int status = r->calls[i].status;
            text(op, &r->calls[i]);
            dlock__round_done(r);
            fail_after_give_back(op, op->cp->n, status);
            return;
        }
    }
    dlock__round_done(r);
    held(op);
}

static void set_leases(comp_op *op) {
    composite *cp = op->cp;
    if (op->lease_ms == DLOCK_WATCHDOG) {
        held(op);
        return;
    }
    round *r = dlock__round_new(cp, CALL_SET_LEASE, op->owner);
    if (!r) {
        oom_text(op);
        fail_after_give_back(op, cp->n, DLOCK_ENOMEM);
        return;
    }
    r->lease_ms = op->lease_ms;
    for (size_t i = 0; i < cp->n; i++)
        dlock__round_ask(r, i);
    op->round = r;
    dlock__round_send(r, 0, -1, on_leases_set, op);
}

static void on_taken(round *r) {
    comp_op *op = r->ctx;
    member_call *c = &r->calls[op->step];
    op->round = NULL;
    if (c->answer == ANSWER_YES) {
        if ((uint64_t)c->value > op->token)
            op->token = (uint64_t)c->value;
        op->step++;
        dlock__round_done(r);
        take_next(op);
        return;
    }
    int status = c->status;
    text(op, c);
    dlock__round_done(r);
    fail_after_give_back(op, op->step, status);
}

static void take_next(comp_op *op) {
    composite *cp = op->cp;
    if (op->step == cp->n) {
        set_leases(op);
        return;
    }
    round *r = dlock__round_new(cp, CALL_ACQUIRE, op->owner);
    if (!r) {
        oom_text(op);
        fail_after_give_back(op, op->step, DLOCK_ENOMEM);
        return;
    }
    int64_t left = DLOCK_FOREVER;
    if (op->wait_ms >= 0) {
        left = op->deadline_ms - dlock__now_ms();
        if (left < 0)
            left = 0;
    }
    r->wait_ms = left;
    r->lease_ms = DLOCK_WATCHDOG; /* under the watchdog while the others are taken */
    dlock__round_ask(r, op->step);
    op->round = r;
    dlock__round_send(r, 0, -1, on_taken, op);
}

static void multilock_acquire(comp_op *op) {
    op->deadline_ms = dlock__deadline_ms(op->wait_ms);
    op->step = 0;
    take_next(op);
}

/* The handle was freed: what the acquisition took goes back, not awaited. */
static void multilock_cancel(comp_op *op) {
    composite *cp = op->cp;
    round *r = op->round;
    size_t taken = op->step;
    if (r) {
        /* The member being taken may be waiting for its lock: a release sent now would
         * run before its grant. Its answer, late now, gives a grant back (round.c). */
        dlock__round_abandon(r);
        if (r->call == CALL_SET_LEASE)
            taken = cp->n;
        else if (r->call == CALL_RELEASE)
            taken = 0; /* a give-back under way: its releases are out */
        dlock__round_done(r);
        op->round = NULL;
    }
    for (size_t i = 0; i < taken; i++)
        dlock__release_unwaited(cp, i, op->owner);
    dlock__composite_fail(op, DLOCK_ECANCELED, "%s was freed while acquiring", cp->base.name);
}

/* ---- release ------------------------------------------------------------------------- */

static void on_released(round *r) {
    comp_op *op = r->ctx;
    op->round = NULL;
    int status = DLOCK_OK;
    for (size_t i = op->cp->n; i-- > 0;) { /* the first error in the reverse order */
        if (r->calls[i].answer != ANSWER_YES) {
            status = r->calls[i].status;
            text(op, &r->calls[i]);
            break;
        }
    }
    dlock__round_done(r);
    if (op->lost && status == DLOCK_OK) {
        dlock__composite_fail(op, DLOCK_ELOST, "multilock: a member was lost while held");
        return;
    }
    dlock__composite_end(op, status);
}

/* Every member, past failures: a member whose hold was lost then reports it (and forgets
 * it), and one the owner does not hold says DLOCK_ENOTOWNER. */
static void multilock_release(comp_op *op) {
    composite *cp = op->cp;
    round *r = dlock__round_new(cp, CALL_RELEASE, op->owner);
    if (!r) {
        dlock__composite_fail(op, DLOCK_ENOMEM, "out of memory");
        return;
    }
    op->lost = dlock__holding_release(cp, op->owner);
    for (size_t i = 0; i < cp->n; i++)
        dlock__round_ask(r, i);
    op->round = r;
    dlock__round_send(r, 0, -1, on_released, op);
}

static const composite_kind multilock_kind = {
    .what = "multilock",
    .majority = false,
    .acquire = multilock_acquire,
    .release = multilock_release,
    .cancel = multilock_cancel,
};

static const dlock__lock_class multilock_class = DLOCK__COMPOSITE_CLASS("MultiLock");

int dlock_multilock_new(dlock_lock *const *locks, size_t n, dlock_lock **out) {
    return dlock__composite_new(locks, n, &multilock_class, &multilock_kind, out);
}
