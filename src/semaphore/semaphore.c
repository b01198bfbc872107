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
 * DLOCK_ECONN and the permits may or may not have moved (semaphore.h says so). */
#include <stdlib.h>
#include <string.h>

#include "dlock/lock.h"
#include "dlock/semaphore.h"
#include "dlock_int.h"

struct dlock_semaphore {
    dlock__handle handle;
    dlock_client *client;
    char *name;
    char *channel;
};

typedef struct sem_op {
    dlock__op op;
    dlock_semaphore *sem;
    enum dlock__script_id script;
    int64_t permits;
    int64_t wait_ms;
    dlock__waiter waiter;
    int64_t out;
    dlock_semaphore_cb cb;
    void *arg;
} sem_op;

/* ---- handle ----------------------------------------------------------------------------- */

static void sem_destroy(dlock__handle *h) {
    dlock_semaphore *s = DLOCK__CONTAINER_OF(h, dlock_semaphore, handle);
    dlock__free(s->name);
    dlock__free(s->channel);
    dlock__free(s);
}

int dlock_semaphore_new(dlock_client *c, const char *name, dlock_semaphore **out) {
    if (!c || !out)
        return dlock__fail(DLOCK_EINVAL, "%s is NULL", c ? "out" : "client");
    int rc = dlock__check_name(name);
    if (rc != DLOCK_OK)
        return rc;
    dlock_semaphore *s = dlock__calloc(1, sizeof(*s));
    if (!s)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    dlock__handle_init(&s->handle, c, NULL, sem_destroy);
    s->client = c;
    s->name = dlock__strdup(name);
    s->channel = dlock__name_prefixed("redisson_sc", name);
    if (!s->name || !s->channel) {
        sem_destroy(&s->handle);
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    }
    *out = s;
    return DLOCK_OK;
}

void dlock_semaphore_free(dlock_semaphore *s) {
    if (s)
        dlock__handle_free(&s->handle);
}

/* ---- one script call -------------------------------------------------------------------- */

/* A script's number: try_set's 1 or 0, the count after add or release, what drain took. */
static void on_reply(dlock_client *c, int status, const dlock__reply *reply, void *arg) {
    (void)c;
    sem_op *op = arg;
    if (status != DLOCK_OK) {
        dlock__op_end_reply(&op->op, status, reply);
        return;
    }
    if (dlock__reply_int64(reply, &op->out) != DLOCK_OK)
        status = dlock__op_bad_reply(&op->op, reply, "semaphore", op->sem->name);
    dlock__op_end(&op->op, status);
}

/* GET of the count: absent is 0, a string that is not an integer is not a semaphore. */
static void on_available_reply(dlock_client *c, int status, const dlock__reply *reply,
                               void *arg) {
    (void)c;
    sem_op *op = arg;
    if (status != DLOCK_OK) {
        dlock__op_end_reply(&op->op, status, reply);
        return;
    }
    status = dlock__op_read_count(&op->op, reply, true, "semaphore", op->sem->name, &op->out);
    dlock__op_end(&op->op, status);
}

/* try_set, add, release and drain: one script, one number back. */
static void call_start(dlock__op *o) {
    sem_op *op = (sem_op *)o;
    if (!dlock__op_begin(o))
        return;
    dlock_semaphore *s = op->sem;
    dlock__args a = {0};
    int rc;
    if (op->permits == 0 && op->script == DLOCK__SCRIPT_SEMAPHORE_SEM_RELEASE) {
        dlock__op_end(o, DLOCK_OK); /* releasing nothing changes nothing */
        return;
    }
    dlock__args_str(&a, s->name);
    int nkeys = 1;
    if (op->script != DLOCK__SCRIPT_SEMAPHORE_SEM_DRAIN) {
        dlock__args_str(&a, s->channel);
        dlock__args_int(&a, op->permits);
        nkeys = 2;
    }
    /* only setting-if-absent may run twice without harm */
    unsigned flags =
        op->script == DLOCK__SCRIPT_SEMAPHORE_SEM_TRY_SET ? DLOCK__CMD_RETRY_SAFE : 0;
    rc = dlock__script(s->client, op->script, flags, on_reply, op, nkeys, a.n, a.v, a.len);
    if (rc != DLOCK_OK)
        dlock__op_end_reply(o, rc, NULL);
}

