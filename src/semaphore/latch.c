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
#include <string.h>

#include "dlock/latch.h"
#include "dlock/lock.h"
#include "dlock_int.h"

struct dlock_latch {
    dlock__handle handle;
    dlock_client *client;
    char *name;
    char *channel;
};

typedef struct latch_op {
    dlock__op op;
    dlock_latch *latch;
    int64_t count;
    int64_t wait_ms;
    dlock__waiter waiter;
    int64_t out;
    dlock_latch_cb cb;
    void *arg;
} latch_op;

static void latch_destroy(dlock__handle *h) {
    dlock_latch *l = DLOCK__CONTAINER_OF(h, dlock_latch, handle);
    dlock__free(l->name);
    dlock__free(l->channel);
    dlock__free(l);
}

int dlock_latch_new(dlock_client *c, const char *name, dlock_latch **out) {
    if (!c || !out)
        return dlock__fail(DLOCK_EINVAL, "%s is NULL", c ? "out" : "client");
    int rc = dlock__check_name(name);
    if (rc != DLOCK_OK)
        return rc;
    dlock_latch *l = dlock__calloc(1, sizeof(*l));
    if (!l)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    dlock__handle_init(&l->handle, c, NULL, latch_destroy);
    l->client = c;
    l->name = dlock__strdup(name);
    /* Redisson puts the braces around the name here whatever it holds */
    size_t n = strlen(name);
    l->channel = dlock__malloc(sizeof("redisson_countdownlatch__channel__{}") + n);
    if (l->channel) {
        memcpy(l->channel, "redisson_countdownlatch__channel__{", 35);
        memcpy(l->channel + 35, name, n);
        memcpy(l->channel + 35 + n, "}", 2);
    }
    if (!l->name || !l->channel) {
        latch_destroy(&l->handle);
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    }
    *out = l;
    return DLOCK_OK;
}

void dlock_latch_free(dlock_latch *l) {
    if (l)
        dlock__handle_free(&l->handle);
}

/* ---- set, count down, count ------------------------------------------------------------- */

/* A script's number: try_set's 1 or 0, the count after a count down. */
static void on_reply(dlock_client *c, int status, const dlock__reply *reply, void *arg) {
    (void)c;
    latch_op *op = arg;
    if (status != DLOCK_OK) {
        dlock__op_end_reply(&op->op, status, reply);
        return;
    }
    if (dlock__reply_int64(reply, &op->out) != DLOCK_OK)
        status = dlock__op_bad_reply(&op->op, reply, "latch", op->latch->name);
    dlock__op_end(&op->op, status);
}

/* GET of the count: absent is 0 (unset or finished), a string that is not an integer is
 * not a latch. */
static int read_count(latch_op *op, const dlock__reply *reply, int64_t *count) {
    return dlock__op_read_count(&op->op, reply, true, "latch", op->latch->name, count);
}

static void on_count_reply(dlock_client *c, int status, const dlock__reply *reply, void *arg) {
    (void)c;
    latch_op *op = arg;
    if (status != DLOCK_OK) {
        dlock__op_end_reply(&op->op, status, reply);
        return;
    }
    dlock__op_end(&op->op, read_count(op, reply, &op->out));
}

static void set_start(dlock__op *o) {
    latch_op *op = (latch_op *)o;
    if (!dlock__op_begin(o))
        return;
    dlock__args a = {0};
    dlock__args_str(&a, op->latch->name);
    dlock__args_str(&a, op->latch->channel);
    dlock__args_int(&a, op->count);
    /* setting-if-unset twice sets it once (was_set may then say no) */
    int rc = dlock__script(op->latch->client, DLOCK__SCRIPT_SEMAPHORE_LATCH_TRY_SET,
                           DLOCK__CMD_RETRY_SAFE, on_reply, op, 2, a.n, a.v, a.len);
    if (rc != DLOCK_OK)
        dlock__op_end_reply(o, rc, NULL);
}

static void count_down_start(dlock__op *o) {
    latch_op *op = (latch_op *)o;
    if (!dlock__op_begin(o))
        return;
    dlock__args a = {0};
    dlock__args_str(&a, op->latch->name);
    dlock__args_str(&a, op->latch->channel);
    int rc = dlock__script(op->latch->client, DLOCK__SCRIPT_SEMAPHORE_LATCH_COUNT_DOWN, 0,
                           on_reply, op, 2, a.n, a.v, a.len);
    if (rc != DLOCK_OK)
        dlock__op_end_reply(o, rc, NULL);
}

static int send_get(latch_op *op, dlock__reply_fn fn) {
    const char *argv[] = {"GET", op->latch->name};
    size_t lens[] = {3, strlen(op->latch->name)};
    return dlock__command(op->latch->client, DLOCK__CMD_RETRY_SAFE, fn, op, 2, argv, lens);
}

static void count_start(dlock__op *o) {
    latch_op *op = (latch_op *)o;
    if (!dlock__op_begin(o))
        return;
    int rc = send_get(op, on_count_reply);
    if (rc != DLOCK_OK)
        dlock__op_end_reply(o, rc, NULL);
}

