/* SPDX-License-Identifier: MIT */
/* url_cluster.c — the URL of a Redis Cluster, given by some of its nodes (cluster.h):
 *
 *   redis-cluster://[user:password@]host[:port][,host[:port]...][?query]
 *   rediss-cluster://...                         (TLS to every node)
 *
 * It is read as one plain URL per seed, redis[s]://[user:password@]host[:port][?query],
 * each parsed by dlock__url_parse, so every rule of a redis:// or rediss:// URL (escapes,
 * IPv6 hosts, ports, the TLS and sync query) holds here too. Any one seed that answers is
 * enough: the nodes' addresses come from the slot map. */
#include <stdio.h>
#include <string.h>

#include "topology/cluster.h"

static int bad(char *err, size_t errlen, const char *why) {
    snprintf(err, errlen, "bad URL: %s", why);
    return DLOCK_EINVAL;
}

static const char *after_scheme(const char *url, bool *tls) {
    static const char plain[] = "redis-cluster://", secure[] = "rediss-cluster://";
    *tls = strncmp(url, secure, sizeof(secure) - 1) == 0;
    if (*tls)
        return url + sizeof(secure) - 1;
    return strncmp(url, plain, sizeof(plain) - 1) == 0 ? url + sizeof(plain) - 1 : NULL;
}

bool dlock__url_is_cluster(const char *url) {
    bool tls;
    return url && after_scheme(url, &tls);
}

/* The URL's parts, pointing into it: userinfo (with its '@'), the seed list, the query
 * (with its '?'). */
typedef struct parts {
    bool tls;
    const char *userinfo, *hosts, *query;
    size_t userinfo_len, hosts_len;
} parts;

static int split(const char *url, parts *p, char *err, size_t errlen) {
    const char *rest = after_scheme(url, &p->tls);
    if (!rest)
        return bad(err, errlen, "scheme must be redis-cluster:// or rediss-cluster://");
    size_t authority_len = strcspn(rest, "/?");
    if (rest[authority_len] == '/')
        return bad(err, errlen, "a cluster has one database: no /db after the hosts");
    p->query = rest + authority_len;
    const char *at = NULL; /* userinfo ends at the last '@', as in dlock__url_parse */
    for (const char *c = rest; c < p->query; c++)
        if (*c == '@')
            at = c;
    p->userinfo = rest;
    p->userinfo_len = at ? (size_t)(at + 1 - rest) : 0;
    p->hosts = rest + p->userinfo_len;
    p->hosts_len = (size_t)(p->query - p->hosts);
    return p->hosts_len ? DLOCK_OK
                        : bad(err, errlen, "no seed host (host[:port][,host[:port]...])");
}

/* Seed `index` (host, n bytes) as its plain URL, parsed into ep. */
static int parse_seed(const parts *p, const char *host, size_t n, size_t index, dlock__endpoint *ep,
                      char *err, size_t errlen) {
    if (n == 0)
        return bad(err, errlen, "empty seed host in the list (host[:port],host[:port])");
    size_t size = 16 + p->userinfo_len + n + strlen(p->query);
    char *url = dlock__malloc(size);
    if (!url) {
        snprintf(err, errlen, "out of memory");
        return DLOCK_ENOMEM;
    }
    snprintf(url, size, "%s://%.*s%.*s%s", p->tls ? "rediss" : "redis", (int)p->userinfo_len,
             p->userinfo, (int)n, host, p->query);
    char why[200];
    int rc = dlock__url_parse(url, ep, why, sizeof(why));
    dlock__free(url);
    if (rc == DLOCK_EINVAL) {
        const char *reason = strncmp(why, "bad URL: ", 9) == 0 ? why + 9 : why;
        snprintf(err, errlen, "bad URL: seed host %zu: %s", index + 1, reason);
    } else if (rc != DLOCK_OK) {
        snprintf(err, errlen, "%s", why);
    }
    return rc;
}

static int parse_seeds(const parts *p, dlock__cluster_url *out, char *err, size_t errlen) {
    size_t count = 1;
    for (size_t i = 0; i < p->hosts_len; i++)
        count += p->hosts[i] == ',';
    out->seeds = dlock__calloc(count, sizeof(*out->seeds));
    if (!out->seeds) {
        snprintf(err, errlen, "out of memory");
        return DLOCK_ENOMEM;
    }
    const char *host = p->hosts, *end = p->hosts + p->hosts_len;
    for (size_t i = 0; i < count; i++) {
        const char *comma = memchr(host, ',', (size_t)(end - host));
        size_t n = comma ? (size_t)(comma - host) : (size_t)(end - host);
        int rc = parse_seed(p, host, n, i, &out->seeds[i], err, errlen);
        if (rc != DLOCK_OK)
            return rc;
        out->count++;
        host += n + 1;
    }
    return DLOCK_OK;
}

/* The nodes' settings: the first seed's, without its address. */
static int take_data(dlock__cluster_url *out, const parts *p, char *err, size_t errlen) {
    int rc = parse_seed(p, p->hosts, strcspn(p->hosts, ",?"), 0, &out->data, err, errlen);
    if (rc == DLOCK_OK) {
        dlock__free(out->data.host);
        out->data.host = NULL;
        out->data.port = 0;
    }
    return rc;
}

int dlock__cluster_url_parse(const char *url, dlock__cluster_url *out, char *err, size_t errlen) {
    memset(out, 0, sizeof(*out));
    err[0] = '\0';
    parts p = {0};
    int rc = url ? split(url, &p, err, errlen) : bad(err, errlen, "empty");
    if (rc == DLOCK_OK)
        rc = parse_seeds(&p, out, err, errlen);
    if (rc == DLOCK_OK)
        rc = take_data(out, &p, err, errlen);
    if (rc != DLOCK_OK)
        dlock__cluster_url_free(out);
    return rc;
}

int dlock__cluster_node_url(const char *url, const char *host, int port, char **out) {
    parts p = {0};
    char err[200];
    if (!url || !host || !host[0] || port < 1 || port > 65535 ||
        split(url, &p, err, sizeof(err)) != DLOCK_OK)
        return DLOCK_EINVAL;
    bool v6 = strchr(host, ':') != NULL; /* an IPv6 address is written in brackets */
    size_t size = 32 + p.userinfo_len + strlen(host) + strlen(p.query);
    char *node_url = dlock__malloc(size);
    if (!node_url)
        return DLOCK_ENOMEM;
    snprintf(node_url, size, "%s://%.*s%s%s%s:%d%s", p.tls ? "rediss" : "redis",
             (int)p.userinfo_len, p.userinfo, v6 ? "[" : "", host, v6 ? "]" : "", port, p.query);
    *out = node_url;
    return DLOCK_OK;
}

void dlock__cluster_url_free(dlock__cluster_url *u) {
    for (size_t i = 0; i < u->count; i++)
        dlock__endpoint_free(&u->seeds[i]);
    dlock__free(u->seeds);
    dlock__endpoint_free(&u->data);
    memset(u, 0, sizeof(*u));
}
