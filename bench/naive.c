/* SPDX-License-Identifier: MIT */
/* naive.c — the lock the tutorials teach, over plain synchronous hiredis, as a baseline:
 *
 *   acquire   SET name token NX PX 30000; on nil, sleep 1 ms and try again (no waiting
 *             list, no messages: polling)
 *   release   EVALSHA of  if redis.call('get', KEYS[1]) == ARGV[1]
 *                         then return redis.call('del', KEYS[1]) else return 0 end
 *             (compare-and-delete; loaded with SCRIPT LOAD when the worker connects)
 *
 * Every worker has its own connection (a hiredis context is not shared between threads)
 * and a random token. It runs the same loops as dlock (contend.c): uncontended_pair,
 * contended_handoff (threads and processes) and hold_10ms, printed with client "naive". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define NAIVE_POLL_NS 1000000 /* 1 ms between attempts when the lock is taken */

static const char release_script[] = "if redis.call('get', KEYS[1]) == ARGV[1] then "
                                     "return redis.call('del', KEYS[1]) else return 0 end";

typedef struct naive_worker {
    redisContext *rc;
    char name[160];
    char token[40];
    char sha[48];
} naive_worker;

static int naive_error(naive_worker *w, redisReply *r, const char *what) {
    return bench_reply_error(w->rc, r, "naive", what);
}

static int naive_open(const bench_config *cfg, const char *name, void *shared, void **out) {
    (void)shared;
    naive_worker *w = calloc(1, sizeof(*w));
    if (!w)
        return -1;
    w->rc = bench_redis_connect(cfg->url, NULL);
    if (!w->rc) {
        free(w);
        return -1;
    }
    snprintf(w->name, sizeof(w->name), "%s", name);
    FILE *urandom = fopen("/dev/urandom", "rb");
    unsigned char raw[16] = {0};
    if (!urandom || fread(raw, 1, sizeof(raw), urandom) != sizeof(raw)) {
        unsigned long long x = (unsigned long long)bench_now_ns() ^ (unsigned long long)(size_t)w;
        memcpy(raw, &x, sizeof(x));
    }
    if (urandom)
        fclose(urandom);
    for (int i = 0; i < 16; i++)
        snprintf(w->token + 2 * i, 3, "%02x", raw[i]);
    redisReply *r = redisCommand(w->rc, "SCRIPT LOAD %s", release_script);
    if (!r || r->type != REDIS_REPLY_STRING) {
        naive_error(w, r, "SCRIPT LOAD");
        redisFree(w->rc);
        free(w);
        return -1;
    }
    snprintf(w->sha, sizeof(w->sha), "%s", r->str);
    freeReplyObject(r);
    *out = w;
    return 0;
}

static void naive_close(void *h) {
    naive_worker *w = h;
    if (!w)
        return;
    redisFree(w->rc);
    free(w);
}

static int naive_acquire(void *h) {
    naive_worker *w = h;
    for (;;) {
        redisReply *r =
            redisCommand(w->rc, "SET %s %s NX PX %d", w->name, w->token, BENCH_LEASE_MS);
        if (r && r->type == REDIS_REPLY_STATUS) {
            freeReplyObject(r);
            return 0;
        }
        if (!r || r->type != REDIS_REPLY_NIL)
            return naive_error(w, r, "SET NX PX");
        freeReplyObject(r);
        bench_sleep_ns(NAIVE_POLL_NS);
    }
}

static int naive_release(void *h) {
    naive_worker *w = h;
    redisReply *r = redisCommand(w->rc, "EVALSHA %s 1 %s %s", w->sha, w->name, w->token);
    if (!r || r->type != REDIS_REPLY_INTEGER || r->integer != 1)
        return naive_error(w, r, "release (EVALSHA compare-and-delete)");
    freeReplyObject(r);
    return 0;
}

static const bench_impl naive_impl = {
    .client = "naive",
    .api = "hiredis sync: SET NX PX 30000, 1 ms polling; EVALSHA compare-and-delete; "
           "one connection per worker",
    .connection_per_worker = true,
    .open_worker = naive_open,
    .close_worker = naive_close,
    .acquire = naive_acquire,
    .release = naive_release,
};

long long bench_naive_pair(const bench_config *cfg, const bench_floor *floor, int threads) {
    return bench_pairs(cfg, floor, &naive_impl, "uncontended_pair", threads);
}

long long bench_naive_contend(const bench_config *cfg, const bench_floor *floor,
                              const char *workload, int workers, bool processes, int64_t hold_us) {
    return bench_contend(cfg, floor, &naive_impl, workload, workers, processes, hold_us);
}
