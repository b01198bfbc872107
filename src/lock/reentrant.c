/* SPDX-License-Identifier: MIT */
/* reentrant.c — the reentrant lock (Redisson RLock) and the fenced lock (RFencedLock): a
 * kind of lock on the lock engine (lock_engine.h), like the fair lock in src/fairlock.
 *
 * Redis layout (wire-compatible with Redisson, see REDIS_LAYOUT.md):
 *   N                              hash: "<client-id>:<owner>" -> hold count; PEXPIRE = lease
 *   redisson_lock__channel:{N}     channel; "0" is published when the lock is freed
 *   redisson_lock_token:{N}        fenced lock: string counter, INCR per acquisition, no TTL
 *   {N}:handoff_queue              dlock only: sorted set, the owner fields of waiting
 *                                  owners by the server's ms when they joined; PEXPIRE =
 *                                  HANDOFF_QUEUE_MS from the latest join
 *   {N}:handoff                    dlock only, a Cluster's: string, the owner field of the
 *                                  waiter the free lock is promised to; PEXPIRE =
 *                                  HANDOFF_MARKER_MS
 *   dlock_lock_turn__channel:{N}   dlock only: channel; a last release that hands the lock
 *                                  on publishes the grant there; a Cluster's last release
 *                                  the owner field of the waiter it names, just before "0"
 * Scripts beside this file: acquire.lua, release.lua, force_release.lua, handoff_drop.lua;
 * the watchdog renews with the core's renew_hash.lua, which also confirms a grant (the
 * engine's engine_grant.c). (set_lease.lua and raise_token.lua serve the composites,
 * member.h.)
 *
 * The hand-off (acquire.lua and release.lua tell the rule): every attempt of a wait that
 * finds the lock taken puts its owner in the queue, or keeps it there; a try that does not
 * wait never queues. The last release of holds taken while others waited in line (the
 * acquire's reply says so) hands the lock to the queue's first waiter inside the release
 * script (the grant): the lock hash is that waiter's, with HANDOFF_GRANT_MS as its lease,
 * and the grant is published on the turn channel. The waiter's client hears it and returns
 * the lock to its caller at once, then sets the caller's own lease (engine_grant.c): the
 * hand-off costs one message, not a message and the waiter's round trip. HANDOFF_GRANT_MS is
 * far longer than a grant takes to be heard and confirmed, and short enough that a waiter
 * that died holds the lock no longer. The queue outlives its latest waiting attempt by
 * HANDOFF_QUEUE_MS, longer than a waiter sleeps between attempts under a watchdog's lease:
 * should it lapse all the same, the next release hands the lock to nobody and wakes a
 * waiter of every client, which queue again.
 *
 * In a Cluster (handoff_cluster.c) the release names the queue's first waiter on the turn
 * channel instead, and promises it the lock (the marker; newcomers queue behind it) once it
 * has waited HANDOFF_BOUND_MS: below the bound a releasing owner that comes back at once may
 * still take the lock first. The marker lives HANDOFF_MARKER_MS: far longer than a woken
 * waiter takes to come (one message and one round trip), short enough that a waiter that
 * died holds nobody back for long; one that leaves takes its place and promise back (its
 * last attempt, or the drop). The hand-off is left alone there while the lock's slot is
 * being migrated.
 *
 * The turn channel makes one waiter, not one in every process, answer a release: the heir's
 * (or named waiter's) client hands it the lock (or wakes it) alone, and a client none of
 * whose waiters is the heir lets the grant (or the "0") wake nobody (the waiting engine's
 * turns, src/core/engine/wait.c). Those look again HANDOFF_MARKER_MS later at the latest,
 * and again at the hint they are given: by HANDOFF_GRANT_MS a grant to a waiter that never
 * confirmed it has lapsed. */

#include "dlock_object.h"
#include "handoff_cluster.h"
#include "lock_engine.h"

#define HANDOFF_MARKER_MS 100
#define HANDOFF_BOUND_MS 1
#define HANDOFF_GRANT_MS 500
#define HANDOFF_QUEUE_MS 60000

