/* SPDX-License-Identifier: MIT */
/* test_cluster_multilock.c — a MultiLock (include/dlock/multilock.h) whose members live on the
 * three different masters of a redis-cluster:// client's cluster, each in its own slot:
 *   - acquire takes every member, each kept by the master of its slot, and release frees
 *     them all there;
 *   - a second client's MultiLock over the same names (another order) cannot have them while
 *     they are held and leaves nothing behind; it gets them once the first is released;
 *   - held under the watchdog, each member is renewed twice on its master (its TTL rises
 *     again) and none is lost.
 * One 6-node cluster for the file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "topology/cluster.h"
#include "cluster_load.h"

#define MEMBERS 3
#define LEASE_MS 1000
/* renewals every second: a loss would take 3 s without one, which no busy machine of the
 * gate has shown (600 ms, renewed every 200 ms, was lost beside other cluster tests) */
#define WATCHDOG_MS 3000

static cluster_fixture *fx; /* the group's, set by each test */

typedef struct members {
    char names[MEMBERS][CLUSTER_NAME_MAX];
    int master[MEMBERS];
    dlock_lock *l[MEMBERS];
    dlock_lock *multi;
} members;

/* Member i on master i, on client c; the MultiLock over them in the order `order`. */
static void members_new(members *m, dlock_client *c, const char *prefix, const int order[MEMBERS]) {
    int masters[3];
    cluster_masters(fx, masters);
    for (int i = 0; i < MEMBERS; i++) {
        char p[32];
        snprintf(p, sizeof(p), "%s%d", prefix, i);
        m->master[i] = masters[i];
        cluster_name_on(fx, p, masters[i], m->names[i], CLUSTER_NAME_MAX);
        ASSERT_OK(dlock_lock_new(c, m->names[i], &m->l[i]));
    }
    dlock_lock *ordered[MEMBERS];
    for (int i = 0; i < MEMBERS; i++)
        ordered[i] = m->l[order[i]];
    ASSERT_OK(dlock_multilock_new(ordered, MEMBERS, &m->multi));
}

static void members_free(members *m) {
    dlock_lock_free(m->multi);
    for (int i = 0; i < MEMBERS; i++)
        dlock_lock_free(m->l[i]);
}

/* Owners (hash fields) of member i's key on the master of its slot. */
static long long owners_on_master(const members *m, int i) {
    return redis_fixture_int(cluster_fixture_node(fx, m->master[i]), "HLEN %s", m->names[i]);
}

/* Polls until each member's lease was renewed twice on its master (its PTTL rose above the
 * one read before it), failing at once if a lease is lost. */
static void members_renewed_twice(const members *m, const lost_record *lost) {
    long long last[MEMBERS];
    int rises[MEMBERS] = {0};
    for (int i = 0; i < MEMBERS; i++)
        last[i] = redis_fixture_int(cluster_fixture_node(fx, m->master[i]), "PTTL %s", m->names[i]);
    int64_t until = test_now_ms() + test_slack_ms(20000);
    for (;;) {
        bool all = true;
        for (int i = 0; i < MEMBERS; i++) {
            long long now =
                redis_fixture_int(cluster_fixture_node(fx, m->master[i]), "PTTL %s", m->names[i]);
            if (now < 0)
                fail_msg("member %d (%s) is gone from its master", i, m->names[i]);
            rises[i] += now > last[i];
            last[i] = now;
            all = all && rises[i] >= 2;
        }
        if (lost_get_in(lost).calls != 0)
            fail_msg("a member's lease was lost under the watchdog");
        if (all)
            return;
        if (test_now_ms() > until)
            fail_msg("renewals seen per member: %d %d %d", rises[0], rises[1], rises[2]);
        test_sleep_ms(50);
    }
}

