/* SPDX-License-Identifier: MIT */
/* member.c — member.h implemented by the lock engine: what a composite (MultiLock,
 * RedLock) may ask of an ordinary lock it is made of. Each async call is an engine op on
 * the member's client's loop thread; the answers come back through the composite's
 * callback. A claimed member's lost holds go to its composite (engine.c, tell_lost). */
#include <stdatomic.h>

#include "engine.h"

dlock_client *dlock__member_client(const dlock_lock *l) {
    const lock_handle *h = dlock__ordinary((dlock_lock *)l);
    return h ? h->client : NULL;
}

bool dlock__member_fenced(const dlock_lock *l) {
    const lock_handle *h = dlock__ordinary((dlock_lock *)l);
    return h && h->fenced;
}

bool dlock__member_claim(dlock_lock *l, dlock__member_lost_fn lost_fn, void *composite) {
    lock_handle *h = dlock__ordinary(l);
    if (!h || atomic_exchange(&h->claimed, true))
        return false;
    if (dlock__lock_set_lost(h, true, (lost_to){lost_fn, composite}) == DLOCK_OK)
        return true;
    h->claimed = false;
    return false;
}

void dlock__member_release_claim(dlock_lock *l) {
    lock_handle *h = dlock__ordinary(l);
    if (!h)
        return;
    if (dlock__lock_set_lost(h, true, (lost_to){NULL, NULL}) != DLOCK_OK)
        h->member_lost = (lost_to){NULL, NULL}; /* freed meanwhile: it tells nothing more */
    h->claimed = false;
}

/* An op of start for owner on member l, to be submitted; NULL with *rc (and its text)
 * unless l is an ordinary lock that takes calls, cb is given and memory is there. */
static lock_op *member_op(dlock_lock *l, bool has_cb, dlock__op_fn start, uint64_t owner, int *rc) {
    lock_handle *h = dlock__ordinary(l);
    if (!h || !has_cb)
        *rc = dlock__fail(DLOCK_EINVAL, "a member call needs an ordinary lock and a callback");
    else
        *rc = dlock__ordinary_check(l);
    if (*rc != DLOCK_OK)
        return NULL;
    lock_op *op = dlock__lock_op_new(h, start, owner);
    if (!op)
        *rc = DLOCK_ENOMEM;
    return op;
}

int dlock__member_query_async(dlock_lock *l, uint64_t owner, enum dlock__member_query what,
                              dlock__member_answer_cb cb, void *arg) {
    int rc;
    lock_op *op = member_op(l, cb != NULL, dlock__query_start, owner, &rc);
    if (!op)
        return rc;
    op->what = what;
    return dlock__lock_op_submit_answer(op, cb, arg);
}

int dlock__member_force_release_async(dlock_lock *l, dlock__member_answer_cb cb, void *arg) {
    int rc;
    lock_op *op = member_op(l, cb != NULL, dlock__force_start, 0, &rc);
    return op ? dlock__lock_op_submit_answer(op, cb, arg) : rc;
}

int dlock__member_set_lease_async(dlock_lock *l, uint64_t owner, int64_t lease_ms, dlock_lock_cb cb,
                                  void *arg) {
    if (lease_ms <= 0 || lease_ms > DLOCK_MAX_TIME_MS || owner == 0)
        return dlock__fail(DLOCK_EINVAL, "set_lease needs an owner and a lease");
    int rc;
    lock_op *op = member_op(l, cb != NULL, dlock__set_lease_start, owner, &rc);
    if (!op)
        return rc;
    op->lease_ms = lease_ms;
    return dlock__lock_op_submit(op, cb, arg);
}

int dlock__member_raise_token_async(dlock_lock *l, uint64_t owner, uint64_t floor, dlock_lock_cb cb,
                                    void *arg) {
    if (!dlock__member_fenced(l) || owner == 0 || floor > INT64_MAX)
        return dlock__fail(DLOCK_EINVAL, "raise_token needs a fenced lock, an owner and a floor");
    int rc;
    lock_op *op = member_op(l, cb != NULL, dlock__raise_token_start, owner, &rc);
    if (!op)
        return rc;
    op->token_floor = floor;
    return dlock__lock_op_submit(op, cb, arg);
}
