/* multilock.c — the composite locks' handle and MultiLock (Redisson RedissonMultiLock);
 * RedLock's acquire and release are in redlock.c.
 *
 * No Redis data of their own: each member is an ordinary lock, possibly on another client
 * and so another Redis. A composite is a dlock_lock handle whose calls lock.c hands to the
 * classes below (lock_kind.h). The calls run on the caller's thread and drive the members
 * through the public API: MultiLock one member after another (the blocking face), RedLock
 * all members at once (their async face, the caller waiting for the answers).
 *
 * Per owner, a composite remembers which members it holds (composite.h), so a member's
 * loss can be reported as the composite's: for a MultiLock any member lost, for a RedLock
 * fewer than a quorum left. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "composite.h"
#include "dlock/lock.h"
#include "dlock/multilock.h"
#include "dlock_int.h"
#include "lock/lock_kind.h"

static void unclaim(dlock_lock *const *locks, size_t n);

/* ---- holdings (cp->mu held) ------------------------------------------------------------ */

holding *dlock__holding_find(composite *cp, uint64_t owner) {
    for (holding *h = cp->holdings; h; h = h->next)
        if (h->owner == owner)
            return h;
    return NULL;
}

static holding *holding_get(composite *cp, uint64_t owner) {
    holding *h = dlock__holding_find(cp, owner);
    if (h)
        return h;
    h = dlock__calloc(1, sizeof(*h));
    if (!h || !(h->holds = dlock__calloc(cp->n, sizeof(int)))) {
        dlock__free(h);
        return NULL;
    }
    h->owner = owner;
    h->next = cp->holdings;
    cp->holdings = h;
    return h;
}

int dlock__holding_add(composite *cp, uint64_t owner, const bool *taken, int64_t lease_ms) {
    holding *h = holding_get(cp, owner);
    if (!h)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    for (size_t i = 0; i < cp->n; i++)
        if (taken[i] && h->holds[i]++ == 0)
            h->held_count++;
    if (h->depth++ == 0)
        h->lost_fired = false;
    h->lease_ms = lease_ms;
    return DLOCK_OK;
}

/* Each acquisition not yet released accounts for at most one hold of each member, so a
 * member never keeps more holds than the owner has releases to come: not when the holding
 * was released meanwhile (depth 0), nor when a release went by while this answer was on
 * its way. */
bool dlock__holding_add_member(composite *cp, uint64_t owner, size_t i) {
    holding *h = dlock__holding_find(cp, owner);
    bool added = h && h->holds[i] < h->depth;
    if (added && h->holds[i]++ == 0)
        h->held_count++;
    return added;
}

void dlock__holding_set_token(composite *cp, uint64_t owner, uint64_t token) {
    holding *h = dlock__holding_find(cp, owner);
    if (h) {
        h->token = token;
        h->has_token = true;
    }
}

/* Each member's holds go back as often as they were taken, whichever acquisition took
 * them. */
void dlock__holding_release(composite *cp, uint64_t owner, bool *which, bool *lost) {
    holding *h = dlock__holding_find(cp, owner);
    for (size_t i = 0; i < cp->n; i++) {
        which[i] = h && h->holds[i] > 0;
        if (which[i] && --h->holds[i] == 0)
            h->held_count--;
    }
    *lost = h && h->lost_fired;
    if (h && h->depth > 0 && --h->depth == 0)
        h->lost_fired = false;
}

/* A member's lost callback: the composite is lost once it holds fewer than its quorum. */
static void member_lost(dlock_lock *member, uint64_t owner, int reason, void *arg) {
    composite *cp = arg;
    bool fire = false;
    pthread_mutex_lock(&cp->mu);
    holding *h = dlock__holding_find(cp, owner);
    if (h) {
        for (size_t i = 0; i < cp->n; i++) {
            if (cp->members[i] == member && h->holds[i] > 0) {
                h->holds[i] = 0;
                h->held_count--;
            }
        }
        if (h->depth > 0 && h->held_count < cp->quorum && !h->lost_fired) {
            h->lost_fired = true;
            fire = true;
        }
    }
    pthread_mutex_unlock(&cp->mu);
    if (fire)
        dlock__lock_fire_lost(cp->handle, owner, reason);
}

/* A composite's calls wait on the caller's thread for its members' clients: on one of
 * those clients' loop threads that would wait for itself. */
int dlock__composite_refuse_on_loop(const composite *cp) {
    for (size_t i = 0; i < cp->n; i++)
        if (dlock__on_loop_thread(dlock__lock_client(cp->members[i])))
            return dlock__fail(DLOCK_EDEADLK, "composite lock called on a member's loop thread");
    return DLOCK_OK;
}

