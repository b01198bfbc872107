/* test_kill_faults.c — connection kills and a paused holder, with the mutual-exclusion
 * checker (tests/support/checker.h) watching every critical section.
 *
 * What is proven:
 * - command connections killed every 300 ms (CLIENT KILL TYPE normal) under a contended
 *   load of 2 processes x 4 threads on 4 locks: no two sections of a lock overlap; a
 *   section counts only when its acquire said DLOCK_OK, and each lock's counter equals its
 *   sections; every acquire and release returns DLOCK_OK or one of the codes a dropped
 *   connection may give (each code is counted and printed); every worker finishes; after
 *   the load every lock is free within one lease (watchdog_ms 2000: an acquire that failed
 *   with DLOCK_ECONN may have left a hold nobody renews), and every client still acquires
 *   and releases each lock;
 * - the same against fair locks (issue 7; 6 s, fair_wait_ms = watchdog_ms) and against
 *   read-write locks (issue 8; 6 s, 25 % of the sections on the write half, the rest on
 *   the read half): for the read-write lock the writers' sections are one checker per
 *   lock (never overlapping, exact counter) and the readers' are logged apart and compared
 *   with them (checker_check_excluded(): no reader section meets a writer's); the
 *   clients' last round takes both halves. The lines of waiters (redisson_lock_queue:{N},
 *   redisson_lock_timeout:{N}, {N}:rwlock_writers) have no TTL: an entry left by an
 *   attempt that failed with DLOCK_ECONN is dropped by the next script call past its
 *   deadline, so a lease after the last round one more attempt is made on each lock, and
 *   then nothing at all may be left in Redis (DBSIZE 0);
 * - the subscriber connections killed (CLIENT KILL TYPE pubsub) while 6 threads of 2
 *   clients wait for a held lock, and the lock released right after: the release's message
 *   is lost with the connections, yet every waiter gets the lock within about a second
 *   (they resubscribe and try again), long before the holder's 30 s lease would have let
 *   them in; the same with a fair lock (each waiter subscribed on its own channel and in
 *   the line; the release wakes only the first, and the line is gone afterwards);
 * - a holder paused past its lease (a forked child holding a fenced watchdog lock,
 *   watchdog_ms 1500, SIGSTOPped): Redis frees the lock, another client takes it with a
 *   higher token; after SIGCONT the child's lost callback fires once, its release says
 *   DLOCK_ELOST, and the other client's hold is untouched.
 *
 * Every test starts its own redis-server and prints its figures ("# ..."). */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "checker.h"
#include "core_call.h"
#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60

/* The lock kinds the scenarios run against (issues 7 and 8). */
typedef enum lock_kind { KIND_LOCK, KIND_FAIR, KIND_RWLOCK } lock_kind;

static const char *kind_name(lock_kind kind) {
    return kind == KIND_LOCK ? "lock" : kind == KIND_FAIR ? "fair lock" : "read-write lock";
}

/* One lock of any kind: l is the lock, or the read-write lock's write half. */
typedef struct any_lock {
    dlock_lock *l;
    dlock_rwlock *rw; /* KIND_RWLOCK only */
} any_lock;

static int make_lock(dlock_client *c, const char *name, lock_kind kind, any_lock *out) {
    *out = (any_lock){0};
    switch (kind) {
    case KIND_LOCK:
        return dlock_lock_new(c, name, &out->l);
    case KIND_FAIR:
        return dlock_fairlock_new(c, name, &out->l);
    case KIND_RWLOCK: {
        int rc = dlock_rwlock_new(c, name, &out->rw);
        if (rc == DLOCK_OK)
            out->l = dlock_rwlock_write(out->rw);
        return rc;
    }
    }
    return DLOCK_EINVAL;
}

/* The half a section takes: the lock itself, or the read-write lock's write or read half. */
static dlock_lock *lock_half(const any_lock *a, bool write) {
    return a->rw != NULL && !write ? dlock_rwlock_read(a->rw) : a->l;
}

static void free_lock(any_lock *a) {
    if (a->rw != NULL)
        dlock_rwlock_free(a->rw);
    else
        dlock_lock_free(a->l);
    *a = (any_lock){0};
}

/* Reads exactly len bytes from fd, waiting at most timeout_ms in all; false on timeout, EOF
 * or error. */
static bool read_full(int fd, void *buf, size_t len, int64_t timeout_ms) {
    char *p = buf;
    int64_t until = test_now_ms() + timeout_ms;
    while (len > 0) {
        int64_t left = until - test_now_ms();
        if (left <= 0)
            return false;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int n = poll(&pfd, 1, (int)left);
        if (n < 0)
            continue; /* EINTR */
        if (n == 0)
            return false;
        ssize_t got = read(fd, p, len);
        if (got <= 0)
            return false;
        p += got;
        len -= (size_t)got;
    }
    return true;
}

