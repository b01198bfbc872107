/* SPDX-License-Identifier: MIT */
/* stats_prometheus.c — dlock_client_stats() written in Prometheus's text exposition format
 * (version 0.0.4), for an application that serves its own /metrics.
 *
 * A table names each single-sample metric: its name, its type and where its value sits in a
 * dlock_stats; the families with more samples follow it (the failures by code, the time-outs
 * and errors by kind, the acquire-wait histogram). The text is made from one snapshot in two
 * passes, the first only counting, so that a buffer too small is found before a byte of it is
 * written: what the caller gets is the whole exposition or an empty string, never a cut one that a
 * scraper would read as a client with fewer metrics. No allocation, no lock, no I/O: callable from
 * any thread, as dlock_client_stats() is. */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"

enum metric_kind {
    GAUGE,             /* an int64_t field */
    COUNTER,           /* a uint64_t field; the name ends in _total */
    GAUGE_MS_AS_SEC,   /* an int64_t field in ms, exposed in seconds (Prometheus's base unit) */
    COUNTER_US_AS_SEC, /* a uint64_t field in us, exposed in seconds; the name ends in _total */
};

typedef struct metric {
    const char *name;
    enum metric_kind kind;
    size_t offset; /* of the field in dlock_stats */
    const char *help;
} metric;

/* The HELP texts hold no backslash and no newline: they are written as they are. */
static const metric metrics[] = {
    {"dlock_calls_in_flight", GAUGE, offsetof(dlock_stats, calls_in_flight),
     "Calls made on the client whose result is not delivered yet."},
    {"dlock_waits", GAUGE, offsetof(dlock_stats, waits),
     "Acquires and awaits from their first attempt until their result."},
    {"dlock_leases_held", GAUGE, offsetof(dlock_stats, leases_held), "Leases the watchdog renews."},
    {"dlock_subscriptions", GAUGE, offsetof(dlock_stats, subscriptions),
     "Channels the subscriber connection is subscribed to."},
    {"dlock_renewal_lag_max_seconds", GAUGE_MS_AS_SEC, offsetof(dlock_stats, renewal_lag_max_ms),
     "The worst renewal lag seen: confirmation time minus due time."},
    {"dlock_renewals_sent_total", COUNTER, offsetof(dlock_stats, renewals_sent),
     "Lease renewals sent."},
    {"dlock_renewals_late_total", COUNTER, offsetof(dlock_stats, renewals_late),
     "Renewals confirmed more than a third of the lease after they were due."},
    {"dlock_leases_lost_total", COUNTER, offsetof(dlock_stats, leases_lost),
     "Holds lost, each one a lost callback reports: found gone, not confirmed in time, or past "
     "their bound."},
    {"dlock_reconnects_total", COUNTER, offsetof(dlock_stats, reconnects),
     "Command and subscriber connections made ready again."},
    {"dlock_messages_total", COUNTER, offsetof(dlock_stats, messages),
     "Pub/sub messages received."},
    {"dlock_wakes_total", COUNTER, offsetof(dlock_stats, wakes), "Waiters a message woke."},
    {"dlock_wakes_spared_total", COUNTER, offsetof(dlock_stats, wakes_spared),
     "Releases that woke none of this client's waiters: the release named another client's."},
    {"dlock_reply_spins_total", COUNTER, offsetof(dlock_stats, reply_spins),
     "Waits for a reply that spun before sleeping (reply_spin_us)."},
    {"dlock_reply_spin_hits_total", COUNTER, offsetof(dlock_stats, reply_spin_hits),
     "Waits whose reply came while they spun."},
    {"dlock_reply_spin_seconds_total", COUNTER_US_AS_SEC, offsetof(dlock_stats, reply_spin_us),
     "Time spent spinning for replies: the CPU the spin cost."},
};

/* Appends to buf while it has room, and counts every byte either way (as snprintf counts):
 * with buf NULL it only measures. */
typedef struct text_out {
    char *buf;
    size_t size;
    size_t len;
} text_out;

static void put_bytes(text_out *t, const char *s, size_t n) {
    if (t->buf && t->len + n < t->size)
        memcpy(t->buf + t->len, s, n);
    t->len += n;
}

static void put(text_out *t, const char *s) {
    put_bytes(t, s, strlen(s));
}

