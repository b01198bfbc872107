/* SPDX-License-Identifier: MIT */
/* soak_series.c - the soak's samples: what is measured, the CSV, the trend test, the table.
 *
 * A row every soak_cfg.sample_ms holds the process's RSS, heap in use (glibc's mallinfo2),
 * descriptors and threads, the
 * server's key count, pub/sub channels and patterns and used_memory, and every field of
 * dlock_client_stats() of the three clients. Levels (resources and gauges) are judged;
 * counters (renewals, reconnects, messages, ...) only grow and are shown, not judged.
 *
 * The trend test. After the warm-up, the judged rows are cut into thirds, and a level
 * trends up when the median of the last third exceeds the median of the middle third by
 * more than its tolerance (an absolute part, for small integer gauges, plus a relative
 * part, for memory). Why medians of thirds rather than a least-squares slope: faults make
 * the series spiky (a killed connection's reconnect, a second of DEBUG SLEEP piling up
 * calls in flight), and a slope is pulled by those outliers and by when in the run they
 * fall, while a median ignores them; comparing the middle with the last third (not the
 * first) keeps the allocator's and the server's slow settling after the warm-up out of
 * it. A leak of one object per second moves the median by a third of the run's length in
 * seconds, far beyond any tolerance below, while a one-off step does so only when it
 * lands in the last third, and then it is a level that did not come back. The gauges that
 * have an idle value (calls in flight, waits, leases held, subscriptions: all 0) must also
 * be at it in the idle row, taken after the work ended and every call returned.
 */
#include <dirent.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "soak_series.h"

enum series_kind { LEVEL, COUNTER };

typedef struct series_def {
    char name[40];
    enum series_kind kind;
    double abs_tol;
    double rel_tol;
    bool idle_zero; /* a gauge whose idle value is 0 */
} series_def;

#define MAX_SERIES 96
#define STATS_FIELDS 12

static series_def defs[MAX_SERIES];
static int series_count;
static double *rows;   /* [max_rows][series_count] */
static int64_t *row_t; /* ms */
static bool *row_idle;
static int max_rows;
static int row_count;
static FILE *csv;
static char failing_names[1024]; /* "c1.calls_in_flight, fds" */

static int add(const char *name, enum series_kind kind, double abs_tol, double rel_tol,
               bool idle_zero) {
    if (series_count == MAX_SERIES) {
        fprintf(stderr, "soak: more than %d series\n", MAX_SERIES);
        abort();
    }
    series_def *d = &defs[series_count];
    snprintf(d->name, sizeof d->name, "%s", name);
    d->kind = kind;
    d->abs_tol = abs_tol;
    d->rel_tol = rel_tol;
    d->idle_zero = idle_zero;
    return series_count++;
}

static const char *const client_names[SOAK_CLIENTS] = {"c1", "c2", "async", "sentinel", "cluster"};
static const char *const stats_names[STATS_FIELDS] = {
    "calls_in_flight", "waits",         "leases_held", "subscriptions",
    "renewals_sent",   "renewals_late", "lag_max_ms",  "leases_lost",
    "reconnects",      "messages",      "wakes",       "wakes_spared"};

