/* SPDX-License-Identifier: MIT */
/* test_client.c — the client against a real redis-server: transports, credentials,
 * database selection, connection failures, kills and reconnects, the script cache, many
 * threads through one client, the loop-thread rules, and closing with work in flight. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/client.h"
#include "core_call.h"
#include "dlock.h"
#include "harness.h"
#include "dlock/adapters/libev.h"
#include "fault_proxy.h"
#include "redis_fixture.h"
#include "test_util.h"

static redis_fixture *start_server_with(const redis_fixture_opts *o) {
    redis_fixture *f = NULL;
    assert_int_equal(redis_fixture_start(o, &f), 0);
    return f;
}

static void test_connects_over_unix_socket_and_pings(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    redis_fixture *f = start_server_with(NULL);
    dlock_client *c = connect_client(f);
    assert_int_equal(dlock_client_ping(c), DLOCK_OK);
    const char *id = dlock_client_id(c);
    assert_int_equal(strlen(id), 36);
    assert_true(id[8] == '-' && id[13] == '-' && id[18] == '-' && id[23] == '-');
    assert_true(id[14] == '4'); /* a random (version 4) UUID */
    dlock_client *other = connect_client(f);
    assert_string_not_equal(dlock_client_id(other), id);
    assert_int_equal(dlock_client_free(other), DLOCK_OK);
    assert_int_equal(dlock_client_free(c), DLOCK_OK);
    redis_fixture_stop(f);
}

