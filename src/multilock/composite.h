/* SPDX-License-Identifier: MIT */
/* composite.h — what the files of src/multilock share: the composite handle (MultiLock,
 * RedLock: a class of lock_class.h), the owners' holdings, the composite's ops and the
 * rounds that fan a call out to the members and gather their answers. Private to
 * src/multilock.
 *
 * One thread. Everything of a composite runs on its home: the loop thread of its first
 * member's client. A public call is an op of the home client (dlock__op_submit, or
 * dlock__op_run for the blocking face); its start sends the members' async calls
 * (dlock/lock.h, lock/member.h); each member answers on its own client's loop thread and
 * the answer is carried home as an op posted to the home client (dlock__op_post: internal
 * work, not a call in its calls_in_flight), or handled at once when the member lives on
 * the home client (dlock__composite_carry). So no field here needs a lock but what the
 * carrying reads: the two reference counts are atomic, for an answer that can no longer be
 * carried home and drops its references where it is; and a carrier reads the home client
 * under home_mu, since once the handle is gone (home_gone) the application may free that
 * client while members on other clients still answer calls made before the free.
 *
 * Lifetime. The handle (a dlock__handle on the home client) counts the ops in flight. A
 * free cancels the acquires in flight (DLOCK_ECANCELED; what they took is given back),
 * lets the other calls end with their outcome, and the handle goes after the last
 * callback. The memory stays while a member has still to answer: every round holds a
 * reference on the composite, and every member call one on its round.
 *
 * Floors. Each file calls only the files below it, never one beside or above:
 *   multilock.c, redlock.c  the two kinds: how each acquires, releases and cancels
 *   calls.c                 the doors of the public calls: ops of the home client
 *   query.c                 the queries and force release both kinds share
 *   round.c                 one call fanned out to the members, their answers gathered
 *   composite.c             the handle: creation, references, carrying home, an op's end
 *   holding.c               what each owner holds through the composite
 * What differs between the kinds is their composite_kind table (a file below calls a kind
 * only through it): the acquire, release and cancel, the quorum rule and RedLock's
 * numbers. */
#ifndef DLOCK_COMPOSITE_H
#define DLOCK_COMPOSITE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dlock/lock.h"
#include "dlock/multilock.h"
#include "dlock_int.h"
#include "lock/lock_class.h"
#include "lock/member.h"

typedef struct composite composite;
typedef struct round round;
typedef struct comp_op comp_op;

/* What one owner holds through the composite. */
typedef struct holding {
    struct holding *next;
    uint64_t owner;
    int *holds;        /* per member: holds taken through the composite, not yet released */
    size_t held_count; /* members with holds */
    int depth;         /* acquisitions not yet released */
    int64_t lease_ms;  /* the latest acquisition's lease (a RedLock's validity) */
    uint64_t token;    /* fenced members: the latest acquisition's token */
    bool has_token;
    bool lost_fired; /* the composite's lost callback ran for this holding */
} holding;

/* ---- rounds (round.c) ---------------------------------------------------------------- */

/* A member's answer to its call of a round. */
enum answer {
    ANSWER_NOT_ASKED, /* not part of the round */
    ANSWER_PENDING,   /* asked, no answer yet */
    ANSWER_YES,       /* DLOCK_OK */
    ANSWER_NO,        /* a plain no: busy (DLOCK_ETIMEDOUT), not held (DLOCK_ENOTOWNER) */
    ANSWER_ERROR,     /* the call failed: any other status */
};

/* What a round asks of each member. */
enum round_call {
    CALL_ACQUIRE,   /* one acquisition: wait_ms, lease_ms */
    CALL_RELEASE,   /* one hold back */
    CALL_SET_LEASE, /* the owner's hold keeps lease_ms from now (member.h) */
    CALL_RAISE,     /* fenced: the token counter up to floor (member.h) */
    CALL_QUERY,     /* query (member.h); the answer in value */
    CALL_FORCE,     /* force release; value: it was locked */
};

typedef struct member_call {
    dlock__op carry; /* carries the answer from the member's loop thread home */
    round *r;
    size_t index;
    enum answer answer; /* home loop */
    /* written by the answer before it is carried home, read at home after */
    int status;
    int64_t value; /* a query's answer; an acquisition's token (fenced member) */
    bool handed;   /* acquire: a release already follows this call (home loop) */
    char detail[DLOCK__ERROR_TEXT_SIZE]; /* the member's dlock_last_error() when it failed */
} member_call;

typedef void (*round_fn)(round *r);

struct round {
    composite *cp; /* referenced: it outlives the round */
    enum round_call call;
    uint64_t owner;
    int64_t wait_ms, lease_ms;       /* acquire; set_lease's lease */
    uint64_t floor;                  /* raise */
    enum dlock__member_query query;  /* query */
    size_t asked, answered, yes, no; /* no: ANSWER_NO and ANSWER_ERROR */
    size_t need;                     /* decided once this many said yes or can no more */
    bool decided;                    /* answers after it are late */
    bool kept;                       /* acquire, decided won: a late yes may join */
    bool open;                       /* acquire, in cp->open_rounds: members yet to answer */
    round *next_open;
    round_fn decided_fn;
    void *ctx;
    dlock__timer budget;
    _Atomic int refs; /* its owner's, and one per member call not answered */
    member_call calls[];
};