/* ---- MultiLock -------------------------------------------------------------------------- */

/* Releases members[0..count) in reverse, continuing past failures; the first error. */
static int release_members(composite *cp, size_t count, const bool *which) {
    int first = DLOCK_OK;
    for (size_t i = count; i-- > 0;) {
        if (which && !which[i])
            continue;
        int rc = dlock_lock_release(cp->members[i]);
        if (rc != DLOCK_OK && first == DLOCK_OK)
            first = rc;
    }
    return first;
}

static int multi_try_acquire(void *self, uint64_t owner, int64_t wait_ms, int64_t lease_ms) {
    composite *cp = self;
    int refused = dlock__composite_refuse_on_loop(cp);
    if (refused != DLOCK_OK)
        return refused;
    int64_t deadline = dlock__deadline_ms(wait_ms);
    for (size_t i = 0; i < cp->n; i++) {
        int64_t left = DLOCK_FOREVER;
        if (wait_ms >= 0) {
            left = deadline - dlock__now_ms();
            if (left < 0)
                left = 0;
        }
        /* under the watchdog while the others are taken: none expires meanwhile */
        int rc = dlock_lock_try_acquire(cp->members[i], left, DLOCK_WATCHDOG);
        if (rc != DLOCK_OK) {
            char why[200];
            snprintf(why, sizeof(why), "%s", dlock_last_error());
            release_members(cp, i, NULL);
            return dlock__fail(rc, "member %s: %s", dlock_lock_name(cp->members[i]), why);
        }
    }
    if (lease_ms != DLOCK_WATCHDOG) {
        for (size_t i = 0; i < cp->n; i++) {
            int rc = dlock__lock_set_lease(cp->members[i], owner, lease_ms);
            if (rc != DLOCK_OK) {
                char why[200];
                snprintf(why, sizeof(why), "%s", dlock_last_error());
                release_members(cp, cp->n, NULL);
                return dlock__fail(rc, "member %s: %s", dlock_lock_name(cp->members[i]), why);
            }
        }
    }
    bool all[cp->n];
    for (size_t i = 0; i < cp->n; i++)
        all[i] = true;
    pthread_mutex_lock(&cp->mu);
    int rc = dlock__holding_add(cp, owner, all, lease_ms);
    pthread_mutex_unlock(&cp->mu);
    if (rc == DLOCK_OK && cp->fenced) {
        /* every member is held by every holder, so the largest of the members' tokens
         * rises from one holder to the next with each member's own */
        uint64_t token = 0;
        for (size_t i = 0; i < cp->n; i++) {
            uint64_t t = 0;
            if (dlock__lock_fenced(cp->members[i]) &&
                dlock_lock_token_of(cp->members[i], owner, &t) == DLOCK_OK && t > token)
                token = t;
        }
        pthread_mutex_lock(&cp->mu);
        dlock__holding_set_token(cp, owner, token);
        pthread_mutex_unlock(&cp->mu);
    }
    return rc;
}

static int multi_release(void *self, uint64_t owner) {
    composite *cp = self;
    int refused = dlock__composite_refuse_on_loop(cp);
    if (refused != DLOCK_OK)
        return refused;
    bool held[cp->n], lost;
    pthread_mutex_lock(&cp->mu);
    dlock__holding_release(cp, owner, held, &lost);
    pthread_mutex_unlock(&cp->mu);
    /* every member, past failures: a member whose hold was lost then reports it (and
     * forgets it), and one the owner does not hold says ENOTOWNER */
    int rc = release_members(cp, cp->n, NULL);
    if (lost && rc == DLOCK_OK)
        return dlock__fail(DLOCK_ELOST, "multilock: a member was lost while held");
    return rc;
}

/* ---- both: the queries ------------------------------------------------------------------ */

static int all_locked(void *self, bool *out) {
    composite *cp = self;
    int refused = dlock__composite_refuse_on_loop(cp);
    if (refused != DLOCK_OK)
        return refused;
    size_t locked = 0;
    for (size_t i = 0; i < cp->n; i++) {
        bool b = false;
        int rc = dlock_lock_is_locked(cp->members[i], &b);
        if (rc != DLOCK_OK && !cp->redlock)
            return rc;
        locked += rc == DLOCK_OK && b;
    }
    *out = locked >= cp->quorum;
    return DLOCK_OK;
}

