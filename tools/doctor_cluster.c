/* SPDX-License-Identifier: MIT */
/* doctor_cluster.c — `dlock doctor` on a Cluster: every node asked on its own.
 *
 * A Cluster is as good for dlock as its worst node: one master with allkeys-lru evicts the
 * locks of its slots, and ACL users, eviction policies and persistence are each node's own
 * configuration (nothing propagates them). So doctor reads the slot map (CLUSTER SLOTS,
 * through the Cluster client: the addresses the client itself connects to), checks that
 * every slot is served and that sharded pub/sub answers, then opens a plain client to each
 * master and each replica the map lists (dlock__cluster_node_url: the URL's credentials,
 * TLS and query, the node's address) and runs the checks of one server on it
 * (doctor_check_server, doctor_check_acl). A replica is asked what matters once a failover
 * promotes it; what only a master's clients see (its replicas and WAIT, round trip, script
 * cache) is asked of masters.
 *
 * Each check prints once, merged over the nodes (doctor_merge): its worst status, and the
 * nodes grouped by what they saw, so the line of a check that fails names the nodes that
 * fail it. A node doctor cannot connect to fails a check of its own ("connect"). Nothing
 * here writes; each node's client loads dlock's scripts as every client does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "doctor.h"

typedef struct cluster_node {
    char host[256];
    int port;
    bool replica;
    char label[300]; /* "host:port (master)" */
} cluster_node;

typedef struct node_list {
    cluster_node *v;
    size_t n, cap;
} node_list;

/* Adds the node a CLUSTER SLOTS entry [host, port, id, ...] names, unless there already or
 * without an address it can be reached at ("" or "?": its endpoint is unknown). */
static bool node_add(node_list *nodes, const redis_lib_reply *entry, bool replica) {
    if (entry->type != DLOCK__REPLY_ARRAY || entry->elements < 2 ||
        entry->element[1]->type != DLOCK__REPLY_INTEGER)
        return true;
    const char *host = entry->element[0]->str;
    int port = (int)entry->element[1]->integer;
    if (!host[0] || strcmp(host, "?") == 0 || strlen(host) >= sizeof(nodes->v->host))
        return true;
    for (size_t i = 0; i < nodes->n; i++)
        if (nodes->v[i].port == port && strcmp(nodes->v[i].host, host) == 0)
            return true;
    if (nodes->n == nodes->cap) {
        size_t cap = nodes->cap ? nodes->cap * 2 : 8;
        cluster_node *v = realloc(nodes->v, cap * sizeof(*v));
        if (!v)
            return false;
        nodes->v = v;
        nodes->cap = cap;
    }
    cluster_node *n = &nodes->v[nodes->n++];
    snprintf(n->host, sizeof(n->host), "%s", host);
    n->port = port;
    n->replica = replica;
    bool v6 = strchr(host, ':') != NULL;
    snprintf(n->label, sizeof(n->label), "%s%s%s:%d (%s)", v6 ? "[" : "", host, v6 ? "]" : "", port,
             replica ? "replica" : "master");
    return true;
}

/* The slot map's coverage as a check, and its masters and replicas into nodes. */
static void check_slots(doctor_report *r, const redis_lib_reply *slots, node_list *nodes) {
    long covered = 0, ranges = 0;
    char lonely[1024] = ""; /* the masters of ranges without a replica */
    for (size_t i = 0; i < slots->elements; i++) {
        const redis_lib_reply *range = slots->element[i];
        if (range->type != DLOCK__REPLY_ARRAY || range->elements < 3)
            continue;
        covered += range->element[1]->integer - range->element[0]->integer + 1;
        ranges++;
        for (size_t k = 2; k < range->elements; k++)
            if (!node_add(nodes, range->element[k], k > 2))
                r->out_of_memory = true;
        const redis_lib_reply *master = range->element[2];
        if (range->elements < 4 && master->type == DLOCK__REPLY_ARRAY && master->elements >= 2) {
            size_t used = strlen(lonely);
            snprintf(lonely + used, sizeof(lonely) - used, "%s%s:%lld", used ? ", " : "",
                     master->element[0]->str, master->element[1]->integer);
        }
    }
    if (covered != 16384)
        doctor_add(r, "cluster slots", DOCTOR_FAIL,
                   "assign every slot (redis-cli --cluster fix); CLUSTER INFO says which",
                   "%ld of 16384 slots served: objects in the others cannot be locked", covered);
    else if (lonely[0])
        doctor_add(r, "cluster slots", DOCTOR_WARN, "give every master a replica",
                   "16384 of 16384 slots served in %ld range(s); without a replica that has "
                   "synced (CLUSTER SLOTS lists only those): %s",
                   ranges, lonely);
    else
        doctor_add(r, "cluster slots", DOCTOR_OK, NULL,
                   "16384 of 16384 slots served in %ld range(s), each with a replica", ranges);
}

