/* SPDX-License-Identifier: MIT */
/* redis_lib.h — one Redis command through the library's own transport, run from the tool's
 * thread: "send this, wait, give me a copy of the reply".
 *
 * `dlock inspect` and `dlock release --force` read keys with plain commands. Sending them
 * on a dlock_client's command connection (not on a connection of the tool's own) means they
 * reach Redis however the client does: plain or TLS, a unix socket, the master the
 * sentinels name, the node of the key's slot in a cluster, with the client's credentials
 * and reconnects. The tool never sees a URL's parts. */
#ifndef DLOCK_CLI_REDIS_LIB_H
#define DLOCK_CLI_REDIS_LIB_H

#include <stddef.h>

#include "dlock.h"
#include "dlock_int.h" /* DLOCK__REPLY_*: a reply's type */

/* A reply, copied out of the loop thread's callback (where the library's reply lives). */
typedef struct redis_lib_reply {
    int type; /* DLOCK__REPLY_* (src/core/include/dlock_int.h): STRING, ARRAY, INTEGER... */
    long long integer; /* INTEGER */
    char *str;         /* STRING / STATUS text, NUL-terminated; "" for the other types */
    size_t len;
    size_t elements;                  /* ARRAY */
    struct redis_lib_reply **element; /* ARRAY: elements[i] */
} redis_lib_reply;

/* Sends argv (argc words, binary-safe C strings) on c's command connection and waits for
 * the answer. argv[1] is the key the command is about (a cluster routes a command by it),
 * so a command about an object has the object's key there. Every command the tool sends is
 * a read: it is resent after a reconnect.
 * DLOCK_OK and *out (free it with redis_lib_reply_free), never an error reply; else the
 * library's DLOCK_E* code with dlock_last_error() set (for an error reply: the server's
 * text), and *out untouched. Blocks; any thread but c's loop thread. */
int redis_lib_call(dlock_client *c, int argc, const char *const *argv, redis_lib_reply **out);

/* NULL is a no-op. */
void redis_lib_reply_free(redis_lib_reply *r);

/* Where c sends the commands on key now ("127.0.0.1:6380", "unix socket /run/redis.sock",
 * "10.0.0.7:6379 (TLS)"): the node that serves key, as the library routes it. Never
 * credentials. Returns buf. Blocks; any thread but c's loop thread. */
const char *redis_lib_node_of(dlock_client *c, const char *key, char *buf, size_t size);

#endif
