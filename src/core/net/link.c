/* SPDX-License-Identifier: MIT */
/* link.c — one connection to Redis: connect (TCP or unix, plain or TLS) within
 * connect_timeout_ms, the handshake (AUTH, SELECT, whatever the owner adds: the script
 * loads), reply dispatch, and reconnect after a drop: the first at once, then with capped,
 * jittered exponential backoff (backoff_ms).
 *
 * The command connection (conn.c) and the subscriber connection (pubsub.c) are both links;
 * they only say what to do when the link becomes ready, when it goes down, and (the
 * subscriber) which replies are pushes.
 *
 * The bytes are sock.c's; the link feeds what arrives to hiredis' RESP reader and never
 * trusts what comes out: every reply answers the oldest command still waiting (Redis
 * answers in order), except the subscriber's pushes (on_push). A reply that answers no
 * command, a push of the wrong shape or bytes that are not RESP are a protocol violation:
 * the link logs what arrived, drops the connection (its owner fails or resends what was in
 * flight, as on any drop) and reconnects after its backoff. Nothing a server or a proxy
 * sends can end the process.
 *
 * An owner that has no use for its connection for a while (a Cluster shard's subscriber
 * with no channel left) stops the link: the connection goes, nothing reconnects, and
 * dlock__link_start opens it again later.
 *
 * A connection may be dropped from anywhere on the loop thread, a reply callback included:
 * the dispatch loop notices (generation) and stops, and the sock frees itself once its
 * hook returns. The owner settles its commands in on_down. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "net/net.h"

/* The reconnect schedule. The first reconnect after a drop is at once: a connection killed
 * or reset once is most likely back at the first try, and a waiter or a renewal should not
 * pay for a fault that is already over. Each further consecutive failure waits a step of
 * BACKOFF_BASE_MS doubling (10, 20, 40, ... ms) up to the longest step, and of each step a
 * random point in its upper half, so that many clients cut off together do not come back
 * together.
 *
 * The longest step is retry_delay_ms, and while the client holds leases the watchdog keeps
 * at most a third of the shortest of them: a lease is renewed every third of its time, so
 * a link that waits longer than that for its next attempt may let a lease run out while
 * the server is fine (a server killing connections every few hundred ms).
 *
 * A tight loop cannot come of it: a server that accepts a connection and drops it as soon
 * as it is used (a proxy whose backend is down) fails each attempt in turn, and so does a
 * link that drops within STABLE_MS of becoming ready: the failures add up and the steps
 * grow; only a link that stayed up that long starts again from the immediate attempt. A
 * server that drops everything sees an attempt per longest step (one a second by default),
 * one that drops each connection after a while at most one a second. STABLE_MS is one
 * second whatever retry_delay_ms says: a connection that served for a second and was then
 * killed comes back at once however long the user lets the steps grow. */
#define BACKOFF_BASE_MS 10
#define STABLE_MS 1000
#define FAILURES_MAX 40 /* BACKOFF_BASE_MS << 38 passes any retry_delay_ms */

/* retry_delay_ms, or a third of the shortest lease held if that is shorter; never below
 * BACKOFF_BASE_MS, which bounds the attempts a dead server gets from a link that was told
 * 1 ms (or holds a lease of a few ms, which no reconnect could save anyway). */
static int64_t longest_step_ms(const dlock__link *link) {
    const dlock_client *c = link->client;
    int64_t longest = DLOCK__BASE(c)->opts.retry_delay_ms;
    int64_t lease = DLOCK__NET(c)->shortest_lease_ms(c); /* the engine's hook (client.c) */
    if (lease > 0 && lease / 3 < longest)
        longest = lease / 3;
    return longest > BACKOFF_BASE_MS ? longest : BACKOFF_BASE_MS;
}

/* The delay before the next attempt, after link->failures consecutive failures (>= 1). */
static int64_t backoff_ms(const dlock__link *link) {
    if (link->failures <= 1)
        return 0;
    int64_t longest = longest_step_ms(link);
    int64_t d = (int64_t)BACKOFF_BASE_MS << (link->failures - 2);
    if (d > longest)
        d = longest;
    if (d <= 1)
        return d;
    return d / 2 + (int64_t)(dlock__random_u64() % (uint64_t)(d / 2 + 1));
}

