/* SPDX-License-Identifier: MIT */
/* cluster.c — the topology of a Redis Cluster: which master serves each of the 16384 slots,
 * a command connection per master, a shard subscriber per master on first wait, and the
 * commands a node did not run placed again.
 *
 * The slot map comes from CLUSTER SLOTS, asked of any node that answers: first the seeds,
 * one after another, then the masters of the map. Before the first map, a seed that answers
 * something else than a map (a plain Redis: "ERR This instance has cluster support
 * disabled"; junk) is not asked again: once every seed has answered or failed, or
 * connect_timeout_ms has passed, the client is told why, in the seed's own words. The map
 * is asked again
 *   - when a node answers MOVED (the slot has a new owner; the one slot is fixed at once),
 *   - when a node's connection drops or cannot be made (a failover may be under way), and
 *     then every DOWN_POLL_MS while a master of the map is unreachable,
 *   - when a node answers CLUSTERDOWN or READONLY (it is no longer, or not yet, a master),
 * never more often than every REFRESH_MIN_MS. A refresh that fails asks the next node.
 *
 * A node's connection is made when a command first needs it, so a map of thousands of
 * masters costs descriptors only for the ones in use, and at most NODE_CONNECTIONS_MAX are
 * kept (the least recently used idle one is closed first); nodes are found by address in a
 * hash map. A host name may have 255 bytes (Redis 7's hostname mode, Kubernetes names).
 *
 * A command goes to the master of its slot (route.c computes it from the first key). A slot
 * that no master of the map serves (the cluster is partly down, or being repaired) is a
 * passing state: its commands are parked, the map read again (at a bounded rate), and a
 * command whose give-up time passes fails naming the slot. What a node did not run is
 * placed again, without counting as a send (conn.c's sends say how often a command may
 * have run):
 *   MOVED slot addr  -> to addr, at once; the map learns that slot;
 *   ASK slot addr    -> to addr, once, behind ASKING (the slot is being migrated);
 *   TRYAGAIN, CLUSTERDOWN, READONLY -> parked PARK_MS (plus jitter), then to the slot's
 *                       master by the map of then;
 * and a command redirected REDIRECTS_BEFORE_PARK times in a row is parked too, so two nodes
 * that disagree for a moment cannot bounce it in a tight loop. A parked command whose
 * give-up time passes fails with DLOCK_ECONN, and the op's error text says what the node
 * last answered (conn.c keeps it). Callers never see a redirection that succeeded.
 *
 * When a new map moves slots, the commands waiting for a down master's connection follow
 * their slots, the shard subscribers' channels follow theirs (pubsub.c), the client hears
 * it (every held lease is confirmed at once), and a node that is no master any more is
 * closed once nothing is in flight on it. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "topology/cluster.h"

#define REFRESH_MIN_MS 100
#define DOWN_POLL_MS 500
#define PARK_MS 50
#define REDIRECTS_BEFORE_PARK 5
/* Command connections kept open at once: past it, connecting to one more node first closes
 * the one used least recently among those with nothing in flight and no subscriber. */
#define NODE_CONNECTIONS_MAX 256

/* A host name of DNS's length; an address adds brackets (IPv6), ':', a port and the NUL */
#define HOST_MAX 255
#define ADDR_SIZE (HOST_MAX + 2 + 1 + 5 + 1)

typedef struct node {
    dlock__cluster *cluster;
    dlock__endpoint ep;   /* host owned; the other strings are the client endpoint's */
    char addr[ADDR_SIZE]; /* "host:port", as the cluster names it */
    dlock__conn conn;
    dlock__pubsub *sub; /* NULL until a channel of its slots is listened to */
    bool in_map;        /* a master of the current map */
    int64_t used_ms;    /* when a command was last queued on it */
    bool retired;       /* closed: freed with the cluster */
} node;

struct dlock__cluster {
    dlock_client *client;
    dlock__cluster_hooks hooks;
    dlock__cluster_url url;
    node **nodes;
    size_t count, cap;
    dlock__map by_addr; /* "host:port" -> the node there that is not retired */
    node *slots[DLOCK__CLUSTER_SLOTS];
    bool have_map, outcome_told, closing;
    char seed_addr[ADDR_SIZE]; /* the first seed's "host:port" */
    /* before the first map: why no seed gave one (an answer's reason outranks a
     * connection's), for dlock_client_new */
    int seed_status;
    bool seed_answered; /* seed_error is what a seed answered, not a failed connection */
    char seed_error[DLOCK__ERROR_TEXT_SIZE];
    dlock__timer first_map_timer; /* connect_timeout_ms for the first map */
    node *fallback;               /* before the first map: the seed being tried */
    size_t next_seed;             /* the seed to try after fallback */
    size_t next_asked;
    /* refresh */
    bool refresh_in_flight, refresh_wanted;
    bool refresh_failed;  /* the last answer was no map: ask again less often */
    node *asked;          /* the refresh in flight asked this node */
    uint64_t refresh_seq; /* names the refresh in flight; an abandoned one's answer is ignored */
    int64_t last_refresh_ms;
    dlock__timer refresh_timer;
    /* parked commands */
    dlock__cmd_queue parked;
    dlock__timer park_timer;
    dlock__timer retire_timer;
};