/* ---- await ------------------------------------------------------------------------------ */

static void on_await_reply(dlock_client *c, int status, const dlock__reply *reply, void *arg) {
    (void)c;
    latch_op *op = arg;
    if (status != DLOCK_OK) {
        dlock__op_fail_reply(&op->op, status, reply);
        dlock__wait_result(&op->waiter, status, -1);
        return;
    }
    int64_t count;
    status = read_count(op, reply, &count);
    if (status != DLOCK_OK) {
        dlock__wait_result(&op->waiter, status, -1); /* garbage is not a finished latch */
        return;
    }
    dlock__wait_result(&op->waiter, count <= 0 ? DLOCK_OK : DLOCK__BUSY, DLOCK__RECHECK_MS);
}

static void await_attempt(dlock__waiter *w) {
    latch_op *op = DLOCK__CONTAINER_OF(w, latch_op, waiter);
    int rc = send_get(op, on_await_reply);
    if (rc != DLOCK_OK) {
        dlock__op_fail(&op->op, rc, "%s", dlock_strerror(rc));
        dlock__wait_result(w, rc, -1);
    }
}

static void await_done(dlock__waiter *w, int status) {
    latch_op *op = DLOCK__CONTAINER_OF(w, latch_op, waiter);
    if (status == DLOCK_ETIMEDOUT)
        dlock__op_fail(&op->op, status, "latch %s did not reach zero in time", op->latch->name);
    dlock__op_end(&op->op, status);
}

static const dlock__wait_ops await_wait_ops = {
    .attempt = await_attempt,
    .done = await_done, /* wake_count NULL: a message wakes every waiter */
};

static void await_start(dlock__op *o) {
    latch_op *op = (latch_op *)o;
    if (!dlock__op_begin(o))
        return;
    dlock__wait_start_on(&op->waiter, &op->latch->handle, &await_wait_ops, op->latch->channel,
                         op->wait_ms);
}

/* ---- the public calls ------------------------------------------------------------------- */

static void op_init(latch_op *op, dlock_latch *l, dlock__op_fn start) {
    memset(op, 0, sizeof(*op));
    dlock__op_init(&op->op, l->client, start);
    op->op.handle = &l->handle;
    op->latch = l;
}

static int run(dlock_latch *l, dlock__op_fn start, int64_t count, int64_t wait_ms,
               int64_t *out) {
    if (!l)
        return dlock__fail(DLOCK_EINVAL, "latch is NULL");
    latch_op op;
    op_init(&op, l, start);
    op.count = count;
    op.wait_ms = wait_ms;
    int rc = dlock__op_run(&op.op);
    if (rc == DLOCK_OK && out)
        *out = op.out;
    return rc;
}

int dlock_latch_try_set_count(dlock_latch *l, int64_t count, bool *was_set) {
    if (count < 0)
        return dlock__fail(DLOCK_EINVAL, "count must not be negative");
    int64_t set;
    int rc = run(l, set_start, count, 0, &set);
    if (rc == DLOCK_OK && was_set)
        *was_set = set == 1;
    return rc;
}

int dlock_latch_count_down(dlock_latch *l) { return run(l, count_down_start, 0, 0, NULL); }

int dlock_latch_count(dlock_latch *l, int64_t *out) {
    if (!out)
        return dlock__fail(DLOCK_EINVAL, "out is NULL");
    return run(l, count_start, 0, 0, out);
}

int dlock_latch_await(dlock_latch *l, int64_t wait_ms) {
    if (wait_ms < 0 && wait_ms != DLOCK_FOREVER)
        return dlock__fail(DLOCK_EINVAL, "wait_ms must be >= 0 or DLOCK_FOREVER");
    return run(l, await_start, 0, wait_ms, NULL);
}

static void async_complete(dlock__op *o) {
    latch_op *op = (latch_op *)o;
    op->cb(op->latch, o->status, op->arg);
    dlock__free(op);
}

static int submit(dlock_latch *l, dlock__op_fn start, int64_t wait_ms, dlock_latch_cb cb,
                  void *arg) {
    if (!l || !cb)
        return dlock__fail(DLOCK_EINVAL, "%s is NULL", l ? "cb" : "latch");
    latch_op *op = dlock__malloc(sizeof(*op));
    if (!op)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    op_init(op, l, start);
    op->wait_ms = wait_ms;
    op->cb = cb;
    op->arg = arg;
    op->op.complete = async_complete;
    int rc = dlock__op_submit(&op->op);
    if (rc != DLOCK_OK)
        dlock__free(op);
    return rc;
}

int dlock_latch_await_async(dlock_latch *l, int64_t wait_ms, dlock_latch_cb cb, void *arg) {
    if (wait_ms < 0 && wait_ms != DLOCK_FOREVER)
        return dlock__fail(DLOCK_EINVAL, "wait_ms must be >= 0 or DLOCK_FOREVER");
    return submit(l, await_start, wait_ms, cb, arg);
}

int dlock_latch_count_down_async(dlock_latch *l, dlock_latch_cb cb, void *arg) {
    return submit(l, count_down_start, 0, cb, arg);
}
