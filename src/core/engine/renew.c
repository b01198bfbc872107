/* SPDX-License-Identifier: MIT */
/* renew.c — the watchdog: one registry of the client's held leases, one periodic tick.
 *
 * Every watchdog_ms/3 the tick renews every held lease: leases are grouped by their renew
 * script and by the node their key is on (dlock__command_node: one group per script on one
 * Redis), renew_batch to a script call, and all calls of a tick are queued in one loop
 * turn, so they leave in one write per node. 100,000 held locks cost 1,000 script calls per
 * tick, not 100,000 timers and round trips.
 *
 * In a Cluster a batch spans the slots of one node. Redis refuses declared keys of several
 * slots (CROSSSLOT), so there a batch declares only its first key (DLOCK__CMD_FIRST_KEY_ONLY:
 * the transport passes the others undeclared and the script sees them as KEYS all the
 * same), by which it is routed (MOVED and ASK of that slot are followed by the transport);
 * the scripts' allow-cross-slot-keys lets them touch the others, as long as they are on
 * the node. When one is not (a slot moved since the map was read) the node answers the
 * whole batch with an error, and its leases are sent again at once, one per call: each
 * such call is placed by its own key, and its MOVED teaches the map, so the next tick
 * groups by the new owners. A slot being migrated is no error for the node: a key of it
 * already moved is simply not there, so in a Cluster a lease found gone in a batch where
 * its key was not declared is asked again alone, declared (the node then answers ASK, and
 * the new owner says whether it is there); only a declared key found gone is lost. A node
 * that stays lost makes its own leases lost when their
 * confirmed time runs out; the other nodes' batches never wait for it.
 *
 * Each held lease knows until when it is confirmed: the send time of its acquire or of its
 * last successful renewal, plus watchdog_ms. The held list is kept in that order, and one
 * timer watches its head. A lease is lost when a renewal finds it gone (the key or the
 * field was deleted, the server restarted empty) or when its confirmed time runs out
 * before any renewal could confirm it (Redis unreachable, replies too slow): the primitive
 * is told once, and the lease leaves the registry.
 *
 * When the client lands on another master (a Sentinel failover), dlock__renew_now renews
 * every held lease at once instead of at the next tick: a lease the new master lacks (the
 * replica had not received it) is reported lost as soon as the new master can say so.
 *
 * A lease may have a bound (dlock_options.max_hold_ms): a time after which no tick renews
 * it. It is not deleted then: others trust its lease, not the holder, and a holder past
 * its bound may still be at work, so the lock stays its until the lease runs out in Redis
 * (at most watchdog_ms after the bound). The expiry timer reports it lost then, with the
 * bound's reason, as any lease whose confirmed time ran out.
 *
 * A lease is registered (pending) before its acquire is sent and dropped as soon as its
 * release starts, so a renewal can never resurrect a lock its owner is releasing, and a
 * release can never run ahead of the registration. A lease named by a renewal call still
 * in flight is freed when that call answers. */
#include <stdio.h>
#include <string.h>

#include "engine/engine.h"
#include "dlock/lock.h" /* DLOCK_LOST_MAX_HOLD */
#include "reply_shape.h"

enum lease_state { L_PENDING, L_HELD, L_GONE };

struct dlock__lease {
    dlock__lease *prev, *next;
    dlock_client *client;
    const dlock__lease_ops *ops;
    void *owner_ctx;
    char *key, *field;
    size_t key_len, field_len;
    int64_t confirmed_until_ms;
    int64_t bound_until_ms; /* renewed only before this (monotonic ms); 0: no bound */
    enum lease_state state;
    int batches_in_flight;
};

typedef struct renew_batch {
    dlock_client *client;
    enum dlock__script_id script;
    const void *node; /* where its keys are: dlock__command_node of the first */
    int64_t sent_ms;
    size_t count;
    dlock__lease *leases[];
} renew_batch;

/* ---- lists ------------------------------------------------------------------------------ */

