/* SPDX-License-Identifier: MIT */
/* rwlock.c — the read-write lock (Redisson RReadWriteLock): two dlock_lock halves over one
 * hash, each a kind of lock (lock/lock_engine.h), so every lock call works on each half.
 *
 * Redis layout (wire-compatible with Redisson, see REDIS_LAYOUT.md):
 *   N                                              hash: mode -> read|write; reader
 *                                                  "<client-id>:<owner>" -> read holds;
 *                                                  writer "<client-id>:<owner>:write" -> write
 * holds {N}:<client-id>:<owner>:rwlock_timeout:<k>     string per read hold k, its own lease
 *   redisson_rwlock:{N}                            channel: "0" read release freed it,
 *                                                  "1" write release (every waiter looks)
 *   {N}:rwlock_writers                             dlock only: sorted set of waiting writers
 *                                                  -> deadline (server clock); see below
 * Scripts beside this file: rw.lua (every operation of both halves) and renew_read.lua
 * (the watchdog's renewal of read holds); the write half renews with the core's
 * renew_hash.lua, like the reentrant lock.
 *
 * Writer starvation: Redisson lets a steady stream of readers keep a writer out for ever.
 * Here a waiting writer puts itself in {N}:rwlock_writers with a deadline it refreshes
 * with each attempt (server TIME + fair_wait_ms, at least every fair_wait_ms / 3); while a
 * live writer waits, new readers wait too (owners already reading may read more, so no
 * reader deadlocks on itself). A writer that gives up leaves at once; one that died stops
 * counting after fair_wait_ms. Redisson clients on the same name ignore this key: against
 * them the writer has no such priority. */
#include <string.h>

#include "dlock/lock.h"
#include "dlock/rwlock.h"
#include "dlock_int.h"
#include "dlock_object.h"
#include "lock/lock_engine.h"

struct dlock_rwlock {
    dlock_lock *read;
    dlock_lock *write;
};

typedef struct rw_keys {
    char *channel; /* redisson_rwlock:{N} */
    char *writers; /* {N}:rwlock_writers */
    char *base;    /* {N}: the prefix of the read holds' timeout keys */
} rw_keys;

static void keys_free(void *p) {
    rw_keys *k = p;
    dlock__free(k->channel);
    dlock__free(k->writers);
    dlock__free(k->base);
    dlock__free(k);
}

static void *keys_new(const char *name) {
    rw_keys *k = dlock__calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    k->channel = dlock__name_prefixed("redisson_rwlock", name);
    k->writers = dlock__name_suffixed(name, "rwlock_writers");
    /* suffixed(N, s) is base + ":" + s: the base is what precedes the last ':' */
    char *probe = dlock__name_suffixed(name, "x");
    if (probe) {
        probe[strlen(probe) - 2] = '\0';
        k->base = probe;
    }
    if (!k->channel || !k->writers || !k->base) {
        keys_free(k);
        return NULL;
    }
    return k;
}

/* rw.lua's KEYS, the operation, then lease, field, believed holds. */
static int rw_args(const dlock__lock_view *v, dlock__args *a, const char *op) {
    const rw_keys *k = v->data;
    dlock__args_str(a, v->name);
    dlock__args_str(a, k->channel);
    dlock__args_str(a, k->writers);
    dlock__args_str(a, k->base);
    dlock__args_str(a, op);
    dlock__args_int(a, v->lease_ms);
    dlock__args_str(a, v->field);
    dlock__args_int(a, v->believed);
    return 4;
}

static int read_acquire_args(const dlock__lock_view *v, dlock__args *a) {
    int nkeys = rw_args(v, a, "read");
    dlock__args_int(a, dlock__client_fair_wait_ms(v->client));
    return nkeys;
}

static int read_release_args(const dlock__lock_view *v, dlock__args *a) {
    return rw_args(v, a, "unread");
}

static int read_force_args(const dlock__lock_view *v, dlock__args *a) {
    return rw_args(v, a, "force_read");
}

