/* SPDX-License-Identifier: MIT */
/* test_stats_prometheus.c — dlock_client_stats_prometheus(): its text passes a strict parser
 * of Prometheus's text exposition format 0.0.4 (a HELP and a TYPE before every sample,
 * counters named _total, a histogram's buckets cumulative up to le="+Inf" = _count, numbers
 * for values, label values escaped) and says what dlock_client_stats() says after some work
 * (a waiter woken, a lease lost, reconnects, a try that timed out, acquires' waits); label
 * values are escaped; a buffer too small gets DLOCK_ENOSPC, the size it needs and an empty
 * string; a bad label name or a NULL argument is DLOCK_EINVAL and writes nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core_call.h"
#include "dlock.h"
#include "dlock_int.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"
#include "stats_helpers.h"

#define BUDGET_S 60
#define WATCHDOG_MS 3000
#define TEXT_SIZE 8192
#define MAX_SAMPLES 128
#define MAX_LABELS 4
#define MAX_FAMILIES 64

/* ---- a strict parser of the exposition format (0.0.4), enough for what dlock writes ---- */

typedef struct sample {
    char name[128];
    char family[128]; /* the name, or a histogram's name for its _bucket, _sum, _count */
    size_t nlabels;
    char label_name[MAX_LABELS][64];
    char label_value[MAX_LABELS][128]; /* unescaped */
    double value;
} sample;

typedef struct family {
    char name[128];
    bool has_help;
    char type[16]; /* "" until its TYPE line */
} family;

typedef struct exposition {
    size_t nsamples, nfamilies;
    sample samples[MAX_SAMPLES];
    family families[MAX_FAMILIES];
} exposition;

static bool is_metric_name_char(char ch, bool first) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || ch == ':' ||
           (!first && ch >= '0' && ch <= '9');
}