static void refresh_request(dlock__cluster *cl);

/* ---- nodes ------------------------------------------------------------------------------- */

static node *node_of_conn(dlock__conn *conn) {
    return DLOCK__CONTAINER_OF(conn, node, conn);
}

/* A node's links (commands, shard subscriber) connect where the node is. */
static void node_resolve(dlock__link *link) {
    node *n = link->resolve_arg;
    dlock__link_connect_to(link, &n->ep);
}

/* No first map after all: the client hears it once, with the seeds' reason. */
static void tell_no_map(dlock__cluster *cl) {
    if (cl->outcome_told || cl->have_map)
        return;
    cl->outcome_told = true;
    dlock__timer_stop(&DLOCK__NET(cl->client)->sched, &cl->first_map_timer);
    cl->hooks.outcome(cl->client, cl->seed_status != DLOCK_OK ? cl->seed_status : DLOCK_ECONN);
}

/* Why a seed gave no map. What a seed answered says more than a connection that failed
 * (a second seed that is down must not hide that the first is a plain Redis). */
static void note_seed_failure(dlock__cluster *cl, int status, bool answered, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void note_seed_failure(dlock__cluster *cl, int status, bool answered, const char *fmt, ...) {
    if (cl->outcome_told || (cl->seed_answered && !answered))
        return; /* told: dlock_client_new's thread may be reading seed_error */
    va_list ap;
    va_start(ap, fmt);
    dlock__vformat_fit(cl->seed_error, sizeof(cl->seed_error), fmt, ap);
    va_end(ap);
    cl->seed_status = status;
    cl->seed_answered = answered;
}

static void node_outcome(dlock__conn *conn, int status) {
    node *n = node_of_conn(conn);
    dlock__cluster *cl = n->cluster;
    if (status == DLOCK_OK || cl->closing)
        return;
    if (!cl->have_map && n == cl->fallback) {
        note_seed_failure(cl, status, false, "%s", conn->link.last_error_text);
        if (cl->next_seed >= cl->url.count)
            tell_no_map(cl); /* every seed failed once */
    }
    if (cl->refresh_in_flight && cl->asked == n) {
        /* its CLUSTER SLOTS would wait for the node's give-up time: ask another now */
        cl->refresh_in_flight = false;
        cl->refresh_seq++;
    }
    refresh_request(cl);
}

static void redirect(dlock__conn *conn, dlock__cmd *cmd, const dlock__reply *reply);

static void node_free(node *n) {
    dlock__free(n->ep.host);
    dlock__free(n);
}

/* "host:port", an IPv6 address in brackets: how the cluster names a node. */
static void format_addr(char *buf, size_t size, const char *host, int port) {
    snprintf(buf, size, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
}

/* The node at host:port (host at most HOST_MAX bytes), made if it is new (it connects when
 * a command is first queued on it: node_send); NULL on ENOMEM. */
static node *node_get(dlock__cluster *cl, const char *host, int port) {
    char addr[ADDR_SIZE];
    format_addr(addr, sizeof(addr), host, port);
    node *n = dlock__map_get(&cl->by_addr, addr);
    if (n)
        return n;
    if (cl->count == cl->cap) {
        size_t cap = cl->cap ? cl->cap * 2 : 8;
        node **grown = dlock__realloc(cl->nodes, cap * sizeof(*grown));
        if (!grown)
            return NULL;
        cl->nodes = grown;
        cl->cap = cap;
    }
    if (!(n = dlock__calloc(1, sizeof(*n))) || !(n->ep.host = dlock__strdup(host))) {
        dlock__free(n);
        return NULL;
    }
    dlock_client *c = cl->client;
    char *own_host = n->ep.host;
    n->ep = DLOCK__NET(c)->endpoint; /* credentials, TLS and sync settings: borrowed */
    n->ep.host = own_host;
    n->ep.port = port;
    n->cluster = cl;
    format_addr(n->addr, sizeof(n->addr), host, port);
    dlock__conn_init(&n->conn, c);
    n->conn.link.resolve = node_resolve;
    n->conn.link.resolve_arg = n;
    n->conn.on_outcome = node_outcome;
    n->conn.on_redirect = redirect;
    n->conn.follows_failover = true;
    if (dlock__map_put(&cl->by_addr, n->addr, n) != 0) {
        node_free(n);
        return NULL;
    }
    cl->nodes[cl->count++] = n;
    return n;
}

static bool node_connected(const node *n) {
    return !n->retired && n->conn.link.state != LINK_IDLE && n->conn.link.state != LINK_CLOSED;
}

/* Before a connection to one more node: at NODE_CONNECTIONS_MAX, the least recently used
 * idle one goes (it connects again when a command needs it). None idle: the bound yields. */
static void make_room(dlock__cluster *cl) {
    size_t connected = 0;
    node *oldest = NULL;
    for (size_t i = 0; i < cl->count; i++) {
        node *n = cl->nodes[i];
        if (!node_connected(n))
            continue;
        connected++;
        bool idle =
            dlock__conn_idle(&n->conn) && !n->sub && !(cl->refresh_in_flight && cl->asked == n);
        if (idle && (!oldest || n->used_ms < oldest->used_ms))
            oldest = n;
    }
    if (connected >= NODE_CONNECTIONS_MAX && oldest) {
        dlock__link_stop(&oldest->conn.link);
        dlock__timer_stop(&DLOCK__NET(cl->client)->sched, &oldest->conn.replicas.check);
    }
}

/* Queues cmd on n, connecting n if nothing did yet. */
static void node_send(node *n, dlock__cmd *cmd, bool asking) {
    n->used_ms = dlock__now_ms();
    if (n->conn.link.state == LINK_IDLE && !n->conn.closing) {
        make_room(n->cluster);
        dlock__link_start(&n->conn.link);
    }
    dlock__conn_adopt(&n->conn, cmd, asking);
}

/* Whether n was connected (or tried) and is not ready now. */
static bool node_down(const node *n) {
    enum dlock__link_state st = n->conn.link.state;
    return st != LINK_READY && st != LINK_IDLE && st != LINK_CLOSED;
}

static void node_retire(dlock__cluster *cl, node *n) {
    if (dlock__map_get(&cl->by_addr, n->addr) == n)
        dlock__map_remove(&cl->by_addr, n->addr);
    n->retired = true;
}

static void node_close(node *n) {
    if (n->sub) {
        dlock__pubsub_close(n->sub);
        dlock__free(n->sub);
        n->sub = NULL;
    }
    dlock__conn_close(&n->conn);
}

/* ---- where a command goes ------------------------------------------------------------------ */

/* A master of the map for a command without a key: slot 0's, else the first there is. */
static node *any_master(dlock__cluster *cl) {
    for (int s = 0; s < DLOCK__CLUSTER_SLOTS; s++)
        if (cl->slots[s])
            return cl->slots[s];
    return NULL;
}

/* The slot's master; NULL for a slot no master of the map serves. Before the first map,
 * the seed being tried. */
static node *master_of(dlock__cluster *cl, int slot) {
    if (!cl->have_map)
        return cl->fallback;
    return slot >= 0 ? cl->slots[slot] : any_master(cl);
}

/* The slot's master, or for a slot without one some node that answers about it (MOVED,
 * CLUSTERDOWN): a subscriber's channel waits there until its slot has a master. */
static node *node_for_slot(dlock__cluster *cl, int slot) {
    node *n = master_of(cl, slot);
    if (!n)
        n = any_master(cl);
    return n ? n : cl->fallback;
}

dlock__conn *dlock__cluster_conn(dlock__cluster *cl, int slot) {
    return &node_for_slot(cl, slot)->conn;
}

static void park(dlock__cluster *cl, dlock__cmd *cmd);

/* cmd to its slot's master, or parked until the slot has one. */
static void place(dlock__cluster *cl, dlock__cmd *cmd) {
    node *n = master_of(cl, dlock__cmd_slot(cmd));
    if (n) {
        node_send(n, cmd, false);
    } else {
        refresh_request(cl); /* the slot's master may be back: rate-bounded */
        park(cl, cmd);
    }
}

int dlock__cluster_enqueue(dlock__cluster *cl, const dlock__cmd_request *req, int argc,
                           const char *const *argv, const size_t *argvlen) {
    if (cl->closing || atomic_load(&DLOCK__NET(cl->client)->closing))
        return DLOCK_ECLOSED;
    dlock__cmd *cmd;
    int rc = dlock__cmd_new(cl->client, req, argc, argv, argvlen, &cmd);
    if (rc == DLOCK_OK)
        place(cl, cmd);
    return rc;
}

static void sub_slot_lost(dlock__pubsub *ps) {
    refresh_request(ps->owner);
}

dlock__pubsub *dlock__cluster_sub(dlock__cluster *cl, int slot) {
    node *n = node_for_slot(cl, slot);
    if (!n->sub) {
        if (!(n->sub = dlock__calloc(1, sizeof(*n->sub))))
            return NULL;
        dlock__pubsub_init(n->sub, cl->client);
        n->sub->sharded = true;
        n->sub->owner = cl;
        n->sub->on_slot_lost = sub_slot_lost;
        n->sub->link.resolve = node_resolve; /* where its node is */
        n->sub->link.resolve_arg = n;
    }
    return n->sub;
}

const char *dlock__cluster_node_of(dlock__cluster *cl, int slot, char *buf, size_t size) {
    node *n = cl->have_map ? master_of(cl, slot) : NULL;
    if (cl->have_map && !n)
        snprintf(buf, size, "no master (slot %d)", slot);
    else
        snprintf(buf, size, "%s", n && n->in_map ? n->addr : "not connected");
    return buf;
}

const char *dlock__cluster_seed(const dlock__cluster *cl) {
    return cl->seed_addr;
}

const char *dlock__cluster_error_text(const dlock__cluster *cl) {
    return cl->seed_error[0] ? cl->seed_error : "no seed was tried";
}

/* ---- the commands a node did not run ----------------------------------------------------- */

static void park(dlock__cluster *cl, dlock__cmd *cmd) {
    dlock__cmd_queue_push(&cl->parked, cmd);
    if (!dlock__timer_active(&cl->park_timer))
        dlock__timer_start(&DLOCK__NET(cl->client)->sched, &cl->park_timer,
                           PARK_MS + (int64_t)(dlock__random_u64() % (PARK_MS / 2)));
}

/* A parked command's time is up: the op's error text (which op_error.c reads from the
 * client's command link, never opened in a Cluster) says what kept it from running. */
static void fail_parked(dlock__cluster *cl, dlock__cmd *cmd) {
    dlock__link *own = &DLOCK__NET(cl->client)->conn.link;
    int slot = dlock__cmd_slot(cmd);
    const char *why = dlock__cmd_not_run_why(cmd);
    if (cl->have_map && !master_of(cl, slot))
        dlock__format_fit(own->last_error_text, sizeof(own->last_error_text),
                          "cluster: slot %d has no master in the slot map (the cluster is "
                          "partly down); the map was read again until the command gave up",
                          slot);
    else if (why)
        dlock__format_fit(own->last_error_text, sizeof(own->last_error_text),
                          "cluster: slot %d: the command was not run %d times until it gave "
                          "up; the last node said \"%s\"",
                          slot, dlock__cmd_redirects(cmd), why);
    else
        dlock__format_fit(own->last_error_text, sizeof(own->last_error_text),
                          "cluster: slot %d: no node took the command before it gave up", slot);
    dlock__cmd_fail(cl->client, cmd, DLOCK_ECONN);
}

static void on_park_timer(dlock__timer *t, void *arg) {
    (void)t;
    dlock__cluster *cl = arg;
    dlock__cmd_queue due = cl->parked;
    memset(&cl->parked, 0, sizeof(cl->parked));
    int64_t now = dlock__now_ms();
    dlock__cmd *cmd;
    while ((cmd = dlock__cmd_queue_pop(&due))) {
        if (now >= dlock__cmd_give_up_ms(cmd))
            fail_parked(cl, cmd);
        else
            place(cl, cmd);
    }
}

/* A decimal number of at most max, all of text up to end; -1 otherwise. */
static long parse_bounded(const char *text, const char *end, long max) {
    long value = 0;
    if (text >= end)
        return -1;
    for (const char *p = text; p < end; p++) {
        if (*p < '0' || *p > '9' || (value = value * 10 + (*p - '0')) > max)
            return -1;
    }
    return value;
}

/* "MOVED 3999 127.0.0.1:6381" / "ASK ...": the slot and the node that has it. An empty host
 * (":6381", Redis 7 when the node knows no endpoint to give) is the host of `from`, the node
 * that answered. NULL for an address that is not one (a port out of 1..65535 is refused, not
 * wrapped) or ENOMEM. */
static node *redirect_target(dlock__cluster *cl, const node *from, const char *text, int *slot) {
    const char *slot_at = strchr(text, ' ');
    const char *addr = slot_at ? strchr(slot_at + 1, ' ') : NULL;
    if (!addr || (*slot = (int)parse_bounded(slot_at + 1, addr, DLOCK__CLUSTER_SLOTS - 1)) < 0)
        return NULL;
    addr++;
    const char *end = addr + strcspn(addr, " ");
    const char *colon = NULL;
    for (const char *p = addr; p < end; p++)
        if (*p == ':')
            colon = p;
    long port = colon ? parse_bounded(colon + 1, end, 65535) : -1;
    if (port < 1)
        return NULL;
    const char *host = addr, *host_end = colon;
    if (host_end - host >= 2 && host[0] == '[' && host_end[-1] == ']') {
        host++; /* an IPv6 address comes bracketed */
        host_end--;
    }
    if (host_end == addr)
        return node_get(cl, from->ep.host, (int)port);
    if (host_end <= host || host_end - host > HOST_MAX)
        return NULL;
    char name[HOST_MAX + 1];
    memcpy(name, host, (size_t)(host_end - host));
    name[host_end - host] = '\0';
    return node_get(cl, name, (int)port);
}

static bool starts(const char *text, const char *word) {
    size_t n = strlen(word);
    return strncmp(text, word, n) == 0 && (text[n] == ' ' || text[n] == '\0');
}

/* conn.c's hook: the node did not run cmd; reply says why. */
static void redirect(dlock__conn *conn, dlock__cmd *cmd, const dlock__reply *reply) {
    dlock__cluster *cl = node_of_conn(conn)->cluster;
    const char *text = reply->str;
    bool moved = starts(text, "MOVED"), ask = starts(text, "ASK");
    if (!moved && !ask && !starts(text, "TRYAGAIN")) /* CLUSTERDOWN, READONLY */
        refresh_request(cl);
    int slot = -1;
    node *to = moved || ask ? redirect_target(cl, node_of_conn(conn), text, &slot) : NULL;
    if ((moved || ask) && !to)
        dlock__log(cl->client, DLOCK_LOG_WARN, "cluster: %s: not an address to follow", text);
    if (moved) { /* this slot at once; the others (or all, if it named no node) by the map */
        if (to) {
            cl->slots[slot] = to;
            to->in_map = true;
        }
        refresh_request(cl);
    }
    if (to && dlock__cmd_redirects(cmd) <= REDIRECTS_BEFORE_PARK)
        node_send(to, cmd, ask);
    else
        park(cl, cmd);
}

/* ---- the slot map ---------------------------------------------------------------------- */

/* One entry of CLUSTER SLOTS: [start, end, [host, port, id, ...], replicas...]. */
static bool entry_ok(const redisReply *e) {
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 3)
        return false;
    const redisReply *m = e->element[2];
    return e->element[0]->type == REDIS_REPLY_INTEGER &&
           e->element[1]->type == REDIS_REPLY_INTEGER && e->element[0]->integer >= 0 &&
           e->element[1]->integer < DLOCK__CLUSTER_SLOTS &&
           e->element[0]->integer <= e->element[1]->integer && m->type == REDIS_REPLY_ARRAY &&
           m->elements >= 2 && m->element[0]->type == REDIS_REPLY_STRING &&
           m->element[0]->len <= HOST_MAX && strlen(m->element[0]->str) == m->element[0]->len &&
           m->element[1]->type == REDIS_REPLY_INTEGER && m->element[1]->integer > 0 &&
           m->element[1]->integer <= 65535;
}

/* Why r is no slot map, into why; false if it is one. */
static bool map_unusable(const redisReply *r, char *why, size_t size) {
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 0) {
        snprintf(why, size, "an empty map: no slot is assigned to any node yet");
        return true;
    }
    if (r->type != REDIS_REPLY_ARRAY) {
        snprintf(why, size, "not a slot map");
        return true;
    }
    for (size_t i = 0; i < r->elements; i++)
        if (!entry_ok(r->element[i])) {
            snprintf(why, size,
                     "entry %zu is not [first slot, last slot, [host of at most %d bytes, port "
                     "1-65535, ...], ...]",
                     i + 1, HOST_MAX);
            return true;
        }
    return false;
}

