/* SPDX-License-Identifier: MIT */
/* test_tls.c — rediss:// against a redis-server that speaks TLS only (tests/support/
 * tls_fixture.h: certificates made by the openssl tool at test time).
 *
 * What is proven: every primitive works over TLS, including a waiter on another client
 * woken by the holder's message (so the subscriber connection runs TLS too); the server is
 * verified against cacert= (a wrong CA is DLOCK_ECONN whose text says verification failed)
 * and by its name (sni= another name fails the same way), insecure=1 skips that; mutual TLS
 * works with a client certificate and, without one, fails with a text that says a client
 * certificate may be required; a TLS URL to a plaintext port fails cleanly (DLOCK_ECONN),
 * never falling back to plaintext. */
#include <limits.h>
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
#include "tls_fixture.h"
#include "test_util.h"

static tls_fixture *start_tls(tls_fixture_client_certs certs) {
    tls_fixture_opts o = {.client_certs = certs};
    tls_fixture *f = NULL;
    if (tls_fixture_start(&o, &f) != 0)
        fail_msg("cannot start the TLS fixture");
    return f;
}

static int new_client(const char *url, dlock_client **out) {
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    /* a TLS handshake under valgrind beside other tests can take seconds; what fails fast
     * here fails on the server's answer, not on this timeout */
    o.connect_timeout_ms = test_slack_ms(3000);
    o.retry_delay_ms = TEST_RETRY_DELAY_MS;
    return dlock_client_new(&o, out);
}

static dlock_client *client_ok(const char *url) {
    dlock_client *c = NULL;
    int rc = new_client(url, &c);
    if (rc != DLOCK_OK)
        fail_msg("%s: %s (%s)", url, dlock_err_name(rc), dlock_last_error());
    return c;
}

/* The client fails with DLOCK_ECONN and a text that holds `part`. */
static void expect_refused(const char *url, const char *part) {
    dlock_client *c = NULL;
    ASSERT_RC(new_client(url, &c), DLOCK_ECONN);
    assert_null(c);
    if (!strstr(dlock_last_error(), part))
        fail_msg("\"%s\" does not say \"%s\"", dlock_last_error(), part);
}

/* ---- every primitive, a waiter woken by the other client's message ---------------------- */

/* One primitive: hold it on the holder's client, wait for it on the waiter's, give it back. */
typedef struct primitive_case {
    dlock_client *holder_client, *waiter_client;
    dlock_lock *held, *wanted; /* the lock kinds */
    dlock_semaphore *sem_held, *sem_wanted;
    dlock_permits *permits_held, *permits_wanted;
    dlock_permit_id permit;
    dlock_latch *latch_held, *latch_wanted;
} primitive_case;

static int lock_wait(void *arg) {
    primitive_case *p = arg;
    int rc = dlock_lock_try_acquire(p->wanted, 10000, 10000);
    if (rc == DLOCK_OK)
        rc = dlock_lock_release(p->wanted);
    return rc;
}

static int semaphore_wait(void *arg) {
    primitive_case *p = arg;
    int rc = dlock_semaphore_try_acquire(p->sem_wanted, 1, 10000);
    if (rc == DLOCK_OK)
        rc = dlock_semaphore_release(p->sem_wanted, 1);
    return rc;
}

static int permits_wait(void *arg) {
    primitive_case *p = arg;
    dlock_permit_id id;
    int rc = dlock_permits_acquire(p->permits_wanted, 10000, 10000, &id);
    if (rc == DLOCK_OK)
        rc = dlock_permits_release(p->permits_wanted, &id);
    return rc;
}

static int latch_wait(void *arg) {
    primitive_case *p = arg;
    return dlock_latch_await(p->latch_wanted, 10000);
}

/* A latch's await looks with GET, the others with a script. */
static long long get_calls(redis_fixture *f) {
    return command_calls(f, "get");
}

/* Starts wait on another thread, sees it asleep (subscribed, and its second look, made
 * after the subscription was confirmed, said "not yet"), runs give on the holder, and sees
 * the waiter return DLOCK_OK well before its 10 s wait: the message woke it. */
static void woken_by_message(redis_fixture *server, primitive_case *p, int (*wait)(void *),
                             int (*give)(primitive_case *),
                             long long (*attempts_of)(redis_fixture *)) {
    long long before = attempts_of(server);
    blocking_call call;
    blocking_call_start(&call, wait, p);
    bool asleep = false;
    POLL_UNTIL(asleep, subscribed_channels(server) >= 1 && attempts_of(server) >= before + 2,
               test_slack_ms(3000));
    if (!asleep)
        fail_msg("the waiter is not asleep: %lld channels, %lld looks (returned: %d)",
                 subscribed_channels(server), attempts_of(server) - before,
                 (int)blocking_call_returned(&call));
    assert_false(blocking_call_returned(&call));
    int64_t given_ms = test_now_ms();
    ASSERT_OK(give(p));
    ASSERT_OK(blocking_call_join(&call));
    ASSERT_BETWEEN(call.returned_us / 1000 - given_ms, 0, test_slack_ms(2000));
}

