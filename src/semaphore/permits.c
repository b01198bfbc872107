/* permits.c — the permit-expirable semaphore (Redisson RPermitExpirableSemaphore).
 *
 * Redis layout (wire-compatible with Redisson, see REDIS_LAYOUT.md):
 *   N                  string: the available permits
 *   {N}:timeout        sorted set: permit id (16 raw bytes) -> lease end, ms since the
 *                      epoch by the server's clock (922337203685477: no lease)
 *   redisson_sc:{N}    channel; every change publishes the new available count
 * One script beside this file, permits.lua, does every operation, each after giving back
 * the permits whose lease ended (so an expired permit returns to the pool at the next
 * call on the semaphore by anyone, and its waiters are told).
 *
 * The client draws a permit's id (16 random bytes) before its first attempt, so every
 * call is safe to resend: an acquire that finds its id already holding a permit was
 * applied by an earlier send. A waiter on an empty pool is told when the earliest lease
 * ends and looks again then, not later. */
#include <stdlib.h>
#include <string.h>

#include "dlock/lock.h"
#include "dlock/semaphore.h"
#include "dlock_int.h"

#define ID_BYTES 16

struct dlock_permits {
    dlock__handle handle;
    dlock_client *client;
    char *name;
    char *timeout_key;
    char *channel;
};

typedef struct permits_op {
    dlock__op op;
    dlock_permits *permits;
    const char *what; /* the permits.lua operation */
    unsigned char id[ID_BYTES];
    int64_t number; /* permits for 'set'; lease for 'acquire' and 'lease' */
    int64_t wait_ms;
    dlock__waiter waiter;
    int64_t out;
    dlock_permit_id out_id;
    dlock_permits_cb cb;
    void *arg;
} permits_op;

/* ---- ids -------------------------------------------------------------------------------- */

