/* SPDX-License-Identifier: MIT */
/* test_sentinel.c — a client of a redis-sentinel:// URL finds the master through the
 * sentinels: a sentinel that cannot be reached or does not answer costs nothing while
 * another answers (they are asked at once), a master name no sentinel knows is a clear DLOCK_EINVAL
 * at once, no sentinel at all is DLOCK_ECONN saying why, and every primitive works through it.
 * Failovers: tests/fault/test_sentinel_failover.c.
 *
 * One fixture (1 master + 1 replica + 3 sentinels) for the whole file: no test here
 * changes which node is the master. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dlock_int.h"
#include "core_call.h"
#include "harness.h"
#include "sentinel_fixture.h"
#include "topology_util.h"

static sentinel_fixture *fx;

static int group_setup(void **state) {
    (void)state;
    test_watchdog_arm(60, "test_sentinel");
    return sentinel_fixture_start(NULL, &fx);
}

static int group_teardown(void **state) {
    (void)state;
    sentinel_fixture_stop(fx);
    test_watchdog_disarm();
    return 0;
}

static dlock_client *sentinel_client(const char *url) {
    return connect_client_cfg(NULL, (test_client_cfg){.url = url, .connect_timeout_ms = 2000});
}

static redis_fixture *master_node(void) {
    return sentinel_fixture_node(fx, sentinel_fixture_master_index(fx));
}

/* Connections of `user` subscribed to one channel, all sentinels together (a sentinel has
 * no PUBSUB command: CLIENT LIST says it). */
static int sentinel_subscribers(const char *user) {
    char *who = topo_asprintf(" user=%s ", user);
    int n = 0;
    for (int i = 0; i < SENTINEL_FIXTURE_SENTINELS; i++) {
        redisReply *r = sentinel_fixture_sentinel_cmd(fx, i, "CLIENT LIST");
        for (const char *line = r && r->type == REDIS_REPLY_STRING ? r->str : ""; *line;) {
            size_t len = strcspn(line, "\n");
            char *one = topo_asprintf("%.*s ", (int)len, line);
            n += strstr(one, who) && strstr(one, " sub=1 ");
            free(one);
            line += len + (line[len] == '\n');
        }
        freeReplyObject(r);
    }
    free(who);
    return n;
}

/* "redis-sentinel://127.0.0.1:DEAD,<the fixture's sentinels>/NAME" */
static char *url_with_dead_sentinel_first(void) {
    const char *url = sentinel_fixture_url(fx);
    const char *hosts = strstr(url, "://") + 3;
    int dead = topo_free_port();
    return topo_asprintf("redis-sentinel://127.0.0.1:%d,%s", dead, hosts);
}

static void test_client_finds_the_master_through_the_sentinels(void **state) {
    (void)state;
    dlock_client *c = sentinel_client(sentinel_fixture_url(fx));
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(c, "found", &l));
    ASSERT_OK(dlock_lock_acquire(l, 30000));
    /* the lock is on the master the sentinels name */
    assert_int_equal(redis_fixture_int(master_node(), "EXISTS found"), 1);
    ASSERT_OK(dlock_lock_release(l));
    dlock_lock_free(l);
    dlock_client_free(c);
}

static void test_unreachable_first_sentinel_is_skipped(void **state) {
    (void)state;
    char *url = url_with_dead_sentinel_first();
    int64_t start = test_now_ms();
    dlock_client *c = sentinel_client(url);
    int64_t took = test_now_ms() - start;
    printf("# connect with a dead first sentinel: %lld ms\n", (long long)took);
    ASSERT_OK(dlock_client_ping(c));
    ASSERT_BETWEEN(took, 0, slack_ms(2000));
    dlock_client_free(c);
    free(url);
}

/* The sentinels are asked at once: a silent first one costs nothing while the others answer
 * (N silent ones cost one connect_timeout_ms: test_sentinel_edges.c). */
