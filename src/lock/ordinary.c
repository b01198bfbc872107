/* SPDX-License-Identifier: MIT */
/* ordinary.c — the ordinary handle: its assembly for a kind (dlock__lock_create,
 * lock_engine.h), its free, and its class (lock_class.h): every lock kind standing on the
 * lock engine answers the public calls here, each an op of the engine run on the client's
 * loop thread (the blocking face waits for it on the caller's stack, the async face
 * allocates it). The arguments were checked by api.c.
 *
 * It calls the engine (engine.c and the starts of engine_acquire.c, engine_release.c and
 * engine_query.c); none of them calls it. */
#include "engine.h"

/* ---- the ordinary handle ---------------------------------------------------------------- */

lock_handle *dlock__ordinary(dlock_lock *l) {
    return l && l->cls == &dlock__ordinary_class ? (lock_handle *)l : NULL;
}

int dlock__ordinary_check(const dlock_lock *l) {
    return dlock__handle_check(&((const lock_handle *)l)->handle);
}

void dlock__ordinary_free(dlock_lock *l) {
    dlock__handle_free(&((lock_handle *)l)->handle);
}

static void lock_destroy(lock_handle *l) {
    lock_state *st = l->state;
    if (st && !dlock__client_closing(l->client)) {
        lock_handle **link = &st->handles;
        while (*link != l)
            link = &(*link)->next_of_state;
        *link = l->next_of_state;
        dlock__shared_put(l->client, st);
    }
    if (l->kind_data)
        l->kind->data_free(l->kind_data);
    dlock__free(l->base.name);
    dlock__free(l->channel);
    dlock__free(l->token_key);
    dlock__free(l);
}

static void lock_handle_destroy(dlock__handle *handle) {
    lock_destroy(DLOCK__CONTAINER_OF(handle, lock_handle, handle));
}

int dlock__lock_create(dlock_client *c, const char *name, const dlock__lock_kind *kind, bool fenced,
                       dlock_lock **out) {
    if (!c)
        return dlock__fail(DLOCK_EINVAL, "client is NULL");
    if (!out)
        return dlock__fail(DLOCK_EINVAL, "out is NULL");
    int rc = dlock__check_name(name);
    if (rc != DLOCK_OK)
        return rc;
    lock_handle *l = dlock__calloc(1, sizeof(*l));
    if (!l)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    l->base.cls = &dlock__ordinary_class;
    dlock__handle_init(&l->handle, c, lock_handle_destroy);
    l->handle.kind = kind->what;
    l->client = c;
    l->kind = kind;
    l->fenced = fenced;
    l->max_hold_ms = DLOCK_MAX_HOLD_CLIENT;
    l->base.name = dlock__strdup(name);
    l->channel = dlock__name_prefixed("redisson_lock__channel", name);
    l->token_key = fenced ? dlock__name_prefixed("redisson_lock_token", name) : NULL;
    l->kind_data = kind->data_new ? kind->data_new(name) : NULL;
    if (!l->base.name || !l->channel || (fenced && !l->token_key) ||
        (kind->data_new && !l->kind_data)) {
        lock_destroy(l);
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    }
    *out = &l->base;
    return DLOCK_OK;
}

/* ---- the class calls ------------------------------------------------------------------- */

static lock_handle *handle_of(dlock_lock *l) {
    return (lock_handle *)l;
}

static int acquire_async(dlock_lock *l, uint64_t owner, int64_t wait_ms, int64_t lease_ms,
                         dlock_lock_cb cb, void *arg) {
    lock_op *op = dlock__lock_op_new(handle_of(l), dlock__acquire_start, owner);
    if (!op)
        return DLOCK_ENOMEM;
    op->wait_ms = wait_ms;
    op->lease_ms = lease_ms;
    return dlock__lock_op_submit(op, cb, arg);
}

static int release_async(dlock_lock *l, uint64_t owner, dlock_lock_cb cb, void *arg) {
    lock_op *op = dlock__lock_op_new(handle_of(l), dlock__release_start, owner);
    return op ? dlock__lock_op_submit(op, cb, arg) : DLOCK_ENOMEM;
}

