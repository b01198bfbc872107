/* SPDX-License-Identifier: MIT */
/* query.c — the queries (is_locked, is_held, ttl) and force release of both composites.
 *
 * One round asks every member at once and waits for every answer, so a member whose server
 * is down costs one command time-out per query, not one per member. A MultiLock answers
 * for every member (a member's failure is the query's); a RedLock for a majority (a member
 * that fails counts as not locked, not held, no TTL).
 *
 * It calls round.c, composite.c and holding.c; RedLock's numbers (its lease and clock
 * drift) reach it through the composite's kind table, not from redlock.c. */
#include <stdint.h>
#include <stdio.h>

#include "composite.h"

static int64_t member_ttl(const member_call *c) {
    if (c->answer != ANSWER_YES)
        return -2;
    return c->value == -1 ? INT64_MAX : c->value; /* no expiry: longer than any */
}

/* The k-th longest member TTL (k from 1): the time until fewer than k members are held. */
static int64_t kth_longest(const round *r, size_t k) {
    size_t n = r->cp->n;
    for (size_t i = 0; i < n; i++) {
        int64_t v = member_ttl(&r->calls[i]);
        size_t longer = 0, at_least = 0;
        for (size_t j = 0; j < n; j++) {
            int64_t w = member_ttl(&r->calls[j]);
            longer += w > v;
            at_least += w >= v;
        }
        if (longer < k && k <= at_least)
            return v;
    }
    return -2;
}

/* MultiLock: the shortest member TTL. RedLock: the validity, i.e. the quorum-th longest
 * member TTL less the drift of the owner's lease. -1 no expiry; -2 not held by enough. */
static int64_t composite_ttl(composite *cp, const round *r, uint64_t owner) {
    int64_t v = kth_longest(r, cp->quorum);
    if (v == INT64_MAX)
        return -1;
    if (v < 0 || !cp->kind->drift_ms)
        return v;
    holding *h = dlock__holding_find(cp, owner);
    int64_t lease = h && h->depth > 0 ? h->lease_ms : cp->kind->lease_of(cp, DLOCK_WATCHDOG);
    v -= cp->kind->drift_ms(lease);
    return v > 0 ? v : -2; /* no validity left */
}

static size_t count_true(const round *r) {
    size_t count = 0;
    for (size_t i = 0; i < r->cp->n; i++)
        count += r->calls[i].answer == ANSWER_YES && r->calls[i].value != 0;
    return count;
}

static const member_call *first_failure(const round *r) {
    for (size_t i = 0; i < r->cp->n; i++)
        if (r->calls[i].answer != ANSWER_YES)
            return &r->calls[i];
    return NULL;
}

static void on_answers(round *r) {
    comp_op *op = r->ctx;
    composite *cp = op->cp;
    op->round = NULL;
    const member_call *failed = first_failure(r);
    int status = DLOCK_OK;
    if (failed && (r->call == CALL_FORCE || !cp->redlock)) {
        status = failed->status;
        dlock__format_fit(op->op.error_text, sizeof(op->op.error_text), "%s: member %s: %s",
                          cp->base.name, dlock_lock_name(cp->members[failed->index]),
                          failed->detail);
    }
    if (r->call == CALL_FORCE)
        op->answer = count_true(r) > 0;
    else if (op->query == DLOCK__MEMBER_TTL)
        op->answer = composite_ttl(cp, r, op->owner);
    else
        op->answer = count_true(r) >= cp->quorum;
    dlock__round_done(r);
    dlock__composite_end(op, status);
}

void dlock__composite_query(comp_op *op) {
    composite *cp = op->cp;
    round *r = dlock__round_new(cp, op->call == OP_FORCE ? CALL_FORCE : CALL_QUERY, op->owner);
    if (!r) {
        dlock__composite_fail(op, DLOCK_ENOMEM, "out of memory");
        return;
    }
    r->query = op->query;
    for (size_t i = 0; i < cp->n; i++)
        dlock__round_ask(r, i);
    op->round = r;
    dlock__round_send(r, 0, -1, on_answers, op);
}
