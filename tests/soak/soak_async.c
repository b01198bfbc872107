/* SPDX-License-Identifier: MIT */
/* soak_async.c - the async face of the soak: soak_cfg.agents agents on a libev loop the
 * soak runs itself (as an application would run its own), with a client made on it by
 * dlock_client_new_on_loop.
 *
 * An agent is a small state machine driven by dlock callbacks and ev timers: make the
 * handle, acquire_async, hold the section for 1-3 ms on a timer, release_async, free the
 * handle on the next turn, pause soak_cfg.pace_ms, next kind. It runs the same kinds on
 * the same name pools and marks as the blocking workers, so the two faces contend with
 * each other. Composites put their first member on the loop's client (their callbacks then
 * run here) and another on a blocking client, so members' answers cross loops.
 */
#include <ev.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock/adapters/libev.h"
#include "soak.h"

#define WAIT_MS 2000
#define FIXED_LEASE_MS 30000

typedef struct agent agent;
typedef void (*agent_step)(agent *a);

struct agent {
    int id;
    uint64_t owner;
    long n;
    enum soak_kind kind;
    enum soak_group group;
    int idx[2];
    dlock_lock *lock; /* a single lock, a read-write half or a composite */
    dlock_rwlock *rw;
    dlock_lock *members[3];
    size_t member_count;
    dlock_semaphore *sem;
    dlock_permits *permits;
    dlock_permit_id permit;
    dlock_latch *latch;
    ev_timer timer;
    agent_step after_timer;
    bool idle;
    char who[32];
};

static struct ev_loop *loop;
static ev_async wake; /* keeps the loop alive; its callback ends the loop when asked */
static pthread_t loop_thread;
static dlock_client *client;
static dlock_client *other_client;
static const dlock_options *client_opts;
static agent *agents;
static atomic_int agents_idle;
static atomic_bool finish_requested;
static atomic_int loop_state; /* 0 starting, 1 running, -1 failed */

static void start_op(agent *a);
static void cleanup_then_next(agent *a);

static void timer_fired(struct ev_loop *lp, ev_timer *t, int revents) {
    (void)lp;
    (void)revents;
    agent *a = t->data;
    a->after_timer(a);
}

static void after(agent *a, int64_t ms, agent_step step) {
    a->after_timer = step;
    ev_timer_set(&a->timer, (double)ms / 1000.0, 0.0);
    ev_timer_start(loop, &a->timer);
}

static void outcome(agent *a, int status, const char *what) {
    soak_outcome(a->kind, 1, status, what);
}

static void mark_enter(agent *a) {
    switch (a->kind) {
    case SOAK_READ:
        soak_mark_shared(a->group, a->idx[0], a->who);
        break;
    case SOAK_SEMAPHORE:
    case SOAK_PERMITS:
        soak_mark_counted(a->group, a->idx[0], a->who);
        break;
    case SOAK_MULTI:
        soak_mark_exclusive(GROUP_LOCK, a->idx[0], a->who);
        soak_mark_exclusive(GROUP_LOCK, a->idx[1], a->who);
        break;
    default:
        soak_mark_exclusive(a->group, a->idx[0], a->who);
        break;
    }
    if (a->kind == SOAK_FENCED) {
        uint64_t token = 0;
        int rc = dlock_lock_token_of(a->lock, a->owner, &token);
        outcome(a, rc, "token");
        if (rc == DLOCK_OK)
            soak_fenced_token(a->idx[0], token, a->who);
    }
}

static void mark_leave(agent *a) {
    switch (a->kind) {
    case SOAK_READ:
        soak_leave_shared(a->group, a->idx[0]);
        break;
    case SOAK_SEMAPHORE:
    case SOAK_PERMITS:
        soak_leave_counted(a->group, a->idx[0]);
        break;
    case SOAK_MULTI:
        soak_leave_exclusive(GROUP_LOCK, a->idx[1]);
        soak_leave_exclusive(GROUP_LOCK, a->idx[0]);
        break;
    default:
        soak_leave_exclusive(a->group, a->idx[0]);
        break;
    }
}

/* ---- the callbacks: every one moves on through a timer, never freeing inside it ----- */

static void released_lock(dlock_lock *l, int status, void *arg) {
    (void)l;
    agent *a = arg;
    outcome(a, status, "release");
    after(a, 0, cleanup_then_next);
}

static void released_sem(dlock_semaphore *s, int status, void *arg) {
    (void)s;
    agent *a = arg;
    outcome(a, status, "release");
    after(a, 0, cleanup_then_next);
}

static void released_permit(dlock_permits *p, int status, const dlock_permit_id *id, void *arg) {
    (void)p;
    (void)id;
    agent *a = arg;
    outcome(a, status, "release");
    after(a, 0, cleanup_then_next);
}

