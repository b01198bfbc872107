/* SPDX-License-Identifier: MIT */
/* redlock.c — RedLock (the Redis "distlock" algorithm, Redisson RedissonRedLock): a lock
 * held when a majority of independent masters granted it in time.
 *
 * An acquisition is a series of rounds (round.c) on the home loop. A round asks every
 * member at once for one attempt and is decided as soon as its outcome is known, or after
 * an answer budget much shorter than the lease (a slow or paused master cannot eat the
 * validity, nor the caller's wait). It is won when a quorum said yes and the validity
 * (lease - time since the round's start - drift) is still positive. A won round is recorded
 * in the owner's holding at once, so that a later yes joins it (round.c: late answers).
 * After a lost round every member that said yes, or may have, is given back, and a member
 * that has not answered is handed a release that follows its acquire; then, after a random
 * pause, the next round, until the wait runs out. On the last round the give-backs of those
 * that said yes are awaited, so that an application that frees its clients on
 * DLOCK_ETIMEDOUT does not cancel them and leave a member held until its lease ends.
 *
 * With fenced members a won round goes on with a second round that raises the members'
 * token counters to the composite's token (docs/multilock.md, "Fencing tokens across
 * masters"); not confirmed by a quorum in time, the acquisition goes back whole.
 *
 * A release gives back one hold of every member the owner holds through the composite,
 * and covers every member of the owner's acquire rounds that has not answered yet (its
 * release runs after its acquire), all at once, awaited for at most two answer budgets: a
 * member that does not answer (its master down) keeps its hold until its lease ends.
 *
 * A kind (composite.h): it calls round.c, holding.c and composite.c, and fills its class
 * table with the doors of calls.c. */
#include <stdio.h>

#include "composite.h"

static void round_begin(comp_op *op);

/* The lease an acquisition with lease_ms has (DLOCK_WATCHDOG: the watchdog's). */
static int64_t lease_of(const composite *cp, int64_t lease_ms) {
    if (lease_ms != DLOCK_WATCHDOG)
        return lease_ms;
    return dlock__client_watchdog_ms(cp->home);
}

/* The clock drift RedLock allows for a lease: lease / 100 + 2 ms. */
static int64_t drift_ms(int64_t lease_ms) {
    return lease_ms / 100 + 2;
}

/* How long a member may take to answer: much less than the lease. */
static int64_t answer_budget(int64_t lease_ms) {
    int64_t ms = lease_ms / 10;
    return ms < 50 ? 50 : ms > 1000 ? 1000 : ms;
}

static int64_t validity_of(const comp_op *op) {
    return op->lease - (dlock__now_ms() - op->started_ms) - drift_ms(op->lease);
}

/* ---- release ------------------------------------------------------------------------- */

/* One hold of every member owner holds (asked in held) and every member of the owner's
 * open acquire rounds not answered yet (handed, asked in pending). Returns whether the
 * holding was lost. */
static bool mark_release(comp_op *op, round *held, round *pending) {
    composite *cp = op->cp;
    for (size_t i = 0; i < cp->n; i++)
        if (dlock__holding_holds(cp, op->owner, i))
            dlock__round_ask(held, i);
    bool lost = dlock__holding_release(cp, op->owner);
    for (round *o = cp->open_rounds; o; o = o->next_open) {
        if (o->owner != op->owner)
            continue;
        for (size_t i = 0; i < cp->n; i++) {
            member_call *c = &o->calls[i];
            if (c->answer == ANSWER_PENDING && !c->handed &&
                pending->calls[i].answer == ANSWER_NOT_ASKED) {
                c->handed = true;
                dlock__round_ask(pending, i);
            }
        }
    }
    return lost;
}

static void release_finish(comp_op *op) {
    int rc = op->status;
    char *text = op->op.error_text;
    size_t size = sizeof(op->op.error_text);
    if (rc != DLOCK_OK)
        snprintf(text, size, "redlock: member %zu (%s) said %s on release", op->step,
                 dlock_lock_name(op->cp->members[op->step]), dlock_err_name(rc));
    if (op->lost) {
        rc = DLOCK_ELOST;
        snprintf(text, size, "redlock: fewer than a quorum were still held");
    } else if (op->releasing == 0) {
        rc = DLOCK_ENOTOWNER;
        snprintf(text, size, "redlock: not held by this owner");
    }
    op->after_release(op, rc);
}

/* The held members' answers count; those of the not yet answered are awaited, not counted
 * (DLOCK_ENOTOWNER when their acquire found the member busy). */
static void release_part_done(round *r) {
    comp_op *op = r->ctx;
    if (r == op->round) {
        for (size_t i = 0; i < op->cp->n && op->status == DLOCK_OK; i++) {
            const member_call *c = &r->calls[i];
            if (c->answer == ANSWER_NO || c->answer == ANSWER_ERROR) {
                op->status = c->status;
                op->step = i;
            }
        }
        op->round = NULL;
    } else {
        op->extra = NULL;
    }
    dlock__round_done(r);
    if (--op->waiting == 0)
        release_finish(op);
}

