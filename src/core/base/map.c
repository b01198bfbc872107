/* SPDX-License-Identifier: MIT */
/* map.c — the core's string-keyed hash map (see map.h). FNV-1a hashing, chains, the table
 * doubled when the load passes 1. */
#include "base/map.h"

#include <stdint.h>
#include <string.h>

#include "dlock_int.h"

struct dlock__map_entry {
    dlock__map_entry *next;
    uint64_t hash;
    void *value;
    char key[]; /* NUL-terminated copy */
};

static uint64_t hash_key(const char *key) {
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        h ^= *p;
        h *= 1099511628211ULL;
    }
    return h;
}

void dlock__map_init(dlock__map *m) {
    m->buckets = NULL;
    m->nbuckets = 0;
    m->count = 0;
}

void dlock__map_free(dlock__map *m) {
    for (size_t i = 0; i < m->nbuckets; i++) {
        dlock__map_entry *e = m->buckets[i];
        while (e) {
            dlock__map_entry *next = e->next;
            dlock__free(e);
            e = next;
        }
    }
    dlock__free(m->buckets);
    dlock__map_init(m);
}

static dlock__map_entry **find_slot(const dlock__map *m, const char *key, uint64_t h) {
    if (m->nbuckets == 0)
        return NULL;
    dlock__map_entry **slot = &m->buckets[h & (m->nbuckets - 1)];
    while (*slot && ((*slot)->hash != h || strcmp((*slot)->key, key) != 0))
        slot = &(*slot)->next;
    return slot;
}

void *dlock__map_get(const dlock__map *m, const char *key) {
    dlock__map_entry **slot = find_slot(m, key, hash_key(key));
    return slot && *slot ? (*slot)->value : NULL;
}

static int grow(dlock__map *m) {
    size_t n = m->nbuckets ? m->nbuckets * 2 : 16;
    dlock__map_entry **buckets = dlock__calloc(n, sizeof(*buckets));
    if (!buckets)
        return -1;
    for (size_t i = 0; i < m->nbuckets; i++) {
        dlock__map_entry *e = m->buckets[i];
        while (e) {
            dlock__map_entry *next = e->next;
            e->next = buckets[e->hash & (n - 1)];
            buckets[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    dlock__free(m->buckets);
    m->buckets = buckets;
    m->nbuckets = n;
    return 0;
}

int dlock__map_put(dlock__map *m, const char *key, void *value) {
    uint64_t h = hash_key(key);
    dlock__map_entry **slot = find_slot(m, key, h);
    if (slot && *slot) {
        (*slot)->value = value;
        return 0;
    }
    if (m->count >= m->nbuckets && grow(m) != 0)
        return -1;
    size_t len = strlen(key);
    dlock__map_entry *e = dlock__malloc(sizeof(*e) + len + 1);
    if (!e)
        return -1;
    memcpy(e->key, key, len + 1);
    e->hash = h;
    e->value = value;
    size_t b = h & (m->nbuckets - 1);
    e->next = m->buckets[b];
    m->buckets[b] = e;
    m->count++;
    return 0;
}

void *dlock__map_remove(dlock__map *m, const char *key) {
    dlock__map_entry **slot = find_slot(m, key, hash_key(key));
    if (!slot || !*slot)
        return NULL;
    dlock__map_entry *e = *slot;
    void *value = e->value;
    *slot = e->next;
    dlock__free(e);
    m->count--;
    return value;
}

void dlock__map_each(const dlock__map *m, void (*fn)(const char *key, void *value, void *arg),
                     void *arg) {
    for (size_t i = 0; i < m->nbuckets; i++)
        for (dlock__map_entry *e = m->buckets[i]; e; e = e->next)
            fn(e->key, e->value, arg);
}
