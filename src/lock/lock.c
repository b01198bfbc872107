/* lock.c — the reentrant lock (Redisson RLock) and the fenced lock (RFencedLock).
 *
 * Redis layout (wire-compatible with Redisson, see REDIS_LAYOUT.md):
 *   N                              hash: "<client-id>:<owner>" -> hold count; PEXPIRE = lease
 *   redisson_lock__channel:{N}     channel; "0" is published when the lock is freed
 *   redisson_lock_token:{N}        fenced lock: string counter, INCR per acquisition, no TTL
 * Scripts beside this file: acquire.lua, release.lua, force_release.lua; the watchdog
 * renews with the core's renew_hash.lua.
 *
 * The client keeps, per owner of each handle, the hold count it believes that owner has.
 * The scripts receive it and so can tell a resend (the reply of the first send was lost
 * with a dropped connection) from a new request: an acquire or release is applied once
 * however many times the core sends it. A reply that shows the owner's holds vanished
 * (the key expired or was deleted) makes those holds lost, as the watchdog would.
 *
 * Everything below runs on the client's loop thread; the public calls carry their work
 * there as ops (dlock__op_run for the blocking face, dlock__op_submit for the async one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock/lock.h"
#include "dlock_int.h"
#include "lock_kind.h"

typedef struct hold hold;
typedef struct lock_state lock_state;
typedef struct lock_op lock_op;

/* An owner field and the kind's suffix (lock_kind.h). */
#define FIELD_MAX (DLOCK__OWNER_FIELD_MAX + 16)

struct dlock_lock {
    dlock__handle handle; /* the client, the ops in flight, the free protocol */
    dlock_client *client;
    const dlock__lock_kind *kind;
    void *kind_data;
    bool fenced;
    char *name;
    char *channel;
    char *token_key;   /* fenced only */
    lock_state *state; /* shared with the client's other handles of this name; set by the
                          first op, on the loop thread */
    dlock_lock *next_of_state;
    dlock_lost_cb lost_cb;
    void *lost_arg;
    /* composites (lock_kind.h): every call goes to the class */
    const dlock__composite_class *composite;
    void *composite_self;
    bool member; /* taken by a composite */
};

/* What the client knows of one lock name, whichever of its handles is used: the hold
 * count of each owner must be one count, or two handles would each take the other's hold
 * for their own resend. */
struct lock_state {
    dlock_client *client;
    hold *holds;                /* one per owner that ever used the name */
    dlock_lock *handles;        /* whose lost callbacks to call */
    dlock__lease_ops lease_ops; /* the kind's renew script, our lost handler */
    dlock__wait_ops wait_ops;   /* the kind's wake rule, our attempt and done */
};

/* What the client knows of one owner's holds on one lock. */
struct hold {
    hold *next;
    lock_state *state;
    uint64_t owner;
    char field[FIELD_MAX];
    int64_t count;    /* holds this owner has, as far as the client knows */
    int64_t lost;     /* holds lost while held: each makes a release say DLOCK_ELOST */
    int64_t lease_ms; /* lease of the latest acquisition, DLOCK_WATCHDOG or ms */
    uint64_t token;   /* fenced: token of the latest acquisition */
    bool has_token;
    bool release_unsure; /* a release failed with DLOCK_ECONN: it may have been applied */
    /* One acquire or release of this owner in Redis at a time (see hold_run): the count
     * the scripts are told is then exact, as their resend rules need. */
    bool busy;
    lock_op *queue_head, *queue_tail; /* waiting for their turn, oldest first */
    dlock__lease *watchdog;           /* registered while a watchdog hold is taken or held */
    char *waiter_channel;             /* the kind's channel for this owner, or NULL: the lock's */
};

struct lock_op {
    dlock__op op; /* first: the core's op */
    dlock_lock *lock;
    uint64_t owner;
    int64_t wait_ms;
    int64_t lease_ms;
    hold *hold;
    dlock__waiter waiter;
    int64_t sent_ms;
    int64_t believed;
    bool report_lost;          /* release: a lost hold is reported by this release, which still
                                  releases the owner's live holds */
    void (*send)(lock_op *op); /* acquire or release: sends when its owner's turn comes */
    lock_op *queue_next;
    /* results for the blocking face */
    bool out_bool;
    int64_t out_int;
    uint64_t out_token;
    uint64_t token_floor;      /* raise_token */
    dlock_lost_cb new_lost_cb; /* dlock_lock_on_lost */
    void *new_lost_arg;
    /* async face */
    dlock_lock_cb cb;
    void *arg;
};

/* ---- state, handles and owners ---------------------------------------------------------- */

/* The last handle of the name is gone: stop renewing (the holds expire by their lease). */
static void state_destroy(void *p) {
    lock_state *st = p;
    bool closing = dlock__client_closing(st->client); /* then the leases are gone already */
    hold *h = st->holds;
    while (h) {
        hold *next = h->next;
        if (!closing)
            dlock__lease_drop(h->watchdog);
        dlock__free(h->waiter_channel);
        dlock__free(h);
        h = next;
    }
}

static void on_lease_lost(dlock__lease *lease, void *owner_ctx);
static void acquire_attempt(dlock__waiter *w);
static void acquire_done(dlock__waiter *w, int status);