static void unlink_lease(dlock__renew *r, dlock__lease *l) {
    if (l->state == L_HELD) {
        if (l->prev)
            l->prev->next = l->next;
        else
            r->held_head = l->next;
        if (l->next)
            l->next->prev = l->prev;
        else
            r->held_tail = l->prev;
        r->held_count--;
        dlock__stat_set(l->client, DLOCK__STAT_LEASES_HELD, (int64_t)r->held_count);
    } else if (l->state == L_PENDING) {
        if (l->prev)
            l->prev->next = l->next;
        else
            r->pending = l->next;
        if (l->next)
            l->next->prev = l->prev;
    }
    l->prev = l->next = NULL;
}

/* Inserts l into the held list by confirmed_until_ms, searching from the tail: a renewed
 * or new lease almost always belongs at the end. */
static void insert_held(dlock__renew *r, dlock__lease *l) {
    dlock__lease *after = r->held_tail;
    while (after && after->confirmed_until_ms > l->confirmed_until_ms)
        after = after->prev;
    l->prev = after;
    l->next = after ? after->next : r->held_head;
    if (l->next)
        l->next->prev = l;
    else
        r->held_tail = l;
    if (after)
        after->next = l;
    else
        r->held_head = l;
    l->state = L_HELD;
    r->held_count++;
    dlock__stat_set(l->client, DLOCK__STAT_LEASES_HELD, (int64_t)r->held_count);
}

static void lease_free(dlock__lease *l) {
    dlock__free(l->key);
    dlock__free(l);
}

/* ---- timers ----------------------------------------------------------------------------- */

/* A lease counts as lost this long before it could end in Redis: the renewal's one-way
 * trip and the two machines' clock rates are unknown, so the holder is told a little early
 * rather than just after another client may have got in (Redlock's drift factor). */
static int64_t lost_margin_ms(const dlock_client *c) {
    return DLOCK__BASE(c)->opts.watchdog_ms / 100 + 2;
}

static int64_t tick_period_ms(const dlock_client *c) {
    int64_t p = DLOCK__BASE(c)->opts.watchdog_ms / 3;
    return p > 0 ? p : 1;
}

static void arm_expiry(dlock__renew *r, dlock_client *c) {
    if (r->held_head)
        dlock__timer_start_at(&DLOCK__NET(c)->sched, &r->expiry_timer,
                              r->held_head->confirmed_until_ms);
    else
        dlock__timer_stop(&DLOCK__NET(c)->sched, &r->expiry_timer);
}

static void declare_lost(dlock__renew *r, dlock__lease *l, int reason, const char *why) {
    dlock__log(l->client, DLOCK_LOG_WARN, "lease lost: %s field %s: %s", l->key, l->field, why);
    unlink_lease(r, l);
    l->state = L_GONE;
    l->ops->lost(l, l->owner_ctx, reason); /* it counts the loss it reports */
    if (l->batches_in_flight == 0)
        lease_free(l);
}

static bool past_bound(const dlock__lease *l, int64_t now) {
    return l->bound_until_ms != 0 && now >= l->bound_until_ms;
}

static void on_expiry(dlock__timer *t, void *arg) {
    (void)t;
    dlock_client *c = arg;
    dlock__renew *r = &DLOCK__ENGINE(c)->renew;
    int64_t now = dlock__now_ms();
    while (r->held_head && r->held_head->confirmed_until_ms <= now) {
        if (past_bound(r->held_head, now))
            declare_lost(r, r->held_head, DLOCK_LOST_MAX_HOLD,
                         "its max_hold_ms bound was reached and its lease ran out");
        else
            declare_lost(r, r->held_head, DLOCK_ECONN, "not confirmed before its lease ran out");
    }
    arm_expiry(r, c);
    if (!r->held_head)
        dlock__timer_stop(&DLOCK__NET(c)->sched, &r->tick_timer);
}

/* ---- renewal ---------------------------------------------------------------------------- */

/* For dlock_client_stats: how long after it was due l's renewal is confirmed now. It was
 * due a tick period after the send of the previous confirmation; a lag of one more period
 * leaves the lease a third of its time (late), and of two loses it. */