/* pubsub.c's questions when the map changed: is the channel still ps's node's? */
static bool channel_stays(dlock__pubsub *ps, const char *channel) {
    dlock__cluster *cl = ps->owner;
    return dlock__cluster_sub(cl, dlock__slot_of(channel, strlen(channel))) == ps;
}

/* ... and if not, its listener goes to the new one (which subscribes it). */
static void channel_move(dlock__pubsub *ps, const char *channel, dlock__listener *l) {
    dlock__cluster *cl = ps->owner;
    dlock__pubsub *to = dlock__cluster_sub(cl, dlock__slot_of(channel, strlen(channel)));
    if (!to || dlock__pubsub_listen(to, channel, l) != DLOCK_OK)
        dlock__log(cl->client, DLOCK_LOG_WARN,
                   "cluster: cannot listen on %s at its new node; its waiters look again at "
                   "their next hint",
                   channel);
}

/* The commands waiting on n's connection whose slot another master serves now go there,
 * and so do its subscriber's channels. */
static void follow_slots(dlock__cluster *cl, node *n) {
    dlock__cmd_queue waiting = dlock__conn_take_pending(&n->conn);
    dlock__cmd *cmd;
    while ((cmd = dlock__cmd_queue_pop(&waiting))) {
        int slot = dlock__cmd_slot(cmd);
        if (slot >= 0 && cl->slots[slot] != n)
            place(cl, cmd); /* its new master, or parked while it has none */
        else
            node_send(n, cmd, false);
    }
    if (n->sub)
        dlock__pubsub_follow_slots(n->sub, channel_stays, channel_move);
}