static void test_connects_over_tcp(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    redis_fixture_opts fo = {.tcp = true};
    redis_fixture *f = start_server_with(&fo);
    dlock_client *c = connect_client_cfg(NULL, (test_client_cfg){.url = redis_fixture_tcp_url(f)});
    assert_int_equal(dlock_client_ping(c), DLOCK_OK);
    const char *argv[] = {"SET", "tcp-key", "v", NULL};
    core_reply *r = core_call(c, 0, argv);
    assert_int_equal(r->status, DLOCK_OK);
    core_reply_free(r);
    char *v = redis_fixture_str(f, "GET tcp-key");
    assert_string_equal(v, "v");
    free(v);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_password_auth_and_wrong_password_is_eauth(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    redis_fixture_opts fo = {.tcp = true, .requirepass = "s3cret"};
    redis_fixture *f = start_server_with(&fo);
    dlock_client *c = connect_client_cfg(
        NULL, (test_client_cfg){.url = redis_fixture_tcp_url(f)}); /* carries :s3cret@ */
    assert_int_equal(dlock_client_ping(c), DLOCK_OK);
    dlock_client_free(c);

    char url[200];
    dlock_options o;
    dlock_options_init(&o);
    snprintf(url, sizeof(url), "redis://:wrong@127.0.0.1:%d", redis_fixture_port(f));
    o.url = url;
    c = NULL;
    int64_t start = test_now_ms();
    assert_int_equal(dlock_client_new(&o, &c), DLOCK_EAUTH);
    assert_null(c);
    assert_true(test_now_ms() - start < test_prompt_ms()); /* it ends, with the refusal */
    assert_non_null(strstr(dlock_last_error(), "WRONGPASS"));

    /* no password at all: the server refuses the handshake's first command */
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", redis_fixture_port(f));
    assert_int_equal(dlock_client_new(&o, &c), DLOCK_EAUTH);
    assert_non_null(strstr(dlock_last_error(), "NOAUTH"));
    redis_fixture_stop(f);
}

static void test_acl_user_connects_and_is_that_user(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    const char *extra[] = {"--user", "alice", "on", ">alicepw", "~*", "&*", "+@all", NULL};
    redis_fixture_opts fo = {.tcp = true, .extra_args = extra};
    redis_fixture *f = start_server_with(&fo);
    char url[200];
    snprintf(url, sizeof(url), "redis://alice:alicepw@127.0.0.1:%d", redis_fixture_port(f));
    dlock_client *c = connect_client_cfg(NULL, (test_client_cfg){.url = url});
    const char *argv[] = {"ACL", "WHOAMI", NULL};
    core_reply *r = core_call(c, 0, argv);
    assert_int_equal(r->status, DLOCK_OK);
    assert_string_equal(r->str, "alice");
    core_reply_free(r);
    dlock_client_free(c);

    snprintf(url, sizeof(url), "redis://alice:nope@127.0.0.1:%d", redis_fixture_port(f));
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    assert_int_equal(dlock_client_new(&o, &c), DLOCK_EAUTH);
    redis_fixture_stop(f);
}

static void test_database_is_selected(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    redis_fixture *f = start_server_with(NULL);
    char url[300];
    snprintf(url, sizeof(url), "%s?db=3", redis_fixture_unix_url(f));
    dlock_client *c = connect_client_cfg(NULL, (test_client_cfg){.url = url});
    const char *argv[] = {"SET", "db-key", "3", NULL};
    core_reply *r = core_call(c, 0, argv);
    assert_int_equal(r->status, DLOCK_OK);
    core_reply_free(r);
    assert_int_equal(redis_fixture_int(f, "EXISTS db-key"), 0);
    freeReplyObject(redis_fixture_cmd(f, "SELECT 3"));
    assert_int_equal(redis_fixture_int(f, "EXISTS db-key"), 1);
    freeReplyObject(redis_fixture_cmd(f, "SELECT 0"));
    dlock_client_free(c);

    /* a database the server does not have is the server's error, at once */
    snprintf(url, sizeof(url), "%s?db=99", redis_fixture_unix_url(f));
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    assert_int_equal(dlock_client_new(&o, &c), DLOCK_EREDIS);
    assert_non_null(strstr(dlock_last_error(), "DB index"));
    redis_fixture_stop(f);
}

static void test_no_server_is_econn_within_connect_timeout(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    dlock_options o;
    dlock_options_init(&o);
    dlock_client *c = NULL;

    /* nothing listens: refused at once, not when a TEST_SLOW_MS connect timeout ends */
    o.connect_timeout_ms = TEST_SLOW_MS;
    o.url = "unix:///tmp/dlock-no-such-dir/redis.sock";
    int64_t start = test_now_ms();
    assert_int_equal(dlock_client_new(&o, &c), DLOCK_ECONN);
    assert_true(test_now_ms() - start < test_prompt_ms());
    assert_true(strlen(dlock_last_error()) > 0);

    /* something listens but never answers: the connect timeout decides */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(s, 8), 0);
    socklen_t len = sizeof(a);
    getsockname(s, (struct sockaddr *)&a, &len);
    char url[100];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", ntohs(a.sin_port));
    o.url = url;
    o.connect_timeout_ms = 500;
    start = test_now_ms();
    assert_int_equal(dlock_client_new(&o, &c), DLOCK_ECONN);
    int64_t took = test_now_ms() - start;
    assert_true(took >= 450);
    assert_true(took < 500 + test_prompt_ms()); /* it ends: nothing else would end it */
    assert_non_null(strstr(dlock_last_error(), "timed out"));
    assert_null(c);
    close(s);
}

/* ---- kills and reconnects -------------------------------------------------------------- */

typedef struct pinger {
    dlock_client *c;
    atomic_bool *stop;
    long ok, failed, other;
} pinger;

static void *ping_loop(void *arg) {
    pinger *p = arg;
    while (!atomic_load(p->stop)) {
        int rc = dlock_client_ping(p->c);
        if (rc == DLOCK_OK)
            p->ok++;
        else if (rc == DLOCK_ECONN)
            p->failed++;
        else
            p->other++;
    }
    return NULL;
}

