/* SPDX-License-Identifier: MIT */
/* test_sentinel_edges.c — a Sentinel URL where the sentinels or the user get something
 * wrong:
 *   - N silent sentinels (they accept and never answer) cost one connect_timeout_ms, not
 *     N of them: the sentinels are asked at once;
 *   - a wrong data-node password is DLOCK_EAUTH (the tool: exit 77), as on a redis:// URL;
 *   - a sentinel host with a space or an escape in the URL is DLOCK_EINVAL before any I/O,
 *     and an address a sentinel answers with a NUL byte in its host or a port like
 *     " +6379" is no address (the client never connects to it);
 *   - one sentinel's +switch-master that names an unreachable master does not shut the
 *     client out of the real master (it was passed over for 60 s): the new master failed
 *     its check, and no other sentinel said so; a second sentinel's report of it is
 *     followed.
 * One fixture (1 master + 1 replica + 3 sentinels) for the file: no test changes which node
 * is the master. A fake sentinel is a plain redis-server (it takes SUBSCRIBE +switch-master
 * and refuses SENTINEL), or a reply_injector in front of one (it answers SENTINEL
 * get-master-addr-by-name with chosen bytes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli_run.h"
#include "core_call.h"
#include "dlock_int.h"
#include "harness.h"
#include "reply_injector.h"
#include "sentinel_fixture.h"
#include "topology_util.h"

static sentinel_fixture *fx;

static int group_setup(void **state) {
    (void)state;
    test_watchdog_arm(60, "test_sentinel_edges");
    return sentinel_fixture_start(NULL, &fx);
}

static int group_teardown(void **state) {
    (void)state;
    cli_kill_spawned();
    sentinel_fixture_stop(fx);
    test_watchdog_disarm();
    return 0;
}

/* "127.0.0.1:S1,127.0.0.1:S2,127.0.0.1:S3" of the fixture's URL */
static char *fixture_hosts(void) {
    const char *url = sentinel_fixture_url(fx);
    const char *hosts = strstr(url, "://") + 3;
    return topo_asprintf("%.*s", (int)(strchr(hosts, '/') - hosts), hosts);
}

/* A listening socket on a free loopback port that never accepts: the kernel completes the
 * connection, and nothing ever answers. Its port in *port; close the fd. */
static int silent_listener(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 16), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* ---- N silent sentinels: one connect_timeout_ms -------------------------------------------- */

#define SILENT 4
#define SILENT_TIMEOUT_MS 3000

static void test_silent_sentinels_cost_one_connect_timeout_not_one_each(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    int fds[SILENT], ports[SILENT];
    for (int i = 0; i < SILENT; i++)
        fds[i] = silent_listener(&ports[i]);
    char *url = topo_asprintf("redis-sentinel://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d,"
                              "127.0.0.1:%d/mymaster",
                              ports[0], ports[1], ports[2], ports[3]);
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.connect_timeout_ms = SILENT_TIMEOUT_MS;
    dlock_client *c = NULL;
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_client_new(&o, &c), DLOCK_ECONN);
    int64_t took = test_now_ms() - start;
    printf("# %d silent sentinels, connect_timeout_ms %d: %lld ms\n# %s\n", SILENT,
           SILENT_TIMEOUT_MS, (long long)took, dlock_last_error());
    /* asked one after another they took 4 x 3000 = 12 s; at once, 3 s and a little */
    ASSERT_BETWEEN(took, SILENT_TIMEOUT_MS - 100, 3 * SILENT_TIMEOUT_MS - 1);
    if (!strstr(dlock_last_error(), "no answer within 3000 ms"))
        fail_msg("the error does not say the sentinels were silent: %s", dlock_last_error());
    for (int i = 0; i < SILENT; i++)
        close(fds[i]);
    free(url);
}

/* ---- a wrong data-node password ------------------------------------------------------------- */