/* Closes the nodes that are no masters any more and have nothing in flight. Later, from a
 * timer: a reply callback of the node's own connection may be on the stack. */
static void on_retire_timer(dlock__timer *t, void *arg) {
    (void)t;
    dlock__cluster *cl = arg;
    bool lingering = false;
    for (size_t i = 0; i < cl->count; i++) {
        node *n = cl->nodes[i];
        if (n->in_map || n->retired || n == cl->fallback)
            continue;
        if (dlock__conn_idle(&n->conn) && (!n->sub || dlock__pubsub_idle(n->sub))) {
            node_close(n);
            node_retire(cl, n);
        } else {
            lingering = true;
        }
    }
    if (lingering)
        dlock__timer_start(&DLOCK__NET(cl->client)->sched, &cl->retire_timer, DOWN_POLL_MS);
}

/* A map read from `asked` (the host of an entry that names none is the asked node's). */
/* A map read from `asked` (the host of an entry that names none is the asked node's), checked
 * by map_unusable. A slot the map leaves out has no master now (place parks its commands). */
static int apply_map(dlock__cluster *cl, const redisReply *r, const node *asked) {
    node **next = dlock__calloc(DLOCK__CLUSTER_SLOTS, sizeof(*next));
    if (!next)
        return DLOCK_ENOMEM;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i], *m = e->element[2];
        const char *host = m->element[0]->str;
        if (strcmp(host, "?") == 0)
            continue; /* the node does not know its own address yet */
        node *n = node_get(cl, host[0] ? host : asked->ep.host, (int)m->element[1]->integer);
        if (!n) {
            dlock__free(next);
            return DLOCK_ENOMEM;
        }
        for (long long s = e->element[0]->integer; s <= e->element[1]->integer; s++)
            next[s] = n;
    }
    bool changed = false;
    for (size_t i = 0; i < cl->count; i++)
        cl->nodes[i]->in_map = false;
    for (int s = 0; s < DLOCK__CLUSTER_SLOTS; s++) {
        changed |= cl->slots[s] != next[s] && cl->slots[s] != NULL;
        cl->slots[s] = next[s];
        if (next[s])
            next[s]->in_map = true;
    }
    dlock__free(next);
    bool first = !cl->have_map;
    cl->have_map = true;
    for (size_t i = 0; i < cl->count; i++)
        if (!cl->nodes[i]->retired)
            follow_slots(cl, cl->nodes[i]);
    if (first && !cl->outcome_told) {
        cl->outcome_told = true;
        dlock__timer_stop(&DLOCK__NET(cl->client)->sched, &cl->first_map_timer);
        cl->hooks.outcome(cl->client, DLOCK_OK);
    }
    if (changed)
        cl->hooks.moved(cl->client);
    dlock__timer_start(&DLOCK__NET(cl->client)->sched, &cl->retire_timer, 0);
    return DLOCK_OK;
}

