/* SPDX-License-Identifier: MIT */
/* inspect_read.c — reads what a name holds in Redis and says what it is (inspect.h).
 *
 * Read-only commands only (TYPE, PTTL, GET, HGETALL, LRANGE, ZRANGE, EXISTS, TIME,
 * PUBSUB NUMSUB, SHARDNUMSUB in a Cluster), sent on the library's connection (redis_lib.c) with the
 * key second, where a cluster looks for it; every key of an object shares the object's slot (its
 * name is the hash tag). Then which node the library sends the object's commands to. On the layouts
 * of REDIS_LAYOUT.md: lock            hash N: "<client-id>:<owner>" -> hold count;
 * redisson_lock_token:{N} (fenced); channel redisson_lock__channel:{N}. A spin lock (RSpinLock) is
 * that hash and nothing more, so nothing in Redis tells it from a reentrant lock: the kind is "lock
 * (reentrant or spin)" fair lock       the lock hash + list redisson_lock_queue:{N} of waiting
 * owner fields
 *                   + zset redisson_lock_timeout:{N}: field -> when the waiter counts as
 *                   gone; each waiter listens on redisson_lock__channel:{N}:<field>
 *                   dlock's hand-off: zset {N}:handoff_queue (field -> server ms when it
 *                   joined the line), string {N}:handoff (the field promised the lock)
 *   read-write lock hash N with "mode" = read|write; readers "<id>:<owner>" -> holds, the
 *                   writer "<id>:<owner>:write" -> holds; one key per read hold,
 *                   {N}:<id>:<owner>:rwlock_timeout:<k>; channel redisson_rwlock:{N};
 *                   dlock's waiting writers: zset {N}:rwlock_writers (field -> deadline)
 *   semaphore       string N = permits; channel redisson_sc:{N}
 *   permits         string N = available + zset {N}:timeout: 16-byte id -> lease end
 *                   (922337203685477: none)
 *   latch           string N = count; channel redisson_countdownlatch__channel__{N}
 * A semaphore and a latch are both a bare number: the one whose channel has subscribers
 * wins; with none (or both), the kind stays "semaphore or latch" unless --as says. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "inspect.h"
#include "redis_lib.h"

#define NO_LEASE_SCORE 922337203685477LL

static const struct {
    const char *name, *title;
} kind_names[] = {
    [OBJ_NONE] = {"none", "nothing"},
    [OBJ_LOCK] = {"lock", "lock (reentrant or spin)"},
    [OBJ_FAIR_LOCK] = {"fair_lock", "fair lock"},
    [OBJ_RWLOCK] = {"rwlock", "read-write lock"},
    [OBJ_SEMAPHORE] = {"semaphore", "semaphore"},
    [OBJ_PERMITS] = {"permits", "permit-expirable semaphore"},
    [OBJ_LATCH] = {"latch", "count-down latch"},
    [OBJ_COUNT] = {"count", "semaphore or count-down latch"},
    [OBJ_OTHER] = {"other", "not a dlock object"},
};

const char *obj_kind_name(obj_kind k) {
    return kind_names[k].name;
}
const char *obj_kind_title(obj_kind k) {
    return kind_names[k].title;
}

int obj_kind_parse(const char *s) {
    for (size_t i = 0; i < sizeof(kind_names) / sizeof(kind_names[0]); i++)
        if (strcmp(s, kind_names[i].name) == 0)
            return (int)i;
    return -1;
}

static char *join3(const char *a, const char *b, const char *c) {
    size_t len = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(len);
    if (s)
        snprintf(s, len, "%s%s%s", a, b, c);
    return s;
}

char *layout_prefixed(const char *prefix, const char *name) {
    if (strchr(name, '{')) {
        char *p = join3(prefix, ":", "");
        char *s = p ? join3(p, name, "") : NULL;
        free(p);
        return s;
    }
    char *p = join3(prefix, ":{", name);
    char *s = p ? join3(p, "}", "") : NULL;
    free(p);
    return s;
}

char *layout_suffixed(const char *name, const char *suffix) {
    if (strchr(name, '{'))
        return join3(name, ":", suffix);
    char *p = join3("{", name, "}:");
    char *s = p ? join3(p, suffix, "") : NULL;
    free(p);
    return s;
}

/* ---- asking Redis ---------------------------------------------------------------------- */

typedef struct reader {
    dlock_client *c;
    int code; /* the first failure's exit code; then every ask returns NULL */
} reader;

/* Sends the NULL-terminated words (the key the command is about second: a cluster routes
 * by it); the reply (never an error reply), or NULL with r->code set and the message
 * printed. */
