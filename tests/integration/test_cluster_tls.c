/* SPDX-License-Identifier: MIT */
/* test_cluster_tls.c — rediss-cluster://: a 6-node Redis Cluster reached over TLS only.
 *
 * What is proven, through the public API on a rediss-cluster://127.0.0.1:P?cacert=... client
 * given one seed: the nodes' map names their TLS ports and the client reaches every master
 * from it (a lock on a name of each of the three masters, its key found there); a waiter on
 * another client is woken by the release's SPUBLISH (sharded pub/sub over TLS) long before the
 * holder's 30 s lease; a semaphore's waiter is woken the same way; the watchdog renews leases
 * on every master over TLS for several periods and loses none. A CA that did not sign the
 * nodes is DLOCK_ECONN saying why, and a plain redis-cluster:// URL to the TLS ports fails as
 * cleanly: DLOCK_ECONN within the connect time, no hang.
 *
 * One TLS cluster for the whole file (cluster_fixture with .tls): every node has
 * --tls-cluster yes and --tls-replication yes; the test reads state over each node's plain
 * unix socket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_fixture.h"
#include "core_call.h"
#include "dlock.h"
#include "harness.h"
#include "test_util.h"
#include "topology_util.h"

#define MASTERS 3
#define LEASE_MS 30000 /* the holder's: a wake-up by lease would take this long */
#define WAIT_MS 20000  /* the waiter's: a wake-up that never comes fails it */
#define WAKE_MS 1000   /* how soon after the release a woken waiter is in (slack widens it) */
#define CONNECT_MS 2000
#define WATCHDOG_MS 600 /* a renewal every 200 ms */
#define WATCHDOG_PERIODS 5

static cluster_fixture *fx;
static char *tls_url; /* rediss-cluster://127.0.0.1:P0?cacert=CA: one seed, the rest mapped */

static int group_setup(void **state) {
    (void)state;
    test_watchdog_arm(180, "test_cluster_tls");
    cluster_fixture_opts o = {.tls = true};
    if (cluster_fixture_start(&o, &fx) != 0)
        return -1;
    tls_url = topo_asprintf("rediss-cluster://127.0.0.1:%d?cacert=%s", cluster_fixture_port(fx, 0),
                            tls_certs_ca(cluster_fixture_certs(fx)));
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    cluster_fixture_stop(fx);
    free(tls_url);
    test_watchdog_disarm();
    return 0;
}

static int new_client(const char *url, int64_t watchdog_ms, dlock_client **out) {
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.connect_timeout_ms = CONNECT_MS;
    o.retry_delay_ms = TEST_RETRY_DELAY_MS;
    if (watchdog_ms > 0)
        o.watchdog_ms = watchdog_ms;
    return dlock_client_new(&o, out);
}

static dlock_client *tls_client(int64_t watchdog_ms) {
    dlock_client *c = NULL;
    int rc = new_client(tls_url, watchdog_ms, &c);
    if (rc != DLOCK_OK)
        fail_msg("%s: %s (%s)", tls_url, dlock_err_name(rc), dlock_last_error());
    return c;
}

/* "<prefix>-<i>" names, one per master: names[k] on masters[k], three different nodes. */
static void name_per_master(const char *prefix, char names[MASTERS][32], int masters[MASTERS]) {
    int found = 0;
    for (int i = 0; found < MASTERS && i < 100000; i++) {
        char name[32];
        snprintf(name, sizeof(name), "%s-%d", prefix, i);
        int node = cluster_fixture_node_of_key(fx, name), k = 0;
        while (k < found && masters[k] != node)
            k++;
        if (node < 0 || k < found)
            continue;
        snprintf(names[found], 32, "%s", name);
        masters[found++] = node;
    }
    assert_int_equal(found, MASTERS);
}

static bool is_fixture_port(int port) {
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++)
        if (cluster_fixture_port(fx, i) == port)
            return true;
    return false;
}

/* ---- the map ------------------------------------------------------------------------------ */

static void test_the_slot_map_names_the_tls_ports(void **state) {
    (void)state;
    redisReply *r = redis_fixture_cmd(cluster_fixture_node(fx, 0), "CLUSTER SLOTS");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, MASTERS);
    for (size_t s = 0; s < r->elements; s++) {
        redisReply *range = r->element[s];
        /* from, to, the master, the replicas it lists (those with data yet) */
        assert_true(range->elements >= 3);
        for (size_t n = 2; n < range->elements; n++) {
            long long port = range->element[n]->element[1]->integer;
            if (!is_fixture_port((int)port))
                fail_msg("CLUSTER SLOTS names port %lld, not a TLS port of the nodes", port);
        }
    }
    freeReplyObject(r);
}

