/* SPDX-License-Identifier: MIT */
/* sentinel_fixture.c - a master, a replica and three sentinels, started, watched and stopped.
 *
 * Data owned here: struct sentinel_fixture (the two redis_fixture nodes, the three sentinel
 * processes with their config files, the certificates with TLS, the URL). Processes and
 * directories are also tracked by redis_fixture and topology_util for cleanup at exit.
 *
 * Sentinels learn about replicas from the master's INFO (every 10 s) and about each other
 * from hello messages (every 2 s). A test fixture cannot wait that long, so the config of
 * each sentinel names the replica and the other sentinels (with the ids we give them): the
 * sentinels connect to everyone at once and are ready in a few hundred milliseconds.
 */
#include "sentinel_fixture.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "test_util.h"
#include "topology_util.h"

#define START_ATTEMPTS 3
#define READY_TIMEOUT_MS 10000
#define FAILOVER_TIMEOUT_MS 20000
#define POLL_MS 20
#define SENTINEL_ID_LEN 40
#define QUORUM 2
#define DOWN_AFTER_MS 1000
#define FAILOVER_TIMEOUT_CONF_MS 3000

struct sentinel_proc {
    topo_proc *proc;
    int port;
    char id[SENTINEL_ID_LEN + 1];
    char *dir, *config, *log, *socket;
    bool down; /* killed or paused: left out of the waits */
};

struct sentinel_fixture {
    char *name;
    char *requirepass;
    char *sentinel_password;
    bool tls;
    char *dir;
    tls_certs *certs;
    redis_fixture *nodes[SENTINEL_FIXTURE_NODES];
    int node_ports[SENTINEL_FIXTURE_NODES];
    struct sentinel_proc sentinels[SENTINEL_FIXTURE_SENTINELS];
    char *sentinel_exe;
    char *url;
    int paused_replica; /* -1: none */
};

static const char *or_null(const char *s) {
    return (s != NULL && *s != '\0') ? s : NULL;
}

/* ---- replies ------------------------------------------------------------------------------- */

/* The value of `key` in a flat key/value array reply (SENTINEL MASTER and friends). */
static const char *kv_field(const redisReply *r, const char *key) {
    if (r == NULL || r->type != REDIS_REPLY_ARRAY)
        return NULL;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING &&
            strcmp(k->str, key) == 0)
            return v->str;
    }
    return NULL;
}

static bool kv_is(const redisReply *r, const char *key, const char *expected) {
    const char *v = kv_field(r, key);
    return v != NULL && strcmp(v, expected) == 0;
}

redisReply *sentinel_fixture_sentinel_cmd(sentinel_fixture *f, int i, const char *fmt, ...) {
    if (f == NULL || i < 0 || i >= SENTINEL_FIXTURE_SENTINELS)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    redisReply *r =
        topo_unix_vcmd("sentinel_fixture", f->sentinels[i].socket, f->sentinel_password, fmt, ap);
    va_end(ap);
    return r;
}

long sentinel_fixture_sentinel_subscribers(sentinel_fixture *f, int i) {
    redisReply *r = sentinel_fixture_sentinel_cmd(f, i, "CLIENT LIST TYPE pubsub");
    long n = -1;
    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        n = 0;
        for (const char *p = r->str; *p; p++)
            n += *p == '\n';
    }
    if (r != NULL)
        freeReplyObject(r);
    return n;
}

/* ---- data nodes ---------------------------------------------------------------------------- */

static int start_node(sentinel_fixture *f, int i) {
    char master_port[16];
    snprintf(master_port, sizeof master_port, "%d", f->node_ports[0]);
    const char *args[16];
    size_t n = 0;
    args[n++] = "--repl-diskless-sync-delay"; /* the default waits 5 s before a sync */
    args[n++] = "0";
    if (f->requirepass != NULL) {
        args[n++] = "--masterauth";
        args[n++] = f->requirepass;
    }
    if (f->tls) {
        args[n++] = "--tls-replication";
        args[n++] = "yes";
    }
    if (i > 0) {
        args[n++] = "--replicaof";
        args[n++] = "127.0.0.1";
        args[n++] = master_port;
    }
    args[n] = NULL;
    redis_fixture_opts o = {.tcp = true, .requirepass = f->requirepass, .extra_args = args};
    if (f->tls)
        return tls_certs_start_server(f->certs, "no", &o, &f->nodes[i], &f->node_ports[i]);
    if (redis_fixture_start(&o, &f->nodes[i]) != 0)
        return -1;
    f->node_ports[i] = redis_fixture_port(f->nodes[i]);
    return 0;
}

