/* multilock.c — the composite locks: MultiLock (Redisson RedissonMultiLock) and RedLock
 * (the Redis "distlock" algorithm, Redisson RedissonRedLock).
 *
 * No Redis data of their own: each member is an ordinary lock, possibly on another client
 * and so another Redis. A composite is a dlock_lock handle whose calls lock.c hands to the
 * class below (lock_kind.h). The calls run on the caller's thread and drive the members
 * through the public API: MultiLock one member after another (the blocking face), RedLock
 * all members at once (their async face, the caller waiting for the answers).
 *
 * Per owner, a composite remembers which members it holds, so a member's loss can be
 * reported as the composite's: for a MultiLock any member lost, for a RedLock fewer than
 * a quorum left. Members' lost callbacks arrive on their clients' loop threads, so that
 * bookkeeping is under a mutex. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlock/lock.h"
#include "dlock/multilock.h"
#include "dlock_int.h"
#include "lock/lock_kind.h"

typedef struct holding {
    struct holding *next;
    uint64_t owner;
    bool *held;      /* which members this owner holds through the composite */
    size_t held_count;
    int depth;       /* acquisitions not yet released (the members are reentrant) */
    bool lost_fired; /* the composite's lost callback ran for this holding */
} holding;

typedef struct composite {
    dlock_lock *handle; /* the composite's own handle, for its lost callback */
    bool redlock;
    size_t n;
    size_t quorum; /* RedLock: n/2 + 1; MultiLock: n */
    dlock_lock **members;
    pthread_mutex_t mu; /* holdings: members' lost callbacks come from their loop threads */
    holding *holdings;
} composite;

/* ---- holdings --------------------------------------------------------------------------- */

static holding *holding_get(composite *cp, uint64_t owner) {
    for (holding *h = cp->holdings; h; h = h->next)
        if (h->owner == owner)
            return h;
    holding *h = dlock__calloc(1, sizeof(*h));
    if (!h || !(h->held = dlock__calloc(cp->n, sizeof(bool)))) {
        dlock__free(h);
        return NULL;
    }
    h->owner = owner;
    h->next = cp->holdings;
    cp->holdings = h;
    return h;
}

/* An acquire succeeded: owner holds members[i] where held[i]. */
static int holding_add(composite *cp, uint64_t owner, const bool *held) {
    pthread_mutex_lock(&cp->mu);
    holding *h = holding_get(cp, owner);
    if (h) {
        h->held_count = 0;
        for (size_t i = 0; i < cp->n; i++) {
            h->held[i] = held[i];
            h->held_count += held[i];
        }
        h->depth++;
        h->lost_fired = false;
    }
    pthread_mutex_unlock(&cp->mu);
    return h ? DLOCK_OK : dlock__fail(DLOCK_ENOMEM, "out of memory");
}

/* A release: after the last one, owner holds nothing through the composite. The held
 * members and whether the composite was lost are copied out for the caller. */
static void holding_release(composite *cp, uint64_t owner, bool *held, bool *lost) {
    pthread_mutex_lock(&cp->mu);
    holding *h = NULL;
    for (holding *x = cp->holdings; x; x = x->next)
        if (x->owner == owner)
            h = x;
    for (size_t i = 0; i < cp->n; i++)
        held[i] = h && h->held[i];
    *lost = h && h->lost_fired;
    if (h && h->depth > 0 && --h->depth == 0) {
        memset(h->held, 0, cp->n * sizeof(bool));
        h->held_count = 0;
        h->lost_fired = false;
    }
    pthread_mutex_unlock(&cp->mu);
}