static void set_error(dlock__link *link, int err, const char *why) {
    char where[320]; /* a 255-byte host name, its port, " (TLS)" */
    dlock__endpoint_describe(link->target ? link->target : &DLOCK__NET(link->client)->endpoint,
                             where, sizeof(where));
    link->last_error = err;
    dlock__format_fit(link->last_error_text, sizeof(link->last_error_text),
                      "%s connection to %s: %s", link->role, where, why);
}

/* Drops the connection now: its bytes, its reader, the replies it waited for. */
static void drop_connection(dlock__link *link) {
    if (!link->sock && !link->reader)
        return;
    link->generation++;
    dlock__sock_close(link->sock);
    link->sock = NULL;
    if (link->reader)
        redisReaderFree(link->reader);
    link->reader = NULL;
    link->expect_head = link->expect_count = 0;
}

/* An attempt failed (refused, timed out, handshake refused), or a ready link dropped:
 * tear it down and reconnect after the backoff. */
static void attempt_failed(dlock__link *link, int err, const char *why) {
    if (link->failures < FAILURES_MAX) /* the steps stopped growing long before */
        link->failures++;
    set_error(link, err, why);
    dlock__log(link->client, DLOCK_LOG_WARN, "%s", link->last_error_text);
    drop_connection(link);
    link->state = LINK_BACKOFF;
    dlock__timer_start(&DLOCK__NET(link->client)->sched, &link->timer, backoff_ms(link));
    if (link->on_down)
        link->on_down(link, err);
}

void dlock__link_fail(dlock__link *link, int err, const char *why) {
    if (link->state == LINK_CLOSED || link->state == LINK_BACKOFF || link->state == LINK_IDLE)
        return;
    if (link->state == LINK_READY && dlock__now_ms() - link->ready_ms >= STABLE_MS)
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
    dlock__timer_start(&DLOCK__NET(link->client)->sched, &link->timer, 0);
}

