/* SPDX-License-Identifier: MIT */
/* test_cluster_uncovered_slot.c — a slot that no master serves, on a real 6-node cluster
 * (CLUSTER DELSLOTS on every node), is a passing state for a redis-cluster:// client:
 *   - a call on a key of that slot waits for a master within its wait (and its command's
 *     give-up time), and succeeds when the slot is assigned again meanwhile;
 *   - when the time is up it fails with DLOCK_ECONN and a text that names the slot: for a
 *     try (wait 0), after timeout_ms, not after the give-up time (4 x timeout_ms);
 *   - a call on another slot, which the nodes refuse with CLUSTERDOWN while coverage is
 *     incomplete (cluster-require-full-coverage yes), fails quoting CLUSTERDOWN;
 *   - once the slot has its master again, the same client works on it.
 * And a MOVED loop (a master that gave its slot away alone: it and the other each name the
 * other as the owner) fails at the call's time quoting the last MOVED.
 * (Every such failure read "Redis connection failed".)
 * One cluster for the file; each test leaves every slot assigned as it found it. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "client_node.h"
#include "topology/cluster.h"
#include "cluster_fixture.h"
#include "cluster_load.h"
#include "core_call.h"
#include "dlock.h"
#include "harness.h"
#include "test_util.h"

static cluster_fixture *fx; /* the group's (cluster_group_setup), set by each test */

static dlock_client *client_with(int64_t timeout_ms, int retries) {
    test_client_cfg cfg = {.timeout_ms = timeout_ms, .retry_attempts = retries};
    return cluster_client(fx, cfg);
}

static void on_every_node(const char *fmt, int slot) {
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++) {
        redisReply *r = redis_fixture_cmd(cluster_fixture_node(fx, i), fmt, slot);
        if (!r || r->type == REDIS_REPLY_ERROR)
            fail_msg("node %d: %s: %s", i, fmt, r ? r->str : "no reply");
        freeReplyObject(r);
    }
}

/* Polls until the client's map says `key`'s slot has no master (want_none) or has one. The
 * map is read when a call needs it: each round makes one on l (key's lock), whatever its
 * outcome. */
static void wait_client_map(dlock_client *c, dlock_lock *l, const char *key, bool want_none) {
    char answer[300];
    bool seen = false;
    for (int64_t until = test_now_ms() + test_slack_ms(10000); !seen;) {
        if (dlock_lock_try_acquire(l, 0, 30000) == DLOCK_OK)
            ASSERT_OK(dlock_lock_release(l));
        client_node_of(c, key, answer, sizeof(answer));
        seen = (strncmp(answer, "no master", 9) == 0) == want_none;
        if (!seen && test_now_ms() >= until)
            fail_msg("the client's map says %s for %s", answer, key);
        if (!seen)
            test_sleep_ms(20);
    }
}

/* A key on another master than `avoid`'s slot's. */
static void key_elsewhere(int avoid_node, char *key, size_t size) {
    for (int i = 0;; i++) {
        snprintf(key, size, "elsewhere-%d", i);
        int node = cluster_fixture_node_of_key(fx, key);
        if (node >= 0 && node != avoid_node)
            return;
    }
}

typedef struct acquire_call {
    dlock_lock *l;
    int64_t wait_ms;
    pthread_t thread;
    int rc, release_rc;
    char text[512];
} acquire_call;

/* Acquires, then releases (a lock is its thread's). */
static void *acquire_main(void *arg) {
    acquire_call *a = arg;
    a->rc = dlock_lock_try_acquire(a->l, a->wait_ms, 30000);
    snprintf(a->text, sizeof(a->text), "%s", dlock_last_error());
    a->release_rc = a->rc == DLOCK_OK ? dlock_lock_release(a->l) : DLOCK_OK;
    return NULL;
}

