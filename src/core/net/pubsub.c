/* SPDX-License-Identifier: MIT */
/* pubsub.c — the subscriber connection and the channel router.
 *
 * One subscriber connection per client, opened when the first listener arrives; in a
 * Cluster, one per master instead (a shard subscriber, cluster.c), which speaks sharded
 * pub/sub and is closed whenever it has no channel left. However many listeners a channel
 * has, the router sends one SUBSCRIBE (SSUBSCRIBE) for it and one UNSUBSCRIBE
 * (SUNSUBSCRIBE) when the last listener leaves. Each channel moves through
 *
 *   IDLE --SUBSCRIBE--> SUBSCRIBING --confirmed--> ACTIVE --UNSUBSCRIBE--> UNSUBSCRIBING
 *
 * and a listener that arrives while the channel is UNSUBSCRIBING waits for that
 * confirmation before the channel is subscribed again, so a SUBSCRIBE is never overtaken by
 * an older UNSUBSCRIBE. When the connection
 * drops, every channel with listeners goes back to IDLE and is subscribed again once the
 * connection is back; its listeners then get on_ready again: messages may have been lost
 * meanwhile, and on_ready is their cue to look at the object afresh.
 *
 * A SUBSCRIBE the server refuses (NOPERM: the user's ACL lacks the channel, as Redis 7
 * gives new users by default) is permanent: the channel goes to REFUSED and its listeners
 * get on_ready with dlock__listener_error() saying so; nothing asks again while they stay.
 * The connection stays: the other channels carry on.
 *
 * Each channel goes in a SUBSCRIBE (UNSUBSCRIBE) of its own, so each command has exactly one
 * answer: its confirmation (an array: the verb, the channel, the count) or an error, in
 * the order sent (link.c matches them). Messages arrive in between as pushes, checked for
 * their shape: message (3 strings), pmessage (4), smessage (3). A push or a confirmation
 * of any other shape, or one the client did not ask for, is a protocol violation: the link
 * drops the connection and comes back after its backoff, and every channel is subscribed
 * again. A message for a channel the client has just left is not: it was on its way.
 *
 * A shard subscriber's channels live where their slot is. A node that gives a slot away
 * (a resharding done, a failover) says so to its subscribers with a sunsubscribe of its
 * own for each channel of the slot, and answers MOVED to a SSUBSCRIBE or SUNSUBSCRIBE for
 * it: either way the channel is no longer subscribed there. It goes back to IDLE keeping
 * its listeners and the owner hears of it (on_slot_lost): it reads the slot map again, and
 * dlock__pubsub_follow_slots hands the listeners to the subscriber of the slot's new master,
 * where on_ready tells them to look again. A sunsubscribe is a confirmation only when it is
 * the answer the oldest command in flight waits for. (A last listener that leaves just as
 * the node gives the slot away sends a SUNSUBSCRIBE that the node's own sunsubscribe
 * overtakes, and whose MOVED then answers nothing: a violation, which costs the shard's
 * connection one reconnect. Rare, and nothing is lost: every channel is subscribed again.) */
#include <string.h>

#include <hiredis/hiredis.h>

#include "net/net.h"

enum channel_state { CH_IDLE, CH_SUBSCRIBING, CH_ACTIVE, CH_UNSUBSCRIBING, CH_REFUSED };

typedef struct channel {
    char *name;
    size_t len;
    enum channel_state state;
    dlock__listener *listeners;
    size_t nlisteners;
    dlock__pubsub *ps; /* the subscriber it is on */
} channel;

static dlock__pubsub *pubsub_of(dlock__link *link) {
    return DLOCK__CONTAINER_OF(link, dlock__pubsub, link);
}

/* The two commands a channel's life is made of, and the answer each gets: plain pub/sub,
 * and sharded pub/sub (a Cluster shard's subscriber). Indexed [sharded][subscribe]. */
static const char *const COMMAND[2][2] = {{"UNSUBSCRIBE", "SUBSCRIBE"},
                                          {"SUNSUBSCRIBE", "SSUBSCRIBE"}};
static const char *const CONFIRMATION[2][2] = {{"unsubscribe", "subscribe"},
                                               {"sunsubscribe", "ssubscribe"}};

/* The answers of a channel's commands; arg is the channel, which stays while one of its
 * commands is in flight (only its confirmation, a refusal or a drop frees it). */
