/* SPDX-License-Identifier: MIT */
/* sentinel_fixture.h - 1 master + 1 replica + 3 sentinels on loopback, for Sentinel tests.
 *
 * Node 0 starts as the master and node 1 as its replica (`replicaof`); both are
 * redis_fixture servers on free 127.0.0.1 ports (plus their plain unix sockets for admin),
 * with --repl-diskless-sync-delay 0 so a (re)sync starts at once. Three `redis-sentinel`
 * processes run from generated, writable config files in /tmp/dlock-sentinel-XXXXXX/sN/:
 *   sentinel monitor NAME 127.0.0.1 <node 0> 2, down-after-milliseconds 1000,
 *   failover-timeout 3000, parallel-syncs 1,
 * and each is told the replica and the other two sentinels up front (known-replica,
 * known-sentinel with fixed ids), so it needs no hello round (2 s) to find them.
 * Start returns once the replica is in sync and every sentinel reports the master (with
 * its INFO), the replica (link ok) and the 2 other sentinels connected: 0.3-1.5 s (a sentinel
 * that started before another retries its link to it after 1 s).
 *
 * Which node is the master changes with failovers: ask sentinel_fixture_master_index().
 *
 * With opts.tls every port is TLS only (nodes: --tls-port, --tls-replication yes; sentinels:
 * tls-port, tls-replication yes), certificates from tls_certs (tls_fixture.h); client
 * certificates are not required. Admin commands still go over the plain unix sockets.
 *
 * Every process is stopped by pid, also when a test fails (redis_fixture and topology_util
 * kill what is left at exit; PR_SET_PDEATHSIG when the test process dies).
 *
 * Threads: the command and query calls may be made from several threads (each command
 * opens its own connection, or takes turns on redis_fixture's); start, stop, failover,
 * kill, pause and resume must not race with each other.
 */
#ifndef DLOCK_TEST_SENTINEL_FIXTURE_H
#define DLOCK_TEST_SENTINEL_FIXTURE_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "redis_fixture.h"
#include "tls_fixture.h"

#define SENTINEL_FIXTURE_NODES 2
#define SENTINEL_FIXTURE_SENTINELS 3

typedef struct sentinel_fixture_opts {
    /* NULL: "mymaster". Letters, digits, '-', '_' and '.' only. */
    const char *master_name;
    /* Passwords: no whitespace or quotes (they go into config files as they are). */
    /* --requirepass and --masterauth on the nodes, `sentinel auth-pass` on the sentinels.
     * NULL or "": none. */
    const char *requirepass;
    /* requirepass on the sentinels (and `sentinel sentinel-pass` among them): in the URL as
     * ?sentinel_password=. NULL or "": none. */
    const char *sentinel_password;
    /* Everything over TLS (see above); the URL is then rediss-sentinel://...?cacert=CA. */
    bool tls;
} sentinel_fixture_opts;

typedef struct sentinel_fixture sentinel_fixture;

/* Starts and waits as described above (up to 10 s, x test_slack_factor()). `o` NULL:
 * defaults. 0 and the fixture in *out, or -1 with a message (and log tails) on stderr, leaving
 * *out untouched and nothing running. */
int sentinel_fixture_start(const sentinel_fixture_opts *o, sentinel_fixture **out);

/* Stops the sentinels, then the nodes, by pid; removes every directory; frees.
 * NULL is a no-op. */
void sentinel_fixture_stop(sentinel_fixture *f);

/* "redis-sentinel://127.0.0.1:S1,127.0.0.1:S2,127.0.0.1:S3/NAME"; with opts.tls
 * "rediss-sentinel://...?cacert=CA"; with requirepass ":PW@" after "://"; with
 * sentinel_password "sentinel_password=PW" in the query. Passwords percent-encoded.
 * Owned by `f`. */
const char *sentinel_fixture_url(const sentinel_fixture *f);
const char *sentinel_fixture_master_name(const sentinel_fixture *f);
/* The certificates with opts.tls, else NULL. Owned by `f`. */
tls_certs *sentinel_fixture_certs(sentinel_fixture *f);