/* ---- refresh ----------------------------------------------------------------------------- */

static bool master_down(const dlock__cluster *cl) {
    for (size_t i = 0; i < cl->count; i++)
        if (cl->nodes[i]->in_map && node_down(cl->nodes[i]))
            return true;
    return false;
}

/* Whom to ask: a ready master (taking turns), else the next seed. */
static node *pick_asked(dlock__cluster *cl) {
    for (size_t k = 0; k < cl->count; k++) {
        node *n = cl->nodes[(cl->next_asked + k) % cl->count];
        if (n->in_map && n->conn.link.state == LINK_READY) {
            cl->next_asked = (cl->next_asked + k + 1) % cl->count;
            return n;
        }
    }
    const dlock__endpoint *seed = &cl->url.seeds[cl->next_seed % cl->url.count];
    cl->next_seed++;
    node *n = node_get(cl, seed->host, seed->port);
    if (n && !cl->have_map)
        cl->fallback = n;
    return n;
}

/* What `asked` answered to CLUSTER SLOTS is no map (why says how): the log says so, and
 * before the first map it is what dlock_client_new reports, with what to do about it. */
static void no_map_from(dlock__cluster *cl, const node *asked, int status, const redisReply *reply,
                        const char *why) {
    char answer[2 * DLOCK__ADDRESS_SIZE];
    dlock__reply_describe(reply, answer, sizeof(answer));
    dlock__log(cl->client, DLOCK_LOG_WARN, "cluster: CLUSTER SLOTS from %s: %s: %s", asked->addr,
               answer, why);
    if (cl->have_map)
        return;
    if (status == DLOCK_ENOPERM)
        note_seed_failure(cl, status, true,
                          "seed %s refused CLUSTER SLOTS: \"%s\"; a Cluster client needs it "
                          "(docs/operations.md, the Cluster ACL)",
                          asked->addr, reply->str);
    else if (reply->type == REDIS_REPLY_ERROR && strstr(reply->str, "cluster support disabled"))
        note_seed_failure(cl, DLOCK_EINVAL, true,
                          "seed %s is not a Cluster node: CLUSTER SLOTS answered \"%s\"; for a "
                          "plain Redis use redis://%s (rediss:// with TLS), not redis-cluster://",
                          asked->addr, reply->str, asked->addr);
    else
        note_seed_failure(cl, DLOCK_EREDIS, true,
                          "seed %s gave no slot map: CLUSTER SLOTS answered %s (%s)", asked->addr,
                          answer, why);
}