static void release_begin(comp_op *op, void (*after)(comp_op *op, int status)) {
    composite *cp = op->cp;
    op->after_release = after;
    round *held = dlock__round_new(cp, CALL_RELEASE, op->owner);
    round *pending = held ? dlock__round_new(cp, CALL_RELEASE, op->owner) : NULL;
    if (!pending) {
        if (held)
            dlock__round_done(held);
        snprintf(op->op.error_text, sizeof(op->op.error_text), "redlock: out of memory");
        after(op, DLOCK_ENOMEM);
        return;
    }
    op->lost = mark_release(op, held, pending);
    op->releasing = held->asked;
    op->status = DLOCK_OK;
    op->waiting = 2;
    op->round = held;
    op->extra = pending;
    int64_t budget = 2 * answer_budget(lease_of(cp, DLOCK_WATCHDOG));
    dlock__round_send(held, 0, budget, release_part_done, op);
    dlock__round_send(pending, 0, budget, release_part_done, op);
}

static void release_answered(comp_op *op, int status) {
    dlock__composite_end(op, status);
}

static void redlock_release(comp_op *op) {
    release_begin(op, release_answered);
}

/* ---- an acquisition that failed ------------------------------------------------------ */

static void acquire_failed(comp_op *op) {
    composite *cp = op->cp;
    if (op->status == DLOCK_ENOMEM)
        dlock__composite_fail(op, DLOCK_ENOMEM, "redlock: out of memory");
    else if (op->unfenced)
        dlock__composite_fail(op, DLOCK_ETIMEDOUT,
                              "redlock: the token was confirmed by %zu of %zu members, %zu "
                              "needed, validity %lld ms",
                              op->got, cp->n, cp->quorum, (long long)op->validity);
    else if (op->error == DLOCK_ETIMEDOUT)
        dlock__composite_fail(op, DLOCK_ETIMEDOUT,
                              "redlock: %zu of %zu members, %zu needed, validity %lld ms", op->got,
                              cp->n, cp->quorum, (long long)op->validity);
    else
        dlock__composite_fail(op, op->error, "redlock: no quorum; a member said %s",
                              dlock_err_name(op->error));
}

static void on_pause_over(dlock__timer *t, void *arg) {
    (void)t;
    round_begin(arg);
}

/* A random pause, so that competing clients do not keep splitting the vote. */
static void pause_then_retry(comp_op *op) {
    uint64_t jitter = 0;
    dlock__random_bytes(&jitter, sizeof(jitter));
    int64_t pause = 10 + (int64_t)(jitter % 190);
    int64_t left = op->deadline_ms - dlock__now_ms();
    if (pause > left)
        pause = left;
    if (pause <= 0) {
        round_begin(op);
        return;
    }
    dlock__client_timer_start(op->cp->home, &op->pause, pause);
}

static void on_given_back(round *r) {
    comp_op *op = r->ctx;
    op->round = NULL;
    dlock__round_done(r);
    acquire_failed(op);
}

/* After a lost round. The last time, the releases of the members that said yes are awaited
 * (they answer quickly); those of members that did not answer (a master down or paused) are
 * not, or the wait would grow by a budget. */
static void give_back(comp_op *op, round *acq, bool last) {
    round *rel = last ? dlock__round_new(op->cp, CALL_RELEASE, op->owner) : NULL;
    dlock__round_give_back(acq, rel);
    dlock__round_done(acq);
    if (!last) {
        pause_then_retry(op);
        return;
    }
    if (!rel) {
        acquire_failed(op);
        return;
    }
    op->round = rel;
    dlock__round_send(rel, 0, answer_budget(op->lease), on_given_back, op);
}

/* ---- fencing ------------------------------------------------------------------------- */

static void after_unfenced(comp_op *op, int status) {
    (void)status;
    if (dlock__now_ms() >= op->deadline_ms)
        acquire_failed(op);
    else
        pause_then_retry(op);
}

/* Won, but the token was not confirmed in time: this acquisition goes back whole, its
 * late joiners too. */
static void unfenced(comp_op *op) {
    op->unfenced = true;
    op->validity = validity_of(op);
    release_begin(op, after_unfenced);
}

static void on_fenced(round *r) {
    comp_op *op = r->ctx;
    composite *cp = op->cp;
    op->round = NULL;
    op->got = r->yes;
    dlock__round_done(r);
    op->validity = validity_of(op);
    if (op->got >= cp->quorum && op->validity > 0) {
        dlock__holding_set_token(cp, op->owner, op->token);
        dlock__composite_end(op, DLOCK_OK);
        return;
    }
    unfenced(op);
}