static void become_ready(dlock__link *link) {
    dlock__timer_stop(&DLOCK__NET(link->client)->sched, &link->timer);
    link->state = LINK_READY;
    if (link->ready_ms && link->counts_reconnects)
        dlock__stat_add(link->client, DLOCK__STAT_RECONNECTS, 1); /* not the sentinel links */
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

void dlock__link_handshake_error(dlock__link *link, const dlock__reply *reply) {
    const char *text = reply && reply->str ? reply->str : "no reply";
    /* "ERR AUTH <password> called without any password configured ...": the server wants
     * no password, so the credentials are what is wrong (Redis names no password in it) */
    bool refused = starts_with(text, "WRONGPASS") || starts_with(text, "NOAUTH") ||
                   strstr(text, "invalid password") || strstr(text, "invalid username") ||
                   strstr(text, "without any password configured");
    int err = refused ? DLOCK_EAUTH : starts_with(text, "NOPERM") ? DLOCK_ENOPERM : DLOCK_EREDIS;
    /* the first refusal is the cause: the pipelined commands behind a refused AUTH would
     * fail with NOAUTH too, and are never read */
    dlock__link_fail(link, err, text);
}

void dlock__link_handshake_reply(dlock__link *link, const dlock__reply *reply, void *arg) {
    (void)arg;
    if (reply->type == REDIS_REPLY_ERROR)
        dlock__link_handshake_error(link, reply);
    else
        dlock__link_handshake_step(link);
}

/* ---- sending and dispatching ------------------------------------------------------------ */

static bool expect_push(dlock__link *link, dlock__link_reply_fn fn, void *arg) {
    if (link->expect_count == link->expect_cap) {
        size_t cap = link->expect_cap ? link->expect_cap * 2 : 64;
        dlock__link_expect *grown = dlock__malloc(cap * sizeof(*grown));
        if (!grown)
            return false;
        for (size_t i = 0; i < link->expect_count; i++) /* unrolled from the ring */
            grown[i] = link->expect[(link->expect_head + i) % link->expect_cap];
        dlock__free(link->expect);
        link->expect = grown;
        link->expect_cap = cap;
        link->expect_head = 0;
    }
    link->expect[(link->expect_head + link->expect_count) % link->expect_cap] =
        (dlock__link_expect){fn, arg};
    link->expect_count++;
    return true;
}

int dlock__link_send(dlock__link *link, int argc, const char **argv, const size_t *lens,
                     dlock__link_reply_fn fn, void *arg) {
    if (!link->sock || (link->state != LINK_HANDSHAKE && link->state != LINK_READY))
        return DLOCK_ECONN;
    size_t len = dlock__resp_command_len(argc, lens);
    char *out = dlock__sock_reserve(link->sock, len);
    if (out) {
        dlock__resp_command_put(out, argc, argv, lens);
        dlock__sock_wrote(link->sock, len);
    }
    /* sent without a taker, its reply would be a violation: the link goes either way */
    if (!out || !expect_push(link, fn, arg)) {
        dlock__link_fail(link, DLOCK_ECONN, "out of memory sending a command");
        return DLOCK_ENOMEM;
    }
    return DLOCK_OK;
}

void dlock__link_protocol_error(dlock__link *link, const char *what, const dlock__reply *reply) {
    char arrived[96], why[200];
    if (reply) {
        dlock__reply_describe(reply, arrived, sizeof(arrived));
        snprintf(why, sizeof(why), "protocol violation: %s: %s arrived", what, arrived);
    } else {
        snprintf(why, sizeof(why), "protocol violation: %s", what);
    }
    dlock__link_fail(link, DLOCK_ECONN, why);
}

static bool is_array_opening_with_string(const redisReply *r) {
    return r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
           r->element[0]->type == REDIS_REPLY_STRING;
}

static void dispatch(dlock__link *link, const redisReply *reply) {
    if (link->on_push && is_array_opening_with_string(reply) && link->on_push(link, reply))
        return;
    if (link->expect_count == 0) {
        dlock__link_protocol_error(link, "a reply to no command", reply);
        return;
    }
    dlock__link_expect e = link->expect[link->expect_head];
    link->expect_head = (link->expect_head + 1) % link->expect_cap;
    link->expect_count--;
    e.fn(link, reply, e.arg);
    /* A master that became a replica (a failover this client did not hear of) refuses
     * writes: a link that asks where to connect asks again (the resolve hook) */
    if (link->resolve && reply->type == REDIS_REPLY_ERROR && starts_with(reply->str, "READONLY"))
        dlock__link_fail(link, DLOCK_ECONN, "the node is a replica now (READONLY)");
}

/* ---- reading replies ---------------------------------------------------------------------- */

/* hiredis allocates an array's element pointers as soon as its header announces them, so
 * a few bytes from a broken or hostile peer ("*2000000000") would cost gigabytes. Every
 * reply may announce at most this many elements in all its arrays (8 MiB of pointers; a
 * renewal batch of 100,000 leases is far below it); past it the reply is refused, which
 * costs the connection like any protocol violation. */
#define REPLY_ELEMENTS_MAX ((size_t)1 << 20)

static redisReplyObjectFunctions capped_functions;
static void *(*create_array_unbounded)(const redisReadTask *, int);

static void *create_array_capped(const redisReadTask *task, int elements) {
    dlock__link *link = task->privdata; /* hiredis hands every task its reader's privdata */
    if (link && elements > 0) {
        link->reply_elements += (size_t)elements;
        if (link->reply_elements > REPLY_ELEMENTS_MAX)
            return NULL; /* the reader stops with an error */
    }
    return create_array_unbounded(task, elements);
}

static void capped_functions_init(void) {
    redisReader *probe = redisReaderCreate();
    if (!probe)
        return;
    capped_functions = *probe->fn;
    create_array_unbounded = capped_functions.createArray;
    capped_functions.createArray = create_array_capped;
    redisReaderFree(probe);
}

/* A RESP reader whose arrays are capped (REPLY_ELEMENTS_MAX), reading for link. */
static redisReader *reader_new(dlock__link *link) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, capped_functions_init);
    if (!create_array_unbounded)
        return NULL;
    redisReader *reader = redisReaderCreateWithFunctions(&capped_functions);
    if (reader) /* not redisReaderSetPrivdata: it casts the pointer to int */
        reader->privdata = link;
    link->reply_elements = 0;
    return reader;
}

