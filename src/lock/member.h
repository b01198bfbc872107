/* SPDX-License-Identifier: MIT */
/* member.h — everything a composite (MultiLock, RedLock: src/multilock) may ask of a member
 * lock, in one place. A composite uses these and the members' public calls, nothing else
 * of the lock engine; the engine implements them for every ordinary lock kind.
 *
 * The async calls follow the library's callback contract: cb exactly once, on the
 * member's client's loop thread, never inside the call, unless the call returned an error.
 * They may be called from any thread. */
#ifndef DLOCK_LOCK_MEMBER_H
#define DLOCK_LOCK_MEMBER_H

#include <stdbool.h>
#include <stdint.h>

#include "dlock/lock.h"
#include "dlock_int.h"

/* The client of an ordinary lock; NULL for a composite (which cannot be a member). */
dlock_client *dlock__member_client(const dlock_lock *l);

/* Whether l is an ordinary fenced lock. */
bool dlock__member_fenced(const dlock_lock *l);

/* A member's lost lease, told to its composite instead of to the member's own lost
 * callback (on the member's client's loop thread). */
typedef void (*dlock__member_lost_fn)(dlock_lock *member, uint64_t owner, int reason,
                                      void *composite);

/* Makes l a member of a composite whose lost_fn hears l's lost leases; false if l already
 * belongs to a composite, is not an ordinary lock, or was freed. Any thread: the receiver
 * is set on l's loop thread, so off it this waits for that loop (no allocation). */
bool dlock__member_claim(dlock_lock *l, dlock__member_lost_fn lost_fn, void *composite);

/* l belongs to no composite any more (its own lost callback is back in force). When this
 * returns, the composite's lost_fn is not running for l and will not run again. Any
 * thread; off l's loop thread it waits for that loop (no allocation). */
void dlock__member_release_claim(dlock_lock *l);

/* A member's answer: status, and for queries the value (bools as 0/1, a TTL in ms, a hold
 * count, was_locked for force_release). */
typedef void (*dlock__member_answer_cb)(dlock_lock *member, int status, int64_t answer, void *arg);

enum dlock__member_query {
    DLOCK__MEMBER_IS_LOCKED,  /* anyone holds it */
    DLOCK__MEMBER_IS_HELD,    /* owner holds it */
    DLOCK__MEMBER_HOLD_COUNT, /* owner's holds, as Redis counts them (0: none) */
    DLOCK__MEMBER_TTL,        /* the lock's remaining lease, ms (-2 gone, -1 no expiry) */
};

int dlock__member_query_async(dlock_lock *l, uint64_t owner, enum dlock__member_query what,
                              dlock__member_answer_cb cb, void *arg);

/* Frees l whoever holds it; the answer is 1 if it was locked. */
int dlock__member_force_release_async(dlock_lock *l, dlock__member_answer_cb cb, void *arg);

/* Owner's hold of l keeps lease_ms from now and is no longer renewed by the watchdog (a
 * RedLock's validity). DLOCK_ENOTOWNER if owner holds nothing. */
int dlock__member_set_lease_async(dlock_lock *l, uint64_t owner, int64_t lease_ms, dlock_lock_cb cb,
                                  void *arg);

/* RedLock over fenced members: while owner holds l, l's token counter is raised to at
 * least floor (raise_token.lua). DLOCK_OK, DLOCK_ENOTOWNER when owner no longer holds l,
 * or the command's error. */
int dlock__member_raise_token_async(dlock_lock *l, uint64_t owner, uint64_t floor, dlock_lock_cb cb,
                                    void *arg);

#endif
