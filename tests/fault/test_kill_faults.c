/* SPDX-License-Identifier: MIT */
/* test_kill_faults.c — command connections killed under load, with the mutual-exclusion
 * checker (tests/support/checker.h) watching every critical section. Subscriber
 * connections killed: test_kill_subscribers.c; a paused holder: test_kill_paused_holder.c.
 *
 * What is proven:
 * - command connections killed every 300 ms (CLIENT KILL TYPE normal) under a contended
 *   load of 2 processes x 4 threads on 4 locks: no two sections of a lock overlap; a
 *   section counts only when its acquire said DLOCK_OK, and each lock's counter equals its
 *   sections; every acquire and release returns DLOCK_OK or one of the codes a dropped
 *   connection may give (each code is counted and printed); every worker finishes; after
 *   the load every lock is free within one lease (watchdog_ms 3000: an acquire that failed
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
 *
 * Every test starts its own redis-server and prints its figures ("# ...").
 *
 * It takes about half a minute: three loads of fixed length (8 s, 6 s, 6 s; shorter with
 * DLOCK_TEST_SCALE), because connections are killed every 300 ms and the checker needs many
 * kills under contention to prove anything; then a lease for what the kills left. */
#include "kill_helpers.h"

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
                    /* a lease a loaded machine's late renewal does not lose */
                    .watchdog_ms = test_slack_ms(1000) > TEST_WATCHDOG_MS ? test_slack_ms(1000)
                                                                          : TEST_WATCHDOG_MS,
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
    POLL_UNTIL(freed, all_locks_free(f, &ld), ld.watchdog_ms + test_prompt_ms());
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(
            test_command_connections_killed_every_300ms_under_load_keep_sections_apart,
            kill_children),
        cmocka_unit_test_teardown(test_command_connections_killed_under_load_on_fair_locks,
                                  kill_children),
        cmocka_unit_test_teardown(test_command_connections_killed_under_load_on_a_read_write_mix,
                                  kill_children),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