/* Loop thread: the handle's shared state, found or made on first use. Every handle whose
 * owners write the same fields of N shares it, whatever its kind (a fair and a plain
 * handle of one name are one lock in Redis): the key is the name and the field suffix. */
static lock_state *state_of(dlock_lock *l) {
    if (l->state)
        return l->state;
    char *key =
        dlock__name_prefixed(l->kind->field_suffix ? "lock-fields:write" : "lock-fields", l->name);
    lock_state *st = key ? dlock__shared_get(l->client, key, sizeof(*st), state_destroy) : NULL;
    dlock__free(key);
    if (!st)
        return NULL;
    if (!st->client) { /* new */
        st->client = l->client;
        st->lease_ops.renew_script = l->kind->renew_script;
        st->lease_ops.lost = on_lease_lost;
        st->wait_ops.attempt = acquire_attempt;
        st->wait_ops.wake_count = l->kind->wake_count;
        st->wait_ops.done = acquire_done;
    }
    l->next_of_state = st->handles;
    st->handles = l;
    l->state = st;
    return st;
}

static void lock_destroy(dlock_lock *l) {
    lock_state *st = l->state;
    if (st && !dlock__client_closing(l->client)) {
        dlock_lock **link = &st->handles;
        while (*link != l)
            link = &(*link)->next_of_state;
        *link = l->next_of_state;
        dlock__shared_put(l->client, st);
    }
    if (l->kind_data)
        l->kind->data_free(l->kind_data);
    dlock__free(l->name);
    dlock__free(l->channel);
    dlock__free(l->token_key);
    dlock__free(l);
}

static hold *hold_find(lock_state *st, uint64_t owner) {
    for (hold *h = st->holds; h; h = h->next)
        if (h->owner == owner)
            return h;
    return NULL;
}

/* The owner's field in N: "<client-id>:<owner>" and the kind's suffix. */
static void owner_field(const dlock_lock *l, uint64_t owner, char field[FIELD_MAX]) {
    size_t n = dlock__owner_field(l->client, owner, field);
    if (l->kind->field_suffix)
        snprintf(field + n, FIELD_MAX - n, "%s", l->kind->field_suffix);
}

static hold *hold_get(dlock_lock *l, uint64_t owner) {
    lock_state *st = l->state;
    hold *h = hold_find(st, owner);
    if (h)
        return h;
    h = dlock__calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->state = st;
    h->owner = owner;
    owner_field(l, owner, h->field);
    h->next = st->holds;
    st->holds = h;
    return h;
}

/* The owner's holds are gone from Redis: count them as lost and tell the application,
 * through every handle of the name that asked to be told. */
static void holds_lost(hold *h, int reason) {
    if (h->count <= 0)
        return;
    lock_state *st = h->state;
    h->lost += h->count;
    h->count = 0;
    if (h->watchdog) {
        dlock__lease_drop(h->watchdog);
        h->watchdog = NULL;
    }
    dlock__user_callback_enter(st->client);
    for (dlock_lock *l = st->handles; l; l = l->next_of_state)
        if (l->lost_cb && !l->handle.closed) /* a freed handle reports nothing more */
            l->lost_cb(l, h->owner, reason, l->lost_arg);
    dlock__user_callback_leave(st->client);
}

static void on_lease_lost(dlock__lease *lease, void *owner_ctx) {
    hold *h = owner_ctx;
    h->watchdog = NULL; /* the core frees the lease */
    holds_lost(h, dlock__lease_lost_reason(lease));
}

static int64_t lease_value(const dlock_lock *l, int64_t lease_ms) {
    return lease_ms == DLOCK_WATCHDOG ? dlock__client_watchdog_ms(l->client) : lease_ms;
}

/* What the kind's hooks see of lock l and owner h, for a call with lease_ms. */
static dlock__lock_view view_of(const dlock_lock *l, const hold *h, int64_t lease_ms) {
    return (dlock__lock_view){
        .client = l->client,
        .name = l->name,
        .channel = l->channel,
        .token_key = l->token_key,
        .field = h->field,
        .believed = h->count,
        .lease_ms = lease_value(l, lease_ms),
        .data = l->kind_data,
    };
}

/* ---- one acquire or release of an owner at a time --------------------------------------- */

/* The scripts tell a resend from a new request by the count the client believes the owner
 * has. Two of the owner's commands in Redis at once would break that: the second would be
 * sent with a count the first is about to change, and a second acquire would look like a
 * resend of the first (and take no hold). That happens when one owner's calls overlap on
 * the async face, as when a RedLock's round starts while a slow master has not yet
 * answered the round before. So an owner's acquires and releases of one lock go to Redis
 * one after another, each sent with the count its predecessor left. */
static void hold_run(hold *h, lock_op *op, void (*send)(lock_op *op)) {
    op->send = send;
    if (!h->busy) {
        h->busy = true;
        send(op);
        return;
    }
    op->queue_next = NULL;
    if (h->queue_tail)
        h->queue_tail->queue_next = op;
    else
        h->queue_head = op;
    h->queue_tail = op;
}

/* The owner's command in Redis is settled (its reply is applied to the hold, or it was
 * never sent): the next one of the owner goes. Called before the settled op completes,
 * since completing it may free h. */
static void hold_next(hold *h) {
    lock_op *next = h->queue_head;
    if (!next) {
        h->busy = false;
        return;
    }
    h->queue_head = next->queue_next;
    if (!h->queue_head)
        h->queue_tail = NULL;
    next->send(next);
}

