/* SPDX-License-Identifier: MIT */
/* soak_marks.c - the soak's own mutual-exclusion check and its outcome counters.
 *
 * Every holder marks the name it holds while inside its critical section: one atomic
 * counter of exclusive holders and one of shared holders per name. An exclusive holder
 * that finds another exclusive or any shared holder, a reader that finds a writer, a
 * semaphore holder that makes the count exceed its permits: each is an overlap. The soak
 * runs every face in this one process, so these atomics see every holder; unlike the
 * tests' checker (a log that grows with every section) they take constant memory, which a
 * run of hours needs: the log would show up as RSS growth in the very series the soak
 * judges. Sequentially consistent read-modify-writes make it exact: of two holders that
 * overlap, the second to mark always sees the first.
 */
#include <stdio.h>
#include <string.h>
#include <pthread.h>

#include "soak.h"

typedef struct mark {
    atomic_llong lost_ms; /* when a lease on this name was last lost, 0: never */
    atomic_int exclusive;
    atomic_int shared;
    atomic_uint_fast64_t last_token; /* fenced names: the highest token seen */
} mark;

static mark marks[SOAK_GROUPS][SOAK_MAX_NAMES];
static atomic_long overlaps;
#define MAX_OVERLAPS 4096
static struct overlap_event {
    int64_t at_ms;
    int group;
    int index;
} overlap_log[MAX_OVERLAPS];
static pthread_mutex_t first_mu = PTHREAD_MUTEX_INITIALIZER;
static char first_overlap[256];
static char first_bad[256];
static atomic_long outcomes[SOAK_KINDS][2][SOAK_STATUSES];
static atomic_long bad_outcomes;

static const char *group_names[SOAK_GROUPS] = {"lock", "fenced",  "fair",  "spin", "rw",
                                               "sem",  "permits", "latch", "red",  "long"};

void soak_name(char *buf, enum soak_group g, int index, const char *suffix) {
    snprintf(buf, 64, "soak:%s:%d%s", group_names[g], index, suffix ? suffix : "");
}

void soak_marks_init(void) {
    /* Touch everything now, before the baseline sample. */
    memset(marks, 0, sizeof marks);
    memset(overlap_log, 0, sizeof overlap_log);
    memset(outcomes, 0, sizeof outcomes);
}

static void note_overlap(enum soak_group g, int index, const char *who, const char *how) {
    long n = atomic_fetch_add(&overlaps, 1);
    if (n < MAX_OVERLAPS)
        overlap_log[n] = (struct overlap_event){soak_now_ms(), g, index};
    if (n == 0) {
        pthread_mutex_lock(&first_mu);
        snprintf(first_overlap, sizeof first_overlap, "%s at %.1f s on soak:%s:%d: %s", who,
                 (double)soak_now_ms() / 1000.0, group_names[g], index, how);
        pthread_mutex_unlock(&first_mu);
        fprintf(stderr, "soak: OVERLAP %s\n", first_overlap);
    }
}

void soak_mark_exclusive(enum soak_group g, int index, const char *who) {
    mark *m = &marks[g][index];
    if (atomic_fetch_add(&m->exclusive, 1) != 0)
        note_overlap(g, index, who, "another exclusive holder inside");
    else if (atomic_load(&m->shared) != 0)
        note_overlap(g, index, who, "readers inside");
}

void soak_leave_exclusive(enum soak_group g, int index) {
    atomic_fetch_sub(&marks[g][index].exclusive, 1);
}

void soak_mark_shared(enum soak_group g, int index, const char *who) {
    mark *m = &marks[g][index];
    atomic_fetch_add(&m->shared, 1);
    if (atomic_load(&m->exclusive) != 0)
        note_overlap(g, index, who, "a writer inside");
}

void soak_leave_shared(enum soak_group g, int index) {
    atomic_fetch_sub(&marks[g][index].shared, 1);
}

void soak_mark_counted(enum soak_group g, int index, const char *who) {
    if (atomic_fetch_add(&marks[g][index].shared, 1) + 1 > SOAK_PERMIT_COUNT)
        note_overlap(g, index, who, "more holders than permits");
}