/* Children of the running test, killed by the teardown if the test failed with them alive. */
#define MAX_CHILDREN 8
static pid_t children[MAX_CHILDREN];

static void child_forget(pid_t pid) {
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] == pid)
            children[i] = 0;
}

static pid_t fork_child(void) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = test_fork();
    assert_true(pid >= 0);
    if (pid > 0) {
        for (int i = 0; i < MAX_CHILDREN; i++)
            if (children[i] == 0) {
                children[i] = pid;
                break;
            }
    }
    return pid;
}

static int kill_children(void **state) {
    (void)state;
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] > 0) {
            kill(children[i], SIGKILL);
            waitpid(children[i], NULL, 0);
            children[i] = 0;
        }
    return 0;
}

/* ---- scenario 2: command connections killed under load ------------------------------------ */

#define KILL_PROCESSES 2
#define KILL_THREADS 4
#define KILL_LOCKS 4
#define KILL_EVERY_MS 300
#define KILL_LOG_CAPACITY (1L << 20)

/* Return codes by operation, in shared memory: index -rc for DLOCK_OK .. DLOCK_EDEADLK,
 * the last slot for anything else. */
#define CODES 14
enum { OP_ACQUIRE, OP_TRY_ACQUIRE, OP_RELEASE, OP_LOST, OPS };
static const char *const op_names[OPS] = {"acquire", "try_acquire", "release", "lost callback"};

typedef struct tally {
    atomic_long n[OPS][CODES];
} tally;

static void tally_add(tally *t, int op, int rc) {
    int i = rc <= 0 && rc > -(CODES - 1) ? -rc : CODES - 1;
    atomic_fetch_add(&t->n[op][i], 1);
}

static long tally_get(tally *t, int op, int rc) {
    return atomic_load(&t->n[op][-rc]);
}

static void tally_print(tally *t) {
    for (int op = 0; op < OPS; op++) {
        printf("#   %-13s", op_names[op]);
        long total = 0;
        for (int i = 0; i < CODES; i++) {
            long n = atomic_load(&t->n[op][i]);
            total += n;
            if (n)
                printf(" %s %ld", i == CODES - 1 ? "OTHER" : dlock_err_name(-i), n);
        }
        printf("%s\n", total ? "" : " none");
    }
}

typedef struct kill_load {
    lock_kind kind;
    const char *url;
    int64_t watchdog_ms; /* fair_wait_ms too */
    int64_t deadline_ms;
    int write_percent;       /* KIND_RWLOCK: share of the sections on the write half */
    checker *k[KILL_LOCKS];  /* the sections (KIND_RWLOCK: the writers'); every error */
    checker *rk[KILL_LOCKS]; /* KIND_RWLOCK: the readers' sections */
    char name[KILL_LOCKS][32];
    tally *t;
    int done_fd; /* children write 'D' when their workers stopped, then their verdict */
    int go_fd;   /* the parent writes one 'G' per child for the last round */
} kill_load;

typedef struct kill_process {
    const kill_load *ld;
    dlock_client *c;
    any_lock l[KILL_LOCKS];
} kill_process;

typedef struct kill_worker {
    kill_process *p;
    int id;
    unsigned seed;
} kill_worker;

static void count_lost(dlock_lock *l, uint64_t owner, int reason, void *arg) {
    (void)l;
    (void)owner;
    tally_add(arg, OP_LOST, reason);
}

static void *kill_worker_main(void *arg) {
    kill_worker *w = arg;
    const kill_load *ld = w->p->ld;
    /* half hold by the watchdog, half by a lease of watchdog_ms; half wait without limit,
     * half at most a second */
    const int64_t lease_ms = w->id % 2 ? ld->watchdog_ms : DLOCK_WATCHDOG;
    const bool bounded = (w->id / 2) % 2 == 1;
    while (test_now_ms() < ld->deadline_ms) {
        int o = (int)(rand_r(&w->seed) % KILL_LOCKS);
        const bool write =
            ld->kind != KIND_RWLOCK || (int)(rand_r(&w->seed) % 100) < ld->write_percent;
        dlock_lock *l = lock_half(&w->p->l[o], write);
        checker *k = ld->k[o];               /* errors go here whatever the half */
        checker *sk = write ? k : ld->rk[o]; /* the section's log */
        int rc =
            bounded ? dlock_lock_try_acquire(l, 1000, lease_ms) : dlock_lock_acquire(l, lease_ms);
        tally_add(ld->t, bounded ? OP_TRY_ACQUIRE : OP_ACQUIRE, rc);
        if (rc != DLOCK_OK) {
            /* DLOCK_ECONN: the hold may or may not have been taken; it is not ours to use */
            if (rc != DLOCK_ECONN && !(bounded && rc == DLOCK_ETIMEDOUT))
                checker_error(k, w->id, "acquire %s: %s (%s)", ld->name[o], dlock_err_name(rc),
                              dlock_last_error());
            test_sleep_ms(2);
            continue;
        }
        checker_exit(sk, checker_enter(sk, w->id), 0);
        rc = dlock_lock_release(l);
        tally_add(ld->t, OP_RELEASE, rc);
        if (rc != DLOCK_OK && rc != DLOCK_ECONN && rc != DLOCK_ELOST)
            checker_error(k, w->id, "release %s: %s (%s)", ld->name[o], dlock_err_name(rc),
                          dlock_last_error());
    }
    for (int o = 0; o < KILL_LOCKS; o++) {
        checker_finished(ld->k[o], w->id);
        if (ld->rk[o] != NULL)
            checker_finished(ld->rk[o], w->id);
    }
    return NULL;
}

