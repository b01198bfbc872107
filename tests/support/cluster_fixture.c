/* SPDX-License-Identifier: MIT */
/* cluster_fixture.c - six cluster nodes started as redis_fixture servers, joined by
 * `redis-cli --cluster create`, watched through CLUSTER INFO / CLUSTER NODES.
 *
 * Data owned here: struct cluster_fixture (the nodes, their ports and ids, the seed list).
 * The nodes are tracked by redis_fixture for cleanup at exit.
 */
#include "cluster_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "topology_util.h"

#define NODE_START_ATTEMPTS 5
#define READY_TIMEOUT_MS 20000
#define FAILOVER_TIMEOUT_MS 20000
#define MIGRATE_TIMEOUT_MS 10000
#define POLL_MS 20
#define MIGRATE_BATCH 100

struct cluster_fixture {
    char *requirepass;
    tls_certs *certs; /* NULL: plain TCP */
    redis_fixture *nodes[CLUSTER_FIXTURE_NODES];
    int ports[CLUSTER_FIXTURE_NODES];
    char ids[CLUSTER_FIXTURE_NODES][41];
    char *hosts;
    char *log; /* redis-cli's output, in node 0's directory */
};

static bool in_range(const cluster_fixture *f, int i) {
    return f != NULL && i >= 0 && i < CLUSTER_FIXTURE_NODES;
}

/* ---- nodes --------------------------------------------------------------------------------- */

/* Node i on TLS only (tls_fixture picks and retries its TLS port), or on plain TCP. */
static int start_node_on(cluster_fixture *f, int i, const char *const *args) {
    redis_fixture_opts o = {
        .tcp = f->certs == NULL, .requirepass = f->requirepass, .extra_args = args};
    if (f->certs != NULL)
        return tls_certs_start_server(f->certs, "no", &o, &f->nodes[i], &f->ports[i]);
    if (redis_fixture_start(&o, &f->nodes[i]) != 0)
        return -1;
    f->ports[i] = redis_fixture_port(f->nodes[i]);
    return 0;
}

#define NODE_ARGS_MAX 20

/* The redis-server words of a cluster node with its bus on `bus_port`, in `args`. */
static void node_args(const cluster_fixture *f, const char *bus_port,
                      const char *args[NODE_ARGS_MAX]) {
    size_t n = 0;
    const char *cluster[] = {"--cluster-enabled",
                             "yes",
                             "--cluster-config-file",
                             "nodes.conf", /* in its own --dir */
                             "--cluster-node-timeout",
                             "1000",
                             "--cluster-port",
                             bus_port,
                             "--repl-diskless-sync-delay",
                             "0"};
    for (size_t k = 0; k < sizeof cluster / sizeof cluster[0]; k++)
        args[n++] = cluster[k];
    if (f->certs != NULL) { /* the bus and replication too; the map then names TLS ports */
        const char *tls[] = {"--tls-cluster", "yes", "--tls-replication", "yes"};
        for (size_t k = 0; k < sizeof tls / sizeof tls[0]; k++)
            args[n++] = tls[k];
    }
    if (f->requirepass != NULL) {
        args[n++] = "--masterauth";
        args[n++] = f->requirepass;
    }
    args[n] = NULL;
}

static int start_node(cluster_fixture *f, int i) {
    for (int attempt = 1; attempt <= NODE_START_ATTEMPTS; attempt++) {
        char bus_port[16];
        snprintf(bus_port, sizeof bus_port, "%d", topo_free_port());
        const char *args[NODE_ARGS_MAX];
        node_args(f, bus_port, args);
        if (start_node_on(f, i, args) == 0)
            return 0;
        fprintf(stderr, "cluster_fixture: node %d did not start (bus port %s), retrying\n", i,
                bus_port);
    }
    return -1;
}

/* CLUSTER `sub` on node i: a malloc'd copy of the string reply, NULL if none. */
static char *cluster_str(cluster_fixture *f, int i, const char *sub) {
    if (!redis_fixture_running(f->nodes[i]))
        return NULL;
    redisReply *r = redis_fixture_cmd(f->nodes[i], "CLUSTER %s", sub);
    char *s = (r != NULL && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS))
                  ? topo_asprintf("%s", r->str)
                  : NULL;
    if (r != NULL)
        freeReplyObject(r);
    return s;
}