/* A round of call for owner; the caller marks the members to ask (dlock__round_ask), sets
 * the call's parameters, and sends it. NULL when out of memory. */
round *dlock__round_new(composite *cp, enum round_call call, uint64_t owner);
void dlock__round_ask(round *r, size_t i);

/* Sends the round's calls at once. fn(r) runs once, on the home loop, when the round is
 * decided: every member asked has answered, or need of them said yes (need 0: every
 * answer is awaited), or so many said no that need can no more be reached, or budget_ms
 * (-1: none) has run out. fn may run inside this call (every call refused at once, or
 * none asked): the caller does nothing with its op after it. */
void dlock__round_send(round *r, size_t need, int64_t budget_ms, round_fn fn, void *ctx);

/* Decides r now without calling its fn (an op canceled): later answers are late. */
void dlock__round_abandon(round *r);

/* The round's owner is done with it (from its fn, or after abandoning it). */
void dlock__round_done(round *r);

/* A release of owner's hold of member i, its answer ignored. */
void dlock__release_unwaited(composite *cp, size_t i, uint64_t owner);

/* An abandoned or lost acquire round: every member that said yes, may have (DLOCK_ECONN),
 * or has not answered yet (its release follows its acquire) gets a release; those that
 * said yes go into into (when not NULL, to be awaited), the others are sent unwaited. */
void dlock__round_give_back(round *acq, round *into);

/* ---- the composite (composite.c) ----------------------------------------------------- */

/* What a composite op does. */
enum comp_call {
    OP_ACQUIRE,
    OP_RELEASE,
    OP_FORCE,
    OP_QUERY,
    OP_HOLD_COUNT,
    OP_TOKEN,
    OP_ON_LOST,
};

struct comp_op {
    dlock__op op; /* first: an op of the home client */
    composite *cp;
    enum comp_call call;
    uint64_t owner;
    int64_t wait_ms, lease_ms;
    enum dlock__member_query query;
    int64_t answer; /* query, force (was locked), hold count; the token */
    dlock_lost_cb lost_cb;
    void *lost_arg;
    /* under way */
    int64_t lease;        /* the lease the acquisition gets (the watchdog's for DLOCK_WATCHDOG) */
    int64_t deadline_ms;  /* acquire: when the wait is over */
    int64_t started_ms;   /* RedLock: the current round's start */
    size_t step;          /* MultiLock: members taken so far */
    uint64_t token;       /* fenced: the acquisition's token */
    round *round, *extra; /* the rounds the op waits for (a RedLock release: two) */
    int waiting;          /* rounds not decided yet */
    int status;           /* release: the outcome so far */
    bool lost;            /* release: the holding was lost */
    size_t releasing;     /* release: members the owner held */
    size_t got;           /* RedLock: the last round's yes, or the raise's confirmations */
    int64_t validity;     /* RedLock: the last round's validity */
    int error;            /* RedLock: a member's error other than busy, across rounds */
    bool unfenced;        /* RedLock: won, but its token not confirmed by a quorum */
    void (*after_release)(comp_op *op, int status); /* RedLock: who a release answers */
    dlock__timer pause;                             /* RedLock: between two rounds */
    bool listed;                                    /* in cp->acquiring */
    comp_op *next_acquiring;
    /* the async face */
    dlock_lock_cb cb;
    void *arg;
};

/* What tells MultiLock from RedLock. */
typedef struct composite_kind {
    const char *what; /* "multilock", "redlock": names and error texts */
    bool majority;    /* RedLock: a quorum of n/2 + 1; MultiLock: every member */
    void (*acquire)(comp_op *op);
    void (*release)(comp_op *op);
    /* An acquire in flight when the handle is freed: give back what it took and end it
     * with DLOCK_ECANCELED. */
    void (*cancel)(comp_op *op);
    /* RedLock's numbers, for the validity its TTL query answers (query.c); NULL for a
     * MultiLock, whose TTL is its shortest member's. */
    int64_t (*lease_of)(const composite *cp, int64_t lease_ms); /* DLOCK_WATCHDOG: the watchdog's */
    int64_t (*drift_ms)(int64_t lease_ms); /* the clock drift allowed for a lease */
} composite_kind;