/* A member's lost callback: the composite is lost once it holds fewer than its quorum. */
static void member_lost(dlock_lock *member, uint64_t owner, int reason, void *arg) {
    composite *cp = arg;
    bool fire = false;
    pthread_mutex_lock(&cp->mu);
    for (holding *h = cp->holdings; h; h = h->next) {
        if (h->owner != owner)
            continue;
        for (size_t i = 0; i < cp->n; i++) {
            if (cp->members[i] == member && h->held[i]) {
                h->held[i] = false;
                h->held_count--;
            }
        }
        if (h->held_count < cp->quorum && !h->lost_fired) {
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
static int refuse_on_loop(const composite *cp) {
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
    int refused = refuse_on_loop(cp);
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
    return holding_add(cp, owner, all);
}

static int multi_release(void *self, uint64_t owner) {
    composite *cp = self;
    int refused = refuse_on_loop(cp);
    if (refused != DLOCK_OK)
        return refused;
    bool held[cp->n], lost;
    holding_release(cp, owner, held, &lost);
    int rc = release_members(cp, cp->n, NULL); /* every member, past failures */
    if (lost && rc == DLOCK_OK)
        return dlock__fail(DLOCK_ELOST, "multilock: a member was lost while held");
    return rc;
}

/* ---- RedLock ---------------------------------------------------------------------------- */

/* One round of RedLock: the members' async answers, shared with their callbacks (which
 * may come after the caller stopped waiting: the last of caller and callbacks frees it). */
typedef struct round {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    composite *cp;
    uint64_t owner;
    size_t answered;
    int *status;    /* per member; 1 = no answer yet */
    bool abandoned; /* the caller stopped waiting: late acquisitions release themselves */
    bool releasing; /* a round of releases: a late answer needs nothing done */
    int refs;
} round;

static void round_unref(round *r) {
    pthread_mutex_lock(&r->mu);
    bool last = --r->refs == 0;
    pthread_mutex_unlock(&r->mu);
    if (last) {
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cond);
        dlock__free(r->status);
        dlock__free(r);
    }
}

typedef struct member_call {
    round *r;
    size_t index;
} member_call;

static void release_done(dlock_lock *l, int status, void *arg) {
    (void)l;
    (void)status;
    (void)arg;
}

static void on_member_answer(dlock_lock *l, int status, void *arg) {
    member_call *call = arg;
    round *r = call->r;
    pthread_mutex_lock(&r->mu);
    r->status[call->index] = status;
    r->answered++;
    bool release_late = r->abandoned && !r->releasing && status == DLOCK_OK;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->mu);
    if (release_late) /* too late to count: give it back */
        dlock_lock_release_async(l, r->owner, release_done, NULL);
    dlock__free(call);
    round_unref(r);
}


/* Sends an acquire (one attempt, lease_ms) — or, with release, a release — to every member
 * where which[i] (NULL: all) at once, and waits for the answers until answer_ms have
 * passed. The round is returned with the caller's reference; members that did not answer
 * yet may still answer later (and an acquisition that comes after the caller gave up on
 * the round gives itself back). */
static round *round_run(composite *cp, uint64_t owner, const bool *which, bool release,
                        int64_t lease_ms, int64_t answer_ms) {
    round *r = dlock__calloc(1, sizeof(*r));
    if (!r || !(r->status = dlock__calloc(cp->n, sizeof(int)))) {
        dlock__free(r);
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cond, &attr);
    pthread_condattr_destroy(&attr);
    r->cp = cp;
    r->owner = owner;
    r->releasing = release;
    r->refs = 1;
    for (size_t i = 0; i < cp->n; i++) {
        r->status[i] = 1;
        if (which && !which[i]) {
            r->status[i] = DLOCK_ENOTOWNER; /* not asked */
            r->answered++;
            continue;
        }
        member_call *call = dlock__malloc(sizeof(*call));
        int rc = DLOCK_ENOMEM;
        if (call) {
            call->r = r;
            call->index = i;
            pthread_mutex_lock(&r->mu);
            r->refs++;
            pthread_mutex_unlock(&r->mu);
            rc = release ? dlock_lock_release_async(cp->members[i], owner, on_member_answer, call)
                         : dlock_lock_acquire_async(cp->members[i], owner, 0, lease_ms,
                                                    on_member_answer, call);
            if (rc != DLOCK_OK) {
                dlock__free(call);
                pthread_mutex_lock(&r->mu);
                r->refs--;
                pthread_mutex_unlock(&r->mu);
            }
        }
        if (rc != DLOCK_OK) { /* refused at once (a closed client): counts as an answer */
            pthread_mutex_lock(&r->mu);
            r->status[i] = rc;
            r->answered++;
            pthread_mutex_unlock(&r->mu);
        }
    }
    /* the condition variable runs on CLOCK_MONOTONIC, as dlock__now_ms */
    int64_t until_ms = dlock__now_ms() + answer_ms;
    struct timespec until = {.tv_sec = until_ms / 1000, .tv_nsec = (until_ms % 1000) * 1000000};
    pthread_mutex_lock(&r->mu);
    while (r->answered < cp->n) {
        if (pthread_cond_timedwait(&r->cond, &r->mu, &until) != 0)
            break; /* ETIMEDOUT: the silent members count as no */
    }
    pthread_mutex_unlock(&r->mu);
    return r;
}

/* Gives back what the round took and lets late acquisitions give themselves back. */
static void round_undo(round *r) {
    composite *cp = r->cp;
    pthread_mutex_lock(&r->mu);
    r->abandoned = true;
    bool taken[cp->n];
    for (size_t i = 0; i < cp->n; i++)
        taken[i] = r->status[i] == DLOCK_OK;
    pthread_mutex_unlock(&r->mu);
    for (size_t i = 0; i < cp->n; i++)
        if (taken[i])
            dlock_lock_release_async(cp->members[i], r->owner, release_done, NULL);
}

static int64_t redlock_lease(const composite *cp, int64_t lease_ms) {
    if (lease_ms != DLOCK_WATCHDOG)
        return lease_ms;
    return dlock__client_watchdog_ms(dlock__lock_client(cp->members[0]));
}

/* How long a member may take to answer: much less than the lease, so that a slow or
 * paused master cannot eat the validity (or the caller's wait). */
static int64_t answer_budget(int64_t lease_ms) {
    int64_t ms = lease_ms / 10;
    return ms < 50 ? 50 : ms > 1000 ? 1000 : ms;
}

static int redlock_try_acquire(void *self, uint64_t owner, int64_t wait_ms, int64_t lease_ms) {
    composite *cp = self;
    int refused = refuse_on_loop(cp);
    if (refused != DLOCK_OK)
        return refused;
    int64_t lease = redlock_lease(cp, lease_ms);
    int64_t drift = lease / 100 + 2;
    int64_t deadline = dlock__deadline_ms(wait_ms);
    int last_error = DLOCK_ETIMEDOUT;
    for (;;) {
        int64_t start = dlock__now_ms();
        round *r = round_run(cp, owner, NULL, false, lease_ms, answer_budget(lease));
        if (!r)
            return dlock__fail(DLOCK_ENOMEM, "out of memory");
        size_t got = 0;
        bool held[cp->n];
        pthread_mutex_lock(&r->mu);
        for (size_t i = 0; i < cp->n; i++) {
            held[i] = r->status[i] == DLOCK_OK;
            got += held[i];
            if (r->status[i] < 0 && r->status[i] != DLOCK_ETIMEDOUT)
                last_error = r->status[i];
        }
        pthread_mutex_unlock(&r->mu);
        int64_t validity = lease - (dlock__now_ms() - start) - drift;
        if (got >= cp->quorum && validity > 0) {
            pthread_mutex_lock(&r->mu);
            r->abandoned = true; /* members answering from now on are not counted */
            pthread_mutex_unlock(&r->mu);
            round_unref(r);
            return holding_add(cp, owner, held);
        }
        round_undo(r);
        round_unref(r);
        int64_t now = dlock__now_ms();
        if (now >= deadline) {
            if (last_error == DLOCK_ETIMEDOUT)
                return dlock__fail(DLOCK_ETIMEDOUT,
                                   "redlock: %zu of %zu members, %zu needed, validity %lld ms",
                                   got, cp->n, cp->quorum, (long long)validity);
            return dlock__fail(last_error, "redlock: no quorum; a member said %s",
                               dlock_err_name(last_error));
        }
        /* a random pause, so that competing clients do not keep splitting the vote */
        uint64_t jitter;
        dlock__random_bytes(&jitter, sizeof(jitter));
        int64_t pause = 10 + (int64_t)(jitter % 190);
        if (pause > deadline - now)
            pause = deadline - now;
        struct timespec ts = {.tv_sec = pause / 1000, .tv_nsec = (pause % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
}

/* Releases every member the owner holds through the composite. A member that failed to
 * answer (its master down) keeps its hold until its lease ends. */
static int redlock_release(void *self, uint64_t owner) {
    composite *cp = self;
    int refused = refuse_on_loop(cp);
    if (refused != DLOCK_OK)
        return refused;
    bool held[cp->n], lost;
    holding_release(cp, owner, held, &lost);
    size_t count = 0;
    for (size_t i = 0; i < cp->n; i++)
        count += held[i];
    if (count == 0)
        return lost ? dlock__fail(DLOCK_ELOST, "redlock: lost while held")
                    : dlock__fail(DLOCK_ENOTOWNER, "redlock: not held by this owner");
    /* all at once, and not waiting long for a master that does not answer */
    int rc = DLOCK_OK;
    round *r = round_run(cp, owner, held, true, 0,
                         2 * answer_budget(redlock_lease(cp, DLOCK_WATCHDOG)));
    if (!r)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    pthread_mutex_lock(&r->mu);
    r->abandoned = true;
    for (size_t i = 0; i < cp->n; i++)
        if (held[i] && r->status[i] < 0 && rc == DLOCK_OK)
            rc = r->status[i];
    pthread_mutex_unlock(&r->mu);
    round_unref(r);
    if (rc != DLOCK_OK)
        dlock__fail(rc, "redlock: a member's release said %s", dlock_err_name(rc));
    if (lost)
        return dlock__fail(DLOCK_ELOST, "redlock: fewer than a quorum were still held");
    return rc;
}

/* ---- both: the queries ------------------------------------------------------------------ */

static int all_locked(void *self, bool *out) {
    composite *cp = self;
    int refused = refuse_on_loop(cp);
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
    int refused = refuse_on_loop(cp);
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

static int least_holds(void *self, uint64_t owner, int64_t *out) {
    (void)owner;
    composite *cp = self;
    int refused = refuse_on_loop(cp);
    if (refused != DLOCK_OK)
        return refused;
    int64_t least = INT64_MAX;
    for (size_t i = 0; i < cp->n; i++) {
        int64_t v = 0;
        int rc = dlock_lock_hold_count(cp->members[i], &v);
        if (rc != DLOCK_OK)
            return rc;
        if (v < least)
            least = v;
    }
    *out = least;
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
    (void)owner;
    composite *cp = self;
    int refused = refuse_on_loop(cp);
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
        v -= redlock_lease(cp, DLOCK_WATCHDOG) / 100 + 2;
        if (v <= 0)
            v = -2; /* no validity left */
    }
    *out = v;
    return DLOCK_OK;
}

static int largest_token(void *self, uint64_t owner, uint64_t *out) {
    composite *cp = self;
    int refused = refuse_on_loop(cp);
    if (refused != DLOCK_OK)
        return refused;
    uint64_t best = 0;
    bool any = false, fenced = false;
    for (size_t i = 0; i < cp->n; i++) {
        uint64_t t;
        int rc = dlock_lock_token_of(cp->members[i], owner, &t);
        if (rc == DLOCK_EINVAL)
            continue; /* not a fenced member */
        fenced = true;
        if (rc == DLOCK_OK && (!any || t > best)) {
            best = t;
            any = true;
        }
    }
    if (!fenced)
        return dlock__fail(DLOCK_EINVAL, "no member is a fenced lock");
    if (!any)
        return dlock__fail(DLOCK_ENOTOWNER, "this owner never acquired the members");
    *out = best;
    return DLOCK_OK;
}

static int force_all(void *self, bool *was_locked) {
    composite *cp = self;
    int refused = refuse_on_loop(cp);
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

static void composite_free(void *self) {
    composite *cp = self;
    for (size_t i = 0; i < cp->n; i++)
        dlock_lock_on_lost(cp->members[i], NULL, NULL);
    while (cp->holdings) {
        holding *h = cp->holdings;
        cp->holdings = h->next;
        dlock__free(h->held);
        dlock__free(h);
    }
    pthread_mutex_destroy(&cp->mu);
    dlock__free(cp->members);
    dlock__free(cp);
}

static const dlock__composite_class multilock_class = {
    .try_acquire = multi_try_acquire,
    .release = multi_release,
    .force_release = force_all,
    .is_locked = all_locked,
    .is_held = all_held,
    .hold_count = least_holds,
    .ttl = composite_ttl,
    .token_of = largest_token,
    .free = composite_free,
};

static const dlock__composite_class redlock_class = {
    .try_acquire = redlock_try_acquire,
    .release = redlock_release,
    .force_release = force_all,
    .is_locked = all_locked,
    .is_held = all_held,
    .hold_count = least_holds,
    .ttl = composite_ttl,
    .token_of = largest_token,
    .free = composite_free,
};

/* ---- creation --------------------------------------------------------------------------- */

/* The canonical order: by client id, then name. Every MultiLock over overlapping members
 * takes them in the same order, so none waits for a member another holds while that one
 * waits for a member it holds. */
static int canonical_order(const void *a, const void *b) {
    dlock_lock *x = *(dlock_lock *const *)a, *y = *(dlock_lock *const *)b;
    int c = strcmp(dlock_client_id(dlock__lock_client(x)), dlock_client_id(dlock__lock_client(y)));
    return c ? c : strcmp(dlock_lock_name(x), dlock_lock_name(y));
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
    composite *cp = dlock__calloc(1, sizeof(*cp));
    if (!cp || !(cp->members = dlock__malloc(n * sizeof(*cp->members)))) {
        dlock__free(cp);
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    }
    memcpy(cp->members, locks, n * sizeof(*locks));
    cp->n = n;
    cp->redlock = redlock;
    cp->quorum = redlock ? n / 2 + 1 : n;
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