static void id_to_hex(const unsigned char id[ID_BYTES], dlock_permit_id *out) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < ID_BYTES; i++) {
        out->hex[2 * i] = digits[id[i] >> 4];
        out->hex[2 * i + 1] = digits[id[i] & 15];
    }
    out->hex[2 * ID_BYTES] = '\0';
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* DLOCK_EINVAL unless id is 32 hex digits and a NUL. */
static int id_from_hex(const dlock_permit_id *id, unsigned char out[ID_BYTES]) {
    if (!id)
        return dlock__fail(DLOCK_EINVAL, "permit id is NULL");
    for (int i = 0; i < ID_BYTES; i++) {
        int hi = hex_digit(id->hex[2 * i]), lo = hex_digit(id->hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return dlock__fail(DLOCK_EINVAL, "permit id is not 32 hex digits");
        out[i] = (unsigned char)(hi * 16 + lo);
    }
    if (id->hex[2 * ID_BYTES] != '\0')
        return dlock__fail(DLOCK_EINVAL, "permit id is longer than 32 hex digits");
    return DLOCK_OK;
}

/* ---- handle ----------------------------------------------------------------------------- */

static void permits_destroy(dlock__handle *h) {
    dlock_permits *p = DLOCK__CONTAINER_OF(h, dlock_permits, handle);
    dlock__free(p->name);
    dlock__free(p->timeout_key);
    dlock__free(p->channel);
    dlock__free(p);
}

int dlock_permits_new(dlock_client *c, const char *name, dlock_permits **out) {
    if (!c || !out)
        return dlock__fail(DLOCK_EINVAL, "%s is NULL", c ? "out" : "client");
    int rc = dlock__check_name(name);
    if (rc != DLOCK_OK)
        return rc;
    dlock_permits *p = dlock__calloc(1, sizeof(*p));
    if (!p)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    dlock__handle_init(&p->handle, c, NULL, permits_destroy);
    p->client = c;
    p->name = dlock__strdup(name);
    p->timeout_key = dlock__name_suffixed(name, "timeout");
    p->channel = dlock__name_prefixed("redisson_sc", name);
    if (!p->name || !p->timeout_key || !p->channel) {
        permits_destroy(&p->handle);
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    }
    *out = p;
    return DLOCK_OK;
}

void dlock_permits_free(dlock_permits *p) {
    if (p)
        dlock__handle_free(&p->handle);
}

/* ---- the script ------------------------------------------------------------------------- */

/* Every permits.lua call: the three keys, the operation, its arguments. All are safe to
 * resend (see above). */
static int send(permits_op *op, dlock__reply_fn fn) {
    dlock_permits *p = op->permits;
    dlock__args a = {0};
    dlock__args_str(&a, p->name);
    dlock__args_str(&a, p->timeout_key);
    dlock__args_str(&a, p->channel);
    dlock__args_str(&a, op->what);
    if (strcmp(op->what, "set") == 0) {
        dlock__args_int(&a, op->number);
    } else if (strcmp(op->what, "available") != 0) {
        dlock__args_bin(&a, op->id, ID_BYTES);
        if (strcmp(op->what, "release") != 0)
            dlock__args_int(&a, op->number);
    }
    return dlock__script(p->client, DLOCK__SCRIPT_SEMAPHORE_PERMITS, DLOCK__CMD_RETRY_SAFE, fn,
                         op, 3, a.n, a.v, a.len);
}

/* 'set', 'release', 'lease', 'available': one number back. */
static void on_reply(dlock_client *c, int status, const dlock__reply *reply, void *arg) {
    permits_op *op = arg;
    if (status != DLOCK_OK) {
        dlock__op_end_reply(&op->op, status, reply);
        return;
    }
    if (dlock__reply_int64(reply, &op->out) != DLOCK_OK) {
        dlock__op_end(&op->op, dlock__op_bad_reply(&op->op, reply, "permits", op->permits->name));
        return;
    }
    bool by_id = strcmp(op->what, "release") == 0 || strcmp(op->what, "lease") == 0;
    if (by_id && op->out == 0) {
        if (strcmp(op->what, "release") == 0 && dlock__reply_sends(c) > 1) {
            dlock__op_end(&op->op, DLOCK_OK); /* an earlier send released it */
            return;
        }
        dlock__op_fail(&op->op, DLOCK_ENOTOWNER, "permit %s of %s is unknown, released or expired",
                       op->out_id.hex, op->permits->name);
        dlock__op_end(&op->op, DLOCK_ENOTOWNER);
        return;
    }
    dlock__op_end(&op->op, DLOCK_OK);
}

static void call_start(dlock__op *o) {
    permits_op *op = (permits_op *)o;
    if (!dlock__op_begin(o))
        return;
    int rc = send(op, on_reply);
    if (rc != DLOCK_OK)
        dlock__op_end_reply(o, rc, NULL);
}

/* ---- waiting acquire -------------------------------------------------------------------- */

static void on_acquire_reply(dlock_client *c, int status, const dlock__reply *reply, void *arg) {
    (void)c;
    permits_op *op = arg;
    if (status != DLOCK_OK) {
        dlock__op_fail_reply(&op->op, status, reply);
        dlock__wait_result(&op->waiter, status, -1);
        return;
    }
    int64_t taken, hint;
    if (dlock__reply_int64_at(reply, 0, &taken) != DLOCK_OK ||
        (taken != 1 && dlock__reply_int64_at(reply, 1, &hint) != DLOCK_OK)) {
        status = dlock__op_bad_reply(&op->op, reply, "permits", op->permits->name);
        dlock__wait_result(&op->waiter, status, -1);
        return;
    }
    if (taken == 1) {
        dlock__wait_result(&op->waiter, DLOCK_OK, -1);
        return;
    }
    /* none free: look again when the earliest lease ends (a message may come sooner) */
    if (hint < 0 || hint > DLOCK__RECHECK_MS)
        hint = DLOCK__RECHECK_MS;
    dlock__wait_result(&op->waiter, DLOCK__BUSY, hint);
}

static void acquire_attempt(dlock__waiter *w) {
    permits_op *op = DLOCK__CONTAINER_OF(w, permits_op, waiter);
    int rc = send(op, on_acquire_reply);
    if (rc != DLOCK_OK) {
        dlock__op_fail(&op->op, rc, "%s", dlock_strerror(rc));
        dlock__wait_result(w, rc, -1);
    }
}

static void acquire_done(dlock__waiter *w, int status) {
    permits_op *op = DLOCK__CONTAINER_OF(w, permits_op, waiter);
    if (status == DLOCK_ETIMEDOUT)
        dlock__op_fail(&op->op, status, "no permit of %s available in time",
                       op->permits->name);
    dlock__op_end(&op->op, status);
}

static int64_t need_one(const dlock__waiter *w) {
    (void)w;
    return 1;
}

static const dlock__wait_ops acquire_wait_ops = {
    .attempt = acquire_attempt,
    .done = acquire_done,
    .supply = dlock__message_count,
    .need = need_one,
};

static void acquire_start(dlock__op *o) {
    permits_op *op = (permits_op *)o;
    if (!dlock__op_begin(o))
        return;
    dlock__wait_start_on(&op->waiter, &op->permits->handle, &acquire_wait_ops,
                         op->permits->channel, op->wait_ms);
}

/* ---- the public calls ------------------------------------------------------------------- */

static void op_init(permits_op *op, dlock_permits *p, dlock__op_fn start, const char *what) {
    memset(op, 0, sizeof(*op));
    dlock__op_init(&op->op, p->client, start);
    op->op.handle = &p->handle;
    op->permits = p;
    op->what = what;
}

static int check_lease(int64_t lease_ms) {
    if ((lease_ms <= 0 && lease_ms != -1) || lease_ms > DLOCK_MAX_TIME_MS)
        return dlock__fail(DLOCK_EINVAL, "lease_ms must be from 1 to DLOCK_MAX_TIME_MS, or -1");
    return DLOCK_OK;
}

static int check_acquire(const dlock_permits *p, int64_t wait_ms, int64_t lease_ms) {
    if (!p)
        return dlock__fail(DLOCK_EINVAL, "permits is NULL");
    if (wait_ms < 0 && wait_ms != DLOCK_FOREVER)
        return dlock__fail(DLOCK_EINVAL, "wait_ms must be >= 0 or DLOCK_FOREVER");
    return check_lease(lease_ms);
}

int dlock_permits_try_set_permits(dlock_permits *p, int64_t permits, bool *was_set) {
    if (!p)
        return dlock__fail(DLOCK_EINVAL, "permits is NULL");
    if (permits < 0)
        return dlock__fail(DLOCK_EINVAL, "permits must not be negative");
    permits_op op;
    op_init(&op, p, call_start, "set");
    op.number = permits;
    int rc = dlock__op_run(&op.op);
    if (rc == DLOCK_OK && was_set)
        *was_set = op.out == 1;
    return rc;
}

int dlock_permits_acquire(dlock_permits *p, int64_t wait_ms, int64_t lease_ms,
                          dlock_permit_id *out) {
    int rc = check_acquire(p, wait_ms, lease_ms);
    if (rc != DLOCK_OK)
        return rc;
    if (!out)
        return dlock__fail(DLOCK_EINVAL, "out is NULL");
    permits_op op;
    op_init(&op, p, acquire_start, "acquire");
    op.number = lease_ms;
    op.wait_ms = wait_ms;
    dlock__random_bytes(op.id, ID_BYTES);
    rc = dlock__op_run(&op.op);
    /* On DLOCK_ECONN the permit may have been taken all the same: with its id the caller
     * can give it back (a release by id is safe to repeat, and says ENOTOWNER if not). */
    if (rc == DLOCK_OK || rc == DLOCK_ECONN)
        id_to_hex(op.id, out);
    return rc;
}

static int run_by_id(dlock_permits *p, const dlock_permit_id *id, const char *what,
                     int64_t lease_ms) {
    if (!p)
        return dlock__fail(DLOCK_EINVAL, "permits is NULL");
    permits_op op;
    op_init(&op, p, call_start, what);
    int rc = id_from_hex(id, op.id);
    if (rc != DLOCK_OK)
        return rc;
    op.out_id = *id;
    op.number = lease_ms;
    return dlock__op_run(&op.op);
}

int dlock_permits_release(dlock_permits *p, const dlock_permit_id *id) {
    return run_by_id(p, id, "release", 0);
}

int dlock_permits_update_lease(dlock_permits *p, const dlock_permit_id *id, int64_t lease_ms) {
    int rc = check_lease(lease_ms);
    return rc ? rc : run_by_id(p, id, "lease", lease_ms);
}

int dlock_permits_available(dlock_permits *p, int64_t *out) {
    if (!p || !out)
        return dlock__fail(DLOCK_EINVAL, "%s is NULL", p ? "out" : "permits");
    permits_op op;
    op_init(&op, p, call_start, "available");
    int rc = dlock__op_run(&op.op);
    if (rc == DLOCK_OK)
        *out = op.out;
    return rc;
}

static void async_complete(dlock__op *o) {
    permits_op *op = (permits_op *)o;
    if (o->status == DLOCK_OK && strcmp(op->what, "acquire") == 0)
        id_to_hex(op->id, &op->out_id);
    op->cb(op->permits, o->status, o->status == DLOCK_OK ? &op->out_id : NULL, op->arg);
    dlock__free(op);
}

static int submit(permits_op *op, dlock_permits_cb cb, void *arg) {
    op->cb = cb;
    op->arg = arg;
    op->op.complete = async_complete;
    int rc = dlock__op_submit(&op->op);
    if (rc != DLOCK_OK)
        dlock__free(op);
    return rc;
}

int dlock_permits_acquire_async(dlock_permits *p, int64_t wait_ms, int64_t lease_ms,
                                dlock_permits_cb cb, void *arg) {
    int rc = check_acquire(p, wait_ms, lease_ms);
    if (rc != DLOCK_OK)
        return rc;
    if (!cb)
        return dlock__fail(DLOCK_EINVAL, "cb is NULL");
    permits_op *op = dlock__malloc(sizeof(*op));
    if (!op)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    op_init(op, p, acquire_start, "acquire");
    op->number = lease_ms;
    op->wait_ms = wait_ms;
    dlock__random_bytes(op->id, ID_BYTES);
    return submit(op, cb, arg);
}

int dlock_permits_release_async(dlock_permits *p, const dlock_permit_id *id,
                                dlock_permits_cb cb, void *arg) {
    if (!p || !cb)
        return dlock__fail(DLOCK_EINVAL, "%s is NULL", p ? "cb" : "permits");
    unsigned char raw[ID_BYTES];
    int rc = id_from_hex(id, raw);
    if (rc != DLOCK_OK)
        return rc;
    permits_op *op = dlock__malloc(sizeof(*op));
    if (!op)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    op_init(op, p, call_start, "release");
    memcpy(op->id, raw, ID_BYTES);
    op->out_id = *id;
    return submit(op, cb, arg);
}
