/* SPDX-License-Identifier: MIT */
/* soak_faults.c - the soak's fault schedule, and the log that explains lost leases.
 *
 * Every soak_cfg.fault_ms the fault thread injects the next fault of a fixed rotation on
 * the server every client uses:
 *   kill-normal   CLIENT KILL TYPE normal: every command connection drops
 *   kill-pubsub   CLIENT KILL TYPE pubsub: every subscriber connection drops
 *   script-flush  SCRIPT FLUSH: every cached script must be loaded again
 *   debug-sleep   DEBUG SLEEP 1: the server answers nothing for a second
 *   sigstop       SIGSTOP, 1 s, SIGCONT: the same seen from outside the server
 * and, when the soak runs its Sentinel and Cluster fixtures, on those:
 *   sentinel-failover  SENTINEL FAILOVER (once the replica is in sync): the master moves
 *   cluster-reshard    the slot of one of the Cluster workers' names moves to another
 *                      master (MIGRATING/IMPORTING, MIGRATE, SETSLOT NODE)
 * and logs its window (from just before it to when it was over).
 *
 * The soak's own process may be starved too (a loaded machine does not run it for
 * seconds): a stall thread sleeps 100 ms at a time and logs every wake-up more than a
 * second late as a stall, a window like a fault's. A lease lost then is the lease doing
 * its job (it ran out while its holder could not renew it), not a defect.
 *
 * A lease lost (a lost callback, a release that says DLOCK_ELOST or finds nothing to
 * release) is explained when it falls in a fault's or a stall's window widened by how long the
 * library may take to notice: watchdog_ms (a lease runs out at 2/3 of it; renewals go every 1/3),
 * plus one command time-out and two reconnect delays. Anything else fails the run.
 *
 * SOAK_SELFTEST=lost replaces the faults by a DEL of the long holders' locks that is not
 * logged, so the run must fail with unexplained lost leases.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cluster_fixture.h"
#include "sentinel_fixture.h"
#include "soak.h"

#define MAX_FAULTS 8192
#define MAX_LOST 8192
#define MAX_STALLS 8192
#define STALL_TICK_MS 100
#define STALL_MS 1000 /* a wake-up this much later than asked is a stall */

typedef struct fault_window {
    int64_t start_ms;
    int64_t end_ms;
    const char *what;
    bool ok; /* the injection itself worked */
} fault_window;

typedef struct lost_event {
    int64_t at_ms;
    int reason;
    char what[80];
} lost_event;

static fault_window faults[MAX_FAULTS];
static atomic_long fault_count;
static fault_window stalls[MAX_STALLS];
static atomic_long stall_count;
static pthread_t stall_thread;
static lost_event losts[MAX_LOST];
static long lost_count;
static pthread_mutex_t lost_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t fault_thread;
static atomic_bool fault_stop;
static bool fault_started;
static soak_targets targets;

static const char *const rotation[] = {"kill-normal",    "kill-pubsub",       "script-flush",
                                       "debug-sleep",    "sentinel-failover", "sigstop",
                                       "cluster-reshard"};
#define ROTATION (sizeof rotation / sizeof rotation[0])

/* Whether the rotation's fault has a target in this run. */
static bool available(const char *what) {
    if (!strcmp(what, "sentinel-failover"))
        return targets.sentinel != NULL;
    if (!strcmp(what, "cluster-reshard"))
        return targets.cluster != NULL;
    return true;
}

int64_t soak_loss_grace_ms(void) {
    return soak_cfg.watchdog_ms + soak_cfg.timeout_ms + 2 * soak_cfg.retry_ms;
}

static int64_t grace_ms(void) {
    return soak_cfg.watchdog_ms + soak_cfg.timeout_ms + 2 * soak_cfg.retry_ms;
}

static bool reply_ok(redisReply *r) {
    bool ok = r && r->type != REDIS_REPLY_ERROR;
    if (r)
        freeReplyObject(r);
    return ok;
}

/* Moves the slot of one of the Cluster workers' names to the next master. */
static bool reshard(void) {
    cluster_fixture *f = targets.cluster;
    char name[64];
    int idx = targets.cluster_name_base + (int)(soak_rand() % (uint32_t)soak_cfg.names);
    soak_name(name, (enum soak_group)(soak_rand() % GROUP_LONG), idx, NULL);
    int slot = cluster_fixture_slot_of_key(f, name);
    int owner = slot < 0 ? -1 : cluster_fixture_node_of_slot(f, slot);
    if (owner < 0)
        return false;
    for (int step = 1; step < CLUSTER_FIXTURE_NODES; step++) {
        int to = (owner + step) % CLUSTER_FIXTURE_NODES;
        if (cluster_fixture_is_master(f, to))
            return cluster_fixture_migrate_slot(f, slot, to) == 0;
    }
    return false;
}

