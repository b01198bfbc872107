/* SPDX-License-Identifier: MIT */
/* lock_engine.h — the lock engine: what every kind of lock stands on.
 *
 * The engine (engine*.c beside this file) is the one implementation of the ordinary
 * dlock_lock handle: it keeps, per lock name and client, what each owner holds, sends an
 * owner's acquires and releases to Redis one at a time, waits for a busy lock, keeps
 * watchdog leases alive, reports lost holds, and gives every call its blocking and async
 * face. A kind of lock (the reentrant and fenced lock in reentrant.c, the fair lock in
 * src/fairlock, the read-write lock's halves in src/rwlock, the spin lock) is a table
 * that says only which scripts it runs with which keys, where a waiting owner listens
 * (if anywhere), when it tries again, and what happens when an owner gives up. A kind's
 * file includes this header and nothing else of src/lock.
 *
 * What the engine does with a kind, per call:
 *   acquire  the owner's sequence (one command of an owner in Redis at a time) -> the kind's
 *            acquire script; busy -> wait on the kind's channel (or none) until a message,
 *            the kind's busy_hint, or the deadline -> attempt again; obtained -> the hold
 *            is counted, a watchdog lease registered for DLOCK_WATCHDOG
 *   release  the owner's sequence -> the kind's release script; the last hold stops the lease
 *   force    the kind's force script, in nobody's sequence (it is nobody's call)
 *   queries  plain commands on N (EXISTS/HGET mode, HEXISTS, HGET, PTTL)
 *
 * The scripts of every kind answer the same way, so the engine reads their replies alike:
 *   acquire  {1, holds, token}  acquired (token 0 unless fenced) | {0, pttl} busy
 *   release  -1 the owner holds nothing | the holds left (0: freed, waiters woken)
 *   force    1 it was locked (now freed, waiters woken) | 0 it was not
 * Every hook runs on the client's loop thread. */
#ifndef DLOCK_LOCK_ENGINE_H
#define DLOCK_LOCK_ENGINE_H

#include "dlock/lock.h"
#include "dlock_int.h"

/* What a kind's hooks see of a lock and of the owner a call is for. */
typedef struct dlock__lock_view {
    dlock_client *client;
    const char *name;      /* N */
    const char *channel;   /* redisson_lock__channel:{N}: the lock's own channel */
    const char *token_key; /* fenced: redisson_lock_token:{N}; else NULL */
    const char *field;     /* the owner's field, "<client-id>:<owner>" and the kind's suffix */
    int64_t believed;      /* the owner's holds as the client knows them */
    int64_t lease_ms;      /* the lease to set, ms (the watchdog's when held with it) */
    bool once;             /* acquire: a single attempt (wait 0): it will not wait in line */
    int attempts;          /* acquire: attempts of this wait sent so far, 1 for the first
                              (acquire_args: this one included) */
    /* acquire: the hand-off (acquire.lua). claims: should this attempt find the lock busy,
     * the owner waits in line for it (every attempt of a wait but its last; never a wait
     * of 0). last: the wait's deadline has come: if busy the owner leaves the line, and a
     * promise to it goes too. in_line (acquire) and gave_up: claim_open, an attempt of
     * the wait may have put the owner in line and no later one took it out. */
    bool claims, last, claim_open;
    /* release: others waited in line when the holds were taken (acquire.lua's reply 2): a
     * last release names one, so it carries the hand-off's keys (reentrant.c). */
    bool line;
    void *data; /* the kind's own per-handle data (its key names) */
} dlock__lock_view;

typedef struct dlock__lock_kind {
    const char *what; /* "lock", "fair lock": in error texts */
    enum dlock__script_id acquire_script, release_script, force_script;
    /* Append the script's KEYS then ARGV to a; return how many are keys. */
    int (*acquire_args)(const dlock__lock_view *v, dlock__args *a);
    int (*release_args)(const dlock__lock_view *v, dlock__args *a);
    int (*force_args)(const dlock__lock_view *v, dlock__args *a);
    /* The watchdog's renew script for this kind's holds (see dlock__lease_ops). */
    enum dlock__script_id renew_script;
    /* How many waiters of a client one message on the waiting channel wakes (NULL: all). */
    int (*wake_count)(const char *msg, size_t len);
    /* Optional: the channel a waiting owner listens on, as a new string (NULL hook: the
     * lock's channel, shared by every waiter). Not used by a kind with no_channel. */
    char *(*waiter_channel)(const dlock__lock_view *v);
    /* Optional, with the lock's channel: where the kind's last release names the waiter
     * whose turn the lock is (the hand-off, release.lua), a string of the kind's data (NULL:
     * none, as in a Cluster); and turn_ms, the longest such a turn holds the lock for its
     * waiter (the marker's lifetime). A client none of whose waiters is named lets that
     * release wake nobody (the waiting engine's turns, dlock_int.h). */
    const char *(*turn_channel)(const dlock__lock_view *v);
    int64_t turn_ms;
    /* Optional, with turn_channel: the lease a release that hands the lock over gives its
     * heir (release.lua's grant) until the heir's client sets the heir's own (engine_grant.c);
     * 0: the kind's releases hand nothing over. */
    int64_t grant_ms;
    /* A kind without pub/sub (the spin lock): its release publishes nothing, so a waiting
     * owner subscribes to nothing and attempts again only when busy_hint says (or at its
     * deadline). */
    bool no_channel;
    /* Optional: after a busy reply, ms until the next attempt, from the holder's pttl
     * (-1: no expiry) and v->attempts (NULL hook: the pttl). With a channel a message may
     * wake the owner sooner; without one this is the wait's only clock (e.g. a backoff
     * doubling with v->attempts). */
    int64_t (*busy_hint)(const dlock__lock_view *v, int64_t pttl);
    /* Optional: the owner stopped waiting without the lock (timed out, canceled, failed):
     * e.g. leave a queue, take back a claim. Fire and forget, queued before anything the
     * owner sends next. v->once and v->attempts are the wait's. */
    void (*gave_up)(const dlock__lock_view *v);
    /* Optional: appended to "<client-id>:<owner>" to make the owner's field (the
     * read-write lock's writer is "<client-id>:<owner>:write"). At most 15 bytes. */
    const char *field_suffix;
    /* Optional: is_locked asks whether N's "mode" field says this (the read-write lock's
     * halves, as Redisson); NULL: whether N exists. */
    const char *locked_mode;
    /* Optional: the kind's per-handle data, made from the name and freed with the handle. */
    void *(*data_new)(const char *name);
    void (*data_free)(void *data);
} dlock__lock_kind;

/* A handle of the given kind named name on client c (fenced: with the token counter
 * redisson_lock_token:{N}): what a kind's public constructor returns. No I/O. DLOCK_OK and
 * *out, or DLOCK_EINVAL (c, name or out), DLOCK_ENOMEM with *out untouched. */
int dlock__lock_create(dlock_client *c, const char *name, const dlock__lock_kind *kind, bool fenced,
                       dlock_lock **out);

#endif