static int give_lock(primitive_case *p) {
    return dlock_lock_release(p->held);
}
static int give_semaphore(primitive_case *p) {
    return dlock_semaphore_release(p->sem_held, 1);
}
static int give_permit(primitive_case *p) {
    return dlock_permits_release(p->permits_held, &p->permit);
}
static int give_latch(primitive_case *p) {
    return dlock_latch_count_down(p->latch_held);
}

static void locks_over_tls(redis_fixture *server, primitive_case *p,
                           int (*make)(dlock_client *, const char *, dlock_lock **),
                           const char *name) {
    ASSERT_OK(make(p->holder_client, name, &p->held));
    ASSERT_OK(make(p->waiter_client, name, &p->wanted));
    ASSERT_OK(dlock_lock_acquire(p->held, 10000));
    woken_by_message(server, p, lock_wait, give_lock, script_calls);
    dlock_lock_free(p->held);
    dlock_lock_free(p->wanted);
}

static void test_every_primitive_works_over_tls_and_wakes_by_message(void **state) {
    (void)state;
    test_watchdog_arm(90, __func__);
    tls_fixture *f = start_tls(TLS_FIXTURE_CLIENT_CERT_NONE);
    redis_fixture *server = tls_fixture_server(f);
    primitive_case p = {0};
    p.holder_client = client_ok(tls_fixture_url(f));
    p.waiter_client = client_ok(tls_fixture_url(f));
    ASSERT_OK(dlock_client_ping(p.holder_client));

    locks_over_tls(server, &p, dlock_lock_new, "tls-lock");
    locks_over_tls(server, &p, dlock_fairlock_new, "tls-fair");

    dlock_rwlock *rw_holder, *rw_waiter;
    ASSERT_OK(dlock_rwlock_new(p.holder_client, "tls-rw", &rw_holder));
    ASSERT_OK(dlock_rwlock_new(p.waiter_client, "tls-rw", &rw_waiter));
    p.held = dlock_rwlock_write(rw_holder);
    p.wanted = dlock_rwlock_read(rw_waiter);
    ASSERT_OK(dlock_lock_acquire(p.held, 10000));
    woken_by_message(server, &p, lock_wait, give_lock, script_calls);
    dlock_rwlock_free(rw_holder);
    dlock_rwlock_free(rw_waiter);

    ASSERT_OK(dlock_semaphore_new(p.holder_client, "tls-sem", &p.sem_held));
    ASSERT_OK(dlock_semaphore_new(p.waiter_client, "tls-sem", &p.sem_wanted));
    ASSERT_OK(dlock_semaphore_try_set_permits(p.sem_held, 1, NULL));
    ASSERT_OK(dlock_semaphore_acquire(p.sem_held, 1));
    woken_by_message(server, &p, semaphore_wait, give_semaphore, script_calls);
    dlock_semaphore_free(p.sem_held);
    dlock_semaphore_free(p.sem_wanted);

    ASSERT_OK(dlock_permits_new(p.holder_client, "tls-permits", &p.permits_held));
    ASSERT_OK(dlock_permits_new(p.waiter_client, "tls-permits", &p.permits_wanted));
    ASSERT_OK(dlock_permits_try_set_permits(p.permits_held, 1, NULL));
    ASSERT_OK(dlock_permits_acquire(p.permits_held, 0, 60000, &p.permit));
    woken_by_message(server, &p, permits_wait, give_permit, script_calls);
    dlock_permits_free(p.permits_held);
    dlock_permits_free(p.permits_wanted);

    ASSERT_OK(dlock_latch_new(p.holder_client, "tls-latch", &p.latch_held));
    ASSERT_OK(dlock_latch_new(p.waiter_client, "tls-latch", &p.latch_wanted));
    ASSERT_OK(dlock_latch_try_set_count(p.latch_held, 1, NULL));
    woken_by_message(server, &p, latch_wait, give_latch, get_calls);
    dlock_latch_free(p.latch_held);
    dlock_latch_free(p.latch_wanted);

    ASSERT_OK(dlock_client_free(p.holder_client));
    ASSERT_OK(dlock_client_free(p.waiter_client));
    tls_fixture_stop(f);
}

/* ---- verification ------------------------------------------------------------------------ */