static void note_renewal_lag(dlock_client *c, const dlock__lease *l) {
    int64_t previous_sent =
        l->confirmed_until_ms - DLOCK__BASE(c)->opts.watchdog_ms + lost_margin_ms(c);
    int64_t lag = dlock__now_ms() - (previous_sent + tick_period_ms(c));
    dlock__stat_renewal(c, lag > 0 ? lag : 0, tick_period_ms(c));
}

static renew_batch *batch_new(dlock_client *c, enum dlock__script_id script, const void *node,
                              size_t cap) {
    renew_batch *b = dlock__malloc(sizeof(renew_batch) + cap * sizeof(dlock__lease *));
    if (b) {
        b->client = c;
        b->script = script;
        b->node = node;
        b->count = 0;
    }
    return b;
}

static void send_batch(dlock_client *c, renew_batch *b);

/* l again, in a call of its own (its batch was refused: see the opening comment). */
static void send_alone(dlock_client *c, enum dlock__script_id script, dlock__lease *l) {
    renew_batch *b = batch_new(c, script, NULL, 1);
    if (!b)
        return; /* out of memory: the expiry timer decides */
    b->leases[b->count++] = l;
    send_batch(c, b);
}

static void on_renewed(dlock_client *c, int status, const dlock__reply *reply, int sends,
                       void *arg) {
    (void)sends; /* a renewal is the same whether sent once or twice */
    renew_batch *b = arg;
    dlock__renew *r = &DLOCK__ENGINE(c)->renew;
    r->renew_answers++;
    /* a reply of another shape confirms nothing: the expiry timer decides */
    bool answered =
        status == DLOCK_OK && dlock__reply_shape_each(&dlock__shape_renewed, reply, b->count);
    /* a node that refused the batch (keys move: a Cluster slot): a key of it is elsewhere now */
    bool refused = status == DLOCK_EREDIS && dlock__client_keys_move(c) && b->count > 1;
    if ((status == DLOCK_OK && !answered) || refused) {
        char what[200];
        dlock__reply_describe(reply, what, sizeof(what));
        dlock__log(c, DLOCK_LOG_WARN, "renewal of %zu leases: %s %s", b->count,
                   refused ? "refused, sent one by one:" : "unexpected reply", what);
    } else if (status != DLOCK_OK) {
        dlock__log(c, DLOCK_LOG_WARN, "renewal of %zu leases failed: %s", b->count,
                   dlock_strerror(status));
    }
    for (size_t i = 0; i < b->count; i++) {
        dlock__lease *l = b->leases[i];
        l->batches_in_flight--;
        if (l->state != L_HELD) {
            if (l->state == L_GONE && l->batches_in_flight == 0)
                lease_free(l);
            continue;
        }
        if (refused)
            send_alone(c, b->script, l);
        if (!answered)
            continue; /* unconfirmed: the expiry timer decides */
        if (dlock__reply_int(dlock__reply_at(reply, i)) == 1) {
            int64_t until = b->sent_ms + DLOCK__BASE(c)->opts.watchdog_ms - lost_margin_ms(c);
            note_renewal_lag(c, l);
            if (until > l->confirmed_until_ms) {
                unlink_lease(r, l);
                l->confirmed_until_ms = until;
                insert_held(r, l);
            }
        } else if (dlock__client_keys_move(c) && i > 0) {
            /* an undeclared key its node lacks may be one being migrated (for a declared
             * key the node would have answered ASK): ask again with it declared */
            send_alone(c, b->script, l);
        } else {
            declare_lost(r, l, DLOCK_ELOST, "renewal found it gone");
        }
    }
    dlock__free(b);
    if (status != DLOCK_ECANCELED)
        arm_expiry(r, c);
}

/* EVALSHA of b's script: the keys, the lease, each lease's field. In a Cluster only the
 * first key is declared (DLOCK__CMD_FIRST_KEY_ONLY: see the opening comment). */