static void on_slots(dlock_client *c, int status, const dlock__reply *reply, int sends, void *arg) {
    (void)sends;
    dlock__cluster *cl = DLOCK__TOPOLOGY(c)->cluster;
    if (cl->closing || (uint64_t)(uintptr_t)arg != cl->refresh_seq || !cl->refresh_in_flight)
        return; /* abandoned: its node failed, another was asked */
    cl->refresh_in_flight = false;
    node *asked = cl->asked;
    char why[2 * DLOCK__ADDRESS_SIZE];
    int rc = status;
    if (status != DLOCK_OK)
        snprintf(why, sizeof(why), "%s", reply ? "an error" : dlock_strerror(status));
    else if (map_unusable(reply, why, sizeof(why)))
        rc = DLOCK_EREDIS;
    else if ((rc = apply_map(cl, reply, asked)) != DLOCK_OK)
        snprintf(why, sizeof(why), "%s", dlock_strerror(rc));
    cl->refresh_failed = rc != DLOCK_OK;
    if (rc != DLOCK_OK && rc != DLOCK_ENOMEM && reply)
        no_map_from(cl, asked, rc, reply, why);
    else if (rc != DLOCK_OK)
        dlock__log(c, DLOCK_LOG_WARN, "cluster: CLUSTER SLOTS from %s: %s", asked->addr, why);
    if (!cl->have_map && rc != DLOCK_OK && cl->next_seed >= cl->url.count)
        tell_no_map(cl); /* every seed was asked once: none gives a map */
    else if (rc != DLOCK_OK || cl->refresh_wanted || master_down(cl))
        refresh_request(cl);
}

