/* SPDX-License-Identifier: MIT */
/* inspect.h — what `dlock inspect` learns about a name (inspect_read.c fills it from
 * Redis, cmd_inspect.c prints it as a table or JSON). It reads through the library's own
 * connection (redis_lib.c), so every URL the library takes works. `dlock release --force`
 * reads it too, to refuse a name that is not a plain lock. */
#ifndef DLOCK_CLI_INSPECT_H
#define DLOCK_CLI_INSPECT_H

#include <stdbool.h>
#include <stddef.h>

#include "cli.h"

/* ---- the model --------------------------------------------------------------------------- */

typedef enum {
    OBJ_NONE,      /* nothing under the name */
    OBJ_LOCK,      /* RLock / RFencedLock hash */
    OBJ_FAIR_LOCK, /* RFairLock: lock hash + queue list / timeout zset */
    OBJ_RWLOCK,    /* RReadWriteLock hash with a "mode" field */
    OBJ_SEMAPHORE, /* RSemaphore count (someone waits on its channel, or --as) */
    OBJ_PERMITS,   /* RPermitExpirableSemaphore: count + {N}:timeout zset */
    OBJ_LATCH,     /* RCountDownLatch count (someone waits on its channel, or --as) */
    OBJ_COUNT,     /* a bare count: a semaphore or a latch, nothing tells which */
    OBJ_OTHER,     /* a key dlock does not make (redis_type tells what) */
} obj_kind;

/* The name of a kind in JSON and in --as: "none", "lock", "fair_lock", ... */
const char *obj_kind_name(obj_kind k);
/* For people: "lock", "fair lock", "read-write lock", ... */
const char *obj_kind_title(obj_kind k);
/* --as KIND: OBJ_SEMAPHORE, OBJ_LATCH, ...; -1 if unknown. */
int obj_kind_parse(const char *s);

typedef struct holder {
    char *client_id;  /* the UUID half of the owner field */
    char *owner;      /* the owner id half (decimal text as stored) */
    const char *mode; /* read-write lock: "read" or "write"; else NULL */
    long long holds;  /* reentrant hold count */
    long long ttl_ms; /* read-write lock readers: the longest lease of their holds; -2 none */
} holder;

/* A waiter known by name: a fair lock's queue, or a read-write lock's waiting writers. */
typedef struct waiter {
    char *client_id, *owner;
    long long expires_in_ms; /* until the waiter counts as gone (unless it refreshes);
                                -3 unknown */
    long long waited_ms;     /* a lock's hand-off line: how long it has been in line; -3
                                not known (every other queue) */
} waiter;

typedef struct permit {
    char id[33];             /* 32 hex characters (more if the member is not 16 bytes) */
    long long expires_in_ms; /* -1: no lease */
} permit;

typedef struct inspection {
    const char *name;
    obj_kind kind;
    char redis_type[16]; /* TYPE N: "none", "hash", "string", ... */
    bool exists;         /* N itself exists */
    long long ttl_ms;    /* PTTL N: -2 no key, -1 no expiry */
    bool fenced;         /* redisson_lock_token:{N} exists */
    long long token;     /* the last token issued */
    const char *mode;    /* read-write lock: "read" / "write" */
    bool has_count;
    long long count; /* semaphore / permits: available permits; latch: remaining count */
    holder *holders;
    size_t nholders;
    waiter *queue; /* fair lock: in line, first first; rwlock: waiting writers; lock: dlock's
                      hand-off line {N}:handoff_queue, first first */
    size_t nqueue;
    /* lock: the dlock waiter the free lock is promised to ({N}:handoff), and for how much
     * longer (ms); promised.client_id NULL: none */
    waiter promised;
    permit *permits;
    size_t npermits;
    char *channel;         /* the channel waiters listen on (NULL if none) */
    long long subscribers; /* PUBSUB NUMSUB of it (for a fair lock, plus each waiter's own
                              channel): clients waiting, one subscription per client */
    char note[256];        /* a remark for people ("" if none) */
    char node[300];        /* the node that served the reads (redis_lib_node_of) */
} inspection;

/* Reads everything about name with read-only commands on c's connection, and which node
 * served them. as: the kind to assume for a bare count (OBJ_SEMAPHORE / OBJ_LATCH), or -1
 * to guess from the channels. 0, or an exit code with the message printed. */
int inspect_read(dlock_client *c, const char *name, int as, inspection *out);
void inspection_free(inspection *in);

/* The key names of REDIS_LAYOUT.md: prefixed(p, N) = "p:{N}" (or "p:N" when N has a
 * '{'); suffixed(N, s) = "{N}:s" (or "N:s"). malloc'd; NULL on ENOMEM. */
char *layout_prefixed(const char *prefix, const char *name);
char *layout_suffixed(const char *name, const char *suffix);

#endif