static void on_subscribe_reply(dlock__link *link, const dlock__reply *reply, void *arg);
static void on_unsubscribe_reply(dlock__link *link, const dlock__reply *reply, void *arg);

/* For dlock_client_stats: ch stops counting as subscribed (it was active). */
static void leave_active(dlock__pubsub *ps, const channel *ch) {
    if (ch->state == CH_ACTIVE)
        dlock__stat_add(ps->link.client, DLOCK__STAT_SUBSCRIPTIONS, -1);
}

/* A shard subscriber with no channel and nothing in flight closes its connection (the
 * next listener opens it again): one connection per shard that has waiters, not per shard
 * ever waited on. */
static void close_if_unused(dlock__pubsub *ps) {
    if (ps->sharded && dlock__pubsub_idle(ps))
        dlock__link_stop(&ps->link);
}

static void channel_free(dlock__pubsub *ps, channel *ch) {
    leave_active(ps, ch);
    dlock__map_remove(&ps->channels, ch->name);
    dlock__free(ch->name);
    dlock__free(ch);
    close_if_unused(ps);
}

static void send_one(dlock__pubsub *ps, channel *ch, bool subscribe) {
    if (ps->link.state != LINK_READY)
        return;
    const char *verb = COMMAND[ps->sharded][subscribe];
    const char *argv[2] = {verb, ch->name};
    size_t lens[2] = {strlen(verb), ch->len};
    /* a failure drops the link, which subscribes every channel again when it is back */
    dlock__link_send(&ps->link, 2, argv, lens,
                     subscribe ? on_subscribe_reply : on_unsubscribe_reply, ch);
}

static void subscribe_one(dlock__pubsub *ps, channel *ch) {
    if (ps->link.state != LINK_READY)
        return; /* on_ready subscribes every IDLE channel */
    ch->state = CH_SUBSCRIBING;
    send_one(ps, ch, true);
}

/* ch leaves the server (its last listener left, or its slot moved to another master). */
static void unsubscribe_one(dlock__pubsub *ps, channel *ch) {
    leave_active(ps, ch);
    ch->state = CH_UNSUBSCRIBING;
    send_one(ps, ch, false);
}

static void notify_ready(channel *ch) {
    dlock__listener *l = ch->listeners;
    while (l) {
        dlock__listener *next = l->next;
        if (l->on_ready)
            l->on_ready(l);
        l = next;
    }
}

static bool is_string(const redisReply *r) {
    return r->type == REDIS_REPLY_STRING;
}

static void deliver(dlock__pubsub *ps, const redisReply *name, const redisReply *payload) {
    channel *ch = dlock__map_get(&ps->channels, name->str);
    if (!ch || ch->state == CH_REFUSED)
        return; /* left a moment ago: the message was already on its way */
    dlock__listener *l = ch->listeners;
    while (l) {
        /* a listener may leave from inside its own callback */
        dlock__listener *next = l->next;
        if (l->on_message)
            l->on_message(l, payload->str, payload->len);
        l = next;
    }
}

static bool is_shaped(const redisReply *r, size_t want, bool count_last) {
    if (r->elements != want)
        return false;
    for (size_t i = 1; i < want; i++)
        if (!(count_last && i == want - 1 ? r->element[i]->type == REDIS_REPLY_INTEGER
                                          : is_string(r->element[i])))
            return false;
    return true;
}

/* The node does not serve ch's slot (any more): nothing of ch is subscribed there. Its
 * listeners stay, IDLE, until the owner's new slot map moves them. */
static void slot_lost(dlock__pubsub *ps, channel *ch) {
    if (ch->nlisteners == 0) {
        channel_free(ps, ch);
        return;
    }
    leave_active(ps, ch);
    ch->state = CH_IDLE;
    if (ps->on_slot_lost)
        ps->on_slot_lost(ps);
}

/* A shard subscriber's sunsubscribe: the confirmation of our SUNSUBSCRIBE (false: it
 * answers that command), or the node's own word that it gave the channel's slot away. A
 * channel on its way out is settled by the answer to its SUNSUBSCRIBE, still to come. */
