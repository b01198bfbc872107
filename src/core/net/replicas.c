/* SPDX-License-Identifier: MIT */
/* replicas.c — how many replicas a write must reach (?sync_replicas=auto|0|N).
 *
 * Every write of lock, semaphore, permit or latch state is acknowledged by a WAIT <replicas>
 * <timeout> on its connection, one WAIT for a batch of writes (conn.c sends it; script.c
 * says which scripts write). This file decides <replicas> and keeps what it is made of, per
 * command connection:
 *
 *   - N (sync_replicas=N): N, whatever the master says;
 *   - 0: no WAIT at all;
 *   - auto (the default): the most replicas this master has been seen with since the client
 *     connected to it — ROLE in every handshake, ROLE again every DLOCK__ROLE_CHECK_MS
 *     (conn.c), and every WAIT's answer raise it; nothing lowers it but a connection to
 *     another master. Never "how many now": after a forced failover Redis 7.0 leaves the old
 *     master writable with 0 replicas for 8-18 s, and a client still on it that asked "how
 *     many now" would send WAIT 0, succeed, and make a second holder. So a master that lost
 *     its replicas makes acquisitions fail (safely) until the client moves; a master never
 *     seen with a replica (a standalone server) gets no WAIT.
 *
 * ROLE needs the ACL's +role (@admin): a user without it counts no replicas under auto, and
 * the log says so once (sync_replicas=N needs no ROLE). */
#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "net/net.h"

static bool is_auto(const dlock__endpoint *ep) {
    return ep->sync_replicas == DLOCK__SYNC_AUTO;
}

int dlock__replicas_asked(const dlock__replicas *r, const dlock__endpoint *ep) {
    return is_auto(ep) ? r->seen : ep->sync_replicas;
}

void dlock__replicas_acked(dlock__replicas *r, long long acked) {
    if (acked > r->seen && acked <= DLOCK__REPLICAS_MAX)
        r->seen = (int)acked;
}

bool dlock__replicas_wait_answer(dlock__replicas *r, const dlock__reply *reply, int *acked) {
    /* Never "less than asked" as a bound: WAIT counts every replica that has the write, and
     * a master may have more than a write asks for (sync_replicas=N, or a replica that
     * joined since ROLE). A count outside 0..DLOCK__REPLICAS_MAX is no count (2^63-1 would
     * be every replica acknowledging, -5 "only -5 of 1"). */
    if (reply->type != REDIS_REPLY_INTEGER || reply->integer < 0 ||
        reply->integer > DLOCK__REPLICAS_MAX)
        return false;
    *acked = (int)reply->integer;
    dlock__replicas_acked(r, reply->integer);
    return true;
}

/* The replicas a ROLE reply of a master lists: ["master", offset, [[ip, port, offset]...]];
 * -1 for another role or shape (a replica, a sentinel: nothing to count). */
static long long master_replicas(const redisReply *r) {
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3)
        return -1;
    const redisReply *role = r->element[0], *list = r->element[2];
    if (role->type != REDIS_REPLY_STRING || strcmp(role->str, "master") != 0 ||
        list->type != REDIS_REPLY_ARRAY)
        return -1;
    return (long long)list->elements;
}

void dlock__replicas_role(dlock__replicas *r, dlock_client *c, const dlock__reply *reply) {
    if (reply && reply->type == REDIS_REPLY_ERROR) {
        if (!r->role_refused)
            dlock__log(c, DLOCK_LOG_WARN,
                       "ROLE refused (%s): sync_replicas=auto cannot count the master's "
                       "replicas and sends no WAIT; grant +role or set sync_replicas=N",
                       reply->str);
        r->role_refused = strncmp(reply->str, "NOPERM", 6) == 0;
        return;
    }
    if (reply)
        dlock__replicas_acked(r, master_replicas(reply));
}

static void on_handshake_role(dlock__link *link, const dlock__reply *reply, void *arg) {
    dlock__replicas_role(arg, link->client, reply);
    dlock__link_handshake_step(link); /* a refused ROLE does not refuse the connection */
}

int dlock__replicas_probe(dlock__link *link, dlock__replicas *r) {
    if (!is_auto(&DLOCK__NET(link->client)->endpoint))
        return 0;
    char master[sizeof(r->master)];
    dlock__endpoint_describe(link->target, master, sizeof(master));
    if (strcmp(master, r->master) != 0) { /* another master: what we saw was of the old one */
        snprintf(r->master, sizeof(r->master), "%s", master);
        r->seen = 0;
    }
    const char *argv[] = {"ROLE"};
    size_t lens[] = {4};
    return dlock__link_send(link, 1, argv, lens, on_handshake_role, r) == DLOCK_OK ? 1 : 0;
}

bool dlock__replicas_check_due(const dlock__replicas *r, const dlock__endpoint *ep) {
    return is_auto(ep) && !r->role_refused;
}
