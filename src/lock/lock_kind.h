/* lock_kind.h — compatibility only, until src/multilock stands on member.h and
 * lock_class.h: the composite class of the former lock.c and the calls composites made of
 * it (implemented in compat.c over member.h). Kinds of lock include lock_engine.h. */
#ifndef DLOCK_LOCK_KIND_H
#define DLOCK_LOCK_KIND_H

#include "lock_engine.h"

/* A composite's calls, given its self. The blocking calls pass the calling thread's owner. */
typedef struct dlock__composite_class {
    int (*try_acquire)(void *self, uint64_t owner, int64_t wait_ms, int64_t lease_ms);
    int (*release)(void *self, uint64_t owner);
    int (*force_release)(void *self, bool *was_locked);
    int (*is_locked)(void *self, bool *out);
    int (*is_held)(void *self, uint64_t owner, bool *out);
    int (*hold_count)(void *self, uint64_t owner, int64_t *out);
    int (*ttl)(void *self, uint64_t owner, int64_t *out_ms);
    int (*token_of)(void *self, uint64_t owner, uint64_t *out);
    void (*free)(void *self);
} dlock__composite_class;

/* A composite handle named name over self; dlock_lock_free frees self through the class. */
int dlock__lock_create_composite(const char *name, const dlock__composite_class *cls, void *self,
                                 dlock_lock **out);
/* A composite tells its handle's lost callback (any thread). */
void dlock__lock_fire_lost(dlock_lock *l, uint64_t owner, int reason);
/* Blocking: owner's hold of l keeps lease_ms from now, no longer renewed. */
int dlock__lock_set_lease(dlock_lock *l, uint64_t owner, int64_t lease_ms);
bool dlock__lock_fenced(const dlock_lock *l);
int dlock__lock_raise_token_async(dlock_lock *l, uint64_t owner, uint64_t floor, dlock_lock_cb cb,
                                  void *arg);
/* Marks l as a member of a composite (claim) or frees it again; false if already claimed. */
bool dlock__lock_claim(dlock_lock *l, bool claim);
dlock_client *dlock__lock_client(const dlock_lock *l);

#endif
