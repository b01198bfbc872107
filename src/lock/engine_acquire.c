/* SPDX-License-Identifier: MIT */
/* engine_acquire.c — the lock engine's acquire (lock_engine.h): the owner's watchdog lease
 * registered before anything is sent, then a wait (the core's waiting engine) whose every
 * attempt is the kind's acquire script, sent in the owner's sequence. A busy reply gives the
 * wait its hint (the holder's pttl, or the kind's busy_hint); a kind with no channel waits
 * on no channel, so the hint alone wakes it.
 *
 * Under ?sync_replicas (replicas.c) an acquisition fewer replicas acknowledged than asked
 * does not stand: it is given back at once (the kind's release script, in the owner's
 * sequence still, with no WAIT of its own), nothing is recorded, and the attempt counts as
 * busy. The wait goes on; when it ends, DLOCK_ETIMEDOUT says how many acknowledged. */
#include <string.h>

#include "dlock_object.h"
#include "engine.h"

static void on_acquire_reply(dlock_client *c, int status, const dlock__reply *reply,
                             const dlock__acks *acks, int sends, void *arg);

static void acquire_send(lock_op *op);

static void acquire_attempt(dlock__waiter *w) {
    lock_op *op = DLOCK__CONTAINER_OF(w, lock_op, waiter);
    dlock__hold_run(op->hold, op, acquire_send);
}

/* A turn, or a grant: the owner field, then a space and the grant's values. */
static bool acquire_named(const dlock__waiter *w, const char *turn, size_t len) {
    const lock_op *op = DLOCK__CONTAINER_OF(w, const lock_op, waiter);
    const char *field = op->hold ? op->hold->field : "";
    const char *space = memchr(turn, ' ', len);
    size_t field_len = space ? (size_t)(space - turn) : len;
    return strlen(field) == field_len && memcmp(field, turn, field_len) == 0;
}

/* A release failed with DLOCK_ECONN and was not repeated: count it as applied. If it was
 * not, this acquire finds one hold more than it believes and takes that hold as its own
 * (acquire.lua's resend rule), so no hold is left behind. */
static void settle_unsure_release(hold *h) {
    if (!h->release_unsure)
        return;
    if (h->count > 0)
        h->count--;
    h->release_unsure = false;
}

/* The hand-off's rule (acquire.lua, lock_engine.h's claims): every attempt of a wait but
 * its last puts the owner in line should it find the lock taken, the first one too, so
 * that a waiter a message does not wake keeps its place all the same. */
static void acquire_send(lock_op *op) {
    lock_handle *l = op->lock;
    hold *h = op->hold;
    settle_unsure_release(h);
    h->sends++;
    dlock__lock_view v = dlock__view_of(l, h, op->lease_ms);
    v.once = op->wait_ms == 0;
    v.attempts = ++op->attempts;
    v.last = !v.once && dlock__now_ms() >= op->waiter.deadline_ms;
    v.claims = !v.once && !v.last;
    v.claim_open = op->claim_open; /* before this attempt */
    op->claim_open = (op->claim_open || v.claims) && !v.last;
    dlock__args a = {0};
    int nkeys = l->kind->acquire_args(&v, &a);
    op->sent_ms = dlock__now_ms();
    int rc =
        dlock__script_acked(l->client, l->kind->acquire_script, DLOCK__CMD_RETRY_SAFE,
                            op->waiter.deadline_ms, on_acquire_reply, op, nkeys, a.n, a.v, a.len);
    if (rc != DLOCK_OK) {
        dlock__op_fail(&op->op, rc, "%s", dlock_strerror(rc));
        dlock__hold_settled(op, rc, -1);
    }
}

/* Busy: the holder's remaining lease is when it may free itself (-1 never), unless the
 * kind says when to look again. */
static int64_t busy_hint(lock_op *op, int64_t pttl) {
    if (pttl == -2)
        pttl = 0; /* gone by now: look again (the waiting engine's shortest sleep) */
    const dlock__lock_kind *kind = op->lock->kind;
    if (!kind->busy_hint)
        return pttl;
    dlock__lock_view v = dlock__view_of(op->lock, op->hold, op->lease_ms);
    v.attempts = op->attempts;
    return kind->busy_hint(&v, pttl);
}

/* When the watchdog is to stop renewing a hold op takes first: its handle's bound, or its
 * client's, from op's send; 0 for none. */
