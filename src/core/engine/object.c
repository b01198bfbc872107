/* SPDX-License-Identifier: MIT */
/* object.c — a named object and the calls on it (dlock_object.h): the handle, both faces of
 * a call, and the reply handling every non-lock primitive used to write for itself.
 *
 * A call is a dlock__op with the object, its class and its inputs. It starts on the loop
 * thread (call_start): one that waits goes into the waiting engine, whose attempts send
 * the class's command; any other sends it once. Every reply comes to on_reply (or, for a
 * class that gives back, on_acked_reply), which judges it with the class and ends the call,
 * or hands the result to the engine. So a reply branch cannot forget to end its op or its
 * wait: there is one.
 *
 * Under ?sync_replicas, a class with give_back (an acquire) gets its replicas'
 * acknowledgement with the reply. An attempt that took something fewer replicas
 * acknowledged than asked does not stand: the class's give_back goes out at once, with no
 * WAIT of its own (what it undoes was never the caller's), and its reply ends the attempt
 * as busy, DLOCK__GIVE_BACK_RETRY_MS. The wait goes on; when it ends, the op's detail still
 * says how many acknowledged. */
#include <string.h>

#include "dlock_object.h"

/* ---- shared by every primitive ---------------------------------------------------------- */

int dlock__check_wait_ms(int64_t wait_ms) {
    if (wait_ms < 0 && wait_ms != DLOCK_FOREVER)
        return dlock__fail(DLOCK_EINVAL, "wait_ms must be >= 0 or DLOCK_FOREVER");
    return DLOCK_OK;
}

int dlock__wake_one(const char *msg, size_t len) {
    (void)msg;
    (void)len;
    return 1;
}

void dlock__ignore_reply(dlock_client *c, int status, const dlock__reply *reply, int sends,
                         void *arg) {
    (void)reply;
    (void)sends;
    if (status != DLOCK_OK)
        dlock__log(c, DLOCK_LOG_WARN, "%s failed: %s", (const char *)arg, dlock_strerror(status));
}

int dlock__op_bad_shape(dlock__op *op, const dlock__reply_shape *shape, const dlock__reply *reply,
                        const char *what, const char *key) {
    char text[200];
    return dlock__op_fail(op, DLOCK_EREDIS, "%s %s: unexpected reply from Redis: %s", what, key,
                          dlock__reply_shape_mismatch(shape, reply, text, sizeof(text)));
}

int dlock__op_unacked(dlock__op *op, const dlock__acks *acks, const char *what, const char *key) {
    if (!acks->wait_error) {
        dlock__op_fail(op, DLOCK_ETIMEDOUT,
                       "%s %s: acquired, but only %d of %d replicas acknowledged it within %lld "
                       "ms (sync_replicas), so it was given back",
                       what, key, acks->acked, acks->asked, (long long)acks->timeout_ms);
        return DLOCK__BUSY;
    }
    const char *refusal = dlock__reply_str(acks->wait_error, NULL);
    dlock__op_fail(op, DLOCK_EREDIS,
                   "%s %s: WAIT refused (%s), so the acquisition was given back; grant +wait or "
                   "set sync_replicas=0",
                   what, key, refusal);
    return strncmp(refusal, "NOPERM", 6) == 0 ? DLOCK_ENOPERM : DLOCK_EREDIS;
}

/* ---- the object ------------------------------------------------------------------------- */

static void object_destroy(dlock__handle *h) {
    dlock__object *o = DLOCK__CONTAINER_OF(h, dlock__object, handle);
    dlock__free(o->name);
    dlock__free(o->channel);
    for (int i = 0; i < DLOCK__OBJECT_KEYS_MAX; i++)
        dlock__free(o->keys[i]);
    dlock__free(o);
}

static char *braced(const char *part, const char *name) {
    size_t p = strlen(part), n = strlen(name);
    char *s = dlock__malloc(p + n + 3);
    if (s) {
        memcpy(s, part, p);
        s[p] = '{';
        memcpy(s + p + 1, name, n);
        memcpy(s + p + 1 + n, "}", 2);
    }
    return s;
}

/* false on ENOMEM; a key the class does not name stays NULL. */
static bool key_name(char **out, dlock__key_name k, const char *name) {
    switch (k.form) {
    case DLOCK__KEY_NONE:
        return true;
    case DLOCK__KEY_PREFIXED:
        *out = dlock__name_prefixed(k.part, name);
        break;
    case DLOCK__KEY_SUFFIXED:
        *out = dlock__name_suffixed(name, k.part);
        break;
    case DLOCK__KEY_BRACED:
        *out = braced(k.part, name);
        break;
    }
    return *out != NULL;
}

