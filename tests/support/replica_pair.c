/* SPDX-License-Identifier: MIT */
/* replica_pair.c — a master and one replica, and the warnings a client logs (see
 * replica_pair.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"
#include "replica_pair.h"
#include "topology_util.h"

redis_fixture *pair_master, *pair_replica;

static void stop_pair(void) {
    if (pair_replica)
        redis_fixture_stop(pair_replica);
    if (pair_master)
        redis_fixture_stop(pair_master);
    pair_master = pair_replica = NULL;
}

int replica_pair_group_setup(void **state) {
    (void)state;
    test_watchdog_arm(120, "a test of a master and its replica");
    redis_fixture_opts tcp = {.tcp = true};
    if (redis_fixture_start(&tcp, &pair_master) != 0 ||
        redis_fixture_start(NULL, &pair_replica) != 0) {
        stop_pair();
        return -1;
    }
    redisReply *r =
        redis_fixture_cmd(pair_replica, "REPLICAOF 127.0.0.1 %d", redis_fixture_port(pair_master));
    freeReplyObject(r);
    replica_pair_wait_acknowledged();
    return 0;
}

int replica_pair_group_teardown(void **state) {
    (void)state;
    stop_pair();
    test_watchdog_disarm();
    return 0;
}

int replica_pair_resume_teardown(void **state) {
    (void)state;
    redis_fixture_resume(pair_replica);
    replica_pair_wait_acknowledged();
    return 0;
}

void replica_pair_wait_acknowledged(void) {
    int64_t until = test_now_ms() + slack_ms(10000);
    while (redis_fixture_int(pair_master, "WAIT 1 100") != 1)
        if (test_now_ms() > until)
            fail_msg("the replica never acknowledged the master's writes");
}

char *replica_pair_url(const char *query) {
    return topo_asprintf("%s%s", redis_fixture_unix_url(pair_master), query);
}

/* ---- the warnings a client logs --------------------------------------------------------- */

static char warnings[4096];
static pthread_mutex_t warnings_mu = PTHREAD_MUTEX_INITIALIZER;

static void keep_warnings(int level, const char *msg, void *arg) {
    (void)arg;
    if (level != DLOCK_LOG_WARN)
        return;
    pthread_mutex_lock(&warnings_mu);
    size_t len = strlen(warnings);
    snprintf(warnings + len, sizeof(warnings) - len, "%s\n", msg);
    pthread_mutex_unlock(&warnings_mu);
}

dlock_client *client_keeping_warnings(const char *url) {
    dlock_options o;
    test_client_cfg cfg = {.url = url};
    test_client_options(NULL, &cfg, &o);
    o.log_cb = keep_warnings;
    dlock_client *c = NULL;
    ASSERT_OK(dlock_client_new(&o, &c));
    return c;
}

bool warnings_have(const char *part) {
    pthread_mutex_lock(&warnings_mu);
    bool found = strstr(warnings, part) != NULL;
    pthread_mutex_unlock(&warnings_mu);
    return found;
}

void warnings_clear(void) {
    pthread_mutex_lock(&warnings_mu);
    warnings[0] = '\0';
    pthread_mutex_unlock(&warnings_mu);
}
