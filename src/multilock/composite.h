/* composite.h — what multilock.c (the composites' handle, MultiLock, the queries) and
 * redlock.c (RedLock's rounds) share. Private to src/multilock.
 *
 * A composite remembers, per owner, which members it holds (a holding), so that a
 * member's loss can be reported as the composite's and a release gives back what was
 * taken. RedLock also keeps its acquire rounds that some member has not answered yet: a
 * release must cover those members too, and a late answer must know what became of its
 * round. Members' callbacks run on their clients' loop threads, and may still come after
 * the composite's handle was freed, so everything below is under one mutex and the
 * composite lives until its last round is settled. */
#ifndef DLOCK_COMPOSITE_H
#define DLOCK_COMPOSITE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dlock/lock.h"

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

typedef struct round round;

typedef struct composite {
    dlock_lock *handle; /* the composite's own handle, for its lost callback */
    bool redlock;
    size_t n;
    size_t quorum; /* RedLock: n/2 + 1; MultiLock: n */
    bool fenced;   /* some member is a fenced lock (for a RedLock: every member) */
    dlock_lock **members;
    pthread_mutex_t mu; /* everything below, and every round's answers */
    holding *holdings;
    round *open_rounds; /* RedLock acquire rounds with members yet to answer */
    int refs;           /* the handle's, and one per round */
    bool dead;          /* the handle was freed: late answers only give themselves back */
} composite;

/* ---- holdings (multilock.c); cp->mu held ---- */

holding *dlock__holding_find(composite *cp, uint64_t owner);

/* An acquisition succeeded: owner took a hold on members[i] where taken[i]. */
int dlock__holding_add(composite *cp, uint64_t owner, const bool *taken, int64_t lease_ms);

/* A member that said yes after its round was won: one more hold of the composite, if an
 * acquisition not yet released still lacks one of that member. */
bool dlock__holding_add_member(composite *cp, uint64_t owner, size_t i);

void dlock__holding_set_token(composite *cp, uint64_t owner, uint64_t token);

/* A release: one hold of every member owner holds through the composite; which[i] says
 * which, *lost whether the composite was lost while held. */
void dlock__holding_release(composite *cp, uint64_t owner, bool *which, bool *lost);

/* ---- the composite (multilock.c) ---- */

/* DLOCK_EDEADLK on a member's loop thread, where waiting for the members would wait for
 * itself; else DLOCK_OK. */
int dlock__composite_refuse_on_loop(const composite *cp);

/* Drops a reference with cp->mu held, and unlocks it; the last frees cp. */
void dlock__composite_unref_unlock(composite *cp);

/* ---- RedLock (redlock.c) ---- */

int dlock__redlock_try_acquire(void *self, uint64_t owner, int64_t wait_ms, int64_t lease_ms);
int dlock__redlock_release(void *self, uint64_t owner);

/* The lease an acquisition with lease_ms has (DLOCK_WATCHDOG: the watchdog's). */
int64_t dlock__redlock_lease(const composite *cp, int64_t lease_ms);

/* The clock drift RedLock allows for a lease: lease / 100 + 2 ms. */
int64_t dlock__redlock_drift_ms(int64_t lease_ms);

#endif
