/* pubsub.c — the subscriber connection and the channel router.
 *
 * One subscriber connection per client, opened when the first listener arrives. However
 * many listeners a channel has, the router sends one SUBSCRIBE for it and one UNSUBSCRIBE
 * when the last listener leaves. Each channel moves through
 *
 *   IDLE --SUBSCRIBE--> SUBSCRIBING --confirmed--> ACTIVE --UNSUBSCRIBE--> UNSUBSCRIBING
 *
 * and a listener that arrives while the channel is UNSUBSCRIBING waits for that
 * confirmation before the channel is subscribed again, so hiredis' per-channel callback
 * table never sees a SUBSCRIBE overtaken by an older UNSUBSCRIBE. When the connection
 * drops, every channel with listeners goes back to IDLE and is subscribed again once the
 * connection is back; its listeners then get on_ready again: messages may have been lost
 * meanwhile, and on_ready is their cue to look at the object afresh.
 *
 * A SUBSCRIBE the server refuses (NOPERM: the user's ACL lacks the channel, as Redis 7
 * gives new users by default) is permanent: the channel goes to REFUSED and its listeners
 * get on_ready with dlock__listener_error() saying so; nothing asks again while they stay.
 * hiredis answers such a refusal by dropping the connection (an error reply no callback
 * waits for), so the link reconnects after its backoff and the other channels are
 * subscribed again. Each channel goes in a SUBSCRIBE of its own, numbered as it leaves:
 * the refused one is then the oldest still unconfirmed. */
#include <string.h>

#include <hiredis/async.h>

#include "core.h"

enum channel_state { CH_IDLE, CH_SUBSCRIBING, CH_ACTIVE, CH_UNSUBSCRIBING, CH_REFUSED };

typedef struct channel {
    char *name;
    size_t len;
    enum channel_state state;
    dlock__listener *listeners;
    size_t nlisteners;
    uint64_t subscribe_seq; /* which SUBSCRIBE of the connection asked for it */
} channel;

static dlock__pubsub *pubsub_of(dlock__link *link) {
    return DLOCK__CONTAINER_OF(link, dlock__pubsub, link);
}

static void on_sub_reply(redisAsyncContext *ac, void *r, void *privdata);

static void channel_free(dlock__pubsub *ps, channel *ch) {
    dlock__map_remove(&ps->channels, ch->name);
    dlock__free(ch->name);
    dlock__free(ch);
}

static void send_one(dlock__pubsub *ps, const char *verb, channel *ch) {
    if (!ps->link.ac || ps->link.state != LINK_READY)
        return;
    const char *argv[2] = {verb, ch->name};
    size_t lens[2] = {strlen(verb), ch->len};
    if (redisAsyncCommandArgv(ps->link.ac, on_sub_reply, ps, 2, argv, lens) != REDIS_OK)
        dlock__link_fail_later(&ps->link, DLOCK_ECONN, "cannot send (out of memory?)");
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

static void on_sub_reply(redisAsyncContext *ac, void *r, void *privdata) {
    (void)privdata;
    dlock__link *link = ac->data;
    redisReply *reply = r;
    if (!link || !reply || reply->type != REDIS_REPLY_ARRAY || reply->elements < 3 ||
        reply->element[0]->type != REDIS_REPLY_STRING ||
        reply->element[1]->type != REDIS_REPLY_STRING)
        return;
    dlock__pubsub *ps = pubsub_of(link);
    const char *kind = reply->element[0]->str;
    channel *ch = dlock__map_get(&ps->channels, reply->element[1]->str);
    if (!ch)
        return;
    if (strcmp(kind, "message") == 0) {
        const redisReply *payload = reply->element[2];
        dlock__listener *l = ch->listeners;
        while (l) {
            /* a listener may leave from inside its own callback */
            dlock__listener *next = l->next;
            if (l->on_message)
                l->on_message(l, payload->str ? payload->str : "", payload->len);
            l = next;
        }
    } else if (strcmp(kind, "subscribe") == 0) {
        if (ch->state == CH_SUBSCRIBING) {
            ch->state = CH_ACTIVE;
            notify_ready(ch);
        }
    } else if (strcmp(kind, "unsubscribe") == 0) {
        if (ch->state != CH_UNSUBSCRIBING)
            return;
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
    else if (ch->state != CH_REFUSED)
        ch->state = CH_IDLE;
}

static void find_oldest_subscribing(const char *key, void *value, void *arg) {
    (void)key;
    channel *ch = value, **oldest = arg;
    if (ch->state == CH_SUBSCRIBING && (!*oldest || ch->subscribe_seq < (*oldest)->subscribe_seq))
        *oldest = ch;
}

/* The server refused a SUBSCRIBE: Redis answers in order, so it is the oldest one not yet
 * confirmed. Its listeners hear it (they leave, and the channel goes with the last). */
static void refuse_oldest(dlock__pubsub *ps) {
    channel *ch = NULL;
    dlock__map_each(&ps->channels, find_oldest_subscribing, &ch);
    if (!ch)
        return;
    const char *server_text = strstr(ps->link.last_error_text, "NOPERM");
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
    dlock__pubsub *ps = pubsub_of(link);
    if (err == DLOCK_ENOPERM)
        refuse_oldest(ps);
    each_channel(ps, reset_channel);
}

static void on_handshake_pong(redisAsyncContext *ac, void *r, void *privdata) {
    (void)privdata;
    dlock__link *link = ac->data;
    redisReply *reply = r;
    if (!link || !reply)
        return;
    if (reply->type == REDIS_REPLY_ERROR)
        dlock__link_handshake_error(link, reply);
    else
        dlock__link_handshake_step(link);
}

/* A PING before the link counts as ready: a server that accepts the connection and then
 * closes it (maxclients reached, a proxy whose backend is down) must look like a failed
 * attempt, which backs off, not like a ready link dropping, which reconnects at once. */
static int handshake_ping(dlock__link *link) {
    return redisAsyncCommand(link->ac, on_handshake_pong, NULL, "PING") == REDIS_OK ? 1 : 0;
}

void dlock__pubsub_init(dlock__pubsub *ps, dlock_client *c) {
    memset(ps, 0, sizeof(*ps));
    dlock__link_init(&ps->link, c, "subscriber");
    ps->link.on_ready = on_ready;
    ps->link.on_down = on_down;
    ps->link.handshake_extra = handshake_ping;
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

int dlock__listen(dlock_client *c, const char *name, dlock__listener *l) {
    dlock__pubsub *ps = &c->pubsub;
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
    dlock__pubsub *ps = &c->pubsub;
    if ((ch->state == CH_ACTIVE || ch->state == CH_SUBSCRIBING) && ps->link.state == LINK_READY) {
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