static redis_lib_reply *ask(reader *r, const char *word, ...) {
    if (r->code)
        return NULL;
    const char *argv[8];
    int argc = 0;
    va_list ap;
    va_start(ap, word);
    for (const char *w = word; w && argc < 8; w = va_arg(ap, const char *))
        argv[argc++] = w;
    va_end(ap);
    redis_lib_reply *reply = NULL;
    int rc = redis_lib_call(r->c, argc, argv, &reply);
    if (rc != DLOCK_OK) {
        r->code = cli_fail(rc, argv[0]);
        return NULL;
    }
    return reply;
}

/* An integer reply (or a string that is one); fallback otherwise, or on nil. */
static long long ask_int(reader *r, long long fallback, const char *w1, const char *w2,
                         const char *w3) {
    redis_lib_reply *reply = ask(r, w1, w2, w3, NULL);
    long long v = fallback;
    if (reply && reply->type == DLOCK__REPLY_INTEGER) {
        v = reply->integer;
    } else if (reply && reply->type == DLOCK__REPLY_STRING) {
        char *end;
        long long x = strtoll(reply->str, &end, 10);
        if (reply->len > 0 && *end == '\0')
            v = x;
    }
    redis_lib_reply_free(reply);
    return v;
}

static bool key_exists(reader *r, const char *key) {
    return ask_int(r, 0, "EXISTS", key, NULL) > 0;
}

/* The clients subscribed to channel: in a Cluster its shard's (dlock and Redisson
 * subscribe there with SSUBSCRIBE), else the server's. */
static long long numsub(reader *r, const char *channel) {
    const char *which = dlock__client_channels_sharded(r->c) ? "SHARDNUMSUB" : "NUMSUB";
    redis_lib_reply *reply = ask(r, "PUBSUB", which, channel, NULL);
    long long n = 0;
    if (reply && reply->type == DLOCK__REPLY_ARRAY && reply->elements == 2 &&
        reply->element[1]->type == DLOCK__REPLY_INTEGER)
        n = reply->element[1]->integer;
    redis_lib_reply_free(reply);
    return n;
}

static long long server_now_ms(reader *r) {
    redis_lib_reply *reply = ask(r, "TIME", NULL);
    long long ms = 0;
    if (reply && reply->type == DLOCK__REPLY_ARRAY && reply->elements == 2)
        ms = strtoll(reply->element[0]->str, NULL, 10) * 1000 +
             strtoll(reply->element[1]->str, NULL, 10) / 1000;
    redis_lib_reply_free(reply);
    return ms;
}

static bool parse_ll(const char *s, long long *out) {
    if (!s || !*s)
        return false;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end != '\0')
        return false;
    *out = v;
    return true;
}

/* "<client-id>:<owner>[:write]" split at the first ':'; false if there is none. */
static bool split_field(const char *field, char **client_id, char **owner) {
    const char *colon = strchr(field, ':');
    if (!colon || colon == field || !colon[1])
        return false;
    *client_id = strndup(field, (size_t)(colon - field));
    *owner = strdup(colon + 1);
    return *client_id && *owner;
}

/* A waiter of owner field `field` into w; the field whole as its owner if it is not
 * <client-id>:<owner>. false on ENOMEM. */
static bool waiter_of(const char *field, waiter *w) {
    if (split_field(field, &w->client_id, &w->owner))
        return true;
    free(w->client_id);
    free(w->owner);
    w->client_id = strdup("");
    w->owner = strdup(field);
    return w->client_id && w->owner;
}

/* ---- the kinds ------------------------------------------------------------------------- */

static void read_fair_queue(reader *r, const char *name, inspection *in, bool *found) {
    char *queue_key = layout_prefixed("redisson_lock_queue", name);
    char *timeout_key = layout_prefixed("redisson_lock_timeout", name);
    *found = false;
    if (!queue_key || !timeout_key) {
        r->code = CLI_EXIT_SOFTWARE;
        goto out;
    }
    bool has_queue = key_exists(r, queue_key), has_timeouts = key_exists(r, timeout_key);
    if (!has_queue && !has_timeouts)
        goto out;
    *found = true;
    long long now = server_now_ms(r);
    redis_lib_reply *list = ask(r, "LRANGE", queue_key, "0", "-1", NULL);
    redis_lib_reply *zset = ask(r, "ZRANGE", timeout_key, "0", "-1", "WITHSCORES", NULL);
    if (list && list->type == DLOCK__REPLY_ARRAY && list->elements > 0) {
        in->queue = calloc(list->elements, sizeof(*in->queue));
        for (size_t i = 0; in->queue && i < list->elements; i++) {
            const char *field = list->element[i]->str;
            waiter *w = &in->queue[in->nqueue];
            if (!waiter_of(field, w))
                r->code = CLI_EXIT_SOFTWARE;
            w->expires_in_ms = -3;
            for (size_t j = 0; zset && zset->type == DLOCK__REPLY_ARRAY && j + 1 < zset->elements;
                 j += 2)
                if (strcmp(zset->element[j]->str, field) == 0)
                    w->expires_in_ms = strtoll(zset->element[j + 1]->str, NULL, 10) - now;
            in->nqueue++;
        }
    }
    redis_lib_reply_free(list);
    redis_lib_reply_free(zset);
out:
    free(queue_key);
    free(timeout_key);
}

