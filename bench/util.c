/* SPDX-License-Identifier: MIT */
/* util.c — clocks, latency samples, the JSON line writer and the synchronous hiredis
 * helpers of dlock-bench (see bench.h). The JSON writer keeps one line in a static buffer:
 * only the main thread writes JSON. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench.h"
#include "dlock/version.h"

/* ---- time ------------------------------------------------------------------------------ */

int64_t bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void bench_sleep_ns(int64_t ns) {
    struct timespec ts = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- samples --------------------------------------------------------------------------- */

static int samples_reserve(bench_samples *s, size_t need) {
    if (need <= s->cap)
        return 0;
    size_t cap = s->cap ? s->cap : 1024;
    while (cap < need)
        cap *= 2;
    int64_t *v = realloc(s->v, cap * sizeof(*v));
    if (!v)
        return -1;
    s->v = v;
    s->cap = cap;
    return 0;
}

int bench_samples_push(bench_samples *s, int64_t ns) {
    if (samples_reserve(s, s->n + 1) != 0)
        return -1;
    s->v[s->n++] = ns;
    return 0;
}

int bench_samples_append(bench_samples *dst, const bench_samples *src) {
    if (src->n == 0)
        return 0;
    if (samples_reserve(dst, dst->n + src->n) != 0)
        return -1;
    memcpy(dst->v + dst->n, src->v, src->n * sizeof(*src->v));
    dst->n += src->n;
    return 0;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void bench_samples_sort(bench_samples *s) {
    if (s->n > 1)
        qsort(s->v, s->n, sizeof(*s->v), cmp_i64);
}

double bench_samples_pct_us(const bench_samples *s, double q) {
    if (s->n == 0)
        return 0;
    size_t i = (size_t)(q * (double)(s->n - 1) + 0.5);
    return (double)s->v[i] / 1000.0;
}

void bench_samples_free(bench_samples *s) {
    free(s->v);
    memset(s, 0, sizeof(*s));
}

/* ---- JSON ------------------------------------------------------------------------------ */

static struct {
    char buf[8192];
    size_t len;
    int depth;
    bool need_comma[8];
} json;

static void json_raw(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(json.buf + json.len, sizeof(json.buf) - json.len, fmt, ap);
    va_end(ap);
    if (n > 0)
        json.len += (size_t)n;
    if (json.len >= sizeof(json.buf))
        json.len = sizeof(json.buf) - 1; /* truncated: the line will not parse, and say so */
}

/* A string literal; names and values here are ours or Redis' version: escape the few
 * characters JSON forbids anyway. */
static void json_string(const char *s) {
    json_raw("\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            json_raw("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            json_raw("\\u%04x", (unsigned char)*s);
        else
            json_raw("%c", *s);
    }
    json_raw("\"");
}

static void json_key(const char *name) {
    if (json.need_comma[json.depth])
        json_raw(",");
    json.need_comma[json.depth] = true;
    json_string(name);
    json_raw(":");
}

void bench_json_begin(const bench_config *cfg, const char *workload, const char *client) {
    json.len = 0;
    json.depth = 0;
    json.need_comma[0] = false;
    json_raw("{");
    bench_json_str("workload", workload);
    bench_json_str("transport", cfg->transport);
    bench_json_str("client", client);
    bench_json_str("dlock_version", dlock_version_string());
    char hiredis_version[32];
    snprintf(hiredis_version, sizeof(hiredis_version), "%d.%d.%d", HIREDIS_MAJOR, HIREDIS_MINOR,
             HIREDIS_PATCH);
    bench_json_str("hiredis_version", hiredis_version);
    bench_json_str("redis_version", cfg->redis_version);
    bench_json_str("placement", cfg->placement);
}

void bench_json_open(const char *name) {
    json_key(name);
    json_raw("{");
    json.need_comma[++json.depth] = false;
}

void bench_json_close(void) {
    json_raw("}");
    json.depth--;
}

void bench_json_int(const char *name, long long v) {
    json_key(name);
    json_raw("%lld", v);
}

void bench_json_num(const char *name, double v) {
    json_key(name);
    if (isfinite(v))
        json_raw("%.3f", v);
    else
        json_raw("null");
}

void bench_json_str(const char *name, const char *v) {
    json_key(name);
    json_string(v);
}

void bench_json_bool(const char *name, bool v) {
    json_key(name);
    json_raw(v ? "true" : "false");
}

void bench_json_latency(const char *prefix, const bench_samples *s) {
    char name[64];
    snprintf(name, sizeof(name), "%s_n", prefix);
    bench_json_int(name, (long long)s->n);
    snprintf(name, sizeof(name), "%s_p50_us", prefix);
    bench_json_num(name, bench_samples_pct_us(s, 0.50));
    snprintf(name, sizeof(name), "%s_p99_us", prefix);
    bench_json_num(name, bench_samples_pct_us(s, 0.99));
    snprintf(name, sizeof(name), "%s_max_us", prefix);
    bench_json_num(name, bench_samples_pct_us(s, 1.0));
}

void bench_json_floor(const bench_floor *floor) {
    bench_json_int("floor_n", floor->n);
    bench_json_num("floor_ping_p50_us", floor->ping_p50_us);
    bench_json_num("floor_publish_p50_us", floor->publish_p50_us);
}

void bench_json_end(long long errors) {
    while (json.depth > 0)
        bench_json_close();
    bench_json_int("errors", errors);
    json_raw("}");
    fprintf(stdout, "%s\n", json.buf);
    fflush(stdout);
}

/* ---- hiredis --------------------------------------------------------------------------- */

/* Copies the URL's value of key from a "?a=b&c=d" query into out ("" if absent). */
static void query_value(const char *query, const char *key, char *out, size_t outlen) {
    out[0] = '\0';
    size_t klen = strlen(key);
    for (const char *p = query; p && *p; p = strchr(p, '&')) {
        if (*p == '&' || *p == '?')
            p++;
        if (strncmp(p, key, klen) == 0 && p[klen] == '=') {
            size_t n = strcspn(p + klen + 1, "&");
            snprintf(out, outlen, "%.*s", (int)n, p + klen + 1);
            return;
        }
    }
}

static bool reply_ok(redisContext *rc, redisReply *r, const char *what) {
    bool ok = r && r->type != REDIS_REPLY_ERROR;
    if (!ok)
        fprintf(stderr, "dlock-bench: %s: %s\n", what, r ? r->str : rc->errstr);
    if (r)
        freeReplyObject(r);
    return ok;
}

int bench_reply_error(const redisContext *rc, redisReply *r, const char *who, const char *what) {
    fprintf(stderr, "dlock-bench: %s %s: %s\n", who, what,
            r ? (r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply") : rc->errstr);
    if (r)
        freeReplyObject(r);
    return -1;
}

redisContext *bench_redis_connect(const char *url, const char **transport) {
    char user[128] = "", password[256] = "", host[256] = "", path[512] = "";
    int port = 6379;
    if (strncmp(url, "unix://", 7) == 0) {
        const char *query = strchr(url + 7, '?');
        size_t n = query ? (size_t)(query - (url + 7)) : strlen(url + 7);
        snprintf(path, sizeof(path), "%.*s", (int)n, url + 7);
        query_value(query, "user", user, sizeof(user));
        query_value(query, "password", password, sizeof(password));
    } else if (strncmp(url, "redis://", 8) == 0 || strncmp(url, "redis-cluster://", 16) == 0) {
        /* a cluster's admin connection goes to its first seed (floors, INFO of that node) */
        const char *p = strstr(url, "://") + 3, *at = strchr(p, '@');
        if (at) {
            const char *colon = memchr(p, ':', (size_t)(at - p));
            if (colon) {
                snprintf(user, sizeof(user), "%.*s", (int)(colon - p), p);
                snprintf(password, sizeof(password), "%.*s", (int)(at - colon - 1), colon + 1);
            } else {
                snprintf(password, sizeof(password), "%.*s", (int)(at - p), p);
            }
            p = at + 1;
        }
        size_t n = strcspn(p, ":/,");
        snprintf(host, sizeof(host), "%.*s", (int)n, p);
        if (p[n] == ':')
            port = atoi(p + n + 1);
    } else {
        fprintf(stderr, "dlock-bench: unsupported URL %s\n", url);
        return NULL;
    }
    redisContext *rc = path[0] ? redisConnectUnix(path) : redisConnect(host, port);
    if (!rc || rc->err) {
        fprintf(stderr, "dlock-bench: cannot connect to %s: %s\n", url,
                rc ? rc->errstr : "out of memory");
        if (rc)
            redisFree(rc);
        return NULL;
    }
    if (password[0]) {
        redisReply *r = user[0] ? redisCommand(rc, "AUTH %s %s", user, password)
                                : redisCommand(rc, "AUTH %s", password);
        if (!reply_ok(rc, r, "AUTH")) {
            redisFree(rc);
            return NULL;
        }
    }
    if (transport)
        *transport = path[0] ? "unix" : "tcp";
    return rc;
}

int bench_redis_info(redisContext *rc, const char *section, const char *field, char *out,
                     size_t outlen) {
    redisReply *r = redisCommand(rc, "INFO %s", section);
    if (!r || r->type != REDIS_REPLY_STRING) {
        reply_ok(rc, r, "INFO");
        return -1;
    }
    char key[128];
    snprintf(key, sizeof(key), "\n%s:", field);
    const char *p = strstr(r->str, key);
    int rc_out = -1;
    if (p) {
        p += strlen(key);
        snprintf(out, outlen, "%.*s", (int)strcspn(p, "\r\n"), p);
        rc_out = 0;
    }
    freeReplyObject(r);
    return rc_out;
}

/* calls=N of one "cmdstat_<name>:calls=N,..." line; 0 if the command never ran. */
static long long cmdstat_calls(const char *info, const char *name) {
    char key[64];
    snprintf(key, sizeof(key), "cmdstat_%s:calls=", name);
    const char *p = strstr(info, key);
    return p ? atoll(p + strlen(key)) : 0;
}

static double rusage_cpu_us(int who) {
    struct rusage ru;
    if (getrusage(who, &ru) != 0)
        return 0;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

int bench_counters_read(redisContext *rc, int rusage_who, bench_counters *out) {
    out->client_cpu_us = rusage_cpu_us(rusage_who);
    char user[32], sys[32];
    if (bench_redis_info(rc, "cpu", "used_cpu_user", user, sizeof(user)) != 0 ||
        bench_redis_info(rc, "cpu", "used_cpu_sys", sys, sizeof(sys)) != 0)
        return -1;
    out->server_cpu_us = (atof(user) + atof(sys)) * 1e6;
    redisReply *r = redisCommand(rc, "INFO commandstats");
    if (!r || r->type != REDIS_REPLY_STRING) {
        reply_ok(rc, r, "INFO commandstats");
        return -1;
    }
    out->evalsha = cmdstat_calls(r->str, "evalsha");
    out->eval = cmdstat_calls(r->str, "eval");
    out->publish = cmdstat_calls(r->str, "publish");
    out->subscribe = cmdstat_calls(r->str, "subscribe");
    out->unsubscribe = cmdstat_calls(r->str, "unsubscribe");
    out->wait = cmdstat_calls(r->str, "wait"); /* ?sync_replicas' acknowledgements */
    freeReplyObject(r);
    return 0;
}

void bench_json_counters(const bench_counters *before, const bench_counters *after, double per,
                         const char *unit, bool commands) {
    const struct {
        const char *name;
        double delta;
    } fields[] = {
        {"evalsha", (double)(after->evalsha - before->evalsha)},
        {"eval", (double)(after->eval - before->eval)},
        {"publish", (double)(after->publish - before->publish)},
        {"subscribe", (double)(after->subscribe - before->subscribe)},
        {"unsubscribe", (double)(after->unsubscribe - before->unsubscribe)},
        {"wait", (double)(after->wait - before->wait)},
        {"server_cpu_us", after->server_cpu_us - before->server_cpu_us},
        {"client_cpu_us", after->client_cpu_us - before->client_cpu_us},
    };
    size_t n = sizeof(fields) / sizeof(fields[0]);
    for (size_t i = commands ? 0 : n - 2; i < n; i++) {
        char name[64];
        snprintf(name, sizeof(name), "%s_per_%s", fields[i].name, unit);
        bench_json_num(name, per > 0 ? fields[i].delta / per : NAN);
    }
}

/* ---- the start gate -------------------------------------------------------------------- */

int64_t bench_gate_wait(bench_gate *g) {
    atomic_fetch_add(&g->ready, 1);
    while (!atomic_load(&g->go))
        bench_sleep_ns(100 * 1000);
    return atomic_load(&g->deadline_ns);
}

int bench_gate_ready(bench_gate *g, int n, int64_t timeout_ms) {
    int64_t give_up = bench_now_ns() + timeout_ms * 1000000;
    while (atomic_load(&g->ready) < n) {
        if (bench_now_ns() > give_up)
            return -1;
        bench_sleep_ns(1000 * 1000);
    }
    return 0;
}

int64_t bench_gate_open(bench_gate *g, int64_t duration_ms) {
    int64_t start = bench_now_ns();
    atomic_store(&g->deadline_ns, start + duration_ms * 1000000);
    atomic_store(&g->go, 1);
    return start;
}