/* One load process: its own client, one handle per lock shared by its threads. After the
 * load it says 'D', waits for 'G' (the parent checked that the locks are free), takes and
 * gives back each lock once, and says '0' (all worked) or '1'. */
static _Noreturn void kill_process_main(const kill_load *ld, int index) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    kill_process p = {.ld = ld};
    char verdict = '0';
    dlock_options o;
    dlock_options_init(&o);
    o.url = ld->url;
    o.watchdog_ms = ld->watchdog_ms;
    o.fair_wait_ms = ld->watchdog_ms;
    int rc = dlock_client_new(&o, &p.c);
    for (int i = 0; rc == DLOCK_OK && i < KILL_LOCKS; i++)
        if ((rc = make_lock(p.c, ld->name[i], ld->kind, &p.l[i])) == DLOCK_OK &&
            (rc = dlock_lock_on_lost(lock_half(&p.l[i], true), count_lost, ld->t)) == DLOCK_OK &&
            p.l[i].rw != NULL)
            rc = dlock_lock_on_lost(lock_half(&p.l[i], false), count_lost, ld->t);
    if (rc != DLOCK_OK) {
        checker_error(ld->k[0], index * KILL_THREADS, "process %d setup: %s (%s)", index,
                      dlock_err_name(rc), dlock_last_error());
        verdict = '1';
    } else {
        kill_worker w[KILL_THREADS];
        pthread_t t[KILL_THREADS];
        int started = 0;
        for (int i = 0; i < KILL_THREADS; i++) {
            w[i] = (kill_worker){
                .p = &p, .id = index * KILL_THREADS + i, .seed = (unsigned)(index * 31 + i + 7)};
            if (pthread_create(&t[i], NULL, kill_worker_main, &w[i]) != 0) {
                verdict = '1';
                break;
            }
            started++;
        }
        for (int i = 0; i < started; i++)
            pthread_join(t[i], NULL);
    }
    char go = 0;
    (void)!write(ld->done_fd, "D", 1);
    if (read(ld->go_fd, &go, 1) != 1 || go != 'G')
        verdict = '1';
    /* each half of a read-write lock */
    for (int half = 0; half < (ld->kind == KIND_RWLOCK ? 2 : 1); half++)
        for (int i = 0; verdict == '0' && i < KILL_LOCKS; i++) {
            dlock_lock *l = lock_half(&p.l[i], half == 0);
            if ((rc = dlock_lock_acquire(l, 10000)) != DLOCK_OK ||
                (rc = dlock_lock_release(l)) != DLOCK_OK) {
                checker_error(ld->k[i], index * KILL_THREADS, "after the kills, %s%s: %s (%s)",
                              ld->name[i], half ? " (read)" : "", dlock_err_name(rc),
                              dlock_last_error());
                verdict = '1';
            }
        }
    for (int i = 0; i < KILL_LOCKS; i++)
        free_lock(&p.l[i]);
    if (p.c != NULL && dlock_client_free(p.c) != DLOCK_OK)
        verdict = '1';
    (void)!write(ld->done_fd, &verdict, 1);
    test_child_exit(verdict == '0' ? 0 : 1);
}

static long long count_keys(redis_fixture *f, const char *pattern) {
    redisReply *r = redis_fixture_cmd(f, "KEYS %s", pattern);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    long long n = (long long)r->elements;
    freeReplyObject(r);
    return n;
}

/* Every hold is gone: the lock hashes, and a read-write lock's read holds' timeout keys
 * (which run out by their own leases). The lines of waiters are not holds: see below. */
static bool all_locks_free(redis_fixture *f, const kill_load *ld) {
    for (int o = 0; o < KILL_LOCKS; o++)
        if (redis_fixture_int(f, "EXISTS %s", ld->name[o]) != 0)
            return false;
    return ld->kind != KIND_RWLOCK || count_keys(f, "*:rwlock_timeout:*") == 0;
}