/* ---- ops -------------------------------------------------------------------------------- */

static void op_finish(lock_op *op, int status) {
    dlock__op_end(&op->op, status);
}

static void op_fail(lock_op *op, int status, const dlock__reply *reply) {
    dlock__op_end_reply(&op->op, status, reply);
}

/* Every op starts here: counted on its handle, with the handle's shared state at hand. */
static bool op_begin(lock_op *op) {
    if (!dlock__op_begin(&op->op))
        return false;
    if (!state_of(op->lock)) {
        op_fail(op, DLOCK_ENOMEM, NULL);
        return false;
    }
    return true;
}

static void op_init(lock_op *op, dlock_lock *l, dlock__op_fn start, uint64_t owner) {
    memset(op, 0, sizeof(*op));
    dlock__op_init(&op->op, l->client, start);
    op->op.handle = &l->handle;
    op->lock = l;
    op->owner = owner;
}

static void async_complete(dlock__op *o) {
    lock_op *op = (lock_op *)o;
    op->cb(op->lock, o->status, op->arg);
    dlock__free(op);
}

/* ---- acquire ---------------------------------------------------------------------------- */

static void on_acquire_reply(dlock_client *c, int status, const dlock__reply *reply, void *arg);

static void acquire_send(lock_op *op);

static void acquire_attempt(dlock__waiter *w) {
    lock_op *op = DLOCK__CONTAINER_OF(w, lock_op, waiter);
    hold_run(op->hold, op, acquire_send);
}

static void acquire_send(lock_op *op) {
    dlock_lock *l = op->lock;
    hold *h = op->hold;
    if (h->release_unsure) {
        /* A release failed with DLOCK_ECONN and was not repeated: count it as applied. If
         * it was not, this acquire finds one hold more than it believes and takes that
         * hold as its own (acquire.lua's resend rule), so no hold is left behind. */
        if (h->count > 0)
            h->count--;
        h->release_unsure = false;
    }
    dlock__lock_view v = view_of(l, h, op->lease_ms);
    v.once = op->wait_ms == 0;
    dlock__args a = {0};
    int nkeys = l->kind->acquire_args(&v, &a);
    op->believed = h->count;
    op->sent_ms = dlock__now_ms();
    int rc = dlock__script(l->client, l->kind->acquire_script, DLOCK__CMD_RETRY_SAFE,
                           on_acquire_reply, op, nkeys, a.n, a.v, a.len);
    if (rc != DLOCK_OK) {
        dlock__op_fail(&op->op, rc, "%s", dlock_strerror(rc));
        hold_next(h);
        dlock__wait_result(&op->waiter, rc, -1);
    }
}

static void on_acquire_reply(dlock_client *c, int status, const dlock__reply *reply, void *arg) {
    (void)c;
    lock_op *op = arg;
    hold *h = op->hold;
    if (status != DLOCK_OK) {
        dlock__op_fail_reply(&op->op, status, reply);
        hold_next(h);
        dlock__wait_result(&op->waiter, status, -1);
        return;
    }
    if (dlock__reply_int(dlock__reply_at(reply, 0)) == 0) {
        /* busy: the holder's remaining lease is when it may free itself; -1 = never */
        int64_t pttl = dlock__reply_int(dlock__reply_at(reply, 1));
        if (pttl == -2)
            pttl = 0; /* gone by now: look again at once */
        if (op->lock->kind->busy_hint) {
            dlock__lock_view v = view_of(op->lock, h, op->lease_ms);
            pttl = op->lock->kind->busy_hint(&v, pttl);
        }
        hold_next(h);
        dlock__wait_result(&op->waiter, DLOCK__BUSY, pttl);
        return;
    }
    int64_t holds = dlock__reply_int(dlock__reply_at(reply, 1));
    if (holds < h->count + 1)
        holds_lost(h, DLOCK_ELOST); /* the owner's earlier holds vanished meanwhile */
    h->count = holds;
    h->lease_ms = op->lease_ms;
    if (op->lock->fenced) {
        h->token = (uint64_t)dlock__reply_int(dlock__reply_at(reply, 2));
        h->has_token = true;
    }
    if (op->lease_ms == DLOCK_WATCHDOG && !h->watchdog) {
        /* the hold was lost while this acquire was in flight: register again */
        h->watchdog = dlock__lease_new(c, &h->state->lease_ops, op->lock->name, h->field, h);
    }
    if (h->watchdog)
        dlock__lease_held(h->watchdog, op->sent_ms);
    hold_next(h);
    dlock__wait_result(&op->waiter, DLOCK_OK, -1);
}

static void acquire_done(dlock__waiter *w, int status) {
    lock_op *op = DLOCK__CONTAINER_OF(w, lock_op, waiter);
    hold *h = op->hold;
    dlock_lock *l = op->lock;
    if (status != DLOCK_OK && h->count == 0 && h->watchdog) {
        /* nothing held: nothing to renew */
        dlock__lease_drop(h->watchdog);
        h->watchdog = NULL;
    }
    if (status != DLOCK_OK && l->kind->gave_up) {
        dlock__lock_view v = view_of(l, h, op->lease_ms);
        l->kind->gave_up(&v);
    }
    if (status == DLOCK_ETIMEDOUT)
        dlock__op_fail(&op->op, status, "%s %s is held by another owner", l->kind->what, l->name);
    op_finish(op, status);
}

