/* SPDX-License-Identifier: MIT */
/* sentinel.h — Redis Sentinel: the URL that names a master through its sentinels
 * (url_sentinel.c) and the resolver that finds that master and follows its failovers
 * (sentinel.c). For the topology floor and the floors above it (topology.h). */
#ifndef DLOCK_SENTINEL_H
#define DLOCK_SENTINEL_H

#include "topology/topology.h"

/* ---- the URL (url_sentinel.c) ----------------------------------------------------------- */

/*   redis-sentinel://[user:password@]host[:port][,host[:port]...]/MASTER[/db]
 *                    [?sentinel_user=U&sentinel_password=P&...]
 *   rediss-sentinel://...   the same over TLS, to the sentinels and to the data nodes
 *
 * user:password and db are the data nodes'; sentinel_user / sentinel_password are the
 * sentinels' (AUTH on every sentinel connection). A sentinel's port defaults to 26379.
 * Every other query parameter is the data nodes' and the sentinels' alike (the TLS files,
 * for instance): it is read by dlock__url_parse as on a redis:// or rediss:// URL.
 * At most DLOCK__SENTINELS_MAX sentinels: the client keeps a connection to each. */
#define DLOCK__SENTINELS_MAX 16
typedef struct dlock__sentinel_url {
    char *master_name;
    /* the data nodes: credentials, db and the query's other settings; host NULL and port 0
     * (the master's address is the resolver's answer, never in the URL) */
    dlock__endpoint data;
    dlock__endpoint *sentinels; /* count of them, in the URL's order, sentinel credentials */
    size_t count;
} dlock__sentinel_url;

/* True when url has the scheme redis-sentinel:// or rediss-sentinel://. */
bool dlock__url_is_sentinel(const char *url);

/* Parses a sentinel URL into out (strings owned by out). DLOCK_EINVAL with the reason in
 * err (never a password), DLOCK_ENOMEM; out is then empty. */
int dlock__sentinel_url_parse(const char *url, dlock__sentinel_url *out, char *err, size_t errlen);
void dlock__sentinel_url_free(dlock__sentinel_url *u);

/* ---- the resolver (sentinel.c) ---------------------------------------------------------- */

/* Finds the master through the sentinels for the links attached to it, and follows its
 * failovers (sentinel.c says how). Loop thread only, except new and free. */
typedef struct dlock__sentinel dlock__sentinel;

/* A resolver for the sentinels and master of url; takes what url owns (url is left empty,
 * also on failure: DLOCK_ENOMEM). The data nodes' settings (credentials, db, TLS) are the
 * client's endpoint, into which the client moves url->data first. */
int dlock__sentinel_new(dlock__sentinel_url *url, dlock__sentinel **out);
/* link (the command or the subscriber link of one client; two at most) asks s where to
 * connect at every attempt, and is dropped when a failover moves the master. Before the
 * link starts. */
void dlock__sentinel_attach(dlock__sentinel *s, dlock__link *link);
const char *dlock__sentinel_master_name(const dlock__sentinel *s);
/* Subscribes to +switch-master on every sentinel of the URL, one connection each. */
void dlock__sentinel_start(dlock__sentinel *s);
/* True, once, when link's latest connection went to another master than its previous
 * one: a failover happened, and what the client holds must be confirmed on the new one. */
bool dlock__sentinel_take_moved(dlock__sentinel *s, const dlock__link *link);
/* Closes its own connections (on the loop thread, before the scheduler closes); the
 * attached links are the client's to close. NULL: no-op. */
void dlock__sentinel_close(dlock__sentinel *s);
/* Asks every sentinel of the URL where the master is, apart from the resolver (the client
 * goes on as before), and calls done once with each one's answer (dlock_int.h), from a
 * timer after all answered or connect_timeout_ms, or from dlock__sentinel_close. One survey
 * at a time: DLOCK_EINVAL while one runs; DLOCK_ECLOSED, DLOCK_ENOMEM. Loop thread. */
int dlock__sentinel_survey(dlock__sentinel *s, dlock__sentinel_survey_fn done, void *arg);
void dlock__sentinel_free(dlock__sentinel *s); /* after close; NULL: no-op */

#endif