static void run_command_kills(lock_kind kind, int64_t duration_base_ms) {
    redis_fixture *f = start_server();
    kill_load ld = {.kind = kind,
                    .url = redis_fixture_unix_url(f),
                    .watchdog_ms = test_slack_ms(1000),
                    .write_percent = 25};
    static const char *const prefix[] = {"killed", "killed-fair", "killed-rw"};
    for (int o = 0; o < KILL_LOCKS; o++) {
        snprintf(ld.name[o], sizeof(ld.name[o]), "%s-%d", prefix[kind], o);
        ld.k[o] = checker_new(ld.name[o], KILL_PROCESSES * KILL_THREADS, KILL_LOG_CAPACITY, false);
        if (kind == KIND_RWLOCK) {
            char readers[48];
            snprintf(readers, sizeof(readers), "%s readers", ld.name[o]);
            ld.rk[o] =
                checker_new(readers, KILL_PROCESSES * KILL_THREADS, KILL_LOG_CAPACITY, false);
        }
    }
    ld.t = checker_shared_alloc(sizeof(tally));
    int done[2], go[2];
    assert_int_equal(pipe(done), 0);
    assert_int_equal(pipe(go), 0);
    ld.done_fd = done[1];
    ld.go_fd = go[0];

    int64_t duration_ms = (int64_t)((double)duration_base_ms * test_scale());
    if (duration_ms < 3000)
        duration_ms = 3000;
    int64_t start = test_now_ms();
    ld.deadline_ms = start + duration_ms;
    pid_t pid[KILL_PROCESSES];
    for (int i = 0; i < KILL_PROCESSES; i++) {
        pid[i] = fork_child();
        if (pid[i] == 0) {
            close(done[0]);
            close(go[1]);
            kill_process_main(&ld, i);
        }
    }
    close(done[1]);
    close(go[0]);

    int kills = 0;
    long killed = 0;
    long long connections_before = redis_fixture_info_int(f, "stats", "total_connections_received");
    while (test_now_ms() + KILL_EVERY_MS < ld.deadline_ms) {
        test_sleep_ms(KILL_EVERY_MS);
        int n = redis_fixture_client_kill_type(f, "normal");
        assert_true(n >= 0);
        /* a kill while every client is still backing off before its reconnect finds nobody:
         * only the kills that cut connections count */
        kills += n > 0;
        killed += n;
    }
    /* every worker stops (the per-test watchdog catches one that hangs) */
    for (int i = 0; i < KILL_PROCESSES; i++) {
        char d = 0;
        if (!read_full(done[0], &d, 1, test_slack_ms(20000)) || d != 'D')
            fail_msg("load process did not finish its workers");
    }
    int64_t stopped_at = test_now_ms();
    int64_t load_ms = stopped_at - start;
    long long reconnects =
        redis_fixture_info_int(f, "stats", "total_connections_received") - connections_before;
    /* holds an acquire took without learning it expire within one lease */
    bool freed = false;
    POLL_UNTIL(freed, all_locks_free(f, &ld), ld.watchdog_ms + test_slack_ms(1000));
    int64_t freed_after = test_now_ms() - stopped_at;
    if (!freed)
        fail_msg("a lock still held %lld ms after the load stopped (watchdog_ms %lld)",
                 (long long)freed_after, (long long)ld.watchdog_ms);
    for (int i = 0; i < KILL_PROCESSES; i++)
        assert_int_equal(write(go[1], "G", 1), 1);
    int verdicts_ok = 0;
    for (int i = 0; i < KILL_PROCESSES; i++) {
        char v = 0;
        if (read_full(done[0], &v, 1, test_slack_ms(20000)) && v == '0')
            verdicts_ok++;
    }
    /* The lines of waiters (fair: redisson_lock_queue:{N}, redisson_lock_timeout:{N};
     * read-write: {N}:rwlock_writers) have no TTL: a waiter whose attempt failed with
     * DLOCK_ECONN may have left its entry, which the next script call on the lock drops
     * once its deadline (fair_wait_ms = watchdog_ms after its last refresh) has passed.
     * So: one lease after the last round, one more attempt on each lock, then nothing at
     * all may be left in Redis. */
    long long leftover_before_purge = -1;
    if (kind != KIND_LOCK) {
        leftover_before_purge = redis_fixture_int(f, "DBSIZE");
        test_sleep_ms(ld.watchdog_ms + 100);
        dlock_client *c = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = ld.watchdog_ms});
        for (int o = 0; o < KILL_LOCKS; o++) {
            any_lock a;
            ASSERT_RC(make_lock(c, ld.name[o], kind, &a), DLOCK_OK);
            for (int half = 0; half < (kind == KIND_RWLOCK ? 2 : 1); half++) {
                ASSERT_RC(dlock_lock_try_acquire(lock_half(&a, half == 0), 0, 10000), DLOCK_OK);
                ASSERT_RC(dlock_lock_release(lock_half(&a, half == 0)), DLOCK_OK);
            }
            free_lock(&a);
        }
        ASSERT_RC(dlock_client_free(c), DLOCK_OK);
    }
    for (int i = 0; i < KILL_PROCESSES; i++) {
        int status = 0;
        assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
        child_forget(pid[i]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail_msg("load process %d ended with status 0x%x", i, status);
    }
    close(done[0]);
    close(go[1]);

    long sections = 0, reads = 0;
    checker_report r[KILL_LOCKS];
    checker_cross_report x[KILL_LOCKS];
    memset(x, 0, sizeof(x));
    for (int o = 0; o < KILL_LOCKS; o++) {
        r[o] = checker_check(ld.k[o]);
        sections += r[o].sections;
        if (ld.rk[o] != NULL) {
            x[o] = checker_check_excluded(ld.k[o], ld.rk[o]);
            reads += x[o].shared_sections;
        }
    }
    printf("# %s: %d processes x %d threads on %d locks, %d kills (%ld connections, %lld new ones) "
           "in %lld ms: %ld sections, %.0f sections/s; locks free %lld ms after the load\n",
           kind_name(kind), KILL_PROCESSES, KILL_THREADS, KILL_LOCKS, kills, killed, reconnects,
           (long long)load_ms, sections + reads,
           (double)(sections + reads) * 1000.0 / (double)load_ms, (long long)freed_after);
    if (kind == KIND_RWLOCK)
        printf("#   %ld writes, %ld reads\n", sections, reads);
    if (kind != KIND_LOCK)
        printf("#   keys left after the last round: %lld; after one more attempt a lease later: "
               "%lld\n",
               leftover_before_purge, redis_fixture_int(f, "DBSIZE"));
    tally_print(ld.t);
    fflush(stdout);

    assert_int_equal(verdicts_ok, KILL_PROCESSES);
    for (int o = 0; o < KILL_LOCKS; o++) {
        if (!r[o].ok)
            fail_msg("%s: %ld overlaps, counter %ld of %ld, %d unfinished, %ld open, %ld errors "
                     "(%s) %s",
                     ld.name[o], r[o].overlaps, r[o].counter, r[o].expected, r[o].unfinished,
                     r[o].open, r[o].errors, r[o].first_error, r[o].first_problem);
        if (r[o].sections == 0)
            fail_msg("%s: nobody ever held it", ld.name[o]);
        if (kind == KIND_RWLOCK && !x[o].ok)
            fail_msg("%s: %ld reader sections meet a writer's (%s), %ld never exited, %ld dropped",
                     ld.name[o], x[o].conflicts, x[o].first_conflict, x[o].shared_open,
                     x[o].shared_dropped);
    }
    if (kind == KIND_RWLOCK && reads == 0)
        fail_msg("nobody ever read");
    if (kind != KIND_LOCK)
        assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    assert_true(kills >= 3);
    assert_true(killed >= kills); /* every kill found the clients' command connections */
    /* the codes counted are all the ones that may occur (a worker reports any other) */
    assert_int_equal(tally_get(ld.t, OP_ACQUIRE, DLOCK_OK) +
                         tally_get(ld.t, OP_TRY_ACQUIRE, DLOCK_OK),
                     sections + reads);

    for (int o = 0; o < KILL_LOCKS; o++) {
        checker_free(ld.k[o]);
        checker_free(ld.rk[o]);
    }
    checker_shared_free(ld.t, sizeof(tally));
    redis_fixture_stop(f);
}

