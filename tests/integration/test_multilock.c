/* test_multilock.c — the MultiLock of src/multilock/multilock.c (dlock_multilock_new),
 * blocking face, against three real redis-servers (one client each).
 *
 * What is proven: acquire takes every member for the calling thread (read back on each
 * server: the owner's field and the lease) and release frees every one; reentrant holds
 * count on every member; all or nothing (a member held elsewhere makes try_acquire time
 * out after its wait with no member left held, whichever member it is); a member freed
 * later is waited for with the wait shared across members; a lease shorter than the wait
 * for the last member does not let the first ones expire meanwhile, and then every member
 * has the caller's lease, not renewed; the watchdog through the composite keeps every
 * member past several leases; a member lost (deleted behind the holder's back) makes the
 * composite lost once, and release then says DLOCK_ELOST and still frees the others;
 * release continues past a member whose server is down and reports its error; ownership
 * per thread; two threads taking overlapping MultiLocks given in opposite orders never
 * deadlock, with the members' handles on shared clients and on clients of their own;
 * force_release; the token of fenced members; bad input.
 *
 * Every test starts its own servers. Records that a callback on a client's loop thread
 * writes live in static storage, so a failed assert leaves nothing dangling. Handles are
 * freed composite first, then members, then clients. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core_call.h"
#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60
#define NSERVERS 3

/* ---- helpers ----------------------------------------------------------------------------- */

/* Three servers and a client on each. */
typedef struct cluster {
    redis_fixture *f[NSERVERS];
    dlock_client *c[NSERVERS];
} cluster;

static void cluster_start(cluster *cl, int64_t watchdog_ms) {
    memset(cl, 0, sizeof(*cl));
    for (int i = 0; i < NSERVERS; i++)
        assert_int_equal(redis_fixture_start(NULL, &cl->f[i]), 0);
    for (int i = 0; i < NSERVERS; i++)
        cl->c[i] = connect_client_cfg(cl->f[i], (test_client_cfg){.watchdog_ms = watchdog_ms});
}

static void cluster_stop(cluster *cl) {
    for (int i = 0; i < NSERVERS; i++) {
        if (cl->c[i])
            ASSERT_RC(dlock_client_free(cl->c[i]), DLOCK_OK);
        cl->c[i] = NULL;
    }
    for (int i = 0; i < NSERVERS; i++)
        redis_fixture_stop(cl->f[i]);
}

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

static dlock_lock *new_multilock(dlock_lock *const *members, size_t n) {
    dlock_lock *m = NULL;
    ASSERT_RC(dlock_multilock_new(members, n, &m), DLOCK_OK);
    assert_non_null(m);
    return m;
}

/* The standard member set: "ml:a" on server 0, "ml:b" on 1, "ml:c" on 2. */
static const char *const member_names[NSERVERS] = {"ml:a", "ml:b", "ml:c"};

static void new_members(cluster *cl, dlock_lock *members[NSERVERS]) {
    for (int i = 0; i < NSERVERS; i++)
        members[i] = new_lock(cl->c[i], member_names[i]);
}

static void free_locks(dlock_lock **locks, size_t n) {
    for (size_t i = 0; i < n; i++)
        dlock_lock_free(locks[i]);
}

static long long exists(redis_fixture *f, const char *key) {
    return redis_fixture_int(f, "EXISTS %s", key);
}

/* The hold count the key's hash gives the calling thread of client c (0 if none). */
static long long holds_on(redis_fixture *f, dlock_client *c, const char *key) {
    char field[128];
    owner_field(c, dlock_thread_owner(), field, sizeof(field));
    redisReply *r = redis_fixture_cmd(f, "HGET %s %s", key, field);
    assert_non_null(r);
    long long n = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    freeReplyObject(r);
    return n;
}

/* Keys of the standard members still present, over all servers. */
static long long members_present(cluster *cl) {
    long long n = 0;
    for (int i = 0; i < NSERVERS; i++)
        n += exists(cl->f[i], member_names[i]);
    return n;
}

/* Run fn(arg) on a new thread (a new owner) and wait for it. */
static void on_other_thread(void *(*fn)(void *), void *arg) {
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fn, arg), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
}

/* The index of the member a MultiLock takes last: its order is by client id, then name
 * (dlock/multilock.h), and the standard members have one client each. */
static int member_taken_last(cluster *cl) {
    int last = 0;
    for (int i = 1; i < NSERVERS; i++)
        if (strcmp(dlock_client_id(cl->c[i]), dlock_client_id(cl->c[last])) > 0)
            last = i;
    return last;
}

/* ---- the lost callback's record (static: the loop threads write it) ---------------------- */

/* ---- acquire and release ----------------------------------------------------------------- */