static void test_silent_first_sentinel_costs_nothing(void **state) {
    (void)state;
    /* a paused sentinel accepts the connection (the kernel does) and never answers */
    assert_int_equal(sentinel_fixture_pause_sentinel(fx, 0), 0);
    int64_t start = test_now_ms();
    dlock_client *c = connect_client_cfg(
        NULL, (test_client_cfg){.url = sentinel_fixture_url(fx), .connect_timeout_ms = 20000});
    int64_t took = test_now_ms() - start;
    assert_int_equal(sentinel_fixture_resume_sentinel(fx, 0), 0);
    printf("# connect with a silent first sentinel (connect_timeout_ms 20000): %lld ms\n",
           (long long)took);
    ASSERT_OK(dlock_client_ping(c));
    ASSERT_BETWEEN(took, 0, 10000);
    dlock_client_free(c);
}

static void test_unknown_master_name_is_einval_at_once_naming_it(void **state) {
    (void)state;
    const char *url = sentinel_fixture_url(fx);
    const char *name = sentinel_fixture_master_name(fx);
    /* the same sentinels, another master name */
    char *wrong = topo_asprintf("%.*s/no-such-master", (int)(strstr(url, name) - url - 1), url);
    dlock_options o;
    dlock_options_init(&o);
    o.url = wrong;
    dlock_client *c = NULL;
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_client_new(&o, &c), DLOCK_EINVAL);
    int64_t took = test_now_ms() - start;
    assert_null(c);
    printf("# %s\n", dlock_last_error());
    if (!strstr(dlock_last_error(), "no-such-master"))
        fail_msg("the error does not name the master: %s", dlock_last_error());
    ASSERT_BETWEEN(took, 0, slack_ms(1000));
    free(wrong);
}

static void test_no_sentinel_reachable_is_econn_saying_why(void **state) {
    (void)state;
    char *url = topo_asprintf("redis-sentinel://127.0.0.1:%d,127.0.0.1:%d/%s", topo_free_port(),
                              topo_free_port(), sentinel_fixture_master_name(fx));
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.connect_timeout_ms = 1000;
    dlock_client *c = NULL;
    ASSERT_RC(dlock_client_new(&o, &c), DLOCK_ECONN);
    printf("# %s\n", dlock_last_error());
    if (!strstr(dlock_last_error(), "no sentinel named the master"))
        fail_msg("unexpected text: %s", dlock_last_error());
    free(url);
}

/* ---- the ACL docs/operations.md gives ---------------------------------------------------- */

/* The sentinels' user of docs/operations.md: it may ask for the master and hear of
 * failovers, nothing else. */
static void sentinel_acl_user_on_every_sentinel(void) {
    for (int i = 0; i < SENTINEL_FIXTURE_SENTINELS; i++) {
        redisReply *r = sentinel_fixture_sentinel_cmd(
            fx, i,
            "ACL SETUSER dlock-sentinel on >spw resetchannels -@all "
            "+sentinel|get-master-addr-by-name +subscribe &+switch-master");
        if (!r || r->type == REDIS_REPLY_ERROR)
            fail_msg("sentinel %d: ACL SETUSER: %s", i, r ? r->str : "no reply");
        freeReplyObject(r);
    }
}

static void test_documented_sentinel_acl_is_enough(void **state) {
    (void)state;
    sentinel_acl_user_on_every_sentinel();
    for (int i = 0; i < SENTINEL_FIXTURE_NODES; i++)
        freeReplyObject(redis_fixture_cmd(sentinel_fixture_node(fx, i),
                                          "ACL SETUSER dlock on >dpw ~* &* +@all"));
    const char *url = sentinel_fixture_url(fx);
    char *acl_url = topo_asprintf("redis-sentinel://dlock:dpw@%s?sentinel_user=dlock-sentinel"
                                  "&sentinel_password=spw",
                                  strstr(url, "://") + 3);
    dlock_client *c = sentinel_client(acl_url);
    lost_record none = {0};
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(c, "acl", &l));
    ASSERT_OK(dlock_lock_on_lost(l, record_lost_in, &none));
    ASSERT_OK(dlock_lock_acquire(l, DLOCK_WATCHDOG));
    /* the watches (one per sentinel) subscribed with that user too */
    bool subscribed = false;
    POLL_UNTIL(subscribed, sentinel_subscribers("dlock-sentinel") == SENTINEL_FIXTURE_SENTINELS,
               slack_ms(3000));
    assert_true(subscribed);
    ASSERT_OK(dlock_lock_release(l));
    dlock_lock_free(l);
    dlock_client_free(c);
    free(acl_url);
}

