/* SPDX-License-Identifier: MIT */
/* composite.c — the composite handle, what MultiLock (multilock.c) and RedLock (redlock.c)
 * share: creation, the doors of the public calls (lock_class.h), a member's loss told as
 * the composite's, and the free protocol.
 *
 * No Redis data of its own: each member is an ordinary lock, possibly on another client
 * and so another Redis. Every call is an op of the home client, the first member's
 * (composite.h): the async face submits it and calls back on the home loop thread; the
 * blocking face runs it (dlock__op_run) and is refused on any member's loop thread, whose
 * answer it would wait for (DLOCK_EDEADLK). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "composite.h"

static composite *of(dlock_lock *l) {
    return (composite *)l; /* the base is the first member */
}

/* ---- lifetime ---------------------------------------------------------------------------- */

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

/* ---- ops --------------------------------------------------------------------------------- */

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

/* ---- the class calls ----------------------------------------------------------------------- */

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

/* ---- a member's loss -------------------------------------------------------------------- */

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

/* ---- creation --------------------------------------------------------------------------- */

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
