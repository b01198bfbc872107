/* SPDX-License-Identifier: MIT */
/* test_cluster_pubsub.c — wake-ups by message in a Redis Cluster: sharded pub/sub.
 *
 * What is proven, through the public API on a redis-cluster:// client: a waiter on each
 * primitive (lock, fair lock, rwlock, semaphore, permit-expirable semaphore, latch), on names
 * spread over all three masters, is woken by the release's SPUBLISH (the holder's lease is
 * 30 s, the waiter gets in within a second or two, below even the 5 s re-look of the
 * semaphore and the latch); the client keeps one subscriber connection per master that has
 * waiters, and closes it once no waiter is left there; a waiter whose lock's slot moves to
 * another master while it waits follows it and is still woken by the release there.
 *
 * One 6-node cluster for the whole file. A "subscriber connection" on a node is one that
 * is subscribed to something or last ran a (S)(UN)SUBSCRIBE (CLIENT LIST): the test clients'
 * command connections never do. The resharding test comes last: it changes which master
 * serves a slot, and the others pick their names from the map of the moment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
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

#define LEASE_MS 30000 /* the holder's: a wake-up by lease would take this long */
#define WAIT_MS 20000  /* the waiter's: a wake-up that never comes fails it */
#define WAKE_MS 1000   /* how soon after the release a woken waiter is in (slack widens it) */
#define MASTERS 3

static cluster_fixture *fx;

static int group_setup(void **state) {
    (void)state;
    test_watchdog_arm(300, "test_cluster_pubsub");
    return cluster_fixture_start(NULL, &fx);
}

static int group_teardown(void **state) {
    (void)state;
    cluster_fixture_stop(fx);
    test_watchdog_disarm();
    return 0;
}

/* What the waiter client of the resharding test logged (its loop thread writes). */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static int logged_violations, logged_slot_given_away;

static void record_log(int level, const char *msg, void *arg) {
    (void)level;
    (void)arg;
    if (strstr(msg, "protocol violation") || strstr(msg, "slot"))
        printf("# log: %s\n", msg);
    pthread_mutex_lock(&log_mu);
    logged_violations += strstr(msg, "protocol violation") != NULL;
    logged_slot_given_away += strstr(msg, "gave away the slot") != NULL;
    pthread_mutex_unlock(&log_mu);
}

static dlock_client *cluster_client_logged(bool logged) {
    char *url = topo_asprintf("redis-cluster://%s", cluster_fixture_hosts(fx));
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    if (logged)
        o.log_cb = record_log;
    dlock_client *c = NULL;
    int rc = dlock_client_new(&o, &c);
    free(url);
    if (rc != DLOCK_OK)
        fail_msg("dlock_client_new: %s: %s", dlock_strerror(rc), dlock_last_error());
    return c;
}

static dlock_client *cluster_client(void) {
    return cluster_client_logged(false);
}

/* count names "<prefix>-<i>" spread over the masters in turn (name k on the k % 3-th master
 * found); names[k] gets the name, masters[k] its node. */
static void names_spread(const char *prefix, int count, char names[][32], int *masters) {
    int seen[MASTERS] = {-1, -1, -1}, nseen = 0, found = 0;
    for (int i = 0; found < count && i < 100000; i++) {
        char name[32];
        snprintf(name, sizeof(name), "%s-%d", prefix, i);
        int node = cluster_fixture_node_of_key(fx, name), k = 0;
        while (k < nseen && seen[k] != node)
            k++;
        if (node < 0 || (k == nseen && nseen == MASTERS))
            continue;
        if (k == nseen)
            seen[nseen++] = node;
        if (k != found % MASTERS)
            continue; /* not this master's turn */
        snprintf(names[found], 32, "%s", name);
        masters[found++] = node;
    }
    assert_int_equal(found, count);
}

/* ---- what the nodes say -------------------------------------------------------------------- */

static long field_long(const char *line, const char *field) {
    const char *at = strstr(line, field);
    return at ? strtol(at + strlen(field), NULL, 10) : 0;
}

static bool field_is(const char *line, const char *field, const char *value) {
    const char *at = strstr(line, field);
    size_t n = strlen(value);
    return at && strncmp(at + strlen(field), value, n) == 0 &&
           (at[strlen(field) + n] == ' ' || at[strlen(field) + n] == '\n');
}

