/* SPDX-License-Identifier: MIT */
/* engine_release.c — the lock engine's release (lock_engine.h): one hold of the owner
 * given back by the kind's release script, in the owner's sequence, and what its reply means
 * for the hold (holds left, a hold lost meanwhile, a resend's reply, not the owner).
 *
 * The last hold's release stops the owner's watchdog lease before it is sent, so that a
 * renewal cannot keep a lock its owner is freeing. A release Redis refuses (an ACL without
 * the channel, a server error) changed nothing in Redis, so it must change nothing here
 * either: the lease it stopped is registered again and confirmed by one renewal, or the
 * lock would stay held in Redis with nobody renewing it. */
#include "dlock_object.h"
#include "engine.h"

/* The owner still holds what a refused release stopped renewing. A lost connection is not
 * a refusal (the release may have been applied); a closing client renews nothing. */
static bool lease_to_restore(const lock_op *op, int status) {
    const hold *h = op->hold;
    return op->unwatched && status != DLOCK_ECONN && status != DLOCK_ECANCELED &&
           status != DLOCK_ECLOSED && h->count > 0 && h->lease_ms == DLOCK_WATCHDOG && !h->watchdog;
}

/* The renewal's answer: renewed from its send, or the holds are gone meanwhile. Without an
 * answer the release's send time stands in (the lease was confirmed then, as far as the
 * client knows), and the watchdog's expiry takes it from there. */
static void on_relet_reply(dlock_client *c, int status, const dlock__reply *reply, int sends,
                           void *arg) {
    (void)sends;
    (void)c;
    lock_op *op = arg;
    hold *h = op->hold;
    bool answered = status == DLOCK_OK && dlock__reply_shape_each(&dlock__shape_renewed, reply, 1);
    if (answered && dlock__reply_int(dlock__reply_at(reply, 0)) != 1)
        dlock__holds_lost(h, DLOCK_ELOST);
    else if (h->watchdog)
        dlock__lease_held(h->watchdog, answered ? op->relet_ms : op->sent_ms);
    dlock__hold_settled(op, op->refused, -1);
}

/* Registers the owner's lease again and confirms it with the kind's renewal (in the
 * owner's sequence still), then the release ends with its refusal, status. */
static void restore_lease(lock_op *op, int status) {
    lock_handle *l = op->lock;
    hold *h = op->hold;
    if (!dlock__hold_watch(l, h)) {
        dlock__hold_settled(op, status, -1);
        return;
    }
    dlock__lease_bound(h->watchdog, h->bound_until_ms); /* the hold's, not a new one */
    op->refused = status;
    dlock__args a = {0};
    dlock__args_str(&a, l->base.name);
    dlock__args_int(&a, dlock__client_watchdog_ms(l->client));
    dlock__args_str(&a, h->field);
    op->relet_ms = dlock__now_ms();
    int rc = dlock__script(l->client, h->state->lease_ops.renew_script, DLOCK__CMD_RETRY_SAFE,
                           on_relet_reply, op, 1, a.n, a.v, a.len);
    if (rc != DLOCK_OK) {
        dlock__lease_held(h->watchdog, op->sent_ms);
        dlock__hold_settled(op, status, -1);
    }
}

/* The release ends with status (its detail set), as if Redis had not applied it. */
static void release_refused(lock_op *op, int status) {
    if (lease_to_restore(op, status))
        restore_lease(op, status);
    else
        dlock__hold_settled(op, status, -1);
}

/* The release failed: reply is the server's error, or NULL. */
static void release_failed(lock_op *op, int status, const dlock__reply *reply) {
    /* DLOCK_ECONN: it may or may not have been applied. A repeat of the release settles
     * it (release.lua's resend rule); if the owner acquires instead, that acquire counts
     * it as applied first (engine_acquire.c). */
    if (status == DLOCK_ECONN)
        op->hold->release_unsure = true;
    dlock__op_fail_reply(&op->op, status, reply);
    release_refused(op, status);
}

