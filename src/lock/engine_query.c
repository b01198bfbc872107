/* SPDX-License-Identifier: MIT */
/* engine_query.c — the lock engine's calls that take no place in an owner's sequence: force release
 * (the kind's force script), the queries (plain commands on N), the owner's token (loop-thread
 * state, no I/O), and the two calls only composites make
 * (member.h): an explicit lease for a hold, and a fenced member's token floor. */
#include <string.h>

#include "dlock_object.h"
#include "engine.h"

/* A script's one-value answer when it came and has the script's shape; otherwise the op
 * ends here, with the failure or the unexpected reply, and false. */
static bool script_answer(lock_op *op, int status, const dlock__reply *reply,
                          const dlock__reply_shape *shape, int64_t *answer) {
    if (status != DLOCK_OK) {
        dlock__lock_op_fail(op, status, reply);
        return false;
    }
    dlock__shape_values got;
    if (!dlock__reply_shape_check(shape, reply, &got)) {
        dlock__lock_op_end(op, dlock__op_bad_shape(&op->op, shape, reply, op->lock->kind->what,
                                                   op->lock->base.name));
        return false;
    }
    *answer = got.value[0];
    return true;
}

static void on_force_reply(dlock_client *c, int status, const dlock__reply *reply, int sends,
                           void *arg) {
    (void)c;
    (void)sends; /* never resent */
    lock_op *op = arg;
    if (script_answer(op, status, reply, &dlock__shape_lock_force, &op->answer))
        dlock__lock_op_end(op, DLOCK_OK);
}

void dlock__force_start(dlock__op *o) {
    lock_op *op = (lock_op *)o;
    if (!dlock__lock_op_begin(op))
        return;
    lock_handle *l = op->lock;
    hold none = {0}; /* force release is nobody's: no owner field */
    dlock__lock_view v = dlock__view_of(l, &none, DLOCK_WATCHDOG);
    v.field = "";
    dlock__args a = {0};
    int nkeys = l->kind->force_args(&v, &a);
    /* not resent after a lost reply: a second delete could hit a lock taken meanwhile */
    int rc = dlock__script(l->client, l->kind->force_script, 0, on_force_reply, op, nkeys, a.n, a.v,
                           a.len);
    if (rc != DLOCK_OK)
        dlock__lock_op_fail(op, rc, NULL);
}

/* The read-write lock's halves are locked while N's mode says their mode. */
static bool mode_is(const dlock__reply *reply, const char *mode) {
    size_t len;
    const char *s = dlock__reply_str(reply, &len);
    return s && len == strlen(mode) && memcmp(s, mode, len) == 0;
}

/* EXISTS, HEXISTS and PTTL answer an integer; HGET a count (a decimal string) or nil; the
 * read-write halves' HGET of the mode a string or nil. DLOCK_EREDIS for anything else. */
static int query_answer(lock_op *op, const dlock__reply *reply, int64_t *answer) {
    const char *mode = op->lock->kind->locked_mode;
    int type = dlock__reply_type(reply);
    bool by_mode = op->what == DLOCK__MEMBER_IS_LOCKED && mode;
    bool nil_ok = by_mode || op->what == DLOCK__MEMBER_HOLD_COUNT;
    if (type == DLOCK__REPLY_NIL && nil_ok) {
        *answer = 0;
        return DLOCK_OK;
    }
    if (by_mode && type == DLOCK__REPLY_STRING) {
        *answer = mode_is(reply, mode);
        return DLOCK_OK;
    }
    bool counted = type == DLOCK__REPLY_INTEGER ||
                   (type == DLOCK__REPLY_STRING && op->what == DLOCK__MEMBER_HOLD_COUNT);
    if (!by_mode && counted && dlock__reply_int64(reply, answer) == DLOCK_OK)
        return DLOCK_OK;
    return dlock__op_bad_reply(&op->op, reply, op->lock->kind->what, op->lock->base.name);
}

static void on_query_reply(dlock_client *c, int status, const dlock__reply *reply, int sends,
                           void *arg) {
    (void)c;
    (void)sends; /* a read */
    lock_op *op = arg;
    if (status != DLOCK_OK) {
        dlock__lock_op_fail(op, status, reply);
        return;
    }
    dlock__lock_op_end(op, query_answer(op, reply, &op->answer));
}