static void test_multilock_members_are_kept_each_by_the_master_of_its_slot(void **state) {
    fx = *state;
    static const int order[MEMBERS] = {0, 1, 2};
    dlock_client *c = cluster_client(fx, (test_client_cfg){0});
    members m;
    members_new(&m, c, "multi", order);
    ASSERT_OK(dlock_lock_acquire(m.multi, 30000));
    bool held = false;
    ASSERT_OK(dlock_lock_is_held(m.multi, &held));
    assert_true(held);
    for (int i = 0; i < MEMBERS; i++) {
        assert_int_equal(owners_on_master(&m, i), 1);
        long long pttl =
            redis_fixture_int(cluster_fixture_node(fx, m.master[i]), "PTTL %s", m.names[i]);
        ASSERT_BETWEEN(pttl, 1, 30000);
    }
    ASSERT_OK(dlock_lock_release(m.multi));
    for (int i = 0; i < MEMBERS; i++)
        assert_int_equal(owners_on_master(&m, i), 0);
    members_free(&m);
    dlock_client_free(c);
}

static int acquire_within_5s(void *arg) {
    return dlock_lock_try_acquire(arg, 5000, LEASE_MS);
}

static void test_second_multilock_over_the_same_members_waits_for_the_first(void **state) {
    fx = *state;
    static const int forward[MEMBERS] = {0, 1, 2}, backward[MEMBERS] = {2, 1, 0};
    dlock_client *ca = cluster_client(fx, (test_client_cfg){0});
    dlock_client *cb = cluster_client(fx, (test_client_cfg){0});
    members a, b;
    members_new(&a, ca, "shared", forward);
    members_new(&b, cb, "shared", backward);
    ASSERT_OK(dlock_lock_acquire(a.multi, 30000));
    /* busy: what b took of the members (none, as the first in order is held) is given back */
    ASSERT_RC(dlock_lock_try_acquire(b.multi, 0, LEASE_MS), DLOCK_ETIMEDOUT);
    for (int i = 0; i < MEMBERS; i++)
        assert_int_equal(owners_on_master(&a, i), 1);
    /* b waits; a's release lets it have every member */
    blocking_call wait;
    blocking_call_start(&wait, acquire_within_5s, b.multi);
    ASSERT_OK(dlock_lock_release(a.multi));
    ASSERT_OK(blocking_call_join(&wait));
    for (int i = 0; i < MEMBERS; i++)
        assert_int_equal(owners_on_master(&b, i), 1);
    members_free(&a);
    members_free(&b); /* b's members stay held by the waiting thread until their lease */
    dlock_client_free(ca);
    dlock_client_free(cb);
}

static void test_multilock_under_the_watchdog_keeps_members_of_every_master(void **state) {
    fx = *state;
    static const int order[MEMBERS] = {0, 1, 2};
    dlock_client *c = cluster_client(fx, (test_client_cfg){.watchdog_ms = WATCHDOG_MS});
    members m;
    members_new(&m, c, "watched", order);
    lost_record lost = {0};
    ASSERT_OK(dlock_lock_on_lost(m.multi, record_lost_in, &lost));
    ASSERT_OK(dlock_lock_acquire(m.multi, DLOCK_WATCHDOG));
    /* each member's TTL is renewed on its own master, period after period */
    members_renewed_twice(&m, &lost);
    assert_int_equal(lost_get_in(&lost).calls, 0);
    for (int i = 0; i < MEMBERS; i++)
        assert_int_equal(owners_on_master(&m, i), 1);
    ASSERT_OK(dlock_lock_release(m.multi));
    for (int i = 0; i < MEMBERS; i++)
        assert_int_equal(owners_on_master(&m, i), 0);
    members_free(&m);
    dlock_client_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_multilock_members_are_kept_each_by_the_master_of_its_slot),
        cmocka_unit_test(test_second_multilock_over_the_same_members_waits_for_the_first),
        cmocka_unit_test(test_multilock_under_the_watchdog_keeps_members_of_every_master),
    };
    return cmocka_run_group_tests(tests, cluster_group_setup, cluster_group_teardown);
}