static void
test_acquire_takes_every_member_for_this_thread_and_release_frees_them_all(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    cluster_start(&cl, 0);
    /* four members: one on each server, and a second one on server 0 */
    dlock_lock *members[4];
    new_members(&cl, members);
    members[3] = new_lock(cl.c[0], "ml:d");
    dlock_lock *m = new_multilock(members, 4);
    bool flag = true;
    int64_t v = -5;
    ASSERT_RC(dlock_lock_is_locked(m, &flag), DLOCK_OK);
    assert_false(flag);
    ASSERT_RC(dlock_lock_ttl(m, &v), DLOCK_OK);
    assert_int_equal(v, -2);

    ASSERT_RC(dlock_lock_acquire(m, 20000), DLOCK_OK);
    for (int i = 0; i < NSERVERS; i++) {
        assert_int_equal(holds_on(cl.f[i], cl.c[i], member_names[i]), 1);
        ASSERT_BETWEEN(pttl_of(cl.f[i], member_names[i]), 15000, 20000);
    }
    assert_int_equal(holds_on(cl.f[0], cl.c[0], "ml:d"), 1);
    ASSERT_BETWEEN(pttl_of(cl.f[0], "ml:d"), 15000, 20000);
    ASSERT_RC(dlock_lock_is_locked(m, &flag), DLOCK_OK);
    assert_true(flag);
    ASSERT_RC(dlock_lock_is_held(m, &flag), DLOCK_OK);
    assert_true(flag);
    ASSERT_RC(dlock_lock_hold_count(m, &v), DLOCK_OK);
    assert_int_equal(v, 1);
    ASSERT_RC(dlock_lock_ttl(m, &v), DLOCK_OK);
    ASSERT_BETWEEN(v, 15000, 20000);
    for (int i = 0; i < 4; i++) { /* each member answers for itself the same */
        ASSERT_RC(dlock_lock_is_held(members[i], &flag), DLOCK_OK);
        assert_true(flag);
    }

    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    assert_int_equal(members_present(&cl), 0);
    assert_int_equal(exists(cl.f[0], "ml:d"), 0);
    ASSERT_RC(dlock_lock_is_locked(m, &flag), DLOCK_OK);
    assert_false(flag);
    ASSERT_RC(dlock_lock_is_held(m, &flag), DLOCK_OK);
    assert_false(flag);
    ASSERT_RC(dlock_lock_ttl(m, &v), DLOCK_OK);
    assert_int_equal(v, -2);
    ASSERT_RC(dlock_lock_release(m), DLOCK_ENOTOWNER);
    assert_string_equal(dlock_lock_name(m), "multilock(ml:a,...)");

    dlock_lock_free(m);
    free_locks(members, 4);
    cluster_stop(&cl);
}

static void
test_reentrant_acquire_counts_two_holds_on_every_member_and_needs_two_releases(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    cluster_start(&cl, 0);
    dlock_lock *members[NSERVERS];
    new_members(&cl, members);
    dlock_lock *m = new_multilock(members, NSERVERS);
    int64_t count = -1;
    ASSERT_RC(dlock_lock_acquire(m, 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(m, 0, DLOCK_WATCHDOG), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(m, &count), DLOCK_OK);
    assert_int_equal(count, 2);
    for (int i = 0; i < NSERVERS; i++)
        assert_int_equal(holds_on(cl.f[i], cl.c[i], member_names[i]), 2);
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(m, &count), DLOCK_OK);
    assert_int_equal(count, 1);
    for (int i = 0; i < NSERVERS; i++)
        assert_int_equal(holds_on(cl.f[i], cl.c[i], member_names[i]), 1);
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    assert_int_equal(members_present(&cl), 0);
    ASSERT_RC(dlock_lock_hold_count(m, &count), DLOCK_OK);
    assert_int_equal(count, 0);
    dlock_lock_free(m);
    free_locks(members, NSERVERS);
    cluster_stop(&cl);
}

/* ---- all or nothing ---------------------------------------------------------------------- */

