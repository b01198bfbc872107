/* SPDX-License-Identifier: MIT */
/* holding.c — what each owner holds through a composite (composite.h), on its home loop.
 *
 * Per owner: how many holds of each member the composite took and has not given back, and
 * how many acquisitions of the composite are not released (depth). A release gives back one
 * hold of every member held, whichever acquisition took it; a member's loss drops its holds
 * and makes the composite lost once fewer than its quorum are held (MultiLock: any member;
 * RedLock: below a majority), once per holding.
 *
 * The ground floor of src/multilock: bookkeeping only, it calls no other file of the folder
 * (a release round asks the members that dlock__holding_holds names). */
#include "composite.h"

holding *dlock__holding_find(composite *cp, uint64_t owner) {
    for (holding *h = cp->holdings; h; h = h->next)
        if (h->owner == owner)
            return h;
    return NULL;
}

static holding *holding_get(composite *cp, uint64_t owner) {
    holding *h = dlock__holding_find(cp, owner);
    if (h)
        return h;
    h = dlock__calloc(1, sizeof(*h));
    if (!h || !(h->holds = dlock__calloc(cp->n, sizeof(int)))) {
        dlock__free(h);
        return NULL;
    }
    h->owner = owner;
    h->next = cp->holdings;
    cp->holdings = h;
    return h;
}

int dlock__holding_add(composite *cp, uint64_t owner, const round *acq, int64_t lease_ms) {
    holding *h = holding_get(cp, owner);
    if (!h)
        return DLOCK_ENOMEM;
    for (size_t i = 0; i < cp->n; i++) {
        bool taken = !acq || acq->calls[i].answer == ANSWER_YES;
        if (taken && h->holds[i]++ == 0)
            h->held_count++;
    }
    if (h->depth++ == 0)
        h->lost_fired = false;
    h->lease_ms = lease_ms;
    return DLOCK_OK;
}

/* Each acquisition not yet released accounts for at most one hold of each member, so a
 * member never keeps more holds than the owner has releases to come: not when the holding
 * was released meanwhile (depth 0), nor when a release went by while this answer was on
 * its way. */
bool dlock__holding_add_member(composite *cp, uint64_t owner, size_t i) {
    holding *h = dlock__holding_find(cp, owner);
    bool added = h && h->holds[i] < h->depth;
    if (added && h->holds[i]++ == 0)
        h->held_count++;
    return added;
}

void dlock__holding_set_token(composite *cp, uint64_t owner, uint64_t token) {
    holding *h = dlock__holding_find(cp, owner);
    if (h) {
        h->token = token;
        h->has_token = true;
    }
}

bool dlock__holding_holds(composite *cp, uint64_t owner, size_t i) {
    holding *h = dlock__holding_find(cp, owner);
    return h && h->holds[i] > 0;
}

bool dlock__holding_release(composite *cp, uint64_t owner) {
    holding *h = dlock__holding_find(cp, owner);
    if (!h)
        return false;
    for (size_t i = 0; i < cp->n; i++) {
        if (h->holds[i] > 0 && --h->holds[i] == 0)
            h->held_count--;
    }
    bool lost = h->lost_fired;
    if (h->depth > 0 && --h->depth == 0)
        h->lost_fired = false;
    return lost;
}

bool dlock__holding_member_lost(composite *cp, uint64_t owner, size_t i) {
    holding *h = dlock__holding_find(cp, owner);
    if (!h)
        return false;
    if (h->holds[i] > 0) {
        h->holds[i] = 0;
        h->held_count--;
    }
    if (h->depth == 0 || h->held_count >= cp->quorum || h->lost_fired)
        return false;
    h->lost_fired = true;
    return true;
}

void dlock__holdings_free(composite *cp) {
    while (cp->holdings) {
        holding *h = cp->holdings;
        cp->holdings = h->next;
        dlock__free(h->holds);
        dlock__free(h);
    }
}