static char *cluster_info(cluster_fixture *f, int i, const char *field) {
    char *info = cluster_str(f, i, "INFO");
    char *v = info ? topo_info_field(info, field) : NULL;
    free(info);
    return v;
}

static bool info_is(cluster_fixture *f, int i, const char *field, const char *expected) {
    char *v = cluster_info(f, i, field);
    bool same = v != NULL && strcmp(v, expected) == 0;
    free(v);
    return same;
}

bool cluster_fixture_is_master(cluster_fixture *f, int i) {
    if (!in_range(f, i) || !redis_fixture_running(f->nodes[i]))
        return false;
    redisReply *r = redis_fixture_cmd(f->nodes[i], "ROLE");
    bool master = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                  r->element[0]->type == REDIS_REPLY_STRING &&
                  strcmp(r->element[0]->str, "master") == 0;
    if (r != NULL)
        freeReplyObject(r);
    return master;
}

/* A replica whose link to its master is up; a master counts as in sync. */
static bool node_in_sync(cluster_fixture *f, int i) {
    if (cluster_fixture_is_master(f, i))
        return true;
    redisReply *r = redis_fixture_cmd(f->nodes[i], "INFO replication");
    char *link = (r != NULL && r->type == REDIS_REPLY_STRING)
                     ? topo_info_field(r->str, "master_link_status")
                     : NULL;
    if (r != NULL)
        freeReplyObject(r);
    bool up = link != NULL && strcmp(link, "up") == 0;
    free(link);
    return up;
}

/* ---- CLUSTER NODES ------------------------------------------------------------------------- */

/* The index of the node whose "ip:port@cport" is `addr`, -1 if none. */
static int index_of_addr(const cluster_fixture *f, const char *addr) {
    const char *colon = strrchr(addr, ':');
    int port = colon ? atoi(colon + 1) : -1;
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++) {
        if (f->ports[i] == port)
            return i;
    }
    return -1;
}

/* Whether a slot token of CLUSTER NODES ("5", "0-5460"; "[...]" marks a migration, not
 * ownership) covers `slot`. */
static bool token_covers(const char *token, int slot) {
    if (token[0] == '[')
        return false;
    char *dash = NULL;
    long lo = strtol(token, &dash, 10);
    long hi = (*dash == '-') ? strtol(dash + 1, NULL, 10) : lo;
    return slot >= lo && slot <= hi;
}

/* The owner of `slot` in node v's CLUSTER NODES, -1 if v does not answer or knows none. */
static int owner_per_node(cluster_fixture *f, int v, int slot) {
    char *text = cluster_str(f, v, "NODES");
    int owner = -1;
    for (char *save = NULL, *line = text ? strtok_r(text, "\n", &save) : NULL;
         line != NULL && owner < 0; line = strtok_r(NULL, "\n", &save)) {
        char *fields = NULL;
        char *id = strtok_r(line, " ", &fields);
        char *addr = strtok_r(NULL, " ", &fields);
        for (int skip = 0; id && addr && skip < 6; skip++) /* flags ... link-state */
            strtok_r(NULL, " ", &fields);
        for (char *tok = strtok_r(NULL, " ", &fields); addr && tok;
             tok = strtok_r(NULL, " ", &fields)) {
            if (token_covers(tok, slot)) {
                owner = index_of_addr(f, addr);
                break;
            }
        }
    }
    free(text);
    return owner;
}

int cluster_fixture_node_of_slot(cluster_fixture *f, int slot) {
    if (f == NULL || slot < 0 || slot >= CLUSTER_FIXTURE_SLOTS)
        return -1;
    for (int v = 0; v < CLUSTER_FIXTURE_NODES; v++) {
        int owner = owner_per_node(f, v, slot);
        if (owner >= 0)
            return owner;
    }
    return -1;
}

/* Every running node names `owner` (any node but `not` when owner is -1) for `slot`.
 * Returns the owner they agree on, or -1. */
static int agreed_owner(cluster_fixture *f, int slot, int not ) {
    int agreed = -1;
    for (int v = 0; v < CLUSTER_FIXTURE_NODES; v++) {
        if (!redis_fixture_running(f->nodes[v]))
            continue;
        int owner = owner_per_node(f, v, slot);
        if (owner < 0 || owner == not || (agreed >= 0 && owner != agreed))
            return -1;
        agreed = owner;
    }
    return agreed;
}

