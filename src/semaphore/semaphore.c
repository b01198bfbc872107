/* SPDX-License-Identifier: MIT */
/* semaphore.c — the semaphore (Redisson RSemaphore).
 *
 * Redis layout (wire-compatible with Redisson, see REDIS_LAYOUT.md):
 *   N                  string: the available permits (absent = 0; may go below 0)
 *   redisson_sc:{N}    channel; every change publishes the new available count
 * Scripts beside this file: sem_try_set.lua, sem_add.lua, sem_acquire.lua,
 * sem_release.lua, sem_drain.lua.
 *
 * A waiting acquire uses the core's waiting engine with the count in each message as the
 * supply and its own permits as the need: a release wakes, in arrival order, the waiters
 * of this client whose needs fit in what it made available, and a later smaller request
 * never overtakes an earlier larger one. There is no TTL to hint with, so a waiter also
 * looks again every DLOCK__RECHECK_MS in case a message was lost.
 *
 * acquire, release, add and drain change a bare count that carries no request id, so a
 * command whose reply was lost with its connection is not sent again: the caller gets
 * DLOCK_ECONN and the permits may or may not have moved (semaphore.h says so).
 *
 * Under ?sync_replicas, permits taken that fewer replicas acknowledged than asked are
 * released at once (sem_release, in the same call) and the attempt counts as busy
 * (object.c); every other write stands, with a warning in the log. */
#include "dlock/semaphore.h"
#include "dlock_object.h"
#include "semaphore_shapes.h"

struct dlock_semaphore {
    dlock__object obj;
};

static void deliver(dlock__call *call, int status) {
    ((dlock_semaphore_cb)call->cb)((dlock_semaphore *)call->obj, status, call->arg);
}

static const dlock__object_class semaphore_class = {
    .what = "semaphore",
    .size = sizeof(dlock_semaphore),
    .channel = {DLOCK__KEY_PREFIXED, "redisson_sc"},
    .deliver = deliver,
};

int dlock_semaphore_new(dlock_client *c, const char *name, dlock_semaphore **out) {
    return dlock__object_new(c, name, &semaphore_class, (void **)out);
}

void dlock_semaphore_free(dlock_semaphore *s) {
    dlock__object_free((dlock__object *)s);
}

/* ---- the calls -------------------------------------------------------------------------- */

/* try_set, add, release (KEYS N, channel; ARGV permits) and drain (KEYS N): one number
 * back, try_set's 1 or 0, the count after add or release, what drain took. */
static int send_script_of(dlock__call *call, enum dlock__script_id script) {
    dlock__args a = {0};
    dlock__args_str(&a, call->obj->name);
    if (script == DLOCK__SCRIPT_SEMAPHORE_SEM_DRAIN)
        return dlock__call_script(call, script, 0, 1, &a);
    dlock__args_str(&a, call->obj->channel);
    dlock__args_int(&a, call->number);
    /* only setting-if-absent may run twice without harm; a release waits for no WAIT of its
     * own (DLOCK__CMD_NO_WAIT) */
    unsigned flags = script == DLOCK__SCRIPT_SEMAPHORE_SEM_TRY_SET ? DLOCK__CMD_RETRY_SAFE : 0;
    if (script == DLOCK__SCRIPT_SEMAPHORE_SEM_RELEASE)
        flags |= DLOCK__CMD_NO_WAIT;
    return dlock__call_script(call, script, flags, 2, &a);
}

static int send_script(dlock__call *call) {
    return send_script_of(call, (enum dlock__script_id)call->kind);
}

static const dlock__call_class try_set_call = {.send = send_script,
                                               .shape = &dlock__shape_semaphore_try_set};
static const dlock__call_class count_call = {.send = send_script,
                                             .shape = &dlock__shape_semaphore_count};
static const dlock__call_class drain_call = {.send = send_script,
                                             .shape = &dlock__shape_semaphore_drain};

/* acquire: KEYS N; ARGV permits; {1, left} taken, {0, available} not enough. */
static int send_acquire(dlock__call *call) {
    dlock__args a = {0};
    dlock__args_str(&a, call->obj->name);
    dlock__args_int(&a, call->number);
    return dlock__call_script(call, DLOCK__SCRIPT_SEMAPHORE_SEM_ACQUIRE, 0, 1, &a);
}

static int judge_acquire(dlock__call *call, const dlock__reply *reply) {
    (void)reply;
    return call->got.form == 0 ? DLOCK_OK : DLOCK__BUSY; /* {1, left} | {0, available} */
}

static int64_t need_permits(const dlock__waiter *w) {
    return dlock__call_of(w)->number;
}

