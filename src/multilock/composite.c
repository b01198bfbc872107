/* SPDX-License-Identifier: MIT */
/* composite.c — the composite handle, what MultiLock (multilock.c) and RedLock (redlock.c)
 * share: creation, the references and the free protocol, the carrying of a member's answer
 * home, the end of an op, and a member's loss told as the composite's.
 *
 * No Redis data of its own: each member is an ordinary lock, possibly on another client
 * and so another Redis. The doors of the public calls are in calls.c.
 *
 * It calls holding.c only, and the kind's cancel through the kind table: the rounds
 * (round.c) stand on it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "composite.h"

static composite *of(dlock_lock *l) {
    return (composite *)l; /* the base is the first member */
}

/* ---- lifetime ------------------------------------------------------------------------ */

void dlock__composite_unref(composite *cp) {
    if (atomic_fetch_sub(&cp->refs, 1) != 1)
        return;
    dlock__holdings_free(cp);
    pthread_mutex_destroy(&cp->home_mu);
    dlock__free(cp->members);
    dlock__free(cp->base.name);
    dlock__free(cp);
}

/* The handle is gone: its last op has ended after the free. Nothing at home waits for an
 * answer any more, and the application may free the home client next: from now on the
 * answers of members on other clients, still on their way, stay where they are. */
static void handle_gone(dlock__handle *h) {
    composite *cp = DLOCK__CONTAINER_OF(h, composite, handle);
    pthread_mutex_lock(&cp->home_mu);
    cp->home_gone = true;
    pthread_mutex_unlock(&cp->home_mu);
    dlock__composite_unref(cp);
}

enum carry dlock__composite_carry(composite *cp, dlock__op *op) {
    enum carry how = CARRY_REFUSED;
    pthread_mutex_lock(&cp->home_mu); /* cp->home stays while it is held and !home_gone */
    if (!cp->home_gone) {
        if (dlock__on_loop_thread(cp->home))
            how = CARRY_HERE;
        else if (dlock__op_post(op) == DLOCK_OK)
            how = CARRY_POSTED;
    }
    pthread_mutex_unlock(&cp->home_mu);
    return how;
}

static void unlist(comp_op *op) {
    comp_op **link = &op->cp->acquiring;
    while (*link != op)
        link = &(*link)->next_acquiring;
    *link = op->next_acquiring;
    op->listed = false;
}

/* The free's first step on the home loop: the acquires in flight end. */
static void cancel_start(dlock__op *o) {
    composite *cp = DLOCK__CONTAINER_OF(o, composite, cancel_call);
    while (cp->acquiring) {
        comp_op *op = cp->acquiring;
        unlist(op);
        cp->kind->cancel(op);
    }
}

/* The members' lost callbacks are theirs again at once; on the home loop the acquires in
 * flight are canceled, then the handle goes after its last callback (dlock__handle_free). */
void dlock__composite_free(dlock_lock *l) {
    composite *cp = of(l);
    atomic_store(&cp->gone, true);
    for (size_t i = 0; i < cp->n; i++)
        dlock__member_release_claim(cp->members[i]);
    dlock__op_init(&cp->cancel_call, cp->home, cancel_start);
    cp->cancel_call.complete = cancel_start; /* the client closed before it started */
    (void)dlock__op_post(&cp->cancel_call);  /* refused: the client is closing, nothing runs */
    dlock__handle_free(&cp->handle);
}

/* ---- an op's end --------------------------------------------------------------------- */

void dlock__composite_end(comp_op *op, int status) {
    if (op->listed)
        unlist(op);
    dlock__op_end(&op->op, status);
}

void dlock__composite_fail(comp_op *op, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    dlock__vformat_fit(op->op.error_text, sizeof(op->op.error_text), fmt, ap);
    va_end(ap);
    dlock__composite_end(op, status);
}

/* ---- a member's loss ----------------------------------------------------------------- */

typedef struct lost_event {
    dlock__op carry; /* to the home loop */
    composite *cp;   /* referenced */
    size_t index;
    uint64_t owner;
    int reason;
} lost_event;

static void lost_home(composite *cp, size_t i, uint64_t owner, int reason) {
    if (atomic_load(&cp->gone) || !dlock__holding_member_lost(cp, owner, i) || !cp->lost_cb)
        return;
    dlock__user_callback_enter(cp->home);
    cp->lost_cb(&cp->base, owner, reason, cp->lost_arg);
    dlock__user_callback_leave(cp->home);
}

static void lost_carried(dlock__op *o) {
    lost_event *e = DLOCK__CONTAINER_OF(o, lost_event, carry);
    lost_home(e->cp, e->index, e->owner, e->reason);
    dlock__composite_unref(e->cp);
    dlock__free(e);
}

static void lost_dropped(dlock__op *o) {
    lost_event *e = DLOCK__CONTAINER_OF(o, lost_event, carry);
    dlock__composite_unref(e->cp);
    dlock__free(e);
}