static void send_batch(dlock_client *c, renew_batch *b) {
    size_t n = b->count, nargs = 2 * n + 1;
    const char **args = dlock__malloc(sizeof(*args) * nargs);
    size_t *lens = dlock__malloc(sizeof(*lens) * nargs);
    char lease[DLOCK__DECIMAL_MAX];
    int rc = DLOCK_ENOMEM;
    if (args && lens) {
        for (size_t i = 0; i < n; i++) {
            args[i] = b->leases[i]->key;
            lens[i] = b->leases[i]->key_len;
            args[n + 1 + i] = b->leases[i]->field;
            lens[n + 1 + i] = b->leases[i]->field_len;
        }
        args[n] = lease;
        lens[n] = dlock__decimal(lease, (long long)DLOCK__BASE(c)->opts.watchdog_ms);
        b->sent_ms = dlock__now_ms();
        rc = dlock__script(c, b->script, DLOCK__CMD_RETRY_SAFE | DLOCK__CMD_FIRST_KEY_ONLY,
                           on_renewed, b, (int)n, (int)nargs, args, lens);
    }
    dlock__free(args);
    dlock__free(lens);
    if (rc == DLOCK_OK) {
        DLOCK__ENGINE(c)->renew.renew_calls++;
        dlock__stat_add(c, DLOCK__STAT_RENEWALS_SENT, (int64_t)n);
        for (size_t i = 0; i < n; i++)
            b->leases[i]->batches_in_flight++;
    } else {
        dlock__free(b);
    }
}

/* The batches of a tick still filling: one per renew script and node. */
typedef struct open_batches {
    renew_batch **v;
    size_t count, cap;
} open_batches;

/* The open batch for script on node, made if there is none; NULL when out of memory. */
static renew_batch *open_batch(open_batches *o, dlock_client *c, enum dlock__script_id script,
                               const void *node) {
    for (size_t k = 0; k < o->count; k++)
        if (o->v[k]->script == script && o->v[k]->node == node)
            return o->v[k];
    if (o->count == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 8;
        renew_batch **grown = dlock__realloc(o->v, cap * sizeof(*grown));
        if (!grown)
            return NULL;
        o->v = grown;
        o->cap = cap;
    }
    renew_batch *b = batch_new(c, script, node, (size_t)DLOCK__BASE(c)->opts.renew_batch);
    if (b)
        o->v[o->count++] = b;
    return b;
}

/* Sends one renewal of every held lease not past its bound. */
static void renew_all(dlock_client *c) {
    size_t cap = (size_t)DLOCK__BASE(c)->opts.renew_batch;
    int64_t now = dlock__now_ms();
    open_batches open = {0};
    for (dlock__lease *l = DLOCK__ENGINE(c)->renew.held_head; l; l = l->next) {
        if (past_bound(l, now))
            continue; /* left to run out: the expiry timer reports it */
        renew_batch *b =
            open_batch(&open, c, l->ops->renew_script, dlock__command_node(c, l->key, l->key_len));
        if (!b)
            break; /* out of memory: unconfirmed leases are reported by the expiry */
        b->leases[b->count++] = l;
        if (b->count == cap) { /* full: it leaves, and its place goes to the last open one */
            send_batch(c, b);
            size_t k = 0;
            while (open.v[k] != b)
                k++;
            open.v[k] = open.v[--open.count];
        }
    }
    for (size_t k = 0; k < open.count; k++)
        send_batch(c, open.v[k]);
    dlock__free(open.v);
}

static void on_tick(dlock__timer *t, void *arg) {
    dlock_client *c = arg;
    if (!DLOCK__ENGINE(c)->renew.held_head)
        return;
    DLOCK__ENGINE(c)->renew.ticks++;
    dlock__timer_start_at(&DLOCK__NET(c)->sched, t, t->due_ms + tick_period_ms(c));
    renew_all(c);
}

/* ---- the registry's API ----------------------------------------------------------------- */

void dlock__renew_init(dlock__renew *r, dlock_client *c) {
    memset(r, 0, sizeof(*r));
    dlock__timer_init(&r->tick_timer, on_tick, c);
    dlock__timer_init(&r->expiry_timer, on_expiry, c);
}

