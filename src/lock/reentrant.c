/* SPDX-License-Identifier: MIT */
/* reentrant.c — the reentrant lock (Redisson RLock) and the fenced lock (RFencedLock): a
 * kind of lock on the lock engine (lock_engine.h), like the fair lock in src/fairlock.
 *
 * Redis layout (wire-compatible with Redisson, see REDIS_LAYOUT.md):
 *   N                              hash: "<client-id>:<owner>" -> hold count; PEXPIRE = lease
 *   redisson_lock__channel:{N}     channel; "0" is published when the lock is freed
 *   redisson_lock_token:{N}        fenced lock: string counter, INCR per acquisition, no TTL
 *   {N}:handoff                    dlock only: string, the owner field of the waiter the
 *                                  next turn is promised to; PEXPIRE = HANDOFF_MARKER_MS
 * Scripts beside this file: acquire.lua, release.lua, force_release.lua; the watchdog
 * renews with the core's renew_hash.lua. (set_lease.lua and raise_token.lua serve the
 * composites, member.h.)
 *
 * The hand-off (acquire.lua tells the rule; the engine says when an attempt claims: a
 * client's oldest waiter on the lock, from its second attempt on, never a try without
 * waiting nor a last attempt) makes newcomers queue behind a claimant. The marker lives
 * HANDOFF_MARKER_MS from its owner's latest busy attempt: far longer than a woken waiter
 * takes to come (one message and one round trip), short enough that a waiter that died
 * holds nobody back for long; one that leaves takes its claim back (its last attempt, or
 * handoff_drop.lua). A Cluster client does not use the marker (acquire.lua says why). */

#include "dlock_object.h"
#include "lock_engine.h"

#define HANDOFF_MARKER_MS 100

/* A Cluster client leaves the marker alone (acquire.lua says why). */
static bool in_cluster(const dlock__lock_view *v) {
    return dlock__client_is_cluster(v->client);
}

/* acquire.lua: KEYS N, marker [, token key]; ARGV lease, field, believed holds, claims,
 * the marker's lifetime */
static int acquire_args(const dlock__lock_view *v, dlock__args *a) {
    dlock__args_str(a, v->name);
    dlock__args_str(a, v->data); /* the marker */
    if (v->token_key)
        dlock__args_str(a, v->token_key);
    int nkeys = a->n;
    dlock__args_int(a, v->lease_ms);
    dlock__args_str(a, v->field);
    dlock__args_int(a, v->believed);
    if (in_cluster(v))
        dlock__args_str(a, "-");
    else /* 1: claim the next turn if busy; 2: the last attempt, take a claim back if busy */
        dlock__args_int(a, v->claims ? 1 : v->last ? 2 : 0);
    dlock__args_int(a, HANDOFF_MARKER_MS);
    return nkeys;
}

/* release.lua: KEYS N, channel; ARGV lease, field, believed holds */
static int release_args(const dlock__lock_view *v, dlock__args *a) {
    dlock__args_str(a, v->name);
    dlock__args_str(a, v->channel);
    dlock__args_int(a, v->lease_ms);
    dlock__args_str(a, v->field);
    dlock__args_int(a, v->believed);
    return 2;
}

/* force_release.lua: KEYS N, channel */
static int force_args(const dlock__lock_view *v, dlock__args *a) {
    dlock__args_str(a, v->name);
    dlock__args_str(a, v->channel);
    return 2;
}

/* The kind's data: the marker's name, {N}:handoff (N:handoff when N holds a hash tag). */
static void *marker_new(const char *name) {
    return dlock__name_suffixed(name, "handoff");
}

static void marker_free(void *marker) {
    dlock__free(marker);
}

/* The owner stopped waiting before its last attempt (canceled, failed) with a claim on the
 * next turn: it takes the claim back (handoff_drop.lua), before anything it sends next. (A
 * wait that reached its deadline took it back in its last attempt.) */
static void gave_up(const dlock__lock_view *v) {
    if (in_cluster(v) || !v->claim_open)
        return;
    dlock__args a = {0};
    dlock__args_str(&a, v->data); /* the marker */
    dlock__args_str(&a, v->field);
    dlock__script(v->client, DLOCK__SCRIPT_LOCK_HANDOFF_DROP, DLOCK__CMD_RETRY_SAFE,
                  dlock__ignore_reply, (void *)"lock: taking back a hand-off claim", 1, a.n, a.v,
                  a.len);
}

static const dlock__lock_kind reentrant_kind = {
    .what = "lock",
    .acquire_script = DLOCK__SCRIPT_LOCK_ACQUIRE,
    .release_script = DLOCK__SCRIPT_LOCK_RELEASE,
    .force_script = DLOCK__SCRIPT_LOCK_FORCE_RELEASE,
    .acquire_args = acquire_args,
    .release_args = release_args,
    .force_args = force_args,
    .renew_script = DLOCK__SCRIPT_CORE_RENEW_HASH,
    .wake_count = dlock__wake_one, /* a freed lock lets one waiter of each client in */
    .gave_up = gave_up,
    .data_new = marker_new,
    .data_free = marker_free,
};

int dlock_lock_new(dlock_client *c, const char *name, dlock_lock **out) {
    return dlock__lock_create(c, name, &reentrant_kind, false, out);
}

int dlock_fencedlock_new(dlock_client *c, const char *name, dlock_lock **out) {
    return dlock__lock_create(c, name, &reentrant_kind, true, out);
}