void soak_leave_counted(enum soak_group g, int index) {
    atomic_fetch_sub(&marks[g][index].shared, 1);
}

void soak_fenced_token(int index, uint64_t token, const char *who) {
    /* Inside the section, so holders come one at a time: a plain compare is enough. */
    mark *m = &marks[GROUP_FENCED][index];
    uint64_t last = atomic_load(&m->last_token);
    if (token <= last)
        note_overlap(GROUP_FENCED, index, who, "fencing token did not rise");
    else
        atomic_store(&m->last_token, token);
}

/* "soak:<group>:<index>..." -> the mark, or NULL (a composite's name, another name). */
static mark *mark_of_name(const char *name) {
    char group[16];
    int index;
    if (!name || sscanf(name, "soak:%15[a-z]:%d", group, &index) != 2 || index < 0 ||
        index >= SOAK_MAX_NAMES)
        return NULL;
    for (int g = 0; g < SOAK_GROUPS; g++)
        if (!strcmp(group, group_names[g]))
            return &marks[g][index];
    return NULL;
}

long soak_overlaps_unexplained(int64_t grace_ms) {
    long n = atomic_load(&overlaps), bad = 0;
    for (long i = 0; i < n && i < MAX_OVERLAPS; i++) {
        int64_t lost = atomic_load(&marks[overlap_log[i].group][overlap_log[i].index].lost_ms);
        int64_t t = overlap_log[i].at_ms;
        bad += lost == 0 || t < lost - grace_ms || t > lost + grace_ms;
    }
    return bad + (n > MAX_OVERLAPS ? n - MAX_OVERLAPS : 0);
}

long soak_overlaps(void) {
    return atomic_load(&overlaps);
}

const char *soak_first_overlap(void) {
    return first_overlap;
}

/* Statuses that say the soak or the library is wrong, never a fault: each fails the run. */
static bool status_is_bad(int status) {
    switch (status) {
    case DLOCK_EINVAL:
    case DLOCK_ENOMEM:
    case DLOCK_EDEADLK:
    case DLOCK_ECLOSED:
    case DLOCK_EBUSY:
    case DLOCK_EAUTH:
    case DLOCK_ENOPERM:
        return true;
    default:
        return false;
    }
}

void soak_outcome(enum soak_kind k, int face, int status, const char *what) {
    int index = -status;
    if (index < 0 || index >= SOAK_STATUSES)
        index = -DLOCK_EINVAL;
    atomic_fetch_add(&outcomes[k][face][index], 1);
    if (status == DLOCK_ELOST || (status == DLOCK_ENOTOWNER && strstr(what, "release")))
        soak_lost_event(what, status);
    if (status_is_bad(status) && atomic_fetch_add(&bad_outcomes, 1) == 0) {
        pthread_mutex_lock(&first_mu);
        snprintf(first_bad, sizeof first_bad, "%s %s (%s face): %s", soak_kind_name(k), what,
                 face ? "async" : "blocking", dlock_err_name(status));
        pthread_mutex_unlock(&first_mu);
        fprintf(stderr, "soak: UNEXPECTED %s\n", first_bad);
    }
}

long soak_outcome_count(enum soak_kind k, int face, int status) {
    return atomic_load(&outcomes[k][face][-status]);
}

long soak_bad_outcomes(void) {
    return atomic_load(&bad_outcomes);
}

const char *soak_first_bad(void) {
    return first_bad;
}

long soak_ops_total(void) {
    long n = 0;
    for (int k = 0; k < SOAK_KINDS; k++)
        for (int f = 0; f < 2; f++)
            for (int s = 0; s < SOAK_STATUSES; s++)
                n += atomic_load(&outcomes[k][f][s]);
    return n;
}

void soak_on_lost(dlock_lock *l, uint64_t owner, int reason, void *arg) {
    (void)owner;
    (void)arg;
    char what[96];
    snprintf(what, sizeof what, "lost callback of %s", dlock_lock_name(l));
    mark *m = mark_of_name(dlock_lock_name(l));
    if (m)
        atomic_store(&m->lost_ms, soak_now_ms() > 0 ? soak_now_ms() : 1);
    soak_lost_event(what, reason);
}