static void refresh_send(dlock__cluster *cl) {
    node *asked = pick_asked(cl);
    if (!asked) {
        refresh_request(cl);
        return;
    }
    static const char *const argv[] = {"CLUSTER", "SLOTS"};
    static const size_t lens[] = {7, 5};
    dlock__cmd_request req = {.script = -1,
                              .slot = -1,
                              .flags = DLOCK__CMD_RETRY_SAFE,
                              .fn = on_slots,
                              .deadline_ms = INT64_MAX,
                              .arg = (void *)(uintptr_t)++cl->refresh_seq};
    cl->asked = asked;
    cl->refresh_wanted = false;
    cl->last_refresh_ms = dlock__now_ms();
    dlock__cmd *cmd;
    cl->refresh_in_flight = dlock__cmd_new(cl->client, &req, 2, argv, lens, &cmd) == DLOCK_OK;
    if (cl->refresh_in_flight)
        node_send(asked, cmd, false);
}

static void on_refresh_timer(dlock__timer *t, void *arg) {
    (void)t;
    dlock__cluster *cl = arg;
    if (!cl->refresh_in_flight && !cl->closing)
        refresh_send(cl);
}

/* A refresh soon: not before REFRESH_MIN_MS after the last one (DOWN_POLL_MS while a
 * master is down: its failover takes a second or two), one at a time. */