int cluster_fixture_slot_of_key(cluster_fixture *f, const char *key) {
    for (int i = 0; f != NULL && i < CLUSTER_FIXTURE_NODES; i++) {
        if (!redis_fixture_running(f->nodes[i]))
            continue;
        long long slot = redis_fixture_int(f->nodes[i], "CLUSTER KEYSLOT %s", key);
        return (slot >= 0 && slot < CLUSTER_FIXTURE_SLOTS) ? (int)slot : -1;
    }
    return -1;
}

int cluster_fixture_node_of_key(cluster_fixture *f, const char *key) {
    return cluster_fixture_node_of_slot(f, cluster_fixture_slot_of_key(f, key));
}

bool cluster_fixture_shard_subscribed(cluster_fixture *f, int i, const char *name) {
    if (!in_range(f, i) || !redis_fixture_running(f->nodes[i]))
        return false;
    redisReply *r = redis_fixture_cmd(f->nodes[i], "PUBSUB SHARDCHANNELS *{%s}*", name);
    bool yes = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0;
    if (r != NULL)
        freeReplyObject(r);
    return yes;
}

/* ---- waiting ------------------------------------------------------------------------------- */

static bool node_ready(cluster_fixture *f, int i) {
    char slots[16];
    snprintf(slots, sizeof slots, "%d", CLUSTER_FIXTURE_SLOTS);
    return info_is(f, i, "cluster_state", "ok") && info_is(f, i, "cluster_known_nodes", "6") &&
           info_is(f, i, "cluster_slots_assigned", slots) && node_in_sync(f, i);
}

static bool all_running_ok(cluster_fixture *f) {
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++) {
        if (redis_fixture_running(f->nodes[i]) && !info_is(f, i, "cluster_state", "ok"))
            return false;
    }
    return true;
}

int cluster_fixture_wait_ok(cluster_fixture *f, int64_t timeout_ms) {
    int64_t deadline = test_now_ms() + test_slack_ms(timeout_ms);
    while (!all_running_ok(f)) {
        if (test_now_ms() >= deadline) {
            fprintf(stderr, "cluster_fixture: cluster_state not ok on every node in time\n");
            return -1;
        }
        test_sleep_ms(POLL_MS);
    }
    return 0;
}

/* ---- start and stop ------------------------------------------------------------------------ */

static int create_cluster(cluster_fixture *f) {
    char *argv[CLUSTER_FIXTURE_NODES + 13];
    char addrs[CLUSTER_FIXTURE_NODES][32];
    size_t n = 0;
    argv[n++] = "redis-cli";
    if (f->requirepass != NULL) {
        argv[n++] = "--no-auth-warning";
        argv[n++] = "-a";
        argv[n++] = f->requirepass;
    }
    if (f->certs != NULL) {
        argv[n++] = "--tls";
        argv[n++] = "--cacert";
        argv[n++] = (char *)tls_certs_ca(f->certs);
    }
    argv[n++] = "--cluster";
    argv[n++] = "create";
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++) {
        snprintf(addrs[i], sizeof addrs[i], "127.0.0.1:%d", f->ports[i]);
        argv[n++] = addrs[i];
    }
    argv[n++] = "--cluster-replicas";
    argv[n++] = "1";
    argv[n++] = "--cluster-yes";
    argv[n] = NULL;
    int rc = topo_run(argv, f->log, NULL);
    if (rc != 0) {
        fprintf(stderr, "cluster_fixture: redis-cli --cluster create exited %d\n", rc);
        topo_print_log_tail(f->log, 30);
        return -1;
    }
    return 0;
}