/* ---- every primitive once --------------------------------------------------------------- */

static void lock_round(dlock_client *c, int (*make)(dlock_client *, const char *, dlock_lock **),
                       const char *name) {
    dlock_lock *l;
    ASSERT_OK(make(c, name, &l));
    ASSERT_OK(dlock_lock_acquire(l, DLOCK_WATCHDOG));
    ASSERT_OK(dlock_lock_release(l));
    dlock_lock_free(l);
}

static void test_every_primitive_works_through_the_sentinels(void **state) {
    (void)state;
    dlock_client *c = sentinel_client(sentinel_fixture_url(fx));
    lock_round(c, dlock_lock_new, "p-lock");
    lock_round(c, dlock_fencedlock_new, "p-fenced");
    lock_round(c, dlock_fairlock_new, "p-fair");
    lock_round(c, dlock_spinlock_new, "p-spin");

    dlock_rwlock *rw;
    ASSERT_OK(dlock_rwlock_new(c, "p-rw", &rw));
    ASSERT_OK(dlock_lock_acquire(dlock_rwlock_read(rw), 10000));
    ASSERT_OK(dlock_lock_release(dlock_rwlock_read(rw)));
    ASSERT_OK(dlock_lock_acquire(dlock_rwlock_write(rw), 10000));
    ASSERT_OK(dlock_lock_release(dlock_rwlock_write(rw)));
    dlock_rwlock_free(rw);

    dlock_semaphore *s;
    bool set;
    ASSERT_OK(dlock_semaphore_new(c, "p-sem", &s));
    ASSERT_OK(dlock_semaphore_try_set_permits(s, 1, &set));
    ASSERT_OK(dlock_semaphore_acquire(s, 1));
    ASSERT_OK(dlock_semaphore_release(s, 1));
    dlock_semaphore_free(s);

    dlock_permits *p;
    dlock_permit_id id;
    ASSERT_OK(dlock_permits_new(c, "p-permits", &p));
    ASSERT_OK(dlock_permits_try_set_permits(p, 1, &set));
    ASSERT_OK(dlock_permits_acquire(p, 0, 10000, &id));
    ASSERT_OK(dlock_permits_release(p, &id));
    dlock_permits_free(p);

    /* a latch opened by another client: the wake-up comes by message over the subscriber
     * connection, which the sentinels pointed at the master too */
    dlock_client *other = sentinel_client(sentinel_fixture_url(fx));
    dlock_latch *waiter, *opener;
    ASSERT_OK(dlock_latch_new(c, "p-latch", &waiter));
    ASSERT_OK(dlock_latch_new(other, "p-latch", &opener));
    ASSERT_OK(dlock_latch_try_set_count(opener, 1, &set));
    ASSERT_RC(dlock_latch_await(waiter, 0), DLOCK_ETIMEDOUT);
    ASSERT_OK(dlock_latch_count_down(opener));
    ASSERT_OK(dlock_latch_await(waiter, 5000));
    dlock_latch_free(opener);
    dlock_latch_free(waiter);
    dlock_client_free(other);
    dlock_client_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client_finds_the_master_through_the_sentinels),
        cmocka_unit_test(test_unreachable_first_sentinel_is_skipped),
        cmocka_unit_test(test_silent_first_sentinel_costs_nothing),
        cmocka_unit_test(test_unknown_master_name_is_einval_at_once_naming_it),
        cmocka_unit_test(test_no_sentinel_reachable_is_econn_saying_why),
        cmocka_unit_test(test_documented_sentinel_acl_is_enough),
        cmocka_unit_test(test_every_primitive_works_through_the_sentinels),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
