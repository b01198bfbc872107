/* SPDX-License-Identifier: MIT */
/* cluster.c — the topology of a Redis Cluster: which master serves each of the 16384 slots,
 * a command connection per master, a shard subscriber per master on first wait, and the
 * commands a node did not run placed again.
 *
 * The slot map comes from CLUSTER SLOTS, asked of any node that answers: first the seeds,
 * one after another, then the masters of the map. It is asked again
 *   - when a node answers MOVED (the slot has a new owner; the one slot is fixed at once),
 *   - when a node's connection drops or cannot be made (a failover may be under way), and
 *     then every DOWN_POLL_MS while a master of the map is unreachable,
 *   - when a node answers CLUSTERDOWN or READONLY (it is no longer, or not yet, a master),
 * never more often than every REFRESH_MIN_MS. A refresh that fails asks the next node.
 *
 * A command goes to the master of its slot (route.c computes it from the first key). What a
 * node did not run is placed again, without counting as a send (conn.c's sends say how
 * often a command may have run):
 *   MOVED slot addr  -> to addr, at once; the map learns that slot;
 *   ASK slot addr    -> to addr, once, behind ASKING (the slot is being migrated);
 *   TRYAGAIN, CLUSTERDOWN, READONLY -> parked PARK_MS (plus jitter), then to the slot's
 *                       master by the map of then;
 * and a command redirected REDIRECTS_BEFORE_PARK times in a row is parked too, so two nodes
 * that disagree for a moment cannot bounce it in a tight loop. A parked command whose
 * give-up time passes fails with DLOCK_ECONN. Callers never see a redirection.
 *
 * When a new map moves slots, the commands waiting for a down master's connection follow
 * their slots, the shard subscribers' channels follow theirs (pubsub.c), the client hears
 * it (every held lease is confirmed at once), and a node that is no master any more is
 * closed once nothing is in flight on it. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "cluster.h"

#define REFRESH_MIN_MS 100
#define DOWN_POLL_MS 500
#define PARK_MS 50
#define REDIRECTS_BEFORE_PARK 5

typedef struct node {
    dlock__cluster *cluster;
    dlock__endpoint ep; /* host owned; the other strings are the client endpoint's */
    char addr[80];      /* "host:port", as the cluster names it */
    dlock__conn conn;
    dlock__pubsub *sub; /* NULL until a channel of its slots is listened to */
    bool in_map;        /* a master of the current map */
    bool retired;       /* closed: freed with the cluster */
} node;

