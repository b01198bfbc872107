/* test_lock.c — the reentrant lock (RLock) and the fenced lock (RFencedLock) of
 * src/lock/lock.c, blocking face, against a real redis-server.
 *
 * What is proven: reentrant hold counts and ownership per thread and per client (two
 * handles of one name in one thread are one reentrant lock); the
 * try_acquire wait bounds; leases (TTL, explicit expiry, the watchdog keeping a lock for
 * several periods, a SIGKILLed holder process freeing it within its lease); the hand-off
 * to a waiter and that a waiter does not poll; the lost callback (key deleted, server
 * restarted empty, force-released by another client) and DLOCK_ELOST on the next release;
 * fencing tokens; the Redis layout of REDIS_LAYOUT.md read back with plain commands
 * (hash field, PTTL, token key, channel and its "0" message, names with a '{'); bad input
 * (DLOCK_EINVAL with no I/O, a key of another type, huge and binary-ish names); and that
 * the acquire and release scripts apply a resend once.
 *
 * Every test starts its own server. Records that a callback on the client's loop thread
 * writes live in static storage, so a failed assert leaves nothing dangling. */
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

#include "core_call.h"
#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60

/* ---- helpers ----------------------------------------------------------------------------- */

static dlock_lock *new_lock(dlock_client *c, const char *name) {
    dlock_lock *l = NULL;
    ASSERT_RC(dlock_lock_new(c, name, &l), DLOCK_OK);
    return l;
}

static dlock_lock *new_fenced(dlock_client *c, const char *name) {
    dlock_lock *l = NULL;
    ASSERT_RC(dlock_fencedlock_new(c, name, &l), DLOCK_OK);
    return l;
}

/* The hash key as "field=value;..." (HGETALL through the fixture), or "<none>". */
static void hash_dump(redis_fixture *f, const char *key, char *buf, size_t size) {
    const char *argv[] = {"HGETALL", key};
    size_t lens[] = {7, strlen(key)};
    redisReply *r = redis_fixture_cmd_argv(f, 2, argv, lens);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    buf[0] = '\0';
    if (r->elements == 0)
        snprintf(buf, size, "<none>");
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        size_t used = strlen(buf);
        snprintf(buf + used, size - used, "%s=%s;", r->element[i]->str, r->element[i + 1]->str);
    }
    freeReplyObject(r);
}

/* Run fn(arg) on a new thread (a new owner) and wait for it. */
static void on_other_thread(void *(*fn)(void *), void *arg) {
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fn, arg), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
}

/* ---- hold counts and ownership ----------------------------------------------------------- */

static void
test_hold_count_goes_0_1_0_2_1_0_through_acquire_release_acquire_acquire_release_release(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "counted");
    int64_t seen[6];
    ASSERT_RC(dlock_lock_hold_count(l, &seen[0]), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(l, &seen[1]), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(l, &seen[2]), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(l, &seen[3]), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(l, &seen[4]), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(l, &seen[5]), DLOCK_OK);
    const int64_t want[6] = {0, 1, 0, 2, 1, 0};
    for (int i = 0; i < 6; i++)
        if (seen[i] != want[i])
            fail_msg("hold count #%d = %lld, expected %lld", i, (long long)seen[i],
                     (long long)want[i]);
    assert_int_equal(redis_fixture_int(f, "EXISTS counted"), 0);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

typedef struct other_thread_view {
    dlock_lock *l;
    int held_rc, count_rc, locked_rc, release_rc;
    bool held, locked;
    int64_t count;
} other_thread_view;

static void *look_from_other_thread(void *arg) {
    other_thread_view *v = arg;
    v->held_rc = dlock_lock_is_held(v->l, &v->held);
    v->count_rc = dlock_lock_hold_count(v->l, &v->count);
    v->locked_rc = dlock_lock_is_locked(v->l, &v->locked);
    return NULL;
}

static void test_is_held_from_another_thread_is_false_while_this_thread_holds(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "mine");
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    bool held = false, locked = false;
    ASSERT_RC(dlock_lock_is_held(l, &held), DLOCK_OK);
    ASSERT_RC(dlock_lock_is_locked(l, &locked), DLOCK_OK);
    assert_true(held);
    assert_true(locked);
    other_thread_view v = {.l = l, .held = true, .count = -1};
    on_other_thread(look_from_other_thread, &v);
    ASSERT_RC(v.held_rc, DLOCK_OK);
    ASSERT_RC(v.count_rc, DLOCK_OK);
    ASSERT_RC(v.locked_rc, DLOCK_OK);
    assert_false(v.held);
    assert_int_equal(v.count, 0);
    assert_true(v.locked); /* locked, just not by that thread */
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    ASSERT_RC(dlock_lock_is_held(l, &held), DLOCK_OK);
    ASSERT_RC(dlock_lock_is_locked(l, &locked), DLOCK_OK);
    assert_false(held);
    assert_false(locked);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void *release_from_other_thread(void *arg) {
    other_thread_view *v = arg;
    v->release_rc = dlock_lock_release(v->l);
    return NULL;
}

