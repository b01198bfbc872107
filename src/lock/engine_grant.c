/* SPDX-License-Identifier: MIT */
/* engine_grant.c — the lock engine's side of a grant: a release that handed the lock to a
 * waiting owner inside its own script (release.lua), so that the owner holds it once its
 * client has heard the grant, with no attempt of its own: a hand-off costs one message, not
 * a message and a round trip.
 *
 * The grant, on the kind's turn channel: "<owner field> <1|2> <token> <joined> <now>". The
 * release wrote the owner's hold (one, with the grant's short lease, the kind's grant_ms)
 * before it published; 2 says others still wait in line, token is the new token (0 where
 * the name has no counter), joined the place in line (µs of the server's clock) the release
 * handed the lock to, and now the server's clock when it did.
 *
 * A sleeping waiter takes the grant from the message (the waiting engine's granted hook)
 * only when the client can tell that the grant's lease is still far from its end:
 *   - joined is the place the waiter's latest busy attempt answered it holds (acquire.lua),
 *     so the release ran after that attempt reached Redis; a grant of an earlier place (one
 *     heard late, whose lease may have run out and whose lock may be another's by now) is
 *     not this wait's. So the grant's lease began after that attempt's send, and also no
 *     sooner than (now - joined) after the send of the attempt that joined at that place
 *     (every wait joins anew, acquire.lua), less 1/10,000 of it (two clocks' rates) and a ms
 *     (this clock's grain). The later of the two is when it began at the earliest;
 *   - at most half of grant_ms has passed since then, so the lock is the owner's for at
 *     least the other half, whatever the message's delay;
 *   - the command connection has been up for a second (dlock__client_commands_steady):
 *     dropped now, it comes back at once, so the confirmation below lands in time; one
 *     that keeps dropping could keep it out past the grant's lease;
 *   - the latest attempt asked no replica to acknowledge it (?sync_replicas): a grant was
 *     acknowledged by nobody, so such a waiter attempts instead, and its attempt's WAIT does;
 *   - a fenced lock's token rises above the owner's last (0: the name had no counter).
 * Otherwise the waiter attempts as woken: its attempt finds the hold its own (acquire.lua's
 * resend rule) or not.
 *
 * A taken grant is recorded as any acquisition, and its lease set at once, before the
 * caller hears of it (so before anything the caller sends next): the kind's renew script
 * gives the hold the caller's lease (or the watchdog's) while the owner still holds it.
 * Until its answer the hold stands on the grant's own lease (and the client reconnects
 * within a third of it, dlock__renew_short_lease, so that a dropped connection does not
 * keep the confirmation out), and the client keeps to what it knows of that: unconfirmed a tenth of
 * grant_ms before the grant's lease runs out at the earliest, the hold is lost (DLOCK_ECONN: the
 * lost callback, and the owner's next release says DLOCK_ELOST), as a watchdog lease is when no
 * renewal could confirm it in time; a confirmation that still comes after that finds a hold nobody
 * here believes in, and gives it back (the kind's release). The answer: a watchdog lease is held
 * from its send (until then it stays pending); a hold found gone (the grant's lease ran out first)
 * is lost, as when the watchdog finds it gone. An answer that comes after the owner sent anything
 * else says nothing the owner's later command does not say better (an acquire answers a hold of its
 * own it did not know of as its own; a release finds it or not), and is dropped. */
#include <string.h>

#include "dlock_object.h"
#include "engine.h"

typedef struct grant {
    int64_t line; /* 1, or 2: others still wait in line */
    uint64_t token;
    int64_t joined_us, now_us; /* the server's clock */
} grant;