/* ---- the sock's hooks --------------------------------------------------------------------- */

static void on_data(void *arg, const char *buf, size_t len) {
    dlock__link *link = arg;
    uint64_t generation = link->generation;
    if (redisReaderFeed(link->reader, buf, len) != REDIS_OK) {
        dlock__link_fail(link, DLOCK_ECONN, "out of memory reading a reply");
        return;
    }
    for (;;) {
        void *reply = NULL;
        if (redisReaderGetReply(link->reader, &reply) != REDIS_OK) {
            char what[160];
            if (link->reply_elements > REPLY_ELEMENTS_MAX)
                snprintf(what, sizeof(what), "a reply announcing more than %zu array elements",
                         REPLY_ELEMENTS_MAX);
            else
                snprintf(what, sizeof(what), "%s", link->reader->errstr);
            dlock__link_protocol_error(link, what, NULL);
            return;
        }
        if (!reply)
            return;
        link->reply_elements = 0; /* the next reply starts its own count */
        dispatch(link, reply);
        freeReplyObject(reply);
        if (link->generation != generation)
            return; /* the connection went while its reply was handled */
    }
}

static void on_failed(void *arg, const char *why) {
    dlock__link *link = arg;
    if (link->state == LINK_READY)
        dlock__link_fail(link, DLOCK_ECONN, why);
    else if (link->state == LINK_CONNECTING || link->state == LINK_HANDSHAKE)
        attempt_failed(link, DLOCK_ECONN, why);
}

static void send_handshake(dlock__link *link, dlock__link_reply_fn fn, int argc,
                           const char **argv) {
    size_t lens[3];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    if (dlock__link_send(link, argc, argv, lens, fn, NULL) == DLOCK_OK)
        link->handshake_pending++;
}

static void on_connected(void *arg) {
    dlock__link *link = arg;
    link->state = LINK_HANDSHAKE;
    link->handshake_pending = 1; /* held until every handshake command is queued */
    uint64_t generation = link->generation;
    const dlock__endpoint *ep = link->target;
    if (ep->password) {
        const char *with_user[] = {"AUTH", ep->user, ep->password};
        const char *password_only[] = {"AUTH", ep->password};
        if (ep->user)
            send_handshake(link, dlock__link_handshake_reply, 3, with_user);
        else
            send_handshake(link, dlock__link_handshake_reply, 2, password_only);
    }
    if (link->select_db && ep->db != 0) {
        char db[16];
        snprintf(db, sizeof(db), "%d", ep->db);
        const char *select[] = {"SELECT", db};
        send_handshake(link, dlock__link_handshake_reply, 2, select);
    }
    if (link->handshake_extra && link->generation == generation)
        link->handshake_pending += link->handshake_extra(link);
    if (link->generation == generation)
        dlock__link_handshake_step(link);
}

static const dlock__sock_hooks sock_hooks = {on_connected, on_data, on_failed};

void dlock__link_init(dlock__link *link, dlock_client *c, const char *role) {
    memset(link, 0, sizeof(*link));
    link->client = c;
    link->role = role;
    link->state = LINK_IDLE;
    dlock__timer_init(&link->timer, on_timer, link);
}

void dlock__link_connect_to(dlock__link *link, const dlock__endpoint *ep) {
    if (link->state != LINK_CONNECTING || link->sock)
        return; /* the attempt timed out (or was closed) while the hook worked */
    dlock_client *c = link->client;
    link->target = ep;
    if (link->resolve) /* the connect timeout bounds the connection, the hook its own time */
        dlock__timer_start(&DLOCK__NET(c)->sched, &link->timer,
                           DLOCK__BASE(c)->opts.connect_timeout_ms);
    char why[200];
    link->reader = reader_new(link);
    if (!link->reader) {
        attempt_failed(link, DLOCK_ECONN, "out of memory");
        return;
    }
    link->sock = dlock__sock_open(DLOCK__NET(c)->loop, ep, DLOCK__NET(c)->tls, &sock_hooks, link,
                                  why, sizeof(why));
    if (!link->sock)
        attempt_failed(link, DLOCK_ECONN, why);
}