static void test_release_by_another_thread_is_enotowner_and_the_lock_stays_held(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "not-yours");
    ASSERT_RC(dlock_lock_acquire(l, 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, 20000), DLOCK_OK);
    char before[512], after[512], field[128];
    hash_dump(f, "not-yours", before, sizeof(before));
    other_thread_view v = {.l = l};
    on_other_thread(release_from_other_thread, &v);
    ASSERT_RC(v.release_rc, DLOCK_ENOTOWNER);
    hash_dump(f, "not-yours", after, sizeof(after));
    assert_string_equal(after, before);
    owner_field(c, dlock_thread_owner(), field, sizeof(field));
    char want[512];
    snprintf(want, sizeof(want), "%s=2;", field);
    assert_string_equal(after, want);
    ASSERT_BETWEEN(pttl_of(f, "not-yours"), 1, 20000);
    /* the holder's own releases still work, twice */
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS not-yours"), 0);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_release_by_another_client_is_enotowner_and_the_lock_stays_held(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_lock(a, "other-client");
    dlock_lock *lb = new_lock(b, "other-client");
    ASSERT_RC(dlock_lock_acquire(la, 20000), DLOCK_OK);
    char before[512], after[512];
    hash_dump(f, "other-client", before, sizeof(before));
    /* the same thread, so the same owner id: only the client id differs */
    ASSERT_RC(dlock_lock_release(lb), DLOCK_ENOTOWNER);
    hash_dump(f, "other-client", after, sizeof(after));
    assert_string_equal(after, before);
    bool held = true;
    ASSERT_RC(dlock_lock_is_held(lb, &held), DLOCK_OK);
    assert_false(held);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void test_two_handles_of_one_name_in_one_thread_are_one_reentrant_lock(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_client *other = connect_client(f);
    dlock_lock *first = new_lock(c, "two-handles");
    dlock_lock *second = new_lock(c, "two-handles");
    dlock_lock *theirs = new_lock(other, "two-handles");
    ASSERT_RC(dlock_lock_acquire(first, 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(second, 20000), DLOCK_OK); /* a second hold, not a resend */
    int64_t count = 0;
    ASSERT_RC(dlock_lock_hold_count(first, &count), DLOCK_OK);
    assert_int_equal(count, 2);
    ASSERT_RC(dlock_lock_release(second), DLOCK_OK);
    /* one hold left: still locked against everybody else */
    ASSERT_RC(dlock_lock_try_acquire(theirs, 0, 20000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_hold_count(second, &count), DLOCK_OK);
    assert_int_equal(count, 1);
    ASSERT_RC(dlock_lock_release(first), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS two-handles"), 0);
    ASSERT_RC(dlock_lock_release(first), DLOCK_ENOTOWNER);
    dlock_lock_free(first);
    dlock_lock_free(second);
    dlock_lock_free(theirs);
    dlock_client_free(c);
    dlock_client_free(other);
    redis_fixture_stop(f);
}

/* ---- try_acquire wait bounds ------------------------------------------------------------- */

static void test_try_acquire_wait_0_on_a_held_lock_times_out_at_once(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_lock(a, "busy");
    dlock_lock *lb = new_lock(b, "busy");
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(lb, 0, 30000), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    assert_true(strlen(dlock_last_error()) > 0);
    ASSERT_BETWEEN(took, 0, slack_ms(100));
    assert_int_equal(numsub(f, "redisson_lock__channel:{busy}"), 0); /* it never subscribed */
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    /* free now: one attempt takes it */
    ASSERT_RC(dlock_lock_try_acquire(lb, 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(lb), DLOCK_OK);
    printf("# try_acquire(wait 0) on a held lock: %lld ms\n", (long long)took);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void test_try_acquire_wait_500_on_a_held_lock_times_out_after_450_to_1200_ms(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_lock(a, "busy-500");
    dlock_lock *lb = new_lock(b, "busy-500");
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(lb, 500, 30000), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    ASSERT_BETWEEN(took, 450, slack_ms(1200));
    bool held = true;
    ASSERT_RC(dlock_lock_is_held(lb, &held), DLOCK_OK);
    assert_false(held);
    printf("# try_acquire(wait 500) on a held lock: %lld ms\n", (long long)took);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- ttl and leases ---------------------------------------------------------------------- */

static void test_ttl_is_minus_2_when_not_locked(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "ttl-free");
    int64_t ttl = 0;
    ASSERT_RC(dlock_lock_ttl(l, &ttl), DLOCK_OK);
    assert_int_equal(ttl, -2);
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    ASSERT_RC(dlock_lock_ttl(l, &ttl), DLOCK_OK);
    assert_int_equal(ttl, -2);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_ttl_follows_an_explicit_lease(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "ttl-lease");
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    int64_t ttl = 0;
    ASSERT_RC(dlock_lock_ttl(l, &ttl), DLOCK_OK);
    ASSERT_BETWEEN(ttl, 9000, 10000);
    ASSERT_BETWEEN(pttl_of(f, "ttl-lease"), 9000, 10000);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_ttl_follows_watchdog_ms_with_the_watchdog(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = 7000});
    dlock_lock *l = new_lock(c, "ttl-watchdog");
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    int64_t ttl = 0;
    ASSERT_RC(dlock_lock_ttl(l, &ttl), DLOCK_OK);
    ASSERT_BETWEEN(ttl, 6000, 7000);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void
test_ttl_is_minus_1_for_a_lock_without_expiry_and_its_waiter_times_out_on_time(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "no-expiry");
    /* a holder (e.g. another library) that set no lease */
    freeReplyObject(redis_fixture_cmd(f, "HSET no-expiry someone-else:1 1"));
    int64_t ttl = 0;
    ASSERT_RC(dlock_lock_ttl(l, &ttl), DLOCK_OK);
    assert_int_equal(ttl, -1);
    /* no hint from a lease that never ends: the waiter sleeps until its deadline */
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(l, 300, 10000), DLOCK_ETIMEDOUT);
    ASSERT_BETWEEN(test_now_ms() - start, 280, slack_ms(1000));
    assert_int_equal(redis_fixture_int(f, "HGET no-expiry someone-else:1"), 1);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_reentrant_acquire_resets_the_ttl_to_its_lease(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "ttl-reset");
    int64_t ttl = 0;
    ASSERT_RC(dlock_lock_acquire(l, 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_ttl(l, &ttl), DLOCK_OK);
    ASSERT_BETWEEN(ttl, 19000, 20000);
    /* shorter: the TTL goes down to the new lease, it is not the larger of the two */
    ASSERT_RC(dlock_lock_acquire(l, 3000), DLOCK_OK);
    ASSERT_RC(dlock_lock_ttl(l, &ttl), DLOCK_OK);
    ASSERT_BETWEEN(ttl, 2000, 3000);
    /* longer again */
    ASSERT_RC(dlock_lock_acquire(l, 15000), DLOCK_OK);
    ASSERT_RC(dlock_lock_ttl(l, &ttl), DLOCK_OK);
    ASSERT_BETWEEN(ttl, 14000, 15000);
    for (int i = 0; i < 3; i++)
        ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void
test_explicit_lease_expiry_lets_another_client_in_and_the_first_release_is_elost(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_lock(a, "short-lease");
    dlock_lock *lb = new_lock(b, "short-lease");
    ASSERT_RC(dlock_lock_acquire(la, 300), DLOCK_OK);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(lb, 5000, 30000), DLOCK_OK);
    int64_t took = test_now_ms() - start;
    ASSERT_BETWEEN(took, test_under_valgrind() ? 150 : 250, slack_ms(1500));
    char field[128], want[256], dump[512];
    owner_field(b, dlock_thread_owner(), field, sizeof(field));
    snprintf(want, sizeof(want), "%s=1;", field);
    hash_dump(f, "short-lease", dump, sizeof(dump));
    assert_string_equal(dump, want);
    /* nobody released: the first owner's hold ran out, and its release says so, once */
    ASSERT_RC(dlock_lock_release(la), DLOCK_ELOST);
    ASSERT_RC(dlock_lock_release(la), DLOCK_ENOTOWNER);
    hash_dump(f, "short-lease", dump, sizeof(dump));
    assert_string_equal(dump, want); /* the new holder was not touched */
    ASSERT_RC(dlock_lock_release(lb), DLOCK_OK);
    printf("# lease 300 ms ran out, other client in after %lld ms\n", (long long)took);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void test_watchdog_keeps_the_lock_held_for_four_periods(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = 1500});
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_lock(a, "kept");
    dlock_lock *lb = new_lock(b, "kept");
    ASSERT_RC(dlock_lock_acquire(la, DLOCK_WATCHDOG), DLOCK_OK);
    int64_t start = test_now_ms();
    long long min_pttl = 1500;
    int checks = 0;
    while (test_now_ms() - start < 6500) {
        long long pttl = pttl_of(f, "kept");
        ASSERT_BETWEEN(pttl, 1, 1500);
        if (pttl < min_pttl)
            min_pttl = pttl;
        ASSERT_RC(dlock_lock_try_acquire(lb, 0, 1000), DLOCK_ETIMEDOUT);
        checks++;
        test_sleep_ms(200);
    }
    int64_t held_for = test_now_ms() - start;
    assert_true(held_for >= 4 * 1500);
    int64_t count = 0;
    ASSERT_RC(dlock_lock_hold_count(la, &count), DLOCK_OK);
    assert_int_equal(count, 1);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS kept"), 0);
    printf("# watchdog 1500 ms: held %lld ms, %d checks, lowest PTTL %lld ms\n",
           (long long)held_for, checks, min_pttl);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- a holder process killed with SIGKILL ------------------------------------------------ */

/* The child: its own client (made after the fork), a watchdog hold, then 'A' on the pipe
 * and sleep until killed. Any failure writes 'E' and exits. */
static _Noreturn void holder_child(const char *url, const char *name, int64_t watchdog_ms,
                                   int wfd) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.watchdog_ms = watchdog_ms;
    dlock_client *c = NULL;
    dlock_lock *l = NULL;
    if (dlock_client_new(&o, &c) != DLOCK_OK || dlock_lock_new(c, name, &l) != DLOCK_OK ||
        dlock_lock_acquire(l, DLOCK_WATCHDOG) != DLOCK_OK) {
        (void)!write(wfd, "E", 1);
        test_child_exit(1);
    }
    (void)!write(wfd, "A", 1);
    for (;;)
        pause();
}

static pid_t holder_pid; /* the child while it runs, for the teardown */

static int kill_holder_child(void **state) {
    (void)state;
    if (holder_pid > 0) {
        kill(holder_pid, SIGKILL);
        waitpid(holder_pid, NULL, 0);
        holder_pid = 0;
    }
    return 0;
}

static void test_holder_process_killed_with_sigkill_frees_the_lock_within_its_lease(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t watchdog_ms = 2000;
    int p[2];
    assert_int_equal(pipe(p), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    holder_pid = pid;
    if (pid == 0) {
        close(p[0]);
        holder_child(redis_fixture_unix_url(f), "crashed-holder", watchdog_ms, p[1]);
    }
    close(p[1]);
    struct pollfd pfd = {.fd = p[0], .events = POLLIN};
    assert_int_equal(poll(&pfd, 1, (int)slack_ms(10000)), 1);
    char got = 0;
    assert_int_equal(read(p[0], &got, 1), 1);
    close(p[0]);
    if (got != 'A')
        fail_msg("the holder child could not take the lock");
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "crashed-holder");
    /* the child's watchdog renews: its PTTL goes back up at least once */
    long long lowest = pttl_of(f, "crashed-holder");
    ASSERT_BETWEEN(lowest, 1, watchdog_ms);
    bool renewed = false;
    for (int64_t until = test_now_ms() + slack_ms(2 * watchdog_ms);
         !renewed && test_now_ms() < until; test_sleep_ms(5)) {
        long long pttl = pttl_of(f, "crashed-holder");
        ASSERT_BETWEEN(pttl, 1, watchdog_ms);
        renewed = pttl > lowest + 100;
        if (pttl < lowest)
            lowest = pttl;
    }
    assert_true(renewed); /* just renewed: about watchdog_ms left */
    assert_int_equal(kill(pid, SIGKILL), 0);
    int64_t killed_at = test_now_ms();
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    holder_pid = 0;
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 10000), DLOCK_ETIMEDOUT); /* still its lease */
    ASSERT_RC(dlock_lock_try_acquire(l, slack_ms(10000), 10000), DLOCK_OK);
    int64_t took = test_now_ms() - killed_at;
    ASSERT_BETWEEN(took, test_under_valgrind() ? 1 : watchdog_ms / 2, watchdog_ms + slack_ms(500));
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    printf("# holder killed, lock taken %lld ms later (watchdog_ms %lld)\n", (long long)took,
           (long long)watchdog_ms);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- hand-off and no polling ------------------------------------------------------------- */

typedef struct timed_waiter {
    dlock_lock *l;
    int64_t wait_ms;
    int rc;
    int64_t acquired_us;
} timed_waiter;

static void *acquire_then_release(void *arg) {
    timed_waiter *w = arg;
    w->rc = dlock_lock_try_acquire(w->l, w->wait_ms, 30000);
    w->acquired_us = test_now_us();
    if (w->rc == DLOCK_OK)
        dlock_lock_release(w->l);
    return NULL;
}

/* Starts w on a new thread and returns once it sleeps as a waiter: subscribed, and both
 * of its attempts (the first, and the one after the subscription was confirmed) ran. */
static pthread_t start_waiter_and_let_it_sleep(redis_fixture *f, const char *channel,
                                               timed_waiter *w) {
    long long scripts_before = script_calls(f);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, acquire_then_release, w), 0);
    bool asleep = false;
    POLL_UNTIL(asleep, numsub(f, channel) == 1 && script_calls(f) >= scripts_before + 2,
               slack_ms(3000));
    assert_true(asleep);
    return t;
}