/* A decimal without sign, leading zero (but "0") or overflow; advances *p past it. */
static bool read_decimal(const char **p, const char *end, uint64_t max, uint64_t *out) {
    const char *s = *p;
    uint64_t v = 0;
    if (s == end || *s < '0' || *s > '9' || (*s == '0' && s + 1 < end && s[1] != ' '))
        return false;
    for (; s < end && *s >= '0' && *s <= '9'; s++) {
        if (v > (max - (uint64_t)(*s - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *p = s;
    *out = v;
    return true;
}

/* The grant's values after "<field> ", or false when they are not its form. */
static bool grant_parse(const char *turn, size_t len, grant *g) {
    const char *end = turn + len, *p = memchr(turn, ' ', len);
    uint64_t line, token, joined, now;
    if (!p || !(++p, read_decimal(&p, end, 2, &line)) || line < 1 || p == end || *p++ != ' ' ||
        !read_decimal(&p, end, INT64_MAX, &token) || p == end || *p++ != ' ' ||
        !read_decimal(&p, end, INT64_MAX, &joined) || p == end || *p++ != ' ' ||
        !read_decimal(&p, end, INT64_MAX, &now) || p != end || joined == 0)
        return false;
    *g = (grant){(int64_t)line, token, (int64_t)joined, (int64_t)now};
    return true;
}

static void confirmation_free(dlock__op *o) {
    dlock__free(o);
}

/* The hold a confirmation came too late for: lost here, still the owner's in Redis. */
static void give_back(lock_op *op) {
    lock_handle *l = op->lock;
    hold *h = op->hold;
    dlock__lock_view v = dlock__view_of(l, h, DLOCK_WATCHDOG);
    v.believed = 1;
    v.line = true; /* others may wait: hand it on */
    dlock__args a = {0};
    int nkeys = l->kind->release_args(&v, &a);
    dlock__script(l->client, l->kind->release_script, DLOCK__CMD_RETRY_SAFE, dlock__ignore_reply,
                  (void *)"lock: giving back a grant confirmed too late", nkeys, a.n, a.v, a.len);
}

static void on_confirmed(dlock_client *c, int status, const dlock__reply *reply, int sends,
                         void *arg) {
    (void)sends; /* a renewal is the same sent once or twice */
    lock_op *op = arg;
    hold *h = op->hold;
    dlock__client_timer_stop(c, &op->grant_lapse);
    dlock__renew_short_lease(c, op->lock->kind->grant_ms, false);
    bool closing = status == DLOCK_ECANCELED || status == DLOCK_ECLOSED || dlock__client_closing(c);
    bool current = !closing && h->sends == op->grant_sends;
    bool answered = status == DLOCK_OK && dlock__reply_shape_each(&dlock__shape_renewed, reply, 1);
    bool kept = answered && dlock__reply_int(dlock__reply_at(reply, 0)) == 1;
    if (current && op->grant_lost && kept)
        give_back(op);
    else if (current && answered && !kept)
        dlock__holds_lost(h, DLOCK_ELOST);
    else if (current && kept && h->watchdog)
        dlock__lease_held(h->watchdog, op->sent_ms);
    dlock__lock_op_end(op, status);
}

/* The grant's lease is near its end, unconfirmed: the hold is lost, unless the owner sent
 * something since (that command's answer tells). */
static void on_grant_lapse(dlock__timer *t, void *arg) {
    (void)t;
    lock_op *op = arg;
    hold *h = op->hold;
    if (h->sends != op->grant_sends || h->count == 0)
        return;
    op->grant_lost = true;
    dlock__holds_lost(h, DLOCK_ECONN);
}

/* Sends the kind's renewal of the hold the grant made, with the lease the acquire asked for
 * (the grant's own runs out at lapse_ms at the earliest); an op of the handle until
 * answered, so the handle and its state outlive it. false when it could not be sent (the
 * caller then attempts instead). */
static bool confirm(const lock_op *acquire, int64_t lapse_ms) {
    lock_handle *l = acquire->lock;
    hold *h = acquire->hold;
    lock_op *op = dlock__lock_op_new(l, NULL, acquire->owner);
    if (!op)
        return false;
    op->op.complete = confirmation_free;
    if (!dlock__lock_op_begin(op)) /* the handle is being freed: ended and freed */
        return false;
    op->hold = h;
    op->grant_sends = h->sends;
    op->grant_lapse_ms = lapse_ms;
    dlock__args a = {0};
    dlock__args_str(&a, l->base.name);
    dlock__args_int(&a, dlock__view_of(l, h, acquire->lease_ms).lease_ms);
    dlock__args_str(&a, h->field);
    op->sent_ms = dlock__now_ms();
    int rc = dlock__script(l->client, h->state->lease_ops.renew_script, DLOCK__CMD_RETRY_SAFE,
                           on_confirmed, op, 1, a.n, a.v, a.len);
    if (rc != DLOCK_OK) {
        dlock__lock_op_end(op, rc);
        return false;
    }
    dlock__renew_short_lease(l->client, l->kind->grant_ms, true);
    int64_t margin = l->kind->grant_ms / 10;
    dlock__client_timer_init(&op->grant_lapse, on_grant_lapse, op);
    dlock__client_timer_start(l->client, &op->grant_lapse, lapse_ms - margin - op->sent_ms);
    return true;
}

/* When, by this client's clock, the grant's lease began at the earliest (see above). */
static int64_t grant_began_ms(const lock_op *op, const grant *g) {
    int64_t waited_ms = (g->now_us - g->joined_us) / 1000;
    int64_t since_join = waited_ms > 0 ? op->joined_sent_ms + waited_ms - waited_ms / 10000 - 1 : 0;
    return since_join > op->sent_ms ? since_join : op->sent_ms;
}

bool dlock__acquire_granted(dlock__waiter *w, const char *turn, size_t len) {
    lock_op *op = DLOCK__CONTAINER_OF(w, lock_op, waiter);
    lock_handle *l = op->lock;
    hold *h = op->hold;
    grant g;
    if (!grant_parse(turn, len, &g) || g.joined_us != op->joined_us || op->acks_asked ||
        !dlock__client_commands_steady(l->client))
        return false;
    int64_t began_ms = grant_began_ms(op, &g);
    if (dlock__now_ms() - began_ms > l->kind->grant_ms / 2)
        return false;
    if (l->fenced && (g.token == 0 || (h->has_token && g.token <= h->token)))
        return false; /* not the token a fenced acquisition must bring */
    if (!l->fenced && g.token != 0)
        return false;
    if (!confirm(op, began_ms + l->kind->grant_ms))
        return false;
    dlock__shape_values got = {.form = 0, .value = {g.line, 1, (int64_t)g.token}};
    dlock__acquired(op, &got, false);
    return true;
}
