/* SPDX-License-Identifier: MIT */
/* cluster_load.c — the Cluster fault tests' clients, names and load (cluster_load.h). */
#include "cluster_load.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "topology/cluster.h"
#include "topology_util.h"

int cluster_group_setup(void **state) {
    test_watchdog_arm(300, "a cluster test program");
    cluster_fixture *f = NULL;
    if (cluster_fixture_start(NULL, &f) != 0)
        return -1;
    *state = f;
    return 0;
}

int cluster_group_teardown(void **state) {
    cluster_fixture_stop(*state);
    test_watchdog_disarm();
    return 0;
}

dlock_client *cluster_client(cluster_fixture *f, test_client_cfg cfg) {
    char *url = topo_asprintf("redis-cluster://%s", cluster_fixture_hosts(f));
    cfg.url = url;
    dlock_client *c = connect_client_cfg(NULL, cfg);
    free(url);
    return c;
}

void cluster_masters(cluster_fixture *f, int masters[3]) {
    int found = 0;
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++)
        if (cluster_fixture_is_master(f, i) && found < 3)
            masters[found++] = i;
    if (found != 3)
        fail_msg("the cluster has %d masters that answer, expected 3", found);
}

int cluster_next_master(const int masters[3], int from) {
    for (int i = 0; i < 3; i++)
        if (masters[i] == from)
            return masters[(i + 1) % 3];
    fail_msg("node %d is no master", from);
    return -1;
}

void cluster_name_on(cluster_fixture *f, const char *prefix, int master, char *buf, size_t size) {
    for (int n = 0; n < 10000; n++) {
        snprintf(buf, size, "%s-%d", prefix, n);
        if (cluster_fixture_node_of_slot(f, dlock__slot_of(buf, strlen(buf))) == master)
            return;
    }
    fail_msg("no name %s-<n> on node %d", prefix, master);
}

void cluster_name_in_slot(const char *prefix, int slot, int *next, char *buf, size_t size) {
    for (;; (*next)++) {
        snprintf(buf, size, "%s-%d", prefix, *next);
        if (dlock__slot_of(buf, strlen(buf)) == slot) {
            (*next)++;
            return;
        }
    }
}

long long cluster_errorstat(cluster_fixture *f, const char *code) {
    char field[64];
    snprintf(field, sizeof(field), "errorstat_%s", code);
    long long sum = 0;
    for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++) {
        redis_fixture *node = cluster_fixture_node(f, i);
        if (!redis_fixture_running(node))
            continue;
        redisReply *r = redis_fixture_cmd(node, "INFO errorstats");
        char *value = r && r->type == REDIS_REPLY_STRING ? topo_info_field(r->str, field) : NULL;
        if (value && strncmp(value, "count=", 6) == 0)
            sum += atoll(value + 6);
        free(value);
        freeReplyObject(r);
    }
    return sum;
}

/* ---- the load ------------------------------------------------------------------------------ */

static void *worker_main(void *arg) {
    cluster_load_worker *w = arg;
    cluster_load *ld = w->ld;
    int client = w->id % CLUSTER_LOAD_CLIENTS;
    for (long i = 0; !atomic_load(&ld->stop); i++) {
        int k = (int)((i + w->id) % CLUSTER_LOAD_LOCKS);
        dlock_lock *l = ld->l[client][k];
        int rc = dlock_lock_try_acquire(l, ld->wait_ms, ld->lease_ms);
        if (rc != DLOCK_OK) {
            first_error_note(&ld->errors[k], w->id, ld->names[k], rc);
            continue;
        }
        long slot = checker_enter(ld->k[k], w->id);
        checker_exit(ld->k[k], slot, 0);
        atomic_fetch_add(&ld->sections, 1);
        if ((rc = dlock_lock_release(l)) != DLOCK_OK)
            first_error_note(&ld->errors[k], w->id, ld->names[k], rc);
    }
    for (int k = 0; k < CLUSTER_LOAD_LOCKS; k++)
        checker_finished(ld->k[k], w->id);
    return NULL;
}

void cluster_load_start(cluster_load *ld, cluster_fixture *f, test_client_cfg cfg,
                        const char names[CLUSTER_LOAD_LOCKS][CLUSTER_NAME_MAX], int64_t wait_ms,
                        int64_t lease_ms) {
    ld->wait_ms = wait_ms;
    ld->lease_ms = lease_ms;
    for (int k = 0; k < CLUSTER_LOAD_LOCKS; k++) {
        snprintf(ld->names[k], sizeof(ld->names[k]), "%s", names[k]);
        ld->k[k] = checker_new(names[k], CLUSTER_LOAD_WORKERS, 1000000, false);
    }
    for (int i = 0; i < CLUSTER_LOAD_CLIENTS; i++) {
        ld->c[i] = cluster_client(f, cfg);
        for (int k = 0; k < CLUSTER_LOAD_LOCKS; k++)
            ASSERT_OK(dlock_lock_new(ld->c[i], names[k], &ld->l[i][k]));
    }
    for (int i = 0; i < CLUSTER_LOAD_WORKERS; i++) {
        ld->w[i] = (cluster_load_worker){.ld = ld, .id = i};
        assert_int_equal(pthread_create(&ld->w[i].thread, NULL, worker_main, &ld->w[i]), 0);
    }
}

void cluster_load_wait_sections(cluster_load *ld, long more, int64_t timeout_ms) {
    long from = atomic_load(&ld->sections);
    bool done = false;
    int64_t until = test_now_ms() + slack_ms(timeout_ms);
    while (!(done = atomic_load(&ld->sections) >= from + more) && test_now_ms() < until)
        test_sleep_ms(10);
    if (!done)
        fail_msg("%ld sections in %lld ms, expected %ld", atomic_load(&ld->sections) - from,
                 (long long)slack_ms(timeout_ms), more);
}

void cluster_load_stop(cluster_load *ld) {
    atomic_store(&ld->stop, true);
    for (int i = 0; i < CLUSTER_LOAD_WORKERS; i++)
        assert_int_equal(pthread_join(ld->w[i].thread, NULL), 0);
    printf("# %ld sections\n", atomic_load(&ld->sections));
    for (int k = 0; k < CLUSTER_LOAD_LOCKS; k++) {
        long errors = atomic_load(&ld->errors[k].count);
        printf("# %s: %ld calls failed%s%s\n", ld->names[k], errors, errors ? ", first: " : "",
               errors ? ld->errors[k].text : "");
        checker_report r = checker_check(ld->k[k]);
        if (!r.ok)
            fail_msg("%s: %ld overlaps: %s", ld->names[k], r.overlaps, r.first_problem);
    }
}

void cluster_load_free(cluster_load *ld) {
    for (int k = 0; k < CLUSTER_LOAD_LOCKS; k++) {
        checker_free(ld->k[k]);
        for (int i = 0; i < CLUSTER_LOAD_CLIENTS; i++)
            dlock_lock_free(ld->l[i][k]);
    }
    for (int i = 0; i < CLUSTER_LOAD_CLIENTS; i++)
        dlock_client_free(ld->c[i]);
}

void cluster_load_assert_no_errors(cluster_load *ld, int k) {
    if (atomic_load(&ld->errors[k].count) != 0)
        fail_msg("%s: %ld calls failed, first: %s", ld->names[k], atomic_load(&ld->errors[k].count),
                 ld->errors[k].text);
}
