/* SPDX-License-Identifier: MIT */
/* cluster_load.h — what the Cluster fault tests (tests/fault/test_cluster_*.c) share: a client
 * of a cluster_fixture's redis-cluster:// URL, names whose slots a chosen master serves, and
 * the load of 2 clients x 4 threads looping on 4 locks under the mutual-exclusion checker.
 *
 * The load: worker w (client w % 2) takes the locks in turn, try_acquire(wait, lease), one
 * checker section, release. Every call that does not return DLOCK_OK is counted against its
 * lock (the first text kept), so a test can demand 0 errors on every lock, or on the locks
 * of the masters a fault did not touch. Leases are explicit (no watchdog), so a waiter wakes
 * at the latest when the lease it waits on would have ended.
 *
 * Everything here fails the running cmocka test on error (the caller includes <cmocka.h>). */
#ifndef DLOCK_TEST_CLUSTER_LOAD_H
#define DLOCK_TEST_CLUSTER_LOAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "checker.h"
#include "cluster_fixture.h"
#include "harness.h"

#define CLUSTER_LOAD_CLIENTS 2
#define CLUSTER_LOAD_THREADS 4 /* per client */
#define CLUSTER_LOAD_WORKERS (CLUSTER_LOAD_CLIENTS * CLUSTER_LOAD_THREADS)
#define CLUSTER_LOAD_LOCKS 4
#define CLUSTER_NAME_MAX 48

/* cmocka group setup and teardown of a file that shares one cluster among its tests: arms
 * the test watchdog (300 s) and starts a cluster_fixture into *state (each test reads it
 * there); the teardown stops it and disarms the watchdog. */
int cluster_group_setup(void **state);
int cluster_group_teardown(void **state);

/* A client of f's every node as seeds, with cfg applied (cfg.url is ignored). */
dlock_client *cluster_client(cluster_fixture *f, test_client_cfg cfg);

/* The indexes of the three masters, in node order. */
void cluster_masters(cluster_fixture *f, int masters[3]);

/* The master after `from` in masters' order (a slot's next owner in a migration). */
int cluster_next_master(const int masters[3], int from);

/* The first "<prefix>-<n>", n = 0, 1, ..., whose slot node `master` serves, in buf. */
void cluster_name_on(cluster_fixture *f, const char *prefix, int master, char *buf, size_t size);

/* The first "<prefix>-<n>", n >= *next, whose slot is `slot` (computed here, no server
 * asked), in buf; *next is moved past it. */
void cluster_name_in_slot(const char *prefix, int slot, int *next, char *buf, size_t size);

/* The errors the running nodes answered with `code` so far (INFO errorstats: "ASK", "MOVED",
 * "TRYAGAIN"), summed over them. */
long long cluster_errorstat(cluster_fixture *f, const char *code);

typedef struct cluster_load cluster_load;

typedef struct cluster_load_worker {
    cluster_load *ld;
    int id;
    pthread_t thread;
} cluster_load_worker;

struct cluster_load {
    char names[CLUSTER_LOAD_LOCKS][CLUSTER_NAME_MAX];
    int64_t wait_ms, lease_ms;
    dlock_client *c[CLUSTER_LOAD_CLIENTS];
    dlock_lock *l[CLUSTER_LOAD_CLIENTS][CLUSTER_LOAD_LOCKS];
    checker *k[CLUSTER_LOAD_LOCKS];
    first_error errors[CLUSTER_LOAD_LOCKS];
    atomic_bool stop;
    atomic_long sections;
    cluster_load_worker w[CLUSTER_LOAD_WORKERS];
};

/* Starts the load on the locks names[0..3] (copied into ld, which the caller zeroed), each
 * client made by cluster_client(f, cfg). */
void cluster_load_start(cluster_load *ld, cluster_fixture *f, test_client_cfg cfg,
                        const char names[CLUSTER_LOAD_LOCKS][CLUSTER_NAME_MAX], int64_t wait_ms,
                        int64_t lease_ms);

/* Waits (bounded by timeout_ms, widened by the slack rule) until `more` sections were
 * completed since the call; fails the test if they were not. */
void cluster_load_wait_sections(cluster_load *ld, long more, int64_t timeout_ms);

/* Stops and joins the workers, prints the sections and errors per lock, and fails the test
 * if any lock's sections overlapped. ld's errors stay readable; free it with
 * cluster_load_free. */
void cluster_load_stop(cluster_load *ld);
void cluster_load_free(cluster_load *ld);

/* Fails the test if any call on lock k failed (with the first error's text). */
void cluster_load_assert_no_errors(cluster_load *ld, int k);

#endif /* DLOCK_TEST_CLUSTER_LOAD_H */
