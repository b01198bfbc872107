/* SPDX-License-Identifier: MIT */
/* sentinel_fixture_selftest.c - proves sentinel_fixture.h before Sentinel tests rely on it.
 *
 * Against real redis-server and redis-sentinel processes: the topology comes up with every
 * sentinel knowing the master, the replica and each other; SENTINEL FAILOVER and a SIGKILLed
 * master really move the master; a paused replica acknowledges no WAIT; a killed sentinel
 * leaves the others answering; the TLS variant speaks TLS on every port; and no process
 * outlives its fixture, whether the test stops it, forgets to, or aborts.
 *
 * The program is a child subreaper, so the processes of the children it lets die come back
 * to it and it can see exactly when they are gone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>

#include <cmocka.h>

#include "sentinel_fixture.h"
#include "test_util.h"
#include "topology_util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TEST_BUDGET_S 60
#define ALL_PIDS (SENTINEL_FIXTURE_NODES + SENTINEL_FIXTURE_SENTINELS)

struct topology_pids {
    pid_t pids[ALL_PIDS];
    char dir[128];
    char node_dirs[SENTINEL_FIXTURE_NODES][128];
};

static sentinel_fixture *start_or_fail(const sentinel_fixture_opts *o) {
    int64_t t0 = test_now_ms();
    sentinel_fixture *f = NULL;
    assert_int_equal(sentinel_fixture_start(o, &f), 0);
    assert_non_null(f);
    print_message("sentinel topology%s up in %lld ms\n", (o && o->tls) ? " (TLS)" : "",
                  (long long)(test_now_ms() - t0));
    return f;
}

static void collect_pids(sentinel_fixture *f, struct topology_pids *out) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < SENTINEL_FIXTURE_NODES; i++) {
        out->pids[i] = redis_fixture_pid(sentinel_fixture_node(f, i));
        snprintf(out->node_dirs[i], sizeof out->node_dirs[i], "%s",
                 redis_fixture_dir(sentinel_fixture_node(f, i)));
    }
    for (int i = 0; i < SENTINEL_FIXTURE_SENTINELS; i++)
        out->pids[SENTINEL_FIXTURE_NODES + i] = sentinel_fixture_sentinel_pid(f, i);
    /* ".../sN/sentinel.sock": the fixture's directory is two levels up */
    snprintf(out->dir, sizeof out->dir, "%s", sentinel_fixture_sentinel_socket(f, 0));
    *strrchr(out->dir, '/') = '\0';
    *strrchr(out->dir, '/') = '\0';
    for (int i = 0; i < ALL_PIDS; i++)
        assert_true(out->pids[i] > 0);
}

static void assert_all_gone(const struct topology_pids *t) {
    for (int i = 0; i < ALL_PIDS; i++) {
        if (!topo_wait_gone(t->pids[i], 5000))
            fail_msg("process %d (%s %d) still running", (int)t->pids[i],
                     i < SENTINEL_FIXTURE_NODES ? "node" : "sentinel",
                     i < SENTINEL_FIXTURE_NODES ? i : i - SENTINEL_FIXTURE_NODES);
    }
    struct stat st;
    errno = 0;
    assert_int_equal(stat(t->dir, &st), -1);
    assert_int_equal(errno, ENOENT);
}

static void stop_and_assert_gone(sentinel_fixture *f) {
    struct topology_pids t;
    collect_pids(f, &t);
    sentinel_fixture_stop(f);
    assert_all_gone(&t);
}

/* The replica shows `key` = `value` within the bound. */
static void assert_replicated(sentinel_fixture *f, int replica, const char *key,
                              const char *value) {
    int64_t deadline = test_now_ms() + test_slack_ms(5000);
    for (;;) {
        char *got = redis_fixture_str(sentinel_fixture_node(f, replica), "GET %s", key);
        bool same = got != NULL && strcmp(got, value) == 0;
        free(got);
        if (same)
            return;
        if (test_now_ms() >= deadline)
            fail_msg("node %d never got %s=%s", replica, key, value);
        test_sleep_ms(10);
    }
}

