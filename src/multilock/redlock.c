/* redlock.c — RedLock (the Redis "distlock" algorithm, Redisson RedissonRedLock): a lock
 * held when a majority of independent masters granted it in time.
 *
 * An acquisition is a series of rounds. A round sends one call to every member at once
 * through the members' async face and waits, on the caller's thread, for the answers: no
 * longer than an answer budget much shorter than the lease, and no longer than it takes
 * to know the outcome. Members may answer after the caller stopped waiting; what such a
 * late answer does depends on what became of its round:
 *   - a won round: a late yes joins the holding (if an acquisition still lacks that
 *     member), or gives itself back;
 *   - a lost round: the caller already sent a release after every member that had not
 *     answered (a member lock sends one owner's calls one after another, so that release
 *     runs after the acquire, whatever it did): the answer needs nothing;
 *   - a release of the composite covers the members of the owner's rounds still open in
 *     the same way, and waits for them like for the others.
 * With fenced members a won round goes on with a second round that raises the members'
 * token counters to the composite's token (docs/multilock.md, "Fencing tokens across
 * masters"). */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "composite.h"
#include "dlock/lock.h"
#include "dlock_int.h"
#include "lock/lock_kind.h"

/* What a round asks of every member. */
enum round_kind {
    ROUND_ACQUIRE, /* one attempt with the lease */
    ROUND_RELEASE, /* one hold back */
    ROUND_RAISE,   /* fenced: the token counter up to the composite's token (the floor) */
};

/* One round; its fields are under cp->mu. */
struct round {
    round *next_open; /* in cp->open_rounds while a member of an acquire round is to answer */
    bool open;
    pthread_cond_t cond; /* an answer came */
    composite *cp;       /* referenced: it outlives the round */
    uint64_t owner;
    enum round_kind kind;
    size_t answered, yes, no;
    int *status;      /* per member; 1 = no answer yet */
    bool *handed;     /* per member: a release already follows its acquire */
    uint64_t *tokens; /* acquire, fenced members: the token each yes got */
    bool closed;      /* decided: a later answer is late */
    bool kept;        /* decided won: a late yes may join the holding */
    int refs;         /* the caller's, and one per member call not answered */
};

typedef struct member_call {
    round *r;
    size_t index;
} member_call;

static void ignore_answer(dlock_lock *l, int status, void *arg) {
    (void)l;
    (void)status;
    (void)arg;
}

/* cp->mu held: r leaves the open rounds once every member answered. */
static void round_settle(round *r) {
    if (!r->open || r->answered < r->cp->n)
        return;
    round **link = &r->cp->open_rounds;
    while (*link != r)
        link = &(*link)->next_open;
    *link = r->next_open;
    r->open = false;
}

/* Drops one reference of r, cp->mu held, and unlocks it: the last one frees r and drops
 * the round's reference of its composite. */
static void round_unref_unlock(round *r) {
    composite *cp = r->cp;
    if (--r->refs > 0) {
        pthread_mutex_unlock(&cp->mu);
        return;
    }
    pthread_cond_destroy(&r->cond);
    dlock__free(r->status);
    dlock__free(r->handed);
    dlock__free(r->tokens);
    dlock__free(r);
    dlock__composite_unref_unlock(cp);
}

static void on_member_answer(dlock_lock *l, int status, void *arg) {
    member_call *call = arg;
    round *r = call->r;
    size_t i = call->index;
    dlock__free(call);
    composite *cp = r->cp;
    uint64_t owner = r->owner;
    uint64_t token = 0;
    if (r->kind == ROUND_ACQUIRE && status == DLOCK_OK && dlock__lock_fenced(l))
        dlock_lock_token_of(l, owner, &token); /* on l's loop thread: read at once */
    pthread_mutex_lock(&cp->mu);
    r->status[i] = status;
    r->tokens[i] = token;
    r->answered++;
    if (status == DLOCK_OK)
        r->yes++;
    else
        r->no++;
    /* a yes after the round was decided, that no release follows yet: it joins the won
     * round's holding, or goes back */
    bool give_back = r->kind == ROUND_ACQUIRE && status == DLOCK_OK && r->closed && !r->handed[i] &&
                     !(r->kept && !cp->dead && dlock__holding_add_member(cp, owner, i));
    round_settle(r);
    pthread_cond_broadcast(&r->cond);
    round_unref_unlock(r);
    if (give_back)
        dlock_lock_release_async(l, owner, ignore_answer, NULL);
}

/* Sends kind's call (an acquire: one attempt with lease_ms; a raise: to floor) to every
 * member where which[i] (NULL: all) at once. Returns the round with the caller's
 * reference (round_wait, then round_end), or NULL when out of memory. */