int dlock__object_new(dlock_client *c, const char *name, const dlock__object_class *cls,
                      void **out) {
    if (!c || !out)
        return dlock__fail(DLOCK_EINVAL, "%s is NULL", c ? "out" : "client");
    int rc = dlock__check_name(name);
    if (rc != DLOCK_OK)
        return rc;
    dlock__object *o = dlock__calloc(1, cls->size);
    if (!o)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    dlock__handle_init(&o->handle, c, object_destroy);
    o->handle.kind = cls->what;
    o->cls = cls;
    o->name = dlock__strdup(name);
    bool ok = o->name && key_name(&o->channel, cls->channel, name);
    for (int i = 0; ok && i < DLOCK__OBJECT_KEYS_MAX; i++)
        ok = key_name(&o->keys[i], cls->keys[i], name);
    if (!ok) {
        object_destroy(&o->handle);
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    }
    *out = o;
    return DLOCK_OK;
}

void dlock__object_free(dlock__object *o) {
    if (o)
        dlock__handle_free(&o->handle);
}

/* ---- a call on the loop thread ---------------------------------------------------------- */

/* The result of one send: the end of the call, or of one attempt of its wait. */
static void call_result(dlock__call *call, int status) {
    if (call->cls->waits)
        dlock__wait_result(&call->waiter, status, call->hint_ms);
    else
        dlock__op_end(&call->op, status);
}

/* The reply checked against the script's shape, then what the class makes of it. */
static int judge(dlock__call *call, const dlock__reply *reply) {
    const dlock__call_class *cls = call->cls;
    if (cls->shape) {
        if (!dlock__reply_shape_check(cls->shape, reply, &call->got))
            return dlock__op_bad_shape(&call->op, cls->shape, reply, call->obj->cls->what,
                                       call->obj->name);
        call->out = call->got.value[0];
    }
    return cls->judge ? cls->judge(call, reply) : DLOCK_OK;
}

/* A reply of the class's command: its failure, or what the class makes of it. */
static int judge_reply(dlock__call *call, int status, const dlock__reply *reply, int sends) {
    if (status != DLOCK_OK)
        return dlock__op_fail_reply(&call->op, status, reply);
    call->sends = sends;
    call->hint_ms = DLOCK__RECHECK_MS; /* no TTL to hint with: look again in case a
                                          message was lost */
    status = judge(call, reply);
    if (status == DLOCK__BUSY)
        call->op.error_text[0] = '\0'; /* not there: whatever an attempt before it said */
    return status;
}

static void on_reply(dlock_client *c, int status, const dlock__reply *reply, int sends, void *arg) {
    (void)c;
    dlock__call *call = arg;
    call_result(call, judge_reply(call, status, reply, sends));
}

/* ---- an acquisition too few replicas acknowledged ---------------------------------------- */

static void on_given_back(dlock_client *c, int status, const dlock__reply *reply, int sends,
                          void *arg) {
    (void)c;
    (void)sends;
    dlock__call *call = arg;
    int ends = call->giving_back;
    call->giving_back = DLOCK_OK;
    if (status != DLOCK_OK) /* ECONN: what the attempt took may stay (the class's header) */
        ends = dlock__op_fail_reply(&call->op, status, reply);
    call->hint_ms = DLOCK__GIVE_BACK_RETRY_MS;
    call_result(call, ends);
}

static void give_back(dlock__call *call, const dlock__acks *acks) {
    call->giving_back = dlock__op_unacked(&call->op, acks, call->obj->cls->what, call->obj->name);
    int rc = call->cls->give_back(call);
    if (rc != DLOCK_OK) {
        call->giving_back = DLOCK_OK;
        call_result(call, dlock__op_fail(&call->op, rc, "%s", dlock_strerror(rc)));
    }
}

static void on_acked_reply(dlock_client *c, int status, const dlock__reply *reply,
                           const dlock__acks *acks, int sends, void *arg) {
    (void)c;
    dlock__call *call = arg;
    status = judge_reply(call, status, reply, sends);
    if (status == DLOCK_OK && acks->acked < acks->asked)
        give_back(call, acks);
    else
        call_result(call, status);
}

int dlock__call_script(dlock__call *call, enum dlock__script_id script, unsigned flags, int nkeys,
                       const dlock__args *a) {
    dlock_client *c = call->obj->handle.client;
    if (call->giving_back)
        return dlock__script(c, script, flags | DLOCK__CMD_NO_WAIT, on_given_back, call, nkeys,
                             a->n, a->v, a->len);
    if (call->cls->give_back)
        return dlock__script_acked(c, script, flags, call->waiter.deadline_ms, on_acked_reply, call,
                                   nkeys, a->n, a->v, a->len);
    return dlock__script(c, script, flags, on_reply, call, nkeys, a->n, a->v, a->len);
}

int dlock__call_get(dlock__call *call) {
    const char *argv[] = {"GET", call->obj->name};
    size_t lens[] = {3, strlen(call->obj->name)};
    return dlock__command(call->obj->handle.client, DLOCK__CMD_RETRY_SAFE, on_reply, call, 2, argv,
                          lens);
}

