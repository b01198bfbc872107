/* SPDX-License-Identifier: MIT */
/* soak.h - what the parts of the soak (dlock_soak, `make soak`) share.
 *
 * The soak runs dlock as a long-lived service would: every primitive on both faces, on a
 * names picked at random from a pool per kind, while faults are injected on a schedule,
 * and it watches the process and the server for anything that grows. The parts:
 *   soak_main.c      configuration, the run's phases, the verdict
 *   soak_blocking.c  the blocking face: threads on two clients (and on the Sentinel and
 *                    Cluster clients)
 *   soak_async.c     the async face: agents on the soak's own libev loop
 *   soak_marks.c     the exclusion marks (who is inside which critical section) and the
 *                    outcome counters every operation reports to
 *   soak_faults.c    the fault schedule and the log that explains lost leases
 *   soak_series.c    the samples, the trend test, the CSV and the table
 *   plot.py          the picture of the CSV; run.sh: what `make soak` runs
 *
 * Everything here is sized at start and touched before the first sample, so the soak's
 * own bookkeeping never shows up as growth in the series it judges.
 */
#ifndef DLOCK_SOAK_H
#define DLOCK_SOAK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "dlock.h"
#include "redis_fixture.h"

/* The kinds of operation a worker or agent runs; each is one acquire, a short critical
 * section and a release (or, for the latch, a set, a count-down and an await) on a handle
 * made for it and freed after it, so that handle creation and freeing soak too. */
enum soak_kind {
    SOAK_LOCK,      /* reentrant lock, acquired twice (reentrancy) */
    SOAK_FENCED,    /* fenced lock: tokens must rise from holder to holder */
    SOAK_FAIR,      /* fair lock */
    SOAK_SPIN,      /* spin lock */
    SOAK_READ,      /* read-write lock, read half (shared) */
    SOAK_WRITE,     /* read-write lock, write half */
    SOAK_SEMAPHORE, /* semaphore of SOAK_PERMIT_COUNT permits */
    SOAK_PERMITS,   /* expirable permits, SOAK_PERMIT_COUNT of them */
    SOAK_LATCH,     /* count-down latch */
    SOAK_MULTI,     /* MultiLock over two reentrant locks on two clients */
    SOAK_RED,       /* RedLock over three members on two clients */
    SOAK_KINDS
};

/* The mark groups (one per family of Redis objects): a kind marks the names of its
 * group while inside its critical section. MultiLock members are names of the reentrant
 * locks' group, so a MultiLock and a plain lock on the same name exclude each other. */
enum soak_group {
    GROUP_LOCK,
    GROUP_FENCED,
    GROUP_FAIR,
    GROUP_SPIN,
    GROUP_RW,
    GROUP_SEMAPHORE,
    GROUP_PERMITS,
    GROUP_LATCH,
    GROUP_RED,
    GROUP_LONG, /* the long holders' watchdog locks */
    SOAK_GROUPS
};

#define SOAK_PERMIT_COUNT 2 /* permits of every semaphore and expirable-permits set */
#define SOAK_MAX_NAMES 256  /* largest SOAK_NAMES */
#define SOAK_STATUSES 14    /* DLOCK_OK and the 13 error codes: index -status */

/* ---- configuration (soak_main.c) ------------------------------------------------------- */
typedef struct soak_config {
    int64_t run_ms;       /* SOAK_S: the length of the work phase */
    int64_t sample_ms;    /* SOAK_SAMPLE_S: time between samples */
    int64_t warmup_ms;    /* SOAK_WARMUP_S: samples before it are not judged */
    int64_t fault_ms;     /* SOAK_FAULT_S: time between faults, 0 for none */
    int threads;          /* SOAK_THREADS: blocking threads per client */
    int agents;           /* SOAK_AGENTS: async agents on the loop */
    int names;            /* SOAK_NAMES: names per group */
    int64_t pace_ms;      /* SOAK_PACE_MS: pause between a worker's operations */
    int64_t watchdog_ms;  /* the clients' watchdog_ms */
    int64_t timeout_ms;   /* the clients' timeout_ms */
    int64_t retry_ms;     /* the clients' retry_delay_ms */
    unsigned kinds;       /* SOAK_KINDS: the kinds run, a bit per enum soak_kind */
    bool topology;        /* SOAK_TOPOLOGY: also a Sentinel and a Cluster, when possible */
    const char *selftest; /* SOAK_SELFTEST: "", "leak", "overlap" or "lost" */
    const char *out_dir;  /* SOAK_OUT: where samples.csv and faults.csv go */
} soak_config;

extern soak_config soak_cfg;

/* true from the moment the work phase ends: workers and agents finish what they are doing
 * and start nothing new. */
extern atomic_bool soak_stopping;

/* Monotonic ms since the soak started. */
int64_t soak_now_ms(void);
void soak_sleep_ms(int64_t ms);
/* A thread-local xorshift generator, seeded per thread. */
uint32_t soak_rand(void);