/* A malloc'd copy of an INFO field of node i, NULL if unreachable or absent. */
static char *node_info(sentinel_fixture *f, int i, const char *section, const char *field) {
    redisReply *r = redis_fixture_cmd(f->nodes[i], "INFO %s", section);
    char *v = (r != NULL && r->type == REDIS_REPLY_STRING) ? topo_info_field(r->str, field) : NULL;
    if (r != NULL)
        freeReplyObject(r);
    return v;
}

static bool node_has_role_master(sentinel_fixture *f, int i) {
    if (!redis_fixture_running(f->nodes[i]))
        return false;
    char *role = node_info(f, i, "replication", "role");
    bool master = role != NULL && strcmp(role, "master") == 0;
    free(role);
    return master;
}

/* Node i replicates node `master` and its link is up. */
static bool node_synced_to(sentinel_fixture *f, int i, int master) {
    char *link = node_info(f, i, "replication", "master_link_status");
    char *port = node_info(f, i, "replication", "master_port");
    bool synced = link != NULL && strcmp(link, "up") == 0 && port != NULL &&
                  atoi(port) == f->node_ports[master];
    free(link);
    free(port);
    return synced;
}

/* ---- sentinels ----------------------------------------------------------------------------- */

static void make_sentinel_id(char *out) {
    unsigned char raw[SENTINEL_ID_LEN / 2];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
        for (size_t k = 0; k < sizeof raw; k++)
            raw[k] = (unsigned char)rand();
    }
    for (size_t k = 0; k < sizeof raw; k++)
        snprintf(out + 2 * k, 3, "%02x", raw[k]);
}

