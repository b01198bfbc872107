/* SPDX-License-Identifier: MIT */
/* pubsub.c — the subscriber connection and the channel router.
 *
 * One subscriber connection per client, opened when the first listener arrives. However
 * many listeners a channel has, the router sends one SUBSCRIBE for it and one UNSUBSCRIBE
 * when the last listener leaves. Each channel moves through
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
 * again. A message for a channel the client has just left is not: it was on its way. */
#include <string.h>

#include <hiredis/hiredis.h>

#include "core.h"

enum channel_state { CH_IDLE, CH_SUBSCRIBING, CH_ACTIVE, CH_UNSUBSCRIBING, CH_REFUSED };

typedef struct channel {
    char *name;
    size_t len;
    enum channel_state state;
    dlock__listener *listeners;
    size_t nlisteners;
    uint64_t subscribe_seq; /* which SUBSCRIBE of the connection asked for it */
    dlock__pubsub *ps;      /* the subscriber it is on */
} channel;

static dlock__pubsub *pubsub_of(dlock__link *link) {
    return DLOCK__CONTAINER_OF(link, dlock__pubsub, link);
}

static void on_sub_reply(dlock__link *link, const dlock__reply *reply, void *arg);

/* What a command's answer must be: the arg of its dlock__link_send. */
static const char SUBSCRIBE_VERB[] = "subscribe", UNSUBSCRIBE_VERB[] = "unsubscribe";

/* For dlock_client_stats: ch stops counting as subscribed (it was active). */
static void leave_active(dlock__pubsub *ps, const channel *ch) {
    if (ch->state == CH_ACTIVE)
        dlock__stat_add(ps->link.client, DLOCK__STAT_SUBSCRIPTIONS, -1);
}

static void channel_free(dlock__pubsub *ps, channel *ch) {
    leave_active(ps, ch);
    dlock__map_remove(&ps->channels, ch->name);
    dlock__free(ch->name);
    dlock__free(ch);
}

static void send_one(dlock__pubsub *ps, const char *verb, channel *ch) {
    if (ps->link.state != LINK_READY)
        return;
    const char *argv[2] = {verb, ch->name};
    size_t lens[2] = {strlen(verb), ch->len};
    /* a failure drops the link, which subscribes every channel again when it is back */
    dlock__link_send(&ps->link, 2, argv, lens, on_sub_reply,
                     (void *)(verb[0] == 'S' ? SUBSCRIBE_VERB : UNSUBSCRIBE_VERB));
}

