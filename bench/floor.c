/* SPDX-License-Identifier: MIT */
/* floor.c — the physical floor a lock is measured against, with plain synchronous hiredis
 * and no dlock at all:
 *
 *   floor_ping     one PING round trip, one at a time on one connection
 *   floor_publish  PUBLISH -> message delivery: a subscriber connection in its own thread
 *                  receives the publisher's CLOCK_MONOTONIC timestamp and takes the
 *                  difference on arrival; one message in flight at a time
 *
 * An acquire + release pair costs at least two round trips; a hand-off at least one
 * release message delivery plus the waiter's acquire round trip.
 *
 * The floor drifts with the machine (on a VM, waking the other CPU costs anywhere from
 * 30 to 60 us), so besides the floor_* workloads, each dlock workload measures a short
 * floor of its own just before it runs (bench_floor_adjacent) and takes its ratios from
 * that one. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench.h"

#define FLOOR_WARMUP 200

/* One measurement: the samples and what they cost. */
typedef struct floor_run {
    bench_samples latency;
    bench_counters before, after;
    long long errors;
} floor_run;

/* ---- PING ------------------------------------------------------------------------------ */

static void run_pings(const char *url, int n, floor_run *run) {
    redisContext *rc = bench_redis_connect(url, NULL);
    if (!rc) {
        run->errors++;
        return;
    }
    for (int i = 0; i < FLOOR_WARMUP + n; i++) {
        if (i == FLOOR_WARMUP && bench_counters_read(rc, RUSAGE_SELF, &run->before) != 0)
            run->errors++;
        int64_t t0 = bench_now_ns();
        redisReply *r = redisCommand(rc, "PING");
        int64_t t1 = bench_now_ns();
        if (!r || r->type != REDIS_REPLY_STATUS || strcmp(r->str, "PONG") != 0) {
            run->errors++;
            if (!r)
                break; /* the connection is gone */
        } else if (i >= FLOOR_WARMUP && bench_samples_push(&run->latency, t1 - t0) != 0) {
            run->errors++;
        }
        if (r)
            freeReplyObject(r);
    }
    if (bench_counters_read(rc, RUSAGE_SELF, &run->after) != 0)
        run->errors++;
    redisFree(rc);
    bench_samples_sort(&run->latency);
}

/* ---- PUBLISH -> message ------------------------------------------------------------------ */

typedef struct subscriber {
    redisContext *rc;
    bench_samples delay;
    sem_t delivered;
    long long errors;
} subscriber;

static void *subscriber_main(void *arg) {
    subscriber *s = arg;
    for (;;) {
        void *reply = NULL;
        if (redisGetReply(s->rc, &reply) != REDIS_OK || !reply) {
            s->errors++;
            break;
        }
        int64_t now = bench_now_ns();
        redisReply *r = reply;
        bool stop = false;
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
            r->element[2]->type == REDIS_REPLY_STRING &&
            strcmp(r->element[0]->str, "message") == 0) {
            const char *payload = r->element[2]->str;
            stop = strcmp(payload, "stop") == 0;
            if (!stop && bench_samples_push(&s->delay, now - atoll(payload)) != 0)
                s->errors++;
        } else {
            s->errors++;
        }
        freeReplyObject(r);
        if (stop)
            break;
        sem_post(&s->delivered);
    }
    sem_post(&s->delivered); /* the publisher never waits for a subscriber that is gone */
    return NULL;
}

static int wait_delivery(subscriber *s) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 2;
    while (sem_timedwait(&s->delivered, &deadline) != 0) {
        if (errno != EINTR)
            return -1;
    }
    return 0;
}