static void test_command_connection_killed_mid_run_later_calls_succeed(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    redis_fixture *f = start_server_with(NULL);
    dlock_client *c = connect_client(f);
    atomic_bool stop = false;
    pinger p[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        p[i] = (pinger){.c = c, .stop = &stop};
        pthread_create(&t[i], NULL, ping_loop, &p[i]);
    }
    /* each kill waits for the client to be connected again (its reconnect backs off) */
    int killed = 0, kills = 0;
    for (int k = 0; k < 5; k++) {
        test_sleep_ms(100);
        int n = 0;
        bool connected = false;
        POLL_UNTIL(connected, (n = redis_fixture_client_kill_type(f, "normal")) >= 1,
                   test_slack_ms(5000));
        kills += connected;
        killed += n > 0 ? n : 0;
    }
    test_sleep_ms(100);
    atomic_store(&stop, true);
    long ok = 0, other = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        ok += p[i].ok;
        other += p[i].other;
    }
    assert_int_equal(kills, 5); /* the client was back within the bound each time */
    assert_true(killed >= 5);
    assert_true(ok > 0);
    assert_int_equal(other, 0); /* every call returned OK or DLOCK_ECONN */
    bool reconnected = false;   /* the last reconnect may be under way */
    POLL_UNTIL(reconnected, DLOCK__NET(c)->conn.reconnects >= 5, test_slack_ms(5000));
    assert_true(reconnected);
    for (int i = 0; i < 20; i++)
        assert_int_equal(dlock_client_ping(c), DLOCK_OK);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_script_flush_then_next_script_call_succeeds(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    redis_fixture *f = start_server_with(NULL);
    dlock_client *c = connect_client(f);
    freeReplyObject(redis_fixture_cmd(f, "HSET h owner 1"));
    const char *args[] = {"h", "1000", "owner", NULL};
    core_reply *r = core_script(c, DLOCK__SCRIPT_CORE_RENEW_HASH, 0, 1, args);
    assert_int_equal(r->status, DLOCK_OK);
    assert_int_equal(r->count, 1);
    assert_int_equal(r->elems[0].integer, 1);
    core_reply_free(r);
    long long evals = redis_fixture_info_int(f, "commandstats", "cmdstat_eval.calls");
    freeReplyObject(redis_fixture_cmd(f, "SCRIPT FLUSH"));
    r = core_script(c, DLOCK__SCRIPT_CORE_RENEW_HASH, 0, 1, args);
    assert_int_equal(r->status, DLOCK_OK);
    assert_int_equal(r->elems[0].integer, 1);
    core_reply_free(r);
    assert_int_equal(redis_fixture_info_int(f, "commandstats", "cmdstat_eval.calls"), evals + 1);
    /* EVAL put it back in the cache: the next call is an EVALSHA again */
    r = core_script(c, DLOCK__SCRIPT_CORE_RENEW_HASH, 0, 1, args);
    assert_int_equal(r->status, DLOCK_OK);
    core_reply_free(r);
    assert_int_equal(redis_fixture_info_int(f, "commandstats", "cmdstat_eval.calls"), evals + 1);
    assert_true(redis_fixture_int(f, "PTTL h") > 0);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_error_reply_is_eredis_with_the_server_text(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    redis_fixture *f = start_server_with(NULL);
    dlock_client *c = connect_client(f);
    freeReplyObject(redis_fixture_cmd(f, "HSET notastring a 1"));
    const char *argv[] = {"INCR", "notastring", NULL};
    core_reply *r = core_call(c, 0, argv);
    assert_int_equal(r->status, DLOCK_EREDIS);
    assert_non_null(strstr(r->str, "WRONGTYPE"));
    core_reply_free(r);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- many threads ---------------------------------------------------------------------- */

typedef struct echoer {
    dlock_client *c;
    int id;
    long calls, wrong;
} echoer;

static void *echo_loop(void *arg) {
    echoer *e = arg;
    char payload[64];
    for (long i = 0; i < e->calls; i++) {
        snprintf(payload, sizeof(payload), "thread-%d-call-%ld", e->id, i);
        const char *argv[] = {"ECHO", payload, NULL};
        core_reply *r = core_call(e->c, 0, argv);
        if (r->status != DLOCK_OK || !r->str || strcmp(r->str, payload) != 0)
            e->wrong++;
        core_reply_free(r);
    }
    return NULL;
}

static void test_16_threads_10000_calls_each_every_result_right(void **state) {
    (void)state;
    test_watchdog_arm(240, __func__);
    redis_fixture *f = start_server_with(NULL);
    dlock_client *c = connect_client(f);
    enum { THREADS = 16 };
    echoer e[THREADS];
    pthread_t t[THREADS];
    long per_thread = test_scaled(10000);
    long long before = redis_fixture_info_int(f, "commandstats", "cmdstat_echo.calls");
    int64_t start = test_now_ms();
    for (int i = 0; i < THREADS; i++) {
        e[i] = (echoer){.c = c, .id = i, .calls = per_thread};
        pthread_create(&t[i], NULL, echo_loop, &e[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(e[i].wrong, 0);
    }
    int64_t took = test_now_ms() - start;
    long long after = redis_fixture_info_int(f, "commandstats", "cmdstat_echo.calls");
    assert_int_equal(after - before, THREADS * per_thread);
    printf("# %d threads x %ld calls: %lld ms, %.0f calls/s\n", THREADS, per_thread,
           (long long)took, THREADS * per_thread * 1000.0 / (double)(took ? took : 1));
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- the loop thread ------------------------------------------------------------------- */

typedef struct loop_probe {
    atomic_int done;
    int ping_rc, free_rc, status;
} loop_probe;

static void probe_from_callback(dlock_client *c, int status, void *arg) {
    loop_probe *p = arg;
    p->status = status;
    p->ping_rc = dlock_client_ping(c);
    p->free_rc = dlock_client_free(c);
    atomic_store(&p->done, 1);
}

static void test_blocking_call_on_the_loop_thread_is_edeadlk(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    redis_fixture *f = start_server_with(NULL);
    dlock_client *c = connect_client(f);
    loop_probe p = {0};
    assert_int_equal(dlock_client_ping_async(c, probe_from_callback, &p), DLOCK_OK);
    while (!atomic_load(&p.done))
        test_sleep_ms(1);
    assert_int_equal(p.status, DLOCK_OK);
    assert_int_equal(p.ping_rc, DLOCK_EDEADLK);
    assert_int_equal(p.free_rc, DLOCK_EDEADLK);
    assert_int_equal(dlock_client_ping(c), DLOCK_OK); /* the client is fine */
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- closing with work in flight ------------------------------------------------------- */

typedef struct counted {
    atomic_int calls;
    atomic_int canceled;
} counted;

static void count_status(dlock_client *c, int status, void *arg) {
    (void)c;
    counted *k = arg;
    atomic_fetch_add(&k->calls, 1);
    if (status == DLOCK_ECANCELED)
        atomic_fetch_add(&k->canceled, 1);
}

static void *blocking_ping(void *arg) {
    dlock_client *c = arg;
    return (void *)(intptr_t)dlock_client_ping(c);
}

static void test_free_with_pending_ops_cancels_each_once(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    redis_fixture *f = start_server_with(NULL);
    /* through a proxy, which counts the requests that reached the server */
    fault_proxy *p = NULL;
    assert_int_equal(fault_proxy_start(redis_fixture_socket(f), &p), 0);
    dlock_client *c = connect_client_cfg(NULL, (test_client_cfg){.url = fault_proxy_url(p)});
    uint64_t sent_before = fault_proxy_stats_get(p).requests_up;
    redis_fixture_pause(f); /* nothing will answer */
    enum { N = 50 };
    counted k = {0};
    for (int i = 0; i < N; i++)
        assert_int_equal(dlock_client_ping_async(c, count_status, &k), DLOCK_OK);
    pthread_t t;
    pthread_create(&t, NULL, blocking_ping, c);
    /* every ping, the blocking one too, is in Redis: in flight, not queued */
    bool sent = false;
    POLL_UNTIL(sent, fault_proxy_stats_get(p).requests_up - sent_before == N + 1,
               test_slack_ms(3000));
    if (!sent)
        fail_msg("%llu of %d pings reached the server",
                 (unsigned long long)(fault_proxy_stats_get(p).requests_up - sent_before), N + 1);
    assert_int_equal(atomic_load(&k.calls), 0);
    assert_int_equal(dlock_client_free(c), DLOCK_OK);
    void *blocked_rc;
    pthread_join(t, &blocked_rc);
    assert_int_equal((int)(intptr_t)blocked_rc, DLOCK_ECANCELED);
    assert_int_equal(atomic_load(&k.calls), N);
    assert_int_equal(atomic_load(&k.canceled), N);
    redis_fixture_resume(f);
    fault_proxy_stop(p);
    redis_fixture_stop(f);
}

static void test_paused_server_fails_calls_in_bounded_time_then_recovers(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    redis_fixture *f = start_server_with(NULL);
    dlock_options o;
    dlock_options_init(&o);
    o.url = redis_fixture_unix_url(f);
    o.timeout_ms = 300;
    o.retry_attempts = 1;
    o.retry_delay_ms = 50;
    o.connect_timeout_ms = 500;
    dlock_client *c = NULL;
    assert_int_equal(dlock_client_new(&o, &c), DLOCK_OK);
    redis_fixture_pause(f);
    int64_t start = test_now_ms();
    assert_int_equal(dlock_client_ping(c), DLOCK_ECONN);
    int64_t took = test_now_ms() - start;
    /* 300 ms per attempt, 2 attempts */
    assert_true(took >= 290);
    assert_true(took < test_slack_ms(2000));
    redis_fixture_resume(f);
    int rc = DLOCK_ECONN;
    for (int i = 0; i < 50 && rc != DLOCK_OK; i++)
        rc = dlock_client_ping(c);
    assert_int_equal(rc, DLOCK_OK);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- the async face on the application's loop ------------------------------------------ */

typedef struct app {
    struct ev_loop *loop;
    dlock_client *c;
    int status;
    int blocking_rc;
    atomic_bool stop;
} app;

static void app_ping_done(dlock_client *c, int status, void *arg) {
    app *a = arg;
    a->status = status;
    a->blocking_rc = dlock_client_ping(c); /* on the loop thread: refused */
}

static void *other_thread_ping(void *arg) {
    app *a = arg;
    int rc = dlock_client_ping(a->c);
    atomic_store(&a->stop, true);
    return (void *)(intptr_t)rc;
}

static void app_tick(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)revents;
    app *a = w->data;
    if (atomic_load(&a->stop))
        ev_break(loop, EVBREAK_ALL);
}

static void test_async_face_runs_on_the_application_loop(void **state) {
    (void)state;
    test_watchdog_arm(30, __func__);
    redis_fixture *f = start_server_with(NULL);
    app a = {.status = 1};
    a.loop = ev_loop_new(EVFLAG_AUTO);
    dlock_options o;
    dlock_options_init(&o);
    o.url = redis_fixture_unix_url(f);
    assert_int_equal(dlock_client_new_on_loop(&o, a.loop, &a.c), DLOCK_OK);
    assert_int_equal(dlock_client_ping_async(a.c, app_ping_done, &a), DLOCK_OK);
    assert_int_equal(a.status, 1); /* never from inside the call */
    pthread_t t;
    pthread_create(&t, NULL, other_thread_ping, &a);
    ev_timer tick;
    ev_timer_init(&tick, app_tick, 0.005, 0.005);
    tick.data = &a;
    ev_timer_start(a.loop, &tick);
    ev_run(a.loop, 0);
    void *rc;
    pthread_join(t, &rc);
    assert_int_equal((int)(intptr_t)rc, DLOCK_OK); /* a blocking call from another thread */
    assert_int_equal(a.status, DLOCK_OK);
    assert_int_equal(a.blocking_rc, DLOCK_EDEADLK);
    ev_timer_stop(a.loop, &tick);
    assert_int_equal(dlock_client_free(a.c), DLOCK_OK);
    ev_loop_destroy(a.loop);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connects_over_unix_socket_and_pings),
        cmocka_unit_test(test_connects_over_tcp),
        cmocka_unit_test(test_password_auth_and_wrong_password_is_eauth),
        cmocka_unit_test(test_acl_user_connects_and_is_that_user),
        cmocka_unit_test(test_database_is_selected),
        cmocka_unit_test(test_no_server_is_econn_within_connect_timeout),
        cmocka_unit_test(test_command_connection_killed_mid_run_later_calls_succeed),
        cmocka_unit_test(test_script_flush_then_next_script_call_succeeds),
        cmocka_unit_test(test_error_reply_is_eredis_with_the_server_text),
        cmocka_unit_test(test_16_threads_10000_calls_each_every_result_right),
        cmocka_unit_test(test_blocking_call_on_the_loop_thread_is_edeadlk),
        cmocka_unit_test(test_free_with_pending_ops_cancels_each_once),
        cmocka_unit_test(test_paused_server_fails_calls_in_bounded_time_then_recovers),
        cmocka_unit_test(test_async_face_runs_on_the_application_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