/* ---- a lock on every master --------------------------------------------------------------- */

static void test_a_lock_is_taken_on_each_master_over_tls(void **state) {
    (void)state;
    dlock_client *c = tls_client(0);
    char names[MASTERS][32];
    int masters[MASTERS];
    name_per_master("tls-each", names, masters);
    for (int k = 0; k < MASTERS; k++) {
        dlock_lock *l;
        ASSERT_OK(dlock_lock_new(c, names[k], &l));
        /* uncontended: it returns at once; the wait only lets an acquisition its replica
         * acknowledged after the 100 ms WAIT of a single attempt (sync_replicas, on a busy
         * machine: the ASan stage) be tried again */
        ASSERT_OK(dlock_lock_try_acquire(l, 5000, LEASE_MS));
        redis_fixture *node = cluster_fixture_node(fx, masters[k]);
        assert_int_equal(redis_fixture_int(node, "EXISTS %s", names[k]), 1);
        ASSERT_OK(dlock_lock_release(l));
        assert_int_equal(redis_fixture_int(node, "EXISTS %s", names[k]), 0);
        dlock_lock_free(l);
    }
    ASSERT_OK(dlock_client_free(c));
}

/* ---- wake-ups by message ------------------------------------------------------------------ */

/* A waiter's blocking call, and when it got in. */
typedef struct waiter {
    dlock_lock *lock;
    dlock_semaphore *sem;
    int64_t woken_ms;
} waiter;

static int lock_wait(void *arg) {
    waiter *w = arg;
    int rc = dlock_lock_try_acquire(w->lock, WAIT_MS, LEASE_MS);
    w->woken_ms = test_now_ms();
    return rc == DLOCK_OK ? dlock_lock_release(w->lock) : rc;
}

static int sem_wait(void *arg) {
    waiter *w = arg;
    int rc = dlock_semaphore_try_acquire(w->sem, 1, WAIT_MS);
    w->woken_ms = test_now_ms();
    return rc == DLOCK_OK ? dlock_semaphore_release(w->sem, 1) : rc;
}

/* Starts the waiter, waits until it is subscribed on `node` for `name`, lets `release` run
 * and checks that the waiter got in soon after it. */
static void expect_woken_by_message(blocking_call *call, int (*wait)(void *), waiter *w, int node,
                                    const char *name, int (*release)(void *), void *held) {
    blocking_call_start(call, wait, w);
    bool asleep = false;
    POLL_UNTIL(asleep, cluster_fixture_shard_subscribed(fx, node, name), test_slack_ms(5000));
    assert_true(asleep);
    assert_false(blocking_call_returned(call));
    int64_t released_ms = test_now_ms();
    ASSERT_OK(release(held));
    ASSERT_OK(blocking_call_join(call));
    printf("# %s on node %d: waiter in %lld ms after the release\n", name, node,
           (long long)(w->woken_ms - released_ms));
    ASSERT_BETWEEN(w->woken_ms - released_ms, 0, test_slack_ms(WAKE_MS));
}

static int lock_release(void *held) {
    return dlock_lock_release(held);
}

static int sem_release_one(void *held) {
    return dlock_semaphore_release(held, 1);
}

static void test_a_lock_waiter_is_woken_by_the_release_message_on_each_master(void **state) {
    (void)state;
    dlock_client *holder_client = tls_client(0), *waiter_client = tls_client(0);
    char names[MASTERS][32];
    int masters[MASTERS];
    name_per_master("tls-wake", names, masters);
    for (int k = 0; k < MASTERS; k++) {
        dlock_lock *held;
        waiter w = {0};
        blocking_call call;
        ASSERT_OK(dlock_lock_new(holder_client, names[k], &held));
        ASSERT_OK(dlock_lock_new(waiter_client, names[k], &w.lock));
        ASSERT_OK(dlock_lock_acquire(held, LEASE_MS));
        expect_woken_by_message(&call, lock_wait, &w, masters[k], names[k], lock_release, held);
        dlock_lock_free(w.lock);
        dlock_lock_free(held);
    }
    ASSERT_OK(dlock_client_free(waiter_client));
    ASSERT_OK(dlock_client_free(holder_client));
}

