/* SPDX-License-Identifier: MIT */
/* client.c — options, the client's lifetime, its id, and the I/O thread of the blocking
 * face.
 *
 * A client is the shared layer of one application's connection to one Redis: the command
 * connection, the subscriber connection, the scheduler, the waiting engine and the
 * watchdog, all run by one libev loop. dlock_client_new() gives that loop a thread of its
 * own and waits until the command connection is ready; dlock_client_new_on_loop() puts the
 * client on the application's loop and connects in the background. Closing happens on the
 * loop thread, in the order that lets each part settle what the next part owns: queued
 * calls, commands (which settles attempts of waiters and renewals), waiters, leases,
 * subscriptions, timers. */
#include <signal.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology/cluster.h"
#include "client/client.h"
#include "topology/sentinel.h"

#define DEFAULT_URL "redis://127.0.0.1:6379"

void dlock_options_init(dlock_options *o) {
    if (!o)
        return;
    memset(o, 0, sizeof(*o));
    o->size = sizeof(*o);
    o->url = NULL;
    o->watchdog_ms = 30000;
    o->renew_batch = 100;
    o->timeout_ms = 3000;
    o->connect_timeout_ms = 10000;
    o->retry_attempts = 3;
    o->retry_delay_ms = 1000;
    o->fair_wait_ms = 5000;
    o->reply_spin_us = DLOCK__SPIN_DEFAULT_US;
}

/* ---- settings a primitive reads ------------------------------------------------------- */

int64_t dlock__client_watchdog_ms(const dlock_client *c) {
    return DLOCK__BASE(c)->opts.watchdog_ms;
}

int64_t dlock__client_fair_wait_ms(const dlock_client *c) {
    return DLOCK__BASE(c)->opts.fair_wait_ms;
}

int64_t dlock__client_max_hold_ms(const dlock_client *c) {
    return DLOCK__BASE(c)->opts.max_hold_ms;
}

int dlock__client_tls_seconds_left(dlock_client *c, int64_t *out) {
    if (!DLOCK__NET(c)->endpoint.tls)
        return dlock__fail(DLOCK_EINVAL, "not a TLS URL");
    void *session = dlock__sock_tls_session(DLOCK__NET(c)->conn.link.sock);
    if (!session || !dlock__tls_peer_seconds_left(session, out))
        return dlock__fail(DLOCK_ECONN, "the command connection has no TLS session up");
    return DLOCK_OK;
}

int dlock__client_sentinel_survey(dlock_client *c, dlock__sentinel_survey_fn done, void *arg) {
    if (!DLOCK__TOPOLOGY(c)->sentinel)
        return dlock__fail(DLOCK_EINVAL, "not a Sentinel URL: no sentinels to ask");
    return dlock__sentinel_survey(DLOCK__TOPOLOGY(c)->sentinel, done, arg);
}

const char *dlock__client_endpoint(const dlock_client *c) {
    return c->endpoint_key;
}

const char *dlock_client_id(const dlock_client *c) {
    return c ? DLOCK__BASE(c)->id : "";
}

/* ---- options ---------------------------------------------------------------------------- */

/* Copies the caller's options over the defaults (only the fields its `size` covers, so a
 * program built against an older, smaller struct still works) and checks them. */
/* A URL read: the data nodes' settings in ep; a Sentinel URL's sentinels in su (ep has no
 * host: the sentinels name the master), a Cluster URL's seeds in cu (ep has no host: the
 * slot map names the masters); the other two empty. */
typedef struct parsed_url {
    dlock__endpoint ep;
    dlock__sentinel_url su;
    dlock__cluster_url cu;
} parsed_url;

static int parse_url(const char *url, parsed_url *u, char *err, size_t errlen) {
    memset(u, 0, sizeof(*u));
    int rc;
    if (dlock__url_is_sentinel(url)) {
        if ((rc = dlock__sentinel_url_parse(url, &u->su, err, errlen)) == DLOCK_OK) {
            u->ep = u->su.data;
            memset(&u->su.data, 0, sizeof(u->su.data));
        }
    } else if (dlock__url_is_cluster(url)) {
        if ((rc = dlock__cluster_url_parse(url, &u->cu, err, errlen)) == DLOCK_OK) {
            u->ep = u->cu.data;
            memset(&u->cu.data, 0, sizeof(u->cu.data));
        }
    } else {
        rc = dlock__url_parse(url, &u->ep, err, errlen);
    }
    return rc;
}