static bool on_sunsubscribe(dlock__link *link, const dlock__reply *reply) {
    dlock__pubsub *ps = pubsub_of(link);
    if (!is_shaped(reply, 3, true)) {
        dlock__link_protocol_error(link, "a sunsubscribe of the wrong shape", reply);
        return true;
    }
    channel *ch = dlock__map_get(&ps->channels, reply->element[1]->str);
    if (ch && dlock__link_awaits(link, on_unsubscribe_reply, ch))
        return false;
    if (ch && ch->state == CH_ACTIVE) {
        dlock__log(link->client, DLOCK_LOG_INFO,
                   "subscriber: the node gave away the slot of %s; following it", ch->name);
        slot_lost(ps, ch);
    }
    return true;
}

/* The link's on_push: messages, checked for their shape. */
static bool on_push(dlock__link *link, const dlock__reply *reply) {
    const char *kind = reply->element[0]->str;
    size_t want;
    if (strcmp(kind, "message") == 0 || strcmp(kind, "smessage") == 0)
        want = 3;
    else if (strcmp(kind, "pmessage") == 0)
        want = 4;
    else if (pubsub_of(link)->sharded && strcmp(kind, "sunsubscribe") == 0)
        return on_sunsubscribe(link, reply);
    else
        return false; /* a confirmation: it answers a command */
    if (!is_shaped(reply, want, false)) {
        dlock__link_protocol_error(link, "a message push of the wrong shape", reply);
        return true;
    }
    dlock__stat_add(link->client, DLOCK__STAT_MESSAGES, 1);
    deliver(pubsub_of(link), reply->element[want - 2], reply->element[want - 1]);
    return true;
}

/* A refused SUBSCRIBE: its listeners hear it (they leave, and the channel goes with the
 * last). */
static void refuse(dlock__pubsub *ps, channel *ch, const char *server_text) {
    if (ch->state != CH_SUBSCRIBING)
        return; /* left meanwhile: its UNSUBSCRIBE's answer settles it */
    dlock__noperm_text(ps->link.client, server_text, ch->name, NULL, ps->refused_text,
                       sizeof(ps->refused_text));
    dlock__log(ps->link.client, DLOCK_LOG_ERROR, "%s", ps->refused_text);
    ch->state = CH_REFUSED;
    ch->nlisteners++; /* held while its listeners run: one leaving may not free it */
    notify_ready(ch);
    ch->nlisteners--;
    if (ch->nlisteners == 0)
        channel_free(ps, ch);
}

/* A Cluster node's refusal because the slot is not (or no longer) its own. */
static bool not_served_here(const dlock__pubsub *ps, const char *text) {
    static const char *const words[] = {"MOVED ", "ASK ", "CLUSTERDOWN", "TRYAGAIN"};
    if (!ps->sharded)
        return false;
    for (size_t i = 0; i < sizeof(words) / sizeof(*words); i++)
        if (strncmp(text, words[i], strlen(words[i])) == 0)
            return true;
    return false;
}

/* Whether reply is the confirmation [verb, channel, count] of ch's command; if not, the
 * connection goes (a protocol violation). */
static bool confirms(dlock__link *link, const dlock__reply *reply, channel *ch, bool subscribe) {
    const char *verb = CONFIRMATION[pubsub_of(link)->sharded][subscribe];
    if (reply->type == REDIS_REPLY_ARRAY && is_shaped(reply, 3, true) &&
        is_string(reply->element[0]) && strcmp(reply->element[0]->str, verb) == 0 &&
        reply->element[1]->len == ch->len && memcmp(reply->element[1]->str, ch->name, ch->len) == 0)
        return true;
    char what[96];
    snprintf(what, sizeof(what), "not the confirmation of %s %.40s", verb, ch->name);
    dlock__link_protocol_error(link, what, reply);
    return false;
}

static void on_subscribe_reply(dlock__link *link, const dlock__reply *reply, void *arg) {
    dlock__pubsub *ps = pubsub_of(link);
    channel *ch = arg;
    if (reply->type == REDIS_REPLY_ERROR) {
        if (not_served_here(ps, reply->str)) {
            if (ch->state == CH_SUBSCRIBING)
                slot_lost(ps, ch);
        } else if (strncmp(reply->str, "NOPERM", 6) == 0) {
            refuse(ps, ch, reply->str);
        } else {
            dlock__link_fail(link, DLOCK_EREDIS, reply->str);
        }
        return;
    }
    if (!confirms(link, reply, ch, true) || ch->state != CH_SUBSCRIBING)
        return; /* a channel left meanwhile is settled by its UNSUBSCRIBE's answer */
    ch->state = CH_ACTIVE;
    dlock__stat_add(ps->link.client, DLOCK__STAT_SUBSCRIPTIONS, 1);
    notify_ready(ch);
}