static void
test_command_connections_killed_every_300ms_under_load_keep_sections_apart(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    run_command_kills(KIND_LOCK, 8000);
}

static void test_command_connections_killed_under_load_on_fair_locks(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    run_command_kills(KIND_FAIR, 6000);
}

static void test_command_connections_killed_under_load_on_a_read_write_mix(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    run_command_kills(KIND_RWLOCK, 6000);
}

/* ---- scenario 3: subscriber connections killed while waiters wait ------------------------- */

#define PUBSUB_CLIENTS 2
#define PUBSUB_WAITERS 6

typedef struct pubsub_waiter {
    dlock_lock *l;
    checker *k;
    int id;
    atomic_int rc; /* 1 while waiting; read by the test thread meanwhile */
    int64_t acquired_ms;
} pubsub_waiter;

static void *pubsub_waiter_main(void *arg) {
    pubsub_waiter *w = arg;
    int rc = dlock_lock_acquire(w->l, 30000);
    w->acquired_ms = test_now_ms();
    if (rc == DLOCK_OK) {
        checker_exit(w->k, checker_enter(w->k, w->id), 0);
        rc = dlock_lock_release(w->l);
    }
    atomic_store(&w->rc, rc);
    checker_finished(w->k, w->id);
    return NULL;
}

/* One holder (30 s lease: a waiter that only got in by the holder's TTL would take 30 s), 6
 * waiting threads on 2 other clients, the subscriber connections killed, then the release.
 * refuse_reconnect: the server refuses new connections (maxclients) from the kill until
 * 300 ms after the release, so the release's message is certainly lost and the waiters
 * must find out on their own once they are back. */