static void acquire_start(dlock__op *o) {
    lock_op *op = (lock_op *)o;
    if (!op_begin(op))
        return;
    dlock_lock *l = op->lock;
    hold *h = hold_get(l, op->owner);
    if (!h) {
        op_fail(op, DLOCK_ENOMEM, NULL);
        return;
    }
    op->hold = h;
    if (op->lease_ms == DLOCK_WATCHDOG && !h->watchdog) {
        /* registered before the acquire is sent: a release can never run ahead of it */
        h->watchdog = dlock__lease_new(l->client, &h->state->lease_ops, l->name, h->field, h);
        if (!h->watchdog) {
            op_fail(op, DLOCK_ENOMEM, NULL);
            return;
        }
    }
    const char *channel = l->channel;
    if (l->kind->waiter_channel) {
        if (!h->waiter_channel) {
            dlock__lock_view v = view_of(l, h, op->lease_ms);
            h->waiter_channel = l->kind->waiter_channel(&v);
        }
        if (!h->waiter_channel) {
            op_fail(op, DLOCK_ENOMEM, NULL);
            return;
        }
        channel = h->waiter_channel;
    }
    dlock__wait_start_on(&op->waiter, &l->handle, &h->state->wait_ops, channel, op->wait_ms);
}

/* ---- release ---------------------------------------------------------------------------- */

/* What a release's reply means for the hold; the status to complete the op with (its
 * detail set). */
static int release_outcome(dlock_client *c, lock_op *op, int status, const dlock__reply *reply) {
    hold *h = op->hold;
    if (status != DLOCK_OK) {
        /* DLOCK_ECONN: it may or may not have been applied. A repeat of the release
         * settles it (release.lua's resend rule); if the owner acquires instead, that
         * acquire counts it as applied first (acquire_send). */
        if (status == DLOCK_ECONN)
            h->release_unsure = true;
        return dlock__op_fail_reply(&op->op, status, reply);
    }
    bool unsure = h->release_unsure;
    h->release_unsure = false;
    int64_t left = dlock__reply_int(reply);
    if (left >= 0) {
        h->count = left;
        if (op->report_lost) {
            h->lost--;
            return dlock__op_fail(&op->op, DLOCK_ELOST, "lock %s: an earlier hold was lost",
                                  op->lock->name);
        }
        return DLOCK_OK;
    }
    /* the owner holds nothing in Redis */
    if (h->count == 0 && unsure)
        return DLOCK_OK; /* the release that failed had been applied */
    if (h->count == 0)
        return dlock__op_fail(&op->op, DLOCK_ENOTOWNER, "lock %s is not held by this owner",
                              op->lock->name);
    if (h->count == 1 && (dlock__reply_sends(c) > 1 || unsure)) {
        /* an earlier send of this release (or the failed call before it) freed it */
        h->count = 0;
        return DLOCK_OK;
    }
    /* the holds vanished (expired, force-released) before the watchdog noticed */
    holds_lost(h, DLOCK_ELOST);
    h->lost--;
    return dlock__op_fail(&op->op, DLOCK_ELOST, "lock %s was lost while held", op->lock->name);
}

static void on_release_reply(dlock_client *c, int status, const dlock__reply *reply, void *arg) {
    lock_op *op = arg;
    int result = release_outcome(c, op, status, reply);
    hold_next(op->hold);
    op_finish(op, result);
}

static void release_send(lock_op *op);

static void release_start(dlock__op *o) {
    lock_op *op = (lock_op *)o;
    if (!op_begin(op))
        return;
    hold *h = hold_get(op->lock, op->owner);
    if (!h) {
        op_fail(op, DLOCK_ENOMEM, NULL);
        return;
    }
    op->hold = h;
    hold_run(h, op, release_send);
}

/* The owner's turn (hold_run): its count is what Redis has, as far as the client knows. */
static void release_send(lock_op *op) {
    dlock_lock *l = op->lock;
    hold *h = op->hold;
    if (h->lost > 0 && h->count == 0) {
        h->lost--;
        dlock__op_fail(&op->op, DLOCK_ELOST, "lock %s was lost while held", l->name);
        hold_next(h);
        op_finish(op, DLOCK_ELOST);
        return;
    }
    /* A hold was lost but the owner took the lock again since: this release gives the live
     * hold back (it must not stay behind, renewed for ever) and reports the loss. */
    op->report_lost = h->lost > 0;
    op->believed = h->count;
    if (h->count == 1 && h->watchdog) {
        /* the last hold goes: stop renewing before the release is sent */
        dlock__lease_drop(h->watchdog);
        h->watchdog = NULL;
    }
    dlock__lock_view v = view_of(l, h, h->count > 0 ? h->lease_ms : DLOCK_WATCHDOG);
    dlock__args a = {0};
    int nkeys = l->kind->release_args(&v, &a);
    int rc = dlock__script(l->client, l->kind->release_script, DLOCK__CMD_RETRY_SAFE,
                           on_release_reply, op, nkeys, a.n, a.v, a.len);
    if (rc != DLOCK_OK) {
        hold_next(h);
        op_fail(op, rc, NULL);
    }
}

/* ---- force release and the queries ------------------------------------------------------ */