/* available: a plain read, safe to resend. */
static void available_start(dlock__op *o) {
    sem_op *op = (sem_op *)o;
    if (!dlock__op_begin(o))
        return;
    const char *argv[] = {"GET", op->sem->name};
    size_t lens[] = {3, strlen(op->sem->name)};
    int rc = dlock__command(op->sem->client, DLOCK__CMD_RETRY_SAFE, on_available_reply, op, 2,
                            argv, lens);
    if (rc != DLOCK_OK)
        dlock__op_end_reply(o, rc, NULL);
}

/* ---- waiting acquire -------------------------------------------------------------------- */

static void on_acquire_reply(dlock_client *c, int status, const dlock__reply *reply, void *arg) {
    (void)c;
    sem_op *op = arg;
    if (status != DLOCK_OK) {
        dlock__op_fail_reply(&op->op, status, reply);
        dlock__wait_result(&op->waiter, status, -1);
        return;
    }
    int64_t taken;
    if (dlock__reply_int64_at(reply, 0, &taken) != DLOCK_OK) {
        status = dlock__op_bad_reply(&op->op, reply, "semaphore", op->sem->name);
        dlock__wait_result(&op->waiter, status, -1);
        return;
    }
    dlock__wait_result(&op->waiter, taken == 1 ? DLOCK_OK : DLOCK__BUSY, DLOCK__RECHECK_MS);
}

static void acquire_attempt(dlock__waiter *w) {
    sem_op *op = DLOCK__CONTAINER_OF(w, sem_op, waiter);
    dlock__args a = {0};
    dlock__args_str(&a, op->sem->name);
    dlock__args_int(&a, op->permits);
    int rc = dlock__script(op->sem->client, DLOCK__SCRIPT_SEMAPHORE_SEM_ACQUIRE, 0,
                           on_acquire_reply, op, 1, a.n, a.v, a.len);
    if (rc != DLOCK_OK) {
        dlock__op_fail(&op->op, rc, "%s", dlock_strerror(rc));
        dlock__wait_result(w, rc, -1);
    }
}

static void acquire_done(dlock__waiter *w, int status) {
    sem_op *op = DLOCK__CONTAINER_OF(w, sem_op, waiter);
    if (status == DLOCK_ETIMEDOUT)
        dlock__op_fail(&op->op, status, "%lld permits of %s not available in time",
                       (long long)op->permits, op->sem->name);
    dlock__op_end(&op->op, status);
}

static int64_t waiter_need(const dlock__waiter *w) {
    return DLOCK__CONTAINER_OF(w, sem_op, waiter)->permits;
}

static const dlock__wait_ops acquire_wait_ops = {
    .attempt = acquire_attempt,
    .done = acquire_done,
    .supply = dlock__message_count,
    .need = waiter_need,
};

static void acquire_start(dlock__op *o) {
    sem_op *op = (sem_op *)o;
    if (!dlock__op_begin(o))
        return;
    if (op->permits == 0) {
        dlock__op_end(o, DLOCK_OK);
        return;
    }
    dlock__wait_start_on(&op->waiter, &op->sem->handle, &acquire_wait_ops, op->sem->channel,
                         op->wait_ms);
}

/* ---- the public calls ------------------------------------------------------------------- */

static void op_init(sem_op *op, dlock_semaphore *s, dlock__op_fn start,
                    enum dlock__script_id script, int64_t permits) {
    memset(op, 0, sizeof(*op));
    dlock__op_init(&op->op, s->client, start);
    op->op.handle = &s->handle;
    op->sem = s;
    op->script = script;
    op->permits = permits;
}

static int check(const dlock_semaphore *s, int64_t permits, const char *what) {
    if (!s)
        return dlock__fail(DLOCK_EINVAL, "semaphore is NULL");
    if (permits < 0)
        return dlock__fail(DLOCK_EINVAL, "%s must not be negative", what);
    return DLOCK_OK;
}

static int run(dlock_semaphore *s, dlock__op_fn start, enum dlock__script_id script,
               int64_t permits, int64_t *out) {
    sem_op op;
    op_init(&op, s, start, script, permits);
    int rc = dlock__op_run(&op.op);
    if (rc == DLOCK_OK && out)
        *out = op.out;
    return rc;
}