struct dlock__cluster {
    dlock_client *client;
    dlock__cluster_hooks hooks;
    dlock__cluster_url url;
    node **nodes;
    size_t count, cap;
    node *slots[DLOCK__CLUSTER_SLOTS];
    bool have_map, outcome_told, closing;
    char seed_addr[80]; /* the first seed's "host:port" */
    node *fallback;     /* before the first map: the seed being tried */
    size_t next_seed;   /* the seed to try after fallback */
    size_t next_asked;
    /* refresh */
    bool refresh_in_flight, refresh_wanted;
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

static void node_outcome(dlock__conn *conn, int status) {
    node *n = node_of_conn(conn);
    dlock__cluster *cl = n->cluster;
    if (status == DLOCK_OK || cl->closing)
        return;
    if (!cl->have_map && n == cl->fallback && cl->next_seed >= cl->url.count && !cl->outcome_told) {
        cl->outcome_told = true; /* every seed failed once: the client is told now */
        cl->hooks.outcome(cl->client, status);
    }
    if (cl->refresh_in_flight && cl->asked == n) {
        /* its CLUSTER SLOTS would wait for the node's give-up time: ask another now */
        cl->refresh_in_flight = false;
        cl->refresh_seq++;
    }
    refresh_request(cl);
}

static void redirect(dlock__conn *conn, dlock__cmd *cmd, const dlock__reply *reply);

/* "host:port", an IPv6 address in brackets: how the cluster names a node. */
static void format_addr(char *buf, size_t size, const char *host, int port) {
    snprintf(buf, size, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
}

static node *node_find(dlock__cluster *cl, const char *host, int port) {
    char addr[80];
    format_addr(addr, sizeof(addr), host, port);
    for (size_t i = 0; i < cl->count; i++)
        if (!cl->nodes[i]->retired && strcmp(cl->nodes[i]->addr, addr) == 0)
            return cl->nodes[i];
    return NULL;
}

/* The node at host:port, made (and connecting) if it is new; NULL on ENOMEM. */
static node *node_get(dlock__cluster *cl, const char *host, int port) {
    node *n = node_find(cl, host, port);
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
    n->ep = c->endpoint; /* credentials, TLS and sync settings: borrowed */
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
    cl->nodes[cl->count++] = n;
    dlock__link_start(&n->conn.link);
    return n;
}

static void node_close(node *n) {
    if (n->sub) {
        dlock__pubsub_close(n->sub);
        dlock__free(n->sub);
        n->sub = NULL;
    }
    dlock__conn_close(&n->conn);
}

static void node_free(node *n) {
    dlock__free(n->ep.host);
    dlock__free(n);
}

/* ---- where a command goes ------------------------------------------------------------------ */

/* The slot's master; for a slot no master serves (the cluster is partly down), the seed
 * that gave the first map: it answers CLUSTERDOWN or MOVED, and the command is placed
 * again. */
static node *node_for_slot(dlock__cluster *cl, int slot) {
    node *n = slot >= 0 ? cl->slots[slot] : cl->slots[0];
    return n ? n : cl->fallback;
}

dlock__conn *dlock__cluster_conn(dlock__cluster *cl, int slot) {
    return &node_for_slot(cl, slot)->conn;
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
    node *n = cl->have_map ? node_for_slot(cl, slot) : NULL;
    snprintf(buf, size, "%s", n && n->in_map ? n->addr : "not connected");
    return buf;
}

const char *dlock__cluster_seed(const dlock__cluster *cl) {
    return cl->seed_addr;
}

const char *dlock__cluster_error_text(const dlock__cluster *cl) {
    return cl->fallback ? cl->fallback->conn.link.last_error_text : "no seed was tried";
}

/* ---- the commands a node did not run ----------------------------------------------------- */

static void park(dlock__cluster *cl, dlock__cmd *cmd) {
    dlock__cmd_queue_push(&cl->parked, cmd);
    if (!dlock__timer_active(&cl->park_timer))
        dlock__timer_start(&cl->client->sched, &cl->park_timer,
                           PARK_MS + (int64_t)(dlock__random_u64() % (PARK_MS / 2)));
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
            dlock__cmd_fail(cl->client, cmd, DLOCK_ECONN);
        else
            dlock__conn_adopt(dlock__cluster_conn(cl, dlock__cmd_slot(cmd)), cmd, false);
    }
}

/* "MOVED 3999 127.0.0.1:6381" / "ASK ...": the slot and the node that has it. */
static node *redirect_target(dlock__cluster *cl, const char *text, int *slot) {
    const char *sp = strchr(text, ' ');
    char host[64];
    int port;
    if (!sp || sscanf(sp + 1, "%d", slot) != 1 || *slot < 0 || *slot >= DLOCK__CLUSTER_SLOTS)
        return NULL;
    const char *addr = strchr(sp + 1, ' ');
    const char *colon = addr ? strrchr(addr, ':') : NULL;
    if (!colon || colon - addr - 1 <= 0 || colon - addr - 1 >= (long)sizeof(host) ||
        sscanf(colon + 1, "%d", &port) != 1)
        return NULL;
    memcpy(host, addr + 1, (size_t)(colon - addr - 1));
    host[colon - addr - 1] = '\0';
    if (host[0] == '[') { /* an IPv6 address comes bracketed */
        memmove(host, host + 1, strlen(host));
        host[strcspn(host, "]")] = '\0';
    }
    return node_get(cl, host, port);
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
    node *to = moved || ask ? redirect_target(cl, text, &slot) : NULL;
    if (moved && to) {
        cl->slots[slot] = to; /* this slot at once; the others with the refresh */
        refresh_request(cl);
    }
    if (to && dlock__cmd_redirects(cmd) <= REDIRECTS_BEFORE_PARK)
        dlock__conn_adopt(&to->conn, cmd, ask);
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
           m->element[1]->type == REDIS_REPLY_INTEGER && m->element[1]->integer > 0 &&
           m->element[1]->integer <= 65535;
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
        node *to = slot >= 0 && cl->slots[slot] ? cl->slots[slot] : n;
        dlock__conn_adopt(&to->conn, cmd, false);
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
            n->retired = true;
        } else {
            lingering = true;
        }
    }
    if (lingering)
        dlock__timer_start(&cl->client->sched, &cl->retire_timer, DOWN_POLL_MS);
}