static bool inject(const char *what) {
    redis_fixture *f = targets.redis;
    if (!strcmp(what, "sentinel-failover"))
        return sentinel_fixture_failover(targets.sentinel) >= 0;
    if (!strcmp(what, "cluster-reshard"))
        return reshard();
    if (!strcmp(what, "kill-normal"))
        return redis_fixture_client_kill_type(f, "normal") >= 0;
    if (!strcmp(what, "kill-pubsub"))
        return redis_fixture_client_kill_type(f, "pubsub") >= 0;
    if (!strcmp(what, "script-flush"))
        return reply_ok(redis_fixture_cmd(f, "SCRIPT FLUSH"));
    if (!strcmp(what, "debug-sleep"))
        return reply_ok(redis_fixture_cmd(f, "DEBUG SLEEP 1"));
    if (redis_fixture_pause(f) != 0)
        return false;
    soak_sleep_ms(1000);
    return redis_fixture_resume(f) == 0;
}

/* SOAK_SELFTEST=lost: take the long holders' locks away behind their backs. */
static void steal_long_locks(void) {
    for (int i = 0; i < 4; i++) {
        char name[64];
        soak_name(name, GROUP_LONG, i, NULL);
        redisReply *r = redis_fixture_cmd(targets.redis, "DEL %s", name);
        if (r)
            freeReplyObject(r);
    }
}

static void *stall_main(void *arg) {
    (void)arg;
    for (int64_t before = soak_now_ms(); !atomic_load(&fault_stop);) {
        soak_sleep_ms(STALL_TICK_MS);
        int64_t now = soak_now_ms();
        long i = atomic_load(&stall_count);
        if (now - before - STALL_TICK_MS > STALL_MS && i < MAX_STALLS) {
            stalls[i] =
                (fault_window){.start_ms = before, .end_ms = now, .what = "stall", .ok = true};
            atomic_store(&stall_count, i + 1);
        }
        before = now;
    }
    return NULL;
}

static void *fault_main(void *arg) {
    (void)arg;
    bool steal = !strcmp(soak_cfg.selftest, "lost");
    int64_t next = soak_now_ms() + soak_cfg.fault_ms;
    for (size_t turn = 0; !atomic_load(&fault_stop);) {
        if (soak_now_ms() < next) {
            soak_sleep_ms(100);
            continue;
        }
        next += soak_cfg.fault_ms;
        if (steal) {
            steal_long_locks();
            continue;
        }
        long i = atomic_load(&fault_count);
        if (i >= MAX_FAULTS)
            continue;
        fault_window *w = &faults[i];
        do
            w->what = rotation[turn++ % ROTATION];
        while (!available(w->what));
        /* A failover needs a replica in sync: the old master becomes one 8-18 s after the
         * previous failover. Waiting for it is not part of the fault's window. */
        if (!strcmp(w->what, "sentinel-failover") &&
            sentinel_fixture_wait_synced(targets.sentinel, 60000) != 0)
            fprintf(stderr, "soak: the Sentinel replica is not in sync\n");
        w->start_ms = soak_now_ms();
        w->ok = inject(w->what);
        w->end_ms = soak_now_ms();
        atomic_store(&fault_count, i + 1);
        if (!w->ok)
            fprintf(stderr, "soak: fault %s could not be injected\n", w->what);
    }
    return NULL;
}

int soak_faults_start(const soak_targets *t) {
    targets = *t;
    memset(faults, 0, sizeof faults);
    memset(losts, 0, sizeof losts);
    memset(stalls, 0, sizeof stalls);
    if (pthread_create(&stall_thread, NULL, stall_main, NULL) != 0)
        return -1;
    if (soak_cfg.fault_ms <= 0)
        return 0;
    if (pthread_create(&fault_thread, NULL, fault_main, NULL) != 0)
        return -1;
    fault_started = true;
    return 0;
}

void soak_faults_stop(void) {
    atomic_store(&fault_stop, true);
    pthread_join(stall_thread, NULL);
    if (fault_started)
        pthread_join(fault_thread, NULL);
    fault_started = false;
}

void soak_lost_event(const char *what, int reason) {
    pthread_mutex_lock(&lost_mu);
    if (lost_count < MAX_LOST) {
        lost_event *e = &losts[lost_count];
        e->at_ms = soak_now_ms();
        e->reason = reason;
        snprintf(e->what, sizeof e->what, "%s", what);
    }
    lost_count++;
    pthread_mutex_unlock(&lost_mu);
}

