/* SPDX-License-Identifier: MIT */
/* doctor_server.c — `dlock doctor`'s checks of what a server says of itself: its version,
 * its eviction policy, what a restart loses, its replicas and WAIT, its TLS certificate's
 * expiry, its clock against ours, the round trip and the script cache.
 *
 * Everything is read with INFO (one call: the server, memory, persistence and replication
 * sections), CONFIG GET, WAIT 0 (no replica asked for: answers at once), TIME and PING,
 * sent on the report's client (redis_lib.c), so they reach the node dlock itself uses: the
 * master the sentinels name, or in a Cluster the one node doctor_cluster.c connected that
 * client to. A Cluster's replica is asked only what matters once it is promoted (version,
 * eviction, persistence, TLS, clock): its clients are the master's until then. Nothing here
 * writes. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "doctor.h"

#define ROUND_TRIPS 50 /* PINGs timed for p50/p99: enough for a p99 of the order, quick */

/* The fix for a check whose INFO or CONFIG GET the ACL refused. */
static const char *const INFO_FIX =
    "run dlock doctor with the URL of a user that may run INFO and CONFIG GET (an admin)";

/* The setting name through CONFIG GET into buf; false (buf: the reason) if refused. */
static bool config_get(doctor_report *r, const char *name, char *buf, size_t size) {
    redis_lib_reply *rep = doctor_ask(r, buf, size, NULL, "CONFIG", "GET", name, NULL);
    if (!rep)
        return false;
    bool found = rep->type == DLOCK__REPLY_ARRAY && rep->elements == 2;
    snprintf(buf, size, "%s", found ? rep->element[1]->str : "not set");
    redis_lib_reply_free(rep);
    return found;
}

/* ---- the server ----------------------------------------------------------------------- */

static void check_version(doctor_report *r, const char *info) {
    char version[64], mode[32];
    if (!doctor_info_field(info, "redis_version", version, sizeof(version))) {
        doctor_add(r, "server", DOCTOR_WARN, INFO_FIX, "INFO names no redis_version");
        return;
    }
    if (!doctor_info_field(info, "redis_mode", mode, sizeof(mode)))
        snprintf(mode, sizeof(mode), "%s", r->sharded ? "cluster" : "standalone");
    int major = atoi(version);
    /* The client loaded every script at its connect (SCRIPT LOAD in its handshake), or it
     * would not have connected: Lua is there. */
    if (major < 7)
        doctor_add(r, "server", DOCTOR_WARN,
                   "upgrade to Redis 7.0 or later (ACL DRYRUN, sharded pub/sub, channel ACLs)",
                   "Redis %s (%s), Lua scripting on (dlock's %d scripts loaded); dlock is tested "
                   "against 7.0",
                   version, mode, (int)DLOCK__SCRIPT_COUNT);
    else
        doctor_add(r, "server", DOCTOR_OK, NULL,
                   "Redis %s (%s), Lua scripting on (dlock's %d scripts loaded)", version, mode,
                   (int)DLOCK__SCRIPT_COUNT);
}

static void check_eviction(doctor_report *r, const char *info) {
    char policy[64], maxmemory[32];
    if (!doctor_info_field(info, "maxmemory_policy", policy, sizeof(policy)) &&
        !config_get(r, "maxmemory-policy", policy, sizeof(policy))) {
        doctor_add(r, "maxmemory-policy", DOCTOR_WARN, INFO_FIX, "could not read it: %s", policy);
        return;
    }
    if (!doctor_info_field(info, "maxmemory", maxmemory, sizeof(maxmemory)))
        snprintf(maxmemory, sizeof(maxmemory), "?");
    if (strcmp(policy, "noeviction") == 0) {
        doctor_add(r, "maxmemory-policy", DOCTOR_OK, NULL,
                   "noeviction (maxmemory %s): no lock key is ever evicted; a full server "
                   "refuses new acquisitions (OOM) instead",
                   maxmemory);
        return;
    }
    /* Every lock key carries a TTL (its lease), so volatile-* evicts held locks too; the
     * allkeys-* policies also take fencing counters, permits and counts (no TTL). Even with
     * maxmemory 0 (no limit yet) the policy is wrong the day a limit is set. */
    bool volatile_policy = strncmp(policy, "volatile-", 9) == 0;
    doctor_add(r, "maxmemory-policy", DOCTOR_FAIL,
               "CONFIG SET maxmemory-policy noeviction (and CONFIG REWRITE, or set it in "
               "redis.conf); volatile-* is no way out: every lock key has a lease (TTL), so it "
               "may evict held locks",
               "%s (maxmemory %s): may evict %s while their holders still run", policy, maxmemory,
               volatile_policy ? "lock keys (each has a TTL, its lease)"
                               : "lock keys, fencing counters, semaphore permits and latch counts");
}