static char *node_role(sentinel_fixture *f, int i) {
    redisReply *r = redis_fixture_cmd(sentinel_fixture_node(f, i), "ROLE");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    char *role = strdup(r->element[0]->str);
    freeReplyObject(r);
    return role;
}

static void assert_every_sentinel_names(sentinel_fixture *f, int node) {
    char port[16];
    snprintf(port, sizeof port, "%d", sentinel_fixture_node_port(f, node));
    for (int i = 0; i < SENTINEL_FIXTURE_SENTINELS; i++) {
        redisReply *r = sentinel_fixture_sentinel_cmd(f, i, "SENTINEL GET-MASTER-ADDR-BY-NAME %s",
                                                      sentinel_fixture_master_name(f));
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_int_equal(r->elements, 2);
        assert_string_equal(r->element[0]->str, "127.0.0.1");
        assert_string_equal(r->element[1]->str, port);
        freeReplyObject(r);
    }
}

/* ---- tests --------------------------------------------------------------------------------- */

static void test_topology_comes_up_with_everyone_known(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    sentinel_fixture *f = start_or_fail(NULL);

    char expected[256];
    snprintf(expected, sizeof expected,
             "redis-sentinel://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/mymaster",
             sentinel_fixture_sentinel_port(f, 0), sentinel_fixture_sentinel_port(f, 1),
             sentinel_fixture_sentinel_port(f, 2));
    assert_string_equal(sentinel_fixture_url(f), expected);
    assert_null(sentinel_fixture_certs(f));
    assert_int_equal(sentinel_fixture_master_index(f), 0);
    assert_int_equal(sentinel_fixture_replica_index(f), 1);
    assert_every_sentinel_names(f, 0);
    for (int i = 0; i < SENTINEL_FIXTURE_SENTINELS; i++) {
        redisReply *r = sentinel_fixture_sentinel_cmd(f, i, "SENTINEL CKQUORUM %s", "mymaster");
        assert_non_null(r);
        if (r->type != REDIS_REPLY_STATUS)
            fail_msg("CKQUORUM on sentinel %d: %s", i, r->str);
        freeReplyObject(r);
    }

    char *role = node_role(f, 1);
    assert_string_equal(role, "slave");
    free(role);
    redisReply *set = redis_fixture_cmd(sentinel_fixture_node(f, 0), "SET k v");
    assert_non_null(set);
    assert_int_equal(set->type, REDIS_REPLY_STATUS);
    freeReplyObject(set);
    assert_replicated(f, 1, "k", "v");
    stop_and_assert_gone(f);
    test_watchdog_disarm();
}

static void test_failover_moves_the_master_to_the_replica(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    sentinel_fixture *f = start_or_fail(NULL);
    redisReply *r = redis_fixture_cmd(sentinel_fixture_node(f, 0), "SET before failover");
    assert_non_null(r);
    freeReplyObject(r);
    assert_replicated(f, 1, "before", "failover");

    int64_t t0 = test_now_ms();
    assert_int_equal(sentinel_fixture_failover(f), 1);
    print_message("SENTINEL FAILOVER: every sentinel names the new master after %lld ms\n",
                  (long long)(test_now_ms() - t0));
    assert_int_equal(sentinel_fixture_master_index(f), 1);
    assert_every_sentinel_names(f, 1);
    char *role = node_role(f, 1);
    assert_string_equal(role, "master");
    free(role);
    /* the promoted node takes writes and kept the data */
    r = redis_fixture_cmd(sentinel_fixture_node(f, 1), "SET after failover");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    char *kept = redis_fixture_str(sentinel_fixture_node(f, 1), "GET before");
    assert_non_null(kept);
    assert_string_equal(kept, "failover");
    free(kept);
    stop_and_assert_gone(f);
    test_watchdog_disarm();
}

