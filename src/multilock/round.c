/* SPDX-License-Identifier: MIT */
/* round.c — a round: one call sent to several members of a composite at once, their
 * answers gathered on the composite's home loop, and the round decided as soon as its
 * outcome is known (a quorum said yes, or too many said no to reach one), when every member
 * answered, or when its answer budget ran out.
 *
 * Each member's answer is recorded in its call with a named state (enum answer). An answer
 * that comes after its round was decided is late; what it does depends on the round: a yes
 * to an acquire joins the owner's holding if the round was won and an acquisition still
 * lacks that member, or is given back; unless a release already follows it (handed: the
 * member sends one owner's calls one after another, so that release runs after the
 * acquire). Late answers of other rounds need nothing.
 *
 * A member answers on its client's loop thread; the answer is carried home as an op of
 * the home client. If the home client is closing, nothing runs there any more: the answer
 * gives a yes back where it is and drops its reference.
 *
 * It calls composite.c (carrying home, references) and holding.c (a late yes joins). */
#include <stdio.h>
#include <string.h>

#include "composite.h"

static void on_budget(dlock__timer *t, void *arg);

round *dlock__round_new(composite *cp, enum round_call call, uint64_t owner) {
    round *r = dlock__calloc(1, sizeof(*r) + cp->n * sizeof(r->calls[0]));
    if (!r)
        return NULL;
    r->cp = cp;
    r->call = call;
    r->owner = owner;
    atomic_init(&r->refs, 1);
    atomic_fetch_add(&cp->refs, 1);
    for (size_t i = 0; i < cp->n; i++) {
        r->calls[i].r = r;
        r->calls[i].index = i;
        r->calls[i].answer = ANSWER_NOT_ASKED;
    }
    dlock__client_timer_init(&r->budget, on_budget, r);
    return r;
}

void dlock__round_ask(round *r, size_t i) {
    if (r->calls[i].answer != ANSWER_NOT_ASKED)
        return;
    r->calls[i].answer = ANSWER_PENDING;
    r->asked++;
}