static int take_options(const dlock_options *in, dlock_options *out, parsed_url *u) {
    dlock_options_init(out);
    if (in) {
        if (in->size < offsetof(dlock_options, watchdog_ms) || in->size > sizeof(*in))
            return dlock__fail(DLOCK_EINVAL, "options.size is not set: call dlock_options_init");
        memcpy((char *)out + sizeof(out->size), (const char *)in + sizeof(in->size),
               in->size - sizeof(in->size));
    }
    if (out->watchdog_ms < 3 || out->watchdog_ms > DLOCK_MAX_TIME_MS)
        return dlock__fail(DLOCK_EINVAL, "watchdog_ms must be from 3 to DLOCK_MAX_TIME_MS");
    if (out->renew_batch < 1 || out->renew_batch > 100000)
        return dlock__fail(DLOCK_EINVAL, "renew_batch must be from 1 to 100000");
    if (out->timeout_ms < 1 || out->timeout_ms > DLOCK_MAX_TIME_MS)
        return dlock__fail(DLOCK_EINVAL, "timeout_ms must be from 1 to DLOCK_MAX_TIME_MS");
    if (out->connect_timeout_ms < 1 || out->connect_timeout_ms > DLOCK_MAX_TIME_MS)
        return dlock__fail(DLOCK_EINVAL, "connect_timeout_ms must be from 1 to DLOCK_MAX_TIME_MS");
    if (out->retry_attempts < 0 || out->retry_attempts > 1000)
        return dlock__fail(DLOCK_EINVAL, "retry_attempts must be from 0 to 1000");
    /* 0 would reconnect a refused connection in a tight loop */
    if (out->retry_delay_ms < 1 || out->retry_delay_ms > 3600000)
        return dlock__fail(DLOCK_EINVAL, "retry_delay_ms must be from 1 to 3600000");
    if (out->fair_wait_ms < 3 || out->fair_wait_ms > DLOCK_MAX_TIME_MS)
        return dlock__fail(DLOCK_EINVAL, "fair_wait_ms must be from 3 to DLOCK_MAX_TIME_MS");
    if (out->max_hold_ms < 0 || out->max_hold_ms > DLOCK_MAX_TIME_MS)
        return dlock__fail(DLOCK_EINVAL, "max_hold_ms must be from 0 to DLOCK_MAX_TIME_MS");
    if (out->reply_spin_us < 0 || out->reply_spin_us > DLOCK__SPIN_MAX_US)
        return dlock__fail(DLOCK_EINVAL, "reply_spin_us must be from 0 to %d", DLOCK__SPIN_MAX_US);
    const char *url = out->url;
    if (url && !url[0]) /* a caller's empty string is a mistake, not "the default" */
        return dlock__fail(DLOCK_EINVAL, "url is empty (NULL means $DLOCK_URL, else the default)");
    if (!url)
        url = getenv("DLOCK_URL");
    if (!url || !url[0])
        url = DEFAULT_URL;
    char err[DLOCK__ERROR_TEXT_SIZE];
    int rc = parse_url(url, u, err, sizeof(err));
    if (rc != DLOCK_OK)
        return dlock__fail(rc, "%s", err);
    out->url = NULL; /* the caller's string is not kept: the endpoint holds what it said */
    return DLOCK_OK;
}

/* ---- lifetime --------------------------------------------------------------------------- */

static void close_all(dlock_client *c) {
    pthread_mutex_lock(&DLOCK__ENGINE(c)->submit.mu);
    atomic_store(&DLOCK__NET(c)->closing, true);
    pthread_mutex_unlock(&DLOCK__ENGINE(c)->submit.mu);
    dlock__submit_close(&DLOCK__ENGINE(c)->submit, c);
    dlock__conn_close(&DLOCK__NET(c)->conn);
    dlock__cluster_close(DLOCK__TOPOLOGY(c)->cluster);
    dlock__waits_close(&DLOCK__ENGINE(c)->waits, c);
    dlock__renew_close(&DLOCK__ENGINE(c)->renew, c);
    dlock__pubsub_close(&DLOCK__NET(c)->pubsub);
    dlock__sentinel_close(DLOCK__TOPOLOGY(c)->sentinel);
    dlock__sched_close(&DLOCK__NET(c)->sched);
}