static void refresh_request(dlock__cluster *cl) {
    cl->refresh_wanted = true;
    if (cl->refresh_in_flight || cl->closing || dlock__timer_active(&cl->refresh_timer))
        return;
    int64_t gap =
        cl->have_map && (cl->refresh_failed || master_down(cl)) ? DOWN_POLL_MS : REFRESH_MIN_MS;
    int64_t due = cl->last_refresh_ms + gap;
    dlock__timer_start_at(&DLOCK__NET(cl->client)->sched, &cl->refresh_timer,
                          due > dlock__now_ms() ? due : dlock__now_ms());
}

/* ---- life -------------------------------------------------------------------------------- */

/* connect_timeout_ms and no map: a seed that answers nothing, or slowly, ends it too. */
static void on_first_map_timer(dlock__timer *t, void *arg) {
    (void)t;
    dlock__cluster *cl = arg;
    if (cl->have_map || cl->outcome_told)
        return;
    char last[sizeof(cl->seed_error)];
    snprintf(last, sizeof(last), "%s", cl->seed_error);
    dlock__format_fit(cl->seed_error, sizeof(cl->seed_error),
                      "no seed gave a slot map within connect_timeout_ms (%lld ms)%s%s",
                      (long long)DLOCK__BASE(cl->client)->opts.connect_timeout_ms,
                      last[0] ? "; the last: " : "", last);
    tell_no_map(cl);
}

int dlock__cluster_new(dlock_client *c, dlock__cluster_url *url, const dlock__cluster_hooks *hooks,
                       dlock__cluster **out) {
    dlock__cluster *cl = dlock__calloc(1, sizeof(*cl));
    if (!cl) {
        dlock__cluster_url_free(url);
        return DLOCK_ENOMEM;
    }
    cl->client = c;
    cl->hooks = *hooks;
    cl->url = *url;
    memset(url, 0, sizeof(*url));
    format_addr(cl->seed_addr, sizeof(cl->seed_addr), cl->url.seeds[0].host, cl->url.seeds[0].port);
    dlock__map_init(&cl->by_addr);
    dlock__timer_init(&cl->first_map_timer, on_first_map_timer, cl);
    dlock__timer_init(&cl->refresh_timer, on_refresh_timer, cl);
    dlock__timer_init(&cl->park_timer, on_park_timer, cl);
    dlock__timer_init(&cl->retire_timer, on_retire_timer, cl);
    *out = cl;
    return DLOCK_OK;
}

void dlock__cluster_start(dlock__cluster *cl) {
    dlock__timer_start(&DLOCK__NET(cl->client)->sched, &cl->first_map_timer,
                       DLOCK__BASE(cl->client)->opts.connect_timeout_ms);
    refresh_send(cl);
}

void dlock__cluster_close(dlock__cluster *cl) {
    if (!cl)
        return;
    cl->closing = true;
    dlock__sched *s = &DLOCK__NET(cl->client)->sched;
    dlock__timer_stop(s, &cl->first_map_timer);
    dlock__timer_stop(s, &cl->refresh_timer);
    dlock__timer_stop(s, &cl->park_timer);
    dlock__timer_stop(s, &cl->retire_timer);
    dlock__cmd *cmd;
    while ((cmd = dlock__cmd_queue_pop(&cl->parked)))
        dlock__cmd_fail(cl->client, cmd, DLOCK_ECANCELED);
    for (size_t i = 0; i < cl->count; i++)
        if (!cl->nodes[i]->retired)
            node_close(cl->nodes[i]);
}

void dlock__cluster_free(dlock__cluster *cl) {
    if (!cl)
        return;
    for (size_t i = 0; i < cl->count; i++)
        node_free(cl->nodes[i]);
    dlock__free(cl->nodes);
    dlock__map_free(&cl->by_addr);
    dlock__cluster_url_free(&cl->url);
    dlock__free(cl);
}
