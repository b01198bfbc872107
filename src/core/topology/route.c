/* SPDX-License-Identifier: MIT */
/* route.c — which connection a command goes to, and which subscriber a channel.
 *
 * On one Redis (a plain URL, or the master a Sentinel names) every command goes through the
 * client's command connection and every channel through its subscriber. In a Cluster each
 * goes to the master of its slot (cluster.c): a script's slot is its first key's (every
 * script of the library keeps all its keys in one slot, as Redisson's names do; the
 * watchdog's renewal batches are grouped by node and declare only their first key, since
 * Redis refuses declared keys of several slots: DLOCK__CMD_FIRST_KEY_ONLY); a
 * plain command's is its first argument's (HGETALL key, PTTL key), or its second's after
 * a subcommand (PUBSUB SHARDNUMSUB channel, OBJECT ENCODING key); a command without one
 * (PING, TIME) goes to any master; a channel's slot is its own (sharded pub/sub).
 *
 * It also answers what the topology allows (dlock_int.h), so that the floors above and the
 * primitives ask a capability, never "is this a Cluster". */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "topology/cluster.h"

static int slot_of(const dlock_client *c, const char *key, size_t len) {
    return DLOCK__TOPOLOGY(c)->cluster ? dlock__slot_of(key, len) : -1;
}

static dlock__conn *conn_for(dlock_client *c, int slot) {
    return DLOCK__TOPOLOGY(c)->cluster ? dlock__cluster_conn(DLOCK__TOPOLOGY(c)->cluster, slot)
                                       : &DLOCK__NET(c)->conn;
}

/* Where a plain command's key is: after its subcommand for the container commands. */
static int key_index(const char *const *argv, const size_t *argvlen) {
    static const char *const with_subcommand[] = {"PUBSUB", "OBJECT", "MEMORY"};
    for (size_t i = 0; i < sizeof(with_subcommand) / sizeof(*with_subcommand); i++)
        if (argvlen[0] == strlen(with_subcommand[i]) &&
            strncasecmp(argv[0], with_subcommand[i], argvlen[0]) == 0)
            return 2;
    return 1;
}

int dlock__command(dlock_client *c, unsigned flags, dlock__reply_fn fn, void *arg, int argc,
                   const char *const *argv, const size_t *argvlen) {
    if (argc < 1)
        return DLOCK_EINVAL;
    int key = key_index(argv, argvlen);
    dlock__cmd_request req = {.script = -1,
                              .slot = argc > key ? slot_of(c, argv[key], argvlen[key]) : -1,
                              .flags = flags,
                              .fn = fn,
                              .deadline_ms = INT64_MAX,
                              .arg = arg};
    if (DLOCK__TOPOLOGY(c)->cluster)
        return dlock__cluster_enqueue(DLOCK__TOPOLOGY(c)->cluster, &req, argc, argv, argvlen);
    return dlock__conn_enqueue(&DLOCK__NET(c)->conn, &req, argc, argv, argvlen);
}

static int script_request(dlock_client *c, dlock__cmd_request *req, int nargs,
                          const char *const *args, const size_t *argslen) {
    if ((int)req->script < 0 || req->script >= DLOCK__SCRIPT_COUNT || req->nkeys < 0 ||
        req->nkeys > nargs)
        return DLOCK_EINVAL;
    req->slot = req->nkeys > 0 ? slot_of(c, args[0], argslen[0]) : -1;
    if (DLOCK__TOPOLOGY(c)->cluster)
        return dlock__cluster_enqueue(DLOCK__TOPOLOGY(c)->cluster, req, nargs, args, argslen);
    return dlock__conn_enqueue(&DLOCK__NET(c)->conn, req, nargs, args, argslen);
}

int dlock__script(dlock_client *c, enum dlock__script_id script, unsigned flags, dlock__reply_fn fn,
                  void *arg, int nkeys, int nargs, const char *const *args, const size_t *argslen) {
    dlock__cmd_request req = {.script = (int)script,
                              .nkeys = nkeys,
                              .flags = flags,
                              .fn = fn,
                              .deadline_ms = INT64_MAX,
                              .arg = arg};
    return script_request(c, &req, nargs, args, argslen);
}

int dlock__script_acked(dlock_client *c, enum dlock__script_id script, unsigned flags,
                        int64_t deadline_ms, dlock__acked_fn fn, void *arg, int nkeys, int nargs,
                        const char *const *args, const size_t *argslen) {
    if (!fn)
        return DLOCK_EINVAL;
    dlock__cmd_request req = {.script = (int)script,
                              .nkeys = nkeys,
                              .flags = flags,
                              .acked_fn = fn,
                              .deadline_ms = deadline_ms,
                              .arg = arg};
    return script_request(c, &req, nargs, args, argslen);
}

const void *dlock__command_node(dlock_client *c, const char *key, size_t len) {
    return conn_for(c, slot_of(c, key, len));
}

int dlock__listen(dlock_client *c, const char *channel, dlock__listener *l) {
    dlock__pubsub *ps = &DLOCK__NET(c)->pubsub;
    if (DLOCK__TOPOLOGY(c)->cluster &&
        !(ps = dlock__cluster_sub(DLOCK__TOPOLOGY(c)->cluster,
                                  slot_of(c, channel, strlen(channel)))))
        return DLOCK_ENOMEM;
    return dlock__pubsub_listen(ps, channel, l);
}

const char *dlock__client_node_of(dlock_client *c, const char *key, char *buf, size_t size) {
    if (DLOCK__TOPOLOGY(c)->cluster)
        return dlock__cluster_node_of(DLOCK__TOPOLOGY(c)->cluster, slot_of(c, key, strlen(key)),
                                      buf, size);
    const dlock__link *link = &DLOCK__NET(c)->conn.link;
    if (link->state != LINK_READY || !link->target) {
        snprintf(buf, size, "not connected");
        return buf;
    }
    return dlock__endpoint_describe(link->target, buf, size);
}

/* ---- what the topology allows ---------------------------------------------------------- */

bool dlock__client_absent_keys_are_free(const dlock_client *c) {
    return DLOCK__TOPOLOGY(c)->cluster == NULL;
}

bool dlock__client_channels_sharded(const dlock_client *c) {
    return DLOCK__TOPOLOGY(c)->cluster != NULL;
}

bool dlock__client_keys_move(const dlock_client *c) {
    return DLOCK__TOPOLOGY(c)->cluster != NULL;
}
