/* SPDX-License-Identifier: MIT */
/* stats.c — the client's monitoring numbers: gauges and counters kept in atomics, so that
 * dlock_client_stats() reads them from any thread without a lock and without the loop.
 *
 * The loop thread writes every one but calls_in_flight, which the submitting threads raise
 * too. Relaxed order is enough: each number stands alone, and a reader wants it recent, not
 * ordered against the others. */
#include <stddef.h>
#include <string.h>

#include "base/base.h"

void dlock__stat_add(dlock_client *c, enum dlock__stat which, int64_t delta) {
    atomic_fetch_add_explicit(&DLOCK__BASE(c)->stats.v[which], delta, memory_order_relaxed);
}

void dlock__stat_set(dlock_client *c, enum dlock__stat which, int64_t value) {
    atomic_store_explicit(&DLOCK__BASE(c)->stats.v[which], value, memory_order_relaxed);
}

void dlock__stat_lease_lost(dlock_client *c) {
    dlock__stat_add(c, DLOCK__STAT_LEASES_LOST, 1);
}

void dlock__stat_renewal(dlock_client *c, int64_t lag_ms, int64_t late_ms) {
    _Atomic int64_t *worst = &DLOCK__BASE(c)->stats.v[DLOCK__STAT_RENEWAL_LAG_MAX];
    if (lag_ms > atomic_load_explicit(worst, memory_order_relaxed))
        atomic_store_explicit(worst, lag_ms, memory_order_relaxed); /* one writer: the loop */
    if (lag_ms > late_ms)
        dlock__stat_add(c, DLOCK__STAT_RENEWALS_LATE, 1);
}

static const int64_t wait_bounds_us[] = {DLOCK_STATS_WAIT_BOUNDS_US};
_Static_assert(sizeof(wait_bounds_us) / sizeof(wait_bounds_us[0]) + 1 == DLOCK_STATS_WAIT_BUCKETS,
               "one bucket per bound and one past them");

/* The kinds' words (dlock__handle.kind: each class's `what`), in DLOCK_STATS_KIND_NAMES's
 * order; [0] is the slot of any other. */
static const char *const kind_words[] = {
    NULL,         "lock",      "spin lock", "fair lock", "read lock",
    "write lock", "semaphore", "permits",   "latch",
};
#define KIND_NAMES_COUNT (sizeof((const char *[]){DLOCK_STATS_KIND_NAMES}) / sizeof(const char *))
_Static_assert(sizeof(kind_words) / sizeof(kind_words[0]) == KIND_NAMES_COUNT,
               "a word for every kind's name");
_Static_assert(KIND_NAMES_COUNT <= DLOCK_STATS_KINDS, "room for each");

/* Only a failure looks its kind up (a few string compares): the path of an acquire that
 * gets its object is not longer for it. */
static int kind_slot(const char *kind) {
    for (size_t k = 1; kind && k < sizeof(kind_words) / sizeof(kind_words[0]); k++)
        if (strcmp(kind, kind_words[k]) == 0)
            return (int)k;
    return 0;
}

/* The loop thread, once per wait: a handful of comparisons and two relaxed adds, beside the
 * two round trips of the cheapest acquire (docs/monitoring.md gives the measured cost). */
void dlock__stat_wait_ended(dlock_client *c, const char *kind, int status, int64_t waited_us) {
    if (status != DLOCK_OK) {
        int slot = status < 0 && status > -DLOCK_STATS_CODES ? -status : 0;
        dlock__stat_add(c, (enum dlock__stat)(DLOCK__STAT_ACQUIRE_FAILURES + slot), 1);
        if (status == DLOCK_ETIMEDOUT)
            dlock__stat_add(c, (enum dlock__stat)(DLOCK__STAT_TIMEOUTS_BY_KIND + kind_slot(kind)),
                            1);
        else if (status != DLOCK_ECANCELED)
            dlock__stat_add(c, (enum dlock__stat)(DLOCK__STAT_ERRORS_BY_KIND + kind_slot(kind)), 1);
        return;
    }
    size_t bucket = 0;
    while (bucket < DLOCK_STATS_WAIT_BUCKETS - 1 && waited_us > wait_bounds_us[bucket])
        bucket++;
    dlock__stat_add(c, (enum dlock__stat)(DLOCK__STAT_ACQUIRE_WAIT_BUCKETS + bucket), 1);
    dlock__stat_add(c, DLOCK__STAT_ACQUIRE_WAIT_SUM_US, waited_us > 0 ? waited_us : 0);
}