struct composite {
    struct dlock_lock base; /* first: the class and the name */
    dlock__handle handle;   /* on the home client: the ops in flight, the free protocol */
    const composite_kind *kind;
    dlock_client *home; /* the first member's client: every round runs on its loop */
    bool redlock;
    size_t n;
    size_t quorum; /* RedLock: n/2 + 1; MultiLock: n */
    bool fenced;   /* some member is a fenced lock (for a RedLock: every member) */
    dlock_lock **members;
    holding *holdings;
    round *open_rounds; /* RedLock acquire rounds with members yet to answer */
    comp_op *acquiring; /* acquires in flight, canceled by a free */
    dlock_lost_cb lost_cb;
    void *lost_arg;
    dlock__op cancel_call;   /* a free's: cancels the acquires in flight */
    _Atomic bool gone;       /* freed: answers from now on only give themselves back */
    _Atomic int refs;        /* the handle's, one per round, one per loss carried home */
    pthread_mutex_t home_mu; /* a carrier's use of home against the handle going */
    bool home_gone;          /* the handle is gone: home may be freed, carry nothing there */
};

int dlock__composite_new(dlock_lock *const *locks, size_t n, const dlock__lock_class *cls,
                         const composite_kind *kind, dlock_lock **out);

/* The op is over: its callback (async face) or its caller (blocking face) gets status. */
void dlock__composite_end(comp_op *op, int status);

/* The op is over with a failure whose text is printf-style. */
void dlock__composite_fail(comp_op *op, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void dlock__composite_unref(composite *cp);

/* How a member's loop thread gets something (op, made with dlock__op_init on cp->home)
 * home. */
enum carry {
    CARRY_HERE,    /* this is the home loop thread: handle it at once, op unused */
    CARRY_POSTED,  /* op is queued on the home client (dlock__op_post) */
    CARRY_REFUSED, /* the home client is closing, or the handle is gone (and the client
                      may be too): drop it where it is */
};
enum carry dlock__composite_carry(composite *cp, dlock__op *op);

/* ---- the doors of the public calls (calls.c) ----------------------------------------- */

/* The class calls both composites share (their lock_class.h tables). */
int dlock__composite_check(const dlock_lock *l);
int dlock__composite_acquire_async(dlock_lock *l, uint64_t owner, int64_t wait_ms, int64_t lease_ms,
                                   dlock_lock_cb cb, void *arg);
int dlock__composite_release_async(dlock_lock *l, uint64_t owner, dlock_lock_cb cb, void *arg);
int dlock__composite_try_acquire(dlock_lock *l, uint64_t owner, int64_t wait_ms, int64_t lease_ms);
int dlock__composite_release(dlock_lock *l, uint64_t owner);
int dlock__composite_force_release(dlock_lock *l, bool *was_locked);
int dlock__composite_is_locked(dlock_lock *l, bool *out);
int dlock__composite_is_held(dlock_lock *l, uint64_t owner, bool *out);
int dlock__composite_hold_count(dlock_lock *l, uint64_t owner, int64_t *out);
int dlock__composite_ttl(dlock_lock *l, uint64_t owner, int64_t *out_ms);
int dlock__composite_token_of(dlock_lock *l, uint64_t owner, uint64_t *out);
int dlock__composite_on_lost(dlock_lock *l, dlock_lost_cb cb, void *arg);
void dlock__composite_free(dlock_lock *l);

/* The class table of a composite (lock_class.h): every call goes to the shared ones above. */
#define DLOCK__COMPOSITE_CLASS(what_)                                                              \
    {                                                                                              \
        .what = (what_), .check = dlock__composite_check,                                          \
        .acquire_async = dlock__composite_acquire_async,                                           \
        .release_async = dlock__composite_release_async,                                           \
        .try_acquire = dlock__composite_try_acquire, .release = dlock__composite_release,          \
        .force_release = dlock__composite_force_release, .is_locked = dlock__composite_is_locked,  \
        .is_held = dlock__composite_is_held, .hold_count = dlock__composite_hold_count,            \
        .ttl = dlock__composite_ttl, .token_of = dlock__composite_token_of,                        \
        .on_lost = dlock__composite_on_lost, .free = dlock__composite_free,                        \
    }

/* ---- the queries and force release, both composites (query.c) ------------------------ */

void dlock__composite_query(comp_op *op);

/* ---- holdings (holding.c); home loop ------------------------------------------------- */

holding *dlock__holding_find(composite *cp, uint64_t owner);

/* An acquisition succeeded: owner took a hold of every member that said yes in acq (NULL:
 * every member). */
int dlock__holding_add(composite *cp, uint64_t owner, const round *acq, int64_t lease_ms);

/* A member that said yes after its round was won: one more hold of the composite, if an
 * acquisition not yet released still lacks one of that member. */
bool dlock__holding_add_member(composite *cp, uint64_t owner, size_t i);

void dlock__holding_set_token(composite *cp, uint64_t owner, uint64_t token);

/* Whether owner holds member i through the composite (a hold not yet released). */
bool dlock__holding_holds(composite *cp, uint64_t owner, size_t i);

/* A release: one hold of every member owner holds through the composite comes off.
 * Returns whether the composite was lost while held. */
bool dlock__holding_release(composite *cp, uint64_t owner);

/* Member i lost owner's holds: true when that makes the composite lost (once per holding). */
bool dlock__holding_member_lost(composite *cp, uint64_t owner, size_t i);

void dlock__holdings_free(composite *cp);

#endif
