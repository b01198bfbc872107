/* SPDX-License-Identifier: MIT */
/* fault_proxy.h - a loopback TCP proxy between a client and a Redis server that injects
 * network faults on command: drop every connection, lose the reply of one request, delay
 * replies, black-hole all traffic (a partition). It is how "reply lost", "slow network"
 * and "partition" are tested without root or iptables.
 *
 * The proxy listens on a free 127.0.0.1 port and runs its own thread (a poll loop). Every
 * connection it accepts gets its own connection to the target: a TCP host:port or a unix
 * socket path. A dlock client pointed at fault_proxy_url() therefore has both of its
 * connections (command and subscriber) going through the proxy.
 *
 * The proxy reads the Redis protocol in both directions (RESP2: arrays of bulk strings one
 * way, any reply the other; inline commands count as one request per line), so faults are
 * placed on request and reply boundaries, never in the middle of a message, and the
 * counters count whole requests and replies as well as bytes.
 *
 * Faults are set at run time by the test, from any thread. Every setter returns once the
 * proxy thread has applied it: after fault_proxy_blackhole(p, true) returns, no further byte
 * is forwarded. fault_proxy_pass() clears every fault. Faults apply to connections open now
 * and to new ones alike.
 *
 * Thread safety: every call may be made from any thread, concurrently, except that
 * fault_proxy_stop() must not race with the other calls on the same proxy. SIGPIPE is never
 * raised (sends use MSG_NOSIGNAL).
 */
#ifndef DLOCK_TEST_FAULT_PROXY_H
#define DLOCK_TEST_FAULT_PROXY_H

#include <stdbool.h>
#include <stdint.h>

typedef struct fault_proxy fault_proxy;

/* Start a proxy to `target`, one of:
 *   "unix:///path/to/redis.sock" (a query string "?..." is ignored), "/path/to/redis.sock",
 *   "redis://host:port" (a "user:password@" part and a "/db" suffix are ignored), "host:port".
 * The target need not be up yet: each accepted connection connects to it then, and a client
 * whose target connection fails is closed at once.
 * Returns 0 and the proxy in *out, or -1 with a message on stderr, leaving *out untouched. */
int fault_proxy_start(const char *target, fault_proxy **out);

/* Close every connection and the listening socket, join the thread, free `p`. NULL: no-op. */
void fault_proxy_stop(fault_proxy *p);

/* "redis://127.0.0.1:PORT", owned by p. */
const char *fault_proxy_url(const fault_proxy *p);
/* The listening port. */
int fault_proxy_port(const fault_proxy *p);

/* Normal forwarding: clears blackhole, delay and an armed drop_after_request that has not
 * picked its connection yet. A connection already doomed by drop_after_request is still cut
 * at its reply. */
void fault_proxy_pass(fault_proxy *p);

/* Close every open connection now (both sides; bytes not yet forwarded are lost). New
 * connections are accepted as usual. Returns how many connections were closed. */
int fault_proxy_drop_all(fault_proxy *p);

/* "Reply lost". Arms a fault for the next connection that sends a request (in practice the
 * command connection: the subscriber connection sends only when a wait subscribes): its
 * next n requests are forwarded to the server, any later request bytes are discarded, the
 * replies to the first n-1 requests are forwarded, and when the first byte of the reply to
 * request n reaches the proxy (so the server has run it) the connection is closed on both
 * sides without forwarding any of that reply. Arming again replaces a fault that has not
 * picked its connection yet; n <= 0 disarms. fault_proxy_stats().replies_lost counts the
 * connections cut this way. */
void fault_proxy_drop_after_request(fault_proxy *p, int n);

/* Hold every server->client byte for ms before forwarding it (order is kept). 0: forward at
 * once (bytes already held still leave at their time). Applies to connections open now and
 * to new ones. */
void fault_proxy_delay_replies(fault_proxy *p, int64_t ms);

/* A partition. on: connections stay open and are read in both directions, but nothing is
 * forwarded (the bytes are discarded), and new connections are accepted but nothing they
 * send reaches the server. off: forwarding of new data resumes; a connection that lost
 * bytes while the partition lasted is closed at that moment (its byte streams no longer
 * match, as a TCP connection that timed out during a real partition would be gone); one
 * that lost nothing carries on. */
void fault_proxy_blackhole(fault_proxy *p, bool on);

typedef struct fault_proxy_stats {
    uint64_t accepted;        /* client connections accepted since start */
    uint64_t open;            /* client connections open now */
    uint64_t closed_by_fault; /* closed by drop_all, drop_after_request or blackhole off */
    uint64_t replies_lost;    /* connections cut by drop_after_request */
    uint64_t bytes_up;        /* client -> server bytes forwarded */
    uint64_t bytes_down;      /* server -> client bytes forwarded */
    uint64_t bytes_discarded; /* bytes read but never forwarded (either way) */
    uint64_t requests_up;     /* complete requests read from clients and forwarded */
    uint64_t replies_down;    /* complete replies read from the server and forwarded (pub/sub
                                 messages too) */
} fault_proxy_stats;

/* A consistent snapshot of the counters. */
fault_proxy_stats fault_proxy_stats_get(fault_proxy *p);

#endif /* DLOCK_TEST_FAULT_PROXY_H */
