/* SPDX-License-Identifier: MIT */
/* layout_floor.c — layout_floor: dlock's own lock scripts (acquire.lua and release.lua, the
 * texts the library sends, from the build's generated dlock_scripts.c) run over plain
 * synchronous hiredis, one connection per worker, with nothing else: no event loop, no
 * thread hand-over, no watchdog, no waiting list.
 *
 * No client of Redisson's lock layout (a hash of owner -> holds, PEXPIRE, a message on the
 * last release) can do an uncontended pair for less server work than these two scripts, so
 * pairs/s here is the ceiling for "a client per thread" (target 4) on this server: what
 * stays between it and the naive SET NX PX lock is the layout's price, not the client's.
 * Printed as uncontended_pair with client "layout_floor". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "dlock_scripts.h"

typedef struct floor_worker {
    redisContext *rc;
    char name[160];
    char marker[200];
    char channel[200];
    char owner[64]; /* <random id>:1, as a client's thread owner */
    char acquire_sha[48], release_sha[48];
} floor_worker;

static int floor_error(floor_worker *w, redisReply *r, const char *what) {
    return bench_reply_error(w->rc, r, "layout_floor", what);
}

static int load(floor_worker *w, enum dlock__script_id id, char sha[48]) {
    const dlock__script_source *s = &dlock__scripts[id];
    redisReply *r = redisCommand(w->rc, "SCRIPT LOAD %b", s->text, s->len);
    if (!r || r->type != REDIS_REPLY_STRING)
        return floor_error(w, r, "SCRIPT LOAD");
    snprintf(sha, 48, "%s", r->str);
    freeReplyObject(r);
    return 0;
}

static void floor_close(void *h) {
    floor_worker *w = h;
    if (!w)
        return;
    if (w->rc)
        redisFree(w->rc);
    free(w);
}

static int floor_open(const bench_config *cfg, const char *name, void *shared, void **out) {
    (void)shared;
    floor_worker *w = calloc(1, sizeof(*w));
    if (!w)
        return -1;
    w->rc = bench_redis_connect(cfg->url, NULL);
    if (!w->rc) {
        free(w);
        return -1;
    }
    snprintf(w->name, sizeof(w->name), "%s", name);
    snprintf(w->marker, sizeof(w->marker), "{%s}:handoff", name);
    snprintf(w->channel, sizeof(w->channel), "redisson_lock__channel:{%s}", name);
    snprintf(w->owner, sizeof(w->owner), "%016llx-%p:1", (unsigned long long)bench_now_ns(),
             (void *)w);
    if (load(w, DLOCK__SCRIPT_LOCK_ACQUIRE, w->acquire_sha) != 0 ||
        load(w, DLOCK__SCRIPT_LOCK_RELEASE, w->release_sha) != 0) {
        floor_close(w);
        return -1;
    }
    *out = w;
    return 0;
}

/* As the library's first attempt sends it: lease, owner, holds believed 0, no claim (0),
 * the marker's lifetime. Uncontended, it is taken at once: {1, 1, 0}. */
static int floor_acquire(void *h) {
    floor_worker *w = h;
    redisReply *r = redisCommand(w->rc, "EVALSHA %s 2 %s %s %d %s 0 0 100", w->acquire_sha, w->name,
                                 w->marker, BENCH_LEASE_MS, w->owner);
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
        r->element[0]->type != REDIS_REPLY_INTEGER || r->element[0]->integer != 1)
        return floor_error(w, r, "acquire.lua");
    freeReplyObject(r);
    return 0;
}

static int floor_release(void *h) {
    floor_worker *w = h;
    redisReply *r = redisCommand(w->rc, "EVALSHA %s 2 %s %s %d %s 1", w->release_sha, w->name,
                                 w->channel, BENCH_LEASE_MS, w->owner);
    if (!r || r->type != REDIS_REPLY_INTEGER || r->integer != 0)
        return floor_error(w, r, "release.lua");
    freeReplyObject(r);
    return 0;
}

static const bench_impl floor_impl = {
    .client = "layout_floor",
    .api = "hiredis sync: dlock's acquire.lua and release.lua by EVALSHA, nothing else; "
           "one connection per worker",
    .connection_per_worker = true,
    .open_worker = floor_open,
    .close_worker = floor_close,
    .acquire = floor_acquire,
    .release = floor_release,
};

long long bench_layout_floor_pair(const bench_config *cfg, const bench_floor *floor, int threads) {
    return bench_pairs(cfg, floor, &floor_impl, "uncontended_pair", threads);
}
