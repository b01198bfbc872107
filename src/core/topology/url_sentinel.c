/* SPDX-License-Identifier: MIT */
/* url_sentinel.c — the URL of a master known through its sentinels (sentinel.h):
 *
 *   redis-sentinel://[user:password@]host[:port][,host[:port]...]/MASTER[/db][?query]
 *   rediss-sentinel://...                      (TLS to the sentinels and the data nodes)
 *
 * It is read as several plain URLs, each parsed by dlock__url_parse, so that every rule of
 * a redis:// or rediss:// URL (escapes, IPv6 hosts, ports, the TLS query) holds here too:
 *   the data nodes:  redis[s]://[user:password@]<first sentinel>[/db][?query]
 *   sentinel i:      redis[s]://[sentinel_user:sentinel_password@]host_i[:26379][?query]
 * where query is the URL's query without sentinel_user and sentinel_password. */
#include <stdio.h>
#include <string.h>

#include "topology/sentinel.h"

#define SENTINEL_DEFAULT_PORT "26379"

static int bad(char *err, size_t errlen, const char *why) {
    snprintf(err, errlen, "bad URL: %s", why);
    return DLOCK_EINVAL;
}

/* ---- a growing string ------------------------------------------------------------------- */

typedef struct text {
    char *s;
    size_t len, cap;
    bool out_of_memory;
} text;

static void add(text *t, const char *s, size_t n) {
    if (t->out_of_memory)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = (t->len + n + 1) * 2;
        char *grown = dlock__realloc(t->s, cap);
        if (!grown) {
            t->out_of_memory = true;
            return;
        }
        t->s = grown;
        t->cap = cap;
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
}

static void add_str(text *t, const char *s) {
    add(t, s, strlen(s));
}

static bool unreserved(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           strchr("-._~", ch);
}

/* Appends s[0..n) as userinfo: escapes kept as they are, every other character a URL
 * delimiter could take for its own ('@', ':', '/') escaped, so a query value moves into
 * userinfo unchanged in meaning. */
static void add_userinfo_part(text *t, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (unreserved(s[i]) || s[i] == '%') {
            add(t, s + i, 1);
            continue;
        }
        char esc[4];
        snprintf(esc, sizeof(esc), "%%%02X", (unsigned char)s[i]);
        add(t, esc, 3);
    }
}

/* ---- the parts of the URL --------------------------------------------------------------- */

typedef struct slice {
    const char *s;
    size_t n;
} slice;

typedef struct parts {
    const char *direct_scheme; /* "redis://" or "rediss://" */
    slice userinfo;            /* the data nodes' credentials, raw; n 0: none */
    slice hosts;               /* "h1[:p1],h2[:p2]..." */
    slice master, db;          /* db n 0: none */
    slice sentinel_user, sentinel_password;
    bool has_sentinel_user, has_sentinel_password;
    text query; /* the other query parameters */
} parts;