/* Appends to a malloc'd string. */
static void append(char **text, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void append(char **text, const char *fmt, ...) {
    va_list ap;
    char *more = NULL;
    va_start(ap, fmt);
    int n = vasprintf(&more, fmt, ap);
    va_end(ap);
    if (n < 0)
        abort();
    char *joined = topo_asprintf("%s%s", *text, more);
    free(more);
    free(*text);
    *text = joined;
}

static char *sentinel_config(const sentinel_fixture *f, int i) {
    const struct sentinel_proc *s = &f->sentinels[i];
    const char *name = f->name;
    char *conf = topo_asprintf("bind 127.0.0.1\nunixsocket %s\nunixsocketperm 700\n"
                               "daemonize no\ndir %s\nlogfile \"\"\n",
                               s->socket, s->dir);
    if (f->tls)
        append(&conf,
               "port 0\ntls-port %d\ntls-replication yes\ntls-auth-clients no\n"
               "tls-cert-file %s\ntls-key-file %s\ntls-ca-cert-file %s\n",
               s->port, tls_certs_server_cert(f->certs), tls_certs_server_key(f->certs),
               tls_certs_ca(f->certs));
    else
        append(&conf, "port %d\n", s->port);
    append(&conf, "sentinel myid %s\nsentinel resolve-hostnames no\n", s->id);
    append(&conf, "sentinel monitor %s 127.0.0.1 %d %d\n", name, f->node_ports[0], QUORUM);
    append(&conf, "sentinel down-after-milliseconds %s %d\n", name, DOWN_AFTER_MS);
    append(&conf, "sentinel failover-timeout %s %d\n", name, FAILOVER_TIMEOUT_CONF_MS);
    append(&conf, "sentinel parallel-syncs %s 1\n", name);
    append(&conf, "sentinel known-replica %s 127.0.0.1 %d\n", name, f->node_ports[1]);
    for (int j = 0; j < SENTINEL_FIXTURE_SENTINELS; j++) {
        if (j != i)
            append(&conf, "sentinel known-sentinel %s 127.0.0.1 %d %s\n", name,
                   f->sentinels[j].port, f->sentinels[j].id);
    }
    if (f->requirepass != NULL)
        append(&conf, "sentinel auth-pass %s %s\n", name, f->requirepass);
    if (f->sentinel_password != NULL)
        append(&conf, "requirepass %s\nsentinel sentinel-pass %s\n", f->sentinel_password,
               f->sentinel_password);
    return conf;
}

static void stop_sentinels(sentinel_fixture *f) {
    for (int i = 0; i < SENTINEL_FIXTURE_SENTINELS; i++) {
        topo_proc_stop(f->sentinels[i].proc);
        f->sentinels[i].proc = NULL;
    }
}

/* Answers PING on its unix socket; false at once if the process is gone. */
static bool sentinel_answers(sentinel_fixture *f, int i, bool *exited) {
    *exited = topo_proc_exited(f->sentinels[i].proc);
    if (*exited)
        return false;
    char why[256];
    redisContext *c =
        topo_connect_unix(f->sentinels[i].socket, f->sentinel_password, 1000, why, sizeof why);
    if (c == NULL)
        return false;
    redisReply *r = redisCommand(c, "PING");
    bool pong = r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
    if (r != NULL)
        freeReplyObject(r);
    redisFree(c);
    return pong;
}

/* One attempt on fresh ports: 0, 1 if a sentinel exited at startup (its port was taken:
 * worth another try), -1 on anything else. */
static int launch_sentinels(sentinel_fixture *f) {
    for (int i = 0; i < SENTINEL_FIXTURE_SENTINELS; i++) {
        f->sentinels[i].port = topo_free_port();
        if (f->sentinels[i].port < 0)
            return -1;
    }
    for (int i = 0; i < SENTINEL_FIXTURE_SENTINELS; i++) {
        struct sentinel_proc *s = &f->sentinels[i];
        char *conf = sentinel_config(f, i);
        int rc = topo_write_file(s->config, conf);
        free(conf);
        char *argv[] = {f->sentinel_exe, s->config, NULL};
        if (rc != 0 || topo_proc_start(f->sentinel_exe, argv, s->log, &s->proc) != 0)
            return -1;
        s->down = false;
    }
    int64_t deadline = test_now_ms() + test_slack_ms(READY_TIMEOUT_MS);
    for (int i = 0; i < SENTINEL_FIXTURE_SENTINELS; i++) {
        bool exited = false;
        while (!sentinel_answers(f, i, &exited)) {
            if (exited || test_now_ms() >= deadline) {
                fprintf(stderr, "sentinel_fixture: sentinel %d (port %d) %s\n", i,
                        f->sentinels[i].port, exited ? "exited at startup" : "never answered");
                topo_print_log_tail(f->sentinels[i].log, 15);
                return exited ? 1 : -1;
            }
            test_sleep_ms(POLL_MS);
        }
    }
    return 0;
}

/* Sentinel i has the master's INFO, the replica with its link up, and both other
 * sentinels connected. */
static bool sentinel_sees_everyone(sentinel_fixture *f, int i) {
    redisReply *m = sentinel_fixture_sentinel_cmd(f, i, "SENTINEL MASTER %s", f->name);
    bool ready = kv_is(m, "flags", "master") && kv_is(m, "num-slaves", "1") &&
                 kv_is(m, "num-other-sentinels", "2") && kv_field(m, "runid") != NULL &&
                 !kv_is(m, "runid", "?");
    if (m != NULL)
        freeReplyObject(m);
    redisReply *r =
        ready ? sentinel_fixture_sentinel_cmd(f, i, "SENTINEL REPLICAS %s", f->name) : NULL;
    ready = ready && r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
            kv_is(r->element[0], "flags", "slave") &&
            kv_is(r->element[0], "master-link-status", "ok");
    if (r != NULL)
        freeReplyObject(r);
    redisReply *s =
        ready ? sentinel_fixture_sentinel_cmd(f, i, "SENTINEL SENTINELS %s", f->name) : NULL;
    ready = ready && s != NULL && s->type == REDIS_REPLY_ARRAY && s->elements == 2 &&
            kv_is(s->element[0], "flags", "sentinel") && kv_is(s->element[1], "flags", "sentinel");
    if (s != NULL)
        freeReplyObject(s);
    return ready;
}

/* What sentinel i thinks, on stderr: for a start that timed out. */
static void print_sentinel_view(sentinel_fixture *f, int i) {
    const char *what[] = {"SENTINEL MASTER %s", "SENTINEL REPLICAS %s", "SENTINEL SENTINELS %s"};
    for (size_t w = 0; w < sizeof what / sizeof what[0]; w++) {
        redisReply *r = sentinel_fixture_sentinel_cmd(f, i, what[w], f->name);
        fprintf(stderr, "sentinel %d, %s:", i, what[w]);
        for (size_t e = 0; r != NULL && r->type == REDIS_REPLY_ARRAY && e < r->elements; e++) {
            const redisReply *item = r->element[e];
            if (item->type == REDIS_REPLY_STRING)
                fprintf(stderr, "%s%s", e % 2 ? "=" : " ", item->str);
            for (size_t k = 0; item->type == REDIS_REPLY_ARRAY && k < item->elements; k++)
                fprintf(stderr, "%s%s", k % 2 ? "=" : (k ? " " : "\n  "), item->element[k]->str);
        }
        fputc('\n', stderr);
        if (r != NULL)
            freeReplyObject(r);
    }
}

/* ---- start and stop ------------------------------------------------------------------------ */

static void free_fixture(sentinel_fixture *f) {
    for (int i = 0; i < SENTINEL_FIXTURE_SENTINELS; i++) {
        struct sentinel_proc *s = &f->sentinels[i];
        free(s->dir);
        free(s->config);
        free(s->log);
        free(s->socket);
    }
    tls_certs_free(f->certs);
    topo_tempdir_remove(f->dir);
    free(f->name);
    free(f->requirepass);
    free(f->sentinel_password);
    free(f->sentinel_exe);
    free(f->url);
    free(f);
}

void sentinel_fixture_stop(sentinel_fixture *f) {
    if (f == NULL)
        return;
    stop_sentinels(f); /* first, or they would fail over while the nodes go */
    for (int i = 0; i < SENTINEL_FIXTURE_NODES; i++)
        redis_fixture_stop(f->nodes[i]);
    free_fixture(f);
}

static int make_dirs(sentinel_fixture *f) {
    f->dir = topo_tempdir("dlock-sentinel");
    if (f->dir == NULL)
        return -1;
    for (int i = 0; i < SENTINEL_FIXTURE_SENTINELS; i++) {
        struct sentinel_proc *s = &f->sentinels[i];
        s->dir = topo_asprintf("%s/s%d", f->dir, i);
        s->config = topo_asprintf("%s/sentinel.conf", s->dir);
        s->log = topo_asprintf("%s/sentinel.log", s->dir);
        s->socket = topo_asprintf("%s/sentinel.sock", s->dir);
        make_sentinel_id(s->id);
        if (mkdir(s->dir, 0700) != 0) {
            perror("sentinel_fixture: mkdir");
            return -1;
        }
    }
    return 0;
}

static void make_url(sentinel_fixture *f) {
    char *auth = NULL, *query = NULL;
    if (f->requirepass != NULL) {
        char *pw = topo_url_encode(f->requirepass);
        auth = topo_asprintf(":%s@", pw);
        free(pw);
    }
    if (f->sentinel_password != NULL) {
        char *pw = topo_url_encode(f->sentinel_password);
        query = topo_asprintf("sentinel_password=%s", pw);
        free(pw);
    }
    if (f->tls) {
        char *q = topo_asprintf("cacert=%s%s%s", tls_certs_ca(f->certs), query ? "&" : "",
                                query ? query : "");
        free(query);
        query = q;
    }
    f->url = topo_asprintf("%s://%s127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/%s%s%s",
                           f->tls ? "rediss-sentinel" : "redis-sentinel", auth ? auth : "",
                           f->sentinels[0].port, f->sentinels[1].port, f->sentinels[2].port,
                           f->name, query ? "?" : "", query ? query : "");
    free(auth);
    free(query);
}

/* Everything after the struct exists: nodes, sync, sentinels, readiness. */
static int bring_up(sentinel_fixture *f) {
    if (make_dirs(f) != 0)
        return -1;
    if (f->tls && tls_certs_make(&f->certs) != 0)
        return -1;
    f->sentinel_exe = topo_find_exe("redis-sentinel", "redis-sentinel");
    if (f->sentinel_exe == NULL || start_node(f, 0) != 0 || start_node(f, 1) != 0)
        return -1;
    int64_t deadline = test_now_ms() + test_slack_ms(READY_TIMEOUT_MS);
    while (!node_synced_to(f, 1, 0)) {
        if (test_now_ms() >= deadline) {
            fprintf(stderr, "sentinel_fixture: the replica never synced with the master\n");
            return -1;
        }
        test_sleep_ms(POLL_MS);
    }
    int rc = 1;
    for (int attempt = 1; attempt <= START_ATTEMPTS && rc == 1; attempt++) {
        rc = launch_sentinels(f);
        if (rc != 0)
            stop_sentinels(f);
    }
    if (rc != 0)
        return -1;
    for (int i = 0; i < SENTINEL_FIXTURE_SENTINELS; i++) {
        while (!sentinel_sees_everyone(f, i)) {
            if (test_now_ms() >= deadline) {
                fprintf(stderr,
                        "sentinel_fixture: sentinel %d never saw the master, the replica and "
                        "the other sentinels\n",
                        i);
                topo_print_log_tail(f->sentinels[i].log, 15);
                print_sentinel_view(f, i);
                return -1;
            }
            test_sleep_ms(POLL_MS);
        }
    }
    make_url(f);
    return 0;
}

static bool valid_name(const char *name) {
    if (*name == '\0')
        return false;
    for (const char *c = name; *c != '\0'; c++) {
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_' || *c == '.'))
            return false;
    }
    return true;
}

int sentinel_fixture_start(const sentinel_fixture_opts *o, sentinel_fixture **out) {
    static const sentinel_fixture_opts defaults = {0};
    if (o == NULL)
        o = &defaults;
    const char *name = o->master_name ? o->master_name : "mymaster";
    if (out == NULL || !valid_name(name)) {
        fprintf(stderr, "sentinel_fixture_start: no out pointer or a bad master name\n");
        return -1;
    }
    sentinel_fixture *f = calloc(1, sizeof *f);
    if (f == NULL)
        abort();
    f->name = topo_asprintf("%s", name);
    f->requirepass = or_null(o->requirepass) ? topo_asprintf("%s", o->requirepass) : NULL;
    f->sentinel_password =
        or_null(o->sentinel_password) ? topo_asprintf("%s", o->sentinel_password) : NULL;
    f->tls = o->tls;
    f->paused_replica = -1;
    if (bring_up(f) != 0) {
        fprintf(stderr, "sentinel_fixture: could not start the topology\n");
        sentinel_fixture_stop(f);
        return -1;
    }
    *out = f;
    return 0;
}

/* ---- accessors ----------------------------------------------------------------------------- */

const char *sentinel_fixture_url(const sentinel_fixture *f) {
    return f ? f->url : NULL;
}

const char *sentinel_fixture_master_name(const sentinel_fixture *f) {
    return f ? f->name : NULL;
}

tls_certs *sentinel_fixture_certs(sentinel_fixture *f) {
    return f ? f->certs : NULL;
}

static bool node_in_range(const sentinel_fixture *f, int i) {
    return f != NULL && i >= 0 && i < SENTINEL_FIXTURE_NODES;
}

static bool sentinel_in_range(const sentinel_fixture *f, int i) {
    return f != NULL && i >= 0 && i < SENTINEL_FIXTURE_SENTINELS;
}

redis_fixture *sentinel_fixture_node(sentinel_fixture *f, int i) {
    return node_in_range(f, i) ? f->nodes[i] : NULL;
}

int sentinel_fixture_node_port(const sentinel_fixture *f, int i) {
    return node_in_range(f, i) ? f->node_ports[i] : -1;
}

int sentinel_fixture_sentinel_port(const sentinel_fixture *f, int i) {
    return sentinel_in_range(f, i) ? f->sentinels[i].port : -1;
}

pid_t sentinel_fixture_sentinel_pid(const sentinel_fixture *f, int i) {
    return sentinel_in_range(f, i) ? topo_proc_pid(f->sentinels[i].proc) : 0;
}

const char *sentinel_fixture_sentinel_socket(const sentinel_fixture *f, int i) {
    return sentinel_in_range(f, i) ? f->sentinels[i].socket : NULL;
}

/* ---- the master and failovers -------------------------------------------------------------- */

/* The node sentinel i names as master, -1 if it does not answer or names neither. */
static int master_per_sentinel(sentinel_fixture *f, int i) {
    redisReply *r =
        sentinel_fixture_sentinel_cmd(f, i, "SENTINEL GET-MASTER-ADDR-BY-NAME %s", f->name);
    int port = -1;
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_STRING)
        port = atoi(r->element[1]->str);
    if (r != NULL)
        freeReplyObject(r);
    for (int n = 0; n < SENTINEL_FIXTURE_NODES; n++) {
        if (f->node_ports[n] == port)
            return n;
    }
    return -1;
}