static void hold_done(agent *a) {
    mark_leave(a);
    int rc;
    if (a->sem)
        rc = dlock_semaphore_release_async(a->sem, 1, released_sem, a);
    else if (a->permits)
        rc = dlock_permits_release_async(a->permits, &a->permit, released_permit, a);
    else
        rc = dlock_lock_release_async(a->lock, a->owner, released_lock, a);
    if (rc != DLOCK_OK) {
        outcome(a, rc, "release");
        after(a, 0, cleanup_then_next);
    }
}

static void acquired(agent *a, int status) {
    outcome(a, status, "acquire");
    if (status != DLOCK_OK) {
        after(a, 0, cleanup_then_next);
        return;
    }
    mark_enter(a);
    after(a, 1 + soak_rand() % 3, hold_done);
}

static void acquired_lock(dlock_lock *l, int status, void *arg) {
    (void)l;
    acquired(arg, status);
}

static void acquired_sem(dlock_semaphore *s, int status, void *arg) {
    (void)s;
    acquired(arg, status);
}

static void acquired_permit(dlock_permits *p, int status, const dlock_permit_id *id, void *arg) {
    (void)p;
    agent *a = arg;
    if (status == DLOCK_OK)
        a->permit = *id;
    acquired(a, status);
}

static void latch_awaited(dlock_latch *l, int status, void *arg) {
    (void)l;
    agent *a = arg;
    /* Another holder may have set it again in between: then the await times out. */
    outcome(a, status, "await");
    after(a, 0, cleanup_then_next);
}

static void latch_counted_down(dlock_latch *l, int status, void *arg) {
    agent *a = arg;
    outcome(a, status, "count down");
    int rc = dlock_latch_await_async(l, 500, latch_awaited, a);
    if (rc != DLOCK_OK) {
        outcome(a, rc, "await");
        after(a, 0, cleanup_then_next);
    }
}

/* ---- making the handles and starting an operation ----------------------------------- */

static int make_lock(agent *a, const char *name) {
    int rc;
    switch (a->kind) {
    case SOAK_FENCED:
        rc = dlock_fencedlock_new(client, name, &a->lock);
        break;
    case SOAK_FAIR:
        rc = dlock_fairlock_new(client, name, &a->lock);
        break;
    case SOAK_SPIN:
        rc = dlock_spinlock_new(client, name, &a->lock);
        break;
    case SOAK_READ:
    case SOAK_WRITE:
        rc = dlock_rwlock_new(client, name, &a->rw);
        if (rc == DLOCK_OK)
            a->lock = a->kind == SOAK_READ ? dlock_rwlock_read(a->rw) : dlock_rwlock_write(a->rw);
        break;
    default:
        rc = dlock_lock_new(client, name, &a->lock);
        break;
    }
    return rc;
}

static int make_composite(agent *a) {
    static const char *const red_suffix[] = {":a", ":b", ":c"};
    a->member_count = a->kind == SOAK_MULTI ? 2 : 3;
    if (a->kind == SOAK_MULTI && a->idx[1] == a->idx[0])
        a->idx[1] = (a->idx[0] + 1) % soak_cfg.names;
    for (size_t i = 0; i < a->member_count; i++) {
        char name[64];
        if (a->kind == SOAK_MULTI)
            soak_name(name, GROUP_LOCK, a->idx[i], NULL);
        else
            soak_name(name, GROUP_RED, a->idx[0], red_suffix[i]);
        /* members[0] on the loop's client: the composite's callbacks then run here. */
        int rc = dlock_lock_new(i == 1 ? other_client : client, name, &a->members[i]);
        if (rc != DLOCK_OK)
            return rc;
    }
    return a->kind == SOAK_MULTI ? dlock_multilock_new(a->members, a->member_count, &a->lock)
                                 : dlock_redlock_new(a->members, a->member_count, &a->lock);
}

static int begin(agent *a) {
    static const enum soak_group group_of[SOAK_KINDS] = {
        [SOAK_LOCK] = GROUP_LOCK,
        [SOAK_FENCED] = GROUP_FENCED,
        [SOAK_FAIR] = GROUP_FAIR,
        [SOAK_SPIN] = GROUP_SPIN,
        [SOAK_READ] = GROUP_RW,
        [SOAK_WRITE] = GROUP_RW,
        [SOAK_SEMAPHORE] = GROUP_SEMAPHORE,
        [SOAK_PERMITS] = GROUP_PERMITS,
        [SOAK_LATCH] = GROUP_LATCH,
        [SOAK_MULTI] = GROUP_LOCK,
        [SOAK_RED] = GROUP_RED,
    };
    a->group = group_of[a->kind];
    char name[64];
    soak_name(name, a->group, a->idx[0], NULL);
    int64_t lease = (soak_rand() & 1) ? DLOCK_WATCHDOG : FIXED_LEASE_MS;
    int rc;
    switch (a->kind) {
    case SOAK_SEMAPHORE:
        rc = dlock_semaphore_new(client, name, &a->sem);
        return rc ? rc : dlock_semaphore_acquire_async(a->sem, 1, WAIT_MS, acquired_sem, a);
    case SOAK_PERMITS:
        rc = dlock_permits_new(client, name, &a->permits);
        return rc ? rc
                  : dlock_permits_acquire_async(a->permits, WAIT_MS, FIXED_LEASE_MS,
                                                acquired_permit, a);
    case SOAK_LATCH:
        rc = dlock_latch_new(client, name, &a->latch);
        return rc ? rc : dlock_latch_count_down_async(a->latch, latch_counted_down, a);
    case SOAK_MULTI:
    case SOAK_RED:
        rc = make_composite(a);
        break;
    default:
        rc = make_lock(a, name);
        break;
    }
    if (rc != DLOCK_OK)
        return rc;
    rc = dlock_lock_on_lost(a->lock, soak_on_lost, NULL);
    return rc ? rc : dlock_lock_acquire_async(a->lock, a->owner, WAIT_MS, lease, acquired_lock, a);
}