int dlock_semaphore_try_set_permits(dlock_semaphore *s, int64_t permits, bool *was_set) {
    int64_t set;
    int rc = check(s, permits, "permits");
    if (rc == DLOCK_OK)
        rc = run(s, call_start, DLOCK__SCRIPT_SEMAPHORE_SEM_TRY_SET, permits, &set);
    if (rc == DLOCK_OK && was_set)
        *was_set = set == 1;
    return rc;
}

int dlock_semaphore_add_permits(dlock_semaphore *s, int64_t delta) {
    if (!s)
        return dlock__fail(DLOCK_EINVAL, "semaphore is NULL");
    return run(s, call_start, DLOCK__SCRIPT_SEMAPHORE_SEM_ADD, delta, NULL);
}

int dlock_semaphore_try_acquire(dlock_semaphore *s, int64_t permits, int64_t wait_ms) {
    int rc = check(s, permits, "permits");
    if (rc != DLOCK_OK)
        return rc;
    if (wait_ms < 0 && wait_ms != DLOCK_FOREVER)
        return dlock__fail(DLOCK_EINVAL, "wait_ms must be >= 0 or DLOCK_FOREVER");
    sem_op op;
    op_init(&op, s, acquire_start, DLOCK__SCRIPT_SEMAPHORE_SEM_ACQUIRE, permits);
    op.wait_ms = wait_ms;
    return dlock__op_run(&op.op);
}

int dlock_semaphore_acquire(dlock_semaphore *s, int64_t permits) {
    return dlock_semaphore_try_acquire(s, permits, DLOCK_FOREVER);
}

int dlock_semaphore_release(dlock_semaphore *s, int64_t permits) {
    int rc = check(s, permits, "permits");
    return rc ? rc : run(s, call_start, DLOCK__SCRIPT_SEMAPHORE_SEM_RELEASE, permits, NULL);
}

int dlock_semaphore_available(dlock_semaphore *s, int64_t *out) {
    int rc = check(s, 0, "permits");
    if (rc == DLOCK_OK && !out)
        rc = dlock__fail(DLOCK_EINVAL, "out is NULL");
    return rc ? rc : run(s, available_start, DLOCK__SCRIPT_SEMAPHORE_SEM_ACQUIRE, 0, out);
}

int dlock_semaphore_drain(dlock_semaphore *s, int64_t *drained) {
    int rc = check(s, 0, "permits");
    return rc ? rc : run(s, call_start, DLOCK__SCRIPT_SEMAPHORE_SEM_DRAIN, 0, drained);
}

static void async_complete(dlock__op *o) {
    sem_op *op = (sem_op *)o;
    op->cb(op->sem, o->status, op->arg);
    dlock__free(op);
}

static int submit(dlock_semaphore *s, dlock__op_fn start, enum dlock__script_id script,
                  int64_t permits, int64_t wait_ms, dlock_semaphore_cb cb, void *arg) {
    if (!cb)
        return dlock__fail(DLOCK_EINVAL, "cb is NULL");
    sem_op *op = dlock__malloc(sizeof(*op));
    if (!op)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    op_init(op, s, start, script, permits);
    op->wait_ms = wait_ms;
    op->cb = cb;
    op->arg = arg;
    op->op.complete = async_complete;
    int rc = dlock__op_submit(&op->op);
    if (rc != DLOCK_OK)
        dlock__free(op);
    return rc;
}

int dlock_semaphore_acquire_async(dlock_semaphore *s, int64_t permits, int64_t wait_ms,
                                  dlock_semaphore_cb cb, void *arg) {
    int rc = check(s, permits, "permits");
    if (rc != DLOCK_OK)
        return rc;
    if (wait_ms < 0 && wait_ms != DLOCK_FOREVER)
        return dlock__fail(DLOCK_EINVAL, "wait_ms must be >= 0 or DLOCK_FOREVER");
    return submit(s, acquire_start, DLOCK__SCRIPT_SEMAPHORE_SEM_ACQUIRE, permits, wait_ms, cb,
                  arg);
}

int dlock_semaphore_release_async(dlock_semaphore *s, int64_t permits, dlock_semaphore_cb cb,
                                  void *arg) {
    int rc = check(s, permits, "permits");
    return rc ? rc
              : submit(s, call_start, DLOCK__SCRIPT_SEMAPHORE_SEM_RELEASE, permits, 0, cb, arg);
}