static int64_t bound_until(const lock_op *op) {
    int64_t bound = op->lock->max_hold_ms;
    if (bound == DLOCK_MAX_HOLD_CLIENT)
        bound = dlock__client_max_hold_ms(op->lock->client);
    return bound > 0 ? op->sent_ms + bound : 0;
}

void dlock__acquired(lock_op *op, const dlock__shape_values *got, bool confirmed) {
    hold *h = op->hold;
    int64_t holds = got->value[1];
    if (holds <= h->count) /* fewer than one more: the owner's earlier holds vanished */
        dlock__holds_lost(h, DLOCK_ELOST);
    if (h->count == 0) /* the owner's first hold: a reentrant one keeps the first's bound */
        h->bound_until_ms = bound_until(op);
    h->line = (holds > 1 && h->line) || got->value[0] == 2;
    h->count = holds;
    h->lease_ms = op->lease_ms;
    if (op->lock->fenced) {
        h->token = (uint64_t)got->value[2];
        h->has_token = true;
    }
    if (op->lease_ms == DLOCK_WATCHDOG && !h->watchdog)
        dlock__hold_watch(op->lock, h); /* lost while this acquire was in flight: again */
    if (h->watchdog) {
        dlock__lease_bound(h->watchdog, h->bound_until_ms);
        if (confirmed)
            dlock__lease_held(h->watchdog, op->sent_ms);
    }
}

/* What the kind's script may answer this owner: a fenced lock's token rises above the
 * owner's last one (none can rise above INT64_MAX). */
static dlock__reply_shape acquire_shape(const lock_op *op) {
    if (!op->lock->fenced)
        return dlock__shape_lock_acquire;
    dlock__reply_shape shape = dlock__shape_fenced_acquire;
    const hold *h = op->hold;
    dlock__shape_value *token = &shape.form[0].value[2];
    if (h->has_token && h->token >= (uint64_t)INT64_MAX)
        token->max = 0; /* below its min: no token fits */
    else if (h->has_token)
        token->min = (int64_t)h->token + 1;
    return shape;
}

/* ---- an acquisition too few replicas acknowledged ---------------------------------------- */

static void on_given_back(dlock_client *c, int status, const dlock__reply *reply, int sends,
                          void *arg) {
    (void)c;
    (void)sends; /* a release of the call's own field: the same whether sent once or twice */
    lock_op *op = arg;
    if (status != DLOCK_OK) { /* ECONN: it may stay until its lease (or the next acquire's) */
        dlock__op_fail_reply(&op->op, status, reply);
        dlock__hold_settled(op, status, -1);
    } else {
        int ends = op->given_back_ends;
        dlock__hold_settled(op, ends, ends == DLOCK__BUSY ? DLOCK__GIVE_BACK_RETRY_MS : -1);
    }
}

/* The kind's release of the hold just taken (Redis counts `holds` for the owner now, the
 * client still h->count): nothing is left of this acquisition. Its detail is the op's text
 * should the wait end now. */
static void give_back(lock_op *op, int64_t holds, const dlock__acks *acks) {
    lock_handle *l = op->lock;
    hold *h = op->hold;
    op->given_back_ends = dlock__op_unacked(&op->op, acks, l->kind->what, l->base.name);
    dlock__lock_view v = dlock__view_of(l, h, h->count > 0 ? h->lease_ms : DLOCK_WATCHDOG);
    v.believed = holds;
    dlock__args a = {0};
    int nkeys = l->kind->release_args(&v, &a);
    int rc = dlock__script(l->client, l->kind->release_script,
                           DLOCK__CMD_RETRY_SAFE | DLOCK__CMD_NO_WAIT, on_given_back, op, nkeys,
                           a.n, a.v, a.len);
    if (rc != DLOCK_OK) {
        dlock__op_fail(&op->op, rc, "%s", dlock_strerror(rc));
        dlock__hold_settled(op, rc, -1);
    }
}