/* dlock's read-write lock: the writers waiting, {N}:rwlock_writers (field -> deadline),
 * in deadline order. false if there are none. */
static bool read_waiting_writers(reader *r, const char *name, inspection *in) {
    char *key = layout_suffixed(name, "rwlock_writers");
    if (!key) {
        r->code = CLI_EXIT_SOFTWARE;
        return false;
    }
    redis_lib_reply *z =
        key_exists(r, key) ? ask(r, "ZRANGE", key, "0", "-1", "WITHSCORES", NULL) : NULL;
    free(key);
    if (!z || z->type != DLOCK__REPLY_ARRAY || z->elements < 2) {
        redis_lib_reply_free(z);
        return false;
    }
    long long now = server_now_ms(r);
    in->queue = calloc(z->elements / 2, sizeof(*in->queue));
    for (size_t i = 0; in->queue && i + 1 < z->elements; i += 2) {
        waiter *w = &in->queue[in->nqueue++];
        if (!waiter_of(z->element[i]->str, w))
            r->code = CLI_EXIT_SOFTWARE;
        size_t olen = w->owner ? strlen(w->owner) : 0;
        if (olen > 6 && strcmp(w->owner + olen - 6, ":write") == 0)
            w->owner[olen - 6] = '\0';
        w->expires_in_ms = strtoll(z->element[i + 1]->str, NULL, 10) - now;
    }
    redis_lib_reply_free(z);
    return true;
}

/* dlock's lock hand-off: the line {N}:handoff_queue (field -> when it joined, by the
 * server's clock), first first, and the promise {N}:handoff. */
static void read_handoff(reader *r, const char *name, inspection *in) {
    char *queue = layout_suffixed(name, "handoff_queue"),
         *marker = layout_suffixed(name, "handoff");
    if (!queue || !marker) {
        r->code = CLI_EXIT_SOFTWARE;
        goto out;
    }
    redis_lib_reply *z = ask(r, "ZRANGE", queue, "0", "-1", "WITHSCORES", NULL);
    if (z && z->type == DLOCK__REPLY_ARRAY && z->elements >= 2) {
        long long now = server_now_ms(r);
        in->queue = calloc(z->elements / 2, sizeof(*in->queue));
        for (size_t i = 0; in->queue && i + 1 < z->elements; i += 2) {
            waiter *w = &in->queue[in->nqueue++];
            w->expires_in_ms = -3;
            w->waited_ms = now - (long long)strtod(z->element[i + 1]->str, NULL);
            if (!waiter_of(z->element[i]->str, w))
                r->code = CLI_EXIT_SOFTWARE;
        }
    }
    redis_lib_reply_free(z);
    redis_lib_reply *m = ask(r, "GET", marker, NULL);
    if (m && m->type == DLOCK__REPLY_STRING) {
        in->promised.waited_ms = -3;
        in->promised.expires_in_ms = ask_int(r, -3, "PTTL", marker, NULL);
        if (!waiter_of(m->str, &in->promised))
            r->code = CLI_EXIT_SOFTWARE;
    }
    redis_lib_reply_free(m);
out:
    free(queue);
    free(marker);
}

