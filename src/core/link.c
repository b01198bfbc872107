/* link.c — one connection to Redis: connect (TCP or unix) within connect_timeout_ms,
 * the handshake (AUTH, SELECT, whatever the owner adds: the script loads), and reconnect
 * after a drop with capped, jittered exponential backoff.
 *
 * The command connection (conn.c) and the subscriber connection (pubsub.c) are both links;
 * they only say what to do when the link becomes ready and when it goes down.
 *
 * hiredis contexts are never freed from inside a hiredis callback: a failure seen there is
 * acted on from a zero-delay timer (dlock__link_fail_later). Before a context is freed its
 * data pointer is cleared, so the NULL-reply callbacks hiredis runs while freeing it find
 * no link and do nothing; the owner settles its commands in on_down instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/async.h>

#include "core.h"

/* Backoff after k consecutive failed attempts: retry_delay_ms * 2^(k-1), at most 8x, then
 * a random point in its upper half so that many clients cut off together do not come
 * back together. Every reconnect waits for it, the first after a drop too: a server that
 * accepts a connection and drops it once it is used (a refused SUBSCRIBE, a proxy whose
 * backend is down) would otherwise be reconnected to in a tight loop. */
static int64_t backoff_ms(const dlock__link *link) {
    int64_t base = link->client->opts.retry_delay_ms;
    int shift = link->failures - 1 < 3 ? link->failures - 1 : 3;
    int64_t d = base << shift;
    if (d <= 1)
        return d;
    return d / 2 + (int64_t)(dlock__random_u64() % (uint64_t)(d / 2 + 1));
}

/* How long a ready link must stay up before its drop counts as a first failure again:
 * the longest backoff. A link that drops sooner keeps climbing the backoff. */
static int64_t stable_ms(const dlock__link *link) {
    return link->client->opts.retry_delay_ms << 3;
}

static void set_error(dlock__link *link, int err, const char *why) {
    char where[160];
    dlock__endpoint_describe(&link->client->endpoint, where, sizeof(where));
    link->last_error = err;
    snprintf(link->last_error_text, sizeof(link->last_error_text), "%s connection to %s: %s",
             link->role, where, why);
}

/* Frees the hiredis context now (never from inside one of its callbacks). */
static void drop_context(dlock__link *link) {
    redisAsyncContext *ac = link->ac;
    if (!ac)
        return;
    link->ac = NULL;
    ac->data = NULL;
    redisAsyncFree(ac);
}

/* An attempt failed (refused, timed out, handshake refused), or a ready link dropped:
 * tear it down and reconnect after the backoff. */
static void attempt_failed(dlock__link *link, int err, const char *why) {
    if (link->failures < 4) /* the backoff stops growing at the fourth */
        link->failures++;
    set_error(link, err, why);
    dlock__log(link->client, DLOCK_LOG_WARN, "%s", link->last_error_text);
    drop_context(link);
    link->state = LINK_BACKOFF;
    dlock__timer_start(&link->client->sched, &link->timer, backoff_ms(link));
    if (link->on_down)
        link->on_down(link, err);
}

void dlock__link_fail(dlock__link *link, int err, const char *why) {
    if (link->state == LINK_CLOSED || link->state == LINK_BACKOFF || link->state == LINK_IDLE)
        return;
    if (link->state == LINK_READY && dlock__now_ms() - link->ready_ms >= stable_ms(link))
        link->failures = 0; /* it had proven itself: start the backoff from its first step */
    attempt_failed(link, err, why);
}

