/* SPDX-License-Identifier: MIT */
/* url.c — connection URLs.
 *
 *   redis://[user:password@]host[:port][/db]      TCP; host may be [v6-address]
 *   redis://:password@host                         password only (AUTH password)
 *   rediss://[user:password@]host[:port][/db][?cacert=PATH&cert=PATH&key=PATH&sni=NAME
 *                                              &insecure=1]   TLS
 *   unix:///path/to/redis.sock[?db=N&user=U&password=P]
 *   any form: [?sync_replicas=auto|0|N&sync_timeout_ms=MS]  the WAIT after every write
 *                                              but a release (replicas.c); auto and 1000
 *                                              by default
 *   redis[s]-sentinel://... and redis[s]-cluster://...  read by url_sentinel.c and
 *                                              url_cluster.c (each seed as a redis[s]:// URL)
 *
 * user, password and query values may be percent-encoded (%40 for '@'). Anything else —
 * another scheme, a port outside 1..65535, a db outside 0..INT_MAX, an unknown query key
 * (a TLS key on a plain URL too), a relative socket path — is DLOCK_EINVAL with the reason,
 * before any I/O. Whether the TLS files can be read is checked when the client is made
 * (tls.c). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "base/base.h"

static int bad(char *err, size_t errlen, const char *why) {
    snprintf(err, errlen, "bad URL: %s", why);
    return DLOCK_EINVAL;
}

/* Every scheme a client URL may have: client.c hands the sentinel and cluster forms to
 * their own parsers (url_sentinel.c, url_cluster.c) and the rest to dlock__url_parse. The
 * one list a mistyped scheme is answered with; test_url_schemes proves each is taken. */
static const char *const known_schemes[] = {
    "redis://",           "rediss://",        "unix://",           "redis-sentinel://",
    "rediss-sentinel://", "redis-cluster://", "rediss-cluster://",
};

const char *const *dlock__url_schemes(size_t *count) {
    *count = sizeof(known_schemes) / sizeof(known_schemes[0]);
    return known_schemes;
}

/* A scheme that is none of known_schemes: what was given (the text before "://", never
 * what follows it, where a password may be) and every scheme there is. */
static int bad_scheme(const char *url, char *err, size_t errlen) {
    const char *end = strstr(url, "://");
    size_t given = end ? (size_t)(end - url) : 0;
    if (given > 32 || strcspn(url, "@:/?") < given)
        given = 0; /* not a scheme at all (a host:port, userinfo): quote nothing */
    int n = given ? snprintf(err, errlen, "bad URL: unknown scheme \"%.*s://\"; use one of ",
                             (int)given, url)
                  : snprintf(err, errlen, "bad URL: no scheme; use one of ");
    for (size_t i = 0; i < sizeof(known_schemes) / sizeof(known_schemes[0]); i++) {
        size_t used = n < 0 ? errlen : (size_t)n;
        if (used >= errlen)
            break;
        n += snprintf(err + used, errlen - used, "%s%s", i ? ", " : "", known_schemes[i]);
    }
    return DLOCK_EINVAL;
}

static int hex_value(char ch) {
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Percent-decodes s[0..n) into a new string; NULL with *invalid set on a bad escape or an
 * encoded NUL. */
static char *decode(const char *s, size_t n, bool *invalid) {
    char *out = dlock__malloc(n + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            *o++ = s[i];
            continue;
        }
        if (i + 2 >= n) { /* fewer than two characters follow the '%' */
            dlock__free(out);
            *invalid = true;
            return NULL;
        }
        int h = hex_value(s[i + 1]), l = hex_value(s[i + 2]);
        if (h < 0 || l < 0 || (h == 0 && l == 0)) {
            dlock__free(out);
            *invalid = true;
            return NULL;
        }
        *o++ = (char)(h * 16 + l);
        i += 2;
    }
    *o = '\0';
    return out;
}