static void test_killed_master_is_replaced_by_the_replica(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    sentinel_fixture *f = start_or_fail(NULL);
    pid_t old_master = redis_fixture_pid(sentinel_fixture_node(f, 0));
    int64_t t0 = test_now_ms();
    assert_int_equal(sentinel_fixture_kill_master(f), 1);
    print_message("SIGKILLed master: every sentinel names the new master after %lld ms\n",
                  (long long)(test_now_ms() - t0));
    assert_true(topo_wait_gone(old_master, 1000));
    assert_false(redis_fixture_running(sentinel_fixture_node(f, 0)));
    assert_int_equal(sentinel_fixture_master_index(f), 1);
    char *role = node_role(f, 1);
    assert_string_equal(role, "master");
    free(role);
    stop_and_assert_gone(f);
    test_watchdog_disarm();
}

static void test_paused_replica_acknowledges_no_wait(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    sentinel_fixture *f = start_or_fail(NULL);
    redis_fixture *master = sentinel_fixture_node(f, 0);
    assert_int_equal(redis_fixture_int(master, "INCR n"), 1);
    assert_int_equal(redis_fixture_int(master, "WAIT 1 5000"), 1);

    assert_int_equal(sentinel_fixture_pause_replica(f), 1);
    assert_int_equal(redis_fixture_int(master, "INCR n"), 2);
    assert_int_equal(redis_fixture_int(master, "WAIT 1 200"), 0);
    assert_int_equal(sentinel_fixture_resume_replica(f), 0);
    assert_int_equal(redis_fixture_int(master, "WAIT 1 5000"), 1);
    assert_int_equal(sentinel_fixture_wait_synced(f, 5000), 0);
    stop_and_assert_gone(f);
    test_watchdog_disarm();
}

static void test_killed_sentinel_leaves_the_others_answering(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    sentinel_fixture *f = start_or_fail(NULL);
    pid_t first = sentinel_fixture_sentinel_pid(f, 0);
    assert_int_equal(sentinel_fixture_kill_sentinel(f, 0), 0);
    assert_true(topo_wait_gone(first, 1000));
    assert_int_equal(sentinel_fixture_sentinel_pid(f, 0), first);
    assert_int_equal(sentinel_fixture_master_index(f), 0); /* from sentinel 1 */

    assert_int_equal(sentinel_fixture_pause_sentinel(f, 1), 0);
    assert_int_equal(sentinel_fixture_master_index(f), 0); /* from sentinel 2 */
    assert_int_equal(sentinel_fixture_resume_sentinel(f, 1), 0);
    redisReply *r = sentinel_fixture_sentinel_cmd(f, 1, "PING");
    assert_non_null(r);
    freeReplyObject(r);
    stop_and_assert_gone(f);
    test_watchdog_disarm();
}

static void test_passwords_reach_nodes_sentinels_and_url(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    sentinel_fixture_opts o = {
        .master_name = "pw-master", .requirepass = "data/pw", .sentinel_password = "sent:pw"};
    sentinel_fixture *f = start_or_fail(&o);
    char expected[256];
    snprintf(expected, sizeof expected,
             "redis-sentinel://:data%%2Fpw@127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/pw-master"
             "?sentinel_password=sent%%3Apw",
             sentinel_fixture_sentinel_port(f, 0), sentinel_fixture_sentinel_port(f, 1),
             sentinel_fixture_sentinel_port(f, 2));
    assert_string_equal(sentinel_fixture_url(f), expected);
    /* the sentinels want a password too */
    char why[128];
    redisContext *c =
        topo_connect_unix(sentinel_fixture_sentinel_socket(f, 0), NULL, 1000, why, sizeof why);
    assert_non_null(c);
    redisReply *r = redisCommand(c, "SENTINEL MASTERS");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    redisFree(c);
    stop_and_assert_gone(f);
    test_watchdog_disarm();
}

static char *tls_cli(sentinel_fixture *f, int port, const char *cmd1, const char *cmd2,
                     const char *cmd3) {
    char port_buf[16];
    snprintf(port_buf, sizeof port_buf, "%d", port);
    char *argv[] = {
        "redis-cli",  "--tls",  "--cacert",   (char *)tls_certs_ca(sentinel_fixture_certs(f)),
        "-p",         port_buf, (char *)cmd1, (char *)cmd2,
        (char *)cmd3, NULL};
    char *out = NULL;
    assert_int_equal(topo_run(argv, NULL, &out), 0);
    return out;
}