/* The query's command: name, key, and the owner's field or the mode field. */
static void query_args(const lock_op *op, dlock__args *a, const char *field) {
    const char *mode = op->lock->kind->locked_mode;
    static const char *const commands[] = {
        [DLOCK__MEMBER_IS_LOCKED] = "EXISTS",
        [DLOCK__MEMBER_IS_HELD] = "HEXISTS",
        [DLOCK__MEMBER_HOLD_COUNT] = "HGET",
        [DLOCK__MEMBER_TTL] = "PTTL",
    };
    bool by_mode = op->what == DLOCK__MEMBER_IS_LOCKED && mode;
    dlock__args_str(a, by_mode ? "HGET" : commands[op->what]);
    dlock__args_str(a, op->lock->base.name);
    if (op->what == DLOCK__MEMBER_IS_HELD || op->what == DLOCK__MEMBER_HOLD_COUNT)
        dlock__args_str(a, field);
    if (by_mode)
        dlock__args_str(a, "mode");
}

void dlock__query_start(dlock__op *o) {
    lock_op *op = (lock_op *)o;
    if (!dlock__lock_op_begin(op))
        return;
    char field[DLOCK__LOCK_FIELD_MAX];
    dlock__owner_field_of(op->lock, op->owner, field);
    dlock__args a = {0};
    query_args(op, &a, field);
    int rc = dlock__command(op->lock->client, DLOCK__CMD_RETRY_SAFE, on_query_reply, op, a.n, a.v,
                            a.len);
    if (rc != DLOCK_OK)
        dlock__lock_op_fail(op, rc, NULL);
}

void dlock__token_start(dlock__op *o) {
    lock_op *op = (lock_op *)o;
    if (!dlock__lock_op_begin(op))
        return;
    hold *h = dlock__hold_find(op->lock->state, op->owner);
    if (!h || !h->has_token) {
        dlock__op_fail(o, DLOCK_ENOTOWNER, "this owner never acquired lock %s",
                       op->lock->base.name);
        dlock__lock_op_end(op, DLOCK_ENOTOWNER);
        return;
    }
    op->token = h->token;
    dlock__lock_op_end(op, DLOCK_OK);
}

static void not_owner(lock_op *op) {
    dlock__op_fail(&op->op, DLOCK_ENOTOWNER, "lock %s is not held by this owner",
                   op->lock->base.name);
    dlock__lock_op_end(op, DLOCK_ENOTOWNER);
}

/* Both scripts answer 1 when the owner holds the lock (and the change is made), 0 when it
 * does not. For set_lease (op->hold set) the owner's holds are then lost: reported here,
 * not again by a release. */
static void on_owner_script_reply(dlock_client *c, int status, const dlock__reply *reply, int sends,
                                  void *arg) {
    (void)c;
    (void)sends; /* setting the lease or raising the floor twice is doing it once */
    lock_op *op = arg;
    int64_t held;
    if (!script_answer(op, status, reply, &dlock__shape_lock_owner_call, &held))
        return;
    if (held == 1) {
        dlock__lock_op_end(op, DLOCK_OK);
        return;
    }
    if (op->hold) {
        dlock__holds_lost(op->hold, DLOCK_ELOST);
        op->hold->lost = 0;
    }
    not_owner(op);
}

void dlock__set_lease_start(dlock__op *o) {
    lock_op *op = (lock_op *)o;
    if (!dlock__lock_op_begin(op))
        return;
    lock_handle *l = op->lock;
    hold *h = dlock__hold_find(l->state, op->owner);
    if (!h || h->count == 0) {
        not_owner(op);
        return;
    }
    op->hold = h;
    dlock__hold_unwatch(h); /* the lease is explicit from now on */
    h->lease_ms = op->lease_ms;
    dlock__args a = {0};
    dlock__args_str(&a, l->base.name);
    dlock__args_int(&a, op->lease_ms);
    dlock__args_str(&a, h->field);
    int rc = dlock__script(l->client, DLOCK__SCRIPT_LOCK_SET_LEASE, DLOCK__CMD_RETRY_SAFE,
                           on_owner_script_reply, op, 1, a.n, a.v, a.len);
    if (rc != DLOCK_OK)
        dlock__lock_op_fail(op, rc, NULL);
}

void dlock__raise_token_start(dlock__op *o) {
    lock_op *op = (lock_op *)o;
    if (!dlock__lock_op_begin(op))
        return;
    lock_handle *l = op->lock;
    char field[DLOCK__LOCK_FIELD_MAX];
    dlock__owner_field_of(l, op->owner, field);
    dlock__args a = {0};
    dlock__args_str(&a, l->base.name);
    dlock__args_str(&a, l->token_key);
    dlock__args_str(&a, field);
    dlock__args_int(&a, (int64_t)op->token_floor);
    /* resent freely: raising to the same floor twice is raising it once */
    int rc = dlock__script(l->client, DLOCK__SCRIPT_LOCK_RAISE_TOKEN, DLOCK__CMD_RETRY_SAFE,
                           on_owner_script_reply, op, 2, a.n, a.v, a.len);
    if (rc != DLOCK_OK)
        dlock__lock_op_fail(op, rc, NULL);
}
