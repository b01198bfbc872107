/* SPDX-License-Identifier: MIT */
/* checker.c - the mutual-exclusion checker (checker.h).
 *
 * One anonymous shared mapping per checker holds, in this order: the header (struct
 * checker: the slot index, the counter, the error count and first text), one "finished"
 * byte per worker, and the log of `capacity` records. Pointers into the mapping stay valid
 * in forked children, which see it at the same address.
 *
 * A record is written by the one worker that took its slot: enter fields first, then
 * state ENTERED, then the exit fields, then state COMPLETE (a release store). The check
 * reads the log only after every worker stopped, and counts a record that never reached
 * COMPLETE as open (its worker died or hung inside the section).
 */
#include "checker.h"

#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* The counter's read-modify-write races on purpose (see checker.h): hide it from TSan. */
#if defined(__SANITIZE_THREAD__)
#define NO_TSAN __attribute__((no_sanitize_thread))
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NO_TSAN __attribute__((no_sanitize("thread")))
#endif
#endif
#ifndef NO_TSAN
#define NO_TSAN
#endif

enum { SLOT_EMPTY = 0, SLOT_ENTERED = 1, SLOT_COMPLETE = 2 };

/* Spin iterations between the counter's load and store, and how often a section yields
 * there too: enough that two overlapping sections almost surely interleave their halves,
 * little enough not to matter next to a Redis round trip. */
#define BUMP_SPIN 200
#define BUMP_YIELD_EVERY 16

typedef struct record {
    int64_t enter_ns;
    int64_t exit_ns;
    uint64_t token;
    int32_t worker;
    _Atomic int32_t state;
} record;

struct checker {
    size_t map_size;
    char name[64];
    int workers;
    long capacity;
    bool fenced;
    atomic_long next_slot;
    volatile long counter; /* bumped non-atomically, inside the sections only */
    atomic_long errors;
    atomic_int error_text_ready;
    char first_error[256];
    atomic_uchar *finished; /* [workers], in the mapping */
    record *log;            /* [capacity], in the mapping */
};

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static size_t round_up(size_t n, size_t to) {
    return (n + to - 1) / to * to;
}

void *checker_shared_alloc(size_t size) {
    void *p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        perror("checker: mmap");
        abort();
    }
    return p; /* anonymous mappings are zeroed */
}

void checker_shared_free(void *p, size_t size) {
    if (p != NULL)
        munmap(p, size ? size : 1);
}

checker *checker_new(const char *name, int workers, long capacity, bool fenced) {
    if (workers < 1 || capacity < 1) {
        fprintf(stderr, "checker_new: workers %d, capacity %ld\n", workers, capacity);
        abort();
    }
    size_t head = round_up(sizeof(checker), 64);
    size_t flags = round_up((size_t)workers, 64);
    size_t size = head + flags + (size_t)capacity * sizeof(record);
    char *base = checker_shared_alloc(size);
    checker *k = (checker *)base;
    k->map_size = size;
    snprintf(k->name, sizeof(k->name), "%s", name ? name : "checker");
    k->workers = workers;
    k->capacity = capacity;
    k->fenced = fenced;
    atomic_init(&k->next_slot, 0);
    k->counter = 0;
    atomic_init(&k->errors, 0);
    atomic_init(&k->error_text_ready, 0);
    k->finished = (atomic_uchar *)(base + head);
    k->log = (record *)(base + head + flags);
    return k;
}

void checker_free(checker *k) {
    if (k != NULL)
        checker_shared_free(k, k->map_size);
}

/* The lost-update detector: load, pause, store. Overlapping sections interleave these
 * halves and one increment disappears. */
NO_TSAN static void bump(checker *k, long slot) {
    long v = k->counter;
    for (volatile int i = 0; i < BUMP_SPIN; i++) {
    }
    if (slot % BUMP_YIELD_EVERY == 0)
        sched_yield();
    k->counter = v + 1;
}

long checker_enter(checker *k, int worker) {
    int64_t enter = now_ns();
    long slot = atomic_fetch_add(&k->next_slot, 1);
    bump(k, slot);
    if (slot >= k->capacity)
        return -1;
    record *r = &k->log[slot];
    r->enter_ns = enter;
    r->worker = worker;
    atomic_store_explicit(&r->state, SLOT_ENTERED, memory_order_release);
    return slot;
}

void checker_exit(checker *k, long slot, uint64_t token) {
    int64_t exit_ns = now_ns();
    if (slot < 0 || slot >= k->capacity)
        return;
    record *r = &k->log[slot];
    r->exit_ns = exit_ns;
    r->token = token;
    atomic_store_explicit(&r->state, SLOT_COMPLETE, memory_order_release);
}

void checker_finished(checker *k, int worker) {
    if (worker >= 0 && worker < k->workers)
        atomic_store(&k->finished[worker], 1);
    else
        checker_error(k, worker, "checker_finished: worker id %d out of 0..%d", worker,
                      k->workers - 1);
}