static void on_force_reply(dlock_client *c, int status, const dlock__reply *reply, void *arg) {
    (void)c;
    lock_op *op = arg;
    if (status != DLOCK_OK) {
        op_fail(op, status, reply);
        return;
    }
    op->out_bool = dlock__reply_int(reply) == 1;
    op_finish(op, DLOCK_OK);
}

static void force_start(dlock__op *o) {
    lock_op *op = (lock_op *)o;
    if (!op_begin(op))
        return;
    dlock_lock *l = op->lock;
    hold none = {0}; /* force release is nobody's: no owner field */
    dlock__lock_view v = view_of(l, &none, DLOCK_WATCHDOG);
    v.field = "";
    dlock__args a = {0};
    int nkeys = l->kind->force_args(&v, &a);
    /* not resent after a lost reply: a second delete could hit a lock taken meanwhile */
    int rc = dlock__script(l->client, l->kind->force_script, 0, on_force_reply, op, nkeys, a.n, a.v,
                           a.len);
    if (rc != DLOCK_OK)
        op_fail(op, rc, NULL);
}

enum query { Q_IS_LOCKED, Q_IS_HELD, Q_HOLD_COUNT, Q_TTL };

typedef struct query_op {
    lock_op base;
    enum query what;
} query_op;

static void on_query_reply(dlock_client *c, int status, const dlock__reply *reply, void *arg) {
    (void)c;
    query_op *q = arg;
    if (status != DLOCK_OK) {
        op_fail(&q->base, status, reply);
        return;
    }
    long long v = dlock__reply_type(reply) == DLOCK__REPLY_NIL ? 0 : dlock__reply_int(reply);
    const char *mode = q->base.lock->kind->locked_mode;
    if (q->what == Q_IS_LOCKED && mode) {
        size_t len;
        const char *s = dlock__reply_str(reply, &len);
        v = s && len == strlen(mode) && memcmp(s, mode, len) == 0;
    }
    q->base.out_int = v;
    op_finish(&q->base, DLOCK_OK);
}

static void query_start(dlock__op *o) {
    query_op *q = (query_op *)o;
    if (!op_begin(&q->base))
        return;
    dlock_lock *l = q->base.lock;
    char field[FIELD_MAX];
    owner_field(l, q->base.owner, field);
    dlock__args a = {0};
    switch (q->what) {
    case Q_IS_LOCKED:
        dlock__args_str(&a, l->kind->locked_mode ? "HGET" : "EXISTS");
        break;
    case Q_IS_HELD:
        dlock__args_str(&a, "HEXISTS");
        break;
    case Q_HOLD_COUNT:
        dlock__args_str(&a, "HGET");
        break;
    case Q_TTL:
        dlock__args_str(&a, "PTTL");
        break;
    }
    dlock__args_str(&a, l->name);
    if (q->what == Q_IS_HELD || q->what == Q_HOLD_COUNT)
        dlock__args_str(&a, field);
    if (q->what == Q_IS_LOCKED && l->kind->locked_mode)
        dlock__args_str(&a, "mode");
    int rc = dlock__command(l->client, DLOCK__CMD_RETRY_SAFE, on_query_reply, q, a.n, a.v, a.len);
    if (rc != DLOCK_OK)
        op_fail(&q->base, rc, NULL);
}

static void token_start(dlock__op *o) {
    lock_op *op = (lock_op *)o;
    if (!op_begin(op))
        return;
    hold *h = hold_find(op->lock->state, op->owner);
    if (!h || !h->has_token) {
        dlock__op_fail(o, DLOCK_ENOTOWNER, "this owner never acquired lock %s", op->lock->name);
        op_finish(op, DLOCK_ENOTOWNER);
        return;
    }
    op->out_token = h->token;
    op_finish(op, DLOCK_OK);
}

static void on_lost_start(dlock__op *o) {
    lock_op *op = (lock_op *)o;
    if (!op_begin(op))
        return;
    op->lock->lost_cb = op->new_lost_cb;
    op->lock->lost_arg = op->new_lost_arg;
    op_finish(op, DLOCK_OK);
}

/* ---- set_lease and raise_token, for composites ---------------------------------------- */

/* Both scripts answer 1 when the owner holds the lock (and the change is made), 0 when it
 * does not. For set_lease (op->hold set) the owner's holds are then lost: reported here,
 * not again by a release. */
static void on_owner_script_reply(dlock_client *c, int status, const dlock__reply *reply,
                                  void *arg) {
    (void)c;
    lock_op *op = arg;
    if (status != DLOCK_OK) {
        op_fail(op, status, reply);
        return;
    }
    if (dlock__reply_int(reply) != 1) {
        if (op->hold) {
            holds_lost(op->hold, DLOCK_ELOST);
            op->hold->lost = 0;
        }
        dlock__op_fail(&op->op, DLOCK_ENOTOWNER, "lock %s is not held by this owner",
                       op->lock->name);
        op_finish(op, DLOCK_ENOTOWNER);
        return;
    }
    op_finish(op, DLOCK_OK);
}