static int lost_while_held(lock_op *op) {
    return dlock__op_fail(&op->op, DLOCK_ELOST, "lock %s was lost while held", op->lock->base.name);
}

/* The owner holds nothing in Redis: which of the reasons it is. */
static int nothing_held(lock_op *op, int sends, bool unsure) {
    hold *h = op->hold;
    if (h->count == 0 && unsure)
        return DLOCK_OK; /* the release that failed had been applied */
    if (h->count == 0)
        return dlock__op_fail(&op->op, DLOCK_ENOTOWNER, "lock %s is not held by this owner",
                              op->lock->base.name);
    if (h->count == 1 && (sends > 1 || unsure)) {
        /* an earlier send of this release (or the failed call before it) freed it */
        h->count = 0;
        return DLOCK_OK;
    }
    /* the holds vanished (expired, force-released) before the watchdog noticed */
    dlock__holds_lost(h, DLOCK_ELOST);
    h->lost--;
    return lost_while_held(op);
}

/* What a successful reply means for the hold; the status to end the op with (its detail
 * set). sends: how many times the release was sent. */
static int release_outcome(lock_op *op, int64_t left, int sends) {
    hold *h = op->hold;
    bool unsure = h->release_unsure;
    h->release_unsure = false;
    if (left < 0)
        return nothing_held(op, sends, unsure);
    h->count = left;
    if (!op->report_lost)
        return DLOCK_OK;
    h->lost--;
    return dlock__op_fail(&op->op, DLOCK_ELOST, "lock %s: an earlier hold was lost",
                          op->lock->base.name);
}

static void on_release_reply(dlock_client *c, int status, const dlock__reply *reply, int sends,
                             void *arg) {
    (void)c;
    lock_op *op = arg;
    dlock__shape_values got;
    if (status != DLOCK_OK) {
        release_failed(op, status, reply);
    } else if (!dlock__reply_shape_check(&dlock__shape_lock_release, reply, &got)) {
        /* not the script speaking: the hold is kept (and renewed) as after a refusal */
        release_refused(op, dlock__op_bad_shape(&op->op, &dlock__shape_lock_release, reply,
                                                op->lock->kind->what, op->lock->base.name));
    } else {
        dlock__hold_settled(op, release_outcome(op, got.value[0], sends), -1);
    }
}

/* The owner's sequence (dlock__hold_run): its count is what Redis has, as the client knows. */
static void release_send(lock_op *op) {
    lock_handle *l = op->lock;
    hold *h = op->hold;
    if (h->lost > 0 && h->count == 0) {
        h->lost--;
        dlock__hold_settled(op, lost_while_held(op), -1);
        return;
    }
    /* A hold was lost but the owner took the lock again since: this release gives the live
     * hold back (it must not stay behind, renewed for ever) and reports the loss. */
    h->sends++;
    op->report_lost = h->lost > 0;
    op->unwatched = h->count == 1 && h->watchdog;
    if (op->unwatched)
        dlock__hold_unwatch(h); /* the last hold goes: stop renewing before the release */
    dlock__lock_view v = dlock__view_of(l, h, h->count > 0 ? h->lease_ms : DLOCK_WATCHDOG);
    dlock__args a = {0};
    int nkeys = l->kind->release_args(&v, &a);
    op->sent_ms = dlock__now_ms();
    /* no WAIT of its own (DLOCK__CMD_NO_WAIT): the next write's covers it */
    int rc = dlock__script(l->client, l->kind->release_script,
                           DLOCK__CMD_RETRY_SAFE | DLOCK__CMD_NO_WAIT, on_release_reply, op, nkeys,
                           a.n, a.v, a.len);
    if (rc != DLOCK_OK)
        release_failed(op, rc, NULL);
}

void dlock__release_start(dlock__op *o) {
    lock_op *op = (lock_op *)o;
    if (!dlock__lock_op_begin(op))
        return;
    op->hold = dlock__hold_get(op->lock, op->owner);
    if (!op->hold) {
        dlock__lock_op_fail(op, DLOCK_ENOMEM, NULL);
        return;
    }
    dlock__hold_run(op->hold, op, release_send);
}
