/* SPDX-License-Identifier: MIT */
/* engine.h — the lock engine's own parts, shared by its files in src/lock and by no kind
 * (a kind sees lock_engine.h only).
 *
 *   engine.c          per-name state, holds, the per-owner sequence, ops
 *   engine_acquire.c  acquire: the owner's sequence, the kind's script, the wait
 *   engine_grant.c    acquire: a lock a release handed to the waiting owner (a grant)
 *   engine_release.c  release: the owner's sequence, the kind's script, what the reply means
 *   engine_query.c    force release, queries, tokens, the lost callback's setting
 *   ordinary.c        the ordinary handle: its assembly, its free, its class table
 *                     (lock_class.h) over the ops; it calls the engine, never the reverse
 *   member.c          member.h: what a composite asks of an ordinary lock
 *
 * The client keeps, per owner of each lock name, the hold count it believes that owner
 * has. The scripts receive it and so can tell a resend (the reply of the first send was
 * lost with a dropped connection) from a new request: an acquire or release is applied
 * once however many times the core sends it. A reply that shows the owner's holds vanished
 * (the key expired or was deleted) makes those holds lost, as the watchdog would.
 *
 * Everything runs on the client's loop thread; public calls carry their work there as ops
 * (dlock__op_run for the blocking face, dlock__op_submit for the async one). */
#ifndef DLOCK_LOCK_ENGINE_INT_H
#define DLOCK_LOCK_ENGINE_INT_H

#include "lock_class.h"
#include "lock_engine.h"
#include "lock_shapes.h"
#include "member.h"

/* An owner field and the kind's suffix (lock_engine.h). */
#define DLOCK__LOCK_FIELD_MAX (DLOCK__OWNER_FIELD_MAX + 16)

typedef struct lock_handle lock_handle;
typedef struct lock_state lock_state;
typedef struct hold hold;
typedef struct lock_op lock_op;

/* Who hears of a handle's lost holds (the application's dlock_lost_cb, or a composite's
 * dlock__member_lost_fn: the same signature). */
typedef struct lost_to {
    dlock_lost_cb fn;
    void *arg;
} lost_to;

/* An ordinary lock: a handle of some kind standing on the engine. */
struct lock_handle {
    struct dlock_lock base; /* first: the class (dlock__ordinary_class) and the name */
    dlock__handle handle;   /* the client, the ops in flight, the free protocol */
    dlock_client *client;
    const dlock__lock_kind *kind;
    void *kind_data;
    bool fenced;
    char *channel;
    char *token_key;   /* fenced only */
    lock_state *state; /* shared with the client's other handles of this name; set by the
                          first op, on the loop thread */
    lock_handle *next_of_state;
    lost_to lost;         /* loop thread: dlock_lock_on_lost's callback */
    lost_to member_lost;  /* loop thread: a composite's, while l is its member (member.h);
                             told instead of lost */
    _Atomic bool claimed; /* l is a composite's member */
    /* dlock_lock_set_max_hold's bound, 0 none, or DLOCK_MAX_HOLD_CLIENT: the client's */
    _Atomic int64_t max_hold_ms;
};

/* What the client knows of one lock name, whichever of its handles is used: the hold
 * count of each owner must be one count, or two handles would each take the other's hold
 * for their own resend. */
struct lock_state {
    dlock_client *client;
    hold *holds;                  /* one per owner that ever used the name */
    lock_handle *handles;         /* whose lost callbacks to call */
    const dlock__lock_kind *kind; /* of the handle that made it: its rules are the name's */
    dlock__lease_ops lease_ops;   /* the kind's renew script, our lost handler */
    dlock__wait_ops wait_ops;     /* the kind's wake rule, the acquire's hooks (engine_acquire.c) */
};