int sentinel_fixture_master_index(sentinel_fixture *f) {
    if (f == NULL)
        return -1;
    for (int i = 0; i < SENTINEL_FIXTURE_SENTINELS; i++) {
        if (f->sentinels[i].down)
            continue;
        int m = master_per_sentinel(f, i);
        if (m >= 0)
            return m;
    }
    return -1;
}

int sentinel_fixture_replica_index(sentinel_fixture *f) {
    int m = sentinel_fixture_master_index(f);
    return m < 0 ? -1 : 1 - m;
}

static bool all_sentinels_name(sentinel_fixture *f, int node) {
    for (int i = 0; i < SENTINEL_FIXTURE_SENTINELS; i++) {
        if (!f->sentinels[i].down && master_per_sentinel(f, i) != node)
            return false;
    }
    return true;
}

static int wait_promotion(sentinel_fixture *f, int new_master, const char *what) {
    int64_t deadline = test_now_ms() + test_slack_ms(FAILOVER_TIMEOUT_MS);
    while (!all_sentinels_name(f, new_master) || !node_has_role_master(f, new_master)) {
        if (test_now_ms() >= deadline) {
            fprintf(stderr, "sentinel_fixture: after %s node %d was not promoted in time\n", what,
                    new_master);
            for (int i = 0; i < SENTINEL_FIXTURE_SENTINELS; i++)
                topo_print_log_tail(f->sentinels[i].log, 10);
            return -1;
        }
        test_sleep_ms(POLL_MS);
    }
    return new_master;
}