static void test_a_semaphore_waiter_is_woken_by_the_release_message(void **state) {
    (void)state;
    dlock_client *holder_client = tls_client(0), *waiter_client = tls_client(0);
    const char *name = "tls-sem";
    dlock_semaphore *held;
    waiter w = {0};
    blocking_call call;
    ASSERT_OK(dlock_semaphore_new(holder_client, name, &held));
    ASSERT_OK(dlock_semaphore_new(waiter_client, name, &w.sem));
    ASSERT_OK(dlock_semaphore_try_set_permits(held, 2, NULL));
    ASSERT_OK(dlock_semaphore_acquire(held, 2));
    int64_t available = -1;
    ASSERT_OK(dlock_semaphore_available(w.sem, &available));
    assert_int_equal(available, 0);
    expect_woken_by_message(&call, sem_wait, &w, cluster_fixture_node_of_key(fx, name), name,
                            sem_release_one, held);
    ASSERT_OK(dlock_semaphore_release(held, 1));
    ASSERT_OK(dlock_semaphore_available(w.sem, &available));
    assert_int_equal(available, 2);
    dlock_semaphore_free(w.sem);
    dlock_semaphore_free(held);
    ASSERT_OK(dlock_client_free(waiter_client));
    ASSERT_OK(dlock_client_free(holder_client));
}

/* ---- the watchdog ------------------------------------------------------------------------- */

static void test_the_watchdog_renews_leases_on_every_master_over_tls(void **state) {
    (void)state;
    dlock_client *c = tls_client(WATCHDOG_MS);
    char names[MASTERS][32];
    int masters[MASTERS];
    dlock_lock *locks[MASTERS];
    lost_record lost = {0};
    name_per_master("tls-renew", names, masters);
    for (int k = 0; k < MASTERS; k++) {
        ASSERT_OK(dlock_lock_new(c, names[k], &locks[k]));
        ASSERT_OK(dlock_lock_on_lost(locks[k], record_lost_in, &lost));
        ASSERT_OK(dlock_lock_acquire(locks[k], DLOCK_WATCHDOG));
    }
    /* several leases long: without renewals over TLS every key would be gone after one */
    int64_t until = test_now_ms() + WATCHDOG_PERIODS * WATCHDOG_MS;
    while (test_now_ms() < until) {
        for (int k = 0; k < MASTERS; k++) {
            long long pttl = pttl_of(cluster_fixture_node(fx, masters[k]), names[k]);
            if (pttl <= 0)
                fail_msg("%s on node %d: PTTL %lld", names[k], masters[k], pttl);
        }
        test_sleep_ms(50);
    }
    assert_int_equal(lost_get_in(&lost).calls, 0);
    for (int k = 0; k < MASTERS; k++) {
        ASSERT_OK(dlock_lock_release(locks[k]));
        dlock_lock_free(locks[k]);
    }
    ASSERT_OK(dlock_client_free(c));
}

/* ---- refused connections ------------------------------------------------------------------ */

static void test_a_cacert_that_did_not_sign_the_nodes_is_econn_saying_verification(void **state) {
    (void)state;
    char *url =
        topo_asprintf("rediss-cluster://127.0.0.1:%d?cacert=%s", cluster_fixture_port(fx, 0),
                      tls_certs_wrong_ca(cluster_fixture_certs(fx)));
    dlock_client *c = NULL;
    ASSERT_RC(new_client(url, 0, &c), DLOCK_ECONN);
    assert_null(c);
    if (!strstr(dlock_last_error(), "verification"))
        fail_msg("\"%s\" does not say \"verification\"", dlock_last_error());
    free(url);
}

static void test_a_plain_url_to_the_tls_ports_is_econn_within_the_connect_time(void **state) {
    (void)state;
    char *url = topo_asprintf("redis-cluster://%s", cluster_fixture_hosts(fx));
    dlock_client *c = NULL;
    int64_t start = test_now_ms();
    ASSERT_RC(new_client(url, 0, &c), DLOCK_ECONN);
    int64_t took = test_now_ms() - start;
    assert_null(c);
    printf("# plain URL to TLS ports: %s after %lld ms (%s)\n", dlock_err_name(DLOCK_ECONN),
           (long long)took, dlock_last_error());
    ASSERT_BETWEEN(took, 0, test_slack_ms(2 * CONNECT_MS));
    free(url);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_slot_map_names_the_tls_ports),
        cmocka_unit_test(test_a_lock_is_taken_on_each_master_over_tls),
        cmocka_unit_test(test_a_lock_waiter_is_woken_by_the_release_message_on_each_master),
        cmocka_unit_test(test_a_semaphore_waiter_is_woken_by_the_release_message),
        cmocka_unit_test(test_the_watchdog_renews_leases_on_every_master_over_tls),
        cmocka_unit_test(test_a_cacert_that_did_not_sign_the_nodes_is_econn_saying_verification),
        cmocka_unit_test(test_a_plain_url_to_the_tls_ports_is_econn_within_the_connect_time),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