/* The kind's data: its dlock-only names. */
typedef struct handoff_names {
    char *marker;        /* {N}:handoff (N:handoff when N holds a hash tag) */
    char *queue;         /* {N}:handoff_queue */
    char *turn_channel;  /* dlock_lock_turn__channel:{N} */
    char *cluster_probe; /* {N}:handoff_probe; NULL when the keys do not share N's slot */
    char *token;         /* redisson_lock_token:{N}, for a plain handle too: a grant's heir
                            may be fenced */
} handoff_names;

static const handoff_names *names_of(const dlock__lock_view *v) {
    return v->data;
}

/* The probe a Cluster client passes with the hand-off's keys (handoff_cluster.c); NULL for
 * a client whose topology makes absent keys free. */
static const char *cluster_probe(const dlock__lock_view *v) {
    return dlock__client_absent_keys_are_free(v->client) ? NULL : names_of(v)->cluster_probe;
}

/* The hand-off's marker and queue usually do not exist: a Cluster client uses them only
 * with the probe, and not at all for a name whose keys it cannot keep in one slot. */
static bool handoff_off(const dlock__lock_view *v) {
    return !dlock__client_absent_keys_are_free(v->client) && !names_of(v)->cluster_probe;
}

/* acquire.lua: KEYS N, marker, queue [, token key]; ARGV lease, field, believed holds,
 * claims, the queue's lifetime */
static int acquire_args(const dlock__lock_view *v, dlock__args *a) {
    dlock__args_str(a, v->name);
    dlock__args_str(a, names_of(v)->marker);
    dlock__args_str(a, names_of(v)->queue);
    if (v->token_key)
        dlock__args_str(a, v->token_key);
    int nkeys = a->n;
    dlock__args_int(a, v->lease_ms);
    dlock__args_str(a, v->field);
    dlock__args_int(a, v->believed);
    /* a client the server refused the turn channel would not hear a grant: it waits out of
     * line (each attempt as a last one: it leaves the queue) */
    bool in_line = v->claims && !dlock__wait_turns_refused(v->client);
    if (handoff_off(v))
        dlock__args_str(a, "-");
    else /* 1: a wait's first attempt, 3: a later one (in line maybe), 2: its last */
        dlock__args_int(a, in_line ? (v->claim_open ? 3 : 1) : v->claims || v->last ? 2 : 0);
    dlock__args_int(a, HANDOFF_QUEUE_MS);
    if (cluster_probe(v))
        dlock__args_str(a, cluster_probe(v));
    return nkeys;
}

/* release.lua: KEYS N, channel [, marker, queue, turn channel [, token key]]; ARGV lease,
 * field, believed holds [, the grant's lease | the marker's lifetime, the bound, a Cluster's
 * probe]. The bracketed part only when others waited in line as the holds were taken: a
 * release that may hand the lock to nobody keeps to two keys and three arguments, each of
 * which costs the server time in every call. The token key (the heir may be fenced) says
 * that the release hands the lock over (the grant); a Cluster's names and promises. */
static int release_args(const dlock__lock_view *v, dlock__args *a) {
    dlock__args_str(a, v->name);
    dlock__args_str(a, v->channel);
    bool names = v->line && !handoff_off(v);
    bool grants = names && !cluster_probe(v);
    if (names) {
        dlock__args_str(a, names_of(v)->marker);
        dlock__args_str(a, names_of(v)->queue);
        dlock__args_str(a, names_of(v)->turn_channel);
        if (grants)
            dlock__args_str(a, names_of(v)->token);
    }
    int nkeys = a->n;
    dlock__args_int(a, v->lease_ms);
    dlock__args_str(a, v->field);
    dlock__args_int(a, v->believed);
    if (grants) {
        dlock__args_int(a, HANDOFF_GRANT_MS);
    } else if (names) {
        dlock__args_int(a, HANDOFF_MARKER_MS);
        dlock__args_int(a, HANDOFF_BOUND_MS);
        if (cluster_probe(v))
            dlock__args_str(a, cluster_probe(v));
    }
    return nkeys;
}