static void test_a_server_not_signed_by_cacert_is_econn_saying_verification(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    tls_fixture *f = start_tls(TLS_FIXTURE_CLIENT_CERT_NONE);
    char url[PATH_MAX + 100];
    snprintf(url, sizeof(url), "rediss://127.0.0.1:%d?cacert=%s", tls_fixture_port(f),
             tls_certs_wrong_ca(tls_fixture_certs(f)));
    expect_refused(url, "verification");
    tls_fixture_stop(f);
}

static void test_insecure_skips_verification(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    tls_fixture *f = start_tls(TLS_FIXTURE_CLIENT_CERT_NONE);
    char url[PATH_MAX + 100];
    snprintf(url, sizeof(url), "rediss://127.0.0.1:%d?cacert=%s&insecure=1", tls_fixture_port(f),
             tls_certs_wrong_ca(tls_fixture_certs(f)));
    dlock_client *c = client_ok(url);
    ASSERT_OK(dlock_client_ping(c));
    ASSERT_OK(dlock_client_free(c));
    tls_fixture_stop(f);
}

static void test_a_name_the_certificate_does_not_carry_fails_verification(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    tls_fixture *f = start_tls(TLS_FIXTURE_CLIENT_CERT_NONE);
    char url[PATH_MAX + 100];
    /* the certificate names 127.0.0.1 and localhost */
    snprintf(url, sizeof(url), "%s&sni=redis.example.com", tls_fixture_url(f));
    expect_refused(url, "verification");
    /* and localhost, which it does carry, verifies */
    snprintf(url, sizeof(url), "rediss://localhost:%d?cacert=%s", tls_fixture_port(f),
             tls_certs_ca(tls_fixture_certs(f)));
    dlock_client *c = client_ok(url);
    ASSERT_OK(dlock_client_ping(c));
    ASSERT_OK(dlock_client_free(c));
    tls_fixture_stop(f);
}

/* ---- mutual TLS -------------------------------------------------------------------------- */

static void test_mutual_tls_works_with_a_client_certificate(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    tls_fixture *f = start_tls(TLS_FIXTURE_CLIENT_CERT_REQUIRED);
    dlock_client *c = client_ok(tls_fixture_mtls_url(f));
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(c, "mtls", &l));
    ASSERT_OK(dlock_lock_acquire(l, 10000));
    ASSERT_OK(dlock_lock_release(l));
    dlock_lock_free(l);
    ASSERT_OK(dlock_client_free(c));
    tls_fixture_stop(f);
}

static void test_mutual_tls_without_a_client_certificate_says_one_may_be_required(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    tls_fixture *f = start_tls(TLS_FIXTURE_CLIENT_CERT_REQUIRED);
    expect_refused(tls_fixture_url(f), "client certificate");
    tls_fixture_stop(f);
}

static void test_a_client_certificate_of_another_ca_is_refused(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    tls_fixture *f = start_tls(TLS_FIXTURE_CLIENT_CERT_REQUIRED);
    tls_certs *certs = tls_fixture_certs(f);
    char url[3 * PATH_MAX];
    snprintf(url, sizeof(url), "%s&cert=%s&key=%s", tls_fixture_url(f),
             tls_certs_wrong_client_cert(certs), tls_certs_wrong_client_key(certs));
    expect_refused(url, "TLS");
    tls_fixture_stop(f);
}

/* ---- no plaintext fallback ---------------------------------------------------------------- */

static void test_a_tls_url_to_a_plaintext_port_fails_cleanly(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    redis_fixture_opts o = {.tcp = true};
    redis_fixture *plain = NULL;
    assert_int_equal(redis_fixture_start(&o, &plain), 0);
    char url[128];
    snprintf(url, sizeof(url), "rediss://127.0.0.1:%d", redis_fixture_port(plain));
    expect_refused(url, "TLS");
    redis_fixture_stop(plain);
}

static void test_an_unreadable_cacert_is_einval(void **state) {
    (void)state;
    dlock_client *c = NULL;
    ASSERT_RC(new_client("rediss://127.0.0.1:1?cacert=/nonexistent/ca.crt", &c), DLOCK_EINVAL);
    assert_null(c);
    assert_non_null(strstr(dlock_last_error(), "/nonexistent/ca.crt"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_primitive_works_over_tls_and_wakes_by_message),
        cmocka_unit_test(test_a_server_not_signed_by_cacert_is_econn_saying_verification),
        cmocka_unit_test(test_insecure_skips_verification),
        cmocka_unit_test(test_a_name_the_certificate_does_not_carry_fails_verification),
        cmocka_unit_test(test_mutual_tls_works_with_a_client_certificate),
        cmocka_unit_test(test_mutual_tls_without_a_client_certificate_says_one_may_be_required),
        cmocka_unit_test(test_a_client_certificate_of_another_ca_is_refused),
        cmocka_unit_test(test_a_tls_url_to_a_plaintext_port_fails_cleanly),
        cmocka_unit_test(test_an_unreadable_cacert_is_einval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
