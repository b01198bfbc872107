/* SPDX-License-Identifier: MIT */
/* handoff_cluster.c — the reentrant lock's hand-off (reentrant.c) in a Redis Cluster.
 *
 * The hand-off's marker {N}:handoff and queue {N}:handoff_queue hash to N's slot, but they
 * usually do not exist, so a Cluster client never declares them (a declared absent key makes
 * a script wait out any migration of the slot: TRYAGAIN), and every script that touches them
 * first asks the probe {N}:handoff_probe, a key of the slot that never exists, whether the
 * slot is being migrated; if so it leaves them alone, so that no node writes one the other
 * still has (acquire.lua, "In a Cluster", says how the probe answers and why). A wait is
 * unbounded while its lock's slot moves, as with Redisson, and bounded again after.
 *
 * Redis layout (dlock's own, beside reentrant.c's):
 *   {N}:handoff_probe   never stored: the scripts only ask whether it exists */
#include <string.h>

#include "dlock_object.h"
#include "handoff_cluster.h"

/* What Redis Cluster hashes of key: its hash tag (the bytes between the first '{' and the
 * next '}', when there is at least one), else the whole key. */
static void hashed_part(const char *key, const char **at, size_t *len) {
    const char *open = strchr(key, '{');
    const char *close = open ? strchr(open + 1, '}') : NULL;
    if (close && close > open + 1) {
        *at = open + 1;
        *len = (size_t)(close - open - 1);
    } else {
        *at = key;
        *len = strlen(key);
    }
}

/* Whether key hashes as name does: the same hashed bytes, so the same slot. */
static bool hashes_as(const char *key, const char *name) {
    const char *a, *b;
    size_t alen, blen;
    hashed_part(key, &a, &alen);
    hashed_part(name, &b, &blen);
    return alen == blen && memcmp(a, b, alen) == 0;
}

char *dlock__handoff_cluster_probe(const char *name) {
    char *probe = dlock__name_suffixed(name, "handoff_probe");
    /* the marker and queue are suffixed alike: one of them hashes as N iff the probe does */
    if (probe && !hashes_as(probe, name)) {
        dlock__free(probe);
        return NULL;
    }
    return probe;
}

void dlock__handoff_cluster_drop(dlock_client *c, const char *name, const char *marker,
                                 const char *queue, const char *field, const char *probe) {
    dlock__args a = {0};
    dlock__args_str(&a, name);
    dlock__args_str(&a, marker);
    dlock__args_str(&a, queue);
    dlock__args_str(&a, field);
    dlock__args_str(&a, probe);
    dlock__script(c, DLOCK__SCRIPT_LOCK_HANDOFF_DROP_CLUSTER, DLOCK__CMD_RETRY_SAFE,
                  dlock__ignore_reply, (void *)"lock: leaving the hand-off queue", 3, a.n, a.v,
                  a.len);
}