int soak_series_init(void) {
    /* How many calls a client may have in flight at once: each worker or agent one call,
     * a composite's up to three members, and the watchdog's renewals. A gauge may swing
     * by that much from one sample to the next without anything leaking. */
    double concurrency = 4.0 * (soak_cfg.threads + 1 + soak_cfg.agents) + 8;
    add("rss_kb", LEVEL, 2048, 0.05, false);
    /* What malloc has handed out and not got back: growth here is memory the process holds,
     * where RSS also moves with the allocator's fragmentation and its per-thread arenas. */
    add("heap_kb", LEVEL, 512, 0.02, false);
    add("fds", LEVEL, 2, 0, false);
    add("threads", LEVEL, 1, 0, false);
    add("server_keys", LEVEL, 32, 0.10, false);
    add("server_channels", LEVEL, 16, 0, false);
    add("server_numpat", LEVEL, 1, 0, false);
    add("server_used_memory_kb", LEVEL, 512, 0.10, false);
    for (int c = 0; c < SOAK_CLIENTS; c++) {
        for (int f = 0; f < STATS_FIELDS; f++) {
            char name[40];
            snprintf(name, sizeof name, "%s.%s", client_names[c], stats_names[f]);
            if (f < 3)
                add(name, LEVEL, concurrency, 0, true);
            else if (f == 3) /* two channels per object with waiters, at most */
                add(name, LEVEL, 2.0 * soak_cfg.names, 0, true);
            else
                add(name, COUNTER, 0, 0, false);
        }
    }
    add("ops", COUNTER, 0, 0, false);
    add("overlaps", COUNTER, 0, 0, false);
    add("lost_events", COUNTER, 0, 0, false);

    max_rows = (int)(soak_cfg.run_ms / soak_cfg.sample_ms) + 16;
    rows = calloc((size_t)max_rows * (size_t)series_count, sizeof *rows);
    row_t = calloc((size_t)max_rows, sizeof *row_t);
    row_idle = calloc((size_t)max_rows, sizeof *row_idle);
    if (!rows || !row_t || !row_idle)
        return -1;
    /* Touch the table now, so that filling it never shows as RSS growth. */
    memset(rows, 0, (size_t)max_rows * (size_t)series_count * sizeof *rows);
    memset(row_t, 0, (size_t)max_rows * sizeof *row_t);
    memset(row_idle, 0, (size_t)max_rows * sizeof *row_idle);

    char path[512];
    snprintf(path, sizeof path, "%s/samples.csv", soak_cfg.out_dir);
    csv = fopen(path, "w");
    if (!csv) {
        perror(path);
        return -1;
    }
    fprintf(csv, "t_s,phase");
    for (int i = 0; i < series_count; i++)
        fprintf(csv, ",%s", defs[i].name);
    fprintf(csv, "\n");
    fflush(csv);
    return 0;
}

long soak_count_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    long n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

static long status_field(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long v = -1;
    size_t len = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, len) && line[len] == ':')
            v = strtol(line + len + 1, NULL, 10);
    fclose(f);
    return v;
}

long soak_count_threads(void) {
    return status_field("Threads");
}

static long server_channels(redis_fixture *redis) {
    redisReply *r = redis_fixture_cmd(redis, "PUBSUB CHANNELS");
    long n = r && r->type == REDIS_REPLY_ARRAY ? (long)r->elements : -1;
    if (r)
        freeReplyObject(r);
    return n;
}

static void read_stats(dlock_client *c, double *out) {
    dlock_stats s;
    dlock_stats_init(&s);
    if (!c || dlock_client_stats(c, &s) != DLOCK_OK)
        return; /* out keeps the previous row's values */
    double v[STATS_FIELDS] = {
        (double)s.calls_in_flight,    (double)s.waits,         (double)s.leases_held,
        (double)s.subscriptions,      (double)s.renewals_sent, (double)s.renewals_late,
        (double)s.renewal_lag_max_ms, (double)s.leases_lost,   (double)s.reconnects,
        (double)s.messages,           (double)s.wakes,         (double)s.wakes_spared};
    memcpy(out, v, sizeof v);
}

void soak_series_sample(int64_t t_ms, dlock_client *const clients[SOAK_CLIENTS],
                        redis_fixture *redis, bool idle) {
    if (row_count >= max_rows)
        return;
    double *row = rows + (size_t)row_count * (size_t)series_count;
    if (row_count > 0)
        memcpy(row, row - series_count, (size_t)series_count * sizeof *row);
    int i = 0;
    row[i++] = (double)status_field("VmRSS");
    row[i++] = (double)mallinfo2().uordblks / 1024.0;
    row[i++] = (double)soak_count_fds();
    row[i++] = (double)soak_count_threads();
    row[i++] = (double)redis_fixture_int(redis, "DBSIZE");
    row[i++] = (double)server_channels(redis);
    row[i++] = (double)redis_fixture_int(redis, "PUBSUB NUMPAT");
    row[i++] = (double)redis_fixture_info_int(redis, "memory", "used_memory") / 1024.0;
    for (int c = 0; c < SOAK_CLIENTS; c++, i += STATS_FIELDS)
        read_stats(clients[c], &row[i]);
    row[i++] = (double)soak_ops_total();
    row[i++] = (double)soak_overlaps();
    row[i++] = (double)soak_lost_total();
    row_t[row_count] = t_ms;
    row_idle[row_count] = idle;
    row_count++;

    fprintf(csv, "%.1f,%s", (double)t_ms / 1000.0, idle ? "idle" : "work");
    for (int k = 0; k < series_count; k++)
        fprintf(csv, ",%.0f", row[k]);
    fprintf(csv, "\n");
    fflush(csv);
}