static round *round_start(composite *cp, uint64_t owner, const bool *which, enum round_kind kind,
                          int64_t lease_ms, uint64_t floor) {
    round *r = dlock__calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->status = dlock__calloc(cp->n, sizeof(*r->status));
    r->handed = dlock__calloc(cp->n, sizeof(*r->handed));
    r->tokens = dlock__calloc(cp->n, sizeof(*r->tokens));
    if (!r->status || !r->handed || !r->tokens) {
        dlock__free(r->status);
        dlock__free(r->handed);
        dlock__free(r->tokens);
        dlock__free(r);
        return NULL;
    }
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); /* as dlock__now_ms */
    pthread_cond_init(&r->cond, &attr);
    pthread_condattr_destroy(&attr);
    r->cp = cp;
    r->owner = owner;
    r->kind = kind;
    r->refs = 1;
    pthread_mutex_lock(&cp->mu);
    cp->refs++;
    /* the members not asked are answered before anything is sent */
    for (size_t i = 0; i < cp->n; i++) {
        r->status[i] = which && !which[i] ? DLOCK_ENOTOWNER : 1;
        if (r->status[i] != 1)
            r->answered++;
    }
    if (kind == ROUND_ACQUIRE) {
        r->open = true;
        r->next_open = cp->open_rounds;
        cp->open_rounds = r;
    }
    pthread_mutex_unlock(&cp->mu);
    for (size_t i = 0; i < cp->n; i++) {
        pthread_mutex_lock(&cp->mu);
        bool ask = r->status[i] == 1;
        if (ask)
            r->refs++;
        pthread_mutex_unlock(&cp->mu);
        if (!ask)
            continue;
        member_call *call = dlock__malloc(sizeof(*call));
        int rc = DLOCK_ENOMEM;
        if (call) {
            call->r = r;
            call->index = i;
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
            if (rc != DLOCK_OK)
                dlock__free(call);
        }
        if (rc != DLOCK_OK) { /* refused at once (a closed client): counts as an answer */
            pthread_mutex_lock(&cp->mu);
            r->status[i] = rc;
            r->answered++;
            r->no++;
            r->refs--; /* the call's: the caller's keeps r */
            pthread_mutex_unlock(&cp->mu);
        }
    }
    pthread_mutex_lock(&cp->mu);
    round_settle(r);
    pthread_mutex_unlock(&cp->mu);
    return r;
}

/* Waits for r's answers until the monotonic until_ms; an acquire or raise round stops as
 * soon as its outcome is known (a quorum said yes, or too many said no). Silent members
 * count as no. */
static void round_wait(round *r, int64_t until_ms) {
    composite *cp = r->cp;
    struct timespec until = {.tv_sec = until_ms / 1000, .tv_nsec = (until_ms % 1000) * 1000000};
    pthread_mutex_lock(&cp->mu);
    while (r->answered < cp->n) {
        if (r->kind != ROUND_RELEASE && (r->yes >= cp->quorum || r->no > cp->n - cp->quorum))
            break;
        if (pthread_cond_timedwait(&r->cond, &cp->mu, &until) != 0)
            break; /* ETIMEDOUT */
    }
    pthread_mutex_unlock(&cp->mu);
}

/* The caller is done with r: later answers are late. */
static void round_end(round *r) {
    pthread_mutex_lock(&r->cp->mu);
    r->closed = true;
    round_unref_unlock(r);
}

int64_t dlock__redlock_lease(const composite *cp, int64_t lease_ms) {
    if (lease_ms != DLOCK_WATCHDOG)
        return lease_ms;
    return dlock__client_watchdog_ms(dlock__lock_client(cp->members[0]));
}

int64_t dlock__redlock_drift_ms(int64_t lease_ms) {
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
    bool *taken;     /* per member: said yes */
    bool *give_back; /* per member: to release after a lost round (said yes, may have
                        taken it, or has not answered) */
    size_t yes;
    int64_t validity; /* lease - time since the start - drift, at the decision */
    uint64_t token;   /* fenced: the largest token of the members that said yes */
    int error;        /* a member's error other than "busy", if any (kept across rounds) */
    int rc;           /* recording a won round */
} outcome;

/* Decides an acquire round, in one critical section with the members' answers: won when
 * a quorum said yes and the validity is still positive. A won round is recorded in the
 * owner's holding at once, so that every later yes can join it; after a lost round every
 * member that has not answered is handed to the release the caller sends next. Ends the
 * caller's use of r. Returns whether the round was won (and recorded). */