static void check_persistence(doctor_report *r, const char *info) {
    char aof[8], fsync[32], save[128];
    if (!doctor_info_field(info, "aof_enabled", aof, sizeof(aof))) {
        doctor_add(r, "persistence", DOCTOR_WARN, INFO_FIX, "INFO persistence could not be read");
        return;
    }
    const char *fix = "CONFIG SET appendonly yes, appendfsync everysec (or always), and make it "
                      "last in redis.conf";
    if (strcmp(aof, "1") == 0) {
        if (!config_get(r, "appendfsync", fsync, sizeof(fsync))) {
            doctor_add(r, "persistence", DOCTOR_OK, NULL,
                       "append-only file on (appendfsync not readable: %s)", fsync);
        } else if (strcmp(fsync, "always") == 0) {
            doctor_add(r, "persistence", DOCTOR_OK, NULL,
                       "append-only file, appendfsync always: a restart loses nothing "
                       "acknowledged");
        } else if (strcmp(fsync, "everysec") == 0) {
            doctor_add(r, "persistence", DOCTOR_OK, NULL,
                       "append-only file, appendfsync everysec: a restart or crash loses "
                       "about the last second of acquisitions and releases");
        } else {
            doctor_add(r, "persistence", DOCTOR_WARN, "CONFIG SET appendfsync everysec",
                       "append-only file, appendfsync %s: a crash loses what the kernel had "
                       "not written yet (up to ~30 s)",
                       fsync);
        }
        return;
    }
    if (!config_get(r, "save", save, sizeof(save))) {
        doctor_add(r, "persistence", DOCTOR_WARN, fix,
                   "no append-only file; snapshots unknown (%s): a restart loses every lock "
                   "taken since the last snapshot, if any",
                   save);
    } else if (save[0] == '\0') {
        doctor_add(r, "persistence", DOCTOR_WARN, fix,
                   "none (no append-only file, no snapshots): a restart frees every lock while "
                   "its holders still work, restarts fencing tokens at 1, and loses semaphores "
                   "and latches");
    } else {
        doctor_add(r, "persistence", DOCTOR_WARN, fix,
                   "snapshots only (save \"%s\"): a restart loses every lock, release and "
                   "fencing token since the last snapshot",
                   save);
    }
}

/* "sync_replicas=K" from the URL's query, or "auto" (the default). */
static void url_sync_replicas(const doctor_report *r, char *buf, size_t size) {
    const char *q = strchr(r->url_shown, '?');
    const char *at = q ? strstr(q, "sync_replicas=") : NULL;
    if (!at || (at[-1] != '?' && at[-1] != '&')) {
        snprintf(buf, size, "auto");
        return;
    }
    at += strlen("sync_replicas=");
    snprintf(buf, size, "%.*s", (int)strcspn(at, "&#"), at);
}

static void check_replicas(doctor_report *r, const char *info) {
    char role[16], slaves[16], sync[32], err[256];
    if (!doctor_info_field(info, "role", role, sizeof(role))) {
        doctor_add(r, "replicas", DOCTOR_WARN, INFO_FIX, "INFO replication could not be read");
        return;
    }
    if (strcmp(role, "master") != 0) {
        doctor_add(r, "replicas", DOCTOR_FAIL,
                   "point the URL at the master, its sentinels (redis-sentinel://) or the "
                   "cluster (redis-cluster://)",
                   "the server is a %s: it refuses every acquisition (READONLY)", role);
        return;
    }
    long replicas =
        doctor_info_field(info, "connected_slaves", slaves, sizeof(slaves)) ? atol(slaves) : 0;
    url_sync_replicas(r, sync, sizeof(sync));
    bool refused = false;
    redis_lib_reply *rep = doctor_ask(r, err, sizeof(err), &refused, "WAIT", "0", "0", NULL);
    bool wait_ok = rep && rep->type == DLOCK__REPLY_INTEGER;
    redis_lib_reply_free(rep);
    if (!wait_ok && !refused)
        snprintf(err, sizeof(err), "%s", rep ? "not an integer" : err);

    char what[256];
    if (strcmp(sync, "0") == 0)
        snprintf(what, sizeof(what), "sync_replicas=0: no WAIT is sent");
    else if (strcmp(sync, "auto") == 0)
        snprintf(what, sizeof(what), "sync_replicas=auto: %s",
                 replicas > 0 ? "each write waits for as many replicas as the master had"
                              : "no WAIT while the master is never seen with a replica");
    else
        snprintf(what, sizeof(what), "sync_replicas=%s: each write waits for %s replica(s)", sync,
                 sync);

    if (!wait_ok) {
        doctor_status status = strcmp(sync, "0") == 0 ? DOCTOR_WARN : DOCTOR_FAIL;
        if (strcmp(sync, "auto") == 0 && replicas == 0)
            status = DOCTOR_WARN;
        doctor_add(r, "replicas", status,
                   "grant +wait, or put ?sync_replicas=0 in the URL if this Redis (managed?) has "
                   "no WAIT",
                   "master with %ld replica(s); WAIT refused (%s); %s", replicas, err, what);
        return;
    }
    long asked = strcmp(sync, "auto") == 0 || strcmp(sync, "0") == 0 ? 0 : atol(sync);
    if (asked > replicas) {
        doctor_add(r, "replicas", DOCTOR_FAIL,
                   "lower sync_replicas in the URL to at most the replicas the master has",
                   "master with %ld replica(s), WAIT works; %s, more than there are: every "
                   "acquisition is given back and times out",
                   replicas, what);
        return;
    }
    doctor_add(r, "replicas", replicas == 0 ? DOCTOR_WARN : DOCTOR_OK,
               replicas == 0 ? "add a replica (and sentinels) if a lost server must not lose the "
                               "locks; dlock then waits for it (sync_replicas)"
                             : NULL,
               "master with %ld replica(s), WAIT works; %s", replicas, what);
}

