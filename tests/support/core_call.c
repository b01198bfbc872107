/* SPDX-License-Identifier: MIT */
/* core_call.c — see core_call.h. The call is a dlock__op like any public call: it starts
 * on the client's loop thread and the test thread waits for it. */
#include "core_call.h"

#include <stdlib.h>
#include <string.h>

typedef struct call_op {
    dlock__op op;
    unsigned flags;
    int script; /* -1: plain command */
    int nkeys;
    int argc;
    const char *const *argv;
    core_reply *out;
} call_op;

static void copy_reply(core_reply *dst, const dlock__reply *r) {
    dst->type = dlock__reply_type(r);
    if (dst->type == DLOCK__REPLY_INTEGER)
        dst->integer = dlock__reply_int(r);
    size_t len = 0;
    const char *s = dlock__reply_str(r, &len);
    if (s) {
        dst->str = malloc(len + 1);
        memcpy(dst->str, s, len);
        dst->str[len] = '\0';
        dst->len = len;
    }
    dst->count = dlock__reply_count(r);
    if (dst->count) {
        dst->elems = calloc(dst->count, sizeof(*dst->elems));
        for (size_t i = 0; i < dst->count; i++)
            copy_reply(&dst->elems[i], dlock__reply_at(r, i));
    }
}

static void on_reply(dlock_client *c, int status, const dlock__reply *reply, int sends, void *arg) {
    (void)c;
    (void)sends;
    call_op *call = arg;
    call->out->status = status;
    if (reply)
        copy_reply(call->out, reply);
    dlock__op_complete(&call->op, status == DLOCK_EREDIS ? DLOCK_OK : status);
}

static void start(dlock__op *op) {
    call_op *call = (call_op *)op;
    size_t *lens = malloc(sizeof(size_t) * (size_t)(call->argc ? call->argc : 1));
    for (int i = 0; i < call->argc; i++)
        lens[i] = strlen(call->argv[i]);
    int rc =
        call->script < 0
            ? dlock__command(op->client, call->flags, on_reply, call, call->argc, call->argv, lens)
            : dlock__script(op->client, (enum dlock__script_id)call->script, call->flags, on_reply,
                            call, call->nkeys, call->argc, call->argv, lens);
    free(lens);
    if (rc != DLOCK_OK) {
        call->out->status = rc;
        dlock__op_complete(op, rc);
    }
}

static core_reply *run(dlock_client *c, unsigned flags, int script, int nkeys,
                       const char *const *argv) {
    call_op call;
    memset(&call, 0, sizeof(call));
    dlock__op_init(&call.op, c, start);
    call.flags = flags;
    call.script = script;
    call.nkeys = nkeys;
    call.argv = argv;
    while (argv[call.argc])
        call.argc++;
    call.out = calloc(1, sizeof(core_reply));
    int rc = dlock__op_run(&call.op);
    if (rc != DLOCK_OK && call.out->status == DLOCK_OK)
        call.out->status = rc; /* refused before it started (EDEADLK, ECLOSED) */
    return call.out;
}

core_reply *core_call(dlock_client *c, unsigned flags, const char *const *argv) {
    return run(c, flags, -1, 0, argv);
}

core_reply *core_script(dlock_client *c, enum dlock__script_id id, unsigned flags, int nkeys,
                        const char *const *args) {
    return run(c, flags, (int)id, nkeys, args);
}

static void free_elems(core_reply *r) {
    for (size_t i = 0; i < r->count; i++)
        free_elems(&r->elems[i]);
    free(r->elems);
    free(r->str);
}

void core_reply_free(core_reply *r) {
    if (!r)
        return;
    free_elems(r);
    free(r);
}

typedef struct loop_op {
    dlock__op op;
    loop_fn fn;
    void *arg;
} loop_op;

static void loop_op_start(dlock__op *op) {
    loop_op *o = DLOCK__CONTAINER_OF(op, loop_op, op);
    o->fn(op->client, o->arg);
    dlock__op_complete(op, DLOCK_OK);
}

void on_loop(dlock_client *c, loop_fn fn, void *arg) {
    loop_op o;
    dlock__op_init(&o.op, c, loop_op_start);
    o.fn = fn;
    o.arg = arg;
    int rc = dlock__op_run(&o.op);
    if (rc != DLOCK_OK)
        abort(); /* the client is closed: a broken test, not a result */
}