static void on_stop(void *arg) {
    dlock_client *c = arg;
    dlock__loop_wake_stop(DLOCK__NET(c)->loop, &c->stop_wake);
    close_all(c);
    dlock__loop_break(DLOCK__NET(c)->loop);
}

static void *io_thread_main(void *arg) {
    dlock_client *c = arg;
    dlock__loop_run_shared(&DLOCK__ENGINE(c)->loop_share);
    return NULL;
}

/* Starts the I/O thread with every signal blocked: the application's signals go to its
 * own threads. (Every socket write sends with MSG_NOSIGNAL, TLS ones too through tls.c's
 * BIO, so no SIGPIPE is raised to begin with; blocking it here is a second safeguard.) */
static int start_io_thread(dlock_client *c) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&c->io_thread, NULL, io_thread_main, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* ---- shared state ----------------------------------------------------------------------- */

typedef struct shared_header {
    int refs;
    void (*destroy)(void *state);
    char *key;
    _Alignas(max_align_t) unsigned char state[];
} shared_header;

static shared_header *header_of(void *state) {
    return DLOCK__CONTAINER_OF(state, shared_header, state);
}

void *dlock__shared_get(dlock_client *c, const char *key, size_t size, void (*destroy)(void *)) {
    shared_header *h = dlock__map_get(&DLOCK__ENGINE(c)->shared, key);
    if (h) {
        h->refs++;
        return h->state;
    }
    h = dlock__calloc(1, sizeof(*h) + size);
    if (!h || !(h->key = dlock__strdup(key)) ||
        dlock__map_put(&DLOCK__ENGINE(c)->shared, key, h) != 0) {
        if (h)
            dlock__free(h->key);
        dlock__free(h);
        return NULL;
    }
    h->refs = 1;
    h->destroy = destroy;
    return h->state;
}

static void shared_destroy(shared_header *h) {
    if (h->destroy)
        h->destroy(h->state);
    dlock__free(h->key);
    dlock__free(h);
}

void dlock__shared_put(dlock_client *c, void *state) {
    shared_header *h = header_of(state);
    if (--h->refs > 0)
        return;
    dlock__map_remove(&DLOCK__ENGINE(c)->shared, h->key);
    shared_destroy(h);
}

static void destroy_leftover(const char *key, void *value, void *arg) {
    (void)key;
    (void)arg;
    shared_destroy(value); /* a handle the application never freed */
}

bool dlock__client_closing(const dlock_client *c) {
    return atomic_load(&DLOCK__NET(c)->closing);
}

static void client_destroy(dlock_client *c) {
    dlock__map_each(&DLOCK__ENGINE(c)->shared, destroy_leftover, NULL);
    dlock__map_free(&DLOCK__ENGINE(c)->shared);
    if (DLOCK__ENGINE(c)->own_loop && DLOCK__NET(c)->loop) {
        dlock__loop_share_destroy(&DLOCK__ENGINE(c)->loop_share);
        dlock__loop_free(DLOCK__NET(c)->loop);
    }
    dlock__endpoint_free(&DLOCK__NET(c)->endpoint);
    dlock__tls_free(DLOCK__NET(c)->tls);
    dlock__sentinel_free(DLOCK__TOPOLOGY(c)->sentinel);
    dlock__cluster_free(DLOCK__TOPOLOGY(c)->cluster);
    dlock__scripts_free(c);
    dlock__free(DLOCK__NET(c)->script_sha);
    pthread_mutex_destroy(&c->ready_mu);
    pthread_cond_destroy(&c->ready_cond);
    pthread_mutex_destroy(&DLOCK__ENGINE(c)->submit.mu);
    dlock__free(c);
}

/* What dlock_client_new waits for: the first connection's outcome (DLOCK_OK, or why it
 * failed); later ones change nothing here. */
static void tell_ready(dlock_client *c, int status) {
    pthread_mutex_lock(&c->ready_mu);
    if (c->ready_status == 1) {
        c->ready_status = status;
        pthread_cond_broadcast(&c->ready_cond);
    }
    pthread_mutex_unlock(&c->ready_mu);
}