static int bring_up(cluster_fixture *f) {
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++) {
        if (start_node(f, i) != 0)
            return -1;
        char *id = cluster_str(f, i, "MYID");
        if (id == NULL || strlen(id) != 40) {
            free(id);
            fprintf(stderr, "cluster_fixture: node %d has no cluster id\n", i);
            return -1;
        }
        memcpy(f->ids[i], id, 41);
        free(id);
    }
    f->log = topo_asprintf("%s/cluster-create.log", redis_fixture_dir(f->nodes[0]));
    if (create_cluster(f) != 0)
        return -1;
    int64_t deadline = test_now_ms() + test_slack_ms(READY_TIMEOUT_MS);
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++) {
        while (!node_ready(f, i)) {
            if (test_now_ms() >= deadline) {
                fprintf(stderr, "cluster_fixture: node %d (port %d) never became ready\n", i,
                        f->ports[i]);
                return -1;
            }
            test_sleep_ms(POLL_MS);
        }
    }
    char *hosts = topo_asprintf("%s", "");
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++) {
        char *more = topo_asprintf("%s%s127.0.0.1:%d", hosts, i ? "," : "", f->ports[i]);
        free(hosts);
        hosts = more;
    }
    f->hosts = hosts;
    return 0;
}

int cluster_fixture_start(const cluster_fixture_opts *o, cluster_fixture **out) {
    cluster_fixture *f = calloc(1, sizeof *f);
    if (f == NULL)
        abort();
    if (o != NULL && o->requirepass != NULL && *o->requirepass != '\0')
        f->requirepass = topo_asprintf("%s", o->requirepass);
    if ((o != NULL && o->tls && tls_certs_make(&f->certs) != 0) || bring_up(f) != 0) {
        fprintf(stderr, "cluster_fixture: could not start the cluster\n");
        cluster_fixture_stop(f);
        return -1;
    }
    *out = f;
    return 0;
}

void cluster_fixture_stop(cluster_fixture *f) {
    if (f == NULL)
        return;
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++)
        redis_fixture_stop(f->nodes[i]);
    tls_certs_free(f->certs);
    free(f->requirepass);
    free(f->hosts);
    free(f->log);
    free(f);
}

/* ---- accessors ----------------------------------------------------------------------------- */

const char *cluster_fixture_hosts(const cluster_fixture *f) {
    return f ? f->hosts : NULL;
}

redis_fixture *cluster_fixture_node(cluster_fixture *f, int i) {
    return in_range(f, i) ? f->nodes[i] : NULL;
}

tls_certs *cluster_fixture_certs(cluster_fixture *f) {
    return f ? f->certs : NULL;
}

int cluster_fixture_port(const cluster_fixture *f, int i) {
    return in_range(f, i) ? f->ports[i] : -1;
}

const char *cluster_fixture_node_id(const cluster_fixture *f, int i) {
    return in_range(f, i) ? f->ids[i] : NULL;
}

/* ---- failover ------------------------------------------------------------------------------ */

int cluster_fixture_kill_master(cluster_fixture *f, int slot) {
    int old = cluster_fixture_node_of_slot(f, slot);
    if (old < 0 || redis_fixture_kill(f->nodes[old]) != 0) {
        fprintf(stderr, "cluster_fixture: no master of slot %d to kill\n", slot);
        return -1;
    }
    return old;
}

int cluster_fixture_wait_new_master(cluster_fixture *f, int slot, int old) {
    int64_t deadline = test_now_ms() + test_slack_ms(FAILOVER_TIMEOUT_MS);
    for (;;) {
        int owner = agreed_owner(f, slot, old);
        if (owner >= 0 && cluster_fixture_is_master(f, owner) && all_running_ok(f))
            return owner;
        if (test_now_ms() >= deadline) {
            fprintf(stderr, "cluster_fixture: slot %d had no new master in time\n", slot);
            return -1;
        }
        test_sleep_ms(POLL_MS);
    }
}

int cluster_fixture_kill_master_of_slot(cluster_fixture *f, int slot) {
    int old = cluster_fixture_kill_master(f, slot);
    return old < 0 ? -1 : cluster_fixture_wait_new_master(f, slot, old);
}

/* ---- slot migration ------------------------------------------------------------------------ */

static bool status_ok(redisReply *r, const char *what) {
    bool ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    if (!ok)
        fprintf(stderr, "cluster_fixture: %s: %s\n", what,
                r == NULL ? "no reply" : (r->str ? r->str : "unexpected reply"));
    if (r != NULL)
        freeReplyObject(r);
    return ok;
}

