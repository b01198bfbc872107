/* SPDX-License-Identifier: MIT */
/* redis_sync.c — the read-only connection of `dlock inspect`: plain synchronous hiredis.
 *
 * Takes the URLs the library does (include/dlock/client.h), parsed by the library's own
 * parser (src/core/url.c; the tool links the library statically), so the two can never
 * disagree. A URL is only ever shown masked (dlock__url_masked): no password on screen.
 *
 * A Sentinel URL (redis-sentinel://...) is followed as the library does: the sentinels are
 * asked in order (one that cannot be reached is skipped), and the master they name is
 * connected to and must say master to ROLE. The caller is told where it went. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "cli.h"
#include "core.h"
#include "inspect.h"
#include "sentinel.h"

/* A reply that is an error: the exit code it means. */
int redis_sync_error_code(const char *text) {
    if (strncmp(text, "WRONGPASS", 9) == 0 || strncmp(text, "NOPERM", 6) == 0 ||
        strncmp(text, "NOAUTH", 6) == 0 || strstr(text, "invalid password") ||
        strstr(text, "invalid username") || strstr(text, "without any password configured"))
        return CLI_EXIT_NOPERM;
    return CLI_EXIT_UNAVAILABLE;
}

/* Runs one handshake command; 0 or an exit code with the message printed. where names the
 * server, never the password. */
static int handshake(redisContext *c, const char *where, int argc, const char **argv) {
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    if (!r) {
        cli_error("cannot connect to %s: %s", where, c->errstr[0] ? c->errstr : "no reply");
        return CLI_EXIT_UNAVAILABLE;
    }
    int code = 0;
    if (r->type == REDIS_REPLY_ERROR) {
        code = redis_sync_error_code(r->str);
        cli_error("%s refused %s: %s", where, argv[0], r->str);
    }
    freeReplyObject(r);
    return code;
}

/* A connection to ep with AUTH and SELECT (select_db) done; 0 or an exit code with the
 * message printed. */
static int connect_endpoint(const dlock__endpoint *ep, bool select_db, long connect_timeout_ms,
                            long timeout_ms, redisContext **out) {
    char where[300];
    dlock__endpoint_describe(ep, where, sizeof(where));
    if (ep->tls) {
        cli_error("cannot connect to %s: dlock inspect and release --force do not speak TLS yet",
                  where);
        return CLI_EXIT_USAGE;
    }
    struct timeval ct = {connect_timeout_ms / 1000, (connect_timeout_ms % 1000) * 1000};
    struct timeval rt = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = ep->is_unix ? redisConnectUnixWithTimeout(ep->path, ct)
                                  : redisConnectWithTimeout(ep->host, ep->port, ct);
    if (!c || c->err) {
        cli_error("cannot connect to %s: %s", where, c ? c->errstr : "out of memory");
        redisFree(c);
        return CLI_EXIT_UNAVAILABLE;
    }
    redisSetTimeout(c, rt);

    int code = 0;
    if (ep->password) {
        const char *auth[] = {"AUTH", ep->user ? ep->user : ep->password, ep->password};
        code = handshake(c, where, ep->user ? 3 : 2, auth);
    }
    if (code == 0 && select_db && ep->db != 0) {
        char db[16];
        snprintf(db, sizeof(db), "%d", ep->db);
        const char *select[] = {"SELECT", db};
        code = handshake(c, where, 2, select);
    }
    if (code != 0) {
        redisFree(c);
        return code;
    }
    *out = c;
    return 0;
}

/* One command whose reply the caller checks; NULL (message printed) when the connection
 * failed. */
static redisReply *ask(redisContext *c, const char *where, int argc, const char **argv) {
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    if (!r)
        cli_error("%s: %s", where, c->errstr[0] ? c->errstr : "no reply");
    return r;
}

/* The master's address as sentinel ep names it: 0 with master->host (malloc'd) and port,
 * 1 when the sentinel knows no such master, or an exit code (message printed). */