static void test_a_slot_without_a_master_waits_then_names_the_slot_and_heals(void **state) {
    fx = *state;
    test_watchdog_arm(150, __func__);
    const char *key = "uncovered";
    int slot = dlock__slot_of(key, strlen(key));
    int owner = cluster_fixture_node_of_slot(fx, slot);
    assert_true(owner >= 0);
    char other[32];
    key_elsewhere(owner, other, sizeof(other));

    /* a give-up time of 1 s: the failures below come soon */
    dlock_client *quick = client_with(500, 1);
    dlock_lock *l, *elsewhere;
    ASSERT_OK(dlock_lock_new(quick, key, &l));
    ASSERT_OK(dlock_lock_new(quick, other, &elsewhere));
    ASSERT_OK(dlock_lock_try_acquire(l, 0, 30000)); /* the slot's master is known */
    ASSERT_OK(dlock_lock_release(l));

    on_every_node("CLUSTER DELSLOTS %d", slot);
    wait_client_map(quick, l, key, true);

    int rc = dlock_lock_try_acquire(l, 0, 30000);
    char want[64];
    snprintf(want, sizeof(want), "slot %d has no master", slot);
    if (rc != DLOCK_ECONN || !strstr(dlock_last_error(), want))
        fail_msg("%s: %s", dlock_err_name(rc), dlock_last_error());
    rc = dlock_lock_try_acquire(elsewhere, 0, 30000);
    if (rc != DLOCK_ECONN || !strstr(dlock_last_error(), "CLUSTERDOWN"))
        fail_msg("elsewhere: %s: %s", dlock_err_name(rc), dlock_last_error());

    /* with the default give-up time (12 s): a try ends after timeout_ms (its command was
     * never sent, so failing it changes nothing), and a call that waits waits for the
     * slot's master */
    dlock_client *patient = client_with(3000, 3);
    acquire_call a = {.wait_ms = test_slack_ms(10000)};
    ASSERT_OK(dlock_lock_new(patient, key, &a.l));
    int64_t start = test_now_ms();
    rc = dlock_lock_try_acquire(a.l, 0, 30000);
    int64_t took = test_now_ms() - start;
    if (rc != DLOCK_ECONN || !strstr(dlock_last_error(), want) || took < 2995 || took >= 9000)
        fail_msg("a try: %s after %lld ms: %s", dlock_err_name(rc), (long long)took,
                 dlock_last_error());
    assert_int_equal(pthread_create(&a.thread, NULL, acquire_main, &a), 0);
    test_sleep_ms(300); /* most likely parked by now; if not, it must succeed all the same */
    redisReply *r = redis_fixture_cmd(cluster_fixture_node(fx, owner), "CLUSTER ADDSLOTS %d", slot);
    assert_non_null(r);
    assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    pthread_join(a.thread, NULL);
    if (a.rc != DLOCK_OK)
        fail_msg("the waiting call: %s: %s", dlock_err_name(a.rc), a.text);
    ASSERT_OK(a.release_rc);
    assert_int_equal(cluster_fixture_wait_ok(fx, 10000), 0);

    /* the client that failed works again, on both keys */
    wait_client_map(quick, l, key, false);
    ASSERT_OK(dlock_lock_try_acquire(l, 2000, 30000));
    ASSERT_OK(dlock_lock_release(l));
    ASSERT_OK(dlock_lock_try_acquire(elsewhere, 2000, 30000));
    ASSERT_OK(dlock_lock_release(elsewhere));

    dlock_lock_free(a.l);
    dlock_lock_free(l);
    dlock_lock_free(elsewhere);
    ASSERT_OK(dlock_client_free(patient));
    ASSERT_OK(dlock_client_free(quick));
}

/* A master gives its slot to another (CLUSTER SETSLOT NODE on it alone): it answers MOVED
 * to the other, which still names it as the owner and answers MOVED back. The call fails
 * when its time is up, its text quoting the last MOVED (it read "Redis connection failed");
 * once the slot is taken back, the same client works again. */
static void test_a_moved_loop_fails_quoting_the_last_moved(void **state) {
    fx = *state;
    test_watchdog_arm(120, __func__);
    const char *key = "bounced";
    int slot = dlock__slot_of(key, strlen(key));
    int owner = cluster_fixture_node_of_slot(fx, slot);
    assert_true(owner >= 0);
    int other = -1;
    for (int i = 0; i < CLUSTER_FIXTURE_NODES && other < 0; i++)
        if (i != owner && cluster_fixture_is_master(fx, i))
            other = i;
    assert_true(other >= 0);
    dlock_client *c = client_with(500, 1);
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(c, key, &l));

    redisReply *r = redis_fixture_cmd(cluster_fixture_node(fx, owner), "CLUSTER SETSLOT %d NODE %s",
                                      slot, cluster_fixture_node_id(fx, other));
    assert_non_null(r);
    assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    int rc = dlock_lock_try_acquire(l, 0, 30000);
    if (rc != DLOCK_ECONN || !strstr(dlock_last_error(), "\"MOVED "))
        fail_msg("%s: %s", dlock_err_name(rc), dlock_last_error());
    print_message("%s\n", dlock_last_error());

    r = redis_fixture_cmd(cluster_fixture_node(fx, owner), "CLUSTER SETSLOT %d NODE %s", slot,
                          cluster_fixture_node_id(fx, owner));
    assert_non_null(r);
    freeReplyObject(r);
    bool back = false;
    for (int64_t until = test_now_ms() + test_slack_ms(10000); !back;) {
        back = dlock_lock_try_acquire(l, 0, 30000) == DLOCK_OK;
        if (!back && test_now_ms() >= until)
            fail_msg("after the slot was taken back: %s", dlock_last_error());
    }
    ASSERT_OK(dlock_lock_release(l));
    dlock_lock_free(l);
    ASSERT_OK(dlock_client_free(c));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_slot_without_a_master_waits_then_names_the_slot_and_heals),
        cmocka_unit_test(test_a_moved_loop_fails_quoting_the_last_moved),
    };
    return cmocka_run_group_tests(tests, cluster_group_setup, cluster_group_teardown);
}