/* The command connection's hook (one Redis, or a Sentinel's master). */
static void on_connect_outcome(dlock__conn *conn, int status) {
    dlock_client *c = DLOCK__CONTAINER_OF(conn, dlock_client, engine.topology.net.conn);
    /* A failover moved us: what the old master confirmed, the new one may lack. Confirm
     * every held lease there now, not at the next tick (a lost one is reported at once). */
    if (status == DLOCK_OK && DLOCK__TOPOLOGY(c)->sentinel &&
        dlock__sentinel_take_moved(DLOCK__TOPOLOGY(c)->sentinel, &conn->link))
        dlock__renew_now(c);
    tell_ready(c, status);
}

/* A Cluster's hooks: the first slot map, and slots that moved (a failover). */
static void on_cluster_moved(dlock_client *c) {
    dlock__renew_now(c);
}

static const dlock__cluster_hooks cluster_hooks = {tell_ready, on_cluster_moved};

/* The topology of a Sentinel or Cluster URL (ep is already the client's); DLOCK_ENOMEM. */
static int make_topology(dlock_client *c, parsed_url *u) {
    if (u->su.count > 0)
        return dlock__sentinel_new(&u->su, &DLOCK__TOPOLOGY(c)->sentinel);
    if (u->cu.count > 0) {
        int rc = dlock__cluster_new(c, &u->cu, &cluster_hooks, &DLOCK__TOPOLOGY(c)->cluster);
        return rc == DLOCK_OK ? dlock__scripts_shard(c) : rc;
    }
    return DLOCK_OK;
}