/* What the client knows of one owner's holds on one lock. */
struct hold {
    hold *next;
    lock_state *state;
    uint64_t owner;
    char field[DLOCK__LOCK_FIELD_MAX];
    int64_t count;    /* holds this owner has, as far as the client knows */
    int64_t lost;     /* holds lost while held: each makes a release say DLOCK_ELOST */
    int64_t lease_ms; /* lease of the latest acquisition, DLOCK_WATCHDOG or ms */
    uint64_t token;   /* fenced: token of the latest acquisition */
    bool has_token;
    /* Others waited in line when this owner's holds were taken (acquire.lua's "2"): the
     * last release is to name one (the kind's release_args, lock_engine.h's line). */
    bool line;
    bool release_unsure; /* a release failed with DLOCK_ECONN: it may have been applied */
    uint64_t sends;      /* acquires and releases of this owner sent: a grant's confirmation
                            applies to the hold only while none was sent after it */
    /* One acquire or release of this owner in Redis at a time (dlock__hold_run): the count
     * the scripts are told is then exact, as their resend rules need. */
    bool busy;
    lock_op *queue_head, *queue_tail; /* waiting in their owner's sequence, oldest first */
    dlock__lease *watchdog;           /* registered while a watchdog hold is taken or held */
    /* When the watchdog stops renewing this owner's holds (monotonic ms; 0: never): the
     * send of the acquire that took the first of them, plus its handle's bound */
    int64_t bound_until_ms;
    char *waiter_channel; /* the kind's channel for this owner, or NULL: the lock's */
};

/* How an op's caller hears its end: the blocking face reads the op's fields; the async
 * faces get a callback. */
enum lock_op_face { FACE_BLOCKING, FACE_LOCK_CB, FACE_ANSWER_CB };

/* One call on an ordinary lock in flight. */
struct lock_op {
    dlock__op op; /* first: the core's op */
    lock_handle *lock;
    uint64_t owner;
    int64_t wait_ms;
    int64_t lease_ms;
    hold *hold;
    dlock__waiter waiter; /* acquire */
    bool waiting;         /* acquire: the wait hears the op's attempts (dlock__hold_settled) */
    int attempts;         /* acquire: attempts sent */
    bool claim_open;      /* acquire: an attempt claimed the next turn, none took it back */
    /* acquire: the owner's place in the lock's line, as the latest busy attempt answered
     * (µs, acquire.lua; 0: none): only a grant of that place is this wait's */
    int64_t joined_us;
    int64_t joined_sent_ms; /* acquire: the send of the attempt that first answered joined_us */
    bool acks_asked;        /* acquire: the latest attempt asked replicas to acknowledge it */
    int64_t sent_ms; /* acquire, release: the latest send; a grant's confirmation: its send */
    /* a grant's confirmation (engine_grant.c): the owner's sends when it was made, and when
     * the grant's own lease runs out at the earliest (monotonic ms) */
    uint64_t grant_sends;
    int64_t grant_lapse_ms;
    dlock__timer grant_lapse;  /* shortly before grant_lapse_ms: unconfirmed by then, lost */
    bool grant_lost;           /* the hold was reported lost before the confirmation came */
    int given_back_ends;       /* acquire: what the attempt ends with once its give-back is done
                                  (dlock__op_unacked) */
    bool report_lost;          /* release: a lost hold is reported by this release, which still
                                  releases the owner's live holds */
    bool unwatched;            /* release: it stopped the owner's watchdog lease (the last hold) */
    int refused;               /* release: the status of a release Redis refused, while the lease
                                  it stopped is confirmed again */
    int64_t relet_ms;          /* release: when that confirming renewal was sent */
    void (*send)(lock_op *op); /* acquire or release: sends when its owner's sequence reaches it */
    lock_op *queue_next;
    enum dlock__member_query what; /* query */
    uint64_t token_floor;          /* raise_token */
    lost_to new_lost;              /* dlock__lock_set_lost */
    bool of_member;
    /* results */
    int64_t answer; /* queries: the value; force: was_locked */
    uint64_t token;
    /* async faces */
    enum lock_op_face face;
    dlock_lock_cb cb;
    dlock__member_answer_cb answer_cb;
    void *arg;
};

/* ---- the ordinary handle (ordinary.c) --------------------------------------------------- */

extern const dlock__lock_class dlock__ordinary_class;

/* l as an ordinary lock, or NULL for a composite. */
lock_handle *dlock__ordinary(dlock_lock *l);

/* DLOCK_OK while l's handle is open, else DLOCK_ECLOSED (with its text). Any thread. */
int dlock__ordinary_check(const dlock_lock *l);

/* The free protocol of an ordinary handle (dlock__handle_free). */
void dlock__ordinary_free(dlock_lock *l);

/* ---- holds (engine.c); loop thread ------------------------------------------------------ */