static void on_unsubscribe_reply(dlock__link *link, const dlock__reply *reply, void *arg) {
    dlock__pubsub *ps = pubsub_of(link);
    channel *ch = arg;
    if (reply->type == REDIS_REPLY_ERROR) {
        if (!not_served_here(ps, reply->str)) {
            dlock__link_fail(link, DLOCK_EREDIS, reply->str);
            return;
        }
        if (ch->state == CH_UNSUBSCRIBING)
            slot_lost(ps, ch); /* not subscribed there either way */
    } else if (!confirms(link, reply, ch, false)) {
        return;
    } else if (ch->state == CH_UNSUBSCRIBING) {
        if (ch->nlisteners > 0)
            subscribe_one(ps, ch);
        else
            channel_free(ps, ch);
    }
    close_if_unused(ps); /* the last answer it waited for */
}

static void collect_idle(const char *key, void *value, void *arg) {
    (void)key;
    channel *ch = value;
    channel ***cursor = arg;
    if (ch->state == CH_IDLE && ch->nlisteners > 0)
        *(*cursor)++ = ch;
}

static void on_ready(dlock__link *link) {
    dlock__pubsub *ps = pubsub_of(link);
    size_t n = ps->channels.count;
    if (n == 0)
        return;
    channel **all = dlock__malloc(sizeof(*all) * n), **cursor = all;
    if (!all) {
        dlock__link_fail_later(link, DLOCK_ECONN, "out of memory resubscribing");
        return;
    }
    dlock__map_each(&ps->channels, collect_idle, &cursor);
    size_t count = (size_t)(cursor - all);
    for (size_t i = 0; i < count; i++)
        subscribe_one(ps, all[i]);
    dlock__free(all);
}

static void collect_all(const char *key, void *value, void *arg) {
    (void)key;
    channel ***cursor = arg;
    *(*cursor)++ = value;
}

/* Calls fn on every channel; fn may free the channel. */
static void each_channel(dlock__pubsub *ps, void (*fn)(dlock__pubsub *ps, channel *ch, void *arg),
                         void *arg) {
    size_t n = ps->channels.count;
    if (n == 0)
        return;
    channel **all = dlock__malloc(sizeof(*all) * n), **cursor = all;
    if (!all)
        return;
    dlock__map_each(&ps->channels, collect_all, &cursor);
    for (size_t i = 0; i < n; i++)
        fn(ps, all[i], arg);
    dlock__free(all);
}

static void reset_channel(dlock__pubsub *ps, channel *ch, void *arg) {
    (void)arg;
    if (ch->nlisteners == 0)
        channel_free(ps, ch);
    else if (ch->state != CH_REFUSED) {
        leave_active(ps, ch);
        ch->state = CH_IDLE;
    }
}

static void on_down(dlock__link *link, int err) {
    (void)err;
    each_channel(pubsub_of(link), reset_channel, NULL);
}

/* A PING before the link counts as ready: a server that accepts the connection and then
 * closes it (maxclients reached, a proxy whose backend is down) must look like a failed
 * attempt, which backs off, not like a ready link dropping, which reconnects at once. */
static int handshake_ping(dlock__link *link) {
    const char *argv[] = {"PING"};
    size_t lens[] = {4};
    return dlock__link_send(link, 1, argv, lens, dlock__link_handshake_reply, NULL) == DLOCK_OK;
}

void dlock__pubsub_init(dlock__pubsub *ps, dlock_client *c) {
    memset(ps, 0, sizeof(*ps));
    dlock__link_init(&ps->link, c, "subscriber");
    ps->link.counts_reconnects = true; /* the client's, or a Cluster shard's */
    ps->link.on_ready = on_ready;
    ps->link.on_down = on_down;
    ps->link.handshake_extra = handshake_ping;
    ps->link.on_push = on_push;
    dlock__map_init(&ps->channels);
}

static void free_channel(dlock__pubsub *ps, channel *ch, void *arg) {
    (void)arg;
    for (dlock__listener *l = ch->listeners; l; l = l->next)
        l->channel = NULL;
    channel_free(ps, ch);
}

void dlock__pubsub_close(dlock__pubsub *ps) {
    dlock__link_close(&ps->link);
    each_channel(ps, free_channel, NULL);
    dlock__map_free(&ps->channels);
}