/* ---- data nodes ---------------------------------------------------------------------------- */

/* Node i (0 or 1), for admin commands (redis_fixture_cmd ...), pause/resume, kill/restart and
 * its pid. Owned by `f`: never stop it yourself. NULL if i is out of range. */
redis_fixture *sentinel_fixture_node(sentinel_fixture *f, int i);
/* The port node i serves clients on (its TLS port with opts.tls); -1 if out of range. */
int sentinel_fixture_node_port(const sentinel_fixture *f, int i);

/* The master as the first sentinel that answers says (SENTINEL get-master-addr-by-name),
 * as a node index; -1 if no sentinel answers or it names neither node. */
int sentinel_fixture_master_index(sentinel_fixture *f);
/* The node that is not the master: 1 - master_index, or -1. */
int sentinel_fixture_replica_index(sentinel_fixture *f);

/* SENTINEL FAILOVER on a sentinel that is running, then waits until every running,
 * unpaused sentinel names the other node as master and that node's ROLE is master (up to
 * 20 s x slack). Returns the new master's index, or -1 with a message on stderr.
 * The old master stays up and is turned into a replica by the sentinels later (Redis 7.0:
 * 8-18 s); see sentinel_fixture_wait_synced(). */
int sentinel_fixture_failover(sentinel_fixture *f);

/* SIGKILLs the master (redis_fixture_kill: redis_fixture_restart brings it back, empty, as
 * a master the sentinels will turn into a replica) and waits for the promotion as
 * sentinel_fixture_failover() does. Returns the new master's index, or -1. */
int sentinel_fixture_kill_master(sentinel_fixture *f);

/* Waits until every running node other than the master is its replica with
 * master_link_status:up (up to timeout_ms x slack). 0, or -1 with a message on stderr. */
int sentinel_fixture_wait_synced(sentinel_fixture *f, int64_t timeout_ms);

/* SIGSTOP / SIGCONT the current replica (redis_fixture_pause/resume): a paused replica
 * acknowledges no WAIT. pause returns the paused node's index or -1; resume resumes that
 * node: 0 or -1. */
int sentinel_fixture_pause_replica(sentinel_fixture *f);
int sentinel_fixture_resume_replica(sentinel_fixture *f);

/* ---- sentinels ----------------------------------------------------------------------------- */

/* Sentinel i's port on 127.0.0.1 (TLS with opts.tls), its pid (also after it was killed),
 * its plain unix socket. */
int sentinel_fixture_sentinel_port(const sentinel_fixture *f, int i);
pid_t sentinel_fixture_sentinel_pid(const sentinel_fixture *f, int i);
const char *sentinel_fixture_sentinel_socket(const sentinel_fixture *f, int i);

/* A command on sentinel i over its unix socket (a fresh connection, AUTHed with
 * sentinel_password). A reply the caller frees with freeReplyObject (error replies
 * included), or NULL (message on stderr). */
redisReply *sentinel_fixture_sentinel_cmd(sentinel_fixture *f, int i, const char *fmt, ...);

/* How many connections are subscribed on sentinel i (CLIENT LIST TYPE pubsub; the sentinels'
 * own links to each other subscribe to nothing there), or -1 if it does not answer. */
long sentinel_fixture_sentinel_subscribers(sentinel_fixture *f, int i);

/* SIGKILL sentinel i (it stays down until stop), or SIGSTOP / SIGCONT it. 0 or -1.
 * Killed and paused sentinels are left out of the waits above. */
int sentinel_fixture_kill_sentinel(sentinel_fixture *f, int i);
int sentinel_fixture_pause_sentinel(sentinel_fixture *f, int i);
int sentinel_fixture_resume_sentinel(sentinel_fixture *f, int i);

#endif /* DLOCK_TEST_SENTINEL_FIXTURE_H */
