/* SPDX-License-Identifier: MIT */
/* spinlock.c — the spin lock (Redisson RSpinLock): a reentrant lock without pub/sub. A busy
 * owner does not subscribe to anything; it tries again after an exponential backoff. Like
 * the fair lock, it is a kind table on the lock engine (lock/lock_engine.h): everything but
 * its scripts, their keys and its backoff is the engine's.
 *
 * Redis layout (wire-compatible with Redisson, see REDIS_LAYOUT.md):
 *   N     hash: "<client-id>:<owner>" -> hold count; PEXPIRE = lease
 * That is all: no channel, no message, no queue, no token. In Redis a spin lock is the
 * reentrant lock's hash, so a name may be taken by a spin lock in one process and by a
 * reentrant lock in another and they exclude each other (the reentrant lock's waiters
 * then learn of a spin release only by their hint, the holder's lease).
 *
 * Scripts: the reentrant lock's acquire.lua (it publishes nothing; its resend rule and its
 * reply are what the engine reads), and beside this file release.lua and force_release.lua,
 * the reentrant lock's without their PUBLISH: nobody listens for it, and a PUBLISH in a
 * Redis Cluster is sent to every node, the cost this lock exists to avoid. The watchdog
 * renews with the core's renew_hash.lua.
 *
 * The backoff (Redisson's default ExponentialBackOff): after the k-th busy attempt the owner
 * waits 2^(k-1) ms, doubling from 1 ms to at most 128 ms, less a random part of up to a
 * quarter of it, so that owners that met one release do not come back in step. It never
 * waits past the holder's remaining lease: a lease about to run out is looked at when it
 * does. The engine counts the attempts and sleeps; this file only says how long. */
#include "dlock/spinlock.h"
#include "dlock_int.h"
#include "lock/lock_engine.h"

#define BACKOFF_FIRST_MS 1
#define BACKOFF_MAX_MS 128

/* acquire.lua: KEYS N; ARGV lease, field, believed holds */
static int acquire_args(const dlock__lock_view *v, dlock__args *a) {
    dlock__args_str(a, v->name);
    dlock__args_int(a, v->lease_ms);
    dlock__args_str(a, v->field);
    dlock__args_int(a, v->believed);
    return 1;
}

/* release.lua: KEYS N; ARGV lease, field, believed holds (the same arguments) */
static int release_args(const dlock__lock_view *v, dlock__args *a) {
    return acquire_args(v, a);
}

/* force_release.lua: KEYS N */
static int force_args(const dlock__lock_view *v, dlock__args *a) {
    dlock__args_str(a, v->name);
    return 1;
}

/* The step of the k-th wait: 1, 2, 4, ... ms, then BACKOFF_MAX_MS. */
static int64_t backoff_step_ms(int attempts) {
    int64_t step = BACKOFF_FIRST_MS;
    for (int k = 1; k < attempts && step < BACKOFF_MAX_MS; k++)
        step *= 2;
    return step < BACKOFF_MAX_MS ? step : BACKOFF_MAX_MS;
}

/* ms until the next attempt after v->attempts busy ones: the step less up to a quarter
 * of it at random, and no later than the holder's lease runs out (pttl, -1: never). */
static int64_t backoff_ms(const dlock__lock_view *v, int64_t pttl) {
    int64_t step = backoff_step_ms(v->attempts);
    int64_t delay = step - (int64_t)(dlock__random_u64() % (uint64_t)(step / 4 + 1));
    return pttl >= 0 && pttl < delay ? pttl : delay;
}

static const dlock__lock_kind spin_kind = {
    .what = "spin lock",
    .acquire_script = DLOCK__SCRIPT_LOCK_ACQUIRE,
    .release_script = DLOCK__SCRIPT_SPINLOCK_RELEASE,
    .force_script = DLOCK__SCRIPT_SPINLOCK_FORCE_RELEASE,
    .acquire_args = acquire_args,
    .release_args = release_args,
    .force_args = force_args,
    .renew_script = DLOCK__SCRIPT_CORE_RENEW_HASH,
    .no_channel = true,
    .busy_hint = backoff_ms,
};

int dlock_spinlock_new(dlock_client *c, const char *name, dlock_lock **out) {
    return dlock__lock_create(c, name, &spin_kind, false, out);
}
