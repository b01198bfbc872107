/* SPDX-License-Identifier: MIT */
/* owner.c — owner identity: "<client-id>:<owner>" fields, the per-thread owner id of the
 * blocking face, and the Redisson key names built from an object name.
 *
 * Thread owner ids come from one process-wide counter, so an id is never reused even when
 * threads come and go: a new thread can never inherit a dead thread's holds. They carry
 * DLOCK_THREAD_OWNER_BASE, so they never meet the small ids an application gives its
 * async owners. */
#include <stdatomic.h>
#include <string.h>

#include "base/base.h"

/* Longest object name accepted: keys and channels built from it stay far below Redis'
 * 512 MB, and a name this long is surely a bug in the caller. */
#define NAME_MAX_LEN (64 * 1024)

static atomic_uint_fast64_t next_owner = 1;
static _Thread_local uint64_t thread_owner;

uint64_t dlock_thread_owner(void) {
    if (thread_owner == 0)
        thread_owner = DLOCK_THREAD_OWNER_BASE | atomic_fetch_add(&next_owner, 1);
    return thread_owner;
}

size_t dlock__owner_field(const dlock_client *c, uint64_t owner, char *buf) {
    /* the id is a UUID (36 bytes), the owner at most 20 digits: DLOCK__OWNER_FIELD_MAX */
    size_t id_len = strlen(DLOCK__BASE(c)->id);
    memcpy(buf, DLOCK__BASE(c)->id, id_len);
    buf[id_len] = ':';
    return id_len + 1 + dlock__decimal_u64(buf + id_len + 1, owner);
}

bool dlock__owner_field_is_ours(const dlock_client *c, const char *field, size_t len) {
    size_t id_len = strlen(DLOCK__BASE(c)->id);
    return len > id_len && memcmp(field, DLOCK__BASE(c)->id, id_len) == 0 && field[id_len] == ':';
}

/* The concatenation of the NULL-terminated list of parts, in a new string. */
static char *concat(const char *const *parts) {
    size_t len = 0;
    for (const char *const *p = parts; *p; p++)
        len += strlen(*p);
    char *s = dlock__malloc(len + 1), *end = s;
    if (!s)
        return NULL;
    for (const char *const *p = parts; *p; p++) {
        size_t n = strlen(*p);
        memcpy(end, *p, n);
        end += n;
    }
    *end = '\0';
    return s;
}

char *dlock__name_prefixed(const char *prefix, const char *name) {
    if (strchr(name, '{'))
        return concat((const char *const[]){prefix, ":", name, NULL});
    return concat((const char *const[]){prefix, ":{", name, "}", NULL});
}

char *dlock__name_suffixed(const char *name, const char *suffix) {
    if (strchr(name, '{'))
        return concat((const char *const[]){name, ":", suffix, NULL});
    return concat((const char *const[]){"{", name, "}:", suffix, NULL});
}

int dlock__check_name(const char *name) {
    if (!name)
        return dlock__fail(DLOCK_EINVAL, "name is NULL");
    if (!name[0])
        return dlock__fail(DLOCK_EINVAL, "name is empty");
    if (strlen(name) > NAME_MAX_LEN)
        return dlock__fail(DLOCK_EINVAL, "name is longer than %d bytes", NAME_MAX_LEN);
    return DLOCK_OK;
}