/* Subscriber connections on node (see the file's comment). */
static int subscriber_connections(int node) {
    redisReply *r = redis_fixture_cmd(cluster_fixture_node(fx, node), "CLIENT LIST");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    int count = 0;
    for (const char *line = r->str; line && *line;
         line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        char one[1024];
        size_t len = strcspn(line, "\n");
        snprintf(one, sizeof(one), " %.*s\n", (int)(len < sizeof(one) - 3 ? len : sizeof(one) - 3),
                 line);
        if (field_long(one, " sub=") > 0 || field_long(one, " ssub=") > 0 ||
            field_is(one, " cmd=", "subscribe") || field_is(one, " cmd=", "unsubscribe") ||
            field_is(one, " cmd=", "ssubscribe") || field_is(one, " cmd=", "sunsubscribe"))
            count++;
    }
    freeReplyObject(r);
    return count;
}

static void assert_no_subscriber_connection_soon(int node) {
    bool none = false;
    POLL_UNTIL(none, subscriber_connections(node) == 0, test_slack_ms(5000));
    if (!none)
        fail_msg("node %d still has %d subscriber connection(s)", node,
                 subscriber_connections(node));
}

/* ---- the primitives under test ------------------------------------------------------------- */

/* One object: its holder's handle on one client, its waiter's on another, and what the
 * waiter's thread saw. */
typedef struct subject {
    const struct primitive *kind;
    dlock_client *holder_client, *waiter_client;
    char name[32];
    int master;
    void *held, *waiting; /* the handles */
    dlock_permit_id held_permit;
    pthread_t thread;
    int rc;
    int64_t released_ms, woken_ms;
} subject;

typedef struct primitive {
    const char *prefix;
    void (*hold)(subject *s); /* makes both handles; the holder takes the object */
    int (*wait)(subject *s);  /* the waiter's blocking call (WAIT_MS); it lets go at once */
    void (*release)(subject *s);
    void (*free_handles)(subject *s);
} primitive;

static void lock_hold(subject *s, int (*make)(dlock_client *, const char *, dlock_lock **)) {
    ASSERT_OK(make(s->holder_client, s->name, (dlock_lock **)&s->held));
    ASSERT_OK(make(s->waiter_client, s->name, (dlock_lock **)&s->waiting));
    ASSERT_OK(dlock_lock_acquire(s->held, LEASE_MS));
}
static void plain_lock_hold(subject *s) {
    lock_hold(s, dlock_lock_new);
}
static void fair_lock_hold(subject *s) {
    lock_hold(s, dlock_fairlock_new);
}
static int lock_wait(subject *s) {
    int rc = dlock_lock_try_acquire(s->waiting, WAIT_MS, LEASE_MS);
    s->woken_ms = test_now_ms();
    if (rc == DLOCK_OK)
        rc = dlock_lock_release(s->waiting);
    return rc;
}
static void lock_release(subject *s) {
    ASSERT_OK(dlock_lock_release(s->held));
}
static void lock_free(subject *s) {
    dlock_lock_free(s->held);
    dlock_lock_free(s->waiting);
}

/* rwlock: the holder writes, the waiter reads. */
static void rw_hold(subject *s) {
    ASSERT_OK(dlock_rwlock_new(s->holder_client, s->name, (dlock_rwlock **)&s->held));
    ASSERT_OK(dlock_rwlock_new(s->waiter_client, s->name, (dlock_rwlock **)&s->waiting));
    ASSERT_OK(dlock_lock_acquire(dlock_rwlock_write(s->held), LEASE_MS));
}
static int rw_wait(subject *s) {
    dlock_lock *read = dlock_rwlock_read(s->waiting);
    int rc = dlock_lock_try_acquire(read, WAIT_MS, LEASE_MS);
    s->woken_ms = test_now_ms();
    if (rc == DLOCK_OK)
        rc = dlock_lock_release(read);
    return rc;
}
static void rw_release(subject *s) {
    ASSERT_OK(dlock_lock_release(dlock_rwlock_write(s->held)));
}
static void rw_free(subject *s) {
    dlock_rwlock_free(s->held);
    dlock_rwlock_free(s->waiting);
}

