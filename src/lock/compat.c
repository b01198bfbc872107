/* compat.c — compatibility only, until src/multilock stands on member.h and lock_class.h:
 * the former lock.c's composite handle (a class table forwarding to a composite's self)
 * and its calls for composites, over the engine (lock_kind.h). */
#include <stdatomic.h>

#include "engine.h"
#include "lock_kind.h"

typedef struct legacy_composite {
    struct dlock_lock base; /* first: the class and the name */
    const dlock__composite_class *cls;
    void *self;
    dlock_lost_cb lost_cb;
    void *lost_arg;
} legacy_composite;

static legacy_composite *legacy(dlock_lock *l) {
    return (legacy_composite *)l;
}

static int try_acquire(dlock_lock *l, uint64_t owner, int64_t wait_ms, int64_t lease_ms) {
    return legacy(l)->cls->try_acquire(legacy(l)->self, owner, wait_ms, lease_ms);
}

static int release(dlock_lock *l, uint64_t owner) {
    return legacy(l)->cls->release(legacy(l)->self, owner);
}

static int force_release(dlock_lock *l, bool *was_locked) {
    return legacy(l)->cls->force_release(legacy(l)->self, was_locked);
}

static int is_locked(dlock_lock *l, bool *out) {
    return legacy(l)->cls->is_locked(legacy(l)->self, out);
}

static int is_held(dlock_lock *l, uint64_t owner, bool *out) {
    return legacy(l)->cls->is_held(legacy(l)->self, owner, out);
}

static int hold_count(dlock_lock *l, uint64_t owner, int64_t *out) {
    return legacy(l)->cls->hold_count(legacy(l)->self, owner, out);
}

static int ttl(dlock_lock *l, uint64_t owner, int64_t *out_ms) {
    return legacy(l)->cls->ttl(legacy(l)->self, owner, out_ms);
}

static int token_of(dlock_lock *l, uint64_t owner, uint64_t *out) {
    return legacy(l)->cls->token_of(legacy(l)->self, owner, out);
}

static int on_lost(dlock_lock *l, dlock_lost_cb cb, void *arg) {
    legacy(l)->lost_cb = cb;
    legacy(l)->lost_arg = arg;
    return DLOCK_OK;
}

static void composite_free(dlock_lock *l) {
    legacy(l)->cls->free(legacy(l)->self);
    dlock__free(l->name);
    dlock__free(l);
}

static const dlock__lock_class legacy_class = {
    .what = "composite lock",
    .try_acquire = try_acquire,
    .release = release,
    .force_release = force_release,
    .is_locked = is_locked,
    .is_held = is_held,
    .hold_count = hold_count,
    .ttl = ttl,
    .token_of = token_of,
    .on_lost = on_lost,
    .free = composite_free,
};

int dlock__lock_create_composite(const char *name, const dlock__composite_class *cls, void *self,
                                 dlock_lock **out) {
    legacy_composite *c = dlock__calloc(1, sizeof(*c));
    if (!c || !(c->base.name = dlock__strdup(name))) {
        dlock__free(c);
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    }
    c->base.cls = &legacy_class;
    c->cls = cls;
    c->self = self;
    *out = &c->base;
    return DLOCK_OK;
}

void dlock__lock_fire_lost(dlock_lock *l, uint64_t owner, int reason) {
    if (legacy(l)->lost_cb)
        legacy(l)->lost_cb(l, owner, reason, legacy(l)->lost_arg);
}

int dlock__lock_set_lease(dlock_lock *l, uint64_t owner, int64_t lease_ms) {
    lock_handle *h = dlock__ordinary(l);
    if (!h || lease_ms <= 0)
        return dlock__fail(DLOCK_EINVAL, "set_lease needs an ordinary lock and a lease");
    lock_op op;
    dlock__lock_op_init(&op, h, dlock__set_lease_start, owner);
    op.lease_ms = lease_ms;
    return dlock__lock_op_run(&op);
}

bool dlock__lock_fenced(const dlock_lock *l) {
    return dlock__member_fenced(l);
}

int dlock__lock_raise_token_async(dlock_lock *l, uint64_t owner, uint64_t floor, dlock_lock_cb cb,
                                  void *arg) {
    return dlock__member_raise_token_async(l, owner, floor, cb, arg);
}

bool dlock__lock_claim(dlock_lock *l, bool claim) {
    lock_handle *h = dlock__ordinary(l);
    if (!h)
        return false;
    if (!claim) {
        h->claimed = false;
        return true;
    }
    return !atomic_exchange(&h->claimed, true);
}

dlock_client *dlock__lock_client(const dlock_lock *l) {
    return dlock__member_client(l);
}
