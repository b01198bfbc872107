/* SPDX-License-Identifier: MIT */
/* api.c — every public dlock_lock_* call (include/dlock/lock.h): its arguments checked
 * here, once for every class of handle, then the call goes to the handle's class
 * (lock_class.h): the ordinary class of the lock engine, or a composite's. The blocking
 * calls pass the calling thread's owner. Constructors live with their kinds (reentrant.c,
 * src/fairlock, src/rwlock) and composites (src/multilock). */
#include "dlock/lock.h"
#include "dlock_int.h"
#include "dlock_object.h"
#include "lock_class.h"

/* Every public call but dlock_lock_name and dlock_lock_free starts here: a freed handle
 * takes no more calls (its callbacks may still be running with it). */
static int check_lock(const dlock_lock *l) {
    if (!l)
        return dlock__fail(DLOCK_EINVAL, "lock is NULL");
    return l->cls->check ? l->cls->check(l) : DLOCK_OK;
}

static int check_lease(int64_t lease_ms) {
    if ((lease_ms <= 0 && lease_ms != DLOCK_WATCHDOG) || lease_ms > DLOCK_MAX_TIME_MS)
        return dlock__fail(DLOCK_EINVAL,
                           "lease_ms must be from 1 to DLOCK_MAX_TIME_MS, or DLOCK_WATCHDOG");
    return DLOCK_OK;
}

static int check_out(const void *out) {
    return out ? DLOCK_OK : dlock__fail(DLOCK_EINVAL, "out is NULL");
}

/* The async face's own arguments, and a class that has that face. */
static int check_async(const dlock_lock *l, uint64_t owner, dlock_lock_cb cb, bool has_face) {
    if (owner == 0 || !cb)
        return dlock__fail(DLOCK_EINVAL, "%s", owner == 0 ? "owner is 0" : "cb is NULL");
    if (!has_face)
        return dlock__fail(DLOCK_EINVAL, "%s %s has no async face", l->cls->what, l->name);
    return DLOCK_OK;
}

void dlock_lock_free(dlock_lock *l) {
    if (l)
        l->cls->free(l);
}

const char *dlock_lock_name(const dlock_lock *l) {
    return l ? l->name : NULL;
}

int dlock_lock_try_acquire(dlock_lock *l, int64_t wait_ms, int64_t lease_ms) {
    int rc;
    if ((rc = check_lock(l)) || (rc = dlock__check_wait_ms(wait_ms)) ||
        (rc = check_lease(lease_ms)))
        return rc;
    return l->cls->try_acquire(l, dlock_thread_owner(), wait_ms, lease_ms);
}

int dlock_lock_acquire(dlock_lock *l, int64_t lease_ms) {
    return dlock_lock_try_acquire(l, DLOCK_FOREVER, lease_ms);
}

int dlock_lock_release(dlock_lock *l) {
    int rc = check_lock(l);
    return rc ? rc : l->cls->release(l, dlock_thread_owner());
}

int dlock_lock_force_release(dlock_lock *l, bool *was_locked) {
    int rc = check_lock(l);
    return rc ? rc : l->cls->force_release(l, was_locked);
}

int dlock_lock_is_locked(dlock_lock *l, bool *out) {
    int rc;
    if ((rc = check_lock(l)) || (rc = check_out(out)))
        return rc;
    return l->cls->is_locked(l, out);
}

int dlock_lock_is_held(dlock_lock *l, bool *out) {
    int rc;
    if ((rc = check_lock(l)) || (rc = check_out(out)))
        return rc;
    return l->cls->is_held(l, dlock_thread_owner(), out);
}

int dlock_lock_hold_count(dlock_lock *l, int64_t *out) {
    int rc;
    if ((rc = check_lock(l)) || (rc = check_out(out)))
        return rc;
    return l->cls->hold_count(l, dlock_thread_owner(), out);
}

int dlock_lock_ttl(dlock_lock *l, int64_t *out_ms) {
    int rc;
    if ((rc = check_lock(l)) || (rc = check_out(out_ms)))
        return rc;
    return l->cls->ttl(l, dlock_thread_owner(), out_ms);
}

int dlock_lock_token_of(dlock_lock *l, uint64_t owner, uint64_t *out) {
    int rc;
    if ((rc = check_lock(l)) || (rc = check_out(out)))
        return rc;
    return l->cls->token_of(l, owner, out);
}

int dlock_lock_token(dlock_lock *l, uint64_t *out) {
    return dlock_lock_token_of(l, dlock_thread_owner(), out);
}

int dlock_lock_on_lost(dlock_lock *l, dlock_lost_cb cb, void *arg) {
    int rc = check_lock(l);
    return rc ? rc : l->cls->on_lost(l, cb, arg);
}

int dlock_lock_acquire_async(dlock_lock *l, uint64_t owner, int64_t wait_ms, int64_t lease_ms,
                             dlock_lock_cb cb, void *arg) {
    int rc;
    if ((rc = check_lock(l)) || (rc = dlock__check_wait_ms(wait_ms)) ||
        (rc = check_lease(lease_ms)) ||
        (rc = check_async(l, owner, cb, l->cls->acquire_async != NULL)))
        return rc;
    return l->cls->acquire_async(l, owner, wait_ms, lease_ms, cb, arg);
}

int dlock_lock_release_async(dlock_lock *l, uint64_t owner, dlock_lock_cb cb, void *arg) {
    int rc;
    if ((rc = check_lock(l)) || (rc = check_async(l, owner, cb, l->cls->release_async != NULL)))
        return rc;
    return l->cls->release_async(l, owner, cb, arg);
}

/* A composite holds through its members, which carry their own bound. */
int dlock_lock_set_max_hold(dlock_lock *l, int64_t max_hold_ms) {
    int rc = check_lock(l);
    if (rc)
        return rc;
    if (max_hold_ms < DLOCK_MAX_HOLD_CLIENT || max_hold_ms > DLOCK_MAX_TIME_MS)
        return dlock__fail(DLOCK_EINVAL, "max_hold_ms must be from 0 to DLOCK_MAX_TIME_MS, or "
                                         "DLOCK_MAX_HOLD_CLIENT");
    if (!l->cls->set_max_hold)
        return dlock__fail(DLOCK_EINVAL, "%s %s is bounded through its members: set theirs",
                           l->cls->what, l->name);
    return l->cls->set_max_hold(l, max_hold_ms);
}