static void on_acquire_reply(dlock_client *c, int status, const dlock__reply *reply,
                             const dlock__acks *acks, int sends, void *arg) {
    (void)c;
    (void)sends; /* the acquire script recognises its own retry by the owner's field */
    lock_op *op = arg;
    if (status != DLOCK_OK) {
        dlock__op_fail_reply(&op->op, status, reply);
        dlock__hold_settled(op, status, -1);
        return;
    }
    dlock__reply_shape shape = acquire_shape(op);
    dlock__shape_values got;
    if (!dlock__reply_shape_check(&shape, reply, &got)) {
        /* not the script speaking: nothing is recorded, and the wait ends (no retry) */
        int rc =
            dlock__op_bad_shape(&op->op, &shape, reply, op->lock->kind->what, op->lock->base.name);
        dlock__hold_settled(op, rc, -1);
    } else if (got.form != 0) {
        op->op.error_text[0] = '\0'; /* busy: held by another, whatever came before */
        int64_t joined = got.form == 2 ? got.value[2] : 0;
        if (joined != op->joined_us) /* this attempt joined the line (acquire.lua) */
            op->joined_sent_ms = op->sent_ms;
        op->joined_us = joined;
        op->acks_asked = acks->asked > 0;
        dlock__hold_settled(op, DLOCK__BUSY, busy_hint(op, got.value[1]));
    } else if (acks->acked < acks->asked) {
        give_back(op, got.value[1], acks);
    } else {
        dlock__acquired(op, &got, true);
        dlock__hold_settled(op, DLOCK_OK, -1);
    }
}

static void acquire_done(dlock__waiter *w, int status) {
    lock_op *op = DLOCK__CONTAINER_OF(w, lock_op, waiter);
    hold *h = op->hold;
    lock_handle *l = op->lock;
    op->waiting = false;
    if (status != DLOCK_OK && h->count == 0)
        dlock__hold_unwatch(h); /* nothing held: nothing to renew */
    if (status != DLOCK_OK && l->kind->gave_up) {
        dlock__lock_view v = dlock__view_of(l, h, op->lease_ms);
        v.claim_open = op->claim_open;
        l->kind->gave_up(&v);
    }
    if (status == DLOCK_ETIMEDOUT && !op->op.error_text[0]) /* else: too few replicas */
        dlock__op_fail(&op->op, status, "%s %s is held by another owner", l->kind->what,
                       l->base.name);
    dlock__lock_op_end(op, status);
}

/* The wait's rules for every owner of the name: the acquire's hooks and the wake rule of
 * the kind that made the name's state (engine.c), set on the name's first wait. */
static const dlock__wait_ops *wait_ops_of(lock_state *st) {
    dlock__wait_ops *ops = &st->wait_ops;
    if (!ops->attempt) {
        ops->attempt = acquire_attempt;
        ops->wake_count = st->kind->wake_count;
        ops->turn_ms = st->kind->turn_ms;
        ops->named = st->kind->turn_channel ? acquire_named : NULL;
        ops->granted = st->kind->grant_ms > 0 ? dlock__acquire_granted : NULL;
        ops->done = acquire_done;
    }
    return ops;
}

/* Where the owner waits: nowhere for a kind without pub/sub, the kind's own channel for
 * this owner, or the lock's, with the kind's turn channel. false on ENOMEM. */
static bool waiting_channel(lock_op *op, const char **channel, const char **turn_channel) {
    lock_handle *l = op->lock;
    hold *h = op->hold;
    *channel = l->kind->no_channel ? NULL : l->channel;
    *turn_channel = NULL;
    if (l->kind->no_channel)
        return true;
    dlock__lock_view v = dlock__view_of(l, h, op->lease_ms);
    if (!l->kind->waiter_channel) {
        *turn_channel = l->kind->turn_channel ? l->kind->turn_channel(&v) : NULL;
        return true;
    }
    if (!h->waiter_channel)
        h->waiter_channel = l->kind->waiter_channel(&v);
    *channel = h->waiter_channel;
    return h->waiter_channel != NULL;
}

void dlock__acquire_start(dlock__op *o) {
    lock_op *op = (lock_op *)o;
    if (!dlock__lock_op_begin(op))
        return;
    lock_handle *l = op->lock;
    hold *h = op->hold = dlock__hold_get(l, op->owner);
    /* the lease is registered before the acquire is sent: a release never runs ahead */
    bool watched = h && (op->lease_ms != DLOCK_WATCHDOG || h->watchdog || dlock__hold_watch(l, h));
    const char *channel, *turn_channel;
    if (!watched || !waiting_channel(op, &channel, &turn_channel)) {
        dlock__lock_op_fail(op, DLOCK_ENOMEM, NULL);
        return;
    }
    op->waiting = true;
    dlock__wait_start_on(&op->waiter, &l->handle, wait_ops_of(h->state), channel, turn_channel,
                         op->wait_ms);
}