int sentinel_fixture_failover(sentinel_fixture *f) {
    int old = sentinel_fixture_master_index(f);
    if (old < 0) {
        fprintf(stderr, "sentinel_fixture_failover: no sentinel names a master\n");
        return -1;
    }
    redisReply *r = NULL;
    for (int i = 0; i < SENTINEL_FIXTURE_SENTINELS && r == NULL; i++) {
        if (!f->sentinels[i].down)
            r = sentinel_fixture_sentinel_cmd(f, i, "SENTINEL FAILOVER %s", f->name);
    }
    bool ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    if (!ok)
        fprintf(stderr, "sentinel_fixture_failover: SENTINEL FAILOVER: %s\n",
                r == NULL ? "no sentinel answered" : (r->str ? r->str : "unexpected reply"));
    if (r != NULL)
        freeReplyObject(r);
    return ok ? wait_promotion(f, 1 - old, "SENTINEL FAILOVER") : -1;
}

int sentinel_fixture_kill_master(sentinel_fixture *f) {
    int old = sentinel_fixture_master_index(f);
    if (old < 0 || redis_fixture_kill(f->nodes[old]) != 0) {
        fprintf(stderr, "sentinel_fixture_kill_master: no master to kill\n");
        return -1;
    }
    return wait_promotion(f, 1 - old, "killing the master");
}