hold *dlock__hold_find(lock_state *st, uint64_t owner);
/* Found or made (NULL on ENOMEM); the op has begun, so l->state is set. */
hold *dlock__hold_get(lock_handle *l, uint64_t owner);
/* The owner's field in N: "<client-id>:<owner>" and the kind's suffix. */
void dlock__owner_field_of(const lock_handle *l, uint64_t owner, char field[DLOCK__LOCK_FIELD_MAX]);
/* The owner's holds are gone from Redis: counted as lost, the watchdog stopped, and every
 * handle of the name told (its lost callback, or its composite's). */
void dlock__holds_lost(hold *h, int reason);
/* Registers h's watchdog lease (pending until dlock__lease_held); false on ENOMEM. */
bool dlock__hold_watch(lock_handle *l, hold *h);
/* Sets who hears of l's lost holds (of_member: its composite's receiver, else its own),
 * on l's loop thread, where they are told: when this returns, the former receiver is not
 * being told and will not be. Blocks off the loop thread. */
int dlock__lock_set_lost(lock_handle *l, bool of_member, lost_to to);
/* Stops renewing h's lease, if any. */
void dlock__hold_unwatch(hold *h);
/* What the kind's hooks see of lock l and owner h, for a call with lease_ms. */
dlock__lock_view dlock__view_of(const lock_handle *l, const hold *h, int64_t lease_ms);

/* ---- the owner's sequence (engine.c) -------------------------------------------------------- */

/* The scripts tell a resend from a new request by the count the client believes the owner
 * has: two of the owner's commands in Redis at once would break that. So an owner's
 * acquires and releases of one lock go to Redis one after another: send(op) runs now if
 * nothing of the owner's is in Redis, else when the owner's command before it is settled. */
void dlock__hold_run(hold *h, lock_op *op, void (*send)(lock_op *op));

/* The owner's command of op is settled (its reply applied to the hold, or never sent):
 * the owner's next command goes, then op ends: an acquire's wait hears status and hint
 * (ms, -1 none), any other op completes with status. Every reply path of an op that took
 * the owner's sequence moves on here, so none can hold it up. */
void dlock__hold_settled(lock_op *op, int status, int64_t hint_ms);

/* ---- ops (engine.c) --------------------------------------------------------------------- */

void dlock__lock_op_init(lock_op *op, lock_handle *l, dlock__op_fn start, uint64_t owner);
/* First thing of every op's start: counted on its handle, the shared state at hand; false
 * when the op has already ended. */
bool dlock__lock_op_begin(lock_op *op);
void dlock__lock_op_end(lock_op *op, int status);
void dlock__lock_op_fail(lock_op *op, int status, const dlock__reply *reply);
/* Blocking face: runs op on the loop and waits. */
int dlock__lock_op_run(lock_op *op);
/* Async faces: op (allocated) completes through cb or answer_cb; freed on an error. */
int dlock__lock_op_submit(lock_op *op, dlock_lock_cb cb, void *arg);
int dlock__lock_op_submit_answer(lock_op *op, dlock__member_answer_cb cb, void *arg);
/* An allocated op for an async call, or NULL with DLOCK_ENOMEM's text. */
lock_op *dlock__lock_op_new(lock_handle *l, dlock__op_fn start, uint64_t owner);

/* ---- acquisitions (engine_acquire.c, engine_grant.c) ------------------------------------ */

/* Obtained: the hold as Redis counts it ({1|2, holds, token}), its token, its watchdog
 * bound; its watchdog lease renewed from op's send when confirmed, else left pending (a
 * grant's own confirmation does it). */
void dlock__acquired(lock_op *op, const dlock__shape_values *got, bool confirmed);

/* The wait's granted hook (dlock__wait_ops): the grant `turn` (release.lua) hands op's
 * owner the lock; true when the owner now holds it (recorded, its lease being set). */
bool dlock__acquire_granted(dlock__waiter *w, const char *turn, size_t len);

/* ---- the op starts (engine_*.c) --------------------------------------------------------- */

void dlock__acquire_start(dlock__op *o);
void dlock__release_start(dlock__op *o);
void dlock__force_start(dlock__op *o);
void dlock__query_start(dlock__op *o);
void dlock__token_start(dlock__op *o);
void dlock__set_lease_start(dlock__op *o);
void dlock__raise_token_start(dlock__op *o);

#endif