void dlock__link_resolve_failed(dlock__link *link, int err, const char *why) {
    if (link->state == LINK_CONNECTING && !link->sock)
        attempt_failed(link, err, why);
}

void dlock__link_start(dlock__link *link) {
    dlock_client *c = link->client;
    link->state = LINK_CONNECTING;
    link->last_error = DLOCK_OK;
    if (link->resolve) {
        dlock__timer_stop(&DLOCK__NET(c)->sched, &link->timer);
        link->resolve(link);
        return;
    }
    dlock__timer_start(&DLOCK__NET(c)->sched, &link->timer,
                       DLOCK__BASE(c)->opts.connect_timeout_ms);
    dlock__link_connect_to(link, &DLOCK__NET(c)->endpoint);
}

void dlock__link_stop(dlock__link *link) {
    if (link->state == LINK_CLOSED || link->state == LINK_IDLE)
        return;
    dlock__timer_stop(&DLOCK__NET(link->client)->sched, &link->timer);
    drop_connection(link);
    link->state = LINK_IDLE; /* failures stay: a node that keeps failing keeps its backoff */
    link->ready_ms = 0;      /* its next connection, when one is wanted, is no reconnect */
}

bool dlock__client_commands_steady(const dlock_client *c) {
    const dlock__link *link = &DLOCK__NET(c)->conn.link;
    return link->state == LINK_READY && dlock__now_ms() - link->ready_ms >= STABLE_MS;
}

bool dlock__link_awaits(const dlock__link *link, dlock__link_reply_fn fn, const void *arg) {
    if (link->expect_count == 0)
        return false;
    const dlock__link_expect *oldest = &link->expect[link->expect_head];
    return oldest->fn == fn && oldest->arg == arg;
}

void dlock__link_close(dlock__link *link) {
    link->state = LINK_CLOSED;
    dlock__timer_stop(&DLOCK__NET(link->client)->sched, &link->timer);
    drop_connection(link);
    dlock__free(link->expect);
    link->expect = NULL;
    link->expect_cap = 0;
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

/* "+sadd" for a refusal that names its command ("... no permissions to run the 'sadd'
 * command", the server's words for a command, and a script's since Redis 7.2); false when
 * it names none (a script's refusal on Redis 7.0: "can't run this command or subcommand"). */
static bool refused_command(const char *text, char *buf, size_t size) {
    const char *start = strstr(text, "to run the '");
    if (!start)
        return false;
    start += strlen("to run the '");
    const char *end = strchr(start, '\'');
    if (!end || end == start || (size_t)(end - start) + 2 > size)
        return false;
    snprintf(buf, size, "+%.*s", (int)(end - start), start);
    for (char *p = buf + 1; *p; p++)
        *p = *p == ' ' ? '|' : *p; /* "config get" -> +config|get */
    return true;
}

void dlock__noperm_text(const dlock_client *c, const char *server_text, const char *channel,
                        const char *command, char *buf, size_t size) {
    const char *user = DLOCK__NET(c)->endpoint.user ? DLOCK__NET(c)->endpoint.user : "default";
    char grant[160];
    if (channel) {
        channel_grant(channel, grant, sizeof(grant));
        dlock__format_fit(buf, size,
                          "the ACL of user '%s' denies channel %s (NOPERM); grant it: ACL "
                          "SETUSER %s %s (or allchannels)",
                          user, channel, user, grant);
        return;
    }
    const char *text = server_text ? server_text : "NOPERM";
    /* a script's refusal ends with "script: <sha>, on @user_script:<line>.": noise here */
    const char *noise = strstr(text, " script: ");
    int text_len = noise ? (int)(noise - text) : (int)strlen(text);
    char named[64];
    if (command)
        snprintf(named, sizeof(named), "+%s", command);
    const char *what = strstr(text, "channel") ? "allchannels (or &redisson_*)"
                       : strstr(text, "key")   ? "~<the keys of the object>"
                       : command || refused_command(text, named, sizeof(named))
                           ? named
                           : "+<the command ACL LOG names> (every command dlock sends is in the "
                             "ACL rule of its docs, operations.md)";
    dlock__format_fit(buf, size, "the ACL of user '%s' refused: %.*s; grant it: ACL SETUSER %s %s",
                      user, text_len, text, user, what);
}