int cluster_fixture_migrate_slot_begin(cluster_fixture *f, int slot, int to) {
    int from = cluster_fixture_node_of_slot(f, slot);
    if (from < 0 || !in_range(f, to) || from == to) {
        fprintf(stderr, "cluster_fixture: cannot move slot %d from node %d to node %d\n", slot,
                from, to);
        return -1;
    }
    if (!status_ok(
            redis_fixture_cmd(f->nodes[to], "CLUSTER SETSLOT %d IMPORTING %s", slot, f->ids[from]),
            "SETSLOT IMPORTING") ||
        !status_ok(
            redis_fixture_cmd(f->nodes[from], "CLUSTER SETSLOT %d MIGRATING %s", slot, f->ids[to]),
            "SETSLOT MIGRATING"))
        return -1;
    return 0;
}

/* MIGRATE the keys still in `slot` on `from` to `to`, a batch at a time. */
static int move_keys(cluster_fixture *f, int slot, int from, int to) {
    char port[16];
    snprintf(port, sizeof port, "%d", f->ports[to]);
    for (;;) {
        redisReply *keys =
            redis_fixture_cmd(f->nodes[from], "CLUSTER GETKEYSINSLOT %d %d", slot, MIGRATE_BATCH);
        if (keys == NULL || keys->type != REDIS_REPLY_ARRAY) {
            status_ok(keys, "CLUSTER GETKEYSINSLOT");
            return -1;
        }
        if (keys->elements == 0) {
            freeReplyObject(keys);
            return 0;
        }
        size_t argc = 0;
        const char **argv = calloc(keys->elements + 10, sizeof *argv);
        size_t *lens = calloc(keys->elements + 10, sizeof *lens);
        if (argv == NULL || lens == NULL)
            abort();
        const char *head[] = {"MIGRATE", "127.0.0.1", port, "", "0", "5000"};
        for (size_t k = 0; k < sizeof head / sizeof head[0]; k++)
            argv[argc++] = head[k];
        if (f->requirepass != NULL) {
            argv[argc++] = "AUTH";
            argv[argc++] = f->requirepass;
        }
        argv[argc++] = "KEYS";
        for (size_t k = 0; k < argc; k++)
            lens[k] = strlen(argv[k]);
        for (size_t k = 0; k < keys->elements; k++) {
            argv[argc] = keys->element[k]->str;
            lens[argc++] = keys->element[k]->len;
        }
        bool ok =
            status_ok(redis_fixture_cmd_argv(f->nodes[from], (int)argc, argv, lens), "MIGRATE");
        free(argv);
        free(lens);
        freeReplyObject(keys);
        if (!ok)
            return -1;
    }
}

int cluster_fixture_migrate_slot_finish(cluster_fixture *f, int slot, int to) {
    int from = cluster_fixture_node_of_slot(f, slot);
    if (from < 0 || !in_range(f, to) || move_keys(f, slot, from, to) != 0)
        return -1;
    /* the new owner first, so that no node ever points at an owner that refuses the slot */
    if (!status_ok(redis_fixture_cmd(f->nodes[to], "CLUSTER SETSLOT %d NODE %s", slot, f->ids[to]),
                   "SETSLOT NODE on the new owner") ||
        !status_ok(
            redis_fixture_cmd(f->nodes[from], "CLUSTER SETSLOT %d NODE %s", slot, f->ids[to]),
            "SETSLOT NODE on the old owner"))
        return -1;
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++) {
        if (i != to && i != from && cluster_fixture_is_master(f, i) &&
            !status_ok(
                redis_fixture_cmd(f->nodes[i], "CLUSTER SETSLOT %d NODE %s", slot, f->ids[to]),
                "SETSLOT NODE on another master"))
            return -1;
    }
    int64_t deadline = test_now_ms() + test_slack_ms(MIGRATE_TIMEOUT_MS);
    while (agreed_owner(f, slot, -1) != to) {
        if (test_now_ms() >= deadline) {
            fprintf(stderr, "cluster_fixture: not every node names node %d for slot %d\n", to,
                    slot);
            return -1;
        }
        test_sleep_ms(POLL_MS);
    }
    return 0;
}

int cluster_fixture_migrate_slot(cluster_fixture *f, int slot, int to) {
    if (cluster_fixture_migrate_slot_begin(f, slot, to) != 0)
        return -1;
    return cluster_fixture_migrate_slot_finish(f, slot, to);
}