int64_t dlock__renew_shortest_lease_ms(const dlock_client *c) {
    const dlock__renew *r = &DLOCK__ENGINE(c)->renew;
    int64_t shortest = r->held_head || r->pending ? DLOCK__BASE(c)->opts.watchdog_ms : 0;
    if (r->short_leases > 0 && (shortest == 0 || r->short_lease_ms < shortest))
        shortest = r->short_lease_ms;
    return shortest;
}

void dlock__renew_close(dlock__renew *r, dlock_client *c) {
    dlock__timer_stop(&DLOCK__NET(c)->sched, &r->tick_timer);
    dlock__timer_stop(&DLOCK__NET(c)->sched, &r->expiry_timer);
    /* Renewal calls still in flight have been canceled by now (the command connection
     * closes first) and freed their leases' references. */
    while (r->held_head) {
        dlock__lease *l = r->held_head;
        unlink_lease(r, l);
        l->state = L_GONE;
        if (l->batches_in_flight == 0)
            lease_free(l);
    }
    while (r->pending) {
        dlock__lease *l = r->pending;
        unlink_lease(r, l);
        l->state = L_GONE;
        if (l->batches_in_flight == 0)
            lease_free(l);
    }
}

dlock__lease *dlock__lease_new(dlock_client *c, const dlock__lease_ops *ops, const char *key,
                               const char *field, void *owner_ctx) {
    size_t kl = strlen(key), fl = strlen(field);
    dlock__lease *l = dlock__calloc(1, sizeof(*l));
    char *strings = dlock__malloc(kl + fl + 2);
    if (!l || !strings) {
        dlock__free(l);
        dlock__free(strings);
        return NULL;
    }
    memcpy(strings, key, kl + 1);
    memcpy(strings + kl + 1, field, fl + 1);
    l->key = strings;
    l->field = strings + kl + 1;
    l->key_len = kl;
    l->field_len = fl;
    l->client = c;
    l->ops = ops;
    l->owner_ctx = owner_ctx;
    l->state = L_PENDING;
    dlock__renew *r = &DLOCK__ENGINE(c)->renew;
    l->next = r->pending;
    if (r->pending)
        r->pending->prev = l;
    r->pending = l;
    return l;
}

void dlock__lease_held(dlock__lease *l, int64_t sent_at_ms) {
    dlock_client *c = l->client;
    dlock__renew *r = &DLOCK__ENGINE(c)->renew;
    if (l->state != L_PENDING)
        return;
    unlink_lease(r, l);
    l->confirmed_until_ms = sent_at_ms + DLOCK__BASE(c)->opts.watchdog_ms - lost_margin_ms(c);
    insert_held(r, l);
    if (!dlock__timer_active(&r->tick_timer))
        dlock__timer_start(&DLOCK__NET(c)->sched, &r->tick_timer, tick_period_ms(c));
    if (r->held_head == l)
        arm_expiry(r, c);
}

void dlock__renew_short_lease(dlock_client *c, int64_t ms, bool held) {
    dlock__renew *r = &DLOCK__ENGINE(c)->renew;
    if (held) {
        if (r->short_leases == 0 || ms < r->short_lease_ms)
            r->short_lease_ms = ms;
        r->short_leases++;
    } else if (r->short_leases > 0) {
        r->short_leases--;
    }
}

void dlock__lease_bound(dlock__lease *l, int64_t until_ms) {
    l->bound_until_ms = until_ms;
}

void dlock__renew_now(dlock_client *c) {
    if (DLOCK__ENGINE(c)->renew.held_head)
        renew_all(c);
}

void dlock__lease_drop(dlock__lease *l) {
    if (!l || l->state == L_GONE)
        return; /* already out (e.g. dropped from inside its own lost callback) */
    dlock__renew *r = &DLOCK__ENGINE(l->client)->renew;
    bool was_head = r->held_head == l;
    unlink_lease(r, l);
    l->state = L_GONE;
    if (was_head)
        arm_expiry(r, l->client);
    if (!r->held_head)
        dlock__timer_stop(&DLOCK__NET(l->client)->sched, &r->tick_timer);
    if (l->batches_in_flight == 0)
        lease_free(l);
}