static int all_held(void *self, uint64_t owner, bool *out) {
    (void)owner;
    composite *cp = self;
    int refused = dlock__composite_refuse_on_loop(cp);
    if (refused != DLOCK_OK)
        return refused;
    size_t held = 0;
    for (size_t i = 0; i < cp->n; i++) {
        bool b = false;
        int rc = dlock_lock_is_held(cp->members[i], &b);
        if (rc != DLOCK_OK && !cp->redlock)
            return rc;
        held += rc == DLOCK_OK && b;
    }
    *out = held >= cp->quorum;
    return DLOCK_OK;
}

/* The owner's acquisitions of the composite not yet released. */
static int composite_holds(void *self, uint64_t owner, int64_t *out) {
    composite *cp = self;
    pthread_mutex_lock(&cp->mu);
    holding *h = dlock__holding_find(cp, owner);
    *out = h ? h->depth : 0;
    pthread_mutex_unlock(&cp->mu);
    return DLOCK_OK;
}

static int cmp_desc(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* MultiLock: the shortest member TTL. RedLock: the validity, i.e. the quorum-th longest
 * member TTL (the time until fewer than a quorum hold) less the drift. -1 counts as for
 * ever; -2 when not held by enough members. */
static int composite_ttl(void *self, uint64_t owner, int64_t *out) {
    composite *cp = self;
    int refused = dlock__composite_refuse_on_loop(cp);
    if (refused != DLOCK_OK)
        return refused;
    int64_t ttl[cp->n];
    for (size_t i = 0; i < cp->n; i++) {
        int rc = dlock_lock_ttl(cp->members[i], &ttl[i]);
        if (rc != DLOCK_OK) {
            if (!cp->redlock)
                return rc;
            ttl[i] = -2;
        }
        if (ttl[i] == -1)
            ttl[i] = INT64_MAX;
    }
    qsort(ttl, cp->n, sizeof(ttl[0]), cmp_desc);
    int64_t v = ttl[cp->quorum - 1];
    if (v == INT64_MAX)
        v = -1;
    else if (v >= 0 && cp->redlock) {
        pthread_mutex_lock(&cp->mu);
        holding *h = dlock__holding_find(cp, owner);
        int64_t lease = h && h->depth > 0 ? h->lease_ms : dlock__redlock_lease(cp, DLOCK_WATCHDOG);
        pthread_mutex_unlock(&cp->mu);
        v -= dlock__redlock_drift_ms(lease);
        if (v <= 0)
            v = -2; /* no validity left */
    }
    *out = v;
    return DLOCK_OK;
}

/* The token of the owner's latest acquisition (recorded when it was taken). */
static int composite_token(void *self, uint64_t owner, uint64_t *out) {
    composite *cp = self;
    if (!cp->fenced)
        return dlock__fail(DLOCK_EINVAL, "no member is a fenced lock");
    pthread_mutex_lock(&cp->mu);
    holding *h = dlock__holding_find(cp, owner);
    bool has = h && h->has_token;
    if (has)
        *out = h->token;
    pthread_mutex_unlock(&cp->mu);
    return has ? DLOCK_OK : dlock__fail(DLOCK_ENOTOWNER, "this owner never acquired the lock");
}

static int force_all(void *self, bool *was_locked) {
    composite *cp = self;
    int refused = dlock__composite_refuse_on_loop(cp);
    if (refused != DLOCK_OK)
        return refused;
    bool any = false;
    int first = DLOCK_OK;
    for (size_t i = 0; i < cp->n; i++) {
        bool w = false;
        int rc = dlock_lock_force_release(cp->members[i], &w);
        if (rc != DLOCK_OK && first == DLOCK_OK)
            first = rc;
        any |= w;
    }
    if (was_locked)
        *was_locked = any;
    return first;
}

static void composite_destroy(composite *cp) {
    while (cp->holdings) {
        holding *h = cp->holdings;
        cp->holdings = h->next;
        dlock__free(h->holds);
        dlock__free(h);
    }
    pthread_mutex_destroy(&cp->mu);
    dlock__free(cp->members);
    dlock__free(cp);
}

void dlock__composite_unref_unlock(composite *cp) {
    bool last = --cp->refs == 0;
    pthread_mutex_unlock(&cp->mu);
    if (last)
        composite_destroy(cp);
}

/* The handle goes; RedLock rounds whose members are still to answer keep the rest until
 * they settle (their late answers give themselves back). */
static void composite_free(void *self) {
    composite *cp = self;
    for (size_t i = 0; i < cp->n; i++)
        dlock_lock_on_lost(cp->members[i], NULL, NULL);
    unclaim(cp->members, cp->n);
    pthread_mutex_lock(&cp->mu);
    cp->dead = true;
    dlock__composite_unref_unlock(cp);
}

static const dlock__composite_class multilock_class = {
    .try_acquire = multi_try_acquire,
    .release = multi_release,
    .force_release = force_all,
    .is_locked = all_locked,
    .is_held = all_held,
    .hold_count = composite_holds,
    .ttl = composite_ttl,
    .token_of = composite_token,
    .free = composite_free,
};

static const dlock__composite_class redlock_class = {
    .try_acquire = dlock__redlock_try_acquire,
    .release = dlock__redlock_release,
    .force_release = force_all,
    .is_locked = all_locked,
    .is_held = all_held,
    .hold_count = composite_holds,
    .ttl = composite_ttl,
    .token_of = composite_token,
    .free = composite_free,
};

/* ---- creation --------------------------------------------------------------------------- */

/* The canonical order: by name, then by the Redis server (and database) the member lives
 * on. It depends only on what the members are, not on which client or process holds the
 * handles, so every MultiLock over overlapping members, in every process, takes them in
 * the same order: none waits for a member another holds while that one waits for a
 * member it holds. */
static int canonical_order(const void *a, const void *b) {
    dlock_lock *x = *(dlock_lock *const *)a, *y = *(dlock_lock *const *)b;
    int c = strcmp(dlock_lock_name(x), dlock_lock_name(y));
    return c ? c
             : strcmp(dlock__client_endpoint(dlock__lock_client(x)),
                      dlock__client_endpoint(dlock__lock_client(y)));
}

static void unclaim(dlock_lock *const *locks, size_t n) {
    for (size_t i = 0; i < n; i++)
        dlock__lock_claim(locks[i], false);
}

static int composite_new(dlock_lock *const *locks, size_t n, bool redlock, dlock_lock **out) {
    if (!locks || n == 0 || !out)
        return dlock__fail(DLOCK_EINVAL, "%s", !out ? "out is NULL" : "no members");
    for (size_t i = 0; i < n; i++) {
        if (!locks[i])
            return dlock__fail(DLOCK_EINVAL, "member %zu is NULL", i);
        if (!dlock__lock_client(locks[i]))
            return dlock__fail(DLOCK_EINVAL, "member %zu is a composite", i);
        for (size_t j = 0; j < i; j++)
            if (locks[j] == locks[i])
                return dlock__fail(DLOCK_EINVAL, "member %zu is given twice", i);
    }
    /* RedLock's token rule needs a token from every member of every quorum */
    size_t fenced = 0;
    for (size_t i = 0; i < n; i++)
        fenced += dlock__lock_fenced(locks[i]);
    if (redlock && fenced != 0 && fenced != n)
        return dlock__fail(DLOCK_EINVAL, "redlock members must be all fenced locks or none");
    /* a member reports its loss through one composite: it can belong to only one */
    for (size_t i = 0; i < n; i++) {
        if (!dlock__lock_claim(locks[i], true)) {
            unclaim(locks, i);
            return dlock__fail(DLOCK_EINVAL, "member %zu belongs to another composite", i);
        }
    }
    composite *cp = dlock__calloc(1, sizeof(*cp));
    if (!cp || !(cp->members = dlock__malloc(n * sizeof(*cp->members)))) {
        dlock__free(cp);
        unclaim(locks, n);
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    }
    memcpy(cp->members, locks, n * sizeof(*locks));
    cp->n = n;
    cp->redlock = redlock;
    cp->quorum = redlock ? n / 2 + 1 : n;
    cp->fenced = fenced > 0;
    cp->refs = 1;
    pthread_mutex_init(&cp->mu, NULL);
    if (!redlock)
        qsort(cp->members, n, sizeof(*cp->members), canonical_order);
    char name[256];
    snprintf(name, sizeof(name), "%s(%s%s)", redlock ? "redlock" : "multilock",
             dlock_lock_name(locks[0]), n > 1 ? ",..." : "");
    int rc = dlock__lock_create_composite(name, redlock ? &redlock_class : &multilock_class, cp,
                                          &cp->handle);
    if (rc != DLOCK_OK) {
        pthread_mutex_destroy(&cp->mu);
        dlock__free(cp->members);
        dlock__free(cp);
        unclaim(locks, n);
        return rc;
    }
    for (size_t i = 0; i < n; i++)
        dlock_lock_on_lost(cp->members[i], member_lost, cp);
    *out = cp->handle;
    return DLOCK_OK;
}

int dlock_multilock_new(dlock_lock *const *locks, size_t n, dlock_lock **out) {
    return composite_new(locks, n, false, out);
}

int dlock_redlock_new(dlock_lock *const *locks, size_t n, dlock_lock **out) {
    return composite_new(locks, n, true, out);
}
