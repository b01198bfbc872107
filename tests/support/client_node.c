/* SPDX-License-Identifier: MIT */
/* client_node.c — client_node.h: the core's answer, fetched on the client's loop thread. */
#include "client_node.h"

#include "core_call.h"

typedef struct question {
    const char *key;
    char *buf;
    size_t size;
} question;

static void ask(dlock_client *c, void *arg) {
    question *q = arg;
    dlock__client_node_of(c, q->key, q->buf, q->size);
}

const char *client_node_of(dlock_client *c, const char *key, char *buf, size_t size) {
    question q = {.key = key, .buf = buf, .size = size};
    on_loop(c, ask, &q);
    return buf;
}