static void
test_a_member_held_elsewhere_times_out_after_the_wait_and_leaves_no_member_held(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    cluster_start(&cl, 0);
    dlock_client *other = connect_client(cl.f[0]); /* for a second client per server */
    dlock_client *others[NSERVERS] = {other, connect_client(cl.f[1]), connect_client(cl.f[2])};
    dlock_lock *members[NSERVERS];
    new_members(&cl, members);
    dlock_lock *m = new_multilock(members, NSERVERS);
    /* each member in turn is the one held elsewhere: first, middle and last in the order */
    for (int busy = 0; busy < NSERVERS; busy++) {
        dlock_lock *holder = new_lock(others[busy], member_names[busy]);
        ASSERT_RC(dlock_lock_acquire(holder, 30000), DLOCK_OK);
        int64_t start = test_now_ms();
        ASSERT_RC(dlock_lock_try_acquire(m, 500, 10000), DLOCK_ETIMEDOUT);
        int64_t took = test_now_ms() - start;
        ASSERT_BETWEEN(took, 450, slack_ms(1200));
        /* nothing of ours anywhere; the other holder's hold untouched */
        for (int i = 0; i < NSERVERS; i++) {
            assert_int_equal(holds_on(cl.f[i], cl.c[i], member_names[i]), 0);
            assert_int_equal(exists(cl.f[i], member_names[i]), i == busy ? 1 : 0);
        }
        bool flag = true;
        ASSERT_RC(dlock_lock_is_held(m, &flag), DLOCK_OK);
        assert_false(flag);
        ASSERT_RC(dlock_lock_is_locked(m, &flag), DLOCK_OK);
        assert_false(flag); /* not every member is locked */
        ASSERT_RC(dlock_lock_release(m), DLOCK_ENOTOWNER);
        ASSERT_RC(dlock_lock_release(holder), DLOCK_OK);
        dlock_lock_free(holder);
        printf("# member %d held elsewhere: ETIMEDOUT after %lld ms (wait 500)\n", busy,
               (long long)took);
    }
    /* and with every member free again it is had at once */
    ASSERT_RC(dlock_lock_try_acquire(m, 0, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    dlock_lock_free(m);
    free_locks(members, NSERVERS);
    for (int i = 0; i < NSERVERS; i++)
        ASSERT_RC(dlock_client_free(others[i]), DLOCK_OK);
    cluster_stop(&cl);
}

typedef struct holder_thread {
    dlock_lock *l;
    int64_t lease_ms;
    int64_t hold_ms;
    atomic_bool holding;
    int acquire_rc, release_rc;
    int64_t released_ms;
} holder_thread;

/* Takes l, says so, keeps it hold_ms, releases it. */
static void *hold_then_release(void *arg) {
    holder_thread *h = arg;
    h->acquire_rc = dlock_lock_acquire(h->l, h->lease_ms);
    atomic_store(&h->holding, true);
    if (h->acquire_rc != DLOCK_OK)
        return NULL;
    test_sleep_ms(h->hold_ms);
    h->released_ms = test_now_ms();
    h->release_rc = dlock_lock_release(h->l);
    return NULL;
}

static void test_waiting_for_a_member_freed_later_gets_every_member_once_it_is_freed(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    cluster_start(&cl, 0);
    dlock_client *other = connect_client(cl.f[1]);
    dlock_lock *busy = new_lock(other, member_names[1]);
    dlock_lock *members[NSERVERS];
    new_members(&cl, members);
    dlock_lock *m = new_multilock(members, NSERVERS);
    holder_thread h = {.l = busy, .lease_ms = 30000, .hold_ms = 400};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, hold_then_release, &h), 0);
    bool holding = false;
    POLL_UNTIL(holding, atomic_load(&h.holding), slack_ms(5000));
    assert_true(holding);
    ASSERT_RC(h.acquire_rc, DLOCK_OK);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(m, slack_ms(5000), 20000), DLOCK_OK);
    int64_t got_ms = test_now_ms();
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(h.release_rc, DLOCK_OK);
    /* had only after the member was freed, and soon after */
    assert_true(got_ms >= h.released_ms);
    ASSERT_BETWEEN(got_ms - h.released_ms, 0, slack_ms(300));
    for (int i = 0; i < NSERVERS; i++) {
        assert_int_equal(holds_on(cl.f[i], cl.c[i], member_names[i]), 1);
        ASSERT_BETWEEN(pttl_of(cl.f[i], member_names[i]), 1, 20000);
    }
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    assert_int_equal(members_present(&cl), 0);
    printf("# waited %lld ms; had it %lld ms after the busy member was freed\n",
           (long long)(got_ms - start), (long long)(got_ms - h.released_ms));
    dlock_lock_free(m);
    free_locks(members, NSERVERS);
    dlock_lock_free(busy);
    ASSERT_RC(dlock_client_free(other), DLOCK_OK);
    cluster_stop(&cl);
}

/* ---- leases ------------------------------------------------------------------------------ */

