/* SPDX-License-Identifier: MIT */
/* latch.c — the count-down latch (Redisson RCountDownLatch).
 *
 * Redis layout (wire-compatible with Redisson, see REDIS_LAYOUT.md):
 *   N                                            string: the remaining count; absent when
 *                                                unset or finished (deleted at 0)
 *   redisson_countdownlatch__channel__{N}        channel: "1" when a count is set, "0"
 *                                                when it reaches zero
 * Scripts beside this file: latch_try_set.lua, latch_count_down.lua; count and await read
 * N with GET.
 *
 * await is the core's waiting engine with GET as the attempt: every message wakes every
 * waiter, and with no TTL to hint with a waiter also looks again every DLOCK__RECHECK_MS,
 * so a lost message delays it but never blocks it forever (Redisson's await waits for the
 * message alone). count_down is a bare DECR: not resent after a lost reply (DLOCK_ECONN;
 * it may or may not have counted). */
#include "dlock/latch.h"
#include "dlock_object.h"
#include "semaphore_shapes.h"

struct dlock_latch {
    dlock__object obj;
};

static void deliver(dlock__call *call, int status) {
    ((dlock_latch_cb)call->cb)((dlock_latch *)call->obj, status, call->arg);
}

static const dlock__object_class latch_class = {
    .what = "latch",
    .size = sizeof(dlock_latch),
    /* Redisson puts the braces around the name here whatever it holds */
    .channel = {DLOCK__KEY_BRACED, "redisson_countdownlatch__channel__"},
    .deliver = deliver,
};

int dlock_latch_new(dlock_client *c, const char *name, dlock_latch **out) {
    return dlock__object_new(c, name, &latch_class, (void **)out);
}

void dlock_latch_free(dlock_latch *l) {
    dlock__object_free((dlock__object *)l);
}

/* ---- the calls -------------------------------------------------------------------------- */

/* try_set (KEYS N, channel; ARGV count) and count_down (KEYS N, channel): one number back,
 * try_set's 1 or 0, the count after a count down. */
static int send_script(dlock__call *call) {
    dlock__args a = {0};
    dlock__args_str(&a, call->obj->name);
    dlock__args_str(&a, call->obj->channel);
    if (call->kind == DLOCK__SCRIPT_SEMAPHORE_LATCH_COUNT_DOWN)
        return dlock__call_script(call, call->kind, 0, 2, &a);
    dlock__args_int(&a, call->number);
    /* setting-if-unset twice sets it once (was_set may then say no) */
    return dlock__call_script(call, call->kind, DLOCK__CMD_RETRY_SAFE, 2, &a);
}

static const dlock__call_class try_set_call = {.send = send_script,
                                               .shape = &dlock__shape_latch_try_set};
static const dlock__call_class count_down_call = {.send = send_script,
                                                  .shape = &dlock__shape_latch_count_down};

/* await: GET of the count until it is 0 (absent: unset or finished). A string that is not
 * an integer is not a finished latch: the wait ends with DLOCK_EREDIS. */
static int judge_await(dlock__call *call, const dlock__reply *reply) {
    int64_t count;
    int rc = dlock__call_read_count(call, reply, &count);
    return rc != DLOCK_OK ? rc : count <= 0 ? DLOCK_OK : DLOCK__BUSY;
}

static void await_timed_out(dlock__call *call) {
    dlock__op_fail(&call->op, DLOCK_ETIMEDOUT, "latch %s did not reach zero in time",
                   call->obj->name);
}

static const dlock__call_class await_call = {
    .send = dlock__call_get,
    .judge = judge_await,
    .waits = true, /* wake_count NULL: a message wakes every waiter */
    .timed_out = await_timed_out,
};

/* ---- the public calls ------------------------------------------------------------------- */

static int check(const dlock_latch *l, int64_t wait_ms) {
    if (!l)
        return dlock__fail(DLOCK_EINVAL, "latch is NULL");
    return dlock__check_wait_ms(wait_ms);
}

static const dlock__call_args count_down_args = {.cls = &count_down_call,
                                                 .kind = DLOCK__SCRIPT_SEMAPHORE_LATCH_COUNT_DOWN};

int dlock_latch_try_set_count(dlock_latch *l, int64_t count, bool *was_set) {
    dlock__call_args args = {
        .cls = &try_set_call, .kind = DLOCK__SCRIPT_SEMAPHORE_LATCH_TRY_SET, .number = count};
    int rc = count < 0 ? dlock__fail(DLOCK_EINVAL, "count must not be negative") : check(l, 0);
    return rc ? rc : dlock__call_run_bool(&l->obj, args, was_set);
}

int dlock_latch_count_down(dlock_latch *l) {
    int rc = check(l, 0);
    return rc ? rc : dlock__call_run(&l->obj, count_down_args, NULL);
}

int dlock_latch_count(dlock_latch *l, int64_t *out) {
    int rc = out ? check(l, 0) : dlock__fail(DLOCK_EINVAL, "out is NULL");
    return rc ? rc
              : dlock__call_run(&l->obj, (dlock__call_args){.cls = &dlock__call_get_count}, out);
}

int dlock_latch_await(dlock_latch *l, int64_t wait_ms) {
    dlock__call_args args = {.cls = &await_call, .wait_ms = wait_ms};
    int rc = check(l, wait_ms);
    return rc ? rc : dlock__call_run(&l->obj, args, NULL);
}

int dlock_latch_await_async(dlock_latch *l, int64_t wait_ms, dlock_latch_cb cb, void *arg) {
    dlock__call_args args = {.cls = &await_call, .wait_ms = wait_ms};
    int rc = check(l, wait_ms);
    return rc ? rc : dlock__call_async(&l->obj, args, (dlock__user_cb)cb, arg);
}

int dlock_latch_count_down_async(dlock_latch *l, dlock_latch_cb cb, void *arg) {
    int rc = check(l, 0);
    return rc ? rc : dlock__call_async(&l->obj, count_down_args, (dlock__user_cb)cb, arg);
}
