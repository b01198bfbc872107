/* redis_sync.c — the read-only connection of `dlock inspect`: plain synchronous hiredis.
 *
 * Accepts the URLs the library does (include/dlock/client.h):
 *   redis://[user:password@]host[:port][/db]     (host may be [v6-address]; :password alone)
 *   unix:///path/to/redis.sock[?db=N&user=U&password=P]
 * with %-escapes in user, password and query values. The library's parser is internal to
 * it, so this is a second, small one; a URL either takes is checked by both in the CLI
 * tests (the fixture's unix URL with a password). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "cli.h"
#include "inspect.h"

typedef struct endpoint {
    char *host, *path, *user, *password;
    int port, db;
} endpoint;

static void endpoint_free(endpoint *ep) {
    free(ep->host);
    free(ep->path);
    free(ep->user);
    free(ep->password);
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* %-decoded copy of s[0..n); NULL on a bad escape (or ENOMEM). */
static char *decode(const char *s, size_t n) {
    char *out = malloc(n + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            *o++ = s[i];
            continue;
        }
        int h = i + 2 < n ? hex_value(s[i + 1]) : -1, l = i + 2 < n ? hex_value(s[i + 2]) : -1;
        if (h < 0 || l < 0 || (h == 0 && l == 0)) {
            free(out);
            return NULL;
        }
        *o++ = (char)(h * 16 + l);
        i += 2;
    }
    *o = '\0';
    return out;
}

static bool number(const char *s, size_t n, long min, long max, int *out) {
    if (n == 0 || n > 10)
        return false;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v < min || v > max)
        return false;
    *out = (int)v;
    return true;
}

static const char *parse_unix(const char *rest, endpoint *ep) {
    if (rest[0] != '/')
        return "unix socket path must be absolute (unix:///path)";
    const char *q = strchr(rest, '?');
    size_t plen = q ? (size_t)(q - rest) : strlen(rest);
    if (!(ep->path = strndup(rest, plen)))
        return "out of memory";
    while (q && *++q) {
        const char *amp = strchr(q, '&');
        size_t len = amp ? (size_t)(amp - q) : strlen(q);
        const char *eq = memchr(q, '=', len);
        if (!eq)
            return "query parameter without '='";
        size_t klen = (size_t)(eq - q), vlen = len - klen - 1;
        char **dst = NULL;
        if (klen == 2 && memcmp(q, "db", 2) == 0) {
            if (!number(eq + 1, vlen, 0, INT_MAX, &ep->db))
                return "db must be a number from 0";
        } else if (klen == 4 && memcmp(q, "user", 4) == 0) {
            dst = &ep->user;
        } else if (klen == 8 && memcmp(q, "password", 8) == 0) {
            dst = &ep->password;
        } else {
            return "unknown query parameter (db, user, password are known)";
        }
        if (dst) {
            free(*dst);
            if (!(*dst = decode(eq + 1, vlen)))
                return "bad %-escape";
        }
        q = amp ? amp : NULL;
    }
    return NULL;
}