/* A won round's token is the largest its members gave, and it is made a floor for whoever
 * comes next. Each member is raised to it while this owner still holds it; once a quorum
 * has been raised, any later holder's quorum shares a raised member, and the token that
 * member gives it (by INCR, after this owner's hold) is larger: tokens rise from holder to
 * holder even when their quorums differ, which the members' own counters alone do not
 * ensure. */
static void fence_begin(comp_op *op, round *acq, uint64_t token) {
    composite *cp = op->cp;
    round *r = dlock__round_new(cp, CALL_RAISE, op->owner);
    for (size_t i = 0; r && i < cp->n; i++)
        if (acq->calls[i].answer == ANSWER_YES)
            dlock__round_ask(r, i);
    dlock__round_done(acq);
    op->token = token;
    if (!r) {
        op->got = 0;
        unfenced(op);
        return;
    }
    r->floor = token;
    op->round = r;
    dlock__round_send(r, cp->quorum, answer_budget(op->lease), on_fenced, op);
}

/* ---- acquire ------------------------------------------------------------------------- */

static void on_round_decided(round *r) {
    comp_op *op = r->ctx;
    composite *cp = op->cp;
    op->round = NULL;
    op->got = 0;
    uint64_t token = 0;
    for (size_t i = 0; i < cp->n; i++) {
        const member_call *c = &r->calls[i];
        if (c->answer == ANSWER_YES) {
            op->got++;
            if ((uint64_t)c->value > token)
                token = (uint64_t)c->value;
        } else if (c->answer == ANSWER_ERROR) {
            op->error = c->status; /* kept across rounds */
        }
    }
    op->validity = validity_of(op);
    bool won = op->got >= cp->quorum && op->validity > 0;
    if (won && dlock__holding_add(cp, op->owner, r, op->lease) != DLOCK_OK) {
        won = false;
        op->status = DLOCK_ENOMEM;
    }
    r->kept = won;
    if (won && cp->fenced) {
        fence_begin(op, r, token);
        return;
    }
    if (won) {
        dlock__round_done(r);
        dlock__composite_end(op, DLOCK_OK);
        return;
    }
    give_back(op, r, op->status == DLOCK_ENOMEM || dlock__now_ms() >= op->deadline_ms);
}

static void round_begin(comp_op *op) {
    composite *cp = op->cp;
    round *r = dlock__round_new(cp, CALL_ACQUIRE, op->owner);
    if (!r) {
        dlock__composite_fail(op, DLOCK_ENOMEM, "redlock: out of memory");
        return;
    }
    r->wait_ms = 0;
    r->lease_ms = op->lease_ms;
    for (size_t i = 0; i < cp->n; i++)
        dlock__round_ask(r, i);
    op->round = r;
    op->unfenced = false;
    op->started_ms = dlock__now_ms();
    dlock__round_send(r, cp->quorum, answer_budget(op->lease), on_round_decided, op);
}

static void redlock_acquire(comp_op *op) {
    op->lease = lease_of(op->cp, op->lease_ms);
    op->deadline_ms = dlock__deadline_ms(op->wait_ms);
    op->error = DLOCK_ETIMEDOUT;
    dlock__client_timer_init(&op->pause, on_pause_over, op);
    round_begin(op);
}

/* The handle was freed: what the acquisition took goes back, not awaited. */
static void redlock_cancel(comp_op *op) {
    composite *cp = op->cp;
    dlock__client_timer_stop(cp->home, &op->pause);
    round *rounds[2] = {op->round, op->extra};
    op->round = op->extra = NULL;
    for (int k = 0; k < 2; k++) {
        round *r = rounds[k];
        if (!r)
            continue;
        enum round_call call = r->call;
        dlock__round_abandon(r);
        if (call == CALL_ACQUIRE)
            dlock__round_give_back(r, NULL);
        dlock__round_done(r);
        if (call != CALL_RAISE)
            continue;
        /* won and recorded: the whole acquisition goes back */
        round *held = dlock__round_new(cp, CALL_RELEASE, op->owner);
        round *pending = held ? dlock__round_new(cp, CALL_RELEASE, op->owner) : NULL;
        if (pending) {
            mark_release(op, held, pending);
            dlock__round_send(held, 0, -1, NULL, NULL);
            dlock__round_send(pending, 0, -1, NULL, NULL);
            dlock__round_done(pending);
        }
        if (held)
            dlock__round_done(held);
    }
    dlock__composite_fail(op, DLOCK_ECANCELED, "%s was freed while acquiring", cp->base.name);
}

static const composite_kind redlock_kind = {
    .what = "redlock",
    .majority = true,
    .acquire = redlock_acquire,
    .release = redlock_release,
    .cancel = redlock_cancel,
    .lease_of = lease_of,
    .drift_ms = drift_ms,
};

static const dlock__lock_class redlock_class = DLOCK__COMPOSITE_CLASS("RedLock");

int dlock_redlock_new(dlock_lock *const *locks, size_t n, dlock_lock **out) {
    return dlock__composite_new(locks, n, &redlock_class, &redlock_kind, out);
}