static void run_publishes(const bench_config *cfg, int n, floor_run *run) {
    char channel[96];
    snprintf(channel, sizeof(channel), "dlock-bench:%s:floor", cfg->run_tag);
    subscriber sub = {0};
    sem_init(&sub.delivered, 0, 0);
    redisContext *pub = bench_redis_connect(cfg->url, NULL);
    sub.rc = bench_redis_connect(cfg->url, NULL);
    pthread_t thread;
    bool started = false;
    if (pub && sub.rc) {
        /* redisCommand reads the confirmation: the subscription is in place */
        redisReply *r = redisCommand(sub.rc, "SUBSCRIBE %s", channel);
        if (r && r->type == REDIS_REPLY_ARRAY)
            started = pthread_create(&thread, NULL, subscriber_main, &sub) == 0;
        if (r)
            freeReplyObject(r);
    }
    if (!started)
        run->errors++;
    for (int i = 0; started && i < FLOOR_WARMUP + n; i++) {
        if (i == FLOOR_WARMUP && bench_counters_read(pub, RUSAGE_SELF, &run->before) != 0)
            run->errors++;
        char stamp[32];
        snprintf(stamp, sizeof(stamp), "%lld", (long long)bench_now_ns());
        redisReply *r = redisCommand(pub, "PUBLISH %s %s", channel, stamp);
        bool sent = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
        if (r)
            freeReplyObject(r);
        if (!sent || wait_delivery(&sub) != 0) {
            run->errors++;
            break;
        }
    }
    if (started) {
        if (bench_counters_read(pub, RUSAGE_SELF, &run->after) != 0)
            run->errors++;
        redisReply *r = redisCommand(pub, "PUBLISH %s stop", channel);
        if (r)
            freeReplyObject(r);
        else
            run->errors++;
        pthread_join(thread, NULL);
        run->errors += sub.errors;
    }
    if (sub.delay.n > FLOOR_WARMUP) { /* drop the warm-up messages */
        bench_samples tail = {sub.delay.v + FLOOR_WARMUP, sub.delay.n - FLOOR_WARMUP, 0};
        if (bench_samples_append(&run->latency, &tail) != 0)
            run->errors++;
    }
    bench_samples_sort(&run->latency);
    bench_samples_free(&sub.delay);
    if (pub)
        redisFree(pub);
    if (sub.rc)
        redisFree(sub.rc);
    sem_destroy(&sub.delivered);
}

/* ---- the workloads ----------------------------------------------------------------------- */

static long long report(const bench_config *cfg, const char *workload, const char *api,
                        const char *figure, const char *unit, floor_run *run) {
    bench_json_begin(cfg, workload, "hiredis");
    bench_json_open("params");
    bench_json_int("n", cfg->floor_n);
    bench_json_str("api", api);
    bench_json_close();
    bench_json_open("figures");
    bench_json_latency(figure, &run->latency);
    bench_json_counters(&run->before, &run->after, (double)run->latency.n, unit, false);
    bench_json_close();
    bench_json_end(run->errors);
    bench_samples_free(&run->latency);
    return run->errors;
}

long long bench_floor_ping(const bench_config *cfg) {
    floor_run run = {0};
    run_pings(cfg->url, cfg->floor_n, &run);
    return report(cfg, "floor_ping", "hiredis sync redisCommand", "rtt", "ping", &run);
}

long long bench_floor_publish(const bench_config *cfg) {
    floor_run run = {0};
    run_publishes(cfg, cfg->floor_n, &run);
    return report(cfg, "floor_publish", "hiredis sync; subscriber connection in its own thread",
                  "delivery", "message", &run);
}

long long bench_floor_adjacent(const bench_config *cfg, bench_floor *floor) {
    int n = cfg->floor_n / 10 > 500 ? cfg->floor_n / 10 : 500;
    floor_run ping = {0}, publish = {0};
    run_pings(cfg->url, n, &ping);
    run_publishes(cfg, n, &publish);
    floor->n = n;
    floor->ping_p50_us = bench_samples_pct_us(&ping.latency, 0.5);
    floor->publish_p50_us = bench_samples_pct_us(&publish.latency, 0.5);
    bench_samples_free(&ping.latency);
    bench_samples_free(&publish.latency);
    return ping.errors + publish.errors;
}