static void put_format(text_out *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put_format(text_out *t, const char *fmt, ...) {
    char piece[64]; /* a number: 20 digits and a sign at most */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(piece, sizeof(piece), fmt, ap);
    va_end(ap);
    if (n > 0)
        put_bytes(t, piece, (size_t)n < sizeof(piece) ? (size_t)n : sizeof(piece) - 1);
}

/* A label value with the format's three escapes: \\, \" and \n. */
static void put_label_value(text_out *t, const char *v) {
    for (; *v; v++) {
        if (*v == '\\')
            put(t, "\\\\");
        else if (*v == '"')
            put(t, "\\\"");
        else if (*v == '\n')
            put(t, "\\n");
        else
            put_bytes(t, v, 1);
    }
}

/* {name="value",...} with the caller's labels and then extra_name="extra_value" (when
 * extra_name is not NULL); nothing when there are none. */
static void put_labels(text_out *t, const dlock_metric_label *labels, size_t nlabels,
                       const char *extra_name, const char *extra_value) {
    if (nlabels == 0 && !extra_name)
        return;
    put(t, "{");
    for (size_t i = 0; i <= nlabels; i++) {
        const char *name = i < nlabels ? labels[i].name : extra_name;
        if (!name)
            break;
        if (i > 0)
            put(t, ",");
        put(t, name); /* checked: [a-zA-Z_][a-zA-Z0-9_]*, nothing to escape */
        put(t, "=\"");
        put_label_value(t, i < nlabels ? labels[i].value : extra_value);
        put(t, "\"");
    }
    put(t, "}");
}

/* us as exact decimal seconds, without trailing zeros: no float rounding (12 ms is "0.012",
 * never 0.0119999). */
static void put_us_as_seconds(text_out *t, int64_t us) {
    uint64_t magnitude = us < 0 ? (uint64_t)0 - (uint64_t)us : (uint64_t)us;
    char fraction[8];
    snprintf(fraction, sizeof(fraction), "%06" PRIu64, magnitude % 1000000);
    size_t n = strlen(fraction);
    while (n > 0 && fraction[n - 1] == '0')
        fraction[--n] = '\0';
    put_format(t, "%s%" PRIu64 "%s%s", us < 0 ? "-" : "", magnitude / 1000000, n ? "." : "",
               fraction);
}

static void put_family_head(text_out *t, const char *name, const char *type, const char *help) {
    put(t, "# HELP ");
    put(t, name);
    put(t, " ");
    put(t, help);
    put(t, "\n# TYPE ");
    put(t, name);
    put(t, " ");
    put(t, type);
    put(t, "\n");
}

static bool is_counter(enum metric_kind kind) {
    return kind == COUNTER || kind == COUNTER_US_AS_SEC;
}

static void put_value(text_out *t, const metric *m, const dlock_stats *s) {
    const char *field = (const char *)s + m->offset;
    if (is_counter(m->kind)) {
        uint64_t v;
        memcpy(&v, field, sizeof(v));
        if (m->kind == COUNTER)
            put_format(t, "%" PRIu64, v);
        else
            put_us_as_seconds(t, v > INT64_MAX ? INT64_MAX : (int64_t)v);
        return;
    }
    int64_t v;
    memcpy(&v, field, sizeof(v));
    if (m->kind == GAUGE)
        put_format(t, "%" PRId64, v);
    else
        put_us_as_seconds(t, v * 1000);
}

/* dlock_acquire_failures_total{code="DLOCK_E..."}, one sample per code dlock knows (0 too:
 * a series that appears only at its first failure hides that failure from increase()). */
static void put_acquire_failures(text_out *t, const dlock_stats *s,
                                 const dlock_metric_label *labels, size_t nlabels) {
    const char *name = "dlock_acquire_failures_total";
    put_family_head(t, name, "counter",
                    "Acquires and awaits that ended with an error, by its code (a try that found "
                    "the object busy is DLOCK_ETIMEDOUT).");
    for (int slot = 1; slot < DLOCK_STATS_CODES; slot++) {
        const char *code = dlock_err_name(-slot);
        if (strcmp(code, "DLOCK_UNKNOWN") == 0)
            continue;
        put(t, name);
        put_labels(t, labels, nlabels, "code", code);
        put_format(t, " %" PRIu64 "\n", s->acquire_failures[slot]);
    }
    if (s->acquire_failures[0] > 0) {
        put(t, name);
        put_labels(t, labels, nlabels, "code", "other");
        put_format(t, " %" PRIu64 "\n", s->acquire_failures[0]);
    }
}

/* dlock_acquire_timeouts_total{kind=...} or dlock_acquire_errors_total{kind=...}: one sample
 * per named kind (0 too, as above), kind="other" only once it counted. */
static void put_by_kind(text_out *t, const char *name, const char *help, const uint64_t *by_kind,
                        const dlock_metric_label *labels, size_t nlabels) {
    static const char *const kinds[] = {DLOCK_STATS_KIND_NAMES};
    put_family_head(t, name, "counter", help);
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        if (k == 0 && by_kind[0] == 0)
            continue;
        put(t, name);
        put_labels(t, labels, nlabels, "kind", kinds[k]);
        put_format(t, " %" PRIu64 "\n", by_kind[k]);
    }
}

