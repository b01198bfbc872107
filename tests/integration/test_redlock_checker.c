/* SPDX-License-Identifier: MIT */
/* test_redlock_checker.c — the redlock tests of test_redlock.c, split from it by concern: the
 * checker across processes. Helpers: tests/support/redlock_helpers.h. Every test starts its own
 * server. */
#include "redlock_helpers.h"

/* ---- the checker across processes -------------------------------------------------------- */

#define CHILDREN 4

typedef struct shared_section {
    int64_t enter_us, exit_us;
    uint64_t token;
    int worker;
} shared_section;

/* In a MAP_SHARED mapping, written by the children. */
typedef struct shared_log {
    int inside;     /* __atomic exchange: 1 while a section runs */
    long overlaps;  /* __atomic: enters that found another section running */
    long counter;   /* plain read, pause, plain write: loses updates on overlap */
    long next_slot; /* __atomic */
    long failures;  /* __atomic: calls that did not answer as expected */
    int ready;      /* __atomic: children connected; they start together */
    long contended; /* __atomic: acquisitions that had to wait (over 5 ms) */
    char first_failure[256];
    long cap;
    shared_section log[];
} shared_log;

static _Noreturn void checker_child(redis_fixture *f[N], shared_log *s, int worker, long sections) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dlock_client *c[N] = {0};
    dlock_lock *member[N] = {0}, *rl = NULL;
    int rc = DLOCK_OK;
    const char *what = "setup";
    for (int i = 0; i < N && rc == DLOCK_OK; i++) {
        rc = test_client_new(f[i], NULL, &c[i]);
        if (rc == DLOCK_OK)
            rc = dlock_fencedlock_new(c[i], NAME, &member[i]);
    }
    if (rc == DLOCK_OK)
        rc = dlock_redlock_new(member, N, &rl);
    __atomic_fetch_add(&s->ready, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&s->ready, __ATOMIC_SEQ_CST) < CHILDREN)
        usleep(500);
    for (long k = 0; rc == DLOCK_OK && k < sections; k++) {
        what = "acquire";
        int64_t asked = test_now_ms();
        rc = dlock_lock_try_acquire(rl, 60000, 5000);
        if (rc != DLOCK_OK)
            break;
        if (test_now_ms() - asked > 5)
            __atomic_fetch_add(&s->contended, 1, __ATOMIC_SEQ_CST);
        uint64_t token = 0;
        what = "token";
        rc = dlock_lock_token(rl, &token);
        if (rc != DLOCK_OK)
            break;
        if (__atomic_exchange_n(&s->inside, 1, __ATOMIC_SEQ_CST) != 0)
            __atomic_fetch_add(&s->overlaps, 1, __ATOMIC_SEQ_CST);
        int64_t enter = test_now_us();
        long v = *(volatile long *)&s->counter;
        usleep(3000); /* widen the window a lost update needs, and make the others wait */
        *(volatile long *)&s->counter = v + 1;
        long slot = __atomic_fetch_add(&s->next_slot, 1, __ATOMIC_SEQ_CST);
        int64_t exit_us = test_now_us();
        if (slot < s->cap)
            s->log[slot] = (shared_section){
                .enter_us = enter, .exit_us = exit_us, .token = token, .worker = worker};
        __atomic_store_n(&s->inside, 0, __ATOMIC_SEQ_CST);
        what = "release";
        rc = dlock_lock_release(rl);
        usleep(1000 + 1000 * (useconds_t)((worker * 7 + k * 13) % 5)); /* let the others in */
    }
    if (rc != DLOCK_OK && __atomic_fetch_add(&s->failures, 1, __ATOMIC_SEQ_CST) == 0)
        snprintf(s->first_failure, sizeof(s->first_failure), "worker %d: %s: %s (%s)", worker, what,
                 dlock_err_name(rc), dlock_last_error());
    dlock_lock_free(rl);
    for (int i = 0; i < N; i++)
        dlock_lock_free(member[i]);
    for (int i = 0; i < N; i++)
        dlock_client_free(c[i]);
    test_child_exit(rc == DLOCK_OK ? 0 : 1);
}