static int client_create(const dlock_options *o, dlock__loop *loop, dlock_client **out) {
    dlock_options opts;
    parsed_url u;
    int rc = take_options(o, &opts, &u);
    if (rc != DLOCK_OK)
        return rc;
    dlock_client *c = dlock__calloc(1, sizeof(*c));
    if (!c) {
        dlock__endpoint_free(&u.ep);
        dlock__sentinel_url_free(&u.su);
        dlock__cluster_url_free(&u.cu);
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    }
    DLOCK__BASE(c)->opts = opts;
    DLOCK__NET(c)->endpoint = u.ep;
    dlock__endpoint ep = u.ep; /* for the key below; c owns the strings */
    pthread_mutex_init(&c->ready_mu, NULL);
    pthread_cond_init(&c->ready_cond, NULL);
    /* the submit door's lock lives as long as the client: a call racing with the close
     * takes it to be refused, and the I/O thread takes it to wake callers as it ends */
    pthread_mutex_init(&DLOCK__ENGINE(c)->submit.mu, NULL);
    rc = make_topology(c, &u);
    if (rc != DLOCK_OK) {
        client_destroy(c);
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    }
    if (ep.tls) {
        char err[DLOCK__ERROR_TEXT_SIZE];
        rc = dlock__tls_new(&DLOCK__NET(c)->endpoint, &DLOCK__NET(c)->tls, err, sizeof(err));
        if (rc != DLOCK_OK) {
            client_destroy(c);
            return dlock__fail(rc, "%s", err);
        }
    }
    if (ep.is_unix)
        snprintf(c->endpoint_key, sizeof(c->endpoint_key), "unix:%s/%d", ep.path, ep.db);
    else if (DLOCK__TOPOLOGY(c)->sentinel)
        snprintf(c->endpoint_key, sizeof(c->endpoint_key), "sentinel:%s/%d",
                 dlock__sentinel_master_name(DLOCK__TOPOLOGY(c)->sentinel), ep.db);
    else if (DLOCK__TOPOLOGY(c)->cluster) /* the seed a client names first: a RedLock over one
                            cluster's masters is no RedLock anyway (docs/operations.md) */
        snprintf(c->endpoint_key, sizeof(c->endpoint_key), "cluster:%s",
                 dlock__cluster_seed(DLOCK__TOPOLOGY(c)->cluster));
    else
        snprintf(c->endpoint_key, sizeof(c->endpoint_key), "%s:%d/%d", ep.host, ep.port, ep.db);
    dlock__map_init(&DLOCK__ENGINE(c)->shared);
    c->ready_status = 1;
    DLOCK__NET(c)->script_sha = dlock__calloc(DLOCK__SCRIPT_COUNT > 0 ? DLOCK__SCRIPT_COUNT : 1,
                                              sizeof(*DLOCK__NET(c)->script_sha));
    if (!DLOCK__NET(c)->script_sha || dlock__random_uuid(DLOCK__BASE(c)->id) != 0) {
        client_destroy(c);
        return dlock__fail(DLOCK_ENOMEM, "out of memory or no entropy for the client id");
    }
    DLOCK__ENGINE(c)->own_loop = loop == NULL;
    DLOCK__NET(c)->loop = loop ? loop : dlock__loop_new();
    if (!DLOCK__NET(c)->loop) {
        client_destroy(c);
        return dlock__fail(DLOCK_ENOMEM, "cannot create an event loop");
    }
    if (DLOCK__ENGINE(c)->own_loop)
        dlock__loop_share_init(&DLOCK__ENGINE(c)->loop_share, DLOCK__NET(c)->loop,
                               dlock__submit_wake_callers, &DLOCK__ENGINE(c)->submit);
    dlock__spin_init(&DLOCK__ENGINE(c)->spin, DLOCK__BASE(c)->opts.reply_spin_us);
    dlock__spin_init(&DLOCK__ENGINE(c)->wait_spin, DLOCK__BASE(c)->opts.reply_spin_us);
    dlock__sched_init(&DLOCK__NET(c)->sched, DLOCK__NET(c)->loop);
    dlock__submit_init(&DLOCK__ENGINE(c)->submit, c);
    /* the net floor's hook into the watchdog: every link's backoff (link.c) asks it */
    DLOCK__NET(c)->shortest_lease_ms = dlock__renew_shortest_lease_ms;
    dlock__conn_init(&DLOCK__NET(c)->conn, c);
    DLOCK__NET(c)->conn.on_outcome = on_connect_outcome;
    dlock__pubsub_init(&DLOCK__NET(c)->pubsub, c);
    if (DLOCK__TOPOLOGY(c)->sentinel) { /* both connections go where the sentinels say */
        dlock__sentinel_attach(DLOCK__TOPOLOGY(c)->sentinel, &DLOCK__NET(c)->conn.link);
        dlock__sentinel_attach(DLOCK__TOPOLOGY(c)->sentinel, &DLOCK__NET(c)->pubsub.link);
        DLOCK__NET(c)->conn.follows_failover = true;
    }
    dlock__waits_init(&DLOCK__ENGINE(c)->waits);
    dlock__renew_init(&DLOCK__ENGINE(c)->renew, c);
    dlock__loop_wake_init(&c->stop_wake, on_stop, c);
    *out = c;
    return DLOCK_OK;
}

/* The command connection, and with a Sentinel URL the watch for failovers. */
static void start_connections(dlock_client *c) {
    if (DLOCK__TOPOLOGY(c)->cluster) { /* the nodes' connections, once the slot map names them */
        dlock__cluster_start(DLOCK__TOPOLOGY(c)->cluster);
        return;
    }
    dlock__link_start(&DLOCK__NET(c)->conn.link);
    if (DLOCK__TOPOLOGY(c)->sentinel)
        dlock__sentinel_start(DLOCK__TOPOLOGY(c)->sentinel);
}

/* Stops the I/O thread after closing everything on it, and frees c. */
static void stop_and_destroy(dlock_client *c) {
    dlock__loop_wake_send(DLOCK__NET(c)->loop, &c->stop_wake);
    pthread_join(c->io_thread, NULL);
    client_destroy(c);
}