static const char *parse_tcp(const char *rest, endpoint *ep) {
    const char *slash = strchr(rest, '/');
    size_t auth_len = slash ? (size_t)(slash - rest) : strlen(rest);
    const char *at = NULL; /* the last '@': a password may hold a raw one */
    for (const char *p = rest; p < rest + auth_len; p++)
        if (*p == '@')
            at = p;
    const char *host = rest, *end = rest + auth_len, *port = NULL;
    if (at) {
        const char *colon = memchr(rest, ':', (size_t)(at - rest));
        if (!colon)
            return "userinfo must be user:password or :password";
        if (colon > rest && !(ep->user = decode(rest, (size_t)(colon - rest))))
            return "bad %-escape in user";
        if (!(ep->password = decode(colon + 1, (size_t)(at - colon - 1))))
            return "bad %-escape in password";
        host = at + 1;
    }
    if (*host == '[') {
        const char *close = memchr(host, ']', (size_t)(end - host));
        if (!close || close == host + 1)
            return "unterminated or empty [IPv6] host";
        ep->host = strndup(host + 1, (size_t)(close - host - 1));
        if (close + 1 < end) {
            if (close[1] != ':')
                return "junk after ]";
            port = close + 2;
        }
    } else {
        const char *colon = memchr(host, ':', (size_t)(end - host));
        size_t hlen = colon ? (size_t)(colon - host) : (size_t)(end - host);
        if (hlen == 0)
            return "host is empty";
        ep->host = strndup(host, hlen);
        port = colon ? colon + 1 : NULL;
    }
    if (!ep->host)
        return "out of memory";
    if (port && !number(port, (size_t)(end - port), 1, 65535, &ep->port))
        return "port must be a number from 1 to 65535";
    if (slash && slash[1] && !number(slash + 1, strlen(slash + 1), 0, INT_MAX, &ep->db))
        return "database must be a number from 0";
    return NULL;
}

/* A reply that is an error: the exit code it means. */
int redis_sync_error_code(const char *text) {
    if (strncmp(text, "WRONGPASS", 9) == 0 || strncmp(text, "NOPERM", 6) == 0 ||
        strncmp(text, "NOAUTH", 6) == 0 || strstr(text, "invalid password") ||
        strstr(text, "invalid username"))
        return CLI_EXIT_NOPERM;
    return CLI_EXIT_UNAVAILABLE;
}

/* Runs one handshake command; 0 or an exit code with the message printed. */
static int handshake(redisContext *c, const char *url, int argc, const char **argv) {
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    if (!r) {
        cli_error("cannot connect to %s: %s", url, c->errstr[0] ? c->errstr : "no reply");
        return CLI_EXIT_UNAVAILABLE;
    }
    int code = 0;
    if (r->type == REDIS_REPLY_ERROR) {
        code = redis_sync_error_code(r->str);
        cli_error("%s refused %s: %s", url, argv[0], r->str);
    }
    freeReplyObject(r);
    return code;
}

int redis_sync_open(const char *url, long connect_timeout_ms, long timeout_ms, redisContext **out) {
    endpoint ep;
    memset(&ep, 0, sizeof(ep));
    ep.port = 6379;
    const char *bad;
    if (strncmp(url, "redis://", 8) == 0)
        bad = parse_tcp(url + 8, &ep);
    else if (strncmp(url, "unix://", 7) == 0)
        bad = parse_unix(url + 7, &ep);
    else
        bad = "scheme must be redis:// or unix://";
    if (bad) {
        endpoint_free(&ep);
        return cli_usage_error("bad URL '%s': %s", url, bad);
    }

    struct timeval ct = {connect_timeout_ms / 1000, (connect_timeout_ms % 1000) * 1000};
    struct timeval rt = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = ep.path ? redisConnectUnixWithTimeout(ep.path, ct)
                              : redisConnectWithTimeout(ep.host, ep.port, ct);
    if (!c || c->err) {
        cli_error("cannot connect to %s: %s", url, c ? c->errstr : "out of memory");
        redisFree(c);
        endpoint_free(&ep);
        return CLI_EXIT_UNAVAILABLE;
    }
    redisSetTimeout(c, rt);

    int code = 0;
    if (ep.password) {
        const char *auth[] = {"AUTH", ep.user ? ep.user : ep.password, ep.password};
        code = handshake(c, url, ep.user ? 3 : 2, auth);
    }
    if (code == 0 && ep.db != 0) {
        char db[16];
        snprintf(db, sizeof(db), "%d", ep.db);
        const char *select[] = {"SELECT", db};
        code = handshake(c, url, 2, select);
    }
    endpoint_free(&ep);
    if (code != 0) {
        redisFree(c);
        return code;
    }
    *out = c;
    return 0;
}