/* The waiters' subscriptions: the lock's waiters of one client share the lock's channel
 * (one subscriber per client); each fair-lock waiter has a channel of its own
 * (redisson_lock__channel:{N}:<client-id>:<owner>, one subscriber each). */
static long long pubsub_subscribers(redis_fixture *f, lock_kind kind, const char *name) {
    if (kind != KIND_FAIR) {
        char channel[96];
        snprintf(channel, sizeof(channel), "redisson_lock__channel:{%s}", name);
        return numsub(f, channel);
    }
    redisReply *r = redis_fixture_cmd(f, "PUBSUB CHANNELS redisson_lock__channel:{%s}:*", name);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    long long n = 0;
    for (size_t i = 0; i < r->elements; i++)
        n += numsub(f, r->element[i]->str);
    freeReplyObject(r);
    return n;
}

static void run_pubsub_kill(lock_kind kind, bool refuse_reconnect) {
    redis_fixture *f = start_server();
    const char *name = kind == KIND_FAIR ? "pubsub-killed-fair" : "pubsub-killed";
    /* every waiter asleep: the lock's waiters, one subscription per client; the fair
     * lock's, one each, and all in the line */
    const long long subscribers = kind == KIND_FAIR ? PUBSUB_WAITERS : PUBSUB_CLIENTS;
    dlock_client *holder_client = connect_client(f);
    any_lock holder_lock;
    ASSERT_RC(make_lock(holder_client, name, kind, &holder_lock), DLOCK_OK);
    dlock_lock *holder = holder_lock.l;
    dlock_client *c[PUBSUB_CLIENTS];
    any_lock a[PUBSUB_CLIENTS];
    dlock_lock *l[PUBSUB_CLIENTS];
    for (int i = 0; i < PUBSUB_CLIENTS; i++) {
        c[i] = connect_client(f);
        ASSERT_RC(make_lock(c[i], name, kind, &a[i]), DLOCK_OK);
        l[i] = a[i].l;
    }
    checker *k = checker_new(name, PUBSUB_WAITERS, 64, false);
    ASSERT_RC(dlock_lock_acquire(holder, 30000), DLOCK_OK);
    pubsub_waiter w[PUBSUB_WAITERS];
    pthread_t t[PUBSUB_WAITERS];
    for (int i = 0; i < PUBSUB_WAITERS; i++) {
        w[i] = (pubsub_waiter){.l = l[i % PUBSUB_CLIENTS], .k = k, .id = i};
        atomic_init(&w[i].rc, 1);
        assert_int_equal(pthread_create(&t[i], NULL, pubsub_waiter_main, &w[i]), 0);
    }
    /* every waiter asleep: both clients subscribed, and time for each waiter's attempt
     * after the subscription was confirmed */
    bool subscribed = false;
    POLL_UNTIL(subscribed,
               pubsub_subscribers(f, kind, name) == subscribers &&
                   (kind != KIND_FAIR ||
                    redis_fixture_int(f, "LLEN redisson_lock_queue:{%s}", name) == PUBSUB_WAITERS),
               test_slack_ms(3000));
    if (!subscribed)
        fail_msg("%lld subscribers, expected %lld", pubsub_subscribers(f, kind, name), subscribers);
    test_sleep_ms(test_slack_ms(200));
    for (int i = 0; i < PUBSUB_WAITERS; i++)
        assert_int_equal(atomic_load(&w[i].rc), 1); /* still waiting */

    long long rejected_before = redis_fixture_info_int(f, "stats", "rejected_connections");
    if (refuse_reconnect) {
        long long connected = redis_fixture_info_int(f, "clients", "connected_clients");
        assert_true(connected > PUBSUB_CLIENTS);
        char *ok = redis_fixture_str(f, "CONFIG SET maxclients %lld", connected - PUBSUB_CLIENTS);
        assert_non_null(ok);
        free(ok);
    }
    int killed = redis_fixture_client_kill_type(f, "pubsub");
    assert_int_equal(killed, PUBSUB_CLIENTS);
    int64_t released_at = test_now_ms();
    ASSERT_RC(dlock_lock_release(holder), DLOCK_OK); /* its message finds nobody, or few */
    long long rejected = 0;
    if (refuse_reconnect) {
        test_sleep_ms(300);
        for (int i = 0; i < PUBSUB_WAITERS; i++)
            assert_int_equal(atomic_load(&w[i].rc), 1); /* nobody could know */
        rejected = redis_fixture_info_int(f, "stats", "rejected_connections") - rejected_before;
        char *ok = redis_fixture_str(f, "CONFIG SET maxclients 10000");
        assert_non_null(ok);
        free(ok);
        released_at = test_now_ms(); /* from now on they can come back */
    }
    for (int i = 0; i < PUBSUB_WAITERS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    int64_t last = 0;
    for (int i = 0; i < PUBSUB_WAITERS; i++) {
        if (atomic_load(&w[i].rc) != DLOCK_OK)
            fail_msg("waiter %d: %s", i, dlock_err_name(atomic_load(&w[i].rc)));
        if (w[i].acquired_ms - released_at > last)
            last = w[i].acquired_ms - released_at;
    }
    checker_report r = checker_check(k);
    printf("# %s: pubsub killed (%d connections)%s: all %d waiters in within %lld ms of %s; "
           "%lld subscribers now\n",
           kind_name(kind), killed, refuse_reconnect ? ", reconnects refused for 300 ms" : "",
           PUBSUB_WAITERS, (long long)last,
           refuse_reconnect ? "the server taking connections again" : "the release",
           pubsub_subscribers(f, kind, name));
    /* Every reconnect waits the capped backoff (src/core/link.c): TEST_RETRY_DELAY_MS
     * (100 ms) doubling with each refusal, each wait a random point in its upper half, so
     * each subscriber link is refused about twice in the 300 ms. A link that reconnected
     * at once was refused thousands of times. Generous: 10 per link, for a loaded machine
     * that stretches the window. */
    if (refuse_reconnect) {
        printf("# %lld connection attempts refused in 300 ms (%d subscriber links)\n", rejected,
               PUBSUB_CLIENTS);
        ASSERT_BETWEEN(rejected, 1, 10 * PUBSUB_CLIENTS);
    }
    assert_true(r.ok);
    assert_int_equal(r.sections, PUBSUB_WAITERS);
    /* back at once or after the reconnect backoffs (TEST_RETRY_DELAY_MS doubling, at most
     * 8x), then one attempt each */
    ASSERT_BETWEEN(last, 0, refuse_reconnect ? test_slack_ms(2500) : test_slack_ms(1500));
    assert_int_equal(redis_fixture_int(f, "EXISTS %s", name), 0);
    if (kind == KIND_FAIR) { /* everybody left the line */
        assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_queue:{%s}", name), 0);
        assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_timeout:{%s}", name), 0);
    }

    checker_free(k);
    for (int i = 0; i < PUBSUB_CLIENTS; i++) {
        free_lock(&a[i]);
        dlock_client_free(c[i]);
    }
    free_lock(&holder_lock);
    dlock_client_free(holder_client);
    redis_fixture_stop(f);
}

static void
test_subscriber_connections_killed_while_six_waiters_wait_all_still_acquire(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    run_pubsub_kill(KIND_LOCK, false);
}

static void
test_subscriber_connections_killed_while_six_fair_waiters_wait_all_still_acquire(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    run_pubsub_kill(KIND_FAIR, false);
}

static void test_waiters_that_missed_the_release_while_reconnecting_still_acquire(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    run_pubsub_kill(KIND_LOCK, true);
}

/* ---- scenario 7: a holder paused past its lease ------------------------------------------- */

#define PAUSED_WATCHDOG_MS 1500

typedef struct paused_report {
    int acquire_rc;
    uint64_t token;
    int lost_calls;
    int lost_reason;
    bool lost_owner_is_thread;
    int release_rc;
    int second_release_rc;
} paused_report;

/* The paused holder: acquire, report, wait for the parent's 'C' (sent after SIGCONT), wait
 * for the lost callback, release twice, report. */
static _Noreturn void paused_holder_main(const char *url, int report_fd, int cont_fd) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    paused_report rep = {.acquire_rc = DLOCK_EINVAL, .release_rc = 1, .second_release_rc = 1};
    lost_record seen = {0};
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.watchdog_ms = PAUSED_WATCHDOG_MS;
    dlock_client *c = NULL;
    dlock_lock *l = NULL;
    int status = 1;
    if (dlock_client_new(&o, &c) == DLOCK_OK && dlock_fencedlock_new(c, "paused", &l) == DLOCK_OK &&
        dlock_lock_on_lost(l, record_lost_in, &seen) == DLOCK_OK) {
        rep.acquire_rc = dlock_lock_acquire(l, DLOCK_WATCHDOG);
        if (rep.acquire_rc == DLOCK_OK)
            dlock_lock_token(l, &rep.token);
        (void)!write(report_fd, &rep, sizeof(rep));
        char cont = 0;
        if (rep.acquire_rc == DLOCK_OK && read(cont_fd, &cont, 1) == 1 && cont == 'C') {
            bool lost = false;
            POLL_UNTIL(lost, lost_get_in(&seen).calls > 0, test_slack_ms(5000));
            (void)lost;        /* the parent checks the count */
            test_sleep_ms(50); /* a second call would come now */
            lost_record got = lost_get_in(&seen);
            rep.lost_calls = got.calls;
            rep.lost_reason = got.reason;
            rep.lost_owner_is_thread = got.owner == dlock_thread_owner();
            rep.release_rc = dlock_lock_release(l);
            rep.second_release_rc = dlock_lock_release(l);
            status = 0;
        }
    } else {
        (void)!write(report_fd, &rep, sizeof(rep));
    }
    (void)!write(report_fd, &rep, sizeof(rep));
    dlock_lock_free(l);
    dlock_client_free(c);
    test_child_exit(status);
}

