/* SPDX-License-Identifier: MIT */
/* cluster_fixture.h - a 6-node Redis Cluster (3 masters + 3 replicas) on loopback.
 *
 * Six redis_fixture servers on free 127.0.0.1 ports (plus their plain unix sockets for
 * admin) with cluster-enabled yes, cluster-node-timeout 1000, a free cluster bus port of
 * their own (--cluster-port; port + 10000 may not exist) and --repl-diskless-sync-delay 0,
 * joined by `redis-cli --cluster create ... --cluster-replicas 1 --cluster-yes`. Start
 * returns once every node says cluster_state:ok, knows 6 nodes and sees all 16384 slots
 * assigned, and every replica's link to its master is up. Which node ends up master is
 * redis-cli's choice: ask cluster_fixture_is_master() / cluster_fixture_node_of_slot().
 *
 * With opts.tls the nodes speak TLS only, with certificates of tls_fixture.h (made at start,
 * removed at stop): each listens on a TLS port (--tls-port, --port 0) with --tls-cluster yes
 * and --tls-replication yes, so the cluster bus, replication and MIGRATE are TLS too and the
 * slot map (CLUSTER SLOTS, MOVED) names the TLS ports. Each node keeps its plain unix socket,
 * so the admin calls below (and redis_fixture_cmd on cluster_fixture_node) work as without
 * TLS; cluster_fixture_port and cluster_fixture_hosts give the TLS ports.
 *
 * Every process is stopped by pid, also when a test fails (redis_fixture's cleanup).
 *
 * Threads: the query calls may be made from several threads; start, stop, kill and migrate
 * must not race with each other.
 */
#ifndef DLOCK_TEST_CLUSTER_FIXTURE_H
#define DLOCK_TEST_CLUSTER_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "redis_fixture.h"
#include "tls_fixture.h"

#define CLUSTER_FIXTURE_NODES 6
#define CLUSTER_FIXTURE_SLOTS 16384

typedef struct cluster_fixture_opts {
    /* --requirepass and --masterauth on every node (no whitespace or quotes). NULL or "":
     * none. */
    const char *requirepass;
    /* every node on TLS only, as described above. false: plain TCP. */
    bool tls;
} cluster_fixture_opts;

typedef struct cluster_fixture cluster_fixture;

/* Starts and waits as described above (up to 20 s x test_slack_factor()). `o` NULL:
 * defaults. 0 and the fixture in *out, or -1 with a message on stderr, leaving *out untouched
 * and nothing running. */
int cluster_fixture_start(const cluster_fixture_opts *o, cluster_fixture **out);
/* Stops every node by pid, removes their directories, frees. NULL is a no-op. */
void cluster_fixture_stop(cluster_fixture *f);

/* "127.0.0.1:P0,127.0.0.1:P1,...,127.0.0.1:P5": every node, for a seed list. Owned by `f`. */
const char *cluster_fixture_hosts(const cluster_fixture *f);

/* Node i (0..5) for admin commands, pause/resume, kill/restart, pid. Owned by `f`. NULL if
 * out of range. */
redis_fixture *cluster_fixture_node(cluster_fixture *f, int i);
/* Node i's client port on 127.0.0.1, -1 if out of range. */
int cluster_fixture_port(const cluster_fixture *f, int i);
/* The certificates the nodes use (CA, server, client, wrong CA: tls_fixture.h), NULL unless
 * opts.tls. Owned by `f`. */
tls_certs *cluster_fixture_certs(cluster_fixture *f);
/* Node i's 40-character cluster id (CLUSTER MYID at start). Owned by `f`. */
const char *cluster_fixture_node_id(const cluster_fixture *f, int i);
/* Node i's role as node i itself says (ROLE): true for a master. false if it does not answer. */
bool cluster_fixture_is_master(cluster_fixture *f, int i);

/* CLUSTER KEYSLOT `key` (asked of a running node), or -1. */
int cluster_fixture_slot_of_key(cluster_fixture *f, const char *key);
/* The node that serves `slot` according to the first running node that answers (CLUSTER
 * NODES), or -1. */
int cluster_fixture_node_of_slot(cluster_fixture *f, int slot);

/* The node that serves `key`'s slot (the two calls above), or -1. */
int cluster_fixture_node_of_key(cluster_fixture *f, const char *key);
/* Whether node i has a subscriber on some shard channel of the object `name` (PUBSUB
 * SHARDCHANNELS *{name}*: Redisson's channels carry "{name}"). */
bool cluster_fixture_shard_subscribed(cluster_fixture *f, int i, const char *name);

/* SIGKILLs the master of `slot` (redis_fixture_kill; redis_fixture_restart brings it back
 * and it rejoins as a replica) and waits until every running node names the same other node
 * as the slot's owner, that node's ROLE is master, and every running node says
 * cluster_state:ok (up to 20 s x slack). Returns the new owner's index, or -1 with a message
 * on stderr. */
int cluster_fixture_kill_master_of_slot(cluster_fixture *f, int slot);
/* The two halves of it, so that a test can act from the moment of the kill:
 * kill_master SIGKILLs the master of `slot` and returns its index at once (-1 with a message
 * on stderr); wait_new_master waits as above for an owner other than `old` and returns it
 * (-1 with a message on stderr). */
int cluster_fixture_kill_master(cluster_fixture *f, int slot);
int cluster_fixture_wait_new_master(cluster_fixture *f, int slot, int old);

/* Moves `slot` to master `to` in two halves, so that a test can act in between:
 * begin: CLUSTER SETSLOT slot IMPORTING on `to`, MIGRATING on the owner (the owner then
 *        answers -ASK for keys it no longer has);
 * finish: MIGRATE every key of the slot to `to`, then CLUSTER SETSLOT slot NODE `to` on `to`,
 *        the old owner and every other master, and waits until every running node names
 *        `to` as the owner (up to 10 s x slack).
 * cluster_fixture_migrate_slot does both. 0, or -1 with a message on stderr. */
int cluster_fixture_migrate_slot_begin(cluster_fixture *f, int slot, int to);
int cluster_fixture_migrate_slot_finish(cluster_fixture *f, int slot, int to);
int cluster_fixture_migrate_slot(cluster_fixture *f, int slot, int to);

/* Waits until every running node says cluster_state:ok (up to timeout_ms x slack). 0 or -1. */
int cluster_fixture_wait_ok(cluster_fixture *f, int64_t timeout_ms);

#endif /* DLOCK_TEST_CLUSTER_FIXTURE_H */