/* A map read from `asked` (the host of an entry that names none is the asked node's). */
static int apply_map(dlock__cluster *cl, const redisReply *r, const node *asked) {
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0)
        return DLOCK_EREDIS;
    for (size_t i = 0; i < r->elements; i++)
        if (!entry_ok(r->element[i]))
            return DLOCK_EREDIS;
    bool changed = false;
    for (size_t i = 0; i < cl->count; i++)
        cl->nodes[i]->in_map = false;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i], *m = e->element[2];
        const char *host = m->element[0]->str;
        if (strcmp(host, "?") == 0)
            continue; /* the node does not know its own address yet */
        node *n = node_get(cl, host[0] ? host : asked->ep.host, (int)m->element[1]->integer);
        if (!n)
            return DLOCK_ENOMEM;
        n->in_map = true;
        for (long long s = e->element[0]->integer; s <= e->element[1]->integer; s++) {
            changed |= cl->slots[s] != n && cl->slots[s] != NULL;
            cl->slots[s] = n;
        }
    }
    bool first = !cl->have_map;
    cl->have_map = true;
    for (size_t i = 0; i < cl->count; i++)
        if (!cl->nodes[i]->retired)
            follow_slots(cl, cl->nodes[i]);
    if (first && !cl->outcome_told) {
        cl->outcome_told = true;
        cl->hooks.outcome(cl->client, DLOCK_OK);
    }
    if (changed)
        cl->hooks.moved(cl->client);
    dlock__timer_start(&cl->client->sched, &cl->retire_timer, 0);
    return DLOCK_OK;
}

/* ---- refresh ----------------------------------------------------------------------------- */

static bool master_down(const dlock__cluster *cl) {
    for (size_t i = 0; i < cl->count; i++)
        if (cl->nodes[i]->in_map && cl->nodes[i]->conn.link.state != LINK_READY)
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

static void on_slots(dlock_client *c, int status, const dlock__reply *reply, int sends, void *arg) {
    (void)sends;
    dlock__cluster *cl = c->cluster;
    if (cl->closing || (uint64_t)(uintptr_t)arg != cl->refresh_seq || !cl->refresh_in_flight)
        return; /* abandoned: its node failed, another was asked */
    cl->refresh_in_flight = false;
    node *asked = cl->asked;
    int rc = status == DLOCK_OK ? apply_map(cl, reply, asked) : status;
    if (rc != DLOCK_OK)
        dlock__log(c, DLOCK_LOG_WARN, "cluster: CLUSTER SLOTS from %s: %s", asked->addr,
                   status == DLOCK_OK ? "no usable slot map" : dlock_strerror(status));
    if (rc != DLOCK_OK || cl->refresh_wanted || master_down(cl))
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
    cl->refresh_in_flight = dlock__conn_enqueue(&asked->conn, &req, 2, argv, lens) == DLOCK_OK;
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
    int64_t gap = cl->have_map && master_down(cl) ? DOWN_POLL_MS : REFRESH_MIN_MS;
    int64_t due = cl->last_refresh_ms + gap;
    dlock__timer_start_at(&cl->client->sched, &cl->refresh_timer,
                          due > dlock__now_ms() ? due : dlock__now_ms());
}

/* ---- life -------------------------------------------------------------------------------- */

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
    dlock__timer_init(&cl->refresh_timer, on_refresh_timer, cl);
    dlock__timer_init(&cl->park_timer, on_park_timer, cl);
    dlock__timer_init(&cl->retire_timer, on_retire_timer, cl);
    *out = cl;
    return DLOCK_OK;
}

void dlock__cluster_start(dlock__cluster *cl) {
    refresh_send(cl);
}

void dlock__cluster_close(dlock__cluster *cl) {
    if (!cl)
        return;
    cl->closing = true;
    dlock__sched *s = &cl->client->sched;
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
    dlock__cluster_url_free(&cl->url);
    dlock__free(cl);
}