static void
test_holder_paused_past_its_lease_is_told_lost_and_its_successor_keeps_the_lock(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    int report[2], cont[2];
    assert_int_equal(pipe(report), 0);
    assert_int_equal(pipe(cont), 0);
    pid_t pid = fork_child();
    if (pid == 0) {
        close(report[0]);
        close(cont[1]);
        paused_holder_main(redis_fixture_unix_url(f), report[1], cont[0]);
    }
    close(report[1]);
    close(cont[0]);
    paused_report first;
    assert_true(read_full(report[0], &first, sizeof(first), test_slack_ms(10000)));
    ASSERT_RC(first.acquire_rc, DLOCK_OK);
    assert_true(first.token > 0);

    assert_int_equal(kill(pid, SIGSTOP), 0);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
    assert_true(WIFSTOPPED(status));
    int64_t paused_at = test_now_ms();
    /* nothing renews the lease now: Redis lets it go within watchdog_ms */
    bool expired = false;
    POLL_UNTIL(expired, redis_fixture_int(f, "EXISTS paused") == 0,
               PAUSED_WATCHDOG_MS + test_slack_ms(1000));
    int64_t expired_after = test_now_ms() - paused_at;
    if (!expired)
        fail_msg("the paused holder's lock still exists %lld ms later", (long long)expired_after);

    dlock_client *c = connect_client(f);
    dlock_lock *l = NULL;
    ASSERT_RC(dlock_fencedlock_new(c, "paused", &l), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 30000), DLOCK_OK);
    uint64_t token = 0;
    ASSERT_RC(dlock_lock_token(l, &token), DLOCK_OK);
    if (token <= first.token)
        fail_msg("successor's token %llu not above the paused holder's %llu",
                 (unsigned long long)token, (unsigned long long)first.token);

    assert_int_equal(kill(pid, SIGCONT), 0);
    assert_int_equal(write(cont[1], "C", 1), 1);
    paused_report last;
    assert_true(read_full(report[0], &last, sizeof(last), test_slack_ms(15000)));
    assert_int_equal(waitpid(pid, &status, 0), pid);
    child_forget(pid);
    close(report[0]);
    close(cont[1]);
    printf("# holder paused, lease gone %lld ms later; tokens %llu then %llu; lost callback x%d "
           "(%s), release %s, again %s\n",
           (long long)expired_after, (unsigned long long)first.token, (unsigned long long)token,
           last.lost_calls, dlock_err_name(last.lost_reason), dlock_err_name(last.release_rc),
           dlock_err_name(last.second_release_rc));
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(last.lost_calls, 1);
    if (last.lost_reason != DLOCK_ELOST && last.lost_reason != DLOCK_ECONN)
        fail_msg("lost reason %s", dlock_err_name(last.lost_reason));
    assert_true(last.lost_owner_is_thread);
    ASSERT_RC(last.release_rc, DLOCK_ELOST);
    ASSERT_RC(last.second_release_rc, DLOCK_ENOTOWNER); /* the lost hold was forgotten */

    /* the successor's hold is untouched by the paused holder's renewal and releases */
    bool held = false;
    ASSERT_RC(dlock_lock_is_held(l, &held), DLOCK_OK);
    assert_true(held);
    long long pttl = redis_fixture_int(f, "PTTL paused");
    ASSERT_BETWEEN(pttl, 1, 30000);
    assert_int_equal(redis_fixture_int(f, "HLEN paused"), 1);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS paused"), 0);
    assert_int_equal(redis_fixture_int(f, "GET redisson_lock_token:{paused}"), (long long)token);

    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(
            test_command_connections_killed_every_300ms_under_load_keep_sections_apart,
            kill_children),
        cmocka_unit_test_teardown(test_command_connections_killed_under_load_on_fair_locks,
                                  kill_children),
        cmocka_unit_test_teardown(test_command_connections_killed_under_load_on_a_read_write_mix,
                                  kill_children),
        cmocka_unit_test_teardown(
            test_subscriber_connections_killed_while_six_waiters_wait_all_still_acquire,
            kill_children),
        cmocka_unit_test_teardown(
            test_subscriber_connections_killed_while_six_fair_waiters_wait_all_still_acquire,
            kill_children),
        cmocka_unit_test_teardown(
            test_waiters_that_missed_the_release_while_reconnecting_still_acquire, kill_children),
        cmocka_unit_test_teardown(
            test_holder_paused_past_its_lease_is_told_lost_and_its_successor_keeps_the_lock,
            kill_children),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