/* semaphore of one permit */
static void sem_hold(subject *s) {
    ASSERT_OK(dlock_semaphore_new(s->holder_client, s->name, (dlock_semaphore **)&s->held));
    ASSERT_OK(dlock_semaphore_new(s->waiter_client, s->name, (dlock_semaphore **)&s->waiting));
    ASSERT_OK(dlock_semaphore_try_set_permits(s->held, 1, NULL));
    ASSERT_OK(dlock_semaphore_acquire(s->held, 1));
}
static int sem_wait(subject *s) {
    int rc = dlock_semaphore_try_acquire(s->waiting, 1, WAIT_MS);
    s->woken_ms = test_now_ms();
    if (rc == DLOCK_OK)
        rc = dlock_semaphore_release(s->waiting, 1);
    return rc;
}
static void sem_release(subject *s) {
    ASSERT_OK(dlock_semaphore_release(s->held, 1));
}
static void sem_free(subject *s) {
    dlock_semaphore_free(s->held);
    dlock_semaphore_free(s->waiting);
}

/* permit-expirable semaphore of one permit, leased for LEASE_MS */
static void permits_hold(subject *s) {
    ASSERT_OK(dlock_permits_new(s->holder_client, s->name, (dlock_permits **)&s->held));
    ASSERT_OK(dlock_permits_new(s->waiter_client, s->name, (dlock_permits **)&s->waiting));
    ASSERT_OK(dlock_permits_try_set_permits(s->held, 1, NULL));
    ASSERT_OK(dlock_permits_acquire(s->held, 0, LEASE_MS, &s->held_permit));
}
static int permits_wait(subject *s) {
    dlock_permit_id id;
    int rc = dlock_permits_acquire(s->waiting, WAIT_MS, LEASE_MS, &id);
    s->woken_ms = test_now_ms();
    if (rc == DLOCK_OK)
        rc = dlock_permits_release(s->waiting, &id);
    return rc;
}
static void permits_release(subject *s) {
    ASSERT_OK(dlock_permits_release(s->held, &s->held_permit));
}
static void permits_free(subject *s) {
    dlock_permits_free(s->held);
    dlock_permits_free(s->waiting);
}

/* latch of count 1: the waiter awaits, the holder counts down */
static void latch_hold(subject *s) {
    ASSERT_OK(dlock_latch_new(s->holder_client, s->name, (dlock_latch **)&s->held));
    ASSERT_OK(dlock_latch_new(s->waiter_client, s->name, (dlock_latch **)&s->waiting));
    ASSERT_OK(dlock_latch_try_set_count(s->held, 1, NULL));
}
static int latch_wait(subject *s) {
    int rc = dlock_latch_await(s->waiting, WAIT_MS);
    s->woken_ms = test_now_ms();
    return rc;
}
static void latch_release(subject *s) {
    ASSERT_OK(dlock_latch_count_down(s->held));
}
static void latch_free(subject *s) {
    dlock_latch_free(s->held);
    dlock_latch_free(s->waiting);
}

static const primitive LOCK = {"lock", plain_lock_hold, lock_wait, lock_release, lock_free};
static const primitive FAIR_LOCK = {"fair", fair_lock_hold, lock_wait, lock_release, lock_free};
static const primitive RWLOCK = {"rw", rw_hold, rw_wait, rw_release, rw_free};
static const primitive SEMAPHORE = {"sem", sem_hold, sem_wait, sem_release, sem_free};
static const primitive PERMITS = {"permits", permits_hold, permits_wait, permits_release,
                                  permits_free};
static const primitive LATCH = {"latch", latch_hold, latch_wait, latch_release, latch_free};

static void *waiter_main(void *arg) {
    subject *s = arg;
    s->rc = s->kind->wait(s);
    return NULL;
}

/* The holder takes s's object and the waiter starts waiting for it in a thread; returns
 * once the waiter's channel is subscribed on the object's master. */
static void start_waiting(subject *s) {
    s->kind->hold(s);
    assert_int_equal(pthread_create(&s->thread, NULL, waiter_main, s), 0);
    bool subscribed = false;
    POLL_UNTIL(subscribed, cluster_fixture_shard_subscribed(fx, s->master, s->name),
               test_slack_ms(5000));
    if (!subscribed)
        fail_msg("%s: no shard channel of {%s} is subscribed on its master (node %d)",
                 s->kind->prefix, s->name, s->master);
}

static void release_and_join(subject *s) {
    s->released_ms = test_now_ms();
    s->kind->release(s);
}

