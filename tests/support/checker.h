/* SPDX-License-Identifier: MIT */
/* checker.h - the mutual-exclusion checker: proves a lock kept its critical sections apart.
 *
 * A checker is a log in shared memory (mmap MAP_SHARED|MAP_ANONYMOUS). Create it before
 * fork() and every process forked afterwards, and every thread of them, records into the
 * same log. Inside each critical section a worker calls checker_enter() (a CLOCK_MONOTONIC
 * timestamp, its id, and a deliberately non-atomic read-modify-write of a shared counter:
 * a volatile load, a short pause, a volatile store, so two sections that overlap lose an
 * update) and checker_exit() (the exit timestamp and, for a fenced lock, the token the
 * holder got). When it stops working it calls checker_finished(). Recording is lock-free:
 * a slot is taken with one atomic increment of an index into a fixed-size array.
 *
 * After every worker stopped (threads joined, processes reaped), checker_check() reads the
 * log: sections sorted by enter time must not overlap, the counter must equal the number
 * of sections entered (a lost update means two sections overlapped even if the clock did
 * not show it; a doubled one means a record was lost), every worker must have finished,
 * and for a fenced lock the token of each holder must be larger than the previous one's.
 *
 * One checker per lock (or semaphore used as a mutex): sections of different locks may
 * overlap. Worker ids are 0 .. workers-1, chosen by the caller; one id per thread.
 *
 * ThreadSanitizer: the counter's load and store race by design (the distributed lock is
 * what orders them, and TSan cannot see it), so checker_enter() is built without TSan
 * instrumentation. The fault and stress programs do not run under TSan anyway.
 */
#ifndef DLOCK_TEST_CHECKER_H
#define DLOCK_TEST_CHECKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct checker checker;

typedef struct checker_report {
    long sections;           /* slots taken by checker_enter() */
    long recorded;           /* complete sections in the log (entered and exited) */
    long dropped;            /* sections that found the log full: not checked */
    long open;               /* entered but never exited (a worker died inside) */
    long overlaps;           /* sections that began before an earlier one ended */
    long counter;            /* the non-atomically bumped counter */
    long expected;           /* what the counter must be: one per section entered */
    int workers;             /* as given to checker_new() */
    int unfinished;          /* workers that never called checker_finished() */
    long token_violations;   /* fenced: holders whose token was not above the previous one */
    long errors;             /* checker_error() calls */
    char first_error[256];   /* the first checker_error() text, "" if none */
    char first_problem[256]; /* the first overlap or token violation, "" if none */
    bool ok;                 /* all of the above as it must be */
} checker_report;

/* A checker named `name` (copied; for the printout) for `workers` workers and at most
 * `capacity` sections. fenced: every section must carry a token and tokens must rise.
 * Aborts with a message if the memory cannot be mapped (a test cannot go on without it).
 * Pages are touched only as sections are recorded, so a large capacity costs nothing. */
checker *checker_new(const char *name, int workers, long capacity, bool fenced);

/* Unmaps the log. Call it in the process that created the checker, after the check; a
 * forked child may leave it (its mapping goes with the child). NULL is a no-op. */
void checker_free(checker *k);

/* Called first thing inside the critical section by worker `worker`: records the enter
 * time and bumps the counter non-atomically. Returns the section's slot for
 * checker_exit(), or -1 if the log is full (the section still counts, as dropped). */
long checker_enter(checker *k, int worker);

/* Called last thing inside the critical section: records the exit time and the token
 * (0 for locks without one). slot -1 is ignored. */
void checker_exit(checker *k, long slot, uint64_t token);

/* Worker `worker` did all its work (threads or processes: call it once per worker). */
void checker_finished(checker *k, int worker);

/* Something a worker saw went wrong (an unexpected return code): counted, and the first
 * text is kept for the report. Any thread or process. */
void checker_error(checker *k, int worker, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Reads the log (call it when no worker runs any more) and prints one summary line on
 * stdout, "# checker NAME: ...", plus the first problem found. The log is left as it is, so
 * it may be called again. */
checker_report checker_check(checker *k);

/* Zeroed memory shared with processes forked later (for a test's own counters): mmap
 * MAP_SHARED|MAP_ANONYMOUS, aborting if that fails. Free with checker_shared_free(p, size). */
void *checker_shared_alloc(size_t size);
void checker_shared_free(void *p, size_t size);

/* Cross-check for a read-write lock: `exclusive` logs the writers' sections (checked as
 * usual by checker_check()), `shared` the readers' (which may overlap each other, so its
 * own checker_check() would report those overlaps and lost counter updates). Counts the
 * shared sections that overlap any exclusive section. Call it when no worker runs; prints
 * one line "# checker SHARED vs EXCLUSIVE: ...". Only complete sections are compared. */
typedef struct checker_cross_report {
    long shared_sections;    /* slots taken in `shared` */
    long shared_recorded;    /* complete shared sections compared */
    long shared_open;        /* shared sections entered but never exited */
    long shared_dropped;     /* shared sections that found the log full */
    long shared_overlapping; /* shared sections that began before an earlier one ended */
    long conflicts;          /* shared sections overlapping an exclusive section */
    char first_conflict[256];
    bool ok; /* conflicts, open and dropped all 0 */
} checker_cross_report;
checker_cross_report checker_check_excluded(checker *exclusive, checker *shared);

#endif /* DLOCK_TEST_CHECKER_H */
