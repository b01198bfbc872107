/* SPDX-License-Identifier: MIT */
/* test_protocol_violations.c — a server (or anything on the path) that sends what the
 * protocol does not allow costs the client one connection, never the process.
 *
 * tests/support/reply_injector.h sits between the client and a real redis-server and sends
 * the client bytes the server never sent. What is proven: an unsolicited reply after a real
 * one on the command connection, with a call of every primitive (lock, fair lock, read/write
 * lock, semaphore, permits, latch), closes that connection with a log line that says what
 * arrived; the call itself kept its real answer, and once the link is back (its backoff) the
 * client works again. Garbage in place of a reply is the same violation, and the command in
 * flight is resent when safe (PING) or fails with DLOCK_ECONN. On the subscriber connection a
 * one-element "message" push and a two-element "unsubscribe" close that connection; it comes
 * back, subscribes again, and the waiter it served is still woken by the release. Before
 * dlock owned its replies, each of these ended the process (hiredis: SIGABRT or SIGSEGV). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core_call.h"
#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"
#include "reply_injector.h"
#include "test_util.h"

#define UNSOLICITED ":1\r\n"
#define SHORT_MESSAGE "*1\r\n$7\r\nmessage\r\n"
#define SHORT_UNSUBSCRIBE "*2\r\n$11\r\nunsubscribe\r\n$1\r\nx\r\n"
#define GARBAGE "?this is not RESP\r\n"

/* ---- the log: the line that says what arrived ----------------------------------------------- */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char violation_line[512];

static void record_log(int level, const char *msg, void *arg) {
    (void)level;
    (void)arg;
    pthread_mutex_lock(&log_mu);
    if (strstr(msg, "protocol violation"))
        snprintf(violation_line, sizeof(violation_line), "%s", msg);
    pthread_mutex_unlock(&log_mu);
}

static void forget_violation(void) {
    pthread_mutex_lock(&log_mu);
    violation_line[0] = '\0';
    pthread_mutex_unlock(&log_mu);
}

/* Polls until a violation was logged that holds part. */
static void expect_violation_logged(const char *part) {
    bool logged = false;
    char line[512];
    for (int64_t until = test_now_ms() + test_slack_ms(3000); !logged;) {
        pthread_mutex_lock(&log_mu);
        snprintf(line, sizeof(line), "%s", violation_line);
        pthread_mutex_unlock(&log_mu);
        logged = strstr(line, part) != NULL;
        if (!logged && test_now_ms() >= until)
            fail_msg("no protocol violation logged with \"%s\" (last: \"%s\")", part, line);
    }
}

typedef struct setup {
    redis_fixture *server;
    reply_injector *injector;
    dlock_client *client; /* through the injector */
    dlock_client *direct; /* straight to the server: the other side of a wait */
} setup;

static dlock_client *client_to(const char *url) {
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.retry_delay_ms = TEST_RETRY_DELAY_MS;
    o.timeout_ms = 2000;
    o.log_cb = record_log;
    dlock_client *c = NULL;
    int rc = dlock_client_new(&o, &c);
    if (rc != DLOCK_OK)
        fail_msg("client: %s (%s)", dlock_err_name(rc), dlock_last_error());
    return c;
}

static setup open_setup(void) {
    setup s = {0};
    s.server = start_server();
    assert_int_equal(reply_injector_start(redis_fixture_socket(s.server), &s.injector), 0);
    s.client = client_to(reply_injector_url(s.injector));
    s.direct = connect_client(s.server);
    forget_violation();
    return s;
}

static void close_setup(setup *s) {
    ASSERT_OK(dlock_client_free(s->client));
    ASSERT_OK(dlock_client_free(s->direct));
    reply_injector_stop(s->injector);
    redis_fixture_stop(s->server);
}

/* The injector has fired `fired` rules and the client has connected again since: the link
 * dropped the connection that carried the violation and made a new one. */
static void expect_reconnected(setup *s, int fired, int accepted_before) {
    bool again = false;
    POLL_UNTIL(again,
               reply_injector_fired(s->injector) == fired &&
                   reply_injector_accepted(s->injector) > accepted_before,
               test_slack_ms(3000));
    if (!again)
        fail_msg("fired %d (want %d), accepted %d (before %d)", reply_injector_fired(s->injector),
                 fired, reply_injector_accepted(s->injector), accepted_before);
}

/* ---- the command connection -------------------------------------------------------------------
 */

/* A primitive's handles on the client through the injector: `one` is one command (the
 * injector appends UNSOLICITED after its reply, when nothing else is in flight), `undo`
 * gives back what it took, after the reconnect. */