/* Joins the waiter: it got in, within WAKE_MS of the release. */
static void assert_woken_by_message(subject *s) {
    assert_int_equal(pthread_join(s->thread, NULL), 0);
    if (s->rc != DLOCK_OK)
        fail_msg("%s %s: %s: %s", s->kind->prefix, s->name, dlock_strerror(s->rc),
                 dlock_last_error());
    int64_t took = s->woken_ms - s->released_ms;
    printf("# %s %s on node %d: in %lld ms after the release\n", s->kind->prefix, s->name,
           s->master, (long long)took);
    if (took > test_slack_ms(WAKE_MS))
        fail_msg("%s %s: woken %lld ms after the release (a message takes ms; the lease is %d)",
                 s->kind->prefix, s->name, (long long)took, LEASE_MS);
    s->kind->free_handles(s);
}

/* One object of kind on each master: each waiter is woken by its release's message. */
static void waiters_on_every_master_are_woken_by_message(const primitive *kind) {
    dlock_client *holder = cluster_client(), *waiter = cluster_client();
    char names[MASTERS][32];
    int masters[MASTERS];
    names_spread(kind->prefix, MASTERS, names, masters);
    subject s[MASTERS];
    for (int i = 0; i < MASTERS; i++) {
        s[i] = (subject){
            .kind = kind, .holder_client = holder, .waiter_client = waiter, .master = masters[i]};
        snprintf(s[i].name, sizeof(s[i].name), "%s", names[i]);
        start_waiting(&s[i]);
    }
    for (int i = 0; i < MASTERS; i++)
        release_and_join(&s[i]);
    for (int i = 0; i < MASTERS; i++)
        assert_woken_by_message(&s[i]);
    ASSERT_OK(dlock_client_free(waiter));
    ASSERT_OK(dlock_client_free(holder));
}

static void test_lock_waiters_on_every_master_are_woken_by_message(void **state) {
    (void)state;
    waiters_on_every_master_are_woken_by_message(&LOCK);
}

static void test_fair_lock_waiters_on_every_master_are_woken_by_message(void **state) {
    (void)state;
    waiters_on_every_master_are_woken_by_message(&FAIR_LOCK);
}

static void test_rwlock_readers_on_every_master_are_woken_by_message(void **state) {
    (void)state;
    waiters_on_every_master_are_woken_by_message(&RWLOCK);
}

static void test_semaphore_waiters_on_every_master_are_woken_by_message(void **state) {
    (void)state;
    waiters_on_every_master_are_woken_by_message(&SEMAPHORE);
}

static void test_permits_waiters_on_every_master_are_woken_by_message(void **state) {
    (void)state;
    waiters_on_every_master_are_woken_by_message(&PERMITS);
}

static void test_latch_waiters_on_every_master_are_woken_by_message(void **state) {
    (void)state;
    waiters_on_every_master_are_woken_by_message(&LATCH);
}

/* Three locks waited on per master: one subscriber connection per master carries their
 * three channels; once the waiters are gone, each master's connection is closed. */
static void test_one_subscriber_connection_per_shard_closed_once_no_waiter_is_left(void **state) {
    (void)state;
    enum { PER_MASTER = 3, COUNT = PER_MASTER * MASTERS };
    for (int m = 0; m < CLUSTER_FIXTURE_NODES; m++)
        assert_no_subscriber_connection_soon(m); /* the earlier tests' clients are gone */
    dlock_client *holder = cluster_client(), *waiter = cluster_client();
    char names[COUNT][32];
    int masters[COUNT];
    names_spread("conn", COUNT, names, masters);
    subject s[COUNT];
    for (int i = 0; i < COUNT; i++) {
        s[i] = (subject){
            .kind = &LOCK, .holder_client = holder, .waiter_client = waiter, .master = masters[i]};
        snprintf(s[i].name, sizeof(s[i].name), "%s", names[i]);
        start_waiting(&s[i]);
    }
    for (int m = 0; m < CLUSTER_FIXTURE_NODES; m++) {
        bool master = false;
        for (int i = 0; i < COUNT; i++)
            master |= masters[i] == m;
        if (subscriber_connections(m) != (master ? 1 : 0))
            fail_msg("node %d (%s): %d subscriber connections", m,
                     master ? "a master with waiters" : "no waiter", subscriber_connections(m));
    }
    for (int i = 0; i < COUNT; i++)
        release_and_join(&s[i]);
    for (int i = 0; i < COUNT; i++)
        assert_woken_by_message(&s[i]);
    /* the waiter client stays: it is its own shard subscribers that must go */
    for (int m = 0; m < CLUSTER_FIXTURE_NODES; m++)
        assert_no_subscriber_connection_soon(m);
    /* and the next wait opens one again */
    subject again = {
        .kind = &LOCK, .holder_client = holder, .waiter_client = waiter, .master = masters[0]};
    snprintf(again.name, sizeof(again.name), "%s", names[0]);
    start_waiting(&again);
    release_and_join(&again);
    assert_woken_by_message(&again);
    /* a connection closed for want of use and opened again for the next wait is no
     * reconnect: nothing dropped it, and the operators' alert on reconnects must not fire */
    dlock_stats st;
    dlock_stats_init(&st);
    ASSERT_OK(dlock_client_stats(waiter, &st));
    assert_int_equal(st.reconnects, 0);
    ASSERT_OK(dlock_client_free(waiter));
    ASSERT_OK(dlock_client_free(holder));
}

