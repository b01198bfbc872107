/* SPDX-License-Identifier: MIT */
/* engine_grant.c — the lock engine's side of a grant: a release that handed the lock to a
 * waiting owner inside its own script (release.lua), so that the owner holds it once its
 * client has heard the grant, with no attempt of its own: a hand-off costs one message, not
 * a message and a round trip.
 *
 * The grant, on the kind's turn channel: "<owner field> <1|2> <token> <joined> <now>". The
 * release wrote the owner's hold (one, with the grant's short lease, the kind's turn_ms)
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
 *   - at most half of turn_ms has passed since then, so the lock is the owner's for at
 *     least the other half, whatever the message's delay;
 *   - the latest attempt asked no replica to acknowledge it (?sync_replicas): a grant was
 *     acknowledged by nobody, so such a waiter attempts instead, and its attempt's WAIT does;
 *   - a fenced lock's token rises above the owner's last (0: the name had no counter).
 * Otherwise the waiter attempts as woken: its attempt finds the hold its own (acquire.lua's
 * resend rule) or not.
 *
 * A taken grant is recorded as any acquisition, and its lease set at once, before the
 * caller hears of it (so before anything the caller sends next): the kind's renew script
 * gives the hold the caller's lease (or the watchdog's) while the owner still holds it.
 * Its answer is the hold's confirmation: a watchdog lease is held from its send (until
 * then it stays pending); a hold found gone (the grant's lease ran out first) is lost, as
 * when the watchdog finds it gone; no answer leaves the watchdog lease to run out with the
 * grant's. An answer that comes after the owner sent anything else says nothing the
 * owner's later command does not say better, and is dropped. */
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

static void on_confirmed(dlock_client *c, int status, const dlock__reply *reply, int sends,
                         void *arg) {
    (void)sends; /* a renewal is the same sent once or twice */
    lock_op *op = arg;
    hold *h = op->hold;
    bool current = h->sends == op->grant_sends && status != DLOCK_ECANCELED &&
                   status != DLOCK_ECLOSED && !dlock__client_closing(c);
    bool answered = status == DLOCK_OK && dlock__reply_shape_each(&dlock__shape_renewed, reply, 1);
    if (current && answered && dlock__reply_int(dlock__reply_at(reply, 0)) != 1)
        dlock__holds_lost(h, DLOCK_ELOST);
    else if (current && h->watchdog)
        dlock__lease_held(h->watchdog, answered
                                           ? op->sent_ms
                                           : op->grant_lapse_ms - dlock__client_watchdog_ms(c));
    dlock__lock_op_end(op, status);
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
    if (!grant_parse(turn, len, &g) || g.joined_us != op->joined_us || op->acks_asked)
        return false;
    int64_t began_ms = grant_began_ms(op, &g);
    if (dlock__now_ms() - began_ms > l->kind->turn_ms / 2)
        return false;
    if (l->fenced && (g.token == 0 || (h->has_token && g.token <= h->token)))
        return false; /* not the token a fenced acquisition must bring */
    if (!l->fenced && g.token != 0)
        return false;
    if (!confirm(op, began_ms + l->kind->turn_ms))
        return false;
    dlock__shape_values got = {.form = 0, .value = {g.line, 1, (int64_t)g.token}};
    dlock__acquired(op, &got, false);
    return true;
}