static void test_a_lease_shorter_than_the_wait_for_the_last_member_does_not_expire_the_first_ones(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    cluster_start(&cl, 900); /* the members are watchdog-held while the others are taken */
    int last = member_taken_last(&cl);
    dlock_client *other = connect_client(cl.f[last]);
    dlock_lock *busy = new_lock(other, member_names[last]);
    dlock_lock *members[NSERVERS];
    new_members(&cl, members);
    dlock_lock *m = new_multilock(members, NSERVERS);
    const int64_t lease = 300, busy_for = 1000;
    holder_thread h = {.l = busy, .lease_ms = 30000, .hold_ms = busy_for};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, hold_then_release, &h), 0);
    bool holding = false;
    POLL_UNTIL(holding, atomic_load(&h.holding), slack_ms(5000));
    assert_true(holding);
    ASSERT_RC(h.acquire_rc, DLOCK_OK);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(m, slack_ms(5000), lease), DLOCK_OK);
    int64_t took = test_now_ms() - start;
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(h.release_rc, DLOCK_OK);
    assert_true(took >= busy_for - 100); /* the others were held about 3 leases meanwhile */
    /* every member, the first ones too, is ours with the caller's lease from now */
    for (int i = 0; i < NSERVERS; i++) {
        assert_int_equal(holds_on(cl.f[i], cl.c[i], member_names[i]), 1);
        ASSERT_BETWEEN(pttl_of(cl.f[i], member_names[i]), 1, lease);
    }
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    assert_int_equal(members_present(&cl), 0);
    printf("# lease %lld ms, last member (%d) free after %lld ms: all held, all PTTL <= lease\n",
           (long long)lease, last, (long long)took);
    dlock_lock_free(m);
    free_locks(members, NSERVERS);
    dlock_lock_free(busy);
    ASSERT_RC(dlock_client_free(other), DLOCK_OK);
    cluster_stop(&cl);
}

static void test_an_explicit_lease_is_not_renewed_and_every_member_expires_with_it(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    cluster_start(&cl, 300); /* a watchdog period far shorter than the lease */
    dlock_lock *members[NSERVERS];
    new_members(&cl, members);
    dlock_lock *m = new_multilock(members, NSERVERS);
    const int64_t lease = 800;
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_acquire(m, lease), DLOCK_OK);
    for (int i = 0; i < NSERVERS; i++)
        ASSERT_BETWEEN(pttl_of(cl.f[i], member_names[i]), 1, lease);
    /* the PTTLs only go down, and the keys vanish when the lease runs out */
    long long prev[NSERVERS] = {lease, lease, lease};
    while (members_present(&cl) > 0) {
        for (int i = 0; i < NSERVERS; i++) {
            long long p = pttl_of(cl.f[i], member_names[i]);
            if (p > 0) {
                if (p > prev[i])
                    fail_msg("member %d renewed: PTTL %lld after %lld", i, p, prev[i]);
                prev[i] = p;
            }
        }
        if (test_now_ms() - start > lease + slack_ms(500))
            fail_msg("members still present %lld ms after a %lld ms lease",
                     (long long)(test_now_ms() - start), (long long)lease);
        test_sleep_ms(20);
    }
    int64_t gone = test_now_ms() - start;
    assert_true(gone >= lease - 50);
    ASSERT_RC(dlock_lock_release(m), DLOCK_ELOST);
    printf("# lease %lld ms: every member gone after %lld ms, release ELOST\n", (long long)lease,
           (long long)gone);
    dlock_lock_free(m);
    free_locks(members, NSERVERS);
    cluster_stop(&cl);
}

static void
test_the_watchdog_through_the_composite_keeps_every_member_past_four_leases(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    const int64_t watchdog_ms = 800;
    cluster cl;
    cluster_start(&cl, watchdog_ms);
    dlock_client *others[NSERVERS];
    dlock_lock *theirs[NSERVERS];
    for (int i = 0; i < NSERVERS; i++) {
        others[i] = connect_client(cl.f[i]);
        theirs[i] = new_lock(others[i], member_names[i]);
    }
    dlock_lock *members[NSERVERS];
    new_members(&cl, members);
    dlock_lock *m = new_multilock(members, NSERVERS);
    ASSERT_RC(dlock_lock_acquire(m, DLOCK_WATCHDOG), DLOCK_OK);
    int64_t start = test_now_ms();
    long long lowest = watchdog_ms;
    int checks = 0;
    while (test_now_ms() - start < 4 * watchdog_ms + 200) {
        for (int i = 0; i < NSERVERS; i++) {
            long long p = pttl_of(cl.f[i], member_names[i]);
            ASSERT_BETWEEN(p, 1, watchdog_ms);
            if (p < lowest)
                lowest = p;
            ASSERT_RC(dlock_lock_try_acquire(theirs[i], 0, 1000), DLOCK_ETIMEDOUT);
        }
        checks++;
        test_sleep_ms(100);
    }
    bool held = false;
    ASSERT_RC(dlock_lock_is_held(m, &held), DLOCK_OK);
    assert_true(held);
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    assert_int_equal(members_present(&cl), 0);
    printf("# watchdog %lld ms: held %lld ms, %d checks, lowest member PTTL %lld ms\n",
           (long long)watchdog_ms, (long long)(test_now_ms() - start), checks, lowest);
    dlock_lock_free(m);
    free_locks(members, NSERVERS);
    free_locks(theirs, NSERVERS);
    for (int i = 0; i < NSERVERS; i++)
        ASSERT_RC(dlock_client_free(others[i]), DLOCK_OK);
    cluster_stop(&cl);
}