static void subscribe_one(dlock__pubsub *ps, channel *ch) {
    if (ps->link.state != LINK_READY)
        return; /* on_ready subscribes every IDLE channel */
    ch->state = CH_SUBSCRIBING;
    ch->subscribe_seq = ++ps->subscribes_sent;
    send_one(ps, "SUBSCRIBE", ch);
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

/* The link's on_push: messages, checked for their shape. */
static bool on_push(dlock__link *link, const dlock__reply *reply) {
    const char *kind = reply->element[0]->str;
    size_t want;
    if (strcmp(kind, "message") == 0 || strcmp(kind, "smessage") == 0)
        want = 3;
    else if (strcmp(kind, "pmessage") == 0)
        want = 4;
    else
        return false; /* a confirmation: it answers a command */
    bool strings = reply->elements == want;
    for (size_t i = 1; strings && i < want; i++)
        strings = is_string(reply->element[i]);
    if (!strings) {
        dlock__link_protocol_error(link, "a message push of the wrong shape", reply);
        return true;
    }
    dlock__stat_add(link->client, DLOCK__STAT_MESSAGES, 1);
    deliver(pubsub_of(link), reply->element[want - 2], reply->element[want - 1]);
    return true;
}

/* The refused SUBSCRIBE: Redis answers in order, so it is the oldest not yet confirmed. */
static void refuse_oldest(dlock__pubsub *ps, const char *server_text);

static void on_sub_reply(dlock__link *link, const dlock__reply *reply, void *arg) {
    const char *verb = arg;
    dlock__pubsub *ps = pubsub_of(link);
    if (reply->type == REDIS_REPLY_ERROR) {
        if (verb == SUBSCRIBE_VERB && strncmp(reply->str, "NOPERM", 6) == 0)
            refuse_oldest(ps, reply->str);
        else
            dlock__link_fail(link, DLOCK_EREDIS, reply->str);
        return;
    }
    /* [verb, channel, count]: the channel we asked about (nil only when unsubscribing from
     * nothing, which the client never asks) */
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3 || !is_string(reply->element[0]) ||
        strcmp(reply->element[0]->str, verb) != 0 || !is_string(reply->element[1]) ||
        reply->element[2]->type != REDIS_REPLY_INTEGER) {
        char what[64];
        snprintf(what, sizeof(what), "not the confirmation of %s", verb);
        dlock__link_protocol_error(link, what, reply);
        return;
    }
    channel *ch = dlock__map_get(&ps->channels, reply->element[1]->str);
    if (!ch) {
        dlock__link_protocol_error(link, "a confirmation for a channel never asked for", reply);
        return;
    }
    if (verb == SUBSCRIBE_VERB) {
        if (ch->state == CH_SUBSCRIBING) {
            ch->state = CH_ACTIVE;
            dlock__stat_add(ps->link.client, DLOCK__STAT_SUBSCRIPTIONS, 1);
            notify_ready(ch);
        }
    } else if (ch->state == CH_UNSUBSCRIBING) {
        if (ch->nlisteners > 0)
            subscribe_one(ps, ch);
        else
            channel_free(ps, ch);
    }
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
static void each_channel(dlock__pubsub *ps, void (*fn)(dlock__pubsub *ps, channel *ch)) {
    size_t n = ps->channels.count;
    if (n == 0)
        return;
    channel **all = dlock__malloc(sizeof(*all) * n), **cursor = all;
    if (!all)
        return;
    dlock__map_each(&ps->channels, collect_all, &cursor);
    for (size_t i = 0; i < n; i++)
        fn(ps, all[i]);
    dlock__free(all);
}

static void reset_channel(dlock__pubsub *ps, channel *ch) {
    if (ch->nlisteners == 0)
        channel_free(ps, ch);
    else if (ch->state != CH_REFUSED) {
        leave_active(ps, ch);
        ch->state = CH_IDLE;
    }
}

static void find_oldest_subscribing(const char *key, void *value, void *arg) {
    (void)key;
    channel *ch = value, **oldest = arg;
    if (ch->state == CH_SUBSCRIBING && (!*oldest || ch->subscribe_seq < (*oldest)->subscribe_seq))
        *oldest = ch;
}

/* Its listeners hear it (they leave, and the channel goes with the last). */
static void refuse_oldest(dlock__pubsub *ps, const char *server_text) {
    channel *ch = NULL;
    dlock__map_each(&ps->channels, find_oldest_subscribing, &ch);
    if (!ch)
        return;
    dlock__noperm_text(ps->link.client, server_text, ch->name, ps->refused_text,
                       sizeof(ps->refused_text));
    dlock__log(ps->link.client, DLOCK_LOG_ERROR, "%s", ps->refused_text);
    ch->state = CH_REFUSED;
    ch->nlisteners++; /* held while its listeners run: one leaving may not free it */
    notify_ready(ch);
    ch->nlisteners--;
    if (ch->nlisteners == 0)
        channel_free(ps, ch);
}

static void on_down(dlock__link *link, int err) {
    (void)err;
    each_channel(pubsub_of(link), reset_channel);
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
    ps->link.on_ready = on_ready;
    ps->link.on_down = on_down;
    ps->link.handshake_extra = handshake_ping;
    ps->link.on_push = on_push;
    dlock__map_init(&ps->channels);
}

static void free_channel(dlock__pubsub *ps, channel *ch) {
    for (dlock__listener *l = ch->listeners; l; l = l->next)
        l->channel = NULL;
    channel_free(ps, ch);
}

void dlock__pubsub_close(dlock__pubsub *ps) {
    dlock__link_close(&ps->link);
    each_channel(ps, free_channel);
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
    if ((ch->state == CH_ACTIVE || ch->state == CH_SUBSCRIBING) && ps->link.state == LINK_READY) {
        leave_active(ps, ch);
        ch->state = CH_UNSUBSCRIBING;
        send_one(ps, "UNSUBSCRIBE", ch);
    } else if (ch->state != CH_UNSUBSCRIBING) {
        channel_free(ps, ch);
    }
}

bool dlock__listener_ready(const dlock__listener *l) {
    const channel *ch = l->channel;
    return ch && ch->state == CH_ACTIVE;
}

int dlock__listener_error(const dlock__listener *l) {
    const channel *ch = l->channel;
    return ch && ch->state == CH_REFUSED ? DLOCK_ENOPERM : DLOCK_OK;
}

void dlock__pubsub_follow_slots(dlock__pubsub *ps, bool (*stays)(dlock__pubsub *ps, const char *channel),
                                void (*move)(dlock__pubsub *ps, const char *channel,
                                             dlock__listener *l)) {
    (void)ps; /* TODO(helper D): sharded channels follow their slots */
    (void)stays;
    (void)move;
}

bool dlock__pubsub_idle(const dlock__pubsub *ps) {
    return ps->channels.count == 0;
}