int dlock__call_read_count(dlock__call *call, const dlock__reply *reply, int64_t *count) {
    return dlock__op_read_count(&call->op, reply, true, call->obj->cls->what, call->obj->name,
                                count);
}

static void call_attempt(dlock__waiter *w) {
    dlock__call *call = DLOCK__CONTAINER_OF(w, dlock__call, waiter);
    int rc = call->cls->send(call);
    if (rc != DLOCK_OK) {
        dlock__op_fail(&call->op, rc, "%s", dlock_strerror(rc));
        dlock__wait_result(w, rc, -1);
    }
}

static void call_done(dlock__waiter *w, int status) {
    dlock__call *call = DLOCK__CONTAINER_OF(w, dlock__call, waiter);
    /* a detail is there only when the last attempt was given back: it says why */
    if (status == DLOCK_ETIMEDOUT && call->cls->timed_out && !call->op.error_text[0])
        call->cls->timed_out(call);
    dlock__op_end(&call->op, status);
}

const dlock__call *dlock__call_of(const dlock__waiter *w) {
    return DLOCK__CONTAINER_OF(w, const dlock__call, waiter);
}

/* Into the waiting engine, with the table the call's class describes. */
static void call_wait(dlock__call *call) {
    const dlock__call_class *cls = call->cls;
    call->wait_ops = (dlock__wait_ops){
        .attempt = call_attempt,
        .done = call_done,
        .wake_count = cls->wake_count,
        .supply = cls->need ? dlock__message_count : NULL,
        .need = cls->need,
    };
    dlock__wait_start_on(&call->waiter, &call->obj->handle, &call->wait_ops, call->obj->channel,
                         NULL, call->wait_ms);
}

static void call_start(dlock__op *op) {
    dlock__call *call = (dlock__call *)op;
    if (!dlock__op_begin(op))
        return;
    if (!call->cls->send) {
        dlock__op_end(op, DLOCK_OK);
        return;
    }
    if (call->cls->waits) {
        call_wait(call);
        return;
    }
    int rc = call->cls->send(call);
    if (rc != DLOCK_OK)
        dlock__op_end_reply(op, rc, NULL);
}

static int count_judge(dlock__call *call, const dlock__reply *reply) {
    return dlock__call_read_count(call, reply, &call->out);
}

const dlock__call_class dlock__call_get_count = {.send = dlock__call_get, .judge = count_judge};
const dlock__call_class dlock__call_nothing = {.send = NULL};

/* ---- the two faces ---------------------------------------------------------------------- */

void dlock__call_init(dlock__call *call, dlock__object *o, const dlock__call_args *args) {
    memset(call, 0, sizeof(*call));
    dlock__op_init(&call->op, o->handle.client, call_start);
    call->op.handle = &o->handle;
    call->obj = o;
    call->cls = args->cls;
    call->kind = args->kind;
    call->number = args->number;
    call->wait_ms = args->wait_ms;
}

int dlock__call_run(dlock__object *o, dlock__call_args args, int64_t *out) {
    dlock__call call;
    dlock__call_init(&call, o, &args);
    int rc = dlock__op_run(&call.op);
    if (rc == DLOCK_OK && out)
        *out = call.out;
    return rc;
}

int dlock__call_run_bool(dlock__object *o, dlock__call_args args, bool *yes) {
    int64_t out;
    int rc = dlock__call_run(o, args, &out);
    if (rc == DLOCK_OK && yes)
        *yes = out == 1;
    return rc;
}

/* Loop thread: the async face's end. The handle is still readable here (submit.c). */
static void call_complete(dlock__op *op) {
    dlock__call *call = (dlock__call *)op;
    call->obj->cls->deliver(call, op->status);
    dlock__free(call);
}

int dlock__call_new(size_t size, dlock__object *o, const dlock__call_args *args, dlock__user_cb cb,
                    void *arg, dlock__call **out) {
    if (!cb)
        return dlock__fail(DLOCK_EINVAL, "cb is NULL");
    dlock__call *call = dlock__calloc(1, size);
    if (!call)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    dlock__call_init(call, o, args);
    call->cb = cb;
    call->arg = arg;
    call->op.complete = call_complete;
    *out = call;
    return DLOCK_OK;
}

int dlock__call_submit(dlock__call *call) {
    int rc = dlock__op_submit(&call->op);
    if (rc != DLOCK_OK)
        dlock__free(call);
    return rc;
}

int dlock__call_async(dlock__object *o, dlock__call_args args, dlock__user_cb cb, void *arg) {
    dlock__call *call = NULL; /* gcc -O2 cannot see that _new sets it on success */
    int rc = dlock__call_new(sizeof(*call), o, &args, cb, arg, &call);
    return rc != DLOCK_OK ? rc : dlock__call_submit(call);
}