static int write_acquire_args(const dlock__lock_view *v, dlock__args *a) {
    int nkeys = rw_args(v, a, "write");
    dlock__args_int(a, dlock__client_fair_wait_ms(v->client));
    dlock__args_int(a, v->once); /* a single attempt does not hold readers back */
    return nkeys;
}

static int write_release_args(const dlock__lock_view *v, dlock__args *a) {
    return rw_args(v, a, "unwrite");
}

static int write_force_args(const dlock__lock_view *v, dlock__args *a) {
    return rw_args(v, a, "force_write");
}

/* Both halves wait on the lock's own channel, redisson_rwlock:{N}. */
static char *waiter_channel(const dlock__lock_view *v) {
    return dlock__strdup(((const rw_keys *)v->data)->channel);
}

/* A writer that stops waiting lets the readers it held back in at once (if this fails,
 * its deadline lets them in within fair_wait_ms). */
static void writer_gave_up(const dlock__lock_view *v) {
    dlock__args a = {0};
    int nkeys = rw_args(v, &a, "leave");
    dlock__script(v->client, DLOCK__SCRIPT_RWLOCK_RW, DLOCK__CMD_RETRY_SAFE, dlock__ignore_reply,
                  (void *)"read-write lock: a writer leaving the line", nkeys, a.n, a.v, a.len);
}

/* Both halves share each client's waiters on the channel: a message wakes them all (a
 * write release may let every reader in; after a read release the writer and readers
 * sort it out among themselves in Redis). */
static const dlock__lock_kind read_kind = {
    .what = "read lock",
    .acquire_script = DLOCK__SCRIPT_RWLOCK_RW,
    .release_script = DLOCK__SCRIPT_RWLOCK_RW,
    .force_script = DLOCK__SCRIPT_RWLOCK_RW,
    .acquire_args = read_acquire_args,
    .release_args = read_release_args,
    .force_args = read_force_args,
    .renew_script = DLOCK__SCRIPT_RWLOCK_RENEW_READ,
    .waiter_channel = waiter_channel,
    .locked_mode = "read",
    .data_new = keys_new,
    .data_free = keys_free,
};

static const dlock__lock_kind write_kind = {
    .what = "write lock",
    .acquire_script = DLOCK__SCRIPT_RWLOCK_RW,
    .release_script = DLOCK__SCRIPT_RWLOCK_RW,
    .force_script = DLOCK__SCRIPT_RWLOCK_RW,
    .acquire_args = write_acquire_args,
    .release_args = write_release_args,
    .force_args = write_force_args,
    .renew_script = DLOCK__SCRIPT_CORE_RENEW_HASH,
    .waiter_channel = waiter_channel,
    .gave_up = writer_gave_up,
    .field_suffix = ":write",
    .locked_mode = "write",
    .data_new = keys_new,
    .data_free = keys_free,
};

int dlock_rwlock_new(dlock_client *c, const char *name, dlock_rwlock **out) {
    if (!out)
        return dlock__fail(DLOCK_EINVAL, "out is NULL");
    dlock_rwlock *rw = dlock__calloc(1, sizeof(*rw));
    if (!rw)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    int rc = dlock__lock_create(c, name, &read_kind, false, &rw->read);
    if (rc == DLOCK_OK)
        rc = dlock__lock_create(c, name, &write_kind, false, &rw->write);
    if (rc != DLOCK_OK) {
        dlock_lock_free(rw->read);
        dlock__free(rw);
        return rc;
    }
    *out = rw;
    return DLOCK_OK;
}

dlock_lock *dlock_rwlock_read(dlock_rwlock *rw) {
    return rw ? rw->read : NULL;
}

dlock_lock *dlock_rwlock_write(dlock_rwlock *rw) {
    return rw ? rw->write : NULL;
}

void dlock_rwlock_free(dlock_rwlock *rw) {
    if (!rw)
        return;
    dlock_lock_free(rw->read);
    dlock_lock_free(rw->write);
    dlock__free(rw);
}