/* A member's lost lease (member.h), on its loop thread: told at home. */
static void member_lost(dlock_lock *member, uint64_t owner, int reason, void *arg) {
    composite *cp = arg;
    size_t i = 0;
    while (i < cp->n && cp->members[i] != member)
        i++;
    if (i == cp->n || atomic_load(&cp->gone))
        return;
    lost_event *e = dlock__malloc(sizeof(*e));
    if (!e) {
        dlock__log(cp->home, DLOCK_LOG_ERROR, "%s: out of memory: a member's loss goes untold",
                   cp->base.name);
        return;
    }
    e->cp = cp;
    e->index = i;
    e->owner = owner;
    e->reason = reason;
    atomic_fetch_add(&cp->refs, 1);
    dlock__op_init(&e->carry, cp->home, lost_carried);
    e->carry.complete = lost_dropped;
    switch (dlock__composite_carry(cp, &e->carry)) {
    case CARRY_HERE:
        lost_carried(&e->carry);
        break;
    case CARRY_POSTED:
        break;
    case CARRY_REFUSED:
        lost_dropped(&e->carry);
        break;
    }
}

/* ---- creation ------------------------------------------------------------------------ */

/* The canonical order: by name, then by the Redis server (and database) the member lives
 * on. It depends only on what the members are, not on which client or process holds the
 * handles, so every MultiLock over overlapping members, in every process, takes them in
 * the same order: none waits for a member another holds while that one waits for a
 * member it holds. */
static int canonical_order(const void *a, const void *b) {
    dlock_lock *x = *(dlock_lock *const *)a, *y = *(dlock_lock *const *)b;
    int c = strcmp(dlock_lock_name(x), dlock_lock_name(y));
    return c ? c
             : strcmp(dlock__client_endpoint(dlock__member_client(x)),
                      dlock__client_endpoint(dlock__member_client(y)));
}

static int check_members(dlock_lock *const *locks, size_t n, bool redlock) {
    size_t fenced = 0;
    for (size_t i = 0; i < n; i++) {
        if (!locks[i])
            return dlock__fail(DLOCK_EINVAL, "member %zu is NULL", i);
        if (!dlock__member_client(locks[i]))
            return dlock__fail(DLOCK_EINVAL, "member %zu is a composite", i);
        for (size_t j = 0; j < i; j++)
            if (locks[j] == locks[i])
                return dlock__fail(DLOCK_EINVAL, "member %zu is given twice", i);
        fenced += dlock__member_fenced(locks[i]);
    }
    /* RedLock's token rule needs a token from every member of every quorum */
    if (redlock && fenced != 0 && fenced != n)
        return dlock__fail(DLOCK_EINVAL, "redlock members must be all fenced locks or none");
    return DLOCK_OK;
}

static void composite_destroy_new(composite *cp, size_t claimed) {
    for (size_t i = 0; i < claimed; i++)
        dlock__member_release_claim(cp->members[i]);
    dlock__free(cp->members);
    dlock__free(cp->base.name);
    dlock__free(cp);
}

int dlock__composite_new(dlock_lock *const *locks, size_t n, const dlock__lock_class *cls,
                         const composite_kind *kind, dlock_lock **out) {
    if (!locks || n == 0 || !out)
        return dlock__fail(DLOCK_EINVAL, "%s", !out ? "out is NULL" : "no members");
    bool redlock = kind->majority;
    int rc = check_members(locks, n, redlock);
    if (rc != DLOCK_OK)
        return rc;
    composite *cp = dlock__calloc(1, sizeof(*cp));
    char name[256];
    snprintf(name, sizeof(name), "%s(%s%s)", kind->what, dlock_lock_name(locks[0]),
             n > 1 ? ",..." : "");
    if (!cp || !(cp->members = dlock__malloc(n * sizeof(*cp->members))) ||
        !(cp->base.name = dlock__strdup(name))) {
        if (cp)
            composite_destroy_new(cp, 0);
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    }
    memcpy(cp->members, locks, n * sizeof(*locks));
    cp->n = n;
    /* a member reports its loss through one composite: it can belong to only one */
    for (size_t i = 0; i < n; i++) {
        if (!dlock__member_claim(locks[i], member_lost, cp)) {
            composite_destroy_new(cp, i);
            return dlock__fail(DLOCK_EINVAL, "member %zu belongs to another composite", i);
        }
    }
    cp->base.cls = cls;
    cp->kind = kind;
    cp->home = dlock__member_client(locks[0]);
    cp->redlock = redlock;
    cp->quorum = redlock ? n / 2 + 1 : n;
    cp->fenced = false;
    for (size_t i = 0; i < n; i++)
        cp->fenced |= dlock__member_fenced(locks[i]);
    atomic_init(&cp->refs, 1);
    atomic_init(&cp->gone, false);
    pthread_mutex_init(&cp->home_mu, NULL);
    cp->home_gone = false;
    if (!redlock)
        qsort(cp->members, n, sizeof(*cp->members), canonical_order);
    dlock__handle_init(&cp->handle, cp->home, handle_gone);
    *out = &cp->base;
    return DLOCK_OK;
}