static int try_acquire(dlock_lock *l, uint64_t owner, int64_t wait_ms, int64_t lease_ms) {
    lock_op op;
    dlock__lock_op_init(&op, handle_of(l), dlock__acquire_start, owner);
    op.wait_ms = wait_ms;
    op.lease_ms = lease_ms;
    return dlock__lock_op_run(&op);
}

static int release(dlock_lock *l, uint64_t owner) {
    lock_op op;
    dlock__lock_op_init(&op, handle_of(l), dlock__release_start, owner);
    return dlock__lock_op_run(&op);
}

static int force_release(dlock_lock *l, bool *was_locked) {
    lock_op op;
    dlock__lock_op_init(&op, handle_of(l), dlock__force_start, 0);
    int rc = dlock__lock_op_run(&op);
    if (rc == DLOCK_OK && was_locked)
        *was_locked = op.answer != 0;
    return rc;
}

/* Runs a query for owner; the answer (an integer, 0 for nil) in *answer. */
static int query(dlock_lock *l, uint64_t owner, enum dlock__member_query what, int64_t *answer) {
    lock_op op;
    dlock__lock_op_init(&op, handle_of(l), dlock__query_start, owner);
    op.what = what;
    int rc = dlock__lock_op_run(&op);
    if (rc == DLOCK_OK)
        *answer = op.answer;
    return rc;
}

static int is_locked(dlock_lock *l, bool *out) {
    int64_t v;
    int rc = query(l, 0, DLOCK__MEMBER_IS_LOCKED, &v);
    if (rc == DLOCK_OK)
        *out = v != 0;
    return rc;
}

static int is_held(dlock_lock *l, uint64_t owner, bool *out) {
    int64_t v;
    int rc = query(l, owner, DLOCK__MEMBER_IS_HELD, &v);
    if (rc == DLOCK_OK)
        *out = v != 0;
    return rc;
}

static int hold_count(dlock_lock *l, uint64_t owner, int64_t *out) {
    return query(l, owner, DLOCK__MEMBER_HOLD_COUNT, out);
}

static int ttl(dlock_lock *l, uint64_t owner, int64_t *out_ms) {
    (void)owner;
    return query(l, 0, DLOCK__MEMBER_TTL, out_ms);
}

/* On the loop thread the holds are at hand: read without an op. */
static int token_on_loop(lock_handle *h, uint64_t owner, uint64_t *out) {
    hold *held = h->state ? dlock__hold_find(h->state, owner) : NULL;
    if (!held || !held->has_token)
        return dlock__fail(DLOCK_ENOTOWNER, "this owner never acquired lock %s", h->base.name);
    *out = held->token;
    return DLOCK_OK;
}

static int token_of(dlock_lock *l, uint64_t owner, uint64_t *out) {
    lock_handle *h = handle_of(l);
    if (!h->fenced)
        return dlock__fail(DLOCK_EINVAL, "lock %s is not a fenced lock", l->name);
    if (dlock__on_loop_thread(h->client))
        return token_on_loop(h, owner, out);
    lock_op op;
    dlock__lock_op_init(&op, h, dlock__token_start, owner);
    int rc = dlock__lock_op_run(&op);
    if (rc == DLOCK_OK)
        *out = op.token;
    return rc;
}

static int on_lost(dlock_lock *l, dlock_lost_cb cb, void *arg) {
    return dlock__lock_set_lost(handle_of(l), false, (lost_to){cb, arg});
}

/* Read by the loop thread when an owner's first hold is taken (engine_acquire.c). */
static int set_max_hold(dlock_lock *l, int64_t max_hold_ms) {
    handle_of(l)->max_hold_ms = max_hold_ms;
    return DLOCK_OK;
}

const dlock__lock_class dlock__ordinary_class = {
    .what = "lock",
    .check = dlock__ordinary_check,
    .acquire_async = acquire_async,
    .release_async = release_async,
    .try_acquire = try_acquire,
    .release = release,
    .force_release = force_release,
    .is_locked = is_locked,
    .is_held = is_held,
    .hold_count = hold_count,
    .ttl = ttl,
    .token_of = token_of,
    .on_lost = on_lost,
    .set_max_hold = set_max_hold,
    .free = dlock__ordinary_free,
};