int sentinel_fixture_wait_synced(sentinel_fixture *f, int64_t timeout_ms) {
    int64_t deadline = test_now_ms() + test_slack_ms(timeout_ms);
    for (;;) {
        int master = sentinel_fixture_master_index(f);
        bool synced = master >= 0;
        for (int i = 0; synced && i < SENTINEL_FIXTURE_NODES; i++) {
            if (i != master && redis_fixture_running(f->nodes[i]))
                synced = node_synced_to(f, i, master);
        }
        if (synced)
            return 0;
        if (test_now_ms() >= deadline) {
            fprintf(stderr, "sentinel_fixture_wait_synced: replicas not in sync after %lld ms\n",
                    (long long)test_slack_ms(timeout_ms));
            return -1;
        }
        test_sleep_ms(POLL_MS);
    }
}

int sentinel_fixture_pause_replica(sentinel_fixture *f) {
    int r = sentinel_fixture_replica_index(f);
    if (r < 0 || redis_fixture_pause(f->nodes[r]) != 0)
        return -1;
    f->paused_replica = r;
    return r;
}

int sentinel_fixture_resume_replica(sentinel_fixture *f) {
    if (f == NULL || f->paused_replica < 0 ||
        redis_fixture_resume(f->nodes[f->paused_replica]) != 0)
        return -1;
    f->paused_replica = -1;
    return 0;
}

/* ---- sentinel processes -------------------------------------------------------------------- */

int sentinel_fixture_kill_sentinel(sentinel_fixture *f, int i) {
    if (!sentinel_in_range(f, i) || topo_proc_kill(f->sentinels[i].proc) != 0)
        return -1;
    f->sentinels[i].down = true;
    return 0;
}

int sentinel_fixture_pause_sentinel(sentinel_fixture *f, int i) {
    if (!sentinel_in_range(f, i) || topo_proc_pause(f->sentinels[i].proc) != 0)
        return -1;
    f->sentinels[i].down = true;
    return 0;
}

int sentinel_fixture_resume_sentinel(sentinel_fixture *f, int i) {
    if (!sentinel_in_range(f, i) || topo_proc_resume(f->sentinels[i].proc) != 0)
        return -1;
    f->sentinels[i].down = false;
    return 0;
}
