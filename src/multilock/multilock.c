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
    int *holds;        /* per member: holds taken through the composite, not yet released */
    size_t held_count; /* members with holds */
    int depth;         /* acquisitions not yet released */
    int64_t lease_ms;  /* the latest acquisition's lease (a RedLock's validity) */
    uint64_t token;    /* fenced members: the latest acquisition's token */
    bool has_token;
    bool lost_fired; /* the composite's lost callback ran for this holding */
} holding;

typedef struct composite {
    dlock_lock *handle; /* the composite's own handle, for its lost callback */
    bool redlock;
    size_t n;
    size_t quorum; /* RedLock: n/2 + 1; MultiLock: n */
    bool fenced;   /* some member is a fenced lock (for a RedLock: every member) */
    dlock_lock **members;
    pthread_mutex_t mu; /* holdings: members' lost callbacks come from their loop threads */
    holding *holdings;
} composite;

static void unclaim(dlock_lock *const *locks, size_t n);

/* ---- holdings --------------------------------------------------------------------------- */

static holding *holding_find(composite *cp, uint64_t owner) {
    for (holding *h = cp->holdings; h; h = h->next)
        if (h->owner == owner)
            return h;
    return NULL;
}

static holding *holding_get(composite *cp, uint64_t owner) {
    holding *h = holding_find(cp, owner);
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

/* An acquire succeeded: owner took a hold on members[i] where taken[i]. */
static int holding_add(composite *cp, uint64_t owner, const bool *taken, int64_t lease_ms) {
    pthread_mutex_lock(&cp->mu);
    holding *h = holding_get(cp, owner);
    if (h) {
        for (size_t i = 0; i < cp->n; i++)
            if (taken[i] && h->holds[i]++ == 0)
                h->held_count++;
        if (h->depth++ == 0)
            h->lost_fired = false;
        h->lease_ms = lease_ms;
    }
    pthread_mutex_unlock(&cp->mu);
    return h ? DLOCK_OK : dlock__fail(DLOCK_ENOMEM, "out of memory");
}

/* A member that said yes after its round already succeeded: one more hold of the
 * composite, if it still lacks one. Each acquisition not yet released accounts for at
 * most one hold of each member, so a member never keeps more holds than the owner has
 * releases to come: not when the holding was released meanwhile (depth 0), nor when a
 * release went by while this answer was on its way. */
static bool holding_add_member(composite *cp, uint64_t owner, size_t i) {
    pthread_mutex_lock(&cp->mu);
    holding *h = holding_find(cp, owner);
    bool added = h && h->holds[i] < h->depth;
    if (added && h->holds[i]++ == 0)
        h->held_count++;
    pthread_mutex_unlock(&cp->mu);
    return added;
}

/* The token of the owner's acquisition just recorded. */
static void holding_set_token(composite *cp, uint64_t owner, uint64_t token) {
    pthread_mutex_lock(&cp->mu);
    holding *h = holding_find(cp, owner);
    if (h) {
        h->token = token;
        h->has_token = true;
    }
    pthread_mutex_unlock(&cp->mu);
}

/* A release gives back one hold of every member owner holds through the composite (each
 * member's holds go back as often as they were taken, whichever acquisition took them).
 * which[i] says which members to release; lost, whether the composite was lost. */
static void holding_release(composite *cp, uint64_t owner, bool *which, bool *lost) {
    pthread_mutex_lock(&cp->mu);
    holding *h = holding_find(cp, owner);
    for (size_t i = 0; i < cp->n; i++) {
        which[i] = h && h->holds[i] > 0;
        if (which[i] && --h->holds[i] == 0)
            h->held_count--;
    }
    *lost = h && h->lost_fired;
    if (h && h->depth > 0 && --h->depth == 0)
        h->lost_fired = false;
    pthread_mutex_unlock(&cp->mu);
}

/* A member's lost callback: the composite is lost once it holds fewer than its quorum. */
static void member_lost(dlock_lock *member, uint64_t owner, int reason, void *arg) {
    composite *cp = arg;
    bool fire = false;
    pthread_mutex_lock(&cp->mu);
    holding *h = holding_find(cp, owner);
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
    int rc = holding_add(cp, owner, all, lease_ms);
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
        holding_set_token(cp, owner, token);
    }
    return rc;
}

