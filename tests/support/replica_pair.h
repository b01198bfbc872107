/* SPDX-License-Identifier: MIT */
/* replica_pair.h — a master and one replica for the tests of ?sync_replicas, and the
 * warnings a client logs.
 *
 * The master listens on a unix socket and on loopback TCP (its replica connects over TCP);
 * the replica follows it (REPLICAOF). A test program has one pair, started by its cmocka
 * group setup and stopped by its group teardown (replica_pair_group_setup/_teardown). A
 * test that pauses the replica (redis_fixture_pause: SIGSTOP, so it acknowledges nothing)
 * leaves it to its teardown (replica_pair_resume_teardown), which resumes it and waits
 * until it acknowledges again, so the next test starts from a replica in sync.
 *
 * Everything here fails the running cmocka test on error. */
#ifndef DLOCK_TEST_REPLICA_PAIR_H
#define DLOCK_TEST_REPLICA_PAIR_H

#include <stdbool.h>

#include "dlock.h"
#include "redis_fixture.h"

/* The test program's pair, between replica_pair_group_setup and _teardown. */
extern redis_fixture *pair_master, *pair_replica;

/* cmocka group setup: arms the test watchdog (120 s), starts the master (TCP too) and the
 * replica, and returns once the replica has every write of the master. 0, or -1 (what was
 * started is stopped). */
int replica_pair_group_setup(void **state);

/* cmocka group teardown: stops both, disarms the watchdog. */
int replica_pair_group_teardown(void **state);

/* cmocka teardown of each test: resumes a paused replica (a running one is left alone) and
 * waits until it acknowledges the master's writes. */
int replica_pair_resume_teardown(void **state);

/* Returns once the replica acknowledges the master's writes (a WAIT 1 of the master's own
 * says so); fails the test after 10 s (by the slack rule). */
void replica_pair_wait_acknowledged(void);

/* The master's unix socket URL with query ("?sync_replicas=0", or ""); free it. */
char *replica_pair_url(const char *query);

/* ---- the warnings a client logs --------------------------------------------------------- */

/* A client of url whose DLOCK_LOG_WARN lines are kept, process-wide, for warnings_have. */
dlock_client *client_keeping_warnings(const char *url);

/* Whether a kept warning holds part. Thread-safe. */
bool warnings_have(const char *part);

/* Forgets the warnings kept so far. Thread-safe. */
void warnings_clear(void);

#endif