/* Hash N: a lock (fair or not) or a read-write lock; OBJ_OTHER if the fields are not. */
static void read_lock_hash(reader *r, const char *name, inspection *in) {
    redis_lib_reply *h = ask(r, "HGETALL", name, NULL);
    if (!h || h->type != DLOCK__REPLY_ARRAY) {
        redis_lib_reply_free(h);
        return;
    }
    for (size_t i = 0; i + 1 < h->elements; i += 2)
        if (strcmp(h->element[i]->str, "mode") == 0)
            in->mode = strcmp(h->element[i + 1]->str, "write") == 0 ? "write" : "read";
    in->kind = in->mode ? OBJ_RWLOCK : OBJ_LOCK;
    in->holders = calloc(h->elements / 2 + 1, sizeof(*in->holders));
    if (!in->holders) {
        r->code = CLI_EXIT_SOFTWARE;
        redis_lib_reply_free(h);
        return;
    }
    for (size_t i = 0; i + 1 < h->elements; i += 2) {
        const char *field = h->element[i]->str;
        if (in->mode && strcmp(field, "mode") == 0)
            continue;
        holder *hd = &in->holders[in->nholders];
        hd->ttl_ms = -2;
        if (!split_field(field, &hd->client_id, &hd->owner) ||
            !parse_ll(h->element[i + 1]->str, &hd->holds)) {
            free(hd->client_id);
            free(hd->owner);
            memset(hd, 0, sizeof(*hd));
            in->kind = OBJ_OTHER;
            snprintf(in->note, sizeof(in->note),
                     "a hash, but field '%.80s' is not <client-id>:<owner> -> count", field);
            continue;
        }
        in->nholders++;
        if (!in->mode)
            continue;
        size_t olen = strlen(hd->owner);
        if (olen > 6 && strcmp(hd->owner + olen - 6, ":write") == 0) {
            hd->owner[olen - 6] = '\0';
            hd->mode = "write";
            continue;
        }
        hd->mode = "read";
        for (long long k = 1; k <= hd->holds && k <= 1000; k++) {
            char suffix[64];
            snprintf(suffix, sizeof(suffix), ":rwlock_timeout:%lld", k);
            char *tail = join3(field, suffix, "");
            char *key = tail ? layout_suffixed(name, tail) : NULL;
            if (key) {
                long long ttl = ask_int(r, -2, "PTTL", key, NULL);
                if (ttl > hd->ttl_ms || (ttl == -1 && hd->ttl_ms == -2))
                    hd->ttl_ms = ttl;
            }
            free(tail);
            free(key);
        }
    }
    redis_lib_reply_free(h);
}

static void read_permits(reader *r, const char *timeout_key, inspection *in) {
    long long now = server_now_ms(r);
    redis_lib_reply *z = ask(r, "ZRANGE", timeout_key, "0", "-1", "WITHSCORES", NULL);
    if (z && z->type == DLOCK__REPLY_ARRAY && z->elements >= 2) {
        in->permits = calloc(z->elements / 2, sizeof(*in->permits));
        for (size_t i = 0; in->permits && i + 1 < z->elements; i += 2) {
            permit *p = &in->permits[in->npermits++];
            const unsigned char *id = (const unsigned char *)z->element[i]->str;
            size_t n = z->element[i]->len < 16 ? z->element[i]->len : 16;
            for (size_t j = 0; j < n; j++)
                snprintf(p->id + 2 * j, 3, "%02x", id[j]);
            long long score = strtoll(z->element[i + 1]->str, NULL, 10);
            p->expires_in_ms = score >= NO_LEASE_SCORE ? -1 : score - now;
        }
    }
    redis_lib_reply_free(z);
}

/* A bare count (or nothing) at N: a semaphore or a latch, told apart by who listens. */
static void classify_count(reader *r, const char *name, int as, inspection *in) {
    char *sem_channel = layout_prefixed("redisson_sc", name);
    char *latch_channel = join3("redisson_countdownlatch__channel__{", name, "}");
    if (!sem_channel || !latch_channel) {
        r->code = CLI_EXIT_SOFTWARE;
        free(sem_channel);
        free(latch_channel);
        return;
    }
    long long sem_subs = numsub(r, sem_channel), latch_subs = numsub(r, latch_channel);
    obj_kind kind = OBJ_COUNT;
    if (as == OBJ_SEMAPHORE || as == OBJ_LATCH)
        kind = (obj_kind)as;
    else if (sem_subs > 0 && latch_subs == 0)
        kind = OBJ_SEMAPHORE;
    else if (latch_subs > 0 && sem_subs == 0)
        kind = OBJ_LATCH;
    in->kind = kind;
    if (kind == OBJ_SEMAPHORE) {
        in->channel = sem_channel;
        in->subscribers = sem_subs;
        free(latch_channel);
    } else if (kind == OBJ_LATCH) {
        in->channel = latch_channel;
        in->subscribers = latch_subs;
        free(sem_channel);
    } else {
        free(sem_channel);
        free(latch_channel);
        snprintf(in->note, sizeof(in->note),
                 "a bare count: a semaphore's permits or a latch's count (nobody waits on "
                 "either's channel to tell); --as semaphore|latch to choose");
    }
}