typedef struct primitive {
    dlock_lock *lock;
    dlock_rwlock *rw;
    dlock_semaphore *sem;
    dlock_permits *permits;
    dlock_permit_id permit;
    dlock_latch *latch;
} primitive;

static int lock_one(primitive *p) {
    return dlock_lock_acquire(p->lock, 10000);
}
static int lock_undo(primitive *p) {
    return dlock_lock_release(p->lock);
}
static int sem_one(primitive *p) {
    return dlock_semaphore_acquire(p->sem, 1);
}
static int sem_undo(primitive *p) {
    return dlock_semaphore_release(p->sem, 1);
}
static int permits_one(primitive *p) {
    return dlock_permits_acquire(p->permits, 10000, 60000, &p->permit);
}
static int permits_undo(primitive *p) {
    return dlock_permits_release(p->permits, &p->permit);
}
static int latch_one(primitive *p) {
    int64_t count;
    return dlock_latch_count(p->latch, &count);
}
static int nothing_to_undo(primitive *p) {
    (void)p;
    return DLOCK_OK;
}

/* The rule fires on the first command whose bytes hold pattern: a script (the latch's
 * count is a GET). */
static void unsolicited_after(setup *s, const char *pattern, primitive *p, int (*one)(primitive *),
                              int (*undo)(primitive *)) {
    int accepted = reply_injector_accepted(s->injector);
    int fired = reply_injector_fired(s->injector);
    forget_violation();
    reply_injector_after(s->injector, pattern, UNSOLICITED, strlen(UNSOLICITED));
    ASSERT_OK(one(p)); /* its own reply was real */
    expect_reconnected(s, fired + 1, accepted);
    expect_violation_logged("a reply to no command: the integer 1 arrived");
    ASSERT_OK(undo(p)); /* the client works again */
    ASSERT_OK(one(p));
    ASSERT_OK(undo(p));
}

static void
test_an_unsolicited_reply_costs_the_command_connection_with_every_primitive(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    setup s = open_setup();
    primitive p = {0};
    ASSERT_OK(dlock_lock_new(s.client, "pv-lock", &p.lock));
    unsolicited_after(&s, "EVALSHA", &p, lock_one, lock_undo);
    dlock_lock_free(p.lock);
    ASSERT_OK(dlock_fairlock_new(s.client, "pv-fair", &p.lock));
    unsolicited_after(&s, "EVALSHA", &p, lock_one, lock_undo);
    dlock_lock_free(p.lock);
    ASSERT_OK(dlock_rwlock_new(s.client, "pv-rw", &p.rw));
    p.lock = dlock_rwlock_write(p.rw);
    unsolicited_after(&s, "EVALSHA", &p, lock_one, lock_undo);
    p.lock = dlock_rwlock_read(p.rw);
    unsolicited_after(&s, "EVALSHA", &p, lock_one, lock_undo);
    dlock_rwlock_free(p.rw);
    ASSERT_OK(dlock_semaphore_new(s.client, "pv-sem", &p.sem));
    ASSERT_OK(dlock_semaphore_try_set_permits(p.sem, 1, NULL));
    unsolicited_after(&s, "EVALSHA", &p, sem_one, sem_undo);
    dlock_semaphore_free(p.sem);
    ASSERT_OK(dlock_permits_new(s.client, "pv-permits", &p.permits));
    ASSERT_OK(dlock_permits_try_set_permits(p.permits, 1, NULL));
    unsolicited_after(&s, "EVALSHA", &p, permits_one, permits_undo);
    dlock_permits_free(p.permits);
    ASSERT_OK(dlock_latch_new(s.client, "pv-latch", &p.latch));
    unsolicited_after(&s, "GET", &p, latch_one, nothing_to_undo);
    dlock_latch_free(p.latch);
    close_setup(&s);
}

static void test_garbage_in_place_of_a_reply_is_resent_when_safe_after_the_reconnect(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    setup s = open_setup();
    int accepted = reply_injector_accepted(s.injector);
    reply_injector_replace(s.injector, "PING", GARBAGE, strlen(GARBAGE));
    ASSERT_OK(dlock_client_ping(s.client)); /* PING may run twice: resent */
    expect_reconnected(&s, 1, accepted);
    expect_violation_logged("protocol violation");
    close_setup(&s);
}

/* An array header announcing two billion elements: hiredis would allocate their pointers
 * (16 GB) before a single element arrived. The link caps what a reply may announce. */
