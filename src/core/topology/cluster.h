/* SPDX-License-Identifier: MIT */
/* cluster.h — Redis Cluster: the URL that names seed nodes (url_cluster.c), the slot of a
 * key (slot.c) and the topology (cluster.c): the slot map, a command connection per master
 * and, on first wait, a shard subscriber per master. For the topology floor and above.
 *
 * The rest of the core sees a cluster through three doors: route.c asks it which command
 * connection or subscriber serves a slot; conn.c hands it a command the node did not run
 * (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, READONLY); the client gets the outcome of the first
 * slot map and hears when a failover moved slots (every lease is then confirmed at once). */
#ifndef DLOCK_CLUSTER_H
#define DLOCK_CLUSTER_H

#include "topology/topology.h"

/* ---- slots (slot.c) ------------------------------------------------------------------------ */

#define DLOCK__CLUSTER_SLOTS 16384

/* CRC16/XMODEM of buf, the checksum the cluster hashes keys with. */
uint16_t dlock__crc16(const char *buf, size_t len);
/* The slot of key (or of a shard channel): CRC16 of its hash tag — the bytes between the
 * first '{' and the next '}', when there is at least one — else of the whole key. */
int dlock__slot_of(const char *key, size_t len);

/* ---- the URL (url_cluster.c) --------------------------------------------------------------- */

/*   redis-cluster://[user:password@]host[:port][,host[:port]...][?query]
 *   rediss-cluster://...   over TLS (the TLS query of rediss://)
 *
 * Each seed is read as redis[s]://[user:password@]host[:port][?query] by dlock__url_parse,
 * so every rule of a plain URL holds; a cluster has one database, so there is no /db. */
typedef struct dlock__cluster_url {
    /* every node's settings: credentials, TLS, sync_replicas; host NULL and port 0 (each
     * node's address comes from the slot map) */
    dlock__endpoint data;
    dlock__endpoint *seeds; /* count of them, in the URL's order */
    size_t count;
} dlock__cluster_url;

/* True when url has the scheme redis-cluster:// or rediss-cluster://. */
bool dlock__url_is_cluster(const char *url);
/* Parses a cluster URL into out (strings owned by out). DLOCK_EINVAL with the reason in
 * err (never a password), DLOCK_ENOMEM; out is then empty. */
int dlock__cluster_url_parse(const char *url, dlock__cluster_url *out, char *err, size_t errlen);
void dlock__cluster_url_free(dlock__cluster_url *u);
/* ---- the topology (cluster.c) -------------------------------------------------------------- */

typedef struct dlock__cluster dlock__cluster;

/* What the client hears of its cluster (loop thread). */
typedef struct dlock__cluster_hooks {
    /* The first slot map was read (DLOCK_OK), or every seed failed (its error). Once. */
    void (*outcome)(dlock_client *c, int status);
    /* A map changed which node serves some slots (a failover, a resharding). */
    void (*moved)(dlock_client *c);
} dlock__cluster_hooks;

/* A topology for the seeds of url; takes what url owns (url is left empty, also on
 * failure: DLOCK_ENOMEM). The nodes' settings are the client's endpoint, into which the
 * client moves url->data first. */
int dlock__cluster_new(dlock_client *c, dlock__cluster_url *url, const dlock__cluster_hooks *hooks,
                       dlock__cluster **out);
/* Asks a seed for the slot map (loop thread). */
void dlock__cluster_start(dlock__cluster *cl);
/* Closes every connection, failing their commands with DLOCK_ECANCELED (loop thread). */
void dlock__cluster_close(dlock__cluster *cl);
void dlock__cluster_free(dlock__cluster *cl); /* after close; NULL: no-op */

/* Queues a new command (dlock__command's contract) for the master of req->slot (-1: any
 * master), connecting to it if nothing did yet; a slot no master serves parks it until one
 * does or it gives up (DLOCK_ECONN, the op's text naming the slot). DLOCK_ECLOSED, ENOMEM. */
int dlock__cluster_enqueue(dlock__cluster *cl, const dlock__cmd_request *req, int argc,
                           const char *const *argv, const size_t *argvlen);
/* The command connection of the master that serves slot (-1: any master), or for a slot
 * none serves some node's: what the watchdog groups renewals by. Never NULL on an open
 * cluster. */
dlock__conn *dlock__cluster_conn(dlock__cluster *cl, int slot);
/* The shard subscriber of that node, made on first use (its channels move with their
 * slots, pubsub.c). NULL on ENOMEM. */
dlock__pubsub *dlock__cluster_sub(dlock__cluster *cl, int slot);
/* The first seed's "host:port" (the client's endpoint key). */
const char *dlock__cluster_seed(const dlock__cluster *cl);
/* Why the latest seed or node failed, for dlock_client_new's error text. */
const char *dlock__cluster_error_text(const dlock__cluster *cl);
/* The address of the master that serves slot, "not connected" before the first map, "no
 * master (slot N)" while the map has none for it. */
const char *dlock__cluster_node_of(dlock__cluster *cl, int slot, char *buf, size_t size);

#endif