void checker_error(checker *k, int worker, const char *fmt, ...) {
    if (atomic_fetch_add(&k->errors, 1) != 0)
        return;
    int n = snprintf(k->first_error, sizeof(k->first_error), "worker %d: ", worker);
    if (n < 0 || (size_t)n >= sizeof(k->first_error))
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->first_error + n, sizeof(k->first_error) - (size_t)n, fmt, ap);
    va_end(ap);
    atomic_store(&k->error_text_ready, 1);
}

static int by_enter(const void *a, const void *b) {
    const record *x = a, *y = b;
    if (x->enter_ns != y->enter_ns)
        return x->enter_ns < y->enter_ns ? -1 : 1;
    return (x->exit_ns > y->exit_ns) - (x->exit_ns < y->exit_ns);
}

checker_report checker_check(checker *k) {
    checker_report rep;
    memset(&rep, 0, sizeof(rep));
    rep.workers = k->workers;
    rep.sections = atomic_load(&k->next_slot);
    rep.expected = rep.sections;
    rep.counter = k->counter;
    rep.dropped = rep.sections > k->capacity ? rep.sections - k->capacity : 0;
    rep.errors = atomic_load(&k->errors);
    if (rep.errors && atomic_load(&k->error_text_ready))
        snprintf(rep.first_error, sizeof(rep.first_error), "%s", k->first_error);
    for (int w = 0; w < k->workers; w++)
        if (!atomic_load(&k->finished[w]))
            rep.unfinished++;

    long logged = rep.sections - rep.dropped;
    record *sorted = malloc(sizeof(record) * (size_t)(logged ? logged : 1));
    if (sorted == NULL) {
        fprintf(stderr, "checker_check: out of memory\n");
        abort();
    }
    long n = 0;
    for (long i = 0; i < logged; i++) {
        record *r = &k->log[i];
        if (atomic_load_explicit(&r->state, memory_order_acquire) != SLOT_COMPLETE) {
            rep.open++;
            continue;
        }
        sorted[n].enter_ns = r->enter_ns;
        sorted[n].exit_ns = r->exit_ns;
        sorted[n].token = r->token;
        sorted[n].worker = r->worker;
        n++;
    }
    rep.recorded = n;
    qsort(sorted, (size_t)n, sizeof(record), by_enter);

    int64_t origin = n ? sorted[0].enter_ns : 0;
    long latest = 0; /* the section with the latest exit so far */
    for (long i = 1; i < n; i++) {
        const record *prev = &sorted[latest], *cur = &sorted[i];
        if (cur->enter_ns < prev->exit_ns) {
            if (rep.overlaps++ == 0)
                snprintf(rep.first_problem, sizeof(rep.first_problem),
                         "overlap: worker %d in [%.3f, %.3f] ms, worker %d entered at %.3f ms",
                         prev->worker, (double)(prev->enter_ns - origin) / 1e6,
                         (double)(prev->exit_ns - origin) / 1e6, cur->worker,
                         (double)(cur->enter_ns - origin) / 1e6);
        }
        if (cur->exit_ns > prev->exit_ns)
            latest = i;
    }
    if (k->fenced) {
        for (long i = 0; i < n; i++) {
            bool bad = sorted[i].token == 0 || (i > 0 && sorted[i].token <= sorted[i - 1].token);
            if (bad && rep.token_violations++ == 0 && rep.first_problem[0] == '\0')
                snprintf(rep.first_problem, sizeof(rep.first_problem),
                         "token: worker %d entered at %.3f ms with token %llu after worker %d's "
                         "%llu",
                         sorted[i].worker, (double)(sorted[i].enter_ns - origin) / 1e6,
                         (unsigned long long)sorted[i].token, i ? sorted[i - 1].worker : -1,
                         i ? (unsigned long long)sorted[i - 1].token : 0ULL);
        }
    }
    free(sorted);

    rep.ok = rep.overlaps == 0 && rep.counter == rep.expected && rep.unfinished == 0 &&
             rep.token_violations == 0 && rep.dropped == 0 && rep.open == 0 && rep.errors == 0;
    printf("# checker %s: %ld sections, %ld overlaps, counter %ld of %ld, %d of %d workers "
           "unfinished",
           k->name, rep.sections, rep.overlaps, rep.counter, rep.expected, rep.unfinished,
           rep.workers);
    if (k->fenced)
        printf(", %ld token violations", rep.token_violations);
    if (rep.dropped)
        printf(", %ld dropped (log full at %ld)", rep.dropped, k->capacity);
    if (rep.open)
        printf(", %ld never exited", rep.open);
    if (rep.errors)
        printf(", %ld errors", rep.errors);
    printf("%s\n", rep.ok ? "" : " - FAILED");
    if (rep.first_problem[0])
        printf("#   first %s\n", rep.first_problem);
    if (rep.first_error[0])
        printf("#   first error: %s\n", rep.first_error);
    fflush(stdout);
    return rep;
}