/* ---- lost members, failing members ------------------------------------------------------- */

static void test_members_deleted_behind_the_holder_make_the_composite_lost_once_and_release_elost(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    lost_reset();
    cluster cl;
    cluster_start(&cl, 600);
    dlock_lock *members[NSERVERS];
    new_members(&cl, members);
    dlock_lock *m = new_multilock(members, NSERVERS);
    int tag = 0;
    ASSERT_RC(dlock_lock_on_lost(m, record_lost, &tag), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(m, DLOCK_WATCHDOG), DLOCK_OK);
    assert_int_equal(redis_fixture_int(cl.f[1], "DEL %s", member_names[1]), 1);
    assert_int_equal(redis_fixture_int(cl.f[2], "DEL %s", member_names[2]), 1);
    bool fired = false;
    POLL_UNTIL(fired, lost_calls() >= 1, slack_ms(3000));
    assert_true(fired);
    test_sleep_ms(600); /* another watchdog period: a second member lost fires nothing more */
    lost_record lost = lost_get();
    int calls = lost.calls;
    dlock_lock *which = lost.lock;
    uint64_t owner = lost.owner;
    int reason = lost.reason;
    void *arg = lost.arg;
    assert_int_equal(calls, 1);
    assert_ptr_equal(which, m);
    assert_true(owner == dlock_thread_owner());
    ASSERT_RC(reason, DLOCK_ELOST);
    assert_ptr_equal(arg, &tag);
    /* the one member still held is still renewed; release frees it and says ELOST */
    ASSERT_BETWEEN(pttl_of(cl.f[0], member_names[0]), 1, 600);
    ASSERT_RC(dlock_lock_release(m), DLOCK_ELOST);
    assert_int_equal(members_present(&cl), 0);
    ASSERT_RC(dlock_lock_release(m), DLOCK_ENOTOWNER);
    /* taken again afterwards, it is not lost */
    ASSERT_RC(dlock_lock_acquire(m, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    assert_int_equal(lost_calls(), 1);
    dlock_lock_free(m);
    free_locks(members, NSERVERS);
    cluster_stop(&cl);
}

static void
test_release_continues_past_a_member_whose_server_is_down_and_reports_its_error(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    memset(&cl, 0, sizeof(cl));
    for (int i = 0; i < NSERVERS; i++)
        assert_int_equal(redis_fixture_start(NULL, &cl.f[i]), 0);
    /* commands give up after 300 ms x 2 attempts */
    for (int i = 0; i < NSERVERS; i++)
        cl.c[i] =
            connect_client_cfg(cl.f[i], (test_client_cfg){.timeout_ms = 300, .retry_attempts = 1});
    dlock_lock *members[NSERVERS];
    new_members(&cl, members);
    dlock_lock *m = new_multilock(members, NSERVERS);
    ASSERT_RC(dlock_lock_acquire(m, 30000), DLOCK_OK);
    assert_int_equal(redis_fixture_kill(cl.f[1]), 0);
    int64_t start = test_now_ms();
    int rc = dlock_lock_release(m);
    int64_t took = test_now_ms() - start;
    if (rc == DLOCK_OK)
        fail_msg("release with a member's server down = DLOCK_OK");
    printf("# release with server 1 down: %s (%s) after %lld ms\n", dlock_err_name(rc),
           dlock_last_error(), (long long)took);
    ASSERT_BETWEEN(took, 0, slack_ms(3000));
    assert_int_equal(exists(cl.f[0], member_names[0]), 0);
    assert_int_equal(exists(cl.f[2], member_names[2]), 0);
    dlock_lock_free(m);
    free_locks(members, NSERVERS);
    cluster_stop(&cl);
}

/* ---- ownership --------------------------------------------------------------------------- */

typedef struct other_view {
    dlock_lock *m;
    int release_rc, held_rc, try_rc;
    bool held;
} other_view;

static void *release_and_try_from_other_thread(void *arg) {
    other_view *v = arg;
    v->release_rc = dlock_lock_release(v->m);
    v->held_rc = dlock_lock_is_held(v->m, &v->held);
    v->try_rc = dlock_lock_try_acquire(v->m, 0, 5000);
    return NULL;
}

static void
test_another_thread_cannot_release_or_take_it_and_every_member_stays_held(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    cluster_start(&cl, 0);
    dlock_lock *members[NSERVERS];
    new_members(&cl, members);
    dlock_lock *m = new_multilock(members, NSERVERS);
    ASSERT_RC(dlock_lock_acquire(m, 20000), DLOCK_OK);
    other_view v = {.m = m, .held = true};
    on_other_thread(release_and_try_from_other_thread, &v);
    ASSERT_RC(v.release_rc, DLOCK_ENOTOWNER);
    ASSERT_RC(v.held_rc, DLOCK_OK);
    assert_false(v.held);
    ASSERT_RC(v.try_rc, DLOCK_ETIMEDOUT);
    for (int i = 0; i < NSERVERS; i++) {
        assert_int_equal(holds_on(cl.f[i], cl.c[i], member_names[i]), 1);
        ASSERT_BETWEEN(redis_fixture_int(cl.f[i], "HLEN %s", member_names[i]), 1, 1);
    }
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    assert_int_equal(members_present(&cl), 0);
    dlock_lock_free(m);
    free_locks(members, NSERVERS);
    cluster_stop(&cl);
}

static void test_force_release_frees_every_member_whoever_holds_them(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    cluster_start(&cl, 0);
    dlock_client *others[NSERVERS];
    dlock_lock *theirs[NSERVERS], *members[NSERVERS];
    for (int i = 0; i < NSERVERS; i++) {
        others[i] = connect_client(cl.f[i]);
        theirs[i] = new_lock(others[i], member_names[i]);
    }
    new_members(&cl, members);
    dlock_lock *their_m = new_multilock(theirs, NSERVERS);
    dlock_lock *m = new_multilock(members, NSERVERS);
    bool was = false;
    ASSERT_RC(dlock_lock_force_release(m, &was), DLOCK_OK);
    assert_false(was);
    ASSERT_RC(dlock_lock_acquire(their_m, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(m, 0, 30000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_force_release(m, &was), DLOCK_OK);
    assert_true(was);
    assert_int_equal(members_present(&cl), 0);
    ASSERT_RC(dlock_lock_try_acquire(m, 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(their_m), DLOCK_ELOST);
    dlock_lock_free(m);
    dlock_lock_free(their_m);
    free_locks(members, NSERVERS);
    free_locks(theirs, NSERVERS);
    for (int i = 0; i < NSERVERS; i++)
        ASSERT_RC(dlock_client_free(others[i]), DLOCK_OK);
    cluster_stop(&cl);
}

/* ---- two threads, overlapping sets, opposite orders -------------------------------------- */

/* The members: "ov:a" on server 0, "ov:b" on 1, "ov:c" and "ov:d" on 2. Thread 0 takes
 * {a, b, c} given in that order, thread 1 {c, b, a, d} given in the reverse order plus one
 * of its own. Each thread has its own handles (a handle's lost callback belongs to one
 * composite); with shared_clients they are on the same three clients, else each thread has
 * clients of its own, as two processes would: other client ids, which the application
 * cannot line up. A MultiLock's order must then still be the same for both (the same
 * servers and names), or each can take one member the other waits for. */
typedef struct overlap_worker {
    dlock_client *c[NSERVERS];
    int index;
    long rounds;
    long done;
    int bad_rc;
    char bad_detail[256];
} overlap_worker;

static struct {
    atomic_int inside;   /* sections in progress on the shared members */
    atomic_long counter; /* bumped with a separate load and store */
    atomic_int overlaps; /* an enter that found another section in progress */
} overlap;

static void *overlap_work(void *arg) {
    overlap_worker *w = arg;
    dlock_lock *members[4];
    size_t n;
    if (w->index == 0) {
        members[0] = new_lock(w->c[0], "ov:a");
        members[1] = new_lock(w->c[1], "ov:b");
        members[2] = new_lock(w->c[2], "ov:c");
        n = 3;
    } else {
        members[0] = new_lock(w->c[2], "ov:c");
        members[1] = new_lock(w->c[1], "ov:b");
        members[2] = new_lock(w->c[0], "ov:a");
        members[3] = new_lock(w->c[2], "ov:d");
        n = 4;
    }
    dlock_lock *m = NULL;
    w->bad_rc = dlock_multilock_new(members, n, &m);
    for (long i = 0; w->bad_rc == DLOCK_OK && i < w->rounds; i++) {
        int rc = dlock_lock_try_acquire(m, slack_ms(5000), 30000);
        if (rc != DLOCK_OK) {
            w->bad_rc = rc;
            snprintf(w->bad_detail, sizeof(w->bad_detail), "round %ld: %s", i, dlock_last_error());
            break;
        }
        if (atomic_fetch_add(&overlap.inside, 1) != 0)
            atomic_fetch_add(&overlap.overlaps, 1);
        long v = atomic_load_explicit(&overlap.counter, memory_order_relaxed);
        if (i % 4 == 0)
            sched_yield();
        atomic_store_explicit(&overlap.counter, v + 1, memory_order_relaxed);
        atomic_fetch_sub(&overlap.inside, 1);
        rc = dlock_lock_release(m);
        if (rc != DLOCK_OK) {
            w->bad_rc = rc;
            snprintf(w->bad_detail, sizeof(w->bad_detail), "release %ld: %s", i,
                     dlock_last_error());
            break;
        }
        w->done++;
    }
    dlock_lock_free(m);
    free_locks(members, n);
    return NULL;
}

/* Whether clients x and y (one per server) order the servers oppositely by client id. */
static bool orders_reversed(dlock_client *const *x, dlock_client *const *y) {
    for (int i = 0; i < NSERVERS; i++)
        for (int j = i + 1; j < NSERVERS; j++)
            if ((strcmp(dlock_client_id(x[i]), dlock_client_id(x[j])) < 0) ==
                (strcmp(dlock_client_id(y[i]), dlock_client_id(y[j])) < 0))
                return false;
    return true;
}

static void run_overlapping_threads(bool shared_clients) {
    cluster cl;
    cluster_start(&cl, 0);
    atomic_store(&overlap.inside, 0);
    atomic_store(&overlap.counter, 0);
    atomic_store(&overlap.overlaps, 0);
    overlap_worker w[2];
    memset(w, 0, sizeof(w));
    for (int k = 0; k < 2; k++) {
        w[k].index = k;
        w[k].rounds = test_scaled(150);
        for (int i = 0; i < NSERVERS; i++)
            w[k].c[i] = shared_clients ? cl.c[i] : connect_client(cl.f[i]);
    }
    if (!shared_clients) {
        /* Client ids are random, so two applications' clients may sort the servers any
         * way. Make it the unlucky way: thread 1's clients sort the three servers in the
         * reverse of thread 0's order (re-connecting them until they do). */
        for (int tries = 0; !orders_reversed(w[0].c, w[1].c); tries++) {
            assert_true(tries < 300);
            int i = tries % NSERVERS;
            ASSERT_RC(dlock_client_free(w[1].c[i]), DLOCK_OK);
            w[1].c[i] = connect_client(cl.f[i]);
        }
    }
    pthread_t t[2];
    int64_t start = test_now_ms();
    for (int k = 0; k < 2; k++)
        assert_int_equal(pthread_create(&t[k], NULL, overlap_work, &w[k]), 0);
    for (int k = 0; k < 2; k++)
        assert_int_equal(pthread_join(t[k], NULL), 0);
    int64_t took = test_now_ms() - start;
    long long left = exists(cl.f[0], "ov:a") + exists(cl.f[1], "ov:b") + exists(cl.f[2], "ov:c") +
                     exists(cl.f[2], "ov:d");
    /* everything freed before any verdict */
    if (!shared_clients)
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < NSERVERS; i++)
                ASSERT_RC(dlock_client_free(w[k].c[i]), DLOCK_OK);
    cluster_stop(&cl);
    for (int k = 0; k < 2; k++)
        if (w[k].bad_rc != DLOCK_OK)
            fail_msg("thread %d: %s (%s) after %ld rounds", k, dlock_err_name(w[k].bad_rc),
                     w[k].bad_detail, w[k].done);
    assert_int_equal(atomic_load(&overlap.overlaps), 0);
    assert_int_equal(atomic_load(&overlap.counter), w[0].rounds + w[1].rounds);
    assert_int_equal(left, 0);
    printf("# %s clients: 2 x %ld rounds in %lld ms, no overlap, no timeout\n",
           shared_clients ? "shared" : "separate", w[0].rounds, (long long)took);
}

static void
test_overlapping_multilocks_in_opposite_orders_on_shared_clients_never_deadlock(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    run_overlapping_threads(true);
}

static void
test_overlapping_multilocks_in_opposite_orders_on_separate_clients_never_deadlock(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    run_overlapping_threads(false);
}

/* ---- fencing tokens ---------------------------------------------------------------------- */

static void test_token_is_the_largest_of_the_fenced_members_tokens(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    cluster_start(&cl, 0);
    /* counters at 10, 41, 7: the next tokens are 11, 42, 8 */
    const long long counters[NSERVERS] = {10, 41, 7};
    for (int i = 0; i < NSERVERS; i++)
        assert_int_equal(redis_fixture_int(cl.f[i], "INCRBY redisson_lock_token:{%s} %lld",
                                           member_names[i], counters[i]),
                         counters[i]);
    dlock_lock *members[NSERVERS];
    for (int i = 0; i < NSERVERS; i++)
        members[i] = new_fenced(cl.c[i], member_names[i]);
    dlock_lock *m = new_multilock(members, NSERVERS);
    uint64_t token = 0;
    ASSERT_RC(dlock_lock_token(m, &token), DLOCK_ENOTOWNER);
    ASSERT_RC(dlock_lock_acquire(m, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_token(m, &token), DLOCK_OK);
    assert_int_equal(token, 42);
    ASSERT_RC(dlock_lock_token_of(m, dlock_thread_owner(), &token), DLOCK_OK);
    assert_int_equal(token, 42);
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(m, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_token(m, &token), DLOCK_OK);
    assert_int_equal(token, 43);
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    dlock_lock_free(m);
    free_locks(members, NSERVERS);

    /* plain members: no token */
    new_members(&cl, members);
    m = new_multilock(members, NSERVERS);
    ASSERT_RC(dlock_lock_acquire(m, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_token(m, &token), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_release(m), DLOCK_OK);
    dlock_lock_free(m);
    free_locks(members, NSERVERS);
    cluster_stop(&cl);
}

/* ---- bad input --------------------------------------------------------------------------- */

static void ignore_lock_cb(dlock_lock *l, int status, void *arg) {
    (void)l;
    (void)status;
    (void)arg;
}

static void test_bad_arguments_are_einval_and_the_async_face_is_einval(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    cluster cl;
    cluster_start(&cl, 0);
    dlock_lock *members[NSERVERS];
    new_members(&cl, members);
    dlock_lock *untouched = (dlock_lock *)&cl; /* must stay as it is on failure */
    dlock_lock *out = untouched;
    ASSERT_RC(dlock_multilock_new(NULL, 3, &out), DLOCK_EINVAL);
    ASSERT_RC(dlock_multilock_new(members, 0, &out), DLOCK_EINVAL);
    ASSERT_RC(dlock_multilock_new(members, NSERVERS, NULL), DLOCK_EINVAL);
    dlock_lock *with_null[] = {members[0], NULL, members[2]};
    ASSERT_RC(dlock_multilock_new(with_null, 3, &out), DLOCK_EINVAL);
    dlock_lock *repeated[] = {members[0], members[1], members[0]};
    ASSERT_RC(dlock_multilock_new(repeated, 3, &out), DLOCK_EINVAL);
    assert_ptr_equal(out, untouched);
    dlock_lock *m = new_multilock(members, NSERVERS);
    dlock_lock *nested[] = {m, members[0]};
    ASSERT_RC(dlock_multilock_new(nested, 2, &out), DLOCK_EINVAL);
    ASSERT_RC(dlock_redlock_new(nested, 2, &out), DLOCK_EINVAL);
    assert_ptr_equal(out, untouched);
    /* the calls' own checks */
    ASSERT_RC(dlock_lock_acquire(m, 0), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_try_acquire(m, -5, 1000), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_is_held(m, NULL), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_ttl(m, NULL), DLOCK_EINVAL);
    /* no async face on composites yet */
    ASSERT_RC(dlock_lock_acquire_async(m, 7, 0, 1000, ignore_lock_cb, NULL), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_release_async(m, 7, ignore_lock_cb, NULL), DLOCK_EINVAL);
    /* none of that touched Redis */
    assert_int_equal(members_present(&cl), 0);
    dlock_lock_free(m);
    dlock_lock_free(NULL);
    free_locks(members, NSERVERS);
    cluster_stop(&cl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_acquire_takes_every_member_for_this_thread_and_release_frees_them_all),
        cmocka_unit_test(
            test_reentrant_acquire_counts_two_holds_on_every_member_and_needs_two_releases),
        cmocka_unit_test(
            test_a_member_held_elsewhere_times_out_after_the_wait_and_leaves_no_member_held),
        cmocka_unit_test(test_waiting_for_a_member_freed_later_gets_every_member_once_it_is_freed),
        cmocka_unit_test(
            test_a_lease_shorter_than_the_wait_for_the_last_member_does_not_expire_the_first_ones),
        cmocka_unit_test(test_an_explicit_lease_is_not_renewed_and_every_member_expires_with_it),
        cmocka_unit_test(
            test_the_watchdog_through_the_composite_keeps_every_member_past_four_leases),
        cmocka_unit_test(
            test_members_deleted_behind_the_holder_make_the_composite_lost_once_and_release_elost),
        cmocka_unit_test(
            test_release_continues_past_a_member_whose_server_is_down_and_reports_its_error),
        cmocka_unit_test(test_another_thread_cannot_release_or_take_it_and_every_member_stays_held),
        cmocka_unit_test(test_force_release_frees_every_member_whoever_holds_them),
        cmocka_unit_test(
            test_overlapping_multilocks_in_opposite_orders_on_shared_clients_never_deadlock),
        cmocka_unit_test(
            test_overlapping_multilocks_in_opposite_orders_on_separate_clients_never_deadlock),
        cmocka_unit_test(test_token_is_the_largest_of_the_fenced_members_tokens),
        cmocka_unit_test(test_bad_arguments_are_einval_and_the_async_face_is_einval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