void dlock_stats_init(dlock_stats *s) {
    if (!s)
        return;
    memset(s, 0, sizeof(*s));
    s->size = sizeof(*s);
}

static int64_t stat_of(dlock_client *c, enum dlock__stat which) {
    return atomic_load_explicit(&DLOCK__BASE(c)->stats.v[which], memory_order_relaxed);
}

int dlock_client_stats(dlock_client *c, dlock_stats *out) {
    if (!c || !out)
        return dlock__fail(DLOCK_EINVAL, "dlock_client_stats: NULL client or stats");
    /* a caller built against an older header passes a smaller size: fill what it has */
    if (out->size < offsetof(dlock_stats, leases_held) || out->size > sizeof(*out))
        return dlock__fail(DLOCK_EINVAL, "stats.size is not set: call dlock_stats_init");
    dlock_stats s;
    memset(&s, 0, sizeof(s));
    s.calls_in_flight = stat_of(c, DLOCK__STAT_CALLS);
    s.waits = stat_of(c, DLOCK__STAT_WAITS);
    s.leases_held = stat_of(c, DLOCK__STAT_LEASES_HELD);
    s.subscriptions = stat_of(c, DLOCK__STAT_SUBSCRIPTIONS);
    s.renewals_sent = (uint64_t)stat_of(c, DLOCK__STAT_RENEWALS_SENT);
    s.renewals_late = (uint64_t)stat_of(c, DLOCK__STAT_RENEWALS_LATE);
    s.renewal_lag_max_ms = stat_of(c, DLOCK__STAT_RENEWAL_LAG_MAX);
    s.leases_lost = (uint64_t)stat_of(c, DLOCK__STAT_LEASES_LOST);
    s.reconnects = (uint64_t)stat_of(c, DLOCK__STAT_RECONNECTS);
    s.messages = (uint64_t)stat_of(c, DLOCK__STAT_MESSAGES);
    s.wakes = (uint64_t)stat_of(c, DLOCK__STAT_WAKES);
    s.wakes_spared = (uint64_t)stat_of(c, DLOCK__STAT_WAKES_SPARED);
    for (int i = 0; i < DLOCK_STATS_CODES; i++)
        s.acquire_failures[i] =
            (uint64_t)stat_of(c, (enum dlock__stat)(DLOCK__STAT_ACQUIRE_FAILURES + i));
    for (int i = 0; i < DLOCK_STATS_WAIT_BUCKETS; i++)
        s.acquire_wait_buckets[i] =
            (uint64_t)stat_of(c, (enum dlock__stat)(DLOCK__STAT_ACQUIRE_WAIT_BUCKETS + i));
    s.acquire_wait_sum_us = (uint64_t)stat_of(c, DLOCK__STAT_ACQUIRE_WAIT_SUM_US);
    for (int k = 0; k < DLOCK_STATS_KINDS; k++) {
        s.acquire_timeouts_by_kind[k] =
            (uint64_t)stat_of(c, (enum dlock__stat)(DLOCK__STAT_TIMEOUTS_BY_KIND + k));
        s.acquire_errors_by_kind[k] =
            (uint64_t)stat_of(c, (enum dlock__stat)(DLOCK__STAT_ERRORS_BY_KIND + k));
    }
    s.reply_spins = (uint64_t)stat_of(c, DLOCK__STAT_REPLY_SPINS);
    s.reply_spin_hits = (uint64_t)stat_of(c, DLOCK__STAT_REPLY_SPIN_HITS);
    s.reply_spin_us = (uint64_t)stat_of(c, DLOCK__STAT_REPLY_SPIN_US);
    memcpy((char *)out + sizeof(out->size), (const char *)&s + sizeof(s.size),
           out->size - sizeof(out->size));
    return DLOCK_OK;
}