int dlock__pubsub_listen(dlock__pubsub *ps, const char *name, dlock__listener *l) {
    if (ps->link.state == LINK_CLOSED)
        return DLOCK_ECLOSED;
    channel *ch = dlock__map_get(&ps->channels, name);
    if (!ch) {
        ch = dlock__calloc(1, sizeof(*ch));
        if (!ch || !(ch->name = dlock__strdup(name)) ||
            dlock__map_put(&ps->channels, name, ch) != 0) {
            if (ch)
                dlock__free(ch->name);
            dlock__free(ch);
            return DLOCK_ENOMEM;
        }
        ch->len = strlen(name);
        ch->state = CH_IDLE;
        ch->ps = ps;
    }
    l->channel = ch;
    l->prev = NULL;
    l->next = ch->listeners;
    if (ch->listeners)
        ch->listeners->prev = l;
    ch->listeners = l;
    ch->nlisteners++;
    if (ps->link.state == LINK_IDLE)
        dlock__link_start(&ps->link); /* on_ready subscribes */
    else if (ch->state == CH_IDLE)
        subscribe_one(ps, ch);
    return DLOCK_OK;
}

/* ch has no listener left: it leaves the server, or goes at once if it is not there. */
static void settle_unheard(dlock__pubsub *ps, channel *ch) {
    if ((ch->state == CH_ACTIVE || ch->state == CH_SUBSCRIBING) && ps->link.state == LINK_READY)
        unsubscribe_one(ps, ch);
    else if (ch->state != CH_UNSUBSCRIBING)
        channel_free(ps, ch);
}

void dlock__unlisten(dlock_client *c, dlock__listener *l) {
    (void)c;
    channel *ch = l->channel;
    if (!ch)
        return;
    if (l->prev)
        l->prev->next = l->next;
    else
        ch->listeners = l->next;
    if (l->next)
        l->next->prev = l->prev;
    l->prev = l->next = NULL;
    l->channel = NULL;
    if (--ch->nlisteners > 0)
        return;
    dlock__pubsub *ps = ch->ps;
    settle_unheard(ps, ch);
}

bool dlock__listener_ready(const dlock__listener *l) {
    const channel *ch = l->channel;
    return ch && ch->state == CH_ACTIVE;
}

int dlock__listener_error(const dlock__listener *l) {
    const channel *ch = l->channel;
    return ch && ch->state == CH_REFUSED ? DLOCK_ENOPERM : DLOCK_OK;
}

typedef struct slot_hooks {
    bool (*stays)(dlock__pubsub *ps, const char *channel);
    void (*move)(dlock__pubsub *ps, const char *channel, dlock__listener *l);
} slot_hooks;

static void follow_slot(dlock__pubsub *ps, channel *ch, void *arg) {
    const slot_hooks *hooks = arg;
    if (ch->nlisteners == 0)
        return; /* on its way out already */
    if (hooks->stays(ps, ch->name)) {
        if (ch->state == CH_IDLE)
            subscribe_one(ps, ch); /* its subscription was lost with the slot */
        return;
    }
    dlock__listener *l = ch->listeners;
    ch->listeners = NULL;
    ch->nlisteners = 0;
    while (l) {
        dlock__listener *next = l->next;
        l->prev = l->next = NULL;
        l->channel = NULL;
        hooks->move(ps, ch->name, l);
        l = next;
    }
    /* An active channel is not unsubscribed: the node drops it itself when it gives the
     * slot away (its sunsubscribe then finds nothing), or with the connection. A SUNSUBSCRIBE
     * could meet that sunsubscribe on the way and be answered MOVED after it, which no
     * answer could tell apart from its confirmation. */
    if (ch->state == CH_ACTIVE)
        channel_free(ps, ch);
    else
        settle_unheard(ps, ch);
}

void dlock__pubsub_follow_slots(dlock__pubsub *ps,
                                bool (*stays)(dlock__pubsub *ps, const char *channel),
                                void (*move)(dlock__pubsub *ps, const char *channel,
                                             dlock__listener *l)) {
    slot_hooks hooks = {stays, move};
    each_channel(ps, follow_slot, &hooks);
}

bool dlock__pubsub_idle(const dlock__pubsub *ps) {
    /* in a handshake, only the link's own commands are in flight */
    return ps->channels.count == 0 && (ps->link.state != LINK_READY || ps->link.expect_count == 0);
}