/* dlock_acquire_wait_seconds: a histogram, its buckets cumulative as the format wants. */
static void put_acquire_wait(text_out *t, const dlock_stats *s, const dlock_metric_label *labels,
                             size_t nlabels) {
    static const int64_t bounds_us[] = {DLOCK_STATS_WAIT_BOUNDS_US};
    put_family_head(t, "dlock_acquire_wait_seconds", "histogram",
                    "How long acquires and awaits that got the object waited, from the first "
                    "attempt to the result.");
    uint64_t cumulative = 0;
    for (size_t i = 0; i < DLOCK_STATS_WAIT_BUCKETS; i++) {
        cumulative += s->acquire_wait_buckets[i];
        char le[32];
        text_out le_text = {.buf = le, .size = sizeof(le)};
        if (i < DLOCK_STATS_WAIT_BUCKETS - 1)
            put_us_as_seconds(&le_text, bounds_us[i]);
        else
            put(&le_text, "+Inf");
        le[le_text.len] = '\0';
        put(t, "dlock_acquire_wait_seconds_bucket");
        put_labels(t, labels, nlabels, "le", le);
        put_format(t, " %" PRIu64 "\n", cumulative);
    }
    put(t, "dlock_acquire_wait_seconds_sum");
    put_labels(t, labels, nlabels, NULL, NULL);
    put(t, " ");
    put_us_as_seconds(t, (int64_t)s->acquire_wait_sum_us);
    put(t, "\n");
    put(t, "dlock_acquire_wait_seconds_count");
    put_labels(t, labels, nlabels, NULL, NULL);
    put_format(t, " %" PRIu64 "\n", cumulative);
}

static void write_exposition(text_out *t, const dlock_stats *s, const dlock_metric_label *labels,
                             size_t nlabels) {
    for (size_t i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++) {
        const metric *m = &metrics[i];
        put_family_head(t, m->name, is_counter(m->kind) ? "counter" : "gauge", m->help);
        put(t, m->name);
        put_labels(t, labels, nlabels, NULL, NULL);
        put(t, " ");
        put_value(t, m, s);
        put(t, "\n");
    }
    put_acquire_failures(t, s, labels, nlabels);
    put_by_kind(t, "dlock_acquire_timeouts_total",
                "Acquires and awaits that ended with DLOCK_ETIMEDOUT, by the kind of object.",
                s->acquire_timeouts_by_kind, labels, nlabels);
    put_by_kind(t, "dlock_acquire_errors_total",
                "Acquires and awaits that ended with another error than DLOCK_ETIMEDOUT or "
                "DLOCK_ECANCELED, by the kind of object.",
                s->acquire_errors_by_kind, labels, nlabels);
    put_acquire_wait(t, s, labels, nlabels);
}

static bool is_name_start(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}

static bool is_name_char(char ch) {
    return is_name_start(ch) || (ch >= '0' && ch <= '9');
}

/* DLOCK_OK, or DLOCK_EINVAL naming the first label that Prometheus would refuse. */
static int check_labels(const dlock_metric_label *labels, size_t nlabels) {
    if (nlabels > 0 && !labels)
        return dlock__fail(DLOCK_EINVAL, "prometheus: labels is NULL with nlabels %zu", nlabels);
    for (size_t i = 0; i < nlabels; i++) {
        const char *name = labels[i].name;
        if (!name || !labels[i].value)
            return dlock__fail(DLOCK_EINVAL, "prometheus: label %zu has a NULL name or value", i);
        bool valid = is_name_start(name[0]);
        for (const char *p = name; valid && *p; p++)
            valid = is_name_char(*p);
        if (!valid)
            return dlock__fail(DLOCK_EINVAL,
                               "prometheus: label name \"%.64s\" is not [a-zA-Z_][a-zA-Z0-9_]*",
                               name);
        if (name[0] == '_' && name[1] == '_')
            return dlock__fail(DLOCK_EINVAL,
                               "prometheus: label name \"%.64s\" starts with __ (reserved)", name);
        if (strcmp(name, "le") == 0 || strcmp(name, "code") == 0 || strcmp(name, "kind") == 0)
            return dlock__fail(DLOCK_EINVAL,
                               "prometheus: label name \"%s\" is dlock's own (the histogram's "
                               "bucket, the failure's code, the object's kind)",
                               name);
        for (size_t j = 0; j < i; j++)
            if (strcmp(labels[j].name, name) == 0)
                return dlock__fail(DLOCK_EINVAL, "prometheus: label name \"%.64s\" given twice",
                                   name);
    }
    return DLOCK_OK;
}

int dlock_client_stats_prometheus(dlock_client *c, const dlock_metric_label *labels, size_t nlabels,
                                  char *buf, size_t size, size_t *len) {
    if (!c || !len || (!buf && size > 0))
        return dlock__fail(DLOCK_EINVAL, "dlock_client_stats_prometheus: NULL client, buf or len");
    int rc = check_labels(labels, nlabels);
    if (rc != DLOCK_OK)
        return rc;
    dlock_stats s;
    dlock_stats_init(&s);
    rc = dlock_client_stats(c, &s);
    if (rc != DLOCK_OK)
        return rc;

    text_out measure = {.buf = NULL};
    write_exposition(&measure, &s, labels, nlabels);
    *len = measure.len;
    if (measure.len >= size) {
        if (size > 0)
            buf[0] = '\0';
        return dlock__fail(DLOCK_ENOSPC,
                           "dlock_client_stats_prometheus: %zu bytes needed (and the NUL), "
                           "the buffer has %zu",
                           measure.len, size);
    }
    text_out out = {.buf = buf, .size = size};
    write_exposition(&out, &s, labels, nlabels);
    buf[out.len] = '\0';
    return DLOCK_OK;
}
