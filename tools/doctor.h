/* SPDX-License-Identifier: MIT */
/* doctor.h — `dlock doctor`: the report its checks fill and the checks themselves.
 *
 *   cmd_doctor.c       the command line, the order of the checks, the text and JSON output
 *   doctor_cluster.c   (Cluster) the slot map, then every master and replica asked on its
 *                      own, each node's report merged into one line per check
 *   doctor_server.c    what a server says of itself: version, eviction, persistence,
 *                      replicas and WAIT, TLS, clock, round trips, script cache
 *   doctor_acl.c       what the user may do: ACL DRYRUN of every command the scripts and the
 *                      client send, on the object's keys and channels
 *   doctor_sentinel.c  (Sentinel) how many sentinels know the master, and do they agree
 *   doctor_report.c    the report: a check's line, a command for a check, the merge
 * Calls go one way, down that list: cmd_doctor.c calls the checks, the checks call the
 * report (doctor_cluster.c also runs doctor_server.c's and doctor_acl.c's on each node).
 *
 * Every check only reads: INFO, CONFIG GET, ROLE, TIME, PING, WAIT 0, CLUSTER SLOTS,
 * COMMAND INFO, ACL WHOAMI / DRYRUN (which answers without running anything). A check that
 * cannot read what it needs (the ACL refuses INFO, an old server lacks ACL DRYRUN) says so as
 * a warning: doctor never guesses a pass or a failure. */
#ifndef DLOCK_CLI_DOCTOR_H
#define DLOCK_CLI_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>

#include "dlock.h"
#include "redis_lib.h"

typedef enum doctor_status {
    DOCTOR_OK,
    DOCTOR_WARN, /* dlock works, but something deserves a look (or could not be checked) */
    DOCTOR_FAIL, /* something dlock needs is missing or unsafe: doctor exits 1 */
} doctor_status;

typedef struct doctor_check {
    char *name;
    doctor_status status;
    char *detail; /* what it saw */
    char *fix;    /* what to do; "" when nothing */
} doctor_check;

typedef struct doctor_report {
    dlock_client *c;
    const char *object_name; /* --name: the namespace the ACL is checked under */
    const char *acl_user;    /* --user, or NULL: the URL's (ACL WHOAMI) */
    const char *url;         /* the URL in force (cli_url()): doctor_cluster.c makes each
                                node's from it; never printed */
    const char *url_shown;   /* the URL, password masked */
    bool sentinel_url;       /* redis-sentinel:// or rediss-sentinel:// */
    bool sharded;            /* the deployment's channels are sharded (a Cluster) */
    bool replica_node;       /* c is one replica of a Cluster: what only a master's clients
                                see (replicas and WAIT, round trip, script cache) is not asked */
    doctor_check *checks;
    size_t count, cap;
    bool out_of_memory;
} doctor_report;

/* ---- the report (doctor_report.c) ---- */

/* Adds a check; fix may be NULL. Texts are copied. */
void doctor_add(doctor_report *r, const char *name, doctor_status status, const char *fix,
                const char *detail_fmt, ...) __attribute__((format(printf, 5, 6)));

/* One command's reply through the client (redis_lib_call), words NULL-terminated. NULL and
 * err (size bytes) set to the reason on failure, with refused (when not NULL) telling
 * whether it was the ACL's NOPERM. */
redis_lib_reply *doctor_ask(doctor_report *r, char *err, size_t size, bool *refused, ...);

/* The value of field in an INFO text ("redis_version"), copied into buf; false if absent. */
bool doctor_info_field(const char *info, const char *field, char *buf, size_t size);

/* Frees the checks (not r). */
void doctor_report_free(doctor_report *r);

/* Adds to into one line per check the n node reports ran, in the order they ran them: its
 * worst status, the fix of the worst, and the nodes (labels[i] names nodes[i]) grouped by
 * what they saw, worst first: "127.0.0.1:7002 (master): allkeys-lru ...; all 5 nodes: ..."
 * reads as "all N nodes: ..." when every node saw the same ("all N nodes asked" when only
 * some ran the check). */
void doctor_merge(doctor_report *into, const doctor_report *nodes, const char *const *labels,
                  size_t n);

/* ---- the checks, in the order they print ---- */

void doctor_check_server(doctor_report *r);
void doctor_check_acl(doctor_report *r);
void doctor_check_sentinels(doctor_report *r); /* nothing unless r->sentinel_url */
/* (Cluster) slot coverage and sharded pub/sub, then doctor_check_server and doctor_check_acl
 * on every master and replica of the slot map, each through a client of its own. */
void doctor_check_cluster(doctor_report *r);

#endif
