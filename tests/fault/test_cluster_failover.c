/* SPDX-License-Identifier: MIT */
/* test_cluster_failover.c — a master of a redis-cluster:// client's cluster SIGKILLed while
 * 2 clients x 4 threads loop on 4 locks (two on that master, one on each other master)
 * under the mutual-exclusion checker, until its replica is promoted:
 *   - both clients make a successful call on the promoted master within 10 s of the kill
 *     (the time is printed: the failover figure of the note);
 *   - calls on the other masters' locks are not held up meanwhile: a thread of each client
 *     looping on an uncontended lock of another master keeps succeeding through the
 *     failover, its longest call well below the failover time, and the load's calls on the
 *     other masters' locks never fail;
 *   - no two sections of a lock overlap.
 * Calls on the killed master's locks may fail while it is down (DLOCK_ECONN: the effect of a
 * script in flight is unknown; DLOCK_ELOST: the replica lacked a lease): counted, printed.
 * The nodes run with cluster-require-full-coverage no (see serve_without_full_coverage).
 * One 6-node cluster for the file (the test leaves a master dead). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "topology/cluster.h"
#include "cluster_load.h"

#define BACK_WITHIN_MS 10000
#define WAIT_MS 15000
#define LEASE_MS 1000

static cluster_fixture *fx; /* the group's, set by the test */

static int slot_of(const char *name) {
    return dlock__slot_of(name, strlen(name));
}

/* ---- a thread on an uncontended lock of a master that stays up ------------------------- */

typedef struct bystander {
    dlock_lock *l;
    pthread_t thread;
    atomic_bool stop;
    atomic_llong watch_from_ms; /* calls started from then on are measured; 0: none yet */
    atomic_llong watch_until_ms;
    atomic_long watched_calls, errors;
    atomic_llong longest_ms;
    first_error first;
} bystander;

static void *bystander_main(void *arg) {
    bystander *b = arg;
    while (!atomic_load(&b->stop)) {
        int64_t start = test_now_ms();
        /* uncontended, so it returns at once; the wait only lets an acquisition that its
         * replica acknowledged too late (sync_replicas, on a busy machine) be tried again */
        int rc = dlock_lock_try_acquire(b->l, 2000, 5000);
        if (rc == DLOCK_OK)
            rc = dlock_lock_release(b->l);
        int64_t took = test_now_ms() - start;
        if (rc != DLOCK_OK) {
            atomic_fetch_add(&b->errors, 1);
            first_error_note(&b->first, 0, "bystander", rc);
        }
        int64_t from = atomic_load(&b->watch_from_ms), until = atomic_load(&b->watch_until_ms);
        if (from > 0 && start >= from && (until == 0 || start < until)) {
            atomic_fetch_add(&b->watched_calls, 1);
            if (took > atomic_load(&b->longest_ms))
                atomic_store(&b->longest_ms, took);
        }
        test_sleep_ms(2); /* a steady pace, not a busy loop */
    }
    return NULL;
}

/* ---- a client's first successful call on the promoted master --------------------------- */

typedef struct probe {
    dlock_client *c;
    int id, slot;
    int64_t give_up_ms;
    pthread_t thread;
    int64_t back_ms; /* test_now_ms() of the first acquire that succeeded; 0: none */
    char name[CLUSTER_NAME_MAX];
    long failed;
} probe;

/* Acquires fresh names of the killed master's slot, one attempt each, until one succeeds. */
static void *probe_main(void *arg) {
    probe *p = arg;
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "probe%d", p->id);
    for (int next = 0; p->back_ms == 0 && test_now_ms() < p->give_up_ms;) {
        cluster_name_in_slot(prefix, p->slot, &next, p->name, sizeof(p->name));
        dlock_lock *l;
        if (dlock_lock_new(p->c, p->name, &l) != DLOCK_OK)
            break;
        int rc = dlock_lock_try_acquire(l, 0, 60000);
        if (rc == DLOCK_OK)
            p->back_ms = test_now_ms();
        else
            p->failed++;
        dlock_lock_free(l); /* a lock taken stays in Redis until its lease ends */
        if (rc != DLOCK_OK)
            test_sleep_ms(10);
    }
    return NULL;
}

/* Redis's default (yes) has every master answer CLUSTERDOWN while a failed master's slots
 * have no owner, about a second until its replica is promoted: no client could go on with
 * the other masters meanwhile. Operators who want them to set it to no (docs/operations.md). */
static void serve_without_full_coverage(void) {
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++) {
        redisReply *r = redis_fixture_cmd(cluster_fixture_node(fx, i),
                                          "CONFIG SET cluster-require-full-coverage no");
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STATUS);
        freeReplyObject(r);
    }
}

