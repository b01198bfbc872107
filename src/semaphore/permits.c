/* SPDX-License-Identifier: MIT */
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
 * ends and looks again then, not later.
 *
 * Under ?sync_replicas, a permit taken that fewer replicas acknowledged than asked is
 * released at once by its id (in the same call; the next attempt draws on the same id) and
 * the attempt counts as busy (object.c); every other write stands, with a warning in the
 * log. */
#include "dlock/semaphore.h"
#include "dlock_object.h"
#include "semaphore_shapes.h"

#define ID_BYTES 16

struct dlock_permits {
    dlock__object obj; /* keys[0]: {N}:timeout */
};

/* The permits.lua operations (its ARGV[1]). */
enum permits_op { OP_SET, OP_ACQUIRE, OP_RELEASE, OP_LEASE, OP_AVAILABLE };
static const char *const op_names[] = {
    [OP_SET] = "set",     [OP_ACQUIRE] = "acquire",     [OP_RELEASE] = "release",
    [OP_LEASE] = "lease", [OP_AVAILABLE] = "available",
};

/* A call with a permit's id: acquire (drawn before its first send), release, lease. */
typedef struct permits_call {
    dlock__call call; /* number: permits for set; lease for acquire and lease */
    unsigned char id[ID_BYTES];
    dlock_permit_id hex;
} permits_call;

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

static void deliver(dlock__call *call, int status) {
    permits_call *pc = (permits_call *)call;
    if (status == DLOCK_OK && call->kind == OP_ACQUIRE)
        id_to_hex(pc->id, &pc->hex);
    ((dlock_permits_cb)call->cb)((dlock_permits *)call->obj, status,
                                 status == DLOCK_OK ? &pc->hex : NULL, call->arg);
}

static const dlock__object_class permits_class = {
    .what = "permits",
    .size = sizeof(dlock_permits),
    .channel = {DLOCK__KEY_PREFIXED, "redisson_sc"},
    .keys = {{DLOCK__KEY_SUFFIXED, "timeout"}},
    .deliver = deliver,
};

int dlock_permits_new(dlock_client *c, const char *name, dlock_permits **out) {
    return dlock__object_new(c, name, &permits_class, (void **)out);
}

void dlock_permits_free(dlock_permits *p) {
    dlock__object_free((dlock__object *)p);
}

/* ---- the script ------------------------------------------------------------------------- */

/* Every permits.lua call: the three keys, the operation, its arguments. All are safe to
 * resend (see above). */
static int send_op(dlock__call *call, enum permits_op op) {
    dlock__args a = {0};
    dlock__args_str(&a, call->obj->name);
    dlock__args_str(&a, call->obj->keys[0]);
    dlock__args_str(&a, call->obj->channel);
    dlock__args_str(&a, op_names[op]);
    switch (op) {
    case OP_SET:
        dlock__args_int(&a, call->number);
        break;
    case OP_ACQUIRE:
    case OP_LEASE:
        dlock__args_bin(&a, ((permits_call *)call)->id, ID_BYTES);
        dlock__args_int(&a, call->number);
        break;
    case OP_RELEASE:
        dlock__args_bin(&a, ((permits_call *)call)->id, ID_BYTES);
        break;
    case OP_AVAILABLE:
        break;
    }
    /* a release waits for no WAIT of its own (DLOCK__CMD_NO_WAIT) */
    unsigned flags = DLOCK__CMD_RETRY_SAFE | (op == OP_RELEASE ? DLOCK__CMD_NO_WAIT : 0);
    return dlock__call_script(call, DLOCK__SCRIPT_SEMAPHORE_PERMITS, flags, 3, &a);
}

static int send_permits(dlock__call *call) {
    return send_op(call, (enum permits_op)call->kind);
}

/* set: 1 or 0; available: the count. */
static const dlock__call_class set_call = {.send = send_permits,
                                           .shape = &dlock__shape_permits_yes_no};
static const dlock__call_class available_call = {.send = send_permits,
                                                 .shape = &dlock__shape_permits_available};

/* release and lease: 1 done, 0 the id holds no permit. */
static int judge_by_id(dlock__call *call, const dlock__reply *reply) {
    (void)reply;
    if (call->out != 0)
        return DLOCK_OK;
    if (call->kind == OP_RELEASE && call->sends > 1)
        return DLOCK_OK; /* an earlier send released it */
    return dlock__op_fail(&call->op, DLOCK_ENOTOWNER,
                          "permit %s of %s is unknown, released or expired",
                          ((permits_call *)call)->hex.hex, call->obj->name);
}

static const dlock__call_class by_id_call = {
    .send = send_permits, .shape = &dlock__shape_permits_yes_no, .judge = judge_by_id};

/* ---- waiting acquire -------------------------------------------------------------------- */

/* {1} taken; {0, hint} none free: look again when the earliest lease ends (hint ms; a
 * message may come sooner). */
static int judge_acquire(dlock__call *call, const dlock__reply *reply) {
    (void)reply;
    if (call->got.form == 0)
        return DLOCK_OK;
    int64_t hint = call->got.value[1];
    if (hint >= 0 && hint < call->hint_ms)
        call->hint_ms = hint;
    return DLOCK__BUSY;
}

static int64_t need_one(const dlock__waiter *w) {
    (void)w;
    return 1;
}

static void acquire_timed_out(dlock__call *call) {
    dlock__op_fail(&call->op, DLOCK_ETIMEDOUT, "no permit of %s available in time",
                   call->obj->name);
}

/* A permit taken that too few replicas acknowledged: released by its id. */
static int give_back_permit(dlock__call *call) {
    return send_op(call, OP_RELEASE);
}