static int multi_release(void *self, uint64_t owner) {
    composite *cp = self;
    int refused = refuse_on_loop(cp);
    if (refused != DLOCK_OK)
        return refused;
    bool held[cp->n], lost;
    holding_release(cp, owner, held, &lost);
    /* every member, past failures: a member whose hold was lost then reports it (and
     * forgets it), and one the owner does not hold says ENOTOWNER */
    int rc = release_members(cp, cp->n, NULL);
    if (lost && rc == DLOCK_OK)
        return dlock__fail(DLOCK_ELOST, "multilock: a member was lost while held");
    return rc;
}

/* ---- RedLock ---------------------------------------------------------------------------- */

/* What a round asks of every member. */
enum round_kind {
    ROUND_ACQUIRE, /* one attempt with the lease */
    ROUND_RELEASE, /* one hold back */
    ROUND_RAISE,   /* fenced: the token counter up to the composite's token (the floor) */
};

/* One round of RedLock: the members' async answers, shared with their callbacks (which
 * may come after the caller stopped waiting: the last of caller and callbacks frees it). */
typedef struct round {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    composite *cp;
    uint64_t owner;
    enum round_kind kind;
    size_t answered, yes, no;
    int *status;      /* per member; 1 = no answer yet */
    uint64_t *tokens; /* acquire, fenced members: the token each yes got */
    bool closed;      /* the caller took its snapshot: late acquisitions release themselves... */
    bool kept;        /* ...unless the round succeeded: then they join the holding */
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
        dlock__free(r->tokens);
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
    uint64_t token = 0;
    if (r->kind == ROUND_ACQUIRE && status == DLOCK_OK && dlock__lock_fenced(l))
        dlock_lock_token_of(l, r->owner, &token); /* on l's loop thread: read at once */
    pthread_mutex_lock(&r->mu);
    r->status[call->index] = status;
    r->tokens[call->index] = token;
    r->answered++;
    if (status == DLOCK_OK)
        r->yes++;
    else
        r->no++;
    bool late = r->closed && r->kind == ROUND_ACQUIRE && status == DLOCK_OK;
    bool keep = late && r->kept;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->mu);
    /* the lock is held: one more member holds it, released with the others; or too late
     * to count (or the lock was released meanwhile): give it back */
    if (late && !(keep && holding_add_member(r->cp, r->owner, call->index)))
        dlock_lock_release_async(l, r->owner, release_done, NULL);
    dlock__free(call);
    round_unref(r);
}

/* Sends kind's call (an acquire: one attempt with lease_ms; a raise: to floor) to every
 * member where which[i] (NULL: all) at once, and waits for the answers until answer_ms
 * have passed; an acquire or raise round stops waiting as soon as its outcome is known (a
 * quorum said yes, or too many said no). The round comes back with the caller's
 * reference; members may still answer later. */