static void free_handles(agent *a) {
    if (a->rw)
        dlock_rwlock_free(a->rw);
    else
        dlock_lock_free(a->lock); /* a composite before its members */
    for (size_t i = 0; i < a->member_count; i++)
        dlock_lock_free(a->members[i]);
    dlock_semaphore_free(a->sem);
    dlock_permits_free(a->permits);
    dlock_latch_free(a->latch);
    a->lock = NULL;
    a->rw = NULL;
    memset(a->members, 0, sizeof a->members);
    a->member_count = 0;
    a->sem = NULL;
    a->permits = NULL;
    a->latch = NULL;
}

static void start_op(agent *a) {
    if (atomic_load(&soak_stopping)) {
        a->idle = true;
        atomic_fetch_add(&agents_idle, 1);
        return;
    }
    a->kind = soak_next_kind(&a->n);
    a->idx[0] = (int)(soak_rand() % (uint32_t)soak_cfg.names);
    a->idx[1] = (int)(soak_rand() % (uint32_t)soak_cfg.names);
    int rc = begin(a);
    if (rc != DLOCK_OK) {
        outcome(a, rc, "start");
        after(a, 0, cleanup_then_next);
    }
}

static void cleanup_then_next(agent *a) {
    free_handles(a);
    after(a, soak_cfg.pace_ms, start_op);
}

/* ---- the loop thread --------------------------------------------------------------- */

static void wake_cb(struct ev_loop *lp, ev_async *w, int revents) {
    (void)w;
    (void)revents;
    if (!atomic_load(&finish_requested))
        return;
    dlock_client_free(client);
    client = NULL;
    ev_async_stop(lp, &wake);
    ev_break(lp, EVBREAK_ALL);
}

static void *loop_main(void *arg) {
    (void)arg;
    loop = ev_loop_new(EVFLAG_AUTO);
    int rc = loop ? dlock_client_new_on_loop(client_opts, loop, &client) : DLOCK_ENOMEM;
    if (rc != DLOCK_OK) {
        fprintf(stderr, "soak: async client: %s\n", dlock_err_name(rc));
        atomic_store(&loop_state, -1);
        return NULL;
    }
    ev_async_init(&wake, wake_cb);
    ev_async_start(loop, &wake);
    for (int i = 0; i < soak_cfg.agents; i++) {
        agent *a = &agents[i];
        a->id = i;
        a->owner = (uint64_t)i + 1;
        a->n = i * 3;
        snprintf(a->who, sizeof a->who, "async agent %d", i);
        ev_timer_init(&a->timer, timer_fired, 0.0, 0.0);
        a->timer.data = a;
        after(a, 0, start_op);
    }
    atomic_store(&loop_state, 1);
    ev_run(loop, 0);
    ev_loop_destroy(loop);
    loop = NULL;
    return NULL;
}

int soak_async_start(const dlock_options *o, dlock_client *other) {
    client_opts = o;
    other_client = other;
    agents = calloc((size_t)soak_cfg.agents, sizeof *agents);
    if (!agents || pthread_create(&loop_thread, NULL, loop_main, NULL) != 0)
        return -1;
    while (atomic_load(&loop_state) == 0)
        soak_sleep_ms(10);
    if (atomic_load(&loop_state) < 0) {
        pthread_join(loop_thread, NULL);
        return -1;
    }
    return 0;
}

dlock_client *soak_async_client(void) {
    return client;
}

void soak_async_quiesce(void) {
    /* soak_stopping is set: each agent goes idle at its next start_op, after at most one
     * acquire wait, hold and release. */
    while (atomic_load(&agents_idle) < soak_cfg.agents)
        soak_sleep_ms(20);
}

void soak_async_finish(void) {
    atomic_store(&finish_requested, true);
    ev_async_send(loop, &wake);
    pthread_join(loop_thread, NULL);
    free(agents);
    agents = NULL;
}
