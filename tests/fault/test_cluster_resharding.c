/* SPDX-License-Identifier: MIT */
/* test_cluster_resharding.c — locks of a redis-cluster:// client under load and under a
 * resharding, through the public API:
 *   - 2 clients x 4 threads loop on 4 locks spread over all three masters under the
 *     mutual-exclusion checker: no two sections of a lock overlap and no call fails;
 *   - during such a run, the slots of the 4 locks, of a lock held under the watchdog and of
 *     one a third client waits on are migrated to another master in two halves (MIGRATING /
 *     IMPORTING, then MIGRATE and SETSLOT NODE): the nodes answer ASK (a lock new to the
 *     half-moved slot) and MOVED, and the callers see none of it: 0 failed calls, 0
 *     overlaps. The held lock's release while its slot is half-moved runs at once on the old
 *     owner, which still has its key (a Cluster client does not declare the channel, which
 *     would make the old owner refuse it with TRYAGAIN until the migration ends, past a
 *     short lease), and the waiter is given the lock during the migration.
 * Leases are short (1 s, watchdog 1.5 s): without wake-up messages a waiter looks again when
 * the lease it waits on would end. One 6-node cluster for the file. */
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

#include "cluster_load.h"
#include "core_call.h"
#include "topology/cluster.h"

#define WAIT_MS 15000
#define LEASE_MS 1000
#define HOLDER_WATCHDOG_MS 1500
#define SECTIONS_PER_STEP 8
#define STEP_WITHIN_MS 10000

static cluster_fixture *fx; /* the group's, set by each test */

/* Lock k of the load on master k % 3: two on the first master, one on each other. */
static void names_over_every_master(const char *prefix, char names[][CLUSTER_NAME_MAX]) {
    int masters[3];
    cluster_masters(fx, masters);
    for (int k = 0; k < CLUSTER_LOAD_LOCKS; k++) {
        char p[32];
        snprintf(p, sizeof(p), "%s%d", prefix, k);
        cluster_name_on(fx, p, masters[k % 3], names[k], CLUSTER_NAME_MAX);
    }
}

static int slot_of(const char *name) {
    return dlock__slot_of(name, strlen(name));
}

static int owner_of(const char *name) {
    return cluster_fixture_node_of_slot(fx, slot_of(name));
}

static void test_two_clients_on_locks_of_every_master_never_overlap_and_never_fail(void **state) {
    fx = *state;
    char names[CLUSTER_LOAD_LOCKS][CLUSTER_NAME_MAX];
    names_over_every_master("spread", names);
    cluster_load ld = {0};
    cluster_load_start(&ld, fx, (test_client_cfg){0}, names, WAIT_MS, LEASE_MS);
    cluster_load_wait_sections(&ld, test_scaled(2000), 30000);
    cluster_load_stop(&ld);
    for (int k = 0; k < CLUSTER_LOAD_LOCKS; k++)
        cluster_load_assert_no_errors(&ld, k);
    cluster_load_free(&ld);
}

/* ---- a lock held across the migration of its slot, released during it ------------------ */

typedef struct holder {
    dlock_lock *l;
    pthread_t thread;
    atomic_bool acquired, release_now, released;
    int acquire_rc, release_rc;
} holder;

/* The lock is per thread: one thread takes it (watchdog) and gives it back when told. */
static void *holder_main(void *arg) {
    holder *h = arg;
    h->acquire_rc = dlock_lock_acquire(h->l, DLOCK_WATCHDOG);
    atomic_store(&h->acquired, true);
    while (h->acquire_rc == DLOCK_OK && !atomic_load(&h->release_now))
        test_sleep_ms(5);
    if (h->acquire_rc == DLOCK_OK)
        h->release_rc = dlock_lock_release(h->l);
    atomic_store(&h->released, true);
    return NULL;
}

static int wait_for_held(void *arg) {
    return dlock_lock_try_acquire(arg, 60000, LEASE_MS);
}

static int64_t waits_of(dlock_client *c) {
    dlock_stats s;
    dlock_stats_init(&s);
    ASSERT_OK(dlock_client_stats(c, &s));
    return s.waits;
}

/* Moves the slot of name to the next master in two halves, the load running, and right
 * after marking the slot moves its keys, as `redis-cli --cluster reshard` does. In between,
 * c takes a fresh lock of that slot: the owner has no such key and answers ASK; after the
 * move its release meets MOVED. */
static void migrate_under_load(cluster_load *ld, dlock_client *c, const int masters[3],
                               const char *name) {
    int slot = slot_of(name), to = cluster_next_master(masters, owner_of(name)), next = 0;
    char fresh_name[CLUSTER_NAME_MAX];
    cluster_name_in_slot("fresh", slot, &next, fresh_name, sizeof(fresh_name));
    dlock_lock *fresh;
    ASSERT_OK(dlock_lock_new(c, fresh_name, &fresh));
    long long ask = cluster_errorstat(fx, "ASK");
    assert_int_equal(cluster_fixture_migrate_slot_begin(fx, slot, to), 0);
    ASSERT_OK(dlock_lock_acquire(fresh, 30000));
    assert_true(cluster_errorstat(fx, "ASK") > ask);
    assert_int_equal(cluster_fixture_migrate_slot_finish(fx, slot, to), 0);
    ASSERT_OK(dlock_lock_release(fresh));
    dlock_lock_free(fresh);
    cluster_load_wait_sections(ld, SECTIONS_PER_STEP, STEP_WITHIN_MS);
    assert_int_equal(owner_of(name), to);
}