static void test_waiter_of_another_client_gets_the_lock_within_100_ms_of_the_release(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_lock(a, "handoff");
    dlock_lock *lb = new_lock(b, "handoff");
    const int rounds = 5;
    int64_t worst_us = INT64_MIN, total_us = 0;
    for (int i = 0; i < rounds; i++) {
        ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK); /* no renewals in the way */
        timed_waiter w = {.l = lb, .wait_ms = slack_ms(10000)};
        pthread_t t = start_waiter_and_let_it_sleep(f, "redisson_lock__channel:{handoff}", &w);
        ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
        int64_t released_us = test_now_us();
        assert_int_equal(pthread_join(t, NULL), 0);
        ASSERT_RC(w.rc, DLOCK_OK);
        int64_t latency_us = w.acquired_us - released_us;
        if (latency_us > worst_us)
            worst_us = latency_us;
        total_us += latency_us;
        ASSERT_BETWEEN(latency_us / 1000, -slack_ms(100), slack_ms(100));
    }
    printf("# hand-off release -> waiter's acquire: mean %.2f ms, worst %.2f ms (%d rounds)\n",
           (double)total_us / rounds / 1000.0, (double)worst_us / 1000.0, rounds);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void test_waiter_sends_at_most_5_commands_during_a_1500_ms_wait(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture_opts fo = {.tcp = true};
    redis_fixture *f = NULL;
    assert_int_equal(redis_fixture_start(&fo, &f), 0);
    dlock_client *a = connect_client(f);
    dlock_options o;
    dlock_options_init(&o);
    o.url = redis_fixture_tcp_url(f); /* the waiter is the only client on TCP */
    dlock_client *b = NULL;
    ASSERT_RC(dlock_client_new(&o, &b), DLOCK_OK);
    dlock_lock *la = new_lock(a, "quiet");
    dlock_lock *lb = new_lock(b, "quiet");
    const char *channel = "redisson_lock__channel:{quiet}";
    /* an explicit lease: no renewal in the window; its 60 s PTTL is the waiter's hint */
    ASSERT_RC(dlock_lock_acquire(la, 60000), DLOCK_OK);
    /* a first short wait opens b's subscriber connection, so its handshake is not counted */
    ASSERT_RC(dlock_lock_try_acquire(lb, 100, 1000), DLOCK_ETIMEDOUT);
    bool gone = false;
    POLL_UNTIL(gone, numsub(f, channel) == 0, slack_ms(1000));
    assert_true(gone);

    redisContext *mon = monitor_open(f);
    long long total_before = redis_fixture_info_int(f, "stats", "total_commands_processed");
    long long scripts_before = script_calls(f);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(lb, 1500, 1000), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    ASSERT_BETWEEN(took, 1500, slack_ms(2500));
    POLL_UNTIL(gone, numsub(f, channel) == 0, slack_ms(1000)); /* the UNSUBSCRIBE landed */
    assert_true(gone);
    long long scripts = script_calls(f) - scripts_before;
    long long total = redis_fixture_info_int(f, "stats", "total_commands_processed") - total_before;
    freeReplyObject(redis_fixture_cmd(f, "ECHO %s", "end-of-window"));
    char names[512];
    int waiter = monitor_count_tcp(mon, "end-of-window", names, sizeof(names));
    redisFree(mon);
    /* expected: 3 attempts (at once, once subscribed, at the deadline), SUBSCRIBE,
     * UNSUBSCRIBE. (total_commands_processed also counts what the scripts run inside.) */
    printf("# 1500 ms wait: %d commands from the waiter [%s]; %lld script calls; "
           "total_commands_processed +%lld (fixture's own and in-script commands included)\n",
           waiter, names, scripts, total);
    ASSERT_BETWEEN(scripts, 2, 3);
    ASSERT_BETWEEN(waiter, scripts, 5);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- lost leases ------------------------------------------------------------------------- */

static void
test_key_deleted_behind_the_holder_fires_the_lost_callback_once_and_release_is_elost(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    lost_reset();
    redis_fixture *f = start_server();
    dlock_client *c = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = 1500});
    dlock_lock *l = new_lock(c, "deleted");
    int cookie = 0;
    ASSERT_RC(dlock_lock_on_lost(l, record_lost, &cookie), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK); /* two holds, one lease */
    assert_int_equal(redis_fixture_int(f, "DEL deleted"), 1);
    int64_t deleted_at = test_now_ms();
    bool fired = false;
    POLL_UNTIL(fired, lost_calls() >= 1, slack_ms(3000));
    assert_true(fired);
    lost_record lost = lost_get();
    int64_t after_ms = lost.first_ms - deleted_at;
    assert_ptr_equal(lost.lock, l);
    assert_int_equal(lost.owner, dlock_thread_owner());
    assert_int_equal(lost.reason, DLOCK_ELOST);
    assert_ptr_equal(lost.arg, &cookie);
    ASSERT_BETWEEN(after_ms, 0, slack_ms(1000)); /* a tick is 500 ms */
    test_sleep_ms(1200);                         /* more ticks: no second report */
    assert_int_equal(lost_calls(), 1);
    assert_int_equal(redis_fixture_int(f, "EXISTS deleted"), 0); /* nobody recreated it */

    /* both holds were lost: each release says so, then the owner holds nothing */
    ASSERT_RC(dlock_lock_release(l), DLOCK_ELOST);
    ASSERT_RC(dlock_lock_release(l), DLOCK_ELOST);
    ASSERT_RC(dlock_lock_release(l), DLOCK_ENOTOWNER);

    /* a new hold works and its lease is renewed past the 1500 ms watchdog_ms */
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    int64_t count = 0;
    ASSERT_RC(dlock_lock_hold_count(l, &count), DLOCK_OK);
    assert_int_equal(count, 1);
    int64_t start = test_now_ms();
    while (test_now_ms() - start < 3500) {
        ASSERT_BETWEEN(pttl_of(f, "deleted"), 1, 1500);
        test_sleep_ms(100);
    }
    assert_int_equal(lost_calls(), 1);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS deleted"), 0);
    assert_int_equal(lost_calls(), 1);
    printf("# key deleted: lost callback after %lld ms\n", (long long)after_ms);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_server_restarted_empty_fires_the_lost_callback_and_release_is_elost(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    lost_reset();
    redis_fixture *f = start_server();
    dlock_client *c = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = 1500});
    dlock_lock *l = new_lock(c, "restarted");
    ASSERT_RC(dlock_lock_on_lost(l, record_lost, NULL), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    assert_int_equal(redis_fixture_restart(f), 0);
    int64_t restarted_at = test_now_ms();
    assert_int_equal(redis_fixture_int(f, "EXISTS restarted"), 0);
    bool fired = false;
    POLL_UNTIL(fired, lost_calls() >= 1, slack_ms(5000));
    assert_true(fired);
    lost_record lost = lost_get();
    int64_t after_ms = lost.first_ms - restarted_at;
    int reason = lost.reason;
    assert_ptr_equal(lost.lock, l);
    assert_int_equal(lost.owner, dlock_thread_owner());
    /* ELOST when a renewal found it gone; ECONN if none could be confirmed in time */
    assert_true(reason == DLOCK_ELOST || reason == DLOCK_ECONN);
    ASSERT_RC(dlock_lock_release(l), DLOCK_ELOST);
    ASSERT_RC(dlock_lock_release(l), DLOCK_ENOTOWNER);
    assert_int_equal(lost_calls(), 1);
    /* the client works on the new server */
    ASSERT_RC(dlock_lock_acquire(l, 5000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    printf("# restart: lost callback (%s) after %lld ms\n", dlock_err_name(reason),
           (long long)after_ms);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_force_release_by_another_client_fires_the_holders_lost_callback(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    lost_reset();
    redis_fixture *f = start_server();
    dlock_client *a = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = 1500});
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_lock(a, "forced");
    dlock_lock *lb = new_lock(b, "forced");
    ASSERT_RC(dlock_lock_on_lost(la, record_lost, NULL), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(la, DLOCK_WATCHDOG), DLOCK_OK);
    bool was_locked = false;
    ASSERT_RC(dlock_lock_force_release(lb, &was_locked), DLOCK_OK);
    int64_t forced_at = test_now_ms();
    assert_true(was_locked);
    bool fired = false;
    POLL_UNTIL(fired, lost_calls() >= 1, slack_ms(3000));
    assert_true(fired);
    lost_record lost = lost_get();
    int64_t after_ms = lost.first_ms - forced_at;
    assert_ptr_equal(lost.lock, la);
    assert_int_equal(lost.owner, dlock_thread_owner());
    assert_int_equal(lost.reason, DLOCK_ELOST);
    ASSERT_BETWEEN(after_ms, 0, slack_ms(1000));
    ASSERT_RC(dlock_lock_release(la), DLOCK_ELOST);
    assert_int_equal(lost_calls(), 1);
    printf("# force-released: holder's lost callback after %lld ms\n", (long long)after_ms);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- force release ----------------------------------------------------------------------- */

static void test_force_release_says_whether_the_lock_was_held(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "force-flag");
    bool was_locked = true;
    ASSERT_RC(dlock_lock_force_release(l, &was_locked), DLOCK_OK);
    assert_false(was_locked);
    ASSERT_RC(dlock_lock_acquire(l, 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_force_release(l, &was_locked), DLOCK_OK);
    assert_true(was_locked);
    assert_int_equal(redis_fixture_int(f, "EXISTS force-flag"), 0);
    ASSERT_RC(dlock_lock_force_release(l, &was_locked), DLOCK_OK);
    assert_false(was_locked);
    ASSERT_RC(dlock_lock_force_release(l, NULL), DLOCK_OK); /* was_locked may be NULL */
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_force_release_wakes_a_waiter_of_another_client(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_lock *la = new_lock(a, "force-wake");
    dlock_lock *lb = new_lock(b, "force-wake");
    /* a 60 s lease: only the force release's message can let the waiter in soon */
    ASSERT_RC(dlock_lock_acquire(la, 60000), DLOCK_OK);
    timed_waiter w = {.l = lb, .wait_ms = 30000};
    pthread_t t = start_waiter_and_let_it_sleep(f, "redisson_lock__channel:{force-wake}", &w);
    bool was_locked = false;
    ASSERT_RC(dlock_lock_force_release(la, &was_locked), DLOCK_OK);
    int64_t forced_us = test_now_us();
    assert_true(was_locked);
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(w.rc, DLOCK_OK);
    int64_t latency_ms = (w.acquired_us - forced_us) / 1000;
    ASSERT_BETWEEN(latency_ms, -slack_ms(100), slack_ms(500));
    ASSERT_RC(dlock_lock_release(la), DLOCK_ELOST); /* its hold was taken away */
    printf("# force release -> waiter in: %lld ms\n", (long long)latency_ms);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- fencing tokens ---------------------------------------------------------------------- */

enum { FENCE_OWNERS = 4 };

static struct {
    pthread_mutex_t mu;
    uint64_t *tokens; /* in section order */
    size_t count, cap;
    int errors;
    char error[256];
} fence = {.mu = PTHREAD_MUTEX_INITIALIZER};

typedef struct fence_worker {
    dlock_lock *l; /* shared by the threads of one client */
    long rounds;
} fence_worker;

static void fence_error(const char *what, int rc) {
    pthread_mutex_lock(&fence.mu);
    if (fence.errors++ == 0)
        snprintf(fence.error, sizeof(fence.error), "%s: %s (%s)", what, dlock_err_name(rc),
                 dlock_last_error());
    pthread_mutex_unlock(&fence.mu);
}

static void *fence_loop(void *arg) {
    fence_worker *w = arg;
    for (long i = 0; i < w->rounds; i++) {
        uint64_t first = 0, second = 0;
        int rc = dlock_lock_acquire(w->l, 30000);
        if (rc != DLOCK_OK) {
            fence_error("acquire", rc);
            return NULL;
        }
        if ((rc = dlock_lock_token(w->l, &first)) != DLOCK_OK)
            fence_error("token", rc);
        bool reentrant = i % 2 == 0;
        if (reentrant) {
            if ((rc = dlock_lock_acquire(w->l, 30000)) != DLOCK_OK)
                fence_error("reentrant acquire", rc);
            if ((rc = dlock_lock_token(w->l, &second)) != DLOCK_OK)
                fence_error("token", rc);
        }
        pthread_mutex_lock(&fence.mu); /* inside the section: log order = section order */
        fence.tokens[fence.count++] = first;
        if (reentrant)
            fence.tokens[fence.count++] = second;
        pthread_mutex_unlock(&fence.mu);
        if (reentrant && (rc = dlock_lock_release(w->l)) != DLOCK_OK)
            fence_error("release", rc);
        if ((rc = dlock_lock_release(w->l)) != DLOCK_OK)
            fence_error("release", rc);
    }
    return NULL;
}

static void
test_fenced_tokens_strictly_increase_across_clients_owners_and_reentrant_acquires(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c[2] = {connect_client(f), connect_client(f)};
    dlock_lock *l[2] = {new_fenced(c[0], "fence"), new_fenced(c[1], "fence")};
    long rounds = test_scaled(60);
    pthread_mutex_lock(&fence.mu);
    fence.cap = (size_t)(FENCE_OWNERS * rounds * 2);
    fence.tokens = calloc(fence.cap, sizeof(uint64_t));
    fence.count = 0;
    fence.errors = 0;
    pthread_mutex_unlock(&fence.mu);
    fence_worker w[FENCE_OWNERS];
    pthread_t t[FENCE_OWNERS];
    for (int i = 0; i < FENCE_OWNERS; i++) {
        w[i] = (fence_worker){.l = l[i % 2], .rounds = rounds};
        assert_int_equal(pthread_create(&t[i], NULL, fence_loop, &w[i]), 0);
    }
    for (int i = 0; i < FENCE_OWNERS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    if (fence.errors)
        fail_msg("%d errors, first: %s", fence.errors, fence.error);
    /* every owner took (rounds + rounds/2 rounded up) tokens */
    size_t want = (size_t)(FENCE_OWNERS * (rounds + (rounds + 1) / 2));
    assert_int_equal(fence.count, want);
    for (size_t i = 1; i < fence.count; i++)
        if (fence.tokens[i] <= fence.tokens[i - 1])
            fail_msg("token #%zu = %llu after %llu", i, (unsigned long long)fence.tokens[i],
                     (unsigned long long)fence.tokens[i - 1]);
    assert_int_equal(fence.tokens[0], 1);
    assert_int_equal(fence.tokens[fence.count - 1], fence.count); /* no token skipped */
    assert_int_equal(redis_fixture_int(f, "GET redisson_lock_token:{fence}"), fence.count);
    assert_int_equal(redis_fixture_int(f, "EXISTS fence"), 0);
    printf("# %zu tokens from %d owners on 2 clients, strictly increasing\n", fence.count,
           FENCE_OWNERS);
    free(fence.tokens);
    fence.tokens = NULL;
    dlock_lock_free(l[0]);
    dlock_lock_free(l[1]);
    dlock_client_free(c[0]);
    dlock_client_free(c[1]);
    redis_fixture_stop(f);
}

static void test_token_of_a_plain_lock_is_einval(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "plain");
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    uint64_t token = 12345;
    ASSERT_RC(dlock_lock_token(l, &token), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_token_of(l, dlock_thread_owner(), &token), DLOCK_EINVAL);
    assert_int_equal(token, 12345);
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_token:{plain}"), 0);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

typedef struct token_probe {
    dlock_lock *l;
    int rc;
    uint64_t token;
} token_probe;

static void *token_from_other_thread(void *arg) {
    token_probe *p = arg;
    p->rc = dlock_lock_token(p->l, &p->token);
    return NULL;
}

static void test_token_before_any_acquire_is_enotowner(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_fenced(c, "fenced-fresh");
    uint64_t token = 777;
    ASSERT_RC(dlock_lock_token(l, &token), DLOCK_ENOTOWNER);
    assert_int_equal(token, 777);
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_token(l, &token), DLOCK_OK);
    assert_int_equal(token, 1);
    /* another thread never acquired it: still ENOTOWNER there */
    token_probe p = {.l = l, .token = 777};
    on_other_thread(token_from_other_thread, &p);
    ASSERT_RC(p.rc, DLOCK_ENOTOWNER);
    assert_int_equal(p.token, 777);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- the layout in Redis ----------------------------------------------------------------- */

static void
test_layout_is_a_hash_of_client_id_colon_owner_to_hold_count_with_the_lease_as_pttl(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_fenced(c, "layout");
    ASSERT_RC(dlock_lock_acquire(l, 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, 20000), DLOCK_OK);
    char field[128], want[256], dump[512];
    owner_field(c, dlock_thread_owner(), field, sizeof(field));
    assert_int_equal(strlen(dlock_client_id(c)), 36);
    assert_true(dlock_thread_owner() >= DLOCK_THREAD_OWNER_BASE); /* above async owners */
    snprintf(want, sizeof(want), "%s=2;", field);
    hash_dump(f, "layout", dump, sizeof(dump));
    assert_string_equal(dump, want);
    char *type = redis_fixture_str(f, "TYPE layout");
    assert_string_equal(type, "hash");
    free(type);
    ASSERT_BETWEEN(pttl_of(f, "layout"), 19000, 20000);
    uint64_t token = 0;
    ASSERT_RC(dlock_lock_token(l, &token), DLOCK_OK);
    assert_int_equal(token, 2); /* one per acquisition, reentrant ones too */
    assert_int_equal(redis_fixture_int(f, "GET redisson_lock_token:{layout}"), (long long)token);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    snprintf(want, sizeof(want), "%s=1;", field);
    hash_dump(f, "layout", dump, sizeof(dump));
    assert_string_equal(dump, want);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS layout"), 0);
    /* the counter outlives the lock and never expires */
    assert_int_equal(redis_fixture_int(f, "GET redisson_lock_token:{layout}"), 2);
    assert_int_equal(pttl_of(f, "redisson_lock_token:{layout}"), -1);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* Subscribes a plain hiredis connection to channel, takes two holds on name (fenced),
 * releases both, then publishes a marker itself: the subscriber must see exactly "0" (from
 * the last release, none from the first) and then the marker. Checks the token key too. */
static void check_channel_and_token_key(const char *name, const char *channel,
                                        const char *token_key, const char *not_token_key) {
    redis_fixture *f = start_server();
    redisContext *sub = redisConnectUnix(redis_fixture_socket(f));
    assert_non_null(sub);
    assert_int_equal(sub->err, 0);
    struct timeval tv = {.tv_sec = test_under_valgrind() ? 60 : 10};
    redisSetTimeout(sub, tv);
    redisReply *r = redisCommand(sub, "SUBSCRIBE %s", channel);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    freeReplyObject(r);

    dlock_client *c = connect_client(f);
    dlock_lock *l = new_fenced(c, name);
    ASSERT_RC(dlock_lock_acquire(l, 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, 20000), DLOCK_OK);
    uint64_t token = 0;
    ASSERT_RC(dlock_lock_token(l, &token), DLOCK_OK);
    char *stored = redis_fixture_str(f, "GET %s", token_key);
    assert_non_null(stored);
    assert_int_equal(strtoull(stored, NULL, 10), token);
    free(stored);
    assert_int_equal(redis_fixture_int(f, "EXISTS %s", not_token_key), 0);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "PUBLISH %s marker", channel), 1);

    const char *want[2] = {"0", "marker"};
    for (int i = 0; i < 2; i++) {
        void *m = NULL;
        assert_int_equal(redisGetReply(sub, &m), REDIS_OK);
        r = m;
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_int_equal(r->elements, 3);
        assert_string_equal(r->element[0]->str, "message");
        assert_string_equal(r->element[1]->str, channel);
        assert_string_equal(r->element[2]->str, want[i]);
        freeReplyObject(r);
    }
    redisFree(sub);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void
test_last_release_publishes_0_on_redisson_lock__channel_of_the_name_in_braces(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    check_channel_and_token_key("orders", "redisson_lock__channel:{orders}",
                                "redisson_lock_token:{orders}", "redisson_lock_token:orders");
}

static void test_name_with_a_brace_uses_token_key_and_channel_without_extra_braces(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    check_channel_and_token_key("user:{42}:cart", "redisson_lock__channel:user:{42}:cart",
                                "redisson_lock_token:user:{42}:cart",
                                "redisson_lock_token:{user:{42}:cart}");
}

/* ---- bad input --------------------------------------------------------------------------- */

static void noop_lost(dlock_lock *l, uint64_t owner, int reason, void *arg) {
    (void)l;
    (void)owner;
    (void)reason;
    (void)arg;
}

static void test_bad_arguments_are_einval_without_any_io(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "valid");
    dlock_lock *fl = new_fenced(c, "valid-fenced");
    long long before = redis_fixture_info_int(f, "stats", "total_commands_processed");

    dlock_lock *out = (dlock_lock *)&out; /* a sentinel: constructors leave it alone */
    dlock_lock *const sentinel = out;
    ASSERT_EINVAL(dlock_lock_new(NULL, "n", &out));
    ASSERT_EINVAL(dlock_lock_new(c, NULL, &out));
    ASSERT_EINVAL(dlock_lock_new(c, "", &out));
    ASSERT_EINVAL(dlock_lock_new(c, "n", NULL));
    ASSERT_EINVAL(dlock_fencedlock_new(NULL, "n", &out));
    ASSERT_EINVAL(dlock_fencedlock_new(c, NULL, &out));
    ASSERT_EINVAL(dlock_fencedlock_new(c, "", &out));
    ASSERT_EINVAL(dlock_fencedlock_new(c, "n", NULL));
    assert_ptr_equal(out, sentinel);

    ASSERT_EINVAL(dlock_lock_acquire(NULL, 1000));
    ASSERT_EINVAL(dlock_lock_acquire(l, 0));
    ASSERT_EINVAL(dlock_lock_acquire(l, -2));
    ASSERT_EINVAL(dlock_lock_acquire(l, INT64_MIN));
    ASSERT_EINVAL(dlock_lock_try_acquire(NULL, 0, 1000));
    ASSERT_EINVAL(dlock_lock_try_acquire(l, -2, 1000));
    ASSERT_EINVAL(dlock_lock_try_acquire(l, -1000, 1000));
    ASSERT_EINVAL(dlock_lock_try_acquire(l, INT64_MIN, 1000));
    ASSERT_EINVAL(dlock_lock_try_acquire(l, 0, 0));
    ASSERT_EINVAL(dlock_lock_try_acquire(l, 0, -2));
    ASSERT_EINVAL(dlock_lock_try_acquire(l, DLOCK_FOREVER, -100));
    ASSERT_EINVAL(dlock_lock_release(NULL));
    bool b = false;
    int64_t n = 0;
    uint64_t token = 0;
    ASSERT_EINVAL(dlock_lock_force_release(NULL, &b));
    ASSERT_EINVAL(dlock_lock_is_locked(NULL, &b));
    ASSERT_EINVAL(dlock_lock_is_locked(l, NULL));
    ASSERT_EINVAL(dlock_lock_is_held(NULL, &b));
    ASSERT_EINVAL(dlock_lock_is_held(l, NULL));
    ASSERT_EINVAL(dlock_lock_hold_count(NULL, &n));
    ASSERT_EINVAL(dlock_lock_hold_count(l, NULL));
    ASSERT_EINVAL(dlock_lock_ttl(NULL, &n));
    ASSERT_EINVAL(dlock_lock_ttl(l, NULL));
    ASSERT_EINVAL(dlock_lock_token(NULL, &token));
    ASSERT_EINVAL(dlock_lock_token(fl, NULL));
    ASSERT_EINVAL(dlock_lock_token_of(NULL, 1, &token));
    ASSERT_EINVAL(dlock_lock_token_of(fl, 1, NULL));
    ASSERT_EINVAL(dlock_lock_on_lost(NULL, noop_lost, NULL));
    assert_null(dlock_lock_name(NULL));
    dlock_lock_free(NULL);

    long long after = redis_fixture_info_int(f, "stats", "total_commands_processed");
    assert_int_equal(after - before, 1); /* only the first INFO */
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    assert_string_equal(dlock_lock_name(l), "valid");
    dlock_lock_free(l);
    dlock_lock_free(fl);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_name_over_64_kib_is_einval_and_64_kib_works(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    size_t max = 64 * 1024;
    char *name = malloc(max + 2);
    memset(name, 'n', max + 1);
    name[max + 1] = '\0';
    dlock_lock *l = NULL;
    long long before = redis_fixture_info_int(f, "stats", "total_commands_processed");
    ASSERT_RC(dlock_lock_new(c, name, &l), DLOCK_EINVAL);
    ASSERT_RC(dlock_fencedlock_new(c, name, &l), DLOCK_EINVAL);
    assert_null(l);
    assert_int_equal(redis_fixture_info_int(f, "stats", "total_commands_processed") - before, 1);
    name[max] = '\0';
    ASSERT_RC(dlock_lock_new(c, name, &l), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    const char *argv[] = {"EXISTS", name};
    size_t lens[] = {6, max};
    redisReply *r = redis_fixture_cmd_argv(f, 2, argv, lens);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    dlock_lock_free(l);
    free(name);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_long_binary_ish_name_with_spaces_braces_and_utf8_works(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    const char *piece = "lock name \xc3\xa9t\xc3\xa9 {tag} \xe2\x82\xac\t\xf0\x9f\x94\x92 % ";
    size_t want_len = 10 * 1024, plen = strlen(piece);
    char *name = malloc(want_len + plen + 1);
    name[0] = '\0';
    size_t len = 0;
    while (len < want_len) {
        memcpy(name + len, piece, plen + 1);
        len += plen;
    }
    dlock_lock *l = new_fenced(c, name);
    assert_string_equal(dlock_lock_name(l), name);
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    uint64_t token = 0;
    ASSERT_RC(dlock_lock_token(l, &token), DLOCK_OK);

    char field[128];
    owner_field(c, dlock_thread_owner(), field, sizeof(field));
    const char *hget[] = {"HGET", name, field};
    size_t hget_len[] = {4, len, strlen(field)};
    redisReply *r = redis_fixture_cmd_argv(f, 3, hget, hget_len);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "1");
    freeReplyObject(r);
    /* the name holds a '{': the token key is prefixed without extra braces */
    char *token_key = malloc(len + 64);
    int klen = snprintf(token_key, len + 64, "redisson_lock_token:%s", name);
    const char *get[] = {"GET", token_key};
    size_t get_len[] = {3, (size_t)klen};
    r = redis_fixture_cmd_argv(f, 2, get, get_len);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(strtoull(r->str, NULL, 10), token);
    freeReplyObject(r);
    int64_t count = 0;
    ASSERT_RC(dlock_lock_hold_count(l, &count), DLOCK_OK);
    assert_int_equal(count, 1);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 1); /* only the token counter */
    free(token_key);
    dlock_lock_free(l);
    free(name);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void
test_lock_key_of_another_type_is_eredis_wrongtype_and_the_key_is_unchanged(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "a-string");
    freeReplyObject(redis_fixture_cmd(f, "SET a-string x"));
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_EREDIS);
    assert_non_null(strstr(dlock_last_error(), "WRONGTYPE"));
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_EREDIS);
    assert_non_null(strstr(dlock_last_error(), "WRONGTYPE"));
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 10000), DLOCK_EREDIS);
    ASSERT_RC(dlock_lock_try_acquire(l, 2000, 10000), DLOCK_EREDIS);
    ASSERT_RC(dlock_lock_release(l), DLOCK_EREDIS);
    assert_non_null(strstr(dlock_last_error(), "WRONGTYPE"));
    bool held = true;
    ASSERT_RC(dlock_lock_is_held(l, &held), DLOCK_EREDIS);
    char *v = redis_fixture_str(f, "GET a-string");
    assert_string_equal(v, "x");
    free(v);
    assert_int_equal(pttl_of(f, "a-string"), -1);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 1);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_force_release_of_a_string_key_is_eredis_and_the_key_is_unchanged(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "a-string");
    freeReplyObject(redis_fixture_cmd(f, "SET a-string x PX 50000"));
    bool was_locked = false;
    ASSERT_RC(dlock_lock_force_release(l, &was_locked), DLOCK_EREDIS);
    assert_non_null(strstr(dlock_last_error(), "WRONGTYPE"));
    char *v = redis_fixture_str(f, "GET a-string");
    assert_string_equal(v, "x");
    free(v);
    ASSERT_BETWEEN(pttl_of(f, "a-string"), 40000, 50000);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- resends are applied once ------------------------------------------------------------ */

static core_reply *run_script(dlock_client *c, enum dlock__script_id id, const char *key1,
                              const char *key2, const char *lease, const char *field,
                              const char *believed) {
    const char *args[] = {key1, key2, lease, field, believed, NULL};
    core_reply *r = core_script(c, id, DLOCK__CMD_RETRY_SAFE, 2, args);
    if (r->status != DLOCK_OK)
        fail_msg("script: %s (%s)", dlock_err_name(r->status), r->str ? r->str : "");
    return r;
}

static void expect_acquired(core_reply *r, long long holds, long long token) {
    assert_int_equal(r->type, DLOCK__REPLY_ARRAY);
    assert_int_equal(r->count, 3);
    assert_int_equal(r->elems[0].integer, 1);
    assert_int_equal(r->elems[1].integer, holds);
    assert_int_equal(r->elems[2].integer, token);
    core_reply_free(r);
}

static void
test_acquire_script_sent_twice_with_the_same_belief_takes_one_hold_and_one_token(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    const char *field = "0b7b5a80-0000-4000-8000-000000000001:42";
    const char *N = "resent", *T = "redisson_lock_token:{resent}";
    enum dlock__script_id acq = DLOCK__SCRIPT_LOCK_ACQUIRE;
    /* the client believes 0 holds: first send takes one, the resend changes nothing */
    expect_acquired(run_script(c, acq, N, T, "30000", field, "0"), 1, 1);
    expect_acquired(run_script(c, acq, N, T, "30000", field, "0"), 1, 1);
    assert_int_equal(redis_fixture_int(f, "HGET resent %s", field), 1);
    assert_int_equal(redis_fixture_int(f, "GET %s", T), 1);
    /* a reentrant acquire (belief 1), sent twice: one more hold, one more token */
    expect_acquired(run_script(c, acq, N, T, "30000", field, "1"), 2, 2);
    expect_acquired(run_script(c, acq, N, T, "30000", field, "1"), 2, 2);
    assert_int_equal(redis_fixture_int(f, "HGET resent %s", field), 2);
    assert_int_equal(redis_fixture_int(f, "GET %s", T), 2);
    assert_int_equal(redis_fixture_int(f, "HLEN resent"), 1);
    ASSERT_BETWEEN(pttl_of(f, "resent"), 29000, 30000);
    /* another owner is still refused, with the holder's PTTL as the hint */
    core_reply *r = run_script(c, acq, N, T, "30000", "other:1", "0");
    assert_int_equal(r->count, 2);
    assert_int_equal(r->elems[0].integer, 0);
    ASSERT_BETWEEN(r->elems[1].integer, 29000, 30000);
    core_reply_free(r);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static long long release_reply(core_reply *r) {
    assert_int_equal(r->type, DLOCK__REPLY_INTEGER);
    long long v = r->integer;
    core_reply_free(r);
    return v;
}

static void test_release_script_sent_twice_with_the_same_belief_removes_one_hold(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    const char *field = "0b7b5a80-0000-4000-8000-000000000001:42";
    const char *N = "resent-release", *CH = "redisson_lock__channel:{resent-release}";
    freeReplyObject(redis_fixture_cmd(f, "HSET resent-release %s 3", field));
    freeReplyObject(redis_fixture_cmd(f, "PEXPIRE resent-release 30000"));
    enum dlock__script_id rel = DLOCK__SCRIPT_LOCK_RELEASE;
    /* the client believes 3: the first send leaves 2, the resend changes nothing */
    assert_int_equal(release_reply(run_script(c, rel, N, CH, "20000", field, "3")), 2);
    assert_int_equal(release_reply(run_script(c, rel, N, CH, "20000", field, "3")), 2);
    assert_int_equal(redis_fixture_int(f, "HGET resent-release %s", field), 2);
    ASSERT_BETWEEN(pttl_of(f, "resent-release"), 19000, 20000); /* a hold left: new lease */
    assert_int_equal(release_reply(run_script(c, rel, N, CH, "20000", field, "2")), 1);
    assert_int_equal(release_reply(run_script(c, rel, N, CH, "20000", field, "2")), 1);
    assert_int_equal(redis_fixture_int(f, "HGET resent-release %s", field), 1);
    /* the last hold: deleted once; its resend finds nothing (-1), which the client reads
     * with the number of sends */
    assert_int_equal(release_reply(run_script(c, rel, N, CH, "20000", field, "1")), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS resent-release"), 0);
    assert_int_equal(release_reply(run_script(c, rel, N, CH, "20000", field, "1")), -1);
    assert_int_equal(redis_fixture_int(f, "EXISTS resent-release"), 0);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_release_script_drops_holds_the_client_never_learned_of(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    const char *field = "0b7b5a80-0000-4000-8000-000000000001:42";
    const char *N = "orphans", *CH = "redisson_lock__channel:{orphans}";
    /* 3 holds in Redis, the client believes 1 (two acquires it reported failed were
     * applied after all): its last release frees the lock */
    freeReplyObject(redis_fixture_cmd(f, "HSET orphans %s 3", field));
    freeReplyObject(redis_fixture_cmd(f, "PEXPIRE orphans 30000"));
    assert_int_equal(
        release_reply(run_script(c, DLOCK__SCRIPT_LOCK_RELEASE, N, CH, "20000", field, "1")), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS orphans"), 0);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_hold_count_goes_0_1_0_2_1_0_through_acquire_release_acquire_acquire_release_release),
        cmocka_unit_test(test_is_held_from_another_thread_is_false_while_this_thread_holds),
        cmocka_unit_test(test_release_by_another_thread_is_enotowner_and_the_lock_stays_held),
        cmocka_unit_test(test_release_by_another_client_is_enotowner_and_the_lock_stays_held),
        cmocka_unit_test(test_two_handles_of_one_name_in_one_thread_are_one_reentrant_lock),
        cmocka_unit_test(test_try_acquire_wait_0_on_a_held_lock_times_out_at_once),
        cmocka_unit_test(test_try_acquire_wait_500_on_a_held_lock_times_out_after_450_to_1200_ms),
        cmocka_unit_test(test_ttl_is_minus_2_when_not_locked),
        cmocka_unit_test(test_ttl_follows_an_explicit_lease),
        cmocka_unit_test(test_ttl_follows_watchdog_ms_with_the_watchdog),
        cmocka_unit_test(
            test_ttl_is_minus_1_for_a_lock_without_expiry_and_its_waiter_times_out_on_time),
        cmocka_unit_test(test_reentrant_acquire_resets_the_ttl_to_its_lease),
        cmocka_unit_test(
            test_explicit_lease_expiry_lets_another_client_in_and_the_first_release_is_elost),
        cmocka_unit_test(test_watchdog_keeps_the_lock_held_for_four_periods),
        cmocka_unit_test_teardown(
            test_holder_process_killed_with_sigkill_frees_the_lock_within_its_lease,
            kill_holder_child),
        cmocka_unit_test(test_waiter_of_another_client_gets_the_lock_within_100_ms_of_the_release),
        cmocka_unit_test(test_waiter_sends_at_most_5_commands_during_a_1500_ms_wait),
        cmocka_unit_test(
            test_key_deleted_behind_the_holder_fires_the_lost_callback_once_and_release_is_elost),
        cmocka_unit_test(test_server_restarted_empty_fires_the_lost_callback_and_release_is_elost),
        cmocka_unit_test(test_force_release_by_another_client_fires_the_holders_lost_callback),
        cmocka_unit_test(test_force_release_says_whether_the_lock_was_held),
        cmocka_unit_test(test_force_release_wakes_a_waiter_of_another_client),
        cmocka_unit_test(
            test_fenced_tokens_strictly_increase_across_clients_owners_and_reentrant_acquires),
        cmocka_unit_test(test_token_of_a_plain_lock_is_einval),
        cmocka_unit_test(test_token_before_any_acquire_is_enotowner),
        cmocka_unit_test(
            test_layout_is_a_hash_of_client_id_colon_owner_to_hold_count_with_the_lease_as_pttl),
        cmocka_unit_test(
            test_last_release_publishes_0_on_redisson_lock__channel_of_the_name_in_braces),
        cmocka_unit_test(test_name_with_a_brace_uses_token_key_and_channel_without_extra_braces),
        cmocka_unit_test(test_bad_arguments_are_einval_without_any_io),
        cmocka_unit_test(test_name_over_64_kib_is_einval_and_64_kib_works),
        cmocka_unit_test(test_long_binary_ish_name_with_spaces_braces_and_utf8_works),
        cmocka_unit_test(
            test_lock_key_of_another_type_is_eredis_wrongtype_and_the_key_is_unchanged),
        cmocka_unit_test(test_force_release_of_a_string_key_is_eredis_and_the_key_is_unchanged),
        cmocka_unit_test(
            test_acquire_script_sent_twice_with_the_same_belief_takes_one_hold_and_one_token),
        cmocka_unit_test(test_release_script_sent_twice_with_the_same_belief_removes_one_hold),
        cmocka_unit_test(test_release_script_drops_holds_the_client_never_learned_of),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