/* Parses a decimal integer in s[0..n) within [min, max]. */
static bool parse_int(const char *s, size_t n, long min, long max, int *out) {
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

/* Stores a percent-decoded copy of s[0..n) in *dst (replacing an earlier value). */
static int set_decoded(char **dst, const char *s, size_t n, const char *what, char *err,
                       size_t errlen) {
    bool invalid = false;
    char *v = decode(s, n, &invalid);
    if (!v) {
        if (invalid) {
            snprintf(err, errlen, "bad URL: bad %%-escape in %s", what);
            return DLOCK_EINVAL;
        }
        snprintf(err, errlen, "out of memory");
        return DLOCK_ENOMEM;
    }
    dlock__free(*dst);
    *dst = v;
    return DLOCK_OK;
}

/* The value of a query key that is a file path or a name: non-empty, decoded. */
static int set_nonempty(char **dst, const char *v, size_t vlen, const char *key, char *err,
                        size_t errlen) {
    if (vlen == 0) {
        snprintf(err, errlen, "bad URL: %s= is empty", key);
        return DLOCK_EINVAL;
    }
    return set_decoded(dst, v, vlen, key, err, errlen);
}

static bool key_is(const char *q, size_t klen, const char *key) {
    return klen == strlen(key) && memcmp(q, key, klen) == 0;
}

/* One key=value of the WAIT that follows every write, on any URL; 1 when key is neither. */
static int parse_sync_param(const char *q, size_t klen, const char *v, size_t vlen,
                            dlock__endpoint *ep, char *err, size_t errlen) {
    if (key_is(q, klen, "sync_replicas")) {
        if (vlen == 4 && memcmp(v, "auto", 4) == 0)
            ep->sync_replicas = DLOCK__SYNC_AUTO;
        else if (!parse_int(v, vlen, 0, 1000, &ep->sync_replicas))
            return bad(err, errlen, "sync_replicas must be auto or a number from 0 to 1000");
        return DLOCK_OK;
    }
    if (key_is(q, klen, "sync_timeout_ms")) {
        int ms;
        if (!parse_int(v, vlen, 1, 3600000, &ms))
            return bad(err, errlen, "sync_timeout_ms must be a number from 1 to 3600000");
        ep->sync_timeout_ms = ms;
        return DLOCK_OK;
    }
    return 1;
}

/* One key=value of a TLS URL; 1 when key is none of TLS's. */
static int parse_tls_param(const char *q, size_t klen, const char *v, size_t vlen,
                           dlock__endpoint *ep, char *err, size_t errlen) {
    if (key_is(q, klen, "cacert"))
        return set_nonempty(&ep->tls_cacert, v, vlen, "cacert", err, errlen);
    if (key_is(q, klen, "cert"))
        return set_nonempty(&ep->tls_cert, v, vlen, "cert", err, errlen);
    if (key_is(q, klen, "key"))
        return set_nonempty(&ep->tls_key, v, vlen, "key", err, errlen);
    if (key_is(q, klen, "sni"))
        return set_nonempty(&ep->tls_sni, v, vlen, "sni", err, errlen);
    if (key_is(q, klen, "insecure")) {
        if (vlen != 1 || (v[0] != '0' && v[0] != '1'))
            return bad(err, errlen, "insecure must be 0 or 1");
        ep->tls_insecure = v[0] == '1';
        return DLOCK_OK;
    }
    return 1;
}

/* The query of a unix:// URL (db, user, password) or a TCP one (the TLS keys, rediss://
 * only); the sync keys on any. */
static int parse_query(const char *q, dlock__endpoint *ep, char *err, size_t errlen) {
    while (*q) {
        const char *amp = strchr(q, '&');
        size_t len = amp ? (size_t)(amp - q) : strlen(q);
        const char *eq = memchr(q, '=', len);
        if (!eq)
            return bad(err, errlen, "query parameter without '='");
        size_t klen = (size_t)(eq - q), vlen = len - klen - 1;
        const char *v = eq + 1;
        int rc = parse_sync_param(q, klen, v, vlen, ep, err, errlen);
        if (rc != 1) {
            /* a sync key: done */
        } else if (ep->is_unix) {
            if (key_is(q, klen, "db")) {
                if (!parse_int(v, vlen, 0, INT_MAX, &ep->db))
                    return bad(err, errlen, "db must be a number from 0");
                rc = DLOCK_OK;
            } else if (key_is(q, klen, "user")) {
                rc = set_decoded(&ep->user, v, vlen, "user", err, errlen);
            } else if (key_is(q, klen, "password")) {
                rc = set_decoded(&ep->password, v, vlen, "password", err, errlen);
            }
        } else {
            rc = parse_tls_param(q, klen, v, vlen, ep, err, errlen);
            if (rc == DLOCK_OK && !ep->tls)
                return bad(err, errlen,
                           "cacert, cert, key, sni and insecure are for rediss:// "
                           "(TLS) URLs");
        }
        if (rc == 1)
            return bad(err, errlen,
                       ep->is_unix ? "unknown query parameter (db, user, password, "
                                     "sync_replicas, sync_timeout_ms are known)"
                       : ep->tls   ? "unknown query parameter (cacert, cert, key, sni, insecure, "
                                     "sync_replicas, sync_timeout_ms are known)"
                                   : "unknown query parameter (sync_replicas, sync_timeout_ms "
                                     "are known; the TLS keys on rediss:// URLs; use /db)");
        if (rc != DLOCK_OK)
            return rc;
        q = amp ? amp + 1 : q + len;
    }
    return DLOCK_OK;
}

static int parse_unix(const char *rest, dlock__endpoint *ep, char *err, size_t errlen) {
    if (rest[0] != '/')
        return bad(err, errlen, "unix socket path must be absolute (unix:///path)");
    const char *q = strchr(rest, '?');
    size_t plen = q ? (size_t)(q - rest) : strlen(rest);
    if (plen < 2)
        return bad(err, errlen, "unix socket path is empty");
    if (plen >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return bad(err, errlen, "unix socket path is longer than 107 bytes");
    ep->is_unix = true;
    ep->path = dlock__strndup(rest, plen);
    if (!ep->path)
        return DLOCK_ENOMEM;
    return q ? parse_query(q + 1, ep, err, errlen) : DLOCK_OK;
}

static int parse_authority(const char *rest, dlock__endpoint *ep, char *err, size_t errlen);

static int parse_tcp(const char *url, dlock__endpoint *ep, char *err, size_t errlen) {
    /* the query first: what precedes it is the authority and the /db */
    const char *query = strchr(url, '?');
    char *rest = query ? dlock__strndup(url, (size_t)(query - url)) : dlock__strdup(url);
    if (!rest)
        return DLOCK_ENOMEM;
    int rc = parse_authority(rest, ep, err, errlen);
    dlock__free(rest);
    if (rc == DLOCK_OK && query)
        rc = parse_query(query + 1, ep, err, errlen);
    if (rc == DLOCK_OK && (ep->tls_cert != NULL) != (ep->tls_key != NULL))
        rc = bad(err, errlen, "cert and key go together (mutual TLS)");
    return rc;
}

static int parse_authority(const char *rest, dlock__endpoint *ep, char *err, size_t errlen) {
    const char *slash = strchr(rest, '/');
    size_t auth_len = slash ? (size_t)(slash - rest) : strlen(rest);
    /* userinfo ends at the last '@' before the path: a password may hold a raw '@'. */
    const char *at = NULL;
    for (const char *p = rest; p < rest + auth_len; p++)
        if (*p == '@')
            at = p;
    const char *host = rest;
    int rc;
    if (at) {
        const char *colon = memchr(rest, ':', (size_t)(at - rest));
        if (!colon)
            return bad(err, errlen, "userinfo must be user:password or :password");
        if (colon > rest && (rc = set_decoded(&ep->user, rest, (size_t)(colon - rest), "user", err,
                                              errlen)) != DLOCK_OK)
            return rc;
        if ((rc = set_decoded(&ep->password, colon + 1, (size_t)(at - colon - 1), "password", err,
                              errlen)) != DLOCK_OK)
            return rc;
        host = at + 1;
    }
    const char *host_end = rest + auth_len, *port = NULL;
    if (*host == '[') {
        const char *close = memchr(host, ']', (size_t)(host_end - host));
        if (!close || close == host + 1)
            return bad(err, errlen, "unterminated or empty [IPv6] host");
        ep->host = dlock__strndup(host + 1, (size_t)(close - host - 1));
        if (close + 1 < host_end) {
            if (close[1] != ':')
                return bad(err, errlen, "junk after ]");
            port = close + 2;
        }
    } else {
        const char *colon = memchr(host, ':', (size_t)(host_end - host));
        size_t hlen = colon ? (size_t)(colon - host) : (size_t)(host_end - host);
        if (hlen == 0)
            return bad(err, errlen, "host is empty");
        ep->host = dlock__strndup(host, hlen);
        port = colon ? colon + 1 : NULL;
    }
    if (!ep->host)
        return DLOCK_ENOMEM;
    if (port && !parse_int(port, (size_t)(host_end - port), 1, 65535, &ep->port))
        return bad(err, errlen, "port must be a number from 1 to 65535");
    if (slash && slash[1] && !parse_int(slash + 1, strlen(slash + 1), 0, INT_MAX, &ep->db))
        return bad(err, errlen, "database must be a number from 0");
    return DLOCK_OK;
}

int dlock__url_parse(const char *url, dlock__endpoint *ep, char *err, size_t errlen) {
    memset(ep, 0, sizeof(*ep));
    ep->port = 6379;
    ep->sync_replicas = DLOCK__SYNC_AUTO;
    ep->sync_timeout_ms = 1000;
    err[0] = '\0';
    int rc;
    if (!url || !url[0])
        rc = bad(err, errlen, "empty");
    else if (strncmp(url, "redis://", 8) == 0)
        rc = parse_tcp(url + 8, ep, err, errlen);
    else if (strncmp(url, "unix://", 7) == 0)
        rc = parse_unix(url + 7, ep, err, errlen);
    else if (strncmp(url, "rediss://", 9) == 0) {
        ep->tls = true;
        rc = parse_tcp(url + 9, ep, err, errlen);
    } else
        rc = bad_scheme(url, err, errlen);
    if (rc == DLOCK_ENOMEM && !err[0])
        snprintf(err, errlen, "out of memory");
    if (rc != DLOCK_OK)
        dlock__endpoint_free(ep);
    return rc;
}

void dlock__endpoint_free(dlock__endpoint *ep) {
    dlock__free(ep->host);
    dlock__free(ep->path);
    dlock__free(ep->user);
    dlock__free(ep->password);
    dlock__free(ep->tls_cacert);
    dlock__free(ep->tls_cert);
    dlock__free(ep->tls_key);
    dlock__free(ep->tls_sni);
    memset(ep, 0, sizeof(*ep));
}

/* ---- showing a URL or an endpoint ----------------------------------------------------- */

typedef struct text_out {
    char *buf;
    size_t size, len;
} text_out;

/* Appends s[0..n), as much as fits; buf stays NUL-terminated. */
static void put(text_out *o, const char *s, size_t n) {
    size_t room = o->size - 1 - o->len;
    if (n > room)
        n = room;
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = '\0';
}

#define MASK "***"

/* The length of "password=" or "sentinel_password=" when s opens with one, else 0. */
static size_t password_key_len(const char *s) {
    static const char *const keys[] = {"password=", "sentinel_password="};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (strncmp(s, keys[i], strlen(keys[i])) == 0)
            return strlen(keys[i]);
    return 0;
}

/* Copies s (the part after any userinfo) with every password= and sentinel_password=
 * query value masked. */
static void put_query_masked(text_out *o, const char *s) {
    bool in_query = false;
    while (*s) {
        bool param_start = in_query && (s[-1] == '?' || s[-1] == '&');
        size_t key_len = param_start ? password_key_len(s) : 0;
        if (key_len) {
            put(o, s, key_len);
            put(o, MASK, strlen(MASK));
            s += key_len + strcspn(s + key_len, "&");
            continue;
        }
        if (*s == '?')
            in_query = true;
        put(o, s, 1);
        s++;
    }
}

const char *dlock__url_masked(const char *url, char *buf, size_t size) {
    if (size == 0)
        return buf;
    text_out o = {buf, size, 0};
    buf[0] = '\0';
    if (!url)
        return buf;
    const char *scheme_end = strstr(url, "://");
    const char *auth = scheme_end ? scheme_end + 3 : url;
    /* userinfo ends at the last '@' (a mistyped password may hold a raw '@', '/' or '?'
     * where the parser stops short); a unix:// URL has a path where the authority would
     * be, and its credentials in the query */
    const char *at = *auth != '/' ? strrchr(auth, '@') : NULL;
    if (!at) {
        put_query_masked(&o, url);
        return buf;
    }
    const char *colon = memchr(auth, ':', (size_t)(at - auth));
    const char *keep_end = colon ? colon + 1 : auth; /* the user, if there is a ':' */
    put(&o, url, (size_t)(keep_end - url));
    put(&o, MASK, strlen(MASK));
    put_query_masked(&o, at);
    return buf;
}

const char *dlock__endpoint_describe(const dlock__endpoint *ep, char *buf, size_t size) {
    const char *tls = ep->tls ? " (TLS)" : "";
    if (ep->is_unix)
        snprintf(buf, size, "unix socket %s", ep->path);
    else if (!ep->host)
        snprintf(buf, size, "(no host yet)");
    else if (strchr(ep->host, ':'))
        snprintf(buf, size, "[%s]:%d%s", ep->host, ep->port, tls);
    else
        snprintf(buf, size, "%s:%d%s", ep->host, ep->port, tls);
    return buf;
}