/* ---- TLS -------------------------------------------------------------------------------- */

#define CERT_WARN_DAYS 30 /* time enough to renew a certificate without a rush */

typedef struct tls_op {
    dlock__op op;
    int64_t seconds_left;
} tls_op;

static void tls_start(dlock__op *op) {
    tls_op *ask = DLOCK__CONTAINER_OF(op, tls_op, op);
    int rc = dlock__client_tls_seconds_left(op->client, &ask->seconds_left);
    dlock__op_complete(op, rc == DLOCK_OK ? rc : dlock__op_fail(op, rc, "%s", dlock_last_error()));
}

static void check_tls(doctor_report *r) {
    tls_op ask;
    memset(&ask, 0, sizeof(ask));
    dlock__op_init(&ask.op, r->c, tls_start);
    int rc = dlock__op_run(&ask.op);
    if (rc == DLOCK_EINVAL)
        return; /* no TLS: nothing to expire */
    if (rc != DLOCK_OK) {
        doctor_add(r, "tls certificate", DOCTOR_WARN, NULL, "not checked: %s", dlock_last_error());
        return;
    }
    time_t until = time(NULL) + (time_t)ask.seconds_left;
    struct tm tm;
    char date[32] = "?";
    if (gmtime_r(&until, &tm))
        strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", &tm);
    int64_t days = ask.seconds_left / 86400;
    const char *fix = "renew the server's certificate: once it expires, clients that verify it "
                      "refuse to connect";
    if (ask.seconds_left <= 0)
        doctor_add(r, "tls certificate", DOCTOR_FAIL, fix,
                   "the server's certificate expired on %s (this client does not verify it)", date);
    else if (days < CERT_WARN_DAYS)
        doctor_add(r, "tls certificate", DOCTOR_WARN, fix,
                   "the server's certificate expires in %" PRId64 " day(s), on %s", days, date);
    else
        doctor_add(r, "tls certificate", DOCTOR_OK, NULL,
                   "the server's certificate expires in %" PRId64 " days, on %s", days, date);
}

/* ---- clock, round trips, scripts -------------------------------------------------------- */

static int64_t wall_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void check_clock(doctor_report *r) {
    char err[256];
    int64_t before = wall_us();
    redis_lib_reply *t = doctor_ask(r, err, sizeof(err), NULL, "TIME", NULL);
    int64_t after = wall_us();
    if (!t || t->type != DLOCK__REPLY_ARRAY || t->elements != 2) {
        doctor_add(r, "clock", DOCTOR_WARN, "grant +time", "TIME failed: %s",
                   t ? "unexpected reply" : err);
        redis_lib_reply_free(t);
        return;
    }
    int64_t server =
        strtoll(t->element[0]->str, NULL, 10) * 1000000 + strtoll(t->element[1]->str, NULL, 10);
    redis_lib_reply_free(t);
    /* the server read its clock somewhere within the round trip: compare with its middle */
    int64_t offset_ms = (server - (before + after) / 2) / 1000;
    int64_t margin_ms = (after - before) / 2000 + 1;
    /* Leases run on the server's clock alone (PEXPIRE, and TIME inside scripts), so an
     * offset misleads only people reading timestamps: a warning, never a failure. */
    if (offset_ms > 1000 || offset_ms < -1000)
        doctor_add(r, "clock", DOCTOR_WARN,
                   "synchronise both clocks (NTP); leases use the server's clock only, so locks "
                   "are safe, but logs disagree",
                   "the server's clock is %+" PRId64 " ms from ours (+/- %" PRId64 " ms)",
                   offset_ms, margin_ms);
    else
        doctor_add(r, "clock", DOCTOR_OK, NULL,
                   "the server's clock is %+" PRId64 " ms from ours (+/- %" PRId64 " ms)",
                   offset_ms, margin_ms);
}