/* A release that finds its hold lost (DLOCK_ELOST, DLOCK_ENOTOWNER) reports a loss that
 * happened at any time since the acquire: up to a long holder's hold (10 s) before it. */
#define RELEASE_LOOKBACK_MS 10000

static const fault_window *window_around(const fault_window *w, long n, int64_t t,
                                         int64_t lookback) {
    for (long i = 0; i < n; i++)
        if (t >= w[i].start_ms - 500 && t - lookback <= w[i].end_ms + grace_ms())
            return &w[i];
    return NULL;
}

/* The fault or stall whose window explains an event at t, or NULL. */
static const fault_window *explaining(int64_t t, int64_t lookback) {
    const fault_window *w = window_around(faults, atomic_load(&fault_count), t, lookback);
    return w ? w : window_around(stalls, atomic_load(&stall_count), t, lookback);
}

static const fault_window *explaining_fault(int64_t t) {
    return explaining(t, 0);
}

static const fault_window *explaining_loss(const lost_event *e) {
    return explaining(e->at_ms, strstr(e->what, "release") ? RELEASE_LOOKBACK_MS : 0);
}

bool soak_in_fault_window(int64_t t_ms) {
    return explaining_fault(t_ms) != NULL;
}

long soak_lost_total(void) {
    pthread_mutex_lock(&lost_mu);
    long n = lost_count;
    pthread_mutex_unlock(&lost_mu);
    return n;
}

long soak_lost_unexplained(void) {
    pthread_mutex_lock(&lost_mu);
    long n = lost_count < MAX_LOST ? lost_count : MAX_LOST, bad = 0;
    for (long i = 0; i < n; i++)
        if (!explaining_loss(&losts[i]))
            bad++;
    bad += lost_count - n; /* events the log had no room for cannot be explained */
    pthread_mutex_unlock(&lost_mu);
    return bad;
}

long soak_faults_injected(void) {
    return atomic_load(&fault_count);
}

void soak_faults_report(const char *dir) {
    char path[512];
    long n = atomic_load(&fault_count);
    snprintf(path, sizeof path, "%s/faults.csv", dir);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "start_s,end_s,fault,injected\n");
        for (long i = 0; i < n; i++)
            fprintf(f, "%.3f,%.3f,%s,%d\n", (double)faults[i].start_ms / 1000.0,
                    (double)faults[i].end_ms / 1000.0, faults[i].what, faults[i].ok);
        for (long i = 0; i < atomic_load(&stall_count); i++)
            fprintf(f, "%.3f,%.3f,%s,%d\n", (double)stalls[i].start_ms / 1000.0,
                    (double)stalls[i].end_ms / 1000.0, stalls[i].what, stalls[i].ok);
        fclose(f);
    }
    long per_kind[ROTATION] = {0}, failed = 0;
    for (long i = 0; i < n; i++) {
        for (size_t k = 0; k < ROTATION; k++)
            if (faults[i].what == rotation[k])
                per_kind[k]++;
        failed += !faults[i].ok;
    }
    printf("faults injected: %ld (", n);
    for (size_t k = 0; k < ROTATION; k++)
        printf("%s%s %ld", k ? ", " : "", rotation[k], per_kind[k]);
    printf("), %ld could not be injected\n", failed);
    int64_t longest = 0;
    for (long i = 0; i < atomic_load(&stall_count); i++)
        if (stalls[i].end_ms - stalls[i].start_ms > longest)
            longest = stalls[i].end_ms - stalls[i].start_ms;
    printf("stalls (the soak not run for over %d ms): %ld, the longest %lld ms\n", STALL_MS,
           atomic_load(&stall_count), (long long)longest);

    snprintf(path, sizeof path, "%s/lost.csv", dir);
    f = fopen(path, "w");
    pthread_mutex_lock(&lost_mu);
    long m = lost_count < MAX_LOST ? lost_count : MAX_LOST;
    if (f)
        fprintf(f, "at_s,reason,what,explained_by\n");
    for (long i = 0; i < m; i++) {
        const fault_window *w = explaining_loss(&losts[i]);
        if (f)
            fprintf(f, "%.3f,%s,%s,%s\n", (double)losts[i].at_ms / 1000.0,
                    dlock_err_name(losts[i].reason), losts[i].what, w ? w->what : "NOTHING");
        if (!w)
            printf("  lost lease NOT explained by a fault: %.1f s %s (%s)\n",
                   (double)losts[i].at_ms / 1000.0, losts[i].what, dlock_err_name(losts[i].reason));
    }
    pthread_mutex_unlock(&lost_mu);
    if (f)
        fclose(f);
}
