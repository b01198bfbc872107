/* SPDX-License-Identifier: MIT */
/* redis_lib.c — see redis_lib.h. Each call is a dlock__op, as a public call of the blocking
 * face is: its start runs on the client's loop thread and queues the command there; the
 * reply callback copies what the tool reads (the library's reply lives only during the
 * callback) and ends the op; the tool's thread waits in dlock__op_run.
 *
 * The copy owns its strings and elements; one that cannot be made is DLOCK_ENOMEM. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock_int.h"
#include "redis_lib.h"

typedef struct command_op {
    dlock__op op;
    int argc;
    const char *const *argv;
    redis_lib_reply *reply; /* the copy, on DLOCK_OK */
} command_op;

/* ---- copying a reply ------------------------------------------------------------------- */

/* A copy of r, or NULL on ENOMEM. */
static redis_lib_reply *copy_reply(const dlock__reply *r) {
    redis_lib_reply *copy = calloc(1, sizeof(*copy));
    if (!copy)
        return NULL;
    copy->type = dlock__reply_type(r);
    if (copy->type == DLOCK__REPLY_INTEGER)
        copy->integer = dlock__reply_int(r);
    size_t len = 0;
    const char *s = dlock__reply_str(r, &len);
    copy->str = malloc(len + 1);
    if (!copy->str) {
        free(copy);
        return NULL;
    }
    if (s)
        memcpy(copy->str, s, len);
    copy->str[len] = '\0';
    copy->len = len;
    size_t count = dlock__reply_count(r);
    if (count > 0) {
        copy->element = calloc(count, sizeof(*copy->element));
        if (!copy->element) {
            redis_lib_reply_free(copy);
            return NULL;
        }
        for (; copy->elements < count; copy->elements++) {
            copy->element[copy->elements] = copy_reply(dlock__reply_at(r, copy->elements));
            if (!copy->element[copy->elements]) {
                redis_lib_reply_free(copy);
                return NULL;
            }
        }
    }
    return copy;
}

void redis_lib_reply_free(redis_lib_reply *r) {
    if (!r)
        return;
    for (size_t i = 0; i < r->elements; i++)
        redis_lib_reply_free(r->element[i]);
    free(r->element);
    free(r->str);
    free(r);
}

/* ---- a command ------------------------------------------------------------------------- */

static void command_replied(dlock_client *c, int status, const dlock__reply *reply, int sends,
                            void *arg) {
    (void)c;
    (void)sends; /* a read: once or twice, the same answer */
    command_op *call = arg;
    if (status != DLOCK_OK) {
        dlock__op_complete(&call->op, dlock__op_fail_reply(&call->op, status, reply));
        return;
    }
    call->reply = copy_reply(reply);
    if (!call->reply) {
        dlock__op_complete(&call->op, dlock__op_fail(&call->op, DLOCK_ENOMEM, "out of memory"));
        return;
    }
    dlock__op_complete(&call->op, DLOCK_OK);
}

static void command_start(dlock__op *op) {
    command_op *call = DLOCK__CONTAINER_OF(op, command_op, op);
    size_t *lens = malloc(sizeof(*lens) * (size_t)call->argc);
    if (!lens) {
        dlock__op_complete(op, dlock__op_fail(op, DLOCK_ENOMEM, "out of memory"));
        return;
    }
    for (int i = 0; i < call->argc; i++)
        lens[i] = strlen(call->argv[i]);
    int rc = dlock__command(op->client, DLOCK__CMD_RETRY_SAFE, command_replied, call, call->argc,
                            call->argv, lens);
    free(lens); /* dlock__command copied the words */
    if (rc != DLOCK_OK)
        dlock__op_complete(op, dlock__op_fail_reply(op, rc, NULL));
}

int redis_lib_call(dlock_client *c, int argc, const char *const *argv, redis_lib_reply **out) {
    if (argc < 1)
        return dlock__fail(DLOCK_EINVAL, "no command");
    command_op call;
    memset(&call, 0, sizeof(call));
    dlock__op_init(&call.op, c, command_start);
    call.argc = argc;
    call.argv = argv;
    int rc = dlock__op_run(&call.op);
    if (rc == DLOCK_OK)
        *out = call.reply;
    return rc;
}

/* ---- where a key's commands go --------------------------------------------------------- */

typedef struct node_op {
    dlock__op op;
    const char *key;
    char *buf;
    size_t size;
} node_op;

static void node_start(dlock__op *op) {
    node_op *ask = DLOCK__CONTAINER_OF(op, node_op, op);
    dlock__client_node_of(op->client, ask->key, ask->buf, ask->size);
    dlock__op_complete(op, DLOCK_OK);
}

const char *redis_lib_node_of(dlock_client *c, const char *key, char *buf, size_t size) {
    node_op ask;
    memset(&ask, 0, sizeof(ask));
    dlock__op_init(&ask.op, c, node_start);
    ask.key = key;
    ask.buf = buf;
    ask.size = size;
    snprintf(buf, size, "unknown"); /* the client closed before the op could start */
    dlock__op_run(&ask.op);
    return buf;
}