static void test_a_wrong_data_node_password_is_eauth_as_on_a_redis_url(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    char *hosts = fixture_hosts();
    /* the nodes have no password: AUTH is refused as it is for a wrong one */
    char *url = topo_asprintf("redis-sentinel://:wrong-pw@%s/mymaster", hosts);
    char *direct = topo_asprintf("redis://:wrong-pw@127.0.0.1:%d",
                                 sentinel_fixture_node_port(fx, sentinel_fixture_master_index(fx)));
    dlock_options o;
    dlock_options_init(&o);
    o.connect_timeout_ms = 5000;
    dlock_client *c = NULL;
    o.url = direct;
    ASSERT_RC(dlock_client_new(&o, &c), DLOCK_EAUTH);
    o.url = url;
    ASSERT_RC(dlock_client_new(&o, &c), DLOCK_EAUTH);
    printf("# %s\n", dlock_last_error());
    if (!strstr(dlock_last_error(), "master check"))
        fail_msg("the error does not say the master refused: %s", dlock_last_error());
    assert_null(strstr(dlock_last_error(), "wrong-pw"));

    /* the tool: exit 77 (credentials), as with redis:// */
    if (cli_find()) {
        cli_result r = DLOCK_CLI_RUN(NULL, 20000, "--url", direct, "inspect", "x");
        ASSERT_STATUS(r, 77);
        cli_result_free(&r);
        r = DLOCK_CLI_RUN(NULL, 20000, "--url", url, "inspect", "x");
        ASSERT_STATUS(r, 77);
        assert_null(strstr(r.err, "wrong-pw"));
        cli_result_free(&r);
    }
    free(url);
    free(direct);
    free(hosts);
}

/* The data nodes' user may not run ROLE, which tells the master from a replica: the ACL's
 * refusal is DLOCK_ENOPERM naming it, as a refused handshake command is on a redis:// URL
 * (it was DLOCK_ECONN). */
static void test_a_master_check_the_acl_refuses_is_enoperm(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    for (int i = 0; i < SENTINEL_FIXTURE_NODES; i++) {
        redisReply *r = redis_fixture_cmd(sentinel_fixture_node(fx, i),
                                          "ACL SETUSER norole on >pw ~* &* +@all -role");
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STATUS);
        freeReplyObject(r);
    }
    char *hosts = fixture_hosts();
    char *url = topo_asprintf("redis-sentinel://norole:pw@%s/mymaster", hosts);
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.connect_timeout_ms = 5000;
    dlock_client *c = NULL;
    ASSERT_RC(dlock_client_new(&o, &c), DLOCK_ENOPERM);
    printf("# %s\n", dlock_last_error());
    if (!strstr(dlock_last_error(), "NOPERM") || !strstr(dlock_last_error(), "master check"))
        fail_msg("the error does not say the master check was refused: %s", dlock_last_error());
    for (int i = 0; i < SENTINEL_FIXTURE_NODES; i++)
        redis_fixture_int(sentinel_fixture_node(fx, i), "ACL DELUSER norole");
    free(url);
    free(hosts);
}

/* ---- addresses that are none ---------------------------------------------------------------- */

static void test_a_sentinel_host_with_a_space_or_an_escape_is_einval(void **state) {
    (void)state;
    const char *bad[] = {
        "redis-sentinel://127.0.0.1%00x:26379/mymaster",
        "redis-sentinel://%31%32%37.0.0.1:26379/mymaster",
        "redis-sentinel://127.0.0.1:26379, 127.0.0.1:26380/mymaster",
        "redis-sentinel://127.0.0.1\t:26379/mymaster",
        "redis-sentinel://127.0.0.1: +6379/mymaster",
        "redis-sentinel://127.0.0.1:+6379/mymaster",
        "redis-sentinel://[::1]: 6379/mymaster",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        dlock_options o;
        dlock_options_init(&o);
        o.url = bad[i];
        o.connect_timeout_ms = 500;
        dlock_client *c = NULL;
        dlock__set_last_error("");
        int rc = dlock_client_new(&o, &c);
        if (rc != DLOCK_EINVAL)
            fail_msg("%s: %s (%s), expected DLOCK_EINVAL", bad[i], dlock_err_name(rc),
                     dlock_last_error());
        if (!strstr(dlock_last_error(), "sentinel host"))
            fail_msg("%s: the error does not name the sentinel host: %s", bad[i],
                     dlock_last_error());
    }
}

/* A sentinel (a reply_injector in front of a plain server) answers get-master-addr-by-name
 * with `answer`: the client must not take it for the master's address. The server it names
 * is a real one that would answer ROLE master: before, " +PORT" (strtol) and "127.0.0.1\0x"
 * (cut at the NUL) were taken, and the client connected. */