static void set_lease_start(dlock__op *o) {
    lock_op *op = (lock_op *)o;
    if (!op_begin(op))
        return;
    dlock_lock *l = op->lock;
    hold *h = hold_find(l->state, op->owner);
    if (!h || h->count == 0) {
        dlock__op_fail(o, DLOCK_ENOTOWNER, "lock %s is not held by this owner", l->name);
        op_finish(op, DLOCK_ENOTOWNER);
        return;
    }
    op->hold = h;
    if (h->watchdog) { /* the lease is explicit from now on */
        dlock__lease_drop(h->watchdog);
        h->watchdog = NULL;
    }
    h->lease_ms = op->lease_ms;
    dlock__args a = {0};
    dlock__args_str(&a, l->name);
    dlock__args_int(&a, op->lease_ms);
    dlock__args_str(&a, h->field);
    int rc = dlock__script(l->client, DLOCK__SCRIPT_LOCK_SET_LEASE, DLOCK__CMD_RETRY_SAFE,
                           on_owner_script_reply, op, 1, a.n, a.v, a.len);
    if (rc != DLOCK_OK)
        op_fail(op, rc, NULL);
}

static void raise_start(dlock__op *o) {
    lock_op *op = (lock_op *)o;
    if (!op_begin(op))
        return;
    dlock_lock *l = op->lock;
    char field[FIELD_MAX];
    owner_field(l, op->owner, field);
    dlock__args a = {0};
    dlock__args_str(&a, l->name);
    dlock__args_str(&a, l->token_key);
    dlock__args_str(&a, field);
    dlock__args_int(&a, (int64_t)op->token_floor);
    /* resent freely: raising to the same floor twice is raising it once */
    int rc = dlock__script(l->client, DLOCK__SCRIPT_LOCK_RAISE_TOKEN, DLOCK__CMD_RETRY_SAFE,
                           on_owner_script_reply, op, 2, a.n, a.v, a.len);
    if (rc != DLOCK_OK)
        op_fail(op, rc, NULL);
}

/* ---- the public calls ------------------------------------------------------------------- */

/* Every public call but dlock_lock_name starts here: a freed handle takes no more calls
 * (its callbacks may still be running with it). */
static int check_lock(const dlock_lock *l) {
    return l ? dlock__handle_check(&l->handle) : dlock__fail(DLOCK_EINVAL, "lock is NULL");
}

static int check_wait(int64_t wait_ms) {
    if (wait_ms < 0 && wait_ms != DLOCK_FOREVER)
        return dlock__fail(DLOCK_EINVAL, "wait_ms must be >= 0 or DLOCK_FOREVER");
    return DLOCK_OK;
}

static int check_lease(int64_t lease_ms) {
    if ((lease_ms <= 0 && lease_ms != DLOCK_WATCHDOG) || lease_ms > DLOCK_MAX_TIME_MS)
        return dlock__fail(DLOCK_EINVAL,
                           "lease_ms must be from 1 to DLOCK_MAX_TIME_MS, or DLOCK_WATCHDOG");
    return DLOCK_OK;
}

static void lock_handle_destroy(dlock__handle *handle) {
    lock_destroy(DLOCK__CONTAINER_OF(handle, dlock_lock, handle));
}

void dlock_lock_free(dlock_lock *l) {
    if (!l)
        return;
    if (l->composite) {
        l->composite->free(l->composite_self);
        dlock__free(l->name);
        dlock__free(l);
        return;
    }
    dlock__handle_free(&l->handle);
}

int dlock__lock_create_composite(const char *name, const dlock__composite_class *cls, void *self,
                                 dlock_lock **out) {
    dlock_lock *l = dlock__calloc(1, sizeof(*l));
    if (!l || !(l->name = dlock__strdup(name))) {
        dlock__free(l);
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    }
    l->composite = cls;
    l->composite_self = self;
    *out = l;
    return DLOCK_OK;
}

void dlock__lock_fire_lost(dlock_lock *l, uint64_t owner, int reason) {
    if (l->lost_cb)
        l->lost_cb(l, owner, reason, l->lost_arg);
}

dlock_client *dlock__lock_client(const dlock_lock *l) {
    return l->composite ? NULL : l->client;
}

bool dlock__lock_claim(dlock_lock *l, bool claim) {
    if (claim && l->member)
        return false;
    l->member = claim;
    return true;
}

/* The composites' view of a call: composites answer on the caller's thread. */
#define COMPOSITE(l, call)                                                                         \
    do {                                                                                           \
        if ((l)->composite)                                                                        \
            return (l)->composite->call;                                                           \
    } while (0)

int dlock__lock_create(dlock_client *c, const char *name, const dlock__lock_kind *kind, bool fenced,
                       dlock_lock **out) {
    if (!c)
        return dlock__fail(DLOCK_EINVAL, "client is NULL");
    if (!out)
        return dlock__fail(DLOCK_EINVAL, "out is NULL");
    int rc = dlock__check_name(name);
    if (rc != DLOCK_OK)
        return rc;
    dlock_lock *l = dlock__calloc(1, sizeof(*l));
    if (!l)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    dlock__handle_init(&l->handle, c, NULL, lock_handle_destroy);
    l->client = c;
    l->kind = kind;
    l->fenced = fenced;
    l->name = dlock__strdup(name);
    l->channel = dlock__name_prefixed("redisson_lock__channel", name);
    l->token_key = fenced ? dlock__name_prefixed("redisson_lock_token", name) : NULL;
    l->kind_data = kind->data_new ? kind->data_new(name) : NULL;
    if (!l->name || !l->channel || (fenced && !l->token_key) || (kind->data_new && !l->kind_data)) {
        lock_destroy(l);
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    }
    *out = l;
    return DLOCK_OK;
}