static int ask_sentinel(const dlock__endpoint *ep, const char *name, long connect_timeout_ms,
                        long timeout_ms, dlock__endpoint *master) {
    char where[300];
    snprintf(where, sizeof(where), "sentinel ");
    dlock__endpoint_describe(ep, where + strlen(where), sizeof(where) - strlen(where));
    redisContext *c = NULL;
    int code = connect_endpoint(ep, false, connect_timeout_ms, timeout_ms, &c);
    if (code != 0)
        return code;
    const char *argv[] = {"SENTINEL", "get-master-addr-by-name", name};
    redisReply *r = ask(c, where, 3, argv);
    redisFree(c);
    if (!r)
        return CLI_EXIT_UNAVAILABLE;
    code = CLI_EXIT_UNAVAILABLE;
    if (r->type == REDIS_REPLY_NIL) {
        code = 1;
    } else if (r->type == REDIS_REPLY_ERROR) {
        cli_error("%s refused SENTINEL get-master-addr-by-name: %s", where, r->str);
        code = redis_sync_error_code(r->str);
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
               r->element[0]->type == REDIS_REPLY_STRING &&
               r->element[1]->type == REDIS_REPLY_STRING && atoi(r->element[1]->str) > 0) {
        master->host = strdup(r->element[0]->str);
        master->port = atoi(r->element[1]->str);
        code = master->host ? 0 : CLI_EXIT_SOFTWARE;
    } else {
        cli_error("%s: unexpected answer to SENTINEL get-master-addr-by-name", where);
    }
    freeReplyObject(r);
    return code;
}

/* 0 when c's ROLE says master, else an exit code (message printed). */
static int check_master(redisContext *c, const char *where) {
    const char *argv[] = {"ROLE"};
    redisReply *r = ask(c, where, 1, argv);
    if (!r)
        return CLI_EXIT_UNAVAILABLE;
    bool master = r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                  r->element[0]->type == REDIS_REPLY_STRING &&
                  strcmp(r->element[0]->str, "master") == 0;
    if (!master)
        cli_error("%s: the sentinels name it master, but its ROLE says otherwise (a failover "
                  "in progress?); try again",
                  where);
    freeReplyObject(r);
    return master ? 0 : CLI_EXIT_UNAVAILABLE;
}

/* Asks the sentinels in order for the master, connects to it and checks its ROLE. */
static int open_through_sentinels(const dlock__sentinel_url *u, long connect_timeout_ms,
                                  long timeout_ms, redisContext **out, char *where,
                                  size_t where_size) {
    size_t unknown = 0;
    int code = CLI_EXIT_UNAVAILABLE;
    for (size_t i = 0; i < u->count; i++) {
        dlock__endpoint master = u->data; /* strings borrowed, but host */
        master.host = NULL;
        code =
            ask_sentinel(&u->sentinels[i], u->master_name, connect_timeout_ms, timeout_ms, &master);
        if (code == 1)
            unknown++;
        if (code != 0)
            continue; /* the next sentinel may know */
        char at[300], via[300];
        dlock__endpoint_describe(&master, at, sizeof(at));
        dlock__endpoint_describe(&u->sentinels[i], via, sizeof(via));
        snprintf(where, where_size, "master '%s' at %s (named by sentinel %s)", u->master_name, at,
                 via);
        code = connect_endpoint(&master, true, connect_timeout_ms, timeout_ms, out);
        free(master.host);
        if (code == 0 && (code = check_master(*out, where)) != 0) {
            redisFree(*out);
            *out = NULL;
        }
        return code;
    }
    if (unknown > 0 && unknown == u->count) {
        cli_error("no sentinel knows a master named '%s'", u->master_name);
        return CLI_EXIT_USAGE;
    }
    cli_error("no sentinel named the master '%s'", u->master_name);
    return code == 1 ? CLI_EXIT_UNAVAILABLE : code;
}

int redis_sync_open(const char *url, long connect_timeout_ms, long timeout_ms, redisContext **out,
                    char *where, size_t where_size) {
    char err[200], shown[CLI_URL_SHOWN_MAX];
    int rc, code;
    if (dlock__url_is_sentinel(url)) {
        dlock__sentinel_url u;
        rc = dlock__sentinel_url_parse(url, &u, err, sizeof(err));
        if (rc == DLOCK_OK) {
            code =
                open_through_sentinels(&u, connect_timeout_ms, timeout_ms, out, where, where_size);
            dlock__sentinel_url_free(&u);
            return code;
        }
    } else {
        dlock__endpoint ep;
        rc = dlock__url_parse(url, &ep, err, sizeof(err));
        if (rc == DLOCK_OK) {
            dlock__endpoint_describe(&ep, where, where_size);
            code = connect_endpoint(&ep, true, connect_timeout_ms, timeout_ms, out);
            dlock__endpoint_free(&ep);
            return code;
        }
    }
    if (rc == DLOCK_ENOMEM) {
        cli_error("%s", err);
        return CLI_EXIT_SOFTWARE;
    }
    return cli_usage_error("'%s': %s", dlock__url_masked(url, shown, sizeof(shown)), err);
}