static void on_timer(dlock__timer *t, void *arg) {
    (void)t;
    dlock__link *link = arg;
    /* a failure left by dlock__link_fail_later; copied, as set_error rewrites the text */
    char why[sizeof(link->last_error_text)];
    snprintf(why, sizeof(why), "%s", link->last_error_text);
    switch (link->state) {
    case LINK_BACKOFF:
        dlock__link_start(link);
        break;
    case LINK_CONNECTING:
    case LINK_HANDSHAKE:
        if (link->last_error != DLOCK_OK)
            attempt_failed(link, link->last_error, why);
        else
            attempt_failed(link, DLOCK_ECONN, "connect timed out");
        break;
    case LINK_READY:
        if (link->last_error != DLOCK_OK)
            dlock__link_fail(link, link->last_error, why);
        break;
    default:
        break;
    }
}

void dlock__link_fail_later(dlock__link *link, int err, const char *why) {
    if (link->state == LINK_CLOSED || link->state == LINK_BACKOFF)
        return;
    if (link->last_error != DLOCK_OK)
        return; /* the first failure is the cause: a refused AUTH makes the pipelined
                   commands behind it fail with NOAUTH too */
    set_error(link, err, why);
    /* keep only the reason in last_error_text; set_error prefixed the role */
    snprintf(link->last_error_text, sizeof(link->last_error_text), "%s", why);
    dlock__timer_start(&link->client->sched, &link->timer, 0);
}

static void become_ready(dlock__link *link) {
    dlock__timer_stop(&link->client->sched, &link->timer);
    link->state = LINK_READY;
    link->ready_ms = dlock__now_ms(); /* failures stay until the link proves stable */
    link->last_error = DLOCK_OK;
    link->last_error_text[0] = '\0';
    dlock__log(link->client, DLOCK_LOG_INFO, "%s connection ready", link->role);
    if (link->on_ready)
        link->on_ready(link);
}

void dlock__link_handshake_step(dlock__link *link) {
    if (link->state == LINK_HANDSHAKE && --link->handshake_pending == 0)
        become_ready(link);
}