static int compare_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void check_round_trip(doctor_report *r) {
    int64_t us[ROUND_TRIPS];
    char err[256];
    for (int i = 0; i < ROUND_TRIPS; i++) {
        int64_t start = wall_us();
        redis_lib_reply *pong = doctor_ask(r, err, sizeof(err), NULL, "PING", NULL);
        if (!pong) {
            doctor_add(r, "round trip", DOCTOR_FAIL, "grant +ping", "PING failed: %s", err);
            return;
        }
        redis_lib_reply_free(pong);
        us[i] = wall_us() - start;
    }
    qsort(us, ROUND_TRIPS, sizeof(us[0]), compare_i64);
    int64_t p50 = us[ROUND_TRIPS / 2], p99 = us[ROUND_TRIPS * 99 / 100];
    int64_t renew_ms = dlock__client_watchdog_ms(r->c) / 3;
    /* A renewal must land well within the third of the lease it has. */
    bool slow = p99 / 1000 > renew_ms / 10;
    doctor_add(r, "round trip", slow ? DOCTOR_WARN : DOCTOR_OK,
               slow ? "bring the client closer to Redis, or lengthen the lease (watchdog_ms)"
                    : NULL,
               "p50 %.2f ms, p99 %.2f ms over %d PINGs (renewals every %" PRId64 " ms)",
               (double)p50 / 1000.0, (double)p99 / 1000.0, ROUND_TRIPS, renew_ms);
}

static void check_script_cache(doctor_report *r, const char *info) {
    char cached[32], memory[32];
    if (!doctor_info_field(info, "number_of_cached_scripts", cached, sizeof(cached))) {
        doctor_add(r, "script cache", DOCTOR_WARN, INFO_FIX, "INFO memory could not be read");
        return;
    }
    if (!doctor_info_field(info, "used_memory_scripts_human", memory, sizeof(memory)) &&
        !doctor_info_field(info, "used_memory_scripts_eval", memory, sizeof(memory)))
        snprintf(memory, sizeof(memory), "?");
    long n = atol(cached);
    /* The client loads every script at connect and sends EVALSHA; after a SCRIPT FLUSH it
     * sends the text (EVAL) once and goes on. Fewer than dlock's own means someone flushes. */
    doctor_add(r, "script cache", n >= DLOCK__SCRIPT_COUNT ? DOCTOR_OK : DOCTOR_WARN,
               n >= DLOCK__SCRIPT_COUNT ? NULL
                                        : "find who runs SCRIPT FLUSH: each flush costs every "
                                          "client one EVAL per script",
               "%ld script(s) cached (%s), dlock's %d among them since this connect", n, memory,
               (int)DLOCK__SCRIPT_COUNT);
}

/* ---- all of them ------------------------------------------------------------------------ */

void doctor_check_server(doctor_report *r) {
    char err[256];
    bool refused = false;
    redis_lib_reply *info = doctor_ask(r, err, sizeof(err), &refused, "INFO", "server", "memory",
                                       "persistence", "replication", NULL);
    const char *text = info && info->type == DLOCK__REPLY_STRING ? info->str : "";
    if (!info)
        doctor_add(r, "info", DOCTOR_WARN, INFO_FIX,
                   "INFO %s (%s): the checks that read it cannot tell",
                   refused ? "refused" : "failed", err);
    check_version(r, text);
    check_eviction(r, text);
    check_persistence(r, text);
    if (!r->replica_node)
        check_replicas(r, text);
    /* a Cluster's client keeps a connection per node, none to ask alone: doctor_cluster.c
     * asks each node through a client of its own */
    if (!dlock__client_channels_sharded(r->c))
        check_tls(r);
    check_clock(r);
    if (!r->replica_node) {
        check_round_trip(r);
        check_script_cache(r, text);
    }
    redis_lib_reply_free(info);
}
