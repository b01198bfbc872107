/* redis_sync.c — the read-only connection of `dlock inspect`: plain synchronous hiredis.
 *
 * Takes the URLs the library does (include/dlock/client.h), parsed by the library's own
 * parser (src/core/url.c; the tool links the library statically), so the two can never
 * disagree. A URL is only ever shown masked (dlock__url_masked): no password on screen. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "cli.h"
#include "core.h"
#include "inspect.h"

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

int redis_sync_open(const char *url, long connect_timeout_ms, long timeout_ms, redisContext **out) {
    dlock__endpoint ep;
    char err[200], shown[CLI_URL_SHOWN_MAX];
    int rc = dlock__url_parse(url, &ep, err, sizeof(err));
    if (rc == DLOCK_ENOMEM) {
        cli_error("%s", err);
        return CLI_EXIT_SOFTWARE;
    }
    if (rc != DLOCK_OK)
        return cli_usage_error("'%s': %s", dlock__url_masked(url, shown, sizeof(shown)), err);
    char where[300];
    dlock__endpoint_describe(&ep, where, sizeof(where));

    struct timeval ct = {connect_timeout_ms / 1000, (connect_timeout_ms % 1000) * 1000};
    struct timeval rt = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = ep.is_unix ? redisConnectUnixWithTimeout(ep.path, ct)
                                 : redisConnectWithTimeout(ep.host, ep.port, ct);
    if (!c || c->err) {
        cli_error("cannot connect to %s: %s", where, c ? c->errstr : "out of memory");
        redisFree(c);
        dlock__endpoint_free(&ep);
        return CLI_EXIT_UNAVAILABLE;
    }
    redisSetTimeout(c, rt);

    int code = 0;
    if (ep.password) {
        const char *auth[] = {"AUTH", ep.user ? ep.user : ep.password, ep.password};
        code = handshake(c, where, ep.user ? 3 : 2, auth);
    }
    if (code == 0 && ep.db != 0) {
        char db[16];
        snprintf(db, sizeof(db), "%d", ep.db);
        const char *select[] = {"SELECT", db};
        code = handshake(c, where, 2, select);
    }
    dlock__endpoint_free(&ep);
    if (code != 0) {
        redisFree(c);
        return code;
    }
    *out = c;
    return 0;
}
