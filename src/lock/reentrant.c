/* SPDX-License-Identifier: MIT */
/* reentrant.c — the reentrant lock (Redisson RLock) and the fenced lock (RFencedLock): a
 * kind of lock on the lock engine (lock_engine.h), like the fair lock in src/fairlock.
 *
 * Redis layout (wire-compatible with Redisson, see REDIS_LAYOUT.md):
 *   N                              hash: "<client-id>:<owner>" -> hold count; PEXPIRE = lease
 *   redisson_lock__channel:{N}     channel; "0" is published when the lock is freed
 *   redisson_lock_token:{N}        fenced lock: string counter, INCR per acquisition, no TTL
 * Scripts beside this file: acquire.lua, release.lua, force_release.lua; the watchdog
 * renews with the core's renew_hash.lua. (set_lease.lua and raise_token.lua serve the
 * composites, member.h.) */
#include "dlock_object.h"
#include "lock_engine.h"

/* acquire.lua: KEYS N [token key]; ARGV lease, field, believed holds */
static int acquire_args(const dlock__lock_view *v, dlock__args *a) {
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
};

int dlock_lock_new(dlock_client *c, const char *name, dlock_lock **out) {
    return dlock__lock_create(c, name, &reentrant_kind, false, out);
}

int dlock_fencedlock_new(dlock_client *c, const char *name, dlock_lock **out) {
    return dlock__lock_create(c, name, &reentrant_kind, true, out);
}