static const dlock__call_class acquire_call = {
    .send = send_permits,
    .shape = &dlock__shape_permits_acquire,
    .judge = judge_acquire,
    .waits = true,
    .need = need_one,
    .timed_out = acquire_timed_out,
    .give_back = give_back_permit,
};

/* ---- the public calls ------------------------------------------------------------------- */

static int check(const dlock_permits *p) {
    return p ? DLOCK_OK : dlock__fail(DLOCK_EINVAL, "permits is NULL");
}

static int check_lease(int64_t lease_ms) {
    if ((lease_ms <= 0 && lease_ms != -1) || lease_ms > DLOCK_MAX_TIME_MS)
        return dlock__fail(DLOCK_EINVAL, "lease_ms must be from 1 to DLOCK_MAX_TIME_MS, or -1");
    return DLOCK_OK;
}

static int check_acquire(const dlock_permits *p, int64_t wait_ms, int64_t lease_ms) {
    int rc = check(p);
    if (rc == DLOCK_OK)
        rc = dlock__check_wait_ms(wait_ms);
    return rc ? rc : check_lease(lease_ms);
}

/* The id of a call: drawn for an acquire (before its first send), else read from the
 * caller's hex, which is kept for the error text. */
static int set_id(permits_call *pc, const dlock_permit_id *id) {
    if (pc->call.kind == OP_ACQUIRE) {
        dlock__random_bytes(pc->id, ID_BYTES);
        return DLOCK_OK;
    }
    int rc = id_from_hex(id, pc->id);
    if (rc == DLOCK_OK)
        pc->hex = *id;
    return rc;
}

/* The blocking face of a call with an id; *out (may be NULL) gets the id. */
static int run_with_id(dlock_permits *p, dlock__call_args args, const dlock_permit_id *id,
                       dlock_permit_id *out) {
    permits_call pc;
    dlock__call_init(&pc.call, &p->obj, &args);
    int rc = set_id(&pc, id);
    if (rc != DLOCK_OK)
        return rc;
    rc = dlock__op_run(&pc.call.op);
    /* On DLOCK_ECONN the permit may have been taken all the same: with its id the caller
     * can give it back (a release by id is safe to repeat, and says ENOTOWNER if not). */
    if (out && (rc == DLOCK_OK || rc == DLOCK_ECONN))
        id_to_hex(pc.id, out);
    return rc;
}

/* The async face of a call with an id. */
static int submit_with_id(dlock_permits *p, dlock__call_args args, const dlock_permit_id *id,
                          dlock_permits_cb cb, void *arg) {
    dlock__call *call;
    int rc = dlock__call_new(sizeof(permits_call), &p->obj, &args, (dlock__user_cb)cb, arg, &call);
    if (rc == DLOCK_OK && (rc = set_id((permits_call *)call, id)) != DLOCK_OK)
        dlock__free(call);
    return rc ? rc : dlock__call_submit(call);
}

static dlock__call_args acquire_args(int64_t wait_ms, int64_t lease_ms) {
    return (dlock__call_args){
        .cls = &acquire_call, .kind = OP_ACQUIRE, .number = lease_ms, .wait_ms = wait_ms};
}

static const dlock__call_args release_args = {.cls = &by_id_call, .kind = OP_RELEASE};

int dlock_permits_try_set_permits(dlock_permits *p, int64_t permits, bool *was_set) {
    dlock__call_args args = {.cls = &set_call, .kind = OP_SET, .number = permits};
    int rc = check(p);
    if (rc == DLOCK_OK && permits < 0)
        rc = dlock__fail(DLOCK_EINVAL, "permits must not be negative");
    return rc ? rc : dlock__call_run_bool(&p->obj, args, was_set);
}

int dlock_permits_acquire(dlock_permits *p, int64_t wait_ms, int64_t lease_ms,
                          dlock_permit_id *out) {
    int rc = check_acquire(p, wait_ms, lease_ms);
    if (rc == DLOCK_OK && !out)
        rc = dlock__fail(DLOCK_EINVAL, "out is NULL");
    return rc ? rc : run_with_id(p, acquire_args(wait_ms, lease_ms), NULL, out);
}

int dlock_permits_release(dlock_permits *p, const dlock_permit_id *id) {
    int rc = check(p);
    return rc ? rc : run_with_id(p, release_args, id, NULL);
}

int dlock_permits_update_lease(dlock_permits *p, const dlock_permit_id *id, int64_t lease_ms) {
    dlock__call_args args = {.cls = &by_id_call, .kind = OP_LEASE, .number = lease_ms};
    int rc = check_lease(lease_ms);
    if (rc == DLOCK_OK)
        rc = check(p);
    return rc ? rc : run_with_id(p, args, id, NULL);
}

int dlock_permits_available(dlock_permits *p, int64_t *out) {
    dlock__call_args args = {.cls = &available_call, .kind = OP_AVAILABLE};
    int rc = out ? check(p) : dlock__fail(DLOCK_EINVAL, "out is NULL");
    return rc ? rc : dlock__call_run(&p->obj, args, out);
}

int dlock_permits_acquire_async(dlock_permits *p, int64_t wait_ms, int64_t lease_ms,
                                dlock_permits_cb cb, void *arg) {
    int rc = check_acquire(p, wait_ms, lease_ms);
    return rc ? rc : submit_with_id(p, acquire_args(wait_ms, lease_ms), NULL, cb, arg);
}

int dlock_permits_release_async(dlock_permits *p, const dlock_permit_id *id, dlock_permits_cb cb,
                                void *arg) {
    int rc = check(p);
    return rc ? rc : submit_with_id(p, release_args, id, cb, arg);
}