int dlock_client_new(const dlock_options *o, dlock_client **out) {
    if (!out)
        return dlock__fail(DLOCK_EINVAL, "out is NULL");
    dlock_client *c;
    int rc = client_create(o, NULL, &c);
    if (rc != DLOCK_OK)
        return rc;
    dlock__loop_wake_start(DLOCK__NET(c)->loop, &c->stop_wake);
    /* The loop does not run yet: starting the connection from this thread is safe, and
     * pthread_create orders it before everything the I/O thread does. */
    start_connections(c);
    if (start_io_thread(c) != 0) {
        close_all(c);
        client_destroy(c);
        return dlock__fail(DLOCK_ENOMEM, "cannot start the I/O thread");
    }
    DLOCK__ENGINE(c)->loop_thread = c->io_thread;
    pthread_mutex_lock(&c->ready_mu);
    while (c->ready_status == 1)
        pthread_cond_wait(&c->ready_cond, &c->ready_mu);
    rc = c->ready_status;
    pthread_mutex_unlock(&c->ready_mu);
    if (rc != DLOCK_OK) {
        /* the link's text says what went wrong; read it before the link is gone */
        char why[DLOCK__ERROR_TEXT_SIZE];
        dlock__text_fit(why, sizeof(why),
                        DLOCK__TOPOLOGY(c)->cluster
                            ? dlock__cluster_error_text(DLOCK__TOPOLOGY(c)->cluster)
                            : DLOCK__NET(c)->conn.link.last_error_text);
        stop_and_destroy(c);
        return dlock__fail(rc, "%s", why);
    }
    *out = c;
    return DLOCK_OK;
}

int dlock_client_new_on_loop(const dlock_options *o, dlock__loop *loop, dlock_client **out) {
    if (!out || !loop)
        return dlock__fail(DLOCK_EINVAL, "%s is NULL", out ? "loop" : "out");
    dlock_client *c;
    int rc = client_create(o, loop, &c);
    if (rc != DLOCK_OK)
        return rc;
    DLOCK__ENGINE(c)->loop_thread = pthread_self();
    start_connections(c);
    *out = c;
    return DLOCK_OK;
}

int dlock_client_free(dlock_client *c) {
    if (!c)
        return DLOCK_OK;
    if (DLOCK__ENGINE(c)->own_loop) {
        if (dlock__on_loop_thread(c))
            return dlock__fail(DLOCK_EDEADLK, "dlock_client_free on the client's loop thread");
        stop_and_destroy(c);
        return DLOCK_OK;
    }
    if (!dlock__on_loop_thread(c))
        return dlock__fail(DLOCK_EINVAL, "async client freed off its loop thread");
    if (DLOCK__ENGINE(c)->callback_depth > 0)
        return dlock__fail(DLOCK_EBUSY, "dlock_client_free from inside a dlock callback");
    close_all(c);
    client_destroy(c);
    return DLOCK_OK;
}

/* ---- ping ------------------------------------------------------------------------------- */

typedef struct ping_op {
    dlock__op op;
    dlock_client_cb cb;
    void *arg;
} ping_op;

static void on_pong(dlock_client *c, int status, const dlock__reply *reply, int sends, void *arg) {
    (void)c;
    (void)sends;
    dlock__op *op = arg;
    if (status != DLOCK_OK)
        dlock__op_fail_reply(op, status, reply);
    dlock__op_complete(op, status);
}

static void ping_start(dlock__op *op) {
    static const char *const argv[] = {"PING"};
    static const size_t lens[] = {4};
    int rc = dlock__command(op->client, DLOCK__CMD_RETRY_SAFE, on_pong, op, 1, argv, lens);
    if (rc != DLOCK_OK)
        dlock__op_complete(op, dlock__op_fail(op, rc, "%s", dlock_strerror(rc)));
}

int dlock_client_ping(dlock_client *c) {
    if (!c)
        return dlock__fail(DLOCK_EINVAL, "client is NULL");
    dlock__op op;
    dlock__op_init(&op, c, ping_start);
    return dlock__op_run(&op);
}

static void ping_complete(dlock__op *op) {
    ping_op *p = DLOCK__CONTAINER_OF(op, ping_op, op);
    p->cb(op->client, op->status, p->arg);
    dlock__free(p);
}

int dlock_client_ping_async(dlock_client *c, dlock_client_cb cb, void *arg) {
    if (!c || !cb)
        return dlock__fail(DLOCK_EINVAL, "%s is NULL", c ? "cb" : "client");
    ping_op *p = dlock__calloc(1, sizeof(*p));
    if (!p)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    dlock__op_init(&p->op, c, ping_start);
    p->op.complete = ping_complete;
    p->cb = cb;
    p->arg = arg;
    int rc = dlock__op_submit(&p->op);
    if (rc != DLOCK_OK)
        dlock__free(p);
    return rc;
}