static bool starts_with(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

void dlock__link_handshake_error(dlock__link *link, const redisReply *reply) {
    const char *text = reply && reply->str ? reply->str : "no reply";
    /* "ERR AUTH <password> called without any password configured ...": the server wants
     * no password, so the credentials are what is wrong (Redis names no password in it) */
    bool refused = starts_with(text, "WRONGPASS") || starts_with(text, "NOAUTH") ||
                   strstr(text, "invalid password") || strstr(text, "invalid username") ||
                   strstr(text, "without any password configured");
    int err = refused ? DLOCK_EAUTH : starts_with(text, "NOPERM") ? DLOCK_ENOPERM : DLOCK_EREDIS;
    dlock__link_fail_later(link, err, text);
}

static void on_handshake_reply(redisAsyncContext *ac, void *r, void *privdata) {
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

static void on_connect(const redisAsyncContext *cac, int status) {
    redisAsyncContext *ac = (redisAsyncContext *)cac;
    dlock__link *link = ac->data;
    if (!link)
        return;
    if (status != REDIS_OK) {
        /* hiredis frees ac itself after this callback */
        link->ac = NULL;
        ac->data = NULL;
        attempt_failed(link, DLOCK_ECONN, ac->errstr[0] ? ac->errstr : "connect failed");
        return;
    }
    link->state = LINK_HANDSHAKE;
    link->handshake_pending = 1; /* held until every handshake command is queued */
    const dlock__endpoint *ep = &link->client->endpoint;
    if (ep->password) {
        link->handshake_pending++;
        if (ep->user)
            redisAsyncCommand(ac, on_handshake_reply, NULL, "AUTH %s %s", ep->user, ep->password);
        else
            redisAsyncCommand(ac, on_handshake_reply, NULL, "AUTH %s", ep->password);
    }
    if (link->select_db && ep->db != 0) {
        link->handshake_pending++;
        redisAsyncCommand(ac, on_handshake_reply, NULL, "SELECT %d", ep->db);
    }
    if (link->handshake_extra)
        link->handshake_pending += link->handshake_extra(link);
    dlock__link_handshake_step(link);
}

static void on_disconnect(const redisAsyncContext *cac, int status) {
    (void)status;
    dlock__link *link = cac->data;
    if (!link || link->ac != cac)
        return; /* a context we dropped ourselves */
    /* hiredis frees the context after this callback */
    link->ac = NULL;
    ((redisAsyncContext *)cac)->data = NULL;
    /* hiredis drops the connection on an error reply that no command waits for: on the
     * subscriber connection that is a refused SUBSCRIBE (NOPERM), which pubsub.c's on_down
     * tells its channel */
    int err = starts_with(cac->errstr, "NOPERM") ? DLOCK_ENOPERM : DLOCK_ECONN;
    dlock__link_fail(link, err, cac->errstr[0] ? cac->errstr : "connection closed by the server");
}

void dlock__link_init(dlock__link *link, dlock_client *c, const char *role) {
    memset(link, 0, sizeof(*link));
    link->client = c;
    link->role = role;
    link->state = LINK_IDLE;
    dlock__timer_init(&link->timer, on_timer, link);
}

void dlock__link_start(dlock__link *link) {
    dlock_client *c = link->client;
    const dlock__endpoint *ep = &c->endpoint;
    link->state = LINK_CONNECTING;
    link->last_error = DLOCK_OK;
    redisAsyncContext *ac = ep->is_unix ? redisAsyncConnectUnix(ep->path)
                                        : redisAsyncConnect(ep->host, ep->port);
    if (!ac) {
        attempt_failed(link, DLOCK_ECONN, "out of memory");
        return;
    }
    if (ac->err) {
        char why[160];
        snprintf(why, sizeof(why), "%s", ac->errstr);
        redisAsyncFree(ac);
        attempt_failed(link, DLOCK_ECONN, why);
        return;
    }
    if (dlock__loop_attach(c->loop, ac) != DLOCK_OK) {
        redisAsyncFree(ac);
        attempt_failed(link, DLOCK_ECONN, "out of memory");
        return;
    }
    ac->data = link;
    link->ac = ac;
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    dlock__timer_start(&c->sched, &link->timer, c->opts.connect_timeout_ms);
}

void dlock__link_close(dlock__link *link) {
    link->state = LINK_CLOSED;
    dlock__timer_stop(&link->client->sched, &link->timer);
    drop_context(link);
}

/* ---- the text of a permission error ------------------------------------------------- */

/* The ACL pattern that grants channel and its siblings: the prefix before the name in
 * braces ("redisson_lock__channel:{a}" -> "redisson_lock__channel:*"), else the channel. */
static void channel_grant(const char *channel, char *buf, size_t size) {
    const char *brace = strchr(channel, '{');
    if (brace)
        snprintf(buf, size, "&%.*s*", (int)(brace - channel), channel);
    else
        snprintf(buf, size, "&%s", channel);
}

void dlock__noperm_text(const dlock_client *c, const char *server_text, const char *channel,
                        char *buf, size_t size) {
    const char *user = c->endpoint.user ? c->endpoint.user : "default";
    char grant[160];
    if (channel) {
        channel_grant(channel, grant, sizeof(grant));
        snprintf(buf, size,
                 "the ACL of user '%s' denies channel %s (NOPERM); grant it: ACL SETUSER %s %s "
                 "(or allchannels)",
                 user, channel, user, grant);
        return;
    }
    const char *text = server_text ? server_text : "NOPERM";
    /* a script's refusal ends with "script: <sha>, on @user_script:<line>.": noise here */
    const char *noise = strstr(text, " script: ");
    int text_len = noise ? (int)(noise - text) : (int)strlen(text);
    const char *what = strstr(text, "channel") ? "allchannels (or &redisson_*)"
                       : strstr(text, "key")   ? "~<the keys of the object>"
                                               : "+<the command> (dlock needs +@scripting)";
    snprintf(buf, size, "the ACL of user '%s' refused: %.*s; grant it: ACL SETUSER %s %s", user,
             text_len, text, user, what);
}