static void test_a_reply_announcing_a_huge_array_costs_the_connection_not_memory(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    setup s = open_setup();
    int accepted = reply_injector_accepted(s.injector);
    static const char huge[] = "*2000000000\r\n*2000000000\r\n";
    reply_injector_replace(s.injector, "PING", huge, strlen(huge));
    ASSERT_OK(dlock_client_ping(s.client)); /* resent after the reconnect */
    expect_reconnected(&s, 1, accepted);
    expect_violation_logged("announcing more than");
    close_setup(&s);
}

static void
test_garbage_in_place_of_an_acquire_reply_is_econn_and_the_client_recovers(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    setup s = open_setup();
    int accepted = reply_injector_accepted(s.injector);
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(s.client, "pv-garbage", &l));
    reply_injector_replace(s.injector, "EVALSHA", GARBAGE, strlen(GARBAGE));
    /* the acquire ran on the server; its answer is lost: the engine settles it as a lost
     * reply (resent as its own retry, or DLOCK_ECONN) */
    int rc = dlock_lock_acquire(l, 10000);
    if (rc != DLOCK_OK && rc != DLOCK_ECONN)
        fail_msg("acquire: %s (%s)", dlock_err_name(rc), dlock_last_error());
    expect_reconnected(&s, 1, accepted);
    expect_violation_logged("protocol violation");
    if (rc == DLOCK_OK)
        ASSERT_OK(dlock_lock_release(l));
    ASSERT_OK(dlock_lock_acquire(l, 10000));
    ASSERT_OK(dlock_lock_release(l));
    dlock_lock_free(l);
    close_setup(&s);
}

/* ---- the subscriber connection ----------------------------------------------------------------
 */

typedef struct waiter {
    dlock_lock *lock;
} waiter;

static int wait_for_lock(void *arg) {
    waiter *w = arg;
    int rc = dlock_lock_try_acquire(w->lock, 10000, 10000);
    if (rc == DLOCK_OK)
        rc = dlock_lock_release(w->lock);
    return rc;
}

/* A waiter through the injector on a lock the direct client holds; `bad` arrives after its
 * first SUBSCRIBE's confirmation (a lock's waiter subscribes to the lock's channel and its
 * turn channel, in the order of the client's channel map: the other may still be in flight,
 * so `logged` is what both cases say). The subscriber connection is dropped and made again, the
 * channel subscribed again, and the release still wakes the waiter. */
static void bad_push_after_subscribe(const char *bad, const char *logged) {
    setup s = open_setup();
    dlock_lock *held;
    waiter w;
    ASSERT_OK(dlock_lock_new(s.direct, "pv-sub", &held));
    ASSERT_OK(dlock_lock_new(s.client, "pv-sub", &w.lock));
    ASSERT_OK(dlock_lock_acquire(held, 30000));
    int accepted = reply_injector_accepted(s.injector);
    reply_injector_after(s.injector, "SUBSCRIBE", bad, strlen(bad));
    blocking_call call;
    blocking_call_start(&call, wait_for_lock, &w);
    expect_reconnected(&s, 1, accepted);
    expect_violation_logged(logged);
    bool subscribed_again = false;
    POLL_UNTIL(subscribed_again, numsub(s.server, "redisson_lock__channel:{pv-sub}") == 1,
               test_slack_ms(3000));
    assert_true(subscribed_again);
    assert_false(blocking_call_returned(&call));
    ASSERT_OK(dlock_lock_release(held));
    ASSERT_OK(blocking_call_join(&call));
    dlock_lock_free(held);
    dlock_lock_free(w.lock);
    close_setup(&s);
}

static void test_a_one_element_message_push_costs_the_subscriber_connection(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    bad_push_after_subscribe(SHORT_MESSAGE,
                             "a message push of the wrong shape: an array of 1 elements");
}

static void test_a_two_element_unsubscribe_costs_the_subscriber_connection(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    bad_push_after_subscribe(SHORT_UNSUBSCRIBE,
                             "an array of 2 elements [the string \"unsubscribe\"");
}

static void test_garbage_on_the_subscriber_connection_costs_only_it(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    bad_push_after_subscribe(GARBAGE, "protocol violation: Protocol error");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_an_unsolicited_reply_costs_the_command_connection_with_every_primitive),
        cmocka_unit_test(test_garbage_in_place_of_a_reply_is_resent_when_safe_after_the_reconnect),
        cmocka_unit_test(test_a_reply_announcing_a_huge_array_costs_the_connection_not_memory),
        cmocka_unit_test(
            test_garbage_in_place_of_an_acquire_reply_is_econn_and_the_client_recovers),
        cmocka_unit_test(test_a_one_element_message_push_costs_the_subscriber_connection),
        cmocka_unit_test(test_a_two_element_unsubscribe_costs_the_subscriber_connection),
        cmocka_unit_test(test_garbage_on_the_subscriber_connection_costs_only_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