bool soak_series_gauges_idle(dlock_client *const clients[SOAK_CLIENTS]) {
    for (int c = 0; c < SOAK_CLIENTS; c++) {
        dlock_stats s;
        dlock_stats_init(&s);
        if (!clients[c] || dlock_client_stats(clients[c], &s) != DLOCK_OK)
            continue;
        if (s.calls_in_flight != 0 || s.waits != 0 || s.leases_held != 0 || s.subscriptions != 0)
            return false;
    }
    return true;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of column k over rows [from, to). */
static double median(int k, int from, int to, double *scratch) {
    int n = to - from;
    for (int r = 0; r < n; r++)
        scratch[r] = rows[(size_t)(from + r) * (size_t)series_count + (size_t)k];
    qsort(scratch, (size_t)n, sizeof *scratch, cmp_double);
    return n % 2 ? scratch[n / 2] : (scratch[n / 2 - 1] + scratch[n / 2]) / 2.0;
}

int soak_series_judge(void) {
    int first = 0, end = 0, idle_row = -1;
    for (int r = 0; r < row_count; r++) {
        if (row_idle[r]) {
            idle_row = r;
            continue;
        }
        if (row_t[r] < soak_cfg.warmup_ms)
            first = r + 1;
        end = r + 1;
    }
    int judged = end - first;
    bool can_judge = judged >= 6;
    double *scratch = calloc((size_t)(row_count + 1), sizeof *scratch);
    int failing = 0;
    printf("\n%-30s %12s %12s %12s %12s %12s  %s\n", "series", "after warmup", "mid third",
           "last third", "max", "idle", "verdict");
    for (int k = 0; k < series_count; k++) {
        const series_def *d = &defs[k];
        double base = end > first ? rows[(size_t)first * (size_t)series_count + (size_t)k] : NAN;
        double maxv = -INFINITY;
        for (int r = first; r < end; r++)
            maxv = fmax(maxv, rows[(size_t)r * (size_t)series_count + (size_t)k]);
        double idle =
            idle_row >= 0 ? rows[(size_t)idle_row * (size_t)series_count + (size_t)k] : NAN;
        double mid = NAN, last = NAN;
        char verdict[96] = "";
        if (can_judge) {
            int third = judged / 3;
            mid = median(k, first + third, first + 2 * third, scratch);
            last = median(k, end - third, end, scratch);
        }
        bool fails = false;
        if (d->kind == COUNTER) {
            snprintf(verdict, sizeof verdict, "counter");
        } else if (!can_judge) {
            snprintf(verdict, sizeof verdict, "not judged (%d rows after warm-up)", judged);
        } else {
            double tol = d->abs_tol + d->rel_tol * fabs(mid);
            fails = last > mid + tol;
            snprintf(verdict, sizeof verdict, fails ? "FAIL: trends up (+%.0f > %.0f)" : "ok",
                     last - mid, tol);
        }
        if (d->idle_zero && idle_row >= 0 && idle != 0) {
            size_t used = fails ? strlen(verdict) : 0;
            snprintf(verdict + used, sizeof verdict - used, "%s%.0f at idle, must be 0",
                     fails ? "; " : "FAIL: ", idle);
            fails = true;
        }
        if (fails) {
            size_t used = strlen(failing_names);
            if (used + sizeof d->name + 2 < sizeof failing_names)
                snprintf(failing_names + used, sizeof failing_names - used, "%s%.39s",
                         failing ? ", " : "", d->name);
            failing++;
        }
        printf("%-30s %12.0f %12.0f %12.0f %12.0f %12.0f  %s\n", d->name, base, mid, last, maxv,
               idle, verdict);
    }
    free(scratch);
    return failing;
}

const char *soak_series_failing(void) {
    return failing_names;
}

void soak_series_close(void) {
    if (csv)
        fclose(csv);
    csv = NULL;
    free(rows);
    free(row_t);
    free(row_idle);
    rows = NULL;
    row_t = NULL;
    row_idle = NULL;
}