static bool round_decide(round *r, int64_t lease, int64_t start, outcome *o) {
    composite *cp = r->cp;
    pthread_mutex_lock(&cp->mu);
    r->closed = true;
    o->yes = 0;
    o->token = 0;
    for (size_t i = 0; i < cp->n; i++) {
        int st = r->status[i];
        o->taken[i] = st == DLOCK_OK;
        o->yes += o->taken[i];
        if (o->taken[i] && r->tokens[i] > o->token)
            o->token = r->tokens[i];
        if (st < 0 && st != DLOCK_ETIMEDOUT && st != DLOCK_ENOTOWNER)
            o->error = st;
    }
    o->validity = lease - (dlock__now_ms() - start) - dlock__redlock_drift_ms(lease);
    bool won = o->yes >= cp->quorum && o->validity > 0;
    o->rc = won ? dlock__holding_add(cp, r->owner, o->taken, lease) : DLOCK_OK;
    won = won && o->rc == DLOCK_OK;
    r->kept = won;
    for (size_t i = 0; i < cp->n; i++) {
        int st = r->status[i];
        o->give_back[i] = !won && (st == DLOCK_OK || st == DLOCK_ECONN || st == 1);
        if (o->give_back[i] && st == 1)
            r->handed[i] = true;
    }
    round_unref_unlock(r);
    return won;
}

/* Fenced members: a won round's token is the largest its members gave, and it is made a
 * floor for whoever comes next. Each member is raised to it while this owner still holds
 * it; once a quorum has been raised, any later holder's quorum shares a raised member, and
 * the token that member gives it (by INCR, after this owner's hold) is larger: tokens rise
 * from holder to holder even when their quorums differ, which the members' own counters
 * alone do not ensure. Returns how many members confirmed; o->validity is updated. */
static size_t fence_round(composite *cp, uint64_t owner, int64_t lease, int64_t start, outcome *o) {
    round *r = round_start(cp, owner, o->taken, ROUND_RAISE, 0, o->token);
    size_t confirmed = 0;
    if (r) {
        round_wait(r, dlock__now_ms() + answer_budget(lease));
        pthread_mutex_lock(&cp->mu);
        confirmed = r->yes;
        pthread_mutex_unlock(&cp->mu);
        round_end(r);
    }
    o->validity = lease - (dlock__now_ms() - start) - dlock__redlock_drift_ms(lease);
    return confirmed;
}

/* A release to every member in which[], not waited for. */
static void send_releases(composite *cp, uint64_t owner, const bool *which) {
    for (size_t i = 0; i < cp->n; i++)
        if (which[i])
            dlock_lock_release_async(cp->members[i], owner, ignore_answer, NULL);
}

/* A release to every member in which[], as a round the caller waits for and ends. NULL when
 * which[] is empty, or when out of memory: then the releases went out unwaited. */
static round *release_round(composite *cp, uint64_t owner, const bool *which) {
    bool any = false;
    for (size_t i = 0; i < cp->n; i++)
        any |= which[i];
    round *r = any ? round_start(cp, owner, which, ROUND_RELEASE, 0, 0) : NULL;
    if (any && !r)
        send_releases(cp, owner, which);
    return r;
}

/* After a lost round: a release to every member in which[]. Between rounds they go out and
 * the next round starts (an owner's calls reach each member in order). The last time,
 * wait_ms > 0, the releases of the members that said yes are waited for (they answer
 * quickly), so that an application that frees its clients on DLOCK_ETIMEDOUT does not
 * cancel them and leave a member held until its lease ends; those of members that did not
 * answer (a master down or paused) are not, or the wait would grow by a budget. */
static void give_back(composite *cp, uint64_t owner, const bool *which, const bool *said_yes,
                      int64_t wait_ms) {
    bool wait_for[cp->n], unwaited[cp->n];
    for (size_t i = 0; i < cp->n; i++) {
        wait_for[i] = wait_ms > 0 && which[i] && said_yes[i];
        unwaited[i] = which[i] && !wait_for[i];
    }
    send_releases(cp, owner, unwaited);
    round *r = release_round(cp, owner, wait_for);
    if (r) {
        round_wait(r, dlock__now_ms() + wait_ms);
        round_end(r);
    }
}