static pid_t checker_pids[CHILDREN];

static int kill_checker_children(void **state) {
    (void)state;
    for (int i = 0; i < CHILDREN; i++) {
        if (checker_pids[i] > 0) {
            kill(checker_pids[i], SIGKILL);
            waitpid(checker_pids[i], NULL, 0);
            checker_pids[i] = 0;
        }
    }
    return 0;
}

/* Pauses one master after another for a while, so that successive holders get different
 * majorities (and a paused master's late answers arrive after the round moved on). */
typedef struct pauser {
    redis_fixture **f;
    atomic_bool stop;
    int pauses;
} pauser;

static void *pause_masters(void *arg) {
    pauser *p = arg;
    for (int k = 0; !atomic_load(&p->stop); k = (k + 1) % N) {
        if (redis_fixture_pause(p->f[k]) != 0)
            break;
        test_sleep_ms(120);
        redis_fixture_resume(p->f[k]);
        p->pauses++;
        test_sleep_ms(60);
    }
    return NULL;
}

static int by_enter(const void *a, const void *b) {
    const shared_section *x = a, *y = b;
    return (x->enter_us > y->enter_us) - (x->enter_us < y->enter_us);
}

static void test_the_checker_across_4_processes_sees_no_overlap_the_exact_count_and_rising_tokens(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f[N];
    masters_start(f, N);
    long sections = test_scaled(40);
    long total = CHILDREN * sections;
    size_t size = sizeof(shared_log) + (size_t)total * sizeof(shared_section);
    shared_log *s = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(s != MAP_FAILED);
    memset(s, 0, size);
    s->cap = total;
    int64_t start = test_now_ms();
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < CHILDREN; i++) {
        pid_t pid = test_fork();
        assert_true(pid >= 0);
        if (pid == 0)
            checker_child(f, s, i, sections);
        checker_pids[i] = pid;
    }
    pauser p = {.f = f};
    pthread_t pause_thread;
    assert_int_equal(pthread_create(&pause_thread, NULL, pause_masters, &p), 0);
    int failed_children = 0;
    for (int i = 0; i < CHILDREN; i++) {
        int status = 0;
        assert_int_equal(waitpid(checker_pids[i], &status, 0), checker_pids[i]);
        checker_pids[i] = 0;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed_children++;
    }
    atomic_store(&p.stop, true);
    assert_int_equal(pthread_join(pause_thread, NULL), 0);
    int64_t took = test_now_ms() - start;
    if (s->failures > 0 || failed_children > 0)
        fail_msg("%d children failed; %ld failures; first: %s", failed_children, s->failures,
                 s->first_failure);
    assert_int_equal(s->overlaps, 0);
    assert_int_equal(s->counter, total);
    assert_int_equal(s->next_slot, total);
    qsort(s->log, (size_t)total, sizeof(shared_section), by_enter);
    for (long i = 1; i < total; i++) {
        if (s->log[i].enter_us < s->log[i - 1].exit_us)
            fail_msg("sections %ld (worker %d) and %ld (worker %d) overlap", i - 1,
                     s->log[i - 1].worker, i, s->log[i].worker);
        /* the fencing rule across majorities: each holder's token beats the last one's */
        if (s->log[i].token <= s->log[i - 1].token)
            fail_msg("section %ld (worker %d) had token %llu after token %llu of section %ld", i,
                     s->log[i].worker, (unsigned long long)s->log[i].token,
                     (unsigned long long)s->log[i - 1].token, i - 1);
    }
    printf("# %d processes x %ld sections with masters paused in turn (%d pauses): %lld ms, "
           "%ld acquisitions waited, no overlap, counter %ld, tokens rising %llu..%llu\n",
           CHILDREN, sections, p.pauses, (long long)took, s->contended, s->counter,
           (unsigned long long)s->log[0].token, (unsigned long long)s->log[total - 1].token);
    munmap(s, size);
    assert_int_equal(members_present(f, NULL), 0);
    masters_stop(f, N);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(
            test_the_checker_across_4_processes_sees_no_overlap_the_exact_count_and_rising_tokens,
            kill_checker_children),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