static bool has_prefix(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool dlock__url_is_sentinel(const char *url) {
    return url && (has_prefix(url, "redis-sentinel://") || has_prefix(url, "rediss-sentinel://"));
}

/* A master name goes into SENTINEL commands as one argument and into messages: printable,
 * no space, nothing a URL would have escaped. */
static bool master_name_ok(slice m) {
    if (m.n == 0)
        return false;
    for (size_t i = 0; i < m.n; i++)
        if (m.s[i] <= ' ' || m.s[i] > '~' || m.s[i] == '%')
            return false;
    return true;
}

static int split_query(const char *q, parts *p, char *err, size_t errlen) {
    while (*q) {
        size_t len = strcspn(q, "&");
        const char *eq = memchr(q, '=', len);
        if (!eq)
            return bad(err, errlen, "query parameter without '='");
        slice key = {q, (size_t)(eq - q)}, value = {eq + 1, len - (size_t)(eq - q) - 1};
        if (key.n == 13 && memcmp(key.s, "sentinel_user", 13) == 0) {
            p->sentinel_user = value;
            p->has_sentinel_user = true;
        } else if (key.n == 17 && memcmp(key.s, "sentinel_password", 17) == 0) {
            p->sentinel_password = value;
            p->has_sentinel_password = true;
        } else {
            if (p->query.len > 0)
                add_str(&p->query, "&");
            add(&p->query, q, len);
        }
        q += len;
        if (*q == '&')
            q++;
    }
    if (p->has_sentinel_user && !p->has_sentinel_password)
        return bad(err, errlen, "sentinel_user needs sentinel_password");
    return DLOCK_OK;
}

static int split(const char *url, parts *p, char *err, size_t errlen) {
    const char *rest;
    if (has_prefix(url, "redis-sentinel://")) {
        p->direct_scheme = "redis://";
        rest = url + strlen("redis-sentinel://");
    } else {
        p->direct_scheme = "rediss://";
        rest = url + strlen("rediss-sentinel://");
    }
    const char *slash = strchr(rest, '/');
    size_t authority_len = slash ? (size_t)(slash - rest) : strcspn(rest, "?");
    /* userinfo ends at the last '@' before the path, as in dlock__url_parse */
    const char *at = NULL;
    for (const char *c = rest; c < rest + authority_len; c++)
        if (*c == '@')
            at = c;
    if (at)
        p->userinfo = (slice){rest, (size_t)(at - rest)};
    const char *hosts = at ? at + 1 : rest;
    p->hosts = (slice){hosts, (size_t)(rest + authority_len - hosts)};
    if (p->hosts.n == 0)
        return bad(err, errlen, "no sentinel host (host[:port][,host[:port]...])");
    if (!slash)
        return bad(err, errlen, "the master name is missing (redis-sentinel://hosts/MASTER)");
    const char *path = slash + 1;
    size_t path_len = strcspn(path, "?");
    size_t name_len = strcspn(path, "/?");
    p->master = (slice){path, name_len};
    if (!master_name_ok(p->master))
        return bad(err, errlen,
                   "the master name is empty or holds a space, '%' or a control "
                   "character (redis-sentinel://hosts/MASTER)");
    if (name_len < path_len)
        p->db = (slice){path + name_len + 1, path_len - name_len - 1};
    const char *q = path + path_len;
    return *q == '?' ? split_query(q + 1, p, err, errlen) : DLOCK_OK;
}

/* ---- the plain URLs it is read as ------------------------------------------------------- */

static bool host_has_port(slice h) {
    const char *from = h.s;
    if (h.n > 0 && h.s[0] == '[') {
        const char *close = memchr(h.s, ']', h.n);
        if (!close)
            return false; /* dlock__url_parse says what is wrong with it */
        from = close;
    }
    return memchr(from, ':', h.n - (size_t)(from - h.s)) != NULL;
}

static void add_host(text *t, slice h) {
    add(t, h.s, h.n);
    if (!host_has_port(h))
        add_str(t, ":" SENTINEL_DEFAULT_PORT);
}

static void add_query(text *t, const parts *p) {
    if (p->query.len > 0) {
        add_str(t, "?");
        add(t, p->query.s, p->query.len);
    }
}

/* Parses the plain URL in t into ep; a reason in err that names the part ("sentinel host
 * 2: port must be ..."): the URL the user wrote is not the one parsed. */
static int parse_part(text *t, const char *part, dlock__endpoint *ep, char *err, size_t errlen) {
    if (t->out_of_memory) {
        dlock__free(t->s);
        snprintf(err, errlen, "out of memory");
        return DLOCK_ENOMEM;
    }
    char why[200];
    int rc = dlock__url_parse(t->s, ep, why, sizeof(why));
    dlock__free(t->s);
    memset(t, 0, sizeof(*t));
    if (rc != DLOCK_OK) {
        const char *reason = has_prefix(why, "bad URL: ") ? why + strlen("bad URL: ") : why;
        snprintf(err, errlen, "%s%s%s", rc == DLOCK_EINVAL ? "bad URL: " : "", part, reason);
    }
    return rc;
}

static int parse_data(const parts *p, slice first_host, dlock__endpoint *ep, char *err,
                      size_t errlen) {
    text t = {0};
    add_str(&t, p->direct_scheme);
    if (p->userinfo.n > 0 || p->userinfo.s) {
        add(&t, p->userinfo.s, p->userinfo.n);
        add_str(&t, "@");
    }
    add_host(&t, first_host);
    if (p->db.n > 0) {
        add_str(&t, "/");
        add(&t, p->db.s, p->db.n);
    }
    add_query(&t, p);
    int rc = parse_part(&t, "", ep, err, errlen);
    if (rc == DLOCK_OK) { /* the host was a stand-in: the resolver finds the master */
        dlock__free(ep->host);
        ep->host = NULL;
        ep->port = 0;
    }
    return rc;
}

static int parse_sentinel(const parts *p, slice host, size_t index, dlock__endpoint *ep, char *err,
                          size_t errlen) {
    text t = {0};
    add_str(&t, p->direct_scheme);
    if (p->has_sentinel_password) {
        add_userinfo_part(&t, p->sentinel_user.s, p->sentinel_user.n);
        add_str(&t, ":");
        add_userinfo_part(&t, p->sentinel_password.s, p->sentinel_password.n);
        add_str(&t, "@");
    }
    add_host(&t, host);
    add_query(&t, p);
    char part[48];
    snprintf(part, sizeof(part), "sentinel host %zu: ", index + 1);
    return parse_part(&t, part, ep, err, errlen);
}

static slice next_host(slice *list) {
    size_t n = strcspn(list->s, ",");
    if (n > list->n)
        n = list->n;
    slice h = {list->s, n};
    size_t used = n < list->n ? n + 1 : n;
    list->s += used;
    list->n -= used;
    return h;
}

/* A host is taken as it is written (it is not percent-decoded, and the resolver would get
 * it whole): a space, a control byte or an escape ("%00") in it can only be a mistake. */
static bool sentinel_host_ok(slice h) {
    for (size_t i = 0; i < h.n; i++) {
        unsigned char ch = (unsigned char)h.s[i];
        if (ch <= ' ' || ch >= 0x7f || (ch == '%' && h.s[0] != '['))
            return false;
    }
    return true;
}

static int parse_all(const parts *p, dlock__sentinel_url *out, char *err, size_t errlen) {
    size_t count = 1;
    for (size_t i = 0; i < p->hosts.n; i++)
        count += p->hosts.s[i] == ',';
    if (count > DLOCK__SENTINELS_MAX) {
        snprintf(err, errlen,
                 "bad URL: %zu sentinels, at most %d (the client keeps a connection "
                 "to each)",
                 count, DLOCK__SENTINELS_MAX);
        return DLOCK_EINVAL;
    }
    out->sentinels = dlock__calloc(count, sizeof(*out->sentinels));
    out->master_name = dlock__strndup(p->master.s, p->master.n);
    if (!out->sentinels || !out->master_name) {
        snprintf(err, errlen, "out of memory");
        return DLOCK_ENOMEM;
    }
    slice list = p->hosts;
    for (size_t i = 0; i < count; i++) {
        slice host = next_host(&list);
        if (host.n == 0)
            return bad(err, errlen, "empty sentinel host in the list (host[:port],host[:port])");
        if (!sentinel_host_ok(host)) {
            snprintf(err, errlen,
                     "bad URL: sentinel host %zu holds a space, a control byte or a '%%' escape "
                     "(host[:port], the host as it is: a name or an address)",
                     i + 1);
            return DLOCK_EINVAL;
        }
        int rc = parse_sentinel(p, host, i, &out->sentinels[i], err, errlen);
        if (rc != DLOCK_OK)
            return rc;
        out->count++;
        if (i == 0 && (rc = parse_data(p, host, &out->data, err, errlen)) != DLOCK_OK)
            return rc;
    }
    return DLOCK_OK;
}

int dlock__sentinel_url_parse(const char *url, dlock__sentinel_url *out, char *err, size_t errlen) {
    memset(out, 0, sizeof(*out));
    err[0] = '\0';
    if (!dlock__url_is_sentinel(url))
        return bad(err, errlen, "scheme must be redis-sentinel:// or rediss-sentinel://");
    parts p = {0};
    int rc = split(url, &p, err, errlen);
    if (rc == DLOCK_OK && p.query.out_of_memory) {
        snprintf(err, errlen, "out of memory");
        rc = DLOCK_ENOMEM;
    }
    if (rc == DLOCK_OK)
        rc = parse_all(&p, out, err, errlen);
    dlock__free(p.query.s);
    if (rc != DLOCK_OK)
        dlock__sentinel_url_free(out);
    return rc;
}

void dlock__sentinel_url_free(dlock__sentinel_url *u) {
    for (size_t i = 0; i < u->count; i++)
        dlock__endpoint_free(&u->sentinels[i]);
    dlock__free(u->sentinels);
    dlock__free(u->master_name);
    dlock__endpoint_free(&u->data);
    memset(u, 0, sizeof(*u));
}