/* ---- the reentrant kind ----------------------------------------------------------------- */

/* acquire.lua: KEYS N [token key]; ARGV lease, field, believed holds */
static int reentrant_acquire_args(const dlock__lock_view *v, dlock__args *a) {
    dlock__args_str(a, v->name);
    if (v->token_key)
        dlock__args_str(a, v->token_key);
    int nkeys = a->n;
    dlock__args_int(a, v->lease_ms);
    dlock__args_str(a, v->field);
    dlock__args_int(a, v->believed);
    return nkeys;
}

/* release.lua: KEYS N, channel; ARGV lease, field, believed holds */
static int reentrant_release_args(const dlock__lock_view *v, dlock__args *a) {
    dlock__args_str(a, v->name);
    dlock__args_str(a, v->channel);
    dlock__args_int(a, v->lease_ms);
    dlock__args_str(a, v->field);
    dlock__args_int(a, v->believed);
    return 2;
}

/* force_release.lua: KEYS N, channel */
static int reentrant_force_args(const dlock__lock_view *v, dlock__args *a) {
    dlock__args_str(a, v->name);
    dlock__args_str(a, v->channel);
    return 2;
}

/* A freed lock lets one waiter of each client in: the others stay asleep. */
static int wake_one(const char *msg, size_t len) {
    (void)msg;
    (void)len;
    return 1;
}

static const dlock__lock_kind reentrant_kind = {
    .what = "lock",
    .acquire_script = DLOCK__SCRIPT_LOCK_ACQUIRE,
    .release_script = DLOCK__SCRIPT_LOCK_RELEASE,
    .force_script = DLOCK__SCRIPT_LOCK_FORCE_RELEASE,
    .acquire_args = reentrant_acquire_args,
    .release_args = reentrant_release_args,
    .force_args = reentrant_force_args,
    .renew_script = DLOCK__SCRIPT_CORE_RENEW_HASH,
    .wake_count = wake_one,
};

int dlock_lock_new(dlock_client *c, const char *name, dlock_lock **out) {
    return dlock__lock_create(c, name, &reentrant_kind, false, out);
}

int dlock_fencedlock_new(dlock_client *c, const char *name, dlock_lock **out) {
    return dlock__lock_create(c, name, &reentrant_kind, true, out);
}

const char *dlock_lock_name(const dlock_lock *l) {
    return l ? l->name : NULL;
}

static int run_blocking(lock_op *op) {
    return dlock__op_run(&op->op);
}

int dlock_lock_try_acquire(dlock_lock *l, int64_t wait_ms, int64_t lease_ms) {
    int rc;
    if ((rc = check_lock(l)) || (rc = check_wait(wait_ms)) || (rc = check_lease(lease_ms)))
        return rc;
    COMPOSITE(l, try_acquire(l->composite_self, dlock_thread_owner(), wait_ms, lease_ms));
    lock_op op;
    op_init(&op, l, acquire_start, dlock_thread_owner());
    op.wait_ms = wait_ms;
    op.lease_ms = lease_ms;
    return run_blocking(&op);
}

int dlock_lock_acquire(dlock_lock *l, int64_t lease_ms) {
    return dlock_lock_try_acquire(l, DLOCK_FOREVER, lease_ms);
}

int dlock_lock_release(dlock_lock *l) {
    int rc = check_lock(l);
    if (rc)
        return rc;
    COMPOSITE(l, release(l->composite_self, dlock_thread_owner()));
    lock_op op;
    op_init(&op, l, release_start, dlock_thread_owner());
    return run_blocking(&op);
}

int dlock_lock_force_release(dlock_lock *l, bool *was_locked) {
    int rc = check_lock(l);
    if (rc)
        return rc;
    COMPOSITE(l, force_release(l->composite_self, was_locked));
    lock_op op;
    op_init(&op, l, force_start, 0);
    rc = run_blocking(&op);
    if (rc == DLOCK_OK && was_locked)
        *was_locked = op.out_bool;
    return rc;
}

/* Runs a query for the calling thread; the answer (an integer, 0 for nil) in *out. */
static int run_query(dlock_lock *l, enum query what, const void *out, int64_t *answer) {
    int rc = check_lock(l);
    if (rc)
        return rc;
    if (!out)
        return dlock__fail(DLOCK_EINVAL, "out is NULL");
    query_op q;
    memset(&q, 0, sizeof(q));
    op_init(&q.base, l, query_start, dlock_thread_owner());
    q.what = what;
    rc = run_blocking(&q.base);
    *answer = q.base.out_int;
    return rc;
}

int dlock_lock_is_locked(dlock_lock *l, bool *out) {
    if (l && out)
        COMPOSITE(l, is_locked(l->composite_self, out));
    int64_t v;
    int rc = run_query(l, Q_IS_LOCKED, out, &v);
    if (rc == DLOCK_OK)
        *out = v != 0;
    return rc;
}

int dlock_lock_is_held(dlock_lock *l, bool *out) {
    if (l && out)
        COMPOSITE(l, is_held(l->composite_self, dlock_thread_owner(), out));
    int64_t v;
    int rc = run_query(l, Q_IS_HELD, out, &v);
    if (rc == DLOCK_OK)
        *out = v != 0;
    return rc;
}