static round *round_run(composite *cp, uint64_t owner, const bool *which, enum round_kind kind,
                        int64_t lease_ms, uint64_t floor, int64_t answer_ms) {
    round *r = dlock__calloc(1, sizeof(*r));
    if (!r || !(r->status = dlock__calloc(cp->n, sizeof(int))) ||
        !(r->tokens = dlock__calloc(cp->n, sizeof(uint64_t)))) {
        if (r)
            dlock__free(r->status);
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
    r->kind = kind;
    r->refs = 1;
    /* the members not asked are answered before anything is sent: no callback races */
    for (size_t i = 0; i < cp->n; i++) {
        r->status[i] = which && !which[i] ? DLOCK_ENOTOWNER : 1;
        if (r->status[i] != 1)
            r->answered++;
    }
    for (size_t i = 0; i < cp->n; i++) {
        if (r->status[i] != 1)
            continue;
        member_call *call = dlock__malloc(sizeof(*call));
        int rc = DLOCK_ENOMEM;
        if (call) {
            call->r = r;
            call->index = i;
            pthread_mutex_lock(&r->mu);
            r->refs++;
            pthread_mutex_unlock(&r->mu);
            dlock_lock *m = cp->members[i];
            switch (kind) {
            case ROUND_ACQUIRE:
                rc = dlock_lock_acquire_async(m, owner, 0, lease_ms, on_member_answer, call);
                break;
            case ROUND_RELEASE:
                rc = dlock_lock_release_async(m, owner, on_member_answer, call);
                break;
            case ROUND_RAISE:
                rc = dlock__lock_raise_token_async(m, owner, floor, on_member_answer, call);
                break;
            }
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
            r->no++;
            pthread_mutex_unlock(&r->mu);
        }
    }
    /* the condition variable runs on CLOCK_MONOTONIC, as dlock__now_ms */
    int64_t until_ms = dlock__now_ms() + answer_ms;
    struct timespec until = {.tv_sec = until_ms / 1000, .tv_nsec = (until_ms % 1000) * 1000000};
    pthread_mutex_lock(&r->mu);
    while (r->answered < cp->n) {
        if (kind != ROUND_RELEASE && (r->yes >= cp->quorum || r->no > cp->n - cp->quorum))
            break; /* the outcome is known */
        if (pthread_cond_timedwait(&r->cond, &r->mu, &until) != 0)
            break; /* ETIMEDOUT: the silent members count as no */
    }
    pthread_mutex_unlock(&r->mu);
    return r;
}

static int64_t redlock_lease(const composite *cp, int64_t lease_ms) {
    if (lease_ms != DLOCK_WATCHDOG)
        return lease_ms;
    return dlock__client_watchdog_ms(dlock__lock_client(cp->members[0]));
}

static int64_t drift_ms(int64_t lease_ms) {
    return lease_ms / 100 + 2;
}

/* How long a member may take to answer: much less than the lease, so that a slow or
 * paused master cannot eat the validity (or the caller's wait). */
static int64_t answer_budget(int64_t lease_ms) {
    int64_t ms = lease_ms / 10;
    return ms < 50 ? 50 : ms > 1000 ? 1000 : ms;
}

/* What an acquire round came to. */
typedef struct outcome {
    bool *taken;  /* per member: said yes */
    bool *unsure; /* per member: failed in a way that may have taken it (connection) */
    size_t yes;
    int64_t validity; /* lease - time since the start - drift, at the decision */
    uint64_t token;   /* fenced: the largest token of the members that said yes */
    int error;        /* a member's error other than "busy", if any (kept across rounds) */
    int rc;           /* recording a won round */
} outcome;

/* Ends an acquire round and decides it, in one critical section with the members'
 * answers: won when a quorum said yes and the validity is still positive. A won round is
 * recorded in the owner's holding at once, so that every later yes joins it; after a
 * lost round a later yes gives itself back. Returns whether the round was won. */
static bool round_decide(round *r, int64_t lease, int64_t start, outcome *o) {
    composite *cp = r->cp;
    pthread_mutex_lock(&r->mu);
    r->closed = true;
    o->yes = 0;
    o->token = 0;
    for (size_t i = 0; i < cp->n; i++) {
        int st = r->status[i];
        o->taken[i] = st == DLOCK_OK;
        o->unsure[i] = st == DLOCK_ECONN;
        o->yes += o->taken[i];
        if (o->taken[i] && r->tokens[i] > o->token)
            o->token = r->tokens[i];
        if (st < 0 && st != DLOCK_ETIMEDOUT && st != DLOCK_ENOTOWNER)
            o->error = st;
    }
    o->validity = lease - (dlock__now_ms() - start) - drift_ms(lease);
    bool won = o->yes >= cp->quorum && o->validity > 0;
    if (won) {
        o->rc = holding_add(cp, r->owner, o->taken, lease);
        r->kept = o->rc == DLOCK_OK;
    }
    pthread_mutex_unlock(&r->mu);
    return won && o->rc == DLOCK_OK;
}

/* Fenced members: a won round's token is the largest its members gave, and it is made a
 * floor for whoever comes next. Each member is raised to it while this owner still holds
 * it; once a quorum has been raised, any later holder's quorum shares a raised member, and
 * the token that member gives it (by INCR, after this owner's hold) is larger: tokens rise
 * from holder to holder even when their quorums differ, which the members' own counters
 * alone do not ensure. Returns how many members confirmed; o->validity is updated. */
static size_t fence_round(composite *cp, uint64_t owner, int64_t lease, int64_t start, outcome *o) {
    round *r = round_run(cp, owner, o->taken, ROUND_RAISE, 0, o->token, answer_budget(lease));
    size_t confirmed = 0;
    if (r) {
        pthread_mutex_lock(&r->mu);
        r->closed = true;
        confirmed = r->yes;
        pthread_mutex_unlock(&r->mu);
        round_unref(r);
    }
    o->validity = lease - (dlock__now_ms() - start) - drift_ms(lease);
    return confirmed;
}

static int redlock_release(void *self, uint64_t owner);

static int redlock_try_acquire(void *self, uint64_t owner, int64_t wait_ms, int64_t lease_ms) {
    composite *cp = self;
    int refused = refuse_on_loop(cp);
    if (refused != DLOCK_OK)
        return refused;
    int64_t lease = redlock_lease(cp, lease_ms);
    int64_t deadline = dlock__deadline_ms(wait_ms);
    bool taken[cp->n], unsure[cp->n];
    outcome o = {.taken = taken, .unsure = unsure, .error = DLOCK_ETIMEDOUT};
    for (;;) {
        int64_t start = dlock__now_ms();
        round *r = round_run(cp, owner, NULL, ROUND_ACQUIRE, lease_ms, 0, answer_budget(lease));
        if (!r)
            return dlock__fail(DLOCK_ENOMEM, "out of memory");
        o.rc = DLOCK_OK;
        bool won = round_decide(r, lease, start, &o);
        round_unref(r);
        bool unfenced = false; /* won, but the token not confirmed by a quorum in time */
        size_t confirmed = 0;
        if (won && cp->fenced) {
            confirmed = fence_round(cp, owner, lease, start, &o);
            if (confirmed >= cp->quorum && o.validity > 0) {
                holding_set_token(cp, owner, o.token);
            } else {
                /* this acquisition goes back whole, its late joiners too: one hold of
                 * every member held through the composite */
                redlock_release(cp, owner);
                won = false;
                unfenced = true;
            }
        }
        if (won)
            return DLOCK_OK;
        if (!unfenced) {
            /* give back every member that took it, or may have (not the ones that said no) */
            for (size_t i = 0; i < cp->n; i++)
                if (taken[i] || unsure[i])
                    dlock_lock_release_async(cp->members[i], owner, release_done, NULL);
        }
        if (o.rc != DLOCK_OK)
            return dlock__fail(o.rc, "redlock: %s", dlock_strerror(o.rc));
        int64_t now = dlock__now_ms();
        if (now >= deadline) {
            if (unfenced)
                return dlock__fail(DLOCK_ETIMEDOUT,
                                   "redlock: the token was confirmed by %zu of %zu members, %zu "
                                   "needed, validity %lld ms",
                                   confirmed, cp->n, cp->quorum, (long long)o.validity);
            if (o.error == DLOCK_ETIMEDOUT)
                return dlock__fail(DLOCK_ETIMEDOUT,
                                   "redlock: %zu of %zu members, %zu needed, validity %lld ms",
                                   o.yes, cp->n, cp->quorum, (long long)o.validity);
            return dlock__fail(o.error, "redlock: no quorum; a member said %s",
                               dlock_err_name(o.error));
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

/* Releases one hold of every member the owner holds through the composite, all at once. A
 * member that fails to answer (its master down) keeps its hold until its lease ends. */
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
    int rc = DLOCK_OK;
    round *r = round_run(cp, owner, held, ROUND_RELEASE, 0, 0,
                         2 * answer_budget(redlock_lease(cp, DLOCK_WATCHDOG)));
    if (!r)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    pthread_mutex_lock(&r->mu);
    r->closed = true;
    size_t failed = 0;
    for (size_t i = 0; i < cp->n; i++) {
        if (held[i] && r->status[i] < 0 && rc == DLOCK_OK) {
            rc = r->status[i];
            failed = i;
        }
    }
    pthread_mutex_unlock(&r->mu);
    round_unref(r);
    if (rc != DLOCK_OK)
        dlock__fail(rc, "redlock: member %zu (%s) said %s on release", failed,
                    dlock_lock_name(cp->members[failed]), dlock_err_name(rc));
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

/* The owner's acquisitions of the composite not yet released. */
static int composite_holds(void *self, uint64_t owner, int64_t *out) {
    composite *cp = self;
    pthread_mutex_lock(&cp->mu);
    holding *h = holding_find(cp, owner);
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
        pthread_mutex_lock(&cp->mu);
        holding *h = holding_find(cp, owner);
        int64_t lease = h && h->depth > 0 ? h->lease_ms : redlock_lease(cp, DLOCK_WATCHDOG);
        pthread_mutex_unlock(&cp->mu);
        v -= drift_ms(lease);
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
    holding *h = holding_find(cp, owner);
    bool has = h && h->has_token;
    if (has)
        *out = h->token;
    pthread_mutex_unlock(&cp->mu);
    return has ? DLOCK_OK : dlock__fail(DLOCK_ENOTOWNER, "this owner never acquired the lock");
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
    unclaim(cp->members, cp->n);
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
    .try_acquire = redlock_try_acquire,
    .release = redlock_release,
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