static void round_unref(round *r) {
    if (atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    composite *cp = r->cp;
    dlock__free(r);
    dlock__composite_unref(cp);
}

static enum answer answer_of(int status) {
    if (status == DLOCK_OK)
        return ANSWER_YES;
    if (status == DLOCK_ETIMEDOUT || status == DLOCK_ENOTOWNER)
        return ANSWER_NO;
    return ANSWER_ERROR;
}

static void decide(round *r) {
    r->decided = true;
    dlock__client_timer_stop(r->cp->home, &r->budget);
    if (r->decided_fn)
        r->decided_fn(r);
}

static void decide_if_known(round *r) {
    if (r->decided)
        return;
    bool all = r->answered == r->asked;
    bool known = r->need > 0 && (r->yes >= r->need || r->no + r->need > r->asked);
    if (all || known)
        decide(r);
}

static void on_budget(dlock__timer *t, void *arg) {
    (void)t;
    round *r = arg;
    if (!r->decided)
        decide(r);
}

/* An acquire round leaves the open rounds once every member it asked has answered. */
static void leave_open(round *r) {
    if (!r->open || r->answered < r->asked)
        return;
    round **link = &r->cp->open_rounds;
    while (*link != r)
        link = &(*link)->next_open;
    *link = r->next_open;
    r->open = false;
}

static void ignore_answer(dlock_lock *l, int status, void *arg) {
    (void)l;
    (void)status;
    (void)arg;
}

void dlock__release_unwaited(composite *cp, size_t i, uint64_t owner) {
    dlock_lock_release_async(cp->members[i], owner, ignore_answer, NULL);
}

static void late_answer(round *r, member_call *c) {
    if (r->call != CALL_ACQUIRE || c->answer != ANSWER_YES || c->handed)
        return;
    composite *cp = r->cp;
    if (r->kept && !atomic_load(&cp->gone) && dlock__holding_add_member(cp, r->owner, c->index))
        return;
    dlock__release_unwaited(cp, c->index, r->owner);
}

static void record(round *r, member_call *c) {
    c->answer = answer_of(c->status);
    r->answered++;
    if (c->answer == ANSWER_YES)
        r->yes++;
    else
        r->no++;
}

/* Home loop: the answer is in. */
static void answer_home(member_call *c) {
    round *r = c->r;
    record(r, c);
    leave_open(r);
    if (r->decided)
        late_answer(r, c);
    else
        decide_if_known(r);
    round_unref(r);
}

static void carried_start(dlock__op *o) {
    answer_home(DLOCK__CONTAINER_OF(o, member_call, carry));
}

/* The answer cannot go home: the home client closed before it got there, or the
 * composite's handle is gone (any thread). */
static void carry_dropped(dlock__op *o) {
    member_call *c = DLOCK__CONTAINER_OF(o, member_call, carry);
    round *r = c->r;
    if (r->call == CALL_ACQUIRE && c->status == DLOCK_OK && !c->handed)
        dlock__release_unwaited(r->cp, c->index, r->owner);
    round_unref(r);
}

/* The member's loop thread: the answer goes home. */
static void answer(member_call *c, int status, int64_t value) {
    composite *cp = c->r->cp;
    c->status = status;
    c->value = value;
    if (status != DLOCK_OK)
        snprintf(c->detail, sizeof(c->detail), "%s", dlock_last_error());
    dlock__op_init(&c->carry, cp->home, carried_start);
    c->carry.complete = carry_dropped;
    switch (dlock__composite_carry(cp, &c->carry)) {
    case CARRY_HERE:
        answer_home(c);
        break;
    case CARRY_POSTED:
        break;
    case CARRY_REFUSED:
        carry_dropped(&c->carry);
        break;
    }
}

static void on_lock_answer(dlock_lock *m, int status, void *arg) {
    member_call *c = arg;
    uint64_t token = 0;
    if (c->r->call == CALL_ACQUIRE && status == DLOCK_OK && dlock__member_fenced(m))
        dlock_lock_token_of(m, c->r->owner, &token); /* on m's loop thread: no I/O */
    answer(c, status, (int64_t)token);
}

static void on_value_answer(dlock_lock *m, int status, int64_t value, void *arg) {
    (void)m;
    answer(arg, status, value);
}

static int send_call(round *r, member_call *c) {
    dlock_lock *m = r->cp->members[c->index];
    switch (r->call) {
    case CALL_ACQUIRE:
        return dlock_lock_acquire_async(m, r->owner, r->wait_ms, r->lease_ms, on_lock_answer, c);
    case CALL_RELEASE:
        return dlock_lock_release_async(m, r->owner, on_lock_answer, c);
    case CALL_SET_LEASE:
        return dlock__member_set_lease_async(m, r->owner, r->lease_ms, on_lock_answer, c);
    case CALL_RAISE:
        return dlock__member_raise_token_async(m, r->owner, r->floor, on_lock_answer, c);
    case CALL_QUERY:
        return dlock__member_query_async(m, r->owner, r->query, on_value_answer, c);
    case CALL_FORCE:
        return dlock__member_force_release_async(m, on_value_answer, c);
    }
    return dlock__fail(DLOCK_EINVAL, "unknown member call");
}

void dlock__round_send(round *r, size_t need, int64_t budget_ms, round_fn fn, void *ctx) {
    composite *cp = r->cp;
    r->need = need;
    r->decided_fn = fn;
    r->ctx = ctx;
    if (r->call == CALL_ACQUIRE) {
        r->open = true;
        r->next_open = cp->open_rounds;
        cp->open_rounds = r;
    }
    for (size_t i = 0; i < cp->n; i++) {
        member_call *c = &r->calls[i];
        if (c->answer != ANSWER_PENDING)
            continue;
        atomic_fetch_add(&r->refs, 1);
        int rc = send_call(r, c);
        if (rc != DLOCK_OK) { /* refused at once (a freed member, a closed client) */
            c->status = rc;
            snprintf(c->detail, sizeof(c->detail), "%s", dlock_last_error());
            record(r, c);
            atomic_fetch_sub(&r->refs, 1); /* never the last: the owner's stays */
        }
    }
    if (budget_ms >= 0 && r->answered < r->asked)
        dlock__client_timer_start(cp->home, &r->budget, budget_ms);
    leave_open(r);
    decide_if_known(r);
}

void dlock__round_abandon(round *r) {
    r->decided = true;
    dlock__client_timer_stop(r->cp->home, &r->budget);
}

void dlock__round_done(round *r) {
    round_unref(r);
}

void dlock__round_give_back(round *acq, round *into) {
    for (size_t i = 0; i < acq->cp->n; i++) {
        member_call *c = &acq->calls[i];
        bool yes = c->answer == ANSWER_YES;
        bool maybe = c->answer == ANSWER_ERROR && c->status == DLOCK_ECONN;
        bool pending = c->answer == ANSWER_PENDING && !c->handed;
        if (!yes && !maybe && !pending)
            continue;
        if (pending)
            c->handed = true;
        if (into && yes)
            dlock__round_ask(into, i);
        else
            dlock__release_unwaited(acq->cp, i, acq->owner);
    }
}