/* "soak:<group>:<index>" into buf (size >= 64). */
void soak_name(char *buf, enum soak_group g, int index, const char *suffix);
const char *soak_kind_name(enum soak_kind k);
/* The n-th kind of a worker's rotation among those SOAK_KINDS enables; advances *n. */
enum soak_kind soak_next_kind(long *n);

/* ---- marks and outcomes (soak_marks.c) ------------------------------------------------- */
void soak_marks_init(void);
/* Inside a critical section: exclusive (lock kinds, write half, RedLock), shared (read
 * half) or counted (semaphore and permits: at most SOAK_PERMIT_COUNT inside), each left by
 * its soak_leave_* twin. An overlap is counted and the first one described. */
void soak_mark_exclusive(enum soak_group g, int index, const char *who);
void soak_mark_shared(enum soak_group g, int index, const char *who);
void soak_mark_counted(enum soak_group g, int index, const char *who);
void soak_leave_exclusive(enum soak_group g, int index);
void soak_leave_shared(enum soak_group g, int index);
void soak_leave_counted(enum soak_group g, int index);
/* A fenced holder's token: must be above every token seen on that name before. */
void soak_fenced_token(int index, uint64_t token, const char *who);

long soak_overlaps(void);
/* Overlaps on a name that did not lose a lease within grace_ms of them. One that did is
 * the paused holder of docs/reliability.md: its lease ran out while it was not running
 * (a stall, a fault) and another took the lock, as a lease allows; the lock kept its
 * promise. Every other overlap is a broken promise. */
long soak_overlaps_unexplained(int64_t grace_ms);
const char *soak_first_overlap(void);

/* Every operation's outcome, by kind and face (0 blocking, 1 async). Statuses that mean
 * a hold was lost (DLOCK_ELOST, DLOCK_ENOTOWNER from a release) are also logged as lost
 * events, which the fault log must explain. */
void soak_outcome(enum soak_kind k, int face, int status, const char *what);
long soak_outcome_count(enum soak_kind k, int face, int status);
/* The lost callback every handle gets: logs a lost event. */
void soak_on_lost(dlock_lock *l, uint64_t owner, int reason, void *arg);
long soak_ops_total(void);
/* Outcomes that no fault explains (DLOCK_EINVAL, DLOCK_EDEADLK, DLOCK_ECLOSED, ...): each
 * fails the run; the first one described. */
long soak_bad_outcomes(void);
const char *soak_first_bad(void);

/* ---- faults (soak_faults.c) ------------------------------------------------------------ */
typedef struct sentinel_fixture sentinel_fixture;
typedef struct cluster_fixture cluster_fixture;
typedef struct soak_targets {
    redis_fixture *redis;       /* the server the three main clients talk to */
    sentinel_fixture *sentinel; /* NULL: no Sentinel failovers */
    cluster_fixture *cluster;   /* NULL: no Cluster resharding */
    int cluster_name_base;      /* the Cluster workers' first name index */
} soak_targets;

/* The fault thread: injects the next fault of the rotation every fault_ms (the Sentinel
 * failover and the Cluster resharding join the rotation when their targets are there). */
int soak_faults_start(const soak_targets *t);
void soak_faults_stop(void);
/* A lost lease (or a release that found the hold gone) at now: logged with its cause. */
void soak_lost_event(const char *what, int reason);
/* How long after a fault or stall a lost lease still counts as its doing. */
int64_t soak_loss_grace_ms(void);
/* Lost events no fault window explains, and all of them. */
long soak_lost_unexplained(void);
long soak_lost_total(void);
long soak_faults_injected(void);
/* Writes faults.csv and lost.csv into dir; prints the fault summary. */
void soak_faults_report(const char *dir);
/* Whether now lies in a fault window (errors then are expected). */
bool soak_in_fault_window(int64_t t_ms);

/* ---- the two faces -------------------------------------------------------------------- */
/* Starts cfg.threads blocking threads on each of the two clients, plus a long holder on
 * each, on names name_base .. name_base + names - 1 (composites take one member of each
 * client; a and b may be the same client). label names them in messages. */
int soak_blocking_start(dlock_client *a, dlock_client *b, int name_base, const char *label);
void soak_blocking_join(void);
/* Starts the loop thread with its own client on url; agents also use member locks on
 * `other` (a blocking client) for cross-client composites. */
int soak_async_start(const dlock_options *o, dlock_client *other);
/* The async client, for its stats (valid from start until soak_async_finish). */
dlock_client *soak_async_client(void);
/* Stops the agents and waits until every one is idle (no call in flight). */
void soak_async_quiesce(void);
/* Frees the async client on its loop and joins the loop thread. */
void soak_async_finish(void);

#endif /* DLOCK_SOAK_H */
