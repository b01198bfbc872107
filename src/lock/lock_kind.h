/* lock_kind.h — what a kind of lock changes of the reentrant lock.
 *
 * lock.c is the one implementation of every dlock_lock call: owners and hold counts,
 * waiting, leases, the watchdog, the lost signal, the async face. A kind of lock (the
 * reentrant and fenced lock in lock.c, the fair lock in src/fairlock, the halves of the
 * read-write lock in src/rwlock) only says which scripts it runs with which keys, where a
 * waiting owner listens, and what happens when an owner gives up. The scripts of every
 * kind answer the same way, so lock.c reads their replies alike:
 *   acquire  {1, holds, token}  acquired (token 0 unless fenced) | {0, pttl} busy
 *   release  -1 the owner holds nothing | the holds left (0: freed, waiters woken)
 *   force    1 it was locked (now freed, waiters woken) | 0 it was not */
#ifndef DLOCK_LOCK_KIND_H
#define DLOCK_LOCK_KIND_H

#include "dlock/lock.h"
#include "dlock_int.h"

/* What a kind's hooks see of a lock and of the owner a call is for. */
typedef struct dlock__lock_view {
    dlock_client *client;
    const char *name;      /* N */
    const char *channel;   /* redisson_lock__channel:{N}: the lock's own channel */
    const char *token_key; /* fenced: redisson_lock_token:{N}; else NULL */
    const char *field;     /* the owner's field, "<client-id>:<owner>" */
    int64_t believed;      /* the owner's holds as the client knows them */
    int64_t lease_ms;      /* the lease to set, ms (the watchdog's when held with it) */
    bool once;             /* acquire: a single attempt (wait 0): it will not wait in line */
    void *data;            /* the kind's own per-handle data (its key names) */
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
     * lock's channel, shared by every waiter). */
    char *(*waiter_channel)(const dlock__lock_view *v);
    /* Optional: the wait hint from a busy reply's pttl (NULL hook: the pttl). */
    int64_t (*busy_hint)(const dlock__lock_view *v, int64_t pttl);
    /* Optional: the owner stopped waiting without the lock (timed out, canceled, failed):
     * e.g. leave a queue. Fire and forget. */
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

/* A composite lock (MultiLock, RedLock: src/multilock) is a dlock_lock whose calls go to
 * its class instead of to this machinery: its members are ordinary locks, possibly of
 * different clients. The blocking calls pass the calling thread's owner. */
typedef struct dlock__composite_class {
    int (*try_acquire)(void *self, uint64_t owner, int64_t wait_ms, int64_t lease_ms);
    int (*release)(void *self, uint64_t owner);
    int (*force_release)(void *self, bool *was_locked);
    int (*is_locked)(void *self, bool *out);
    int (*is_held)(void *self, uint64_t owner, bool *out);
    int (*hold_count)(void *self, uint64_t owner, int64_t *out);
    int (*ttl)(void *self, uint64_t owner, int64_t *out_ms);
    int (*token_of)(void *self, uint64_t owner, uint64_t *out);
    void (*free)(void *self);
} dlock__composite_class;

/* A composite handle named name over self; dlock_lock_free frees self through the class. */
int dlock__lock_create_composite(const char *name, const dlock__composite_class *cls, void *self,
                                 dlock_lock **out);

/* A composite tells its handle's lost callback (any thread). */
void dlock__lock_fire_lost(dlock_lock *l, uint64_t owner, int reason);

/* Blocking, for composites: owner's hold of l keeps lease_ms from now and is no longer
 * renewed by the watchdog. DLOCK_ENOTOWNER if owner holds nothing. */
int dlock__lock_set_lease(dlock_lock *l, uint64_t owner, int64_t lease_ms);

/* Whether l is an ordinary fenced lock. */
bool dlock__lock_fenced(const dlock_lock *l);

/* Async, for RedLock over fenced members: while owner holds l, l's token counter is raised
 * to at least floor (raise_token.lua). cb gets DLOCK_OK, DLOCK_ENOTOWNER when owner no
 * longer holds l, or the command's error. */
int dlock__lock_raise_token_async(dlock_lock *l, uint64_t owner, uint64_t floor, dlock_lock_cb cb,
                                  void *arg);

/* Marks l as a member of a composite (claim) or frees it again; false if claiming a lock
 * that already belongs to a composite (its lost callback is the composite's). */
bool dlock__lock_claim(dlock_lock *l, bool claim);

/* The client of an ordinary lock (NULL for a composite). */
dlock_client *dlock__lock_client(const dlock_lock *l);

/* A handle of the given kind: what dlock_lock_new is for the reentrant kind. */
int dlock__lock_create(dlock_client *c, const char *name, const dlock__lock_kind *kind, bool fenced,
                       dlock_lock **out);

#endif