int dlock_lock_hold_count(dlock_lock *l, int64_t *out) {
    if (l && out)
        COMPOSITE(l, hold_count(l->composite_self, dlock_thread_owner(), out));
    int64_t v;
    int rc = run_query(l, Q_HOLD_COUNT, out, &v);
    if (rc == DLOCK_OK)
        *out = v;
    return rc;
}

int dlock_lock_ttl(dlock_lock *l, int64_t *out_ms) {
    if (l && out_ms)
        COMPOSITE(l, ttl(l->composite_self, dlock_thread_owner(), out_ms));
    int64_t v;
    int rc = run_query(l, Q_TTL, out_ms, &v);
    if (rc == DLOCK_OK)
        *out_ms = v;
    return rc;
}

int dlock_lock_token_of(dlock_lock *l, uint64_t owner, uint64_t *out) {
    int rc = check_lock(l);
    if (rc)
        return rc;
    if (!out)
        return dlock__fail(DLOCK_EINVAL, "out is NULL");
    COMPOSITE(l, token_of(l->composite_self, owner, out));
    if (!l->fenced)
        return dlock__fail(DLOCK_EINVAL, "lock %s is not a fenced lock", l->name);
    lock_op op;
    op_init(&op, l, token_start, owner);
    if (dlock__on_loop_thread(l->client)) {
        /* the holds are loop-thread state: read them here, without the queue */
        hold *h = l->state ? hold_find(l->state, owner) : NULL;
        if (!h || !h->has_token)
            return dlock__fail(DLOCK_ENOTOWNER, "this owner never acquired lock %s", l->name);
        *out = h->token;
        return DLOCK_OK;
    }
    rc = run_blocking(&op);
    if (rc == DLOCK_OK)
        *out = op.out_token;
    return rc;
}

int dlock__lock_set_lease(dlock_lock *l, uint64_t owner, int64_t lease_ms) {
    if (l->composite || lease_ms <= 0)
        return dlock__fail(DLOCK_EINVAL, "set_lease needs an ordinary lock and a lease");
    lock_op op;
    op_init(&op, l, set_lease_start, owner);
    op.lease_ms = lease_ms;
    return run_blocking(&op);
}

bool dlock__lock_fenced(const dlock_lock *l) {
    return !l->composite && l->fenced;
}

int dlock_lock_token(dlock_lock *l, uint64_t *out) {
    return dlock_lock_token_of(l, dlock_thread_owner(), out);
}

int dlock_lock_on_lost(dlock_lock *l, dlock_lost_cb cb, void *arg) {
    int rc = check_lock(l);
    if (rc)
        return rc;
    if (l->composite || dlock__on_loop_thread(l->client)) {
        l->lost_cb = cb;
        l->lost_arg = arg;
        return DLOCK_OK;
    }
    /* set on the loop thread, where the watchdog reads it */
    lock_op op;
    op_init(&op, l, on_lost_start, 0);
    op.new_lost_cb = cb;
    op.new_lost_arg = arg;
    return run_blocking(&op);
}

static int submit_async(lock_op *op, dlock_lock_cb cb, void *arg) {
    op->cb = cb;
    op->arg = arg;
    op->op.complete = async_complete;
    int rc = dlock__op_submit(&op->op);
    if (rc != DLOCK_OK)
        dlock__free(op);
    return rc;
}

int dlock_lock_acquire_async(dlock_lock *l, uint64_t owner, int64_t wait_ms, int64_t lease_ms,
                             dlock_lock_cb cb, void *arg) {
    int rc;
    if ((rc = check_lock(l)) || (rc = check_wait(wait_ms)) || (rc = check_lease(lease_ms)))
        return rc;
    if (owner == 0 || !cb)
        return dlock__fail(DLOCK_EINVAL, "%s", owner == 0 ? "owner is 0" : "cb is NULL");
    if (l->composite)
        return dlock__fail(DLOCK_EINVAL, "%s: composite locks have no async face yet", l->name);
    lock_op *op = dlock__malloc(sizeof(*op));
    if (!op)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    op_init(op, l, acquire_start, owner);
    op->wait_ms = wait_ms;
    op->lease_ms = lease_ms;
    return submit_async(op, cb, arg);
}

int dlock_lock_release_async(dlock_lock *l, uint64_t owner, dlock_lock_cb cb, void *arg) {
    int rc = check_lock(l);
    if (rc)
        return rc;
    if (owner == 0 || !cb)
        return dlock__fail(DLOCK_EINVAL, "%s", owner == 0 ? "owner is 0" : "cb is NULL");
    if (l->composite)
        return dlock__fail(DLOCK_EINVAL, "%s: composite locks have no async face yet", l->name);
    lock_op *op = dlock__malloc(sizeof(*op));
    if (!op)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    op_init(op, l, release_start, owner);
    return submit_async(op, cb, arg);
}

int dlock__lock_raise_token_async(dlock_lock *l, uint64_t owner, uint64_t floor, dlock_lock_cb cb,
                                  void *arg) {
    if (l->composite || !l->fenced || owner == 0 || !cb || floor > INT64_MAX)
        return dlock__fail(DLOCK_EINVAL, "raise_token needs a fenced lock, an owner and a floor");
    lock_op *op = dlock__malloc(sizeof(*op));
    if (!op)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    op_init(op, l, raise_start, owner);
    op->token_floor = floor;
    return submit_async(op, cb, arg);
}