static const char *turn_channel(const dlock__lock_view *v) {
    return handoff_off(v) ? NULL : names_of(v)->turn_channel;
}

/* force_release.lua: KEYS N, channel */
static int force_args(const dlock__lock_view *v, dlock__args *a) {
    dlock__args_str(a, v->name);
    dlock__args_str(a, v->channel);
    return 2;
}

static void names_free(void *data) {
    handoff_names *names = data;
    if (!names)
        return;
    dlock__free(names->marker);
    dlock__free(names->queue);
    dlock__free(names->turn_channel);
    dlock__free(names->cluster_probe);
    dlock__free(names->token);
    dlock__free(names);
}

static void *names_new(const char *name) {
    handoff_names *names = dlock__calloc(1, sizeof(*names));
    if (!names)
        return NULL;
    names->marker = dlock__name_suffixed(name, "handoff");
    names->queue = dlock__name_suffixed(name, "handoff_queue");
    names->turn_channel = dlock__name_prefixed("dlock_lock_turn__channel", name);
    names->cluster_probe = dlock__handoff_cluster_probe(name); /* NULL: none in a Cluster */
    names->token = dlock__name_prefixed("redisson_lock_token", name);
    if (!names->marker || !names->queue || !names->turn_channel || !names->token) {
        names_free(names);
        return NULL;
    }
    return names;
}

/* The owner stopped waiting before its last attempt (canceled, failed) after an attempt
 * that may have queued it: it leaves the queue, takes back a promise to it and gives back
 * a grant it never took (handoff_drop.lua), before anything it sends next. (A wait that reached its
 * deadline did so in its last attempt.) */
static void gave_up(const dlock__lock_view *v) {
    if (handoff_off(v) || !v->claim_open)
        return;
    if (cluster_probe(v)) {
        dlock__handoff_cluster_drop(v->client, v->name, names_of(v)->marker, names_of(v)->queue,
                                    v->field, cluster_probe(v));
        return;
    }
    /* holding nothing it knows of, a hold of its own in N is a grant it never took
     * (handoff_drop.lua gives it back) */
    bool holds_none = v->believed == 0;
    dlock__args a = {0};
    dlock__args_str(&a, names_of(v)->marker);
    dlock__args_str(&a, names_of(v)->queue);
    if (holds_none) {
        dlock__args_str(&a, v->name);
        dlock__args_str(&a, v->channel);
    }
    dlock__args_str(&a, v->field);
    dlock__script(v->client, DLOCK__SCRIPT_LOCK_HANDOFF_DROP, DLOCK__CMD_RETRY_SAFE,
                  dlock__ignore_reply, (void *)"lock: leaving the hand-off queue",
                  holds_none ? 4 : 2, a.n, a.v, a.len);
}

static const dlock__lock_kind reentrant_kind = {
    .what = "lock",
    .acquire_script = DLOCK__SCRIPT_LOCK_ACQUIRE,
    .release_script = DLOCK__SCRIPT_LOCK_RELEASE,
    .force_script = DLOCK__SCRIPT_LOCK_FORCE_RELEASE,
    .acquire_args = acquire_args,
    .release_args = release_args,
    .force_args = force_args,
    .renew_script = DLOCK__SCRIPT_CORE_RENEW_HASH,
    .wake_count = dlock__wake_one, /* a freed lock lets one waiter of a client in */
    .turn_channel = turn_channel,
    .turn_ms = HANDOFF_MARKER_MS,
    .grant_ms = HANDOFF_GRANT_MS,
    .gave_up = gave_up,
    .data_new = names_new,
    .data_free = names_free,
};

int dlock_lock_new(dlock_client *c, const char *name, dlock_lock **out) {
    return dlock__lock_create(c, name, &reentrant_kind, false, out);
}

int dlock_fencedlock_new(dlock_client *c, const char *name, dlock_lock **out) {
    return dlock__lock_create(c, name, &reentrant_kind, true, out);
}
