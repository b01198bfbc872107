/* SPDX-License-Identifier: MIT */
/* map.h — a string-keyed hash map (separate chaining) for the core's per-channel tables.
 *
 * Keys are copied; values are the caller's pointers. The pub/sub router maps channel ->
 * subscription and the waiting engine maps channel -> wait queue, both with as many
 * entries as objects being waited on (tens of thousands in waiters_scale). */
#ifndef DLOCK_MAP_H
#define DLOCK_MAP_H

#include <stddef.h>

typedef struct dlock__map_entry dlock__map_entry;
typedef struct dlock__map {
    dlock__map_entry **buckets;
    size_t nbuckets; /* a power of two, or 0 before the first insert */
    size_t count;
} dlock__map;

void dlock__map_init(dlock__map *m);
void dlock__map_free(dlock__map *m); /* frees the keys and the table, not the values */
void *dlock__map_get(const dlock__map *m, const char *key);
int dlock__map_put(dlock__map *m, const char *key, void *value); /* 0, or -1 on ENOMEM */
void *dlock__map_remove(dlock__map *m, const char *key);         /* the value, or NULL */
/* Calls fn for every value; fn must not change the map. */
void dlock__map_each(const dlock__map *m, void (*fn)(const char *key, void *value, void *arg),
                     void *arg);

#endif