/* Complete records of k, sorted by enter time; *open and *dropped as in the check. */
static record *complete_sorted(checker *k, long *n_out, long *open, long *dropped) {
    long sections = atomic_load(&k->next_slot);
    *dropped = sections > k->capacity ? sections - k->capacity : 0;
    long logged = sections - *dropped;
    record *sorted = malloc(sizeof(record) * (size_t)(logged ? logged : 1));
    if (sorted == NULL) {
        fprintf(stderr, "checker: out of memory\n");
        abort();
    }
    long n = 0;
    *open = 0;
    for (long i = 0; i < logged; i++) {
        record *r = &k->log[i];
        if (atomic_load_explicit(&r->state, memory_order_acquire) != SLOT_COMPLETE) {
            (*open)++;
            continue;
        }
        sorted[n].enter_ns = r->enter_ns;
        sorted[n].exit_ns = r->exit_ns;
        sorted[n].token = r->token;
        sorted[n].worker = r->worker;
        n++;
    }
    qsort(sorted, (size_t)n, sizeof(record), by_enter);
    *n_out = n;
    return sorted;
}

checker_cross_report checker_check_excluded(checker *exclusive, checker *shared) {
    checker_cross_report rep;
    memset(&rep, 0, sizeof(rep));
    long nx = 0, xopen = 0, xdropped = 0;
    record *x = complete_sorted(exclusive, &nx, &xopen, &xdropped);
    long ns = 0;
    record *s = complete_sorted(shared, &ns, &rep.shared_open, &rep.shared_dropped);
    rep.shared_sections = atomic_load(&shared->next_slot);
    rep.shared_recorded = ns;
    /* x sorted by enter; max_exit[i] = the latest exit among x[0..i], so that a shared
     * section [a, b) meets an exclusive one iff some x entered before b and left after a,
     * i.e. max_exit of the last x entering before b is > a (robust even if the exclusive
     * sections overlapped each other) */
    int64_t *max_exit = malloc(sizeof(int64_t) * (size_t)(nx ? nx : 1));
    long *max_at = malloc(sizeof(long) * (size_t)(nx ? nx : 1));
    if (max_exit == NULL || max_at == NULL) {
        fprintf(stderr, "checker: out of memory\n");
        abort();
    }
    for (long i = 0; i < nx; i++) {
        bool later = i == 0 || x[i].exit_ns > max_exit[i - 1];
        max_exit[i] = later ? x[i].exit_ns : max_exit[i - 1];
        max_at[i] = later ? i : max_at[i - 1];
    }
    int64_t origin = nx && (!ns || x[0].enter_ns < s[0].enter_ns) ? x[0].enter_ns
                     : ns                                         ? s[0].enter_ns
                                                                  : 0;
    int64_t shared_latest_exit = INT64_MIN;
    for (long j = 0; j < ns; j++) {
        if (s[j].enter_ns < shared_latest_exit)
            rep.shared_overlapping++;
        if (s[j].exit_ns > shared_latest_exit)
            shared_latest_exit = s[j].exit_ns;
        /* the last exclusive section entered before this shared one exited */
        long lo = 0, hi = nx; /* first index with enter_ns >= s[j].exit_ns */
        while (lo < hi) {
            long mid = lo + (hi - lo) / 2;
            if (x[mid].enter_ns < s[j].exit_ns)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == 0 || max_exit[lo - 1] <= s[j].enter_ns)
            continue;
        const record *w = &x[max_at[lo - 1]];
        if (rep.conflicts++ == 0)
            snprintf(rep.first_conflict, sizeof(rep.first_conflict),
                     "%s worker %d in [%.3f, %.3f] ms meets %s worker %d in [%.3f, %.3f] ms",
                     shared->name, s[j].worker, (double)(s[j].enter_ns - origin) / 1e6,
                     (double)(s[j].exit_ns - origin) / 1e6, exclusive->name, w->worker,
                     (double)(w->enter_ns - origin) / 1e6, (double)(w->exit_ns - origin) / 1e6);
    }
    free(max_exit);
    free(max_at);
    free(x);
    free(s);
    rep.ok = rep.conflicts == 0 && rep.shared_open == 0 && rep.shared_dropped == 0;
    printf("# checker %s vs %s: %ld shared sections (%ld began while another was inside), "
           "%ld meet an exclusive one",
           shared->name, exclusive->name, rep.shared_sections, rep.shared_overlapping,
           rep.conflicts);
    if (rep.shared_open)
        printf(", %ld never exited", rep.shared_open);
    if (rep.shared_dropped)
        printf(", %ld dropped", rep.shared_dropped);
    printf("%s\n", rep.ok ? "" : " - FAILED");
    if (rep.first_conflict[0])
        printf("#   first conflict: %s\n", rep.first_conflict);
    fflush(stdout);
    return rep;
}