static void test_killed_master_under_load_clients_return_and_other_masters_go_on(void **state) {
    fx = *state;
    serve_without_full_coverage();
    int masters[3];
    cluster_masters(fx, masters);
    char names[CLUSTER_LOAD_LOCKS][CLUSTER_NAME_MAX];
    for (int k = 0; k < CLUSTER_LOAD_LOCKS; k++) {
        char prefix[32];
        snprintf(prefix, sizeof(prefix), "failover%d", k);
        cluster_name_on(fx, prefix, masters[k % 3], names[k], CLUSTER_NAME_MAX);
    }
    test_client_cfg cfg = {.connect_timeout_ms = 1000, .timeout_ms = 1000};
    cluster_load ld = {0};
    cluster_load_start(&ld, fx, cfg, names, WAIT_MS, LEASE_MS);
    bystander by[CLUSTER_LOAD_CLIENTS] = {0};
    for (int i = 0; i < CLUSTER_LOAD_CLIENTS; i++) {
        char name[CLUSTER_NAME_MAX];
        cluster_name_on(fx, i ? "bystander1" : "bystander0", masters[1 + i], name, sizeof(name));
        ASSERT_OK(dlock_lock_new(ld.c[i], name, &by[i].l));
        assert_int_equal(pthread_create(&by[i].thread, NULL, bystander_main, &by[i]), 0);
    }
    cluster_load_wait_sections(&ld, 200, 10000);

    int slot = slot_of(names[0]);
    int64_t killed_ms = test_now_ms();
    for (int i = 0; i < CLUSTER_LOAD_CLIENTS; i++)
        atomic_store(&by[i].watch_from_ms, killed_ms);
    int old = cluster_fixture_kill_master(fx, slot);
    assert_int_equal(old, masters[0]);
    probe pr[CLUSTER_LOAD_CLIENTS];
    for (int i = 0; i < CLUSTER_LOAD_CLIENTS; i++) {
        pr[i] = (probe){.c = ld.c[i],
                        .id = i,
                        .slot = slot,
                        .give_up_ms = killed_ms + slack_ms(2 * BACK_WITHIN_MS)};
        assert_int_equal(pthread_create(&pr[i].thread, NULL, probe_main, &pr[i]), 0);
    }
    int promoted = cluster_fixture_wait_new_master(fx, slot, old);
    int64_t promoted_ms = test_now_ms();
    assert_true(promoted >= 0);
    int64_t first_back_ms = INT64_MAX;
    for (int i = 0; i < CLUSTER_LOAD_CLIENTS; i++) {
        assert_int_equal(pthread_join(pr[i].thread, NULL), 0);
        if (pr[i].back_ms == 0)
            fail_msg("client %d made no successful call on the promoted master", i);
        printf("# failover: client %d's first successful call on the promoted master %lld ms "
               "after the kill (%lld ms after every node agreed; %ld attempts failed before)\n",
               i, (long long)(pr[i].back_ms - killed_ms), (long long)(pr[i].back_ms - promoted_ms),
               pr[i].failed);
        assert_int_equal(
            redis_fixture_int(cluster_fixture_node(fx, promoted), "EXISTS %s", pr[i].name), 1);
        ASSERT_BETWEEN(pr[i].back_ms - killed_ms, 0, BACK_WITHIN_MS);
        if (pr[i].back_ms < first_back_ms)
            first_back_ms = pr[i].back_ms;
    }
    int64_t failover_ms = first_back_ms - killed_ms;
    for (int i = 0; i < CLUSTER_LOAD_CLIENTS; i++)
        atomic_store(&by[i].watch_until_ms, first_back_ms);
    cluster_load_wait_sections(&ld, 200, 10000); /* the load goes on, the promoted master too */

    for (int i = 0; i < CLUSTER_LOAD_CLIENTS; i++) {
        atomic_store(&by[i].stop, true);
        assert_int_equal(pthread_join(by[i].thread, NULL), 0);
        long long longest = atomic_load(&by[i].longest_ms);
        printf("# failover: client %d on another master's lock: %ld calls during the %lld ms "
               "failover, the longest %lld ms, %ld failed\n",
               i, atomic_load(&by[i].watched_calls), (long long)failover_ms, longest,
               atomic_load(&by[i].errors));
        if (atomic_load(&by[i].errors) != 0)
            fail_msg("a call on another master's lock failed: %s", by[i].first.text);
        assert_true(atomic_load(&by[i].watched_calls) > 0);
        ASSERT_BETWEEN(longest, 0, failover_ms / 4);
        dlock_lock_free(by[i].l);
    }
    cluster_load_stop(&ld);
    for (int k = 0; k < CLUSTER_LOAD_LOCKS; k++)
        if (k % 3 != 0) /* the locks of the masters that stayed up */
            cluster_load_assert_no_errors(&ld, k);
    cluster_load_free(&ld);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_killed_master_under_load_clients_return_and_other_masters_go_on),
    };
    return cmocka_run_group_tests(tests, cluster_group_setup, cluster_group_teardown);
}
