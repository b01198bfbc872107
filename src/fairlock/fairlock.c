/* SPDX-License-Identifier: MIT */
/* fairlock.c — the fair lock (Redisson RFairLock): a dlock_lock whose waiters are served in
 * arrival order. Everything but the scripts and their keys is the lock engine's
 * (lock/lock_engine.h).
 *
 * Redis layout (wire-compatible with Redisson, see REDIS_LAYOUT.md):
 *   N                                   hash: owner field -> hold count; PEXPIRE = lease
 *   redisson_lock_queue:{N}             list: waiting owner fields, first in line first
 *   redisson_lock_timeout:{N}           sorted set: owner field -> deadline in Redisson's form
 *                                       (a chain, each waiter 5 min after the one before)
 *   redisson_lock__channel:{N}:<field>  each waiter's own channel; "0" wakes it
 *   redisson_lock_token:{N}             fenced fair lock: the token counter
 *   {N}:fair_waiters                    dlock only: sorted set, dlock waiter field ->
 *                                       deadline (server clock)
 * The one script beside this file, fair.lua, does every operation (see its comment for why
 * one script). Differences from Redisson, for dlock's own waiters: their liveness is a
 * deadline on the server's clock in {N}:fair_waiters, refreshed by every attempt of a live
 * waiter (at least every fair_wait_ms / 3, the hint fair.lua gives); a dead one is dropped
 * wherever it stands; whoever becomes first while the lock is free is woken: a dead waiter
 * costs at most fair_wait_ms, a live one never loses its place, nobody polls, and only the
 * first waiter is woken by a release (no herd). Redisson's waiters in the same line are
 * judged by Redisson's rule (their score), and dlock keeps the scores Redisson's scripts
 * read in the form they expect, so a Redisson acquisition never puts a dlock waiter out. */
#include <string.h>

#include "dlock/lock.h"
#include "dlock_int.h"
#include "dlock_object.h"
#include "lock/lock_engine.h"

typedef struct fair_keys {
    char *queue;
    char *timeout;
    char *waiters; /* {N}:fair_waiters */
} fair_keys;

static void keys_free(void *p) {
    fair_keys *k = p;
    dlock__free(k->queue);
    dlock__free(k->timeout);
    dlock__free(k->waiters);
    dlock__free(k);
}

static void *keys_new(const char *name) {
    fair_keys *k = dlock__calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    k->queue = dlock__name_prefixed("redisson_lock_queue", name);
    k->timeout = dlock__name_prefixed("redisson_lock_timeout", name);
    k->waiters = dlock__name_suffixed(name, "fair_waiters");
    if (!k->queue || !k->timeout || !k->waiters) {
        keys_free(k);
        return NULL;
    }
    return k;
}

/* fair.lua's KEYS and operation, then the operation's arguments. */
static int fair_args(const dlock__lock_view *v, dlock__args *a, const char *op) {
    const fair_keys *k = v->data;
    dlock__args_str(a, v->name);
    dlock__args_str(a, k->queue);
    dlock__args_str(a, k->timeout);
    dlock__args_str(a, v->channel);
    dlock__args_str(a, k->waiters);
    if (v->token_key)
        dlock__args_str(a, v->token_key);
    int nkeys = a->n;
    dlock__args_str(a, op);
    dlock__args_int(a, v->lease_ms);
    dlock__args_str(a, v->field);
    dlock__args_int(a, v->believed);
    return nkeys;
}

static int acquire_args(const dlock__lock_view *v, dlock__args *a) {
    int nkeys = fair_args(v, a, "acquire");
    dlock__args_int(a, dlock__client_fair_wait_ms(v->client));
    return nkeys;
}

static int release_args(const dlock__lock_view *v, dlock__args *a) {
    return fair_args(v, a, "release");
}

static int force_args(const dlock__lock_view *v, dlock__args *a) {
    return fair_args(v, a, "force");
}

/* Each waiter has its own channel, so a release wakes the first in line and no one else. */
static char *waiter_channel(const dlock__lock_view *v) {
    size_t c = strlen(v->channel), f = strlen(v->field);
    char *s = dlock__malloc(c + 1 + f + 1);
    if (s) {
        memcpy(s, v->channel, c);
        s[c] = ':';
        memcpy(s + c + 1, v->field, f + 1);
    }
    return s;
}

/* Out of line at once, so the waiter behind is not kept waiting for our deadline. If this
 * fails (Redis unreachable), the deadline drops us within fair_wait_ms anyway. */
static void gave_up(const dlock__lock_view *v) {
    dlock__args a = {0};
    int nkeys = fair_args(v, &a, "leave");
    dlock__script(v->client, DLOCK__SCRIPT_FAIRLOCK_FAIR, DLOCK__CMD_RETRY_SAFE,
                  dlock__ignore_reply, (void *)"fair lock: leaving the queue", nkeys, a.n, a.v,
                  a.len);
}

static const dlock__lock_kind fair_kind = {
    .what = "fair lock",
    .acquire_script = DLOCK__SCRIPT_FAIRLOCK_FAIR,
    .release_script = DLOCK__SCRIPT_FAIRLOCK_FAIR,
    .force_script = DLOCK__SCRIPT_FAIRLOCK_FAIR,
    .acquire_args = acquire_args,
    .release_args = release_args,
    .force_args = force_args,
    .renew_script = DLOCK__SCRIPT_CORE_RENEW_HASH,
    .wake_count = dlock__wake_one, /* only the first in line is woken, on its own channel */
    .waiter_channel = waiter_channel,
    .gave_up = gave_up,
    .data_new = keys_new,
    .data_free = keys_free,
};

int dlock_fairlock_new(dlock_client *c, const char *name, dlock_lock **out) {
    return dlock__lock_create(c, name, &fair_kind, false, out);
}