static void expect_answer_refused(redis_fixture *named, const char *answer, size_t len,
                                  const char *what) {
    redis_fixture *plain;
    assert_int_equal(redis_fixture_start(NULL, &plain), 0);
    reply_injector *fake;
    assert_int_equal(reply_injector_start(redis_fixture_socket(plain), &fake), 0);
    /* every time: a client that asks again within its connect timeout (a busy machine) must
     * hear the same bad answer, not the plain server's "unknown command" */
    reply_injector_replace_every(fake, "get-master-addr-by-name", answer, len);
    char *url =
        topo_asprintf("redis-sentinel://%s/mymaster", strstr(reply_injector_url(fake), "://") + 3);
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.connect_timeout_ms = 5000;
    dlock_client *c = NULL;
    int rc = dlock_client_new(&o, &c);
    if (rc != DLOCK_ECONN || !strstr(dlock_last_error(), "unexpected answer"))
        fail_msg("%s: %s (%s), expected DLOCK_ECONN naming an unexpected answer", what,
                 dlock_err_name(rc), dlock_last_error());
    printf("# %s: %s\n", what, dlock_last_error());
    assert_int_equal(redis_fixture_int(named, "EXISTS nothing-here"), 0); /* still up */
    free(url);
    reply_injector_stop(fake);
    redis_fixture_stop(plain);
}

static void test_a_sentinel_answer_with_a_nul_or_a_signed_port_is_no_address(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    int master = sentinel_fixture_master_index(fx);
    int port = sentinel_fixture_node_port(fx, master);
    redis_fixture *node = sentinel_fixture_node(fx, master);
    char answer[128], port_text[16];
    int plen = snprintf(port_text, sizeof(port_text), " +%d", port);
    int n =
        snprintf(answer, sizeof(answer), "*2\r\n$9\r\n127.0.0.1\r\n$%d\r\n%s\r\n", plen, port_text);
    expect_answer_refused(node, answer, (size_t)n, "port \" +PORT\"");
    plen = snprintf(port_text, sizeof(port_text), "%d", port);
    /* "127.0.0.1\0x": 11 bytes */
    n = snprintf(answer, sizeof(answer), "*2\r\n$11\r\n127.0.0.1?x\r\n$%d\r\n%s\r\n", plen,
                 port_text);
    answer[strlen("*2\r\n$11\r\n127.0.0.1")] = '\0';
    expect_answer_refused(node, answer, (size_t)n, "host \"127.0.0.1\\0x\"");
}

/* ---- one sentinel's word -------------------------------------------------------------------- */

/* A plain server as a "sentinel": it takes SUBSCRIBE +switch-master (and refuses SENTINEL). */
static redis_fixture *fake_sentinel_start(void) {
    redis_fixture *fake;
    redis_fixture_opts fo = {.tcp = true};
    assert_int_equal(redis_fixture_start(&fo, &fake), 0);
    return fake;
}

static void publish_switch(redis_fixture *fake, const char *message) {
    redisReply *r = redis_fixture_cmd(fake, "PUBLISH +switch-master %s", message);
    assert_non_null(r);
    assert_int_equal(r->integer, 1); /* the client's watch heard it */
    freeReplyObject(r);
}