int inspect_read(dlock_client *c, const char *name, int as, inspection *in) {
    memset(in, 0, sizeof(*in));
    in->name = name;
    in->ttl_ms = -2;
    reader r = {c, 0};

    redis_lib_reply *t = ask(&r, "TYPE", name, NULL);
    if (t && (t->type == DLOCK__REPLY_STATUS || t->type == DLOCK__REPLY_STRING))
        snprintf(in->redis_type, sizeof(in->redis_type), "%s", t->str);
    redis_lib_reply_free(t);
    if (r.code)
        return r.code;
    in->exists = strcmp(in->redis_type, "none") != 0;
    in->ttl_ms = ask_int(&r, -2, "PTTL", name, NULL);

    char *token_key = layout_prefixed("redisson_lock_token", name);
    char *permits_key = layout_suffixed(name, "timeout");
    if (!token_key || !permits_key) {
        free(token_key);
        free(permits_key);
        cli_error("out of memory");
        return CLI_EXIT_SOFTWARE;
    }
    long long token = ask_int(&r, -1, "GET", token_key, NULL);
    if (token >= 0) {
        in->fenced = true;
        in->token = token;
    }

    bool is_hash = strcmp(in->redis_type, "hash") == 0;
    bool is_string = strcmp(in->redis_type, "string") == 0;
    bool is_none = !in->exists;
    if (is_hash) {
        read_lock_hash(&r, name, in);
        if (in->kind == OBJ_RWLOCK)
            read_waiting_writers(&r, name, in);
    } else if (is_string || is_none) {
        if (is_string) {
            redis_lib_reply *v = ask(&r, "GET", name, NULL);
            if (v && v->type == DLOCK__REPLY_STRING && parse_ll(v->str, &in->count))
                in->has_count = true;
            redis_lib_reply_free(v);
        }
        if (is_string && !in->has_count) {
            in->kind = OBJ_OTHER;
            snprintf(in->note, sizeof(in->note), "a string, but not a number");
        } else if (!r.code && key_exists(&r, permits_key)) {
            in->kind = OBJ_PERMITS;
            in->has_count = true; /* an absent count is 0 available */
            read_permits(&r, permits_key, in);
            in->channel = layout_prefixed("redisson_sc", name);
        } else if (is_string || as == OBJ_SEMAPHORE || as == OBJ_LATCH) {
            in->has_count = true;
            classify_count(&r, name, as, in);
        } else if (read_waiting_writers(&r, name, in)) {
            in->kind = OBJ_RWLOCK; /* free, a writer waiting (or about to be dropped) */
        } else {
            in->kind = in->fenced ? OBJ_LOCK : OBJ_NONE; /* a fenced lock nobody holds */
        }
    } else {
        in->kind = OBJ_OTHER;
        snprintf(in->note, sizeof(in->note), "a Redis %s, which dlock does not make",
                 in->redis_type);
    }

    if (in->kind == OBJ_LOCK || in->kind == OBJ_NONE) {
        bool fair = false;
        read_fair_queue(&r, name, in, &fair);
        if (fair)
            in->kind = OBJ_FAIR_LOCK;
    }
    if (in->kind == OBJ_LOCK)
        read_handoff(&r, name, in);
    if (in->kind == OBJ_LOCK || in->kind == OBJ_FAIR_LOCK)
        in->channel = layout_prefixed("redisson_lock__channel", name);
    else if (in->kind == OBJ_RWLOCK)
        in->channel = layout_prefixed("redisson_rwlock", name);
    if (in->channel && !in->subscribers)
        in->subscribers = numsub(&r, in->channel);
    /* A fair lock's waiters each listen on their own channel: <channel>:<field>. */
    for (size_t i = 0; in->kind == OBJ_FAIR_LOCK && in->channel && i < in->nqueue; i++) {
        const waiter *w = &in->queue[i];
        char *field = join3(w->client_id, w->client_id[0] ? ":" : "", w->owner);
        char *own = field ? join3(in->channel, ":", field) : NULL;
        if (own)
            in->subscribers += numsub(&r, own);
        free(field);
        free(own);
    }

    free(token_key);
    free(permits_key);
    if (!r.code)
        redis_lib_node_of(c, name, in->node, sizeof(in->node));
    return r.code;
}

void inspection_free(inspection *in) {
    for (size_t i = 0; i < in->nholders; i++) {
        free(in->holders[i].client_id);
        free(in->holders[i].owner);
    }
    free(in->holders);
    for (size_t i = 0; i < in->nqueue; i++) {
        free(in->queue[i].client_id);
        free(in->queue[i].owner);
    }
    free(in->queue);
    free(in->promised.client_id);
    free(in->promised.owner);
    free(in->permits);
    free(in->channel);
    memset(in, 0, sizeof(*in));
}