/* The slot of a waited-on lock moves to another master (MIGRATING/IMPORTING, MIGRATE,
 * SETSLOT NODE): the old master drops the subscription, the client follows the slot, and
 * the release on the new master wakes the waiter by message. A second lock waited on at
 * the old master keeps its shard connection open, so the old master's own sunsubscribe
 * reaches the client whichever comes first, it or the client's new slot map: neither way
 * is a protocol violation (it costs no connection), and the other waiter is still woken. */
static void test_waiter_follows_its_slot_to_a_new_master_and_is_woken_there(void **state) {
    (void)state;
    dlock_client *holder = cluster_client(), *waiter = cluster_client_logged(true);
    char names[MASTERS + 1][32];
    int masters[MASTERS + 1];
    names_spread("moving", MASTERS + 1, names, masters); /* names 0 and 3: one master */
    subject moving = {.kind = &LOCK,
                      .holder_client = holder,
                      .waiter_client = waiter,
                      .master = masters[0]},
            staying = {.kind = &LOCK,
                       .holder_client = holder,
                       .waiter_client = waiter,
                       .master = masters[MASTERS]};
    snprintf(moving.name, sizeof(moving.name), "%s", names[0]);
    snprintf(staying.name, sizeof(staying.name), "%s", names[MASTERS]);
    assert_int_equal(moving.master, staying.master);
    start_waiting(&moving);
    start_waiting(&staying);
    int to = -1;
    for (int m = 0; m < CLUSTER_FIXTURE_NODES && to < 0; m++)
        if (m != moving.master && cluster_fixture_is_master(fx, m))
            to = m;
    assert_true(to >= 0);
    int slot = cluster_fixture_slot_of_key(fx, moving.name);
    assert_int_equal(cluster_fixture_migrate_slot(fx, slot, to), 0);
    bool followed = false;
    POLL_UNTIL(followed,
               cluster_fixture_shard_subscribed(fx, to, moving.name) &&
                   !cluster_fixture_shard_subscribed(fx, moving.master, moving.name),
               test_slack_ms(5000));
    if (!followed)
        fail_msg("{%s}: subscribed on the new master %d: %d, on the old %d: %d", moving.name, to,
                 cluster_fixture_shard_subscribed(fx, to, moving.name), moving.master,
                 cluster_fixture_shard_subscribed(fx, moving.master, moving.name));
    moving.master = to;
    release_and_join(&moving);
    release_and_join(&staying);
    assert_woken_by_message(&moving);
    assert_woken_by_message(&staying);
    pthread_mutex_lock(&log_mu);
    int violations = logged_violations, given_away = logged_slot_given_away;
    pthread_mutex_unlock(&log_mu);
    printf("# the client heard of the move from %s\n",
           given_away ? "the old master's sunsubscribe" : "a new slot map first");
    assert_int_equal(violations, 0); /* the node's sunsubscribe is no violation */
    ASSERT_OK(dlock_client_free(waiter));
    ASSERT_OK(dlock_client_free(holder));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lock_waiters_on_every_master_are_woken_by_message),
        cmocka_unit_test(test_fair_lock_waiters_on_every_master_are_woken_by_message),
        cmocka_unit_test(test_rwlock_readers_on_every_master_are_woken_by_message),
        cmocka_unit_test(test_semaphore_waiters_on_every_master_are_woken_by_message),
        cmocka_unit_test(test_permits_waiters_on_every_master_are_woken_by_message),
        cmocka_unit_test(test_latch_waiters_on_every_master_are_woken_by_message),
        cmocka_unit_test(test_one_subscriber_connection_per_shard_closed_once_no_waiter_is_left),
        cmocka_unit_test(test_waiter_follows_its_slot_to_a_new_master_and_is_woken_there),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