static void pause_with_jitter(int64_t deadline) {
    /* a random pause, so that competing clients do not keep splitting the vote */
    uint64_t jitter;
    dlock__random_bytes(&jitter, sizeof(jitter));
    int64_t pause = 10 + (int64_t)(jitter % 190);
    int64_t left = deadline - dlock__now_ms();
    if (pause > left)
        pause = left;
    if (pause <= 0)
        return;
    struct timespec ts = {.tv_sec = pause / 1000, .tv_nsec = (pause % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

int dlock__redlock_try_acquire(void *self, uint64_t owner, int64_t wait_ms, int64_t lease_ms) {
    composite *cp = self;
    int refused = dlock__composite_refuse_on_loop(cp);
    if (refused != DLOCK_OK)
        return refused;
    int64_t lease = dlock__redlock_lease(cp, lease_ms);
    int64_t deadline = dlock__deadline_ms(wait_ms);
    bool taken[cp->n], to_give_back[cp->n];
    outcome o = {.taken = taken, .give_back = to_give_back, .error = DLOCK_ETIMEDOUT};
    for (;;) {
        int64_t start = dlock__now_ms();
        round *r = round_start(cp, owner, NULL, ROUND_ACQUIRE, lease_ms, 0);
        if (!r)
            return dlock__fail(DLOCK_ENOMEM, "out of memory");
        round_wait(r, start + answer_budget(lease));
        bool won = round_decide(r, lease, start, &o);
        bool unfenced = false; /* won, but the token not confirmed by a quorum in time */
        size_t confirmed = 0;
        if (won && cp->fenced) {
            confirmed = fence_round(cp, owner, lease, start, &o);
            if (confirmed >= cp->quorum && o.validity > 0) {
                pthread_mutex_lock(&cp->mu);
                dlock__holding_set_token(cp, owner, o.token);
                pthread_mutex_unlock(&cp->mu);
            } else {
                /* this acquisition goes back whole, its late joiners too */
                dlock__redlock_release(cp, owner);
                won = false;
                unfenced = true;
            }
        }
        if (won)
            return DLOCK_OK;
        bool last = o.rc != DLOCK_OK || dlock__now_ms() >= deadline;
        if (!unfenced)
            give_back(cp, owner, to_give_back, taken, last ? answer_budget(lease) : 0);
        if (o.rc != DLOCK_OK)
            return dlock__fail(o.rc, "redlock: %s", dlock_strerror(o.rc));
        if (last) {
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
        pause_with_jitter(deadline);
    }
}

/* Releases one hold of every member the owner holds through the composite, all at once,
 * and every member of the owner's open rounds that has not answered yet (its release runs
 * after its acquire). A member that fails to answer (its master down) keeps its hold until
 * its lease ends. */
int dlock__redlock_release(void *self, uint64_t owner) {
    composite *cp = self;
    int refused = dlock__composite_refuse_on_loop(cp);
    if (refused != DLOCK_OK)
        return refused;
    bool held[cp->n], pending[cp->n], lost;
    size_t count = 0, pending_count = 0;
    pthread_mutex_lock(&cp->mu);
    dlock__holding_release(cp, owner, held, &lost);
    memset(pending, 0, sizeof(pending));
    for (round *r = cp->open_rounds; r; r = r->next_open) {
        if (r->owner != owner)
            continue;
        for (size_t i = 0; i < cp->n; i++) {
            if (r->status[i] == 1 && !r->handed[i] && !pending[i]) {
                r->handed[i] = true;
                pending[i] = true;
                pending_count++;
            }
        }
    }
    pthread_mutex_unlock(&cp->mu);
    for (size_t i = 0; i < cp->n; i++)
        count += held[i];
    if (count == 0 && pending_count == 0)
        return lost ? dlock__fail(DLOCK_ELOST, "redlock: lost while held")
                    : dlock__fail(DLOCK_ENOTOWNER, "redlock: not held by this owner");
    int64_t until = dlock__now_ms() + 2 * answer_budget(dlock__redlock_lease(cp, DLOCK_WATCHDOG));
    round *r = release_round(cp, owner, held);
    /* the not yet answered: their answer (ENOTOWNER when the acquire found it busy) is
     * waited for, not counted */
    round *extra = release_round(cp, owner, pending);
    if (count && !r) {
        if (extra)
            round_end(extra);
        return dlock__fail(DLOCK_ENOMEM, "out of memory: the releases went out unwaited");
    }
    if (r)
        round_wait(r, until);
    if (extra)
        round_wait(extra, until);
    int rc = DLOCK_OK;
    size_t failed = 0;
    if (r) {
        pthread_mutex_lock(&cp->mu);
        for (size_t i = 0; i < cp->n; i++) {
            if (held[i] && r->status[i] < 0 && rc == DLOCK_OK) {
                rc = r->status[i];
                failed = i;
            }
        }
        pthread_mutex_unlock(&cp->mu);
        round_end(r);
    }
    if (extra)
        round_end(extra);
    if (rc != DLOCK_OK)
        dlock__fail(rc, "redlock: member %zu (%s) said %s on release", failed,
                    dlock_lock_name(cp->members[failed]), dlock_err_name(rc));
    if (lost)
        return dlock__fail(DLOCK_ELOST, "redlock: fewer than a quorum were still held");
    if (count == 0)
        return dlock__fail(DLOCK_ENOTOWNER, "redlock: not held by this owner");
    return rc;
}