static void
test_resharding_slots_of_held_and_waited_on_locks_under_load_fails_no_call(void **state) {
    fx = *state;
    int masters[3];
    cluster_masters(fx, masters);
    char names[CLUSTER_LOAD_LOCKS][CLUSTER_NAME_MAX], held_name[CLUSTER_NAME_MAX];
    names_over_every_master("reshard", names);
    cluster_name_on(fx, "held", masters[1], held_name, sizeof(held_name));

    /* a lock held under the watchdog by one client, waited on by another */
    dlock_client *hc = cluster_client(fx, (test_client_cfg){.watchdog_ms = HOLDER_WATCHDOG_MS});
    dlock_client *wc = cluster_client(fx, (test_client_cfg){0});
    holder h = {0};
    dlock_lock *wanted;
    ASSERT_OK(dlock_lock_new(hc, held_name, &h.l));
    ASSERT_OK(dlock_lock_new(wc, held_name, &wanted));
    assert_int_equal(pthread_create(&h.thread, NULL, holder_main, &h), 0);
    bool ok = false;
    POLL_UNTIL(ok, atomic_load(&h.acquired), slack_ms(5000));
    assert_true(ok);
    ASSERT_OK(h.acquire_rc);
    blocking_call waiter;
    blocking_call_start(&waiter, wait_for_held, wanted);
    POLL_UNTIL(ok, waits_of(wc) == 1, slack_ms(5000));
    assert_true(ok);

    cluster_load ld = {0};
    cluster_load_start(&ld, fx, (test_client_cfg){0}, names, WAIT_MS, LEASE_MS);
    cluster_load_wait_sections(&ld, SECTIONS_PER_STEP, STEP_WITHIN_MS);
    long long ask = cluster_errorstat(fx, "ASK"), moved = cluster_errorstat(fx, "MOVED"),
              tryagain = cluster_errorstat(fx, "TRYAGAIN");

    /* the load's locks: the first three (one per master) go to the next master */
    for (int k = 0; k < 3; k++)
        migrate_under_load(&ld, wc, masters, names[k]);

    /* the held lock: released while its slot is half-moved, with its key still on the old
     * owner: the release runs there at once, before the migration ends */
    int slot = slot_of(held_name), from = owner_of(held_name),
        to = cluster_next_master(masters, from);
    assert_int_equal(cluster_fixture_migrate_slot_begin(fx, slot, to), 0);
    cluster_load_wait_sections(&ld, SECTIONS_PER_STEP, STEP_WITHIN_MS);
    atomic_store(&h.release_now, true);
    POLL_UNTIL(ok, atomic_load(&h.released), slack_ms(5000));
    if (!ok)
        fail_msg("the release of %s waited for its slot's migration to end", held_name);
    assert_int_equal(pthread_join(h.thread, NULL), 0);
    ASSERT_OK(h.release_rc);
    ASSERT_OK(blocking_call_join(&waiter)); /* the waiter has it, during the migration */
    bool locked = false;
    ASSERT_OK(dlock_lock_is_locked(wanted, &locked)); /* asked through ASK if need be */
    assert_true(locked);
    assert_int_equal(cluster_fixture_migrate_slot_finish(fx, slot, to), 0);
    cluster_load_wait_sections(&ld, SECTIONS_PER_STEP, STEP_WITHIN_MS);

    cluster_load_stop(&ld);
    long long asked = cluster_errorstat(fx, "ASK") - ask,
              movedn = cluster_errorstat(fx, "MOVED") - moved,
              tried = cluster_errorstat(fx, "TRYAGAIN") - tryagain;
    printf("# resharding of 4 slots under load: the nodes answered ASK %lld, MOVED %lld, "
           "TRYAGAIN %lld times; callers saw 0 errors\n",
           asked, movedn, tried);
    assert_true(asked > 0);
    assert_true(movedn > 0);
    for (int k = 0; k < CLUSTER_LOAD_LOCKS; k++)
        cluster_load_assert_no_errors(&ld, k);
    cluster_load_free(&ld);
    dlock_lock_free(h.l);
    dlock_lock_free(wanted); /* held by the waiter's thread's owner until its lease ends */
    dlock_client_free(hc);
    dlock_client_free(wc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_clients_on_locks_of_every_master_never_overlap_and_never_fail),
        cmocka_unit_test(
            test_resharding_slots_of_held_and_waited_on_locks_under_load_fails_no_call),
    };
    return cmocka_run_group_tests(tests, cluster_group_setup, cluster_group_teardown);
}