/* Reads a name at *p into out (size bytes) and moves *p past it; false if there is none. */
static bool read_name(const char **p, char *out, size_t size, bool metric) {
    size_t n = 0;
    while (is_metric_name_char((*p)[n], n == 0) && (metric || (*p)[n] != ':')) {
        if (n + 1 >= size)
            return false;
        out[n] = (*p)[n];
        n++;
    }
    out[n] = '\0';
    *p += n;
    return n > 0;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The histogram family that name (NAME_bucket, NAME_sum, NAME_count) is a sample of, if
 * one has been typed. */
static family *histogram_of(exposition *e, const char *name) {
    static const char *const suffixes[] = {"_bucket", "_sum", "_count"};
    for (size_t i = 0; i < e->nfamilies; i++) {
        family *f = &e->families[i];
        size_t n = strlen(f->name);
        if (strcmp(f->type, "histogram") != 0 || strncmp(name, f->name, n) != 0)
            continue;
        for (size_t k = 0; k < 3; k++)
            if (strcmp(name + n, suffixes[k]) == 0)
                return f;
    }
    return NULL;
}

static family *family_of(exposition *e, const char *name) {
    for (size_t i = 0; i < e->nfamilies; i++)
        if (strcmp(e->families[i].name, name) == 0)
            return &e->families[i];
    assert_true(e->nfamilies < MAX_FAMILIES);
    family *f = &e->families[e->nfamilies++];
    memset(f, 0, sizeof(*f));
    snprintf(f->name, sizeof(f->name), "%s", name);
    return f;
}

/* A label value between quotes: only \\, \" and \n may follow a backslash; a raw newline or
 * the end of the text before the closing quote fails. */
static void read_label_value(const char **p, char *out, size_t size, const char *line) {
    if (**p != '"')
        fail_msg("a label value without its opening quote: %s", line);
    (*p)++;
    size_t n = 0;
    for (;;) {
        char ch = *(*p)++;
        if (ch == '"')
            break;
        if (ch == '\0' || ch == '\n')
            fail_msg("a label value not closed on its line: %s", line);
        if (ch == '\\') {
            char esc = *(*p)++;
            if (esc == '\\' || esc == '"')
                ch = esc;
            else if (esc == 'n')
                ch = '\n';
            else
                fail_msg("a label value with the escape \\%c: %s", esc, line);
        }
        assert_true(n + 1 < size);
        out[n++] = ch;
    }
    out[n] = '\0';
}

static void parse_sample(exposition *e, const char *line) {
    assert_true(e->nsamples < MAX_SAMPLES);
    sample *s = &e->samples[e->nsamples++];
    memset(s, 0, sizeof(*s));
    const char *p = line;
    if (!read_name(&p, s->name, sizeof(s->name), true))
        fail_msg("a sample line without a metric name: %s", line);
    family *f = histogram_of(e, s->name);
    if (!f)
        f = family_of(e, s->name);
    if (!f->has_help || !f->type[0])
        fail_msg("sample %s without a HELP and a TYPE line before it", s->name);
    snprintf(s->family, sizeof(s->family), "%s", f->name);
    if (strcmp(f->type, "counter") == 0 && !ends_with(s->name, "_total"))
        fail_msg("counter %s does not end in _total", s->name);
    if (strncmp(s->name, "dlock_", 6) != 0)
        fail_msg("metric %s is not named dlock_...", s->name);
    if (*p == '{') {
        p++;
        while (*p != '}') {
            assert_true(s->nlabels < MAX_LABELS);
            if (s->nlabels > 0 && *p++ != ',')
                fail_msg("labels not separated by a comma: %s", line);
            if (!read_name(&p, s->label_name[s->nlabels], sizeof(s->label_name[0]), false))
                fail_msg("a label without a name: %s", line);
            if (*p++ != '=')
                fail_msg("a label name without '=': %s", line);
            read_label_value(&p, s->label_value[s->nlabels], sizeof(s->label_value[0]), line);
            s->nlabels++;
        }
        p++;
    }
    if (*p++ != ' ')
        fail_msg("no single space before the value: %s", line);
    char *end = NULL;
    s->value = strtod(p, &end);
    if (end == p || *end != '\0')
        fail_msg("the value of %s is not a number: %s", s->name, line);
}

/* "# HELP name text" or "# TYPE name counter|gauge", each once per family, before its
 * samples; other comment lines are allowed by the format. */
static void parse_comment(exposition *e, const char *line) {
    const char *p = line + 2;
    bool help = strncmp(p, "HELP ", 5) == 0, type = strncmp(p, "TYPE ", 5) == 0;
    if (!help && !type)
        return;
    p += 5;
    char name[128];
    if (!read_name(&p, name, sizeof(name), true) || *p++ != ' ')
        fail_msg("a HELP or TYPE line without a metric name: %s", line);
    family *f = family_of(e, name);
    for (size_t i = 0; i < e->nsamples; i++)
        if (strcmp(e->samples[i].family, name) == 0)
            fail_msg("the HELP or TYPE of %s after its samples", name);
    if (help) {
        if (f->has_help)
            fail_msg("two HELP lines for %s", name);
        for (const char *q = p; *q; q++)
            if (*q == '\\' && q[1] != '\\' && q[1] != 'n')
                fail_msg("HELP of %s with a bad escape: %s", name, line);
        f->has_help = true;
        return;
    }
    if (f->type[0])
        fail_msg("two TYPE lines for %s", name);
    if (strcmp(p, "counter") != 0 && strcmp(p, "gauge") != 0 && strcmp(p, "histogram") != 0)
        fail_msg("TYPE of %s is \"%s\", expected counter, gauge or histogram", name, p);
    snprintf(f->type, sizeof(f->type), "%s", p);
}

static void check_histograms(const exposition *e);

/* Parses text (which must end with a newline) into e, failing the test at the first line the
 * format does not allow. */
static void parse_exposition(const char *text, exposition *e) {
    memset(e, 0, sizeof(*e));
    size_t len = strlen(text);
    assert_true(len > 0);
    if (text[len - 1] != '\n')
        fail_msg("the text does not end with a newline");
    const char *line_start = text;
    while (*line_start) {
        const char *nl = strchr(line_start, '\n');
        char line[1024];
        size_t n = (size_t)(nl - line_start);
        assert_true(n < sizeof(line));
        memcpy(line, line_start, n);
        line[n] = '\0';
        if (n == 0)
            fail_msg("an empty line in the exposition");
        if (line[0] == '#')
            parse_comment(e, line);
        else
            parse_sample(e, line);
        line_start = nl + 1;
    }
    check_histograms(e);
}

static const char *label_of(const sample *s, const char *name) {
    for (size_t i = 0; i < s->nlabels; i++)
        if (strcmp(s->label_name[i], name) == 0)
            return s->label_value[i];
    return NULL;
}

/* A histogram's samples: every _bucket has an le, the bounds grow up to "+Inf", the counts
 * never fall, and _count equals the +Inf bucket; _sum is there. (dlock writes one label
 * set, so one series per histogram.) */
static void check_histograms(const exposition *e) {
    for (size_t f = 0; f < e->nfamilies; f++) {
        const family *fam = &e->families[f];
        if (strcmp(fam->type, "histogram") != 0)
            continue;
        char bucket[160], sum[160], count[160];
        snprintf(bucket, sizeof(bucket), "%s_bucket", fam->name);
        snprintf(sum, sizeof(sum), "%s_sum", fam->name);
        snprintf(count, sizeof(count), "%s_count", fam->name);
        double last_le = -1, last_count = 0, count_value = -1;
        bool inf_seen = false, sum_seen = false;
        for (size_t i = 0; i < e->nsamples; i++) {
            const sample *s = &e->samples[i];
            if (strcmp(s->name, bucket) == 0) {
                const char *le = label_of(s, "le");
                if (!le || inf_seen)
                    fail_msg("%s: a bucket without le, or after le=\"+Inf\"", fam->name);
                char *end = NULL;
                double bound =
                    strcmp(le, "+Inf") == 0 ? (inf_seen = true, 1e300) : strtod(le, &end);
                if (!inf_seen && (end == le || *end != '\0'))
                    fail_msg("%s: le=\"%s\" is not a number", fam->name, le);
                if (bound <= last_le || s->value < last_count)
                    fail_msg("%s: bucket le=\"%s\" out of order or not cumulative", fam->name, le);
                last_le = bound;
                last_count = s->value;
            } else if (strcmp(s->name, sum) == 0) {
                sum_seen = true;
            } else if (strcmp(s->name, count) == 0) {
                count_value = s->value;
            }
        }
        if (!inf_seen || !sum_seen || count_value != last_count)
            fail_msg("%s: no +Inf bucket, no _sum, or _count %g != the +Inf bucket %g", fam->name,
                     count_value, last_count);
    }
}

/* The sample named name whose label label_name is label_value (label_name NULL: any). */
static const sample *sample_with(const exposition *e, const char *name, const char *label_name,
                                 const char *label_value) {
    for (size_t i = 0; i < e->nsamples; i++) {
        const sample *s = &e->samples[i];
        const char *v = label_name ? label_of(s, label_name) : NULL;
        if (strcmp(s->name, name) == 0 && (!label_name || (v && strcmp(v, label_value) == 0)))
            return s;
    }
    fail_msg("no sample %s{%s=\"%s\"}", name, label_name ? label_name : "",
             label_value ? label_value : "");
    return NULL;
}

static void assert_value(const sample *s, double want) {
    if (s->value != want)
        fail_msg("%s = %.17g, dlock_client_stats() says %.17g", s->name, s->value, want);
}

static void assert_sample(const exposition *e, const char *name, double want) {
    assert_value(sample_with(e, name, NULL, NULL), want);
}

/* ---- the tests ---------------------------------------------------------------------------- */

typedef struct waiter {
    dlock_lock *l;
    blocking_call call;
} waiter;

static int acquire_and_keep(void *arg) {
    waiter *w = arg;
    return dlock_lock_acquire(w->l, DLOCK_WATCHDOG);
}

static void assert_exposition_says(const exposition *e, const dlock_stats *s) {
    assert_sample(e, "dlock_calls_in_flight", (double)s->calls_in_flight);
    assert_sample(e, "dlock_waits", (double)s->waits);
    assert_sample(e, "dlock_leases_held", (double)s->leases_held);
    assert_sample(e, "dlock_subscriptions", (double)s->subscriptions);
    assert_sample(e, "dlock_renewal_lag_max_seconds", (double)s->renewal_lag_max_ms / 1000.0);
    assert_sample(e, "dlock_renewals_sent_total", (double)s->renewals_sent);
    assert_sample(e, "dlock_renewals_late_total", (double)s->renewals_late);
    assert_sample(e, "dlock_leases_lost_total", (double)s->leases_lost);
    assert_sample(e, "dlock_reconnects_total", (double)s->reconnects);
    assert_sample(e, "dlock_messages_total", (double)s->messages);
    assert_sample(e, "dlock_wakes_total", (double)s->wakes);
    assert_sample(e, "dlock_wakes_spared_total", (double)s->wakes_spared);
    assert_sample(e, "dlock_reply_spins_total", (double)s->reply_spins);
    assert_sample(e, "dlock_reply_spin_hits_total", (double)s->reply_spin_hits);
    assert_sample(e, "dlock_reply_spin_seconds_total", (double)s->reply_spin_us / 1e6);
    size_t failure_samples = 0;
    for (int slot = 1; slot < DLOCK_STATS_CODES; slot++) {
        if (strcmp(dlock_err_name(-slot), "DLOCK_UNKNOWN") == 0)
            continue;
        failure_samples++;
        assert_value(sample_with(e, "dlock_acquire_failures_total", "code", dlock_err_name(-slot)),
                     (double)s->acquire_failures[slot]);
    }
    assert_int_equal(s->acquire_failures[0], 0); /* no code="other" sample then */
    static const char *const kinds[] = {DLOCK_STATS_KIND_NAMES};
    size_t nkinds = sizeof(kinds) / sizeof(kinds[0]);
    for (size_t k = 1; k < nkinds; k++) {
        assert_value(sample_with(e, "dlock_acquire_timeouts_total", "kind", kinds[k]),
                     (double)s->acquire_timeouts_by_kind[k]);
        assert_value(sample_with(e, "dlock_acquire_errors_total", "kind", kinds[k]),
                     (double)s->acquire_errors_by_kind[k]);
    }
    assert_int_equal(s->acquire_timeouts_by_kind[0] + s->acquire_errors_by_kind[0], 0);
    static const double bounds_us[] = {DLOCK_STATS_WAIT_BOUNDS_US};
    uint64_t cumulative = 0;
    for (size_t i = 0; i < DLOCK_STATS_WAIT_BUCKETS; i++) {
        cumulative += s->acquire_wait_buckets[i];
        char le[32];
        if (i + 1 < DLOCK_STATS_WAIT_BUCKETS)
            snprintf(le, sizeof(le), "%g", bounds_us[i] / 1e6);
        else
            snprintf(le, sizeof(le), "+Inf");
        assert_value(sample_with(e, "dlock_acquire_wait_seconds_bucket", "le", le),
                     (double)cumulative);
    }
    assert_value(sample_with(e, "dlock_acquire_wait_seconds_count", NULL, NULL),
                 (double)cumulative);
    assert_value(sample_with(e, "dlock_acquire_wait_seconds_sum", NULL, NULL),
                 (double)s->acquire_wait_sum_us / 1e6);
    /* every sample is one of those checked above */
    assert_int_equal(e->nsamples,
                     15 + failure_samples + 2 * (nkinds - 1) + DLOCK_STATS_WAIT_BUCKETS + 2);
    assert_int_equal(e->nfamilies, 19);
}

/* A lease renewed and then lost to a force release, a waiter woken by a message, both
 * connections killed: the text says what dlock_client_stats() says, once the client is idle
 * (nothing held, so no counter moves between the two reads). */
static void test_exposition_parses_and_says_what_client_stats_says(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = WATCHDOG_MS});
    dlock_client *other = connect_client(f);
    dlock_lock *l = NULL, *forcer = NULL;
    ASSERT_OK(dlock_lock_new(c, "prom", &l));
    ASSERT_OK(dlock_lock_new(other, "prom", &forcer));

    ASSERT_OK(dlock_lock_acquire(l, DLOCK_WATCHDOG));
    waiter w = {.l = l};
    blocking_call_start_asleep(&w.call, acquire_and_keep, &w, f,
                               (asleep_sign){"redisson_lock__channel:{prom}", 1, 2, NULL});
    POLL_STAT(c, renewals_sent, v >= 1);
    ASSERT_OK(dlock_lock_release(l));
    ASSERT_OK(blocking_call_join(&w.call)); /* the waiter holds it now, under the watchdog */
    bool was_locked = false;
    ASSERT_OK(dlock_lock_force_release(forcer, &was_locked));
    assert_true(was_locked);
    POLL_STAT(c, leases_lost, v == 1);
    /* a try on c against a lock another client holds: DLOCK_ETIMEDOUT, counted */
    dlock_lock *held_elsewhere = NULL, *tried = NULL;
    ASSERT_OK(dlock_lock_new(other, "prom.held", &held_elsewhere));
    ASSERT_OK(dlock_lock_new(c, "prom.held", &tried));
    ASSERT_OK(dlock_lock_acquire(held_elsewhere, 60000));
    ASSERT_RC(dlock_lock_try_acquire(tried, 0, 60000), DLOCK_ETIMEDOUT);
    ASSERT_OK(dlock_lock_release(held_elsewhere));
    assert_true(redis_fixture_client_kill_type(f, "normal") >= 2);
    POLL_STAT(c, reconnects, v == 2);
    ASSERT_OK(dlock_client_ping(c));
    POLL_STAT(c, subscriptions, v == 0);

    dlock_stats before = stats_of(c);
    assert_true(before.messages >= 1);
    assert_true(before.wakes >= 1);
    assert_int_equal(before.leases_lost, 1);
    assert_int_equal(before.acquire_failures[-DLOCK_ETIMEDOUT], 1);
    assert_int_equal(before.acquire_timeouts_by_kind[1], 1); /* kind "lock" */
    uint64_t obtained = 0;
    for (size_t i = 0; i < DLOCK_STATS_WAIT_BUCKETS; i++)
        obtained += before.acquire_wait_buckets[i];
    assert_int_equal(obtained, 2); /* the holder's acquire and the waiter's */
    assert_true(before.acquire_wait_sum_us > 0);
    assert_int_equal(before.leases_held, 0);
    char text[TEXT_SIZE];
    size_t len = 0;
    dlock_metric_label service = {"service", "checkout"};
    ASSERT_OK(dlock_client_stats_prometheus(c, &service, 1, text, sizeof(text), &len));
    dlock_stats after = stats_of(c);
    assert_memory_equal(&before, &after, sizeof(before));
    assert_int_equal(len, strlen(text));

    exposition *e = test_calloc(1, sizeof(*e));
    parse_exposition(text, e);
    assert_exposition_says(e, &after);
    for (size_t i = 0; i < e->nsamples; i++) {
        assert_int_equal(e->samples[i].nlabels, 1 + (label_of(&e->samples[i], "code") != NULL) +
                                                    (label_of(&e->samples[i], "le") != NULL) +
                                                    (label_of(&e->samples[i], "kind") != NULL));
        assert_string_equal(e->samples[i].label_name[0], "service");
        assert_string_equal(e->samples[i].label_value[0], "checkout");
    }
    /* docs and header: 8192 bytes hold it with a short label, even when every value has
     * grown to 20 digits */
    assert_true(len + e->nsamples * 20 < 8192);

    /* without labels: the same samples, no braces */
    ASSERT_OK(dlock_client_stats_prometheus(c, NULL, 0, text, sizeof(text), &len));
    assert_null(strstr(text, "service"));
    parse_exposition(text, e);
    assert_exposition_says(e, &after);

    test_free(e);
    dlock_lock_free(tried);
    dlock_lock_free(held_elsewhere);
    dlock_lock_free(forcer);
    dlock_lock_free(l);
    dlock_client_free(other);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_label_values_are_escaped(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    const char *tricky = "a\"b\\c\nd}e,f=g";
    dlock_metric_label labels[] = {{"service", tricky}, {"_zone9", ""}};
    char text[TEXT_SIZE];
    size_t len = 0;
    ASSERT_OK(dlock_client_stats_prometheus(c, labels, 2, text, sizeof(text), &len));
    assert_non_null(strstr(text, "dlock_waits{service=\"a\\\"b\\\\c\\nd}e,f=g\",_zone9=\"\"} 0\n"));

    exposition *e = test_calloc(1, sizeof(*e));
    parse_exposition(text, e);
    assert_true(e->nsamples > 12);
    for (size_t i = 0; i < e->nsamples; i++) {
        assert_true(e->samples[i].nlabels >= 2); /* and code= or le= */
        assert_string_equal(e->samples[i].label_value[0], tricky);
        assert_string_equal(e->samples[i].label_name[1], "_zone9");
        assert_string_equal(e->samples[i].label_value[1], "");
    }
    test_free(e);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* Too small by one byte (the NUL): DLOCK_ENOSPC, the length needed, buf[0] = '\0' and not
 * another byte written; NULL with size 0 measures. */
static void test_a_buffer_too_small_gets_enospc_the_size_and_an_empty_string(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    size_t need = 0;
    ASSERT_RC(dlock_client_stats_prometheus(c, NULL, 0, NULL, 0, &need), DLOCK_ENOSPC);
    assert_true(need > 0 && need < TEXT_SIZE);
    assert_string_equal(dlock_err_name(DLOCK_ENOSPC), "DLOCK_ENOSPC");

    char text[TEXT_SIZE], untouched[TEXT_SIZE];
    memset(text, 'x', sizeof(text));
    memset(untouched, 'x', sizeof(untouched));
    size_t len = 0;
    ASSERT_RC(dlock_client_stats_prometheus(c, NULL, 0, text, need, &len), DLOCK_ENOSPC);
    assert_int_equal(len, need);
    assert_int_equal(text[0], '\0');
    assert_memory_equal(text + 1, untouched + 1, sizeof(text) - 1);
    assert_non_null(strstr(dlock_last_error(), "needed"));

    ASSERT_RC(dlock_client_stats_prometheus(c, NULL, 0, text, 1, &len), DLOCK_ENOSPC);
    assert_int_equal(text[0], '\0');

    /* need + 1 fits exactly, and the byte after the NUL stays as it was */
    ASSERT_OK(dlock_client_stats_prometheus(c, NULL, 0, text, need + 1, &len));
    assert_int_equal(len, need);
    assert_int_equal(strlen(text), need);
    assert_int_equal(text[need + 1], 'x');
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* DLOCK_EINVAL, a reason, and neither buf nor *len touched. */
static void assert_refused(dlock_client *c, const dlock_metric_label *labels, size_t nlabels) {
    char text[64];
    memset(text, 'x', sizeof(text));
    size_t len = 12345;
    ASSERT_EINVAL(dlock_client_stats_prometheus(c, labels, nlabels, text, sizeof(text), &len));
    assert_int_equal(len, 12345);
    for (size_t i = 0; i < sizeof(text); i++)
        assert_int_equal(text[i], 'x');
}

static void test_bad_label_names_are_einval_and_write_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    const char *bad_names[] = {"",    "1st", "a-b",  "a b", "__name__", "__", "caf\xc3\xa9",
                               "a:b", "le",  "code", "kind"}; /* the last three: dlock's own */
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
        dlock_metric_label labels[] = {{"service", "ok"}, {bad_names[i], "v"}};
        assert_refused(c, labels, 2);
    }
    dlock_metric_label twice[] = {{"service", "a"}, {"service", "b"}};
    assert_refused(c, twice, 2);
    dlock_metric_label null_name[] = {{NULL, "v"}};
    assert_refused(c, null_name, 1);
    dlock_metric_label null_value[] = {{"service", NULL}};
    assert_refused(c, null_value, 1);
    assert_refused(c, NULL, 1);

    /* the names on the edge of the rule are taken */
    dlock_metric_label good[] = {{"_", "1"}, {"_a", "2"}, {"A9_", "3"}};
    char text[TEXT_SIZE];
    size_t len = 0;
    ASSERT_OK(dlock_client_stats_prometheus(c, good, 3, text, sizeof(text), &len));
    assert_non_null(strstr(text, "dlock_waits{_=\"1\",_a=\"2\",A9_=\"3\"} 0\n"));
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_null_arguments_are_einval(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    char text[TEXT_SIZE];
    size_t len = 0;
    ASSERT_EINVAL(dlock_client_stats_prometheus(NULL, NULL, 0, text, sizeof(text), &len));
    ASSERT_EINVAL(dlock_client_stats_prometheus(c, NULL, 0, text, sizeof(text), NULL));
    ASSERT_EINVAL(dlock_client_stats_prometheus(c, NULL, 0, NULL, sizeof(text), &len));
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exposition_parses_and_says_what_client_stats_says),
        cmocka_unit_test(test_label_values_are_escaped),
        cmocka_unit_test(test_a_buffer_too_small_gets_enospc_the_size_and_an_empty_string),
        cmocka_unit_test(test_bad_label_names_are_einval_and_write_nothing),
        cmocka_unit_test(test_null_arguments_are_einval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