static void test_tls_topology_speaks_tls_everywhere(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    sentinel_fixture_opts o = {.tls = true};
    sentinel_fixture *f = start_or_fail(&o);
    tls_certs *certs = sentinel_fixture_certs(f);
    assert_non_null(certs);
    char expected[512];
    snprintf(expected, sizeof expected,
             "rediss-sentinel://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/mymaster?cacert=%s",
             sentinel_fixture_sentinel_port(f, 0), sentinel_fixture_sentinel_port(f, 1),
             sentinel_fixture_sentinel_port(f, 2), tls_certs_ca(certs));
    assert_string_equal(sentinel_fixture_url(f), expected);

    /* the replica synced and the sentinels met over TLS (start waited for both) */
    char *out = tls_cli(f, sentinel_fixture_sentinel_port(f, 2), "SENTINEL",
                        "GET-MASTER-ADDR-BY-NAME", "mymaster");
    char port[16];
    snprintf(port, sizeof port, "%d", sentinel_fixture_node_port(f, 0));
    assert_non_null(strstr(out, port));
    free(out);
    out = tls_cli(f, sentinel_fixture_node_port(f, 1), "ROLE", NULL, NULL);
    assert_non_null(strstr(out, "slave"));
    free(out);

    /* plaintext gets nothing from a node's or a sentinel's port */
    assert_true(topo_plaintext_unanswered(sentinel_fixture_node_port(f, 0)));
    assert_true(topo_plaintext_unanswered(sentinel_fixture_sentinel_port(f, 0)));
    stop_and_assert_gone(f);
    test_watchdog_disarm();
}

/* A test that dies without stopping its fixture leaves nothing running. */
static void run_child_and_check(bool abort_instead_of_exit) {
    int report[2];
    assert_int_equal(pipe(report), 0);
    fflush(NULL);
    pid_t child = test_fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(report[0]);
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, STDERR_FILENO); /* the "killed at exit" notes are expected */
        sentinel_fixture *f = NULL;
        if (sentinel_fixture_start(NULL, &f) != 0)
            _exit(2);
        struct topology_pids t;
        collect_pids(f, &t);
        if (write(report[1], &t, sizeof t) != (ssize_t)sizeof t)
            _exit(3);
        if (abort_instead_of_exit)
            abort();
        exit(0);
    }
    close(report[1]);
    struct topology_pids t;
    ssize_t n;
    while ((n = read(report[0], &t, sizeof t)) == -1 && errno == EINTR) {
    }
    close(report[0]);
    int status = 0;
    while (waitpid(child, &status, 0) == -1 && errno == EINTR) {
    }
    assert_int_equal(n, (ssize_t)sizeof t);
    if (abort_instead_of_exit) {
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
        for (int i = 0; i < ALL_PIDS; i++)
            assert_true(topo_wait_gone(t.pids[i], 5000));
        /* an abort leaves the directories as evidence */
        topo_run((char *[]){"rm", "-rf", t.dir, t.node_dirs[0], t.node_dirs[1], NULL}, NULL, NULL);
    } else {
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_all_gone(&t);
    }
}

static void test_test_exiting_without_stop_leaves_nothing_running(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    run_child_and_check(false);
    test_watchdog_disarm();
}

static void test_aborting_test_leaves_nothing_running(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    run_child_and_check(true);
    test_watchdog_disarm();
}

int main(void) {
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        perror("prctl(PR_SET_CHILD_SUBREAPER)");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topology_comes_up_with_everyone_known),
        cmocka_unit_test(test_failover_moves_the_master_to_the_replica),
        cmocka_unit_test(test_killed_master_is_replaced_by_the_replica),
        cmocka_unit_test(test_paused_replica_acknowledges_no_wait),
        cmocka_unit_test(test_killed_sentinel_leaves_the_others_answering),
        cmocka_unit_test(test_passwords_reach_nodes_sentinels_and_url),
        cmocka_unit_test(test_tls_topology_speaks_tls_everywhere),
        cmocka_unit_test(test_test_exiting_without_stop_leaves_nothing_running),
        cmocka_unit_test(test_aborting_test_leaves_nothing_running),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