static void test_one_sentinels_bogus_switch_does_not_shut_out_the_real_master(void **state) {
    (void)state;
    test_watchdog_arm(120, __func__);
    redis_fixture *fake[2] = {fake_sentinel_start(), fake_sentinel_start()};
    char *hosts = fixture_hosts();
    char *url = topo_asprintf("redis-sentinel://%s,127.0.0.1:%d,127.0.0.1:%d/mymaster", hosts,
                              redis_fixture_port(fake[0]), redis_fixture_port(fake[1]));
    /* calls give up after 2 s without a connection (the second part waits for one) */
    dlock_client *c = connect_client_cfg(
        NULL, (test_client_cfg){.url = url, .timeout_ms = 2000, .retry_attempts = TEST_NO_RETRY});
    bool subscribed = false;
    POLL_UNTIL(subscribed,
               numsub(fake[0], "+switch-master") == 1 && numsub(fake[1], "+switch-master") == 1,
               test_slack_ms(10000));
    assert_true(subscribed);

    int master = sentinel_fixture_master_index(fx);
    redis_fixture *real = sentinel_fixture_node(fx, master);
    int unreachable = topo_free_port();
    char *bogus = topo_asprintf("mymaster 127.0.0.1 %d 127.0.0.1 %d",
                                sentinel_fixture_node_port(fx, master), unreachable);
    dlock_stats before, now;
    dlock_stats_init(&before);
    ASSERT_OK(dlock_client_stats(c, &before));
    publish_switch(fake[0], bogus);

    /* the client follows the report (its links go), finds the new master unreachable
     * and no other sentinel saying so, and its links are back on the real master: before,
     * that was passed over for 60 s (every reconnect refused) */
    int64_t start = test_now_ms();
    bool back = false;
    dlock_stats_init(&now);
    POLL_UNTIL(back, dlock_client_stats(c, &now) == DLOCK_OK && now.reconnects > before.reconnects,
               30000);
    printf("# after a bogus +switch-master: links back after %lld ms\n",
           (long long)(test_now_ms() - start));
    assert_true(back);
    ASSERT_OK(dlock_client_ping(c));
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(c, "after-bogus-switch", &l));
    ASSERT_OK(dlock_lock_acquire(l, 30000));
    assert_int_equal(redis_fixture_int(real, "EXISTS after-bogus-switch"), 1);
    ASSERT_OK(dlock_lock_release(l));
    dlock_lock_free(l);

    /* A second sentinel reports the same switch: two words are followed. The new master is
     * still unreachable and the real one passed over, so calls fail. */
    publish_switch(fake[1], bogus);
    char port_text[16];
    snprintf(port_text, sizeof(port_text), ":%d", unreachable);
    int rc = DLOCK_OK;
    start = test_now_ms();
    while (rc == DLOCK_OK && test_now_ms() - start < 30000)
        rc = dlock_client_ping(c);
    printf("# after a second report: %s (%s)\n", dlock_err_name(rc), dlock_last_error());
    ASSERT_RC(rc, DLOCK_ECONN);
    /* the links were dropped for the switch (the text names its new master), or a later
     * attempt found every sentinel still naming the master now passed over */
    if (!strstr(dlock_last_error(), port_text) &&
        !strstr(dlock_last_error(), "the master before the failover"))
        fail_msg("the error does not say the switch was followed: %s", dlock_last_error());
    dlock_client_free(c);
    free(bogus);
    free(url);
    free(hosts);
    redis_fixture_stop(fake[0]);
    redis_fixture_stop(fake[1]);
}

/* ---- a sentinel named by a 255-byte host --------------------------------------------------- */

/* A host name may be 255 bytes (DNS; Redis takes as much). glibc reads a dotted number with
 * leading zeros as octal, so 246 zeros and "177.0.0.1" is a 255-byte name of 127.0.0.1 that
 * needs no DNS server. When no sentinel can be asked, the error says what each said, naming
 * it whole: its address was once written into 160-byte buffers and came out cut in the
 * middle of the name. The port is one that listened a moment ago and is closed now. */
static void test_a_sentinel_named_by_a_255_byte_host_is_named_whole(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    char host[256];
    memset(host, '0', 246);
    strcpy(host + 246, "177.0.0.1");
    assert_int_equal(strlen(host), 255);
    int port;
    close(silent_listener(&port));
    char *url = topo_asprintf("redis-sentinel://%s:%d/mymaster", host, port);
    char *where = topo_asprintf("%s:%d", host, port);
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.connect_timeout_ms = test_prompt_ms();
    dlock_client *c = NULL;
    ASSERT_RC(dlock_client_new(&o, &c), DLOCK_ECONN);
    printf("# %s\n", dlock_last_error());
    if (!strstr(dlock_last_error(), where))
        fail_msg("the error does not name the sentinel %s whole: %s", where, dlock_last_error());
    free(where);
    free(url);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_silent_sentinels_cost_one_connect_timeout_not_one_each),
        cmocka_unit_test(test_a_wrong_data_node_password_is_eauth_as_on_a_redis_url),
        cmocka_unit_test(test_a_master_check_the_acl_refuses_is_enoperm),
        cmocka_unit_test(test_a_sentinel_host_with_a_space_or_an_escape_is_einval),
        cmocka_unit_test(test_a_sentinel_answer_with_a_nul_or_a_signed_port_is_no_address),
        cmocka_unit_test(test_one_sentinels_bogus_switch_does_not_shut_out_the_real_master),
        cmocka_unit_test(test_a_sentinel_named_by_a_255_byte_host_is_named_whole),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