static void check_sharded_pubsub(doctor_report *r) {
    char err[256];
    redis_lib_reply *n =
        doctor_ask(r, err, sizeof(err), NULL, "PUBSUB", "SHARDNUMSUB", r->object_name, NULL);
    if (n)
        doctor_add(r, "sharded pub/sub", DOCTOR_OK, NULL,
                   "PUBSUB SHARDNUMSUB answers: dlock wakes waiters with SPUBLISH/SSUBSCRIBE on "
                   "each object's shard");
    else
        doctor_add(r, "sharded pub/sub", DOCTOR_FAIL,
                   "use Redis 7.0 or later, and grant +pubsub|shardnumsub +spublish +ssubscribe",
                   "PUBSUB SHARDNUMSUB failed: %s (waiters would not be woken)", err);
    redis_lib_reply_free(n);
}

/* The checks of one server on node, through a plain client of its own, into out. */
static void check_node(const doctor_report *r, const cluster_node *node, doctor_report *out) {
    memset(out, 0, sizeof(*out));
    out->object_name = r->object_name;
    out->acl_user = r->acl_user;
    out->url_shown = r->url_shown; /* its query: what sync_replicas asks */
    out->sharded = true;           /* the client's channels are, whatever this one's */
    out->replica_node = node->replica;
    const char *fix = "bring the node back, or check that this machine reaches the address "
                      "CLUSTER SLOTS gives (cluster-announce-ip/-hostname)";
    char *url = NULL;
    int rc = dlock__cluster_node_url(r->url, node->host, node->port, &url);
    if (rc != DLOCK_OK) {
        doctor_add(out, "connect", DOCTOR_FAIL, fix, "no URL for the node: %s", dlock_strerror(rc));
        return;
    }
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    if (cli_g.connect_timeout_ms > 0)
        o.connect_timeout_ms = cli_g.connect_timeout_ms;
    if (cli_g.timeout_ms > 0)
        o.timeout_ms = cli_g.timeout_ms;
    rc = dlock_client_new(&o, &out->c);
    dlock__free(url);
    if (rc != DLOCK_OK) {
        doctor_add(out, "connect", DOCTOR_FAIL, fix, "cannot connect: %s", dlock_last_error());
        return;
    }
    doctor_check_server(out);
    doctor_check_acl(out);
    dlock_client_free(out->c);
    out->c = NULL;
}

void doctor_check_cluster(doctor_report *r) {
    char err[256];
    redis_lib_reply *slots = doctor_ask(r, err, sizeof(err), NULL, "CLUSTER", "SLOTS", NULL);
    if (!slots || slots->type != DLOCK__REPLY_ARRAY) {
        doctor_add(r, "cluster slots", DOCTOR_WARN, "grant +cluster|slots (the client needs it)",
                   "CLUSTER SLOTS failed: %s; only the node the client reached first is checked",
                   slots ? "not an array" : err);
        redis_lib_reply_free(slots);
        check_sharded_pubsub(r);
        doctor_check_server(r);
        doctor_check_acl(r);
        return;
    }
    node_list nodes = {0};
    check_slots(r, slots, &nodes);
    redis_lib_reply_free(slots);
    check_sharded_pubsub(r);

    doctor_report *reports = calloc(nodes.n ? nodes.n : 1, sizeof(*reports));
    const char **labels = calloc(nodes.n ? nodes.n : 1, sizeof(*labels));
    if (!reports || !labels) {
        r->out_of_memory = true;
    } else {
        for (size_t i = 0; i < nodes.n; i++) {
            check_node(r, &nodes.v[i], &reports[i]);
            labels[i] = nodes.v[i].label;
        }
        doctor_merge(r, reports, labels, nodes.n);
        for (size_t i = 0; i < nodes.n; i++)
            doctor_report_free(&reports[i]);
    }
    free(reports);
    free(labels);
    free(nodes.v);
}