static void acquire_timed_out(dlock__call *call) {
    dlock__op_fail(&call->op, DLOCK_ETIMEDOUT, "%lld permits of %s not available in time",
                   (long long)call->number, call->obj->name);
}

/* Permits taken that too few replicas acknowledged: released (sem_release publishes, so a
 * waiter the take kept out is told). */
static int give_back_permits(dlock__call *call) {
    return send_script_of(call, DLOCK__SCRIPT_SEMAPHORE_SEM_RELEASE);
}

/* A message carries the count available: it wakes the oldest waiters whose needs fit. */
static const dlock__call_class acquire_call = {
    .send = send_acquire,
    .shape = &dlock__shape_semaphore_acquire,
    .judge = judge_acquire,
    .waits = true,
    .need = need_permits,
    .timed_out = acquire_timed_out,
    .give_back = give_back_permits,
};

/* ---- the public calls ------------------------------------------------------------------- */

static int check(const dlock_semaphore *s, int64_t permits, int64_t wait_ms) {
    if (!s)
        return dlock__fail(DLOCK_EINVAL, "semaphore is NULL");
    if (permits < 0)
        return dlock__fail(DLOCK_EINVAL, "permits must not be negative");
    return dlock__check_wait_ms(wait_ms);
}

/* Acquiring or releasing 0 permits changes nothing, but is a call all the same. */
static dlock__call_args acquire_args(int64_t permits, int64_t wait_ms) {
    return (dlock__call_args){.cls = permits ? &acquire_call : &dlock__call_nothing,
                              .number = permits,
                              .wait_ms = wait_ms};
}

static dlock__call_args release_args(int64_t permits) {
    return (dlock__call_args){.cls = permits ? &count_call : &dlock__call_nothing,
                              .kind = DLOCK__SCRIPT_SEMAPHORE_SEM_RELEASE,
                              .number = permits};
}

int dlock_semaphore_try_set_permits(dlock_semaphore *s, int64_t permits, bool *was_set) {
    dlock__call_args args = {
        .cls = &try_set_call, .kind = DLOCK__SCRIPT_SEMAPHORE_SEM_TRY_SET, .number = permits};
    int rc = check(s, permits, 0);
    return rc ? rc : dlock__call_run_bool(&s->obj, args, was_set);
}

int dlock_semaphore_add_permits(dlock_semaphore *s, int64_t delta) {
    dlock__call_args args = {
        .cls = &count_call, .kind = DLOCK__SCRIPT_SEMAPHORE_SEM_ADD, .number = delta};
    int rc = check(s, 0, 0);
    return rc ? rc : dlock__call_run(&s->obj, args, NULL);
}

int dlock_semaphore_try_acquire(dlock_semaphore *s, int64_t permits, int64_t wait_ms) {
    int rc = check(s, permits, wait_ms);
    return rc ? rc : dlock__call_run(&s->obj, acquire_args(permits, wait_ms), NULL);
}

int dlock_semaphore_acquire(dlock_semaphore *s, int64_t permits) {
    return dlock_semaphore_try_acquire(s, permits, DLOCK_FOREVER);
}

int dlock_semaphore_release(dlock_semaphore *s, int64_t permits) {
    int rc = check(s, permits, 0);
    return rc ? rc : dlock__call_run(&s->obj, release_args(permits), NULL);
}

int dlock_semaphore_available(dlock_semaphore *s, int64_t *out) {
    int rc = check(s, 0, 0);
    if (rc == DLOCK_OK && !out)
        rc = dlock__fail(DLOCK_EINVAL, "out is NULL");
    return rc ? rc
              : dlock__call_run(&s->obj, (dlock__call_args){.cls = &dlock__call_get_count}, out);
}

int dlock_semaphore_drain(dlock_semaphore *s, int64_t *drained) {
    dlock__call_args args = {.cls = &drain_call, .kind = DLOCK__SCRIPT_SEMAPHORE_SEM_DRAIN};
    int rc = check(s, 0, 0);
    return rc ? rc : dlock__call_run(&s->obj, args, drained);
}

int dlock_semaphore_acquire_async(dlock_semaphore *s, int64_t permits, int64_t wait_ms,
                                  dlock_semaphore_cb cb, void *arg) {
    int rc = check(s, permits, wait_ms);
    return rc ? rc
              : dlock__call_async(&s->obj, acquire_args(permits, wait_ms), (dlock__user_cb)cb, arg);
}

int dlock_semaphore_release_async(dlock_semaphore *s, int64_t permits, dlock_semaphore_cb cb,
                                  void *arg) {
    int rc = check(s, permits, 0);
    return rc ? rc : dlock__call_async(&s->obj, release_args(permits), (dlock__user_cb)cb, arg);
}
