/* SPDX-License-Identifier: MIT */
/* dlock_int.h — what a primitive may use of the core.
 *
 * A primitive (src/lock, src/semaphore, ...) includes this header and no other header of
 * the core, never <ev.h> nor hiredis. It asks the core for four things:
 *   - run a script or a command and get its reply      (dlock__script, dlock__command)
 *   - wait for an object, woken by its channel or a hint (dlock__wait_*)
 *   - keep a lease alive while it is held              (dlock__lease_*)
 *   - carry a call from the user's thread to the loop   (dlock__op_*)
 * Everything here runs on the client's loop thread unless it says otherwise. */
#ifndef DLOCK_INT_H
#define DLOCK_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dlock/client.h"
#include "dlock/error.h"
#include "dlock_scripts.h" /* generated: enum dlock__script_id, one id per src/<folder>/<op>.lua */

#define DLOCK__CONTAINER_OF(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* ---- timers (sched.c) ------------------------------------------------------------------ */

/* A timer of the client's scheduler, embedded in its owner's struct. Primitives wait for
 * objects through the waiting engine below; a primitive that waits for no object (a
 * composite's answer budget) uses the three dlock__client_timer_* calls. */
typedef struct dlock__timer dlock__timer;
typedef void (*dlock__timer_fn)(dlock__timer *t, void *arg);
struct dlock__timer {
    int64_t due_ms;
    uint64_t seq;
    size_t heap_index; /* SIZE_MAX when not scheduled */
    dlock__timer_fn fn;
    void *arg;
};

/* client_timer.c, loop thread only: start restarts; a closing client's timers never fire. */
void dlock__client_timer_init(dlock__timer *t, dlock__timer_fn fn, void *arg);
void dlock__client_timer_start(dlock_client *c, dlock__timer *t, int64_t delay_ms);
void dlock__client_timer_stop(dlock_client *c, dlock__timer *t);

/* ---- memory (alloc.c) ------------------------------------------------------------------ */

void *dlock__malloc(size_t n);
void *dlock__calloc(size_t count, size_t n);
void *dlock__realloc(void *p, size_t n);
void dlock__free(void *p);
char *dlock__strdup(const char *s);
char *dlock__strndup(const char *s, size_t n);

/* ---- errors (error.c) ------------------------------------------------------------------ */

/* Sets the calling thread's dlock_last_error() text (printf-style) and returns err, so a
 * failure path reads `return dlock__fail(DLOCK_EINVAL, "name is empty");`. */
int dlock__fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dlock__set_last_error(const char *text);

/* The size of every buffer an error's detail is kept in (an op's, a link's, the thread's
 * dlock_last_error()): room for the longest text the code builds from bounded parts (a URL
 * with a 255-byte host name, a Redis error line, the hint after them). A longer one (a
 * 64 KB object name, a user name without bound) loses words from its middle, never its end:
 * the texts end with what to do. */
#define DLOCK__ERROR_TEXT_SIZE 1024

/* Copies text into buf (size bytes); a text that does not fit keeps its start and its end
 * and loses its middle, cut at spaces, to " ... ". */
void dlock__text_fit(char *buf, size_t size, const char *text);
/* vsnprintf into buf, cut as dlock__text_fit cuts when too long. */
void dlock__vformat_fit(char *buf, size_t size, const char *fmt, va_list ap);
void dlock__format_fit(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- time ------------------------------------------------------------------------------ */

int64_t dlock__now_ms(void); /* CLOCK_MONOTONIC */
int64_t dlock__now_us(void);

/* ---- randomness (random.c) ------------------------------------------------------------ */

/* n random bytes from the kernel (getrandom), for ids that must not collide. */
void dlock__random_bytes(void *buf, size_t n);
/* 64 random bits, for jitter: reconnect backoff, a primitive's retry delays. */
uint64_t dlock__random_u64(void);

/* ---- the client's settings a primitive reads ------------------------------------------- */

int64_t dlock__client_watchdog_ms(const dlock_client *c);
/* Which Redis the client talks to, as a stable string ("unix:/path/3", "host:port/0"):
 * the same for every client of one server and database, in every process. */
const char *dlock__client_endpoint(const dlock_client *c);
int64_t dlock__client_fair_wait_ms(const dlock_client *c);
/* dlock_options.max_hold_ms: 0, or how long a watchdog hold may be renewed. */
int64_t dlock__client_max_hold_ms(const dlock_client *c);
/* Where the commands on key go now, for the tool's report: the address of the node that
 * serves key (the master a Sentinel named; in Cluster the owner of key's slot), or "not
 * connected". Never credentials. Loop thread only. Returns buf. */
const char *dlock__client_node_of(dlock_client *c, const char *key, char *buf, size_t size);
/* What the client's topology allows, asked by a primitive or the tool instead of "is this a
 * Cluster" (the answer is the topology's to give):
 * - absent keys are free: a script may declare keys that usually do not exist (the lock's
 *   hand-off marker and queue) at no cost. Not in a Cluster, where a declared key the node
 *   lacks during a slot migration sends the script elsewhere or refuses it until the
 *   migration ends;
 * - channels sharded: a channel lives on its slot's shard (SPUBLISH, SSUBSCRIBE, PUBSUB
 *   SHARDNUMSUB), not on every node (PUBLISH, SUBSCRIBE, PUBSUB NUMSUB);
 * - keys move: a key may leave its server while held (a Cluster's slot migrates). A call
 *   that declares only its first key (DLOCK__CMD_FIRST_KEY_ONLY) may then be refused whole
 *   by a node one of the others has left, or find an undeclared one absent because it
 *   moved, not because it is gone (the watchdog's batches, renew.c).
 * route.c answers them. */
bool dlock__client_absent_keys_are_free(const dlock_client *c);
bool dlock__client_channels_sharded(const dlock_client *c);
bool dlock__client_keys_move(const dlock_client *c);
/* Room for a server's address as the library writes it, "host:port" or "[v6]:port": a host
 * name may be 255 bytes (DNS), a port 5 digits (dlock__endpoint_describe; a unix socket's
 * path is shorter). Every buffer an address is written into is at least this long, so a
 * long host name is never cut inside a message. */
#define DLOCK__ADDRESS_SIZE (255 + 2 + 1 + 5 + 1)

/* What one sentinel of a Sentinel URL says of the master, for the tool's report (dlock
 * doctor): named 1 with its address in master, 0 (it knows no such master), or -1 (no
 * answer: why). Never credentials. */
typedef struct dlock__sentinel_answer {
    char sentinel[DLOCK__ADDRESS_SIZE]; /* the sentinel, as the URL names it: "host:port" */
    int named;
    char master[DLOCK__ADDRESS_SIZE];
    char why[DLOCK__ADDRESS_SIZE + 240];
} dlock__sentinel_answer;
typedef void (*dlock__sentinel_survey_fn)(dlock_client *c, const dlock__sentinel_answer *answers,
                                          size_t count, void *arg);
/* A Sentinel client asks every sentinel of its URL at once where the master is, each on a
 * short-lived connection, within connect_timeout_ms, and calls done once, on the loop
 * thread and never inside this call, with each sentinel's answer in the URL's order (count
 * 0: out of memory). The client itself goes on as before. DLOCK_EINVAL when the client has
 * no sentinels or a survey already runs; DLOCK_ECLOSED, DLOCK_ENOMEM. Loop thread only. */
int dlock__client_sentinel_survey(dlock_client *c, dlock__sentinel_survey_fn done, void *arg);

/* ---- URLs, for the tool as for the library (base/url.c, topology/url_cluster.c) ---------- */

/* url as it may be printed or logged: the password in userinfo and any password= query
 * value replaced by "***" (userinfo without a ':' too: some clients read it as a
 * password). Works on any string, a malformed URL included; truncated to fit buf.
 * Returns buf. The one function through which the library and the tool show a URL. */
const char *dlock__url_masked(const char *url, char *buf, size_t size);
/* The plain URL of one node of the cluster url names, redis[s]://[userinfo]host:port[?query]
 * with url's credentials, TLS and query: for the tool, which asks every node (dlock doctor)
 * without reading a URL's parts. *out is a new string (free it with dlock__free).
 * DLOCK_EINVAL when url is no cluster URL or host:port no address; DLOCK_ENOMEM. */
int dlock__cluster_node_url(const char *url, const char *host, int port, char **out);
/* Seconds until the certificate the server presented on the command connection expires
 * (negative: expired), for the tool's report. DLOCK_EINVAL on a URL without TLS, DLOCK_ECONN
 * when no TLS session is up (in a Cluster: the client keeps no single one). Loop thread. */
int dlock__client_tls_seconds_left(dlock_client *c, int64_t *out);
/* A line for the application's log_cb (log.c); nothing when it set none. Any layer. */
void dlock__log(dlock_client *c, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* True once dlock_client_free() has begun: the loop runs nothing more, and the watchdog
 * has forgotten every lease. A handle destroyed then touches nothing of the client. */
bool dlock__client_closing(const dlock_client *c);

/* ---- state shared by every handle of one object (client.c) ----------------------------- */

/* Two handles for the same object on one client must agree on what each owner holds, so
 * a primitive keeps that in state shared by name: the first handle to ask creates it
 * (size bytes, zeroed), the last to put it back destroys it (destroy, then the memory).
 * Loop thread only. NULL on ENOMEM. */
void *dlock__shared_get(dlock_client *c, const char *key, size_t size, void (*destroy)(void *));
void dlock__shared_put(dlock_client *c, void *state);

/* ---- integers as text (decimal.c) ------------------------------------------------------- */

/* Writes v in decimal and a NUL into buf, which has room for DLOCK__DECIMAL_MAX bytes
 * ("-9223372036854775808" and "18446744073709551615" fit); returns the length written, as
 * snprintf's "%lld" / "%" PRIu64 would, at a fraction of their cost. */
#define DLOCK__DECIMAL_MAX 21
size_t dlock__decimal(char *buf, long long v);
size_t dlock__decimal_u64(char *buf, uint64_t v);

/* ---- owners (owner.c) ------------------------------------------------------------------ */

/* "<client-id>:<owner>", the owner field of REDIS_LAYOUT.md. buf must hold
 * DLOCK__OWNER_FIELD_MAX bytes; returns the length written. */
#define DLOCK__OWNER_FIELD_MAX (36 + 1 + 20 + 1)
size_t dlock__owner_field(const dlock_client *c, uint64_t owner, char *buf);
/* Whether field (len bytes, not terminated) is the field of one of c's owners: it starts with
 * c's id and a ':' (any suffix after the owner, as the read-write lock's ":write", too). */
bool dlock__owner_field_is_ours(const dlock_client *c, const char *field, size_t len);

/* The Redisson key names of REDIS_LAYOUT.md, in a new string the caller frees:
 * prefixed(p, N) = "p:{N}" ("p:N" when N holds a '{'), suffixed(N, s) = "{N}:s" ("N:s"). */
char *dlock__name_prefixed(const char *prefix, const char *name);
char *dlock__name_suffixed(const char *name, const char *suffix);

/* DLOCK_EINVAL (with a last-error text) unless name is a usable object name. */
int dlock__check_name(const char *name);

/* ---- replies (reply.c) ----------------------------------------------------------------- */

/* A server reply, valid only inside the callback that receives it. */
typedef struct redisReply dlock__reply;
enum dlock__reply_type {
    DLOCK__REPLY_STRING = 1,
    DLOCK__REPLY_ARRAY = 2,
    DLOCK__REPLY_INTEGER = 3,
    DLOCK__REPLY_NIL = 4,
    DLOCK__REPLY_STATUS = 5,
    DLOCK__REPLY_ERROR = 6,
};
int dlock__reply_type(const dlock__reply *r);
long long dlock__reply_int(const dlock__reply *r);                /* INTEGER, or a decimal STRING */
const char *dlock__reply_str(const dlock__reply *r, size_t *len); /* STRING/STATUS/ERROR */
size_t dlock__reply_count(const dlock__reply *r);                 /* ARRAY elements */
const dlock__reply *dlock__reply_at(const dlock__reply *r, size_t i);

/* ---- strict readers of counts (reply.c; the op's texts in op_error.c) ------------------ */

/* The integer in r: an INTEGER reply, or a STRING that is entirely a base-10 int64 as
 * Redis writes one (optional '-', no leading zero, no space, no '+', in range). DLOCK_OK
 * and *out, else DLOCK_EREDIS with *out untouched. No last-error text: the caller knows
 * what the value was meant to be. */
int dlock__reply_int64(const dlock__reply *r, int64_t *out);

/* What r is, for an error text: `nothing`, `the integer 5`, `the string "abc"` (cut to 40
 * bytes, unprintable bytes as '?'), `an array of 2 elements`. */
void dlock__reply_describe(const dlock__reply *r, char *buf, size_t size);

/* For an op reading the count kept under key, e.g. ("latch", "N"): the reply's integer in
 * *out (nil: 0 when nil_is_zero), or DLOCK_EREDIS with the op's detail "latch N holds the
 * string "abc", not an integer count". */
struct dlock__op;
int dlock__op_read_count(struct dlock__op *op, const dlock__reply *r, bool nil_is_zero,
                         const char *what, const char *key, int64_t *out);

/* DLOCK_EREDIS with the op's detail "<what> <key>: unexpected reply from Redis: <r>", for
 * a script reply that is not the shape its script promises. */
int dlock__op_bad_reply(struct dlock__op *op, const dlock__reply *r, const char *what,
                        const char *key);

/* ---- operations: a user call carried to the loop thread (submit.c) --------------------- */

/* An op is one public call in flight. The blocking face keeps it on the caller's stack and
 * waits for it; the async face allocates it and gets `complete` on the loop thread. A
 * primitive embeds a dlock__op first in its own op struct. */
typedef struct dlock__op dlock__op;
typedef void (*dlock__op_fn)(dlock__op *op);
typedef struct dlock__handle dlock__handle;
struct dlock__op {
    dlock__op *next; /* submit queue; once started, submit.c's list of completions to post */
    dlock_client *client;
    dlock__handle *handle; /* the primitive's handle the op works on, or NULL */
    dlock__op_fn start;    /* loop thread: begin the work; ends with dlock__op_complete() */
    dlock__op_fn complete; /* loop thread: the async face's callback (set by the primitive) */
    int status;
    char error_text[DLOCK__ERROR_TEXT_SIZE]; /* detail for dlock_last_error() */
    void *blocking_waiter; /* submit.c's private completion for the blocking face */
    bool counted;          /* a call in calls_in_flight until it completes (submit.c) */
};

void dlock__op_init(dlock__op *op, dlock_client *c, dlock__op_fn start);

/* Blocking face, any thread but the loop thread: run op and wait for it. Returns its
 * status and sets the caller's dlock_last_error(). DLOCK_EDEADLK on the loop thread,
 * DLOCK_ECLOSED on a closing client (op never starts). */
int dlock__op_run(dlock__op *op);

/* Async face: queue op to start on the next loop turn; op->complete runs exactly once.
 * DLOCK_ECLOSED on a closing client or a freed handle (then nothing runs). Safe from any
 * thread. */
int dlock__op_submit(dlock__op *op);

/* Internal work carried to c's loop thread, not a call (a handle's free made on the loop
 * thread, a member's answer carried home): queued like dlock__op_submit's ops and behind
 * them, but not counted in calls_in_flight, since no caller waits for its result. Its
 * start does the whole work and never completes it; op->complete runs instead of start
 * only if the client closes before it started. DLOCK_ECLOSED as dlock__op_submit (then
 * nothing runs). Any thread. */
int dlock__op_post(dlock__op *op);

/* Loop thread: op is over. For the async face op->complete runs now, with the loop
 * thread's dlock_last_error() set to the op's detail. The op may be freed by complete. */
void dlock__op_complete(dlock__op *op, int status);

/* Record a failure's detail in op (printf-style; op_error.c); returns err. */
int dlock__op_fail(dlock__op *op, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A primitive calls the user's own callbacks (the lost callback) between these, so
 * that dlock_client_free() called from inside one is refused instead of freeing the
 * client under the caller's feet. */
void dlock__user_callback_enter(dlock_client *c);
void dlock__user_callback_leave(dlock_client *c);
/* True on a thread that may not call the application back now: a blocking caller that
 * holds the client's loop to read its own reply (loop.h). A primitive then carries its
 * callback to the loop thread (dlock__op_post_carried) instead of calling it here. */
bool dlock__user_callbacks_elsewhere(const dlock_client *c);
/* dlock__op_post for such a carried callback: the blocking call of the thread that carried
 * it returns only after it has run (it would have run before, on the loop thread). */
int dlock__op_post_carried(dlock__op *op);

/* ---- handles: a primitive's object and the ops in flight on it (handle.c) -------------- */

/* Embedded in every primitive's handle (a lock, a semaphore, ...). Ops that work on the
 * handle keep it alive, so the application may free a handle with calls still in flight.
 * Its life, as include/dlock.h promises it:
 *   1. open: calls are accepted;
 *   2. closed (dlock__handle_free called, on any thread): every new call is refused with
 *      DLOCK_ECLOSED; ops queued before it end with DLOCK_ECANCELED when they start;
 *   3. freeing (the free reached the loop thread): what waits is canceled, ops already in
 *      Redis end with their outcome, each callback runs with the handle still readable;
 *   4. gone: the last op has ended; destroy frees the memory, and a blocking free waiting
 *      off the loop thread returns. */
struct dlock__handle {
    dlock_client *client;
    int ops_in_flight;
    _Atomic bool closed;               /* step 2: set by the freeing call, read by every call */
    bool freeing;                      /* step 3, loop thread */
    struct dlock__waiter *waiters;     /* waits on this handle, canceled when it is freed */
    dlock__op free_call;               /* a free made on the loop thread, queued (step 2) */
    dlock__op *free_waiter;            /* a blocking free waiting for step 4, or NULL */
    void (*destroy)(dlock__handle *h); /* free the memory; no I/O */
    /* The kind's word, static ("lock", "semaphore": its class's `what`), set after
     * dlock__handle_init by the primitive, for dlock_stats' failures by kind; NULL: "other" */
    const char *kind;
};

/* Opens h on c; destroy frees its memory once it is gone (step 4). */
void dlock__handle_init(dlock__handle *h, dlock_client *c, void (*destroy)(dlock__handle *));

/* The free protocol of every primitive's *_free(), no I/O. On the loop thread it returns
 * at once and the handle goes on a later turn, after every callback of its ops; on any
 * other thread it returns once the handle is gone (its callbacks have all run). */
void dlock__handle_free(dlock__handle *h);

/* DLOCK_OK while h is open; DLOCK_ECLOSED (with a last-error text) once its *_free has
 * been called. Any thread. dlock__op_submit checks it for every op on a handle; a
 * primitive calls it for what it answers without an op. */
int dlock__handle_check(const dlock__handle *h);

/* Loop thread, first thing in an op's start: counts the op on its handle. false when the
 * handle has been freed since the op was queued: the op has then been ended with
 * DLOCK_ECANCELED. */
bool dlock__op_begin(dlock__op *op);

/* Loop thread, the last thing an op does: completes it (as dlock__op_complete) and lets
 * its handle go if it was the last op of a freed handle. */
void dlock__op_end(dlock__op *op, int status);

/* As dlock__op_end, with the detail of a failed command (see dlock__op_fail_reply). */
void dlock__op_end_reply(dlock__op *op, int status, const dlock__reply *reply);

/* ---- script arguments ------------------------------------------------------------------ */

/* Keys then arguments of one script call, built in order, numbers formatted in place. */
#define DLOCK__ARGS_MAX 12
typedef struct dlock__args {
    const char *v[DLOCK__ARGS_MAX];
    size_t len[DLOCK__ARGS_MAX];
    int n;
    char numbers[6][24];
    int nnumbers;
} dlock__args;

void dlock__args_str(dlock__args *a, const char *s);
void dlock__args_bin(dlock__args *a, const void *p, size_t len);
void dlock__args_int(dlock__args *a, long long value);

/* True on the client's loop thread. */
bool dlock__on_loop_thread(const dlock_client *c);

/* ---- commands and scripts (conn.c, script.c) ------------------------------------------- */

/* status DLOCK_OK: reply is the server's answer (never an error reply).
 * DLOCK_EREDIS: reply is the error reply; its text is the detail.
 * DLOCK_ECONN: the connection failed and the command could not be completed (reply NULL).
 * DLOCK_ECANCELED: the client is closing (reply NULL).
 * DLOCK_EAUTH: the server refused our credentials (reply NULL).
 * DLOCK_ENOPERM: the ACL refused the command, a key or a channel; reply is the error reply.
 * sends: how many times the command was sent (1, or more after a reconnect resent it). A
 * script that recognises its own retry uses it to tell "my earlier send already did it"
 * from "it was never there". */
typedef void (*dlock__reply_fn)(dlock_client *c, int status, const dlock__reply *reply, int sends,
                                void *arg);

enum dlock__cmd_flags {
    /* The command may be sent again when its connection dropped before the reply came:
     * running it twice has the effect of running it once (a read, a renewal, a script
     * written to recognise its own retry). Without it a lost reply is DLOCK_ECONN. */
    DLOCK__CMD_RETRY_SAFE = 1u << 0,
    /* No WAIT follows this script although it writes (replicas.c), and its reply is not
     * held for one, where the acknowledgement would change nothing the caller is told:
     *   - an acquisition given back because too few replicas acknowledged it;
     *   - a release (of a lock's hold, semaphore permits, a permit). A release stands and
     *     its call returns DLOCK_OK whatever the replicas say, so a WAIT of its own would
     *     only keep the caller waiting (a replica round trip per pair: 25-37 % of an
     *     uncontended pair's rate at 1 thread). Nothing it protected is lost: a WAIT, on any
     *     connection, covers every write the master ran before it (the replication stream
     *     is one sequence), so the next acquisition's covers this release, and a waiter a
     *     release hands the lock to takes it with a WAIT of its own under ?sync_replicas
     *     (engine_grant.c). A release the replicas never got, then a failover, leaves the
     *     object held until its lease ends, as a release whose WAIT timed out did. */
    DLOCK__CMD_NO_WAIT = 1u << 1,
    /* A script whose keys may lie in several slots of one node (the watchdog's batches): in
     * a Cluster only its first key is declared, by which it is routed; the script still
     * finds every key in KEYS (script.c). */
    DLOCK__CMD_FIRST_KEY_ONLY = 1u << 2,
};

/* Queue a command (argv as binary-safe strings, copied). fn runs exactly once, on the loop
 * thread, never inside this call. Returns DLOCK_OK, or DLOCK_ENOMEM/DLOCK_ECLOSED and then
 * fn never runs. Commands go out in the order they were queued. */
int dlock__command(dlock_client *c, unsigned flags, dlock__reply_fn fn, void *arg, int argc,
                   const char *const *argv, const size_t *argvlen);

/* Queue EVALSHA of a library script with nkeys keys then the other args; falls back to EVAL
 * when the server answers NOSCRIPT. Same contract as dlock__command. */
int dlock__script(dlock_client *c, enum dlock__script_id script, unsigned flags, dlock__reply_fn fn,
                  void *arg, int nkeys, int nargs, const char *const *args, const size_t *argslen);

/* ---- replica acknowledgement (conn.c, replicas.c) -------------------------------------- */

/* A script that writes is acknowledged by a WAIT <replicas> <timeout> on its connection,
 * which may cover other writes too (?sync_replicas=auto|0|N, ?sync_timeout_ms=; conn.c
 * batches them, replicas.c says how many). Through
 * dlock__script the answer stays in the core: a write that fewer replicas acknowledged is
 * still done, its caller gets DLOCK_OK and the log a warning (a release, a count-down, a
 * renewal). An acquisition, which must not stand unless acknowledged, is sent with
 * dlock__script_acked and gets the answer explicitly, with the script's reply: */
typedef struct dlock__acks {
    int asked;          /* replicas the WAIT asked for; 0: no WAIT was sent */
    int acked;          /* how many acknowledged the write within timeout_ms */
    int64_t timeout_ms; /* the WAIT's timeout */
    /* The WAIT's own error reply (an ACL without +wait), valid during the callback; then
     * acked is 0. NULL otherwise. */
    const dlock__reply *wait_error;
} dlock__acks;

/* status, reply and sends as dlock__reply_fn's; acks never NULL. With status DLOCK_OK and
 * acks->acked < acks->asked the script's write happened but too few replicas have it. */
typedef void (*dlock__acked_fn)(dlock_client *c, int status, const dlock__reply *reply,
                                const dlock__acks *acks, int sends, void *arg);

/* As dlock__script, fn getting the replicas' acknowledgement. deadline_ms (monotonic;
 * INT64_MAX none) is the caller's: the WAIT's timeout is cut to the time left, but never
 * below DLOCK__SYNC_MIN_MS (a single attempt still gives the replicas a chance). */
int dlock__script_acked(dlock_client *c, enum dlock__script_id script, unsigned flags,
                        int64_t deadline_ms, dlock__acked_fn fn, void *arg, int nkeys, int nargs,
                        const char *const *args, const size_t *argslen);
#define DLOCK__SYNC_MIN_MS 100

/* Which node commands on key go to, as an identity to group by (the watchdog batches
 * renewals per node): one pointer for every key one node serves; on one Redis, always the
 * same. Loop thread only. */
const void *dlock__command_node(dlock_client *c, const char *key, size_t len);

/* Detail text of a failed command for an op (op_error.c): the error reply's text or a
 * description of status. */
int dlock__op_fail_reply(dlock__op *op, int status, const dlock__reply *reply);

/* ---- pub/sub (pubsub.c) ---------------------------------------------------------------- */

/* A listener on one channel. The router sends one SUBSCRIBE per channel however many
 * listeners, and UNSUBSCRIBE when the last leaves. on_ready runs each time the channel's
 * subscription is confirmed (first time, and again after a reconnect: messages may have
 * been missed while it was down), and also when the server refused the subscription
 * (dlock__listener_error() in net/net.h tells which). on_message runs for every message. */
typedef struct dlock__listener dlock__listener;
struct dlock__listener {
    void (*on_ready)(dlock__listener *l);
    void (*on_message)(dlock__listener *l, const char *msg, size_t len);
    /* router's bookkeeping */
    dlock__listener *prev, *next;
    void *channel;
};
int dlock__listen(dlock_client *c, const char *channel, dlock__listener *l);
void dlock__unlisten(dlock_client *c, dlock__listener *l);
bool dlock__listener_ready(const dlock__listener *l); /* subscription confirmed and up */

/* ---- the waiting engine (wait.c) ------------------------------------------------------- */

/* The engine waits for an object on behalf of one op: try -> subscribe -> try again ->
 * sleep until a message or min(hint, time left) -> try ... -> deadline. The primitive
 * supplies how to try and what a message means. */
typedef struct dlock__waiter dlock__waiter;

/* The result of one attempt, passed to dlock__wait_result(). */
#define DLOCK__BUSY 1 /* not obtained yet; keep waiting */

typedef struct dlock__wait_ops {
    /* Send one attempt (a script); its reply handler calls dlock__wait_result(). */
    void (*attempt)(dlock__waiter *w);
    /* How many of this client's waiters one message on the channel wakes: 1 when the
     * message frees one holder's place, -1 for all. NULL means all. */
    int (*wake_count)(const char *msg, size_t len);
    /* The wait is over: DLOCK_OK (obtained), DLOCK_ETIMEDOUT, DLOCK_ECANCELED or the error
     * of an attempt. The waiter is out of the engine; the primitive owns it again. */
    void (*done)(dlock__waiter *w, int status);
    /* Optional, for objects that hand out amounts (permits): how much a message says is
     * available, and how much a waiter needs. With both, a message wakes the oldest
     * waiters whose needs fit in the supply, and stops at the first that does not fit: a
     * message never wakes a later, smaller request of this client ahead of an earlier,
     * larger one. (Attempts not caused by a message, first ones and hints, go ahead.) */
    bool (*supply)(const char *msg, size_t len, int64_t *available);
    int64_t (*need)(const dlock__waiter *w);
    /* With a turn channel (dlock__wait_start_on): the longest another client's turn may keep
     * this client's waiters asleep, ms (the object's promise to one waiter lapses by then);
     * and whether a turn (len bytes) names w's owner: the message it announces wakes w and
     * no other waiter. */
    int64_t turn_ms;
    bool (*named)(const dlock__waiter *w, const char *turn, size_t len);
    /* Optional, with named: a grant (a turn with a space after the owner field, which no
     * message follows: the lock's release hands the lock over itself, release.lua) that
     * names sleeping waiter w. true: w holds the object now (the primitive has recorded it)
     * and its wait ends with DLOCK_OK. false: w attempts, as woken. */
    bool (*granted)(dlock__waiter *w, const char *turn, size_t len);
} dlock__wait_ops;

struct dlock__waiter {
    const dlock__wait_ops *ops;
    dlock_client *client;
    int64_t deadline_ms; /* monotonic; INT64_MAX: no deadline */
    int64_t started_us;  /* monotonic: the wait's start, for dlock_stats' wait histogram */
    /* the engine's state */
    const char *channel;      /* the primitive's string; must live as long as the wait */
    const char *turn_channel; /* likewise, or NULL (dlock__wait_start_on) */
    int state;
    bool canceled;     /* cancel asked; acted on when no attempt is in flight */
    bool woken;        /* holds one of the queue's wakes, not yet used up */
    uint64_t seen_seq; /* the queue's event count when the attempt went out, +1; 0: unknown */
    void *queue;
    dlock__waiter *prev, *next;
    dlock__handle *handle;
    dlock__waiter *handle_prev, *handle_next;
    dlock__timer timer;
};

/* Start waiting for an object on behalf of an op on handle h (freeing h cancels the wait).
 * channel is where the object speaks, kept by the primitive until done; NULL for an object
 * that publishes nothing: no subscription, each "busy" sleeps until its hint (the
 * primitive's delay before the next attempt; none: DLOCK__RECHECK_MS) or the deadline, then
 * attempts again. The first attempt goes out at once. wait_ms: 0 = one attempt,
 * DLOCK_FOREVER (-1) = no deadline.
 *
 * turn_channel (NULL: none; never in a Cluster) is where, just before some messages on
 * channel, the object names whose turn that message is: an owner field
 * "<client-id>:<owner>"; or, alone, a grant: the field, a space and what ops->granted reads
 * (the lock's release hands the lock over itself, release.lua). A turn of one of this client's
 * waiters (ops->named) lets the message wake that waiter alone; a turn of another client's
 * owner lets it wake none of this client's waiters, which look again by ops->turn_ms after
 * it unless another message comes first (wait.c, turns). Both channels must be on the
 * client's one subscriber connection, which is what orders the two messages. */
void dlock__wait_start_on(dlock__waiter *w, dlock__handle *h, const dlock__wait_ops *ops,
                          const char *channel, const char *turn_channel, int64_t wait_ms);

/* Whether the server refused this client a turn channel: it then hears no grant, so its
 * waiters should not wait in a line that hands the object over (the lock's queue). */
bool dlock__wait_turns_refused(const dlock_client *c);

/* A supply function for dlock__wait_ops: the message is a decimal count (the semaphores'
 * channel carries the new available count). */
bool dlock__message_count(const char *msg, size_t len, int64_t *available);

/* The monotonic deadline of a wait of wait_ms from now (-1: INT64_MAX, never). */
int64_t dlock__deadline_ms(int64_t wait_ms);

/* A safety net for objects without a TTL to hint with (semaphores, latches): a waiter
 * looks again this often even when no message comes, in case one was lost. */
#define DLOCK__RECHECK_MS 5000

/* From the attempt's reply handler: DLOCK_OK (obtained; the wait ends), DLOCK__BUSY with a
 * hint (ms until the object may free itself, e.g. the holder's TTL; -1 none), or an error
 * (the wait ends with it). */
void dlock__wait_result(dlock__waiter *w, int status, int64_t hint_ms);

/* End the wait early: done(DLOCK_ECANCELED) follows, after an attempt in flight has
 * answered (done(DLOCK_OK) if that attempt obtained it). */
void dlock__wait_cancel(dlock__waiter *w);

/* Wake up to n (-1 = all) of this client's waiters on channel now, as a message would:
 * a primitive calls it when its own release freed the object, so a local waiter does not
 * wait for the message's round trip. */
void dlock__wait_kick(dlock_client *c, const char *channel, int n);

/* ---- the watchdog (renew.c) ------------------------------------------------------------ */

/* A hold stands on a short lease of ms until a command in flight confirms a longer one (a
 * lock's grant, src/lock/engine_grant.c): while any does (held true, then false once its
 * confirmation is answered), the client reconnects within a third of the shortest such
 * lease, as it does for watchdog leases, so that the confirmation can land in time. */
void dlock__renew_short_lease(dlock_client *c, int64_t ms, bool held);

/* Whether the command connection (the one of a client not of a Cluster) has been up for a
 * second (link.c): one
 * that drops now comes back at once, so a command sent on it lands within a round trip or
 * two. A hold on a short lease is taken only then (the lock's grant, engine_grant.c). */
bool dlock__client_commands_steady(const dlock_client *c);

/* A lease the watchdog keeps alive: one (key, field) held by one owner with lease
 * DLOCK_WATCHDOG. Every watchdog_ms/3 the core renews every held lease of the client,
 * renew_batch per script call, all calls pipelined in one write. */
typedef struct dlock__lease dlock__lease;

typedef struct dlock__lease_ops {
    /* Renew script: KEYS = the batch's keys; ARGV[1] = watchdog_ms, ARGV[1+i] = field of
     * KEYS[i]. Reply: an array with 1 (renewed) or 0 (gone) per key. */
    enum dlock__script_id renew_script;
    /* The lease is lost: renewal found it gone (reason DLOCK_ELOST), or could not
     * confirm it before it ran out (DLOCK_ECONN), or ran out past its bound
     * (DLOCK_LOST_MAX_HOLD). The lease is out of the registry and freed after this
     * returns. The owner counts the loss it reports (dlock__stat_lease_lost). */
    void (*lost)(dlock__lease *lease, void *owner_ctx, int reason);
} dlock__lease_ops;

/* A hold lost, as its owner's lost callback is told of it, whoever found it gone: the
 * watchdog, or a release, an acquire or a query that found the lock gone before the watchdog
 * did. One dlock_stats.leases_lost. Loop thread. */
void dlock__stat_lease_lost(dlock_client *c);

/* Register before the acquire is sent, so a release can never race ahead of it. The lease
 * is not renewed until dlock__lease_held(). Returns NULL on ENOMEM. */
dlock__lease *dlock__lease_new(dlock_client *c, const dlock__lease_ops *ops, const char *key,
                               const char *field, void *owner_ctx);
/* The acquire succeeded; it was sent at sent_at_ms (monotonic), so the lease runs to
 * sent_at_ms + watchdog_ms unless renewed. */
void dlock__lease_held(dlock__lease *lease, int64_t sent_at_ms);
/* The hold's bound (dlock_options.max_hold_ms): from until_ms (monotonic) on the lease is
 * renewed no more, and when it runs out the owner is told DLOCK_LOST_MAX_HOLD. 0: none.
 * Set it before dlock__lease_held; a lease registered again for the same hold gets the
 * same until_ms, so the bound counts from the hold's first acquisition. */
void dlock__lease_bound(dlock__lease *lease, int64_t until_ms);
/* Stop renewing (the release starts, the acquire failed, the handle goes): the registry
 * frees the lease; the caller must not use it again. */
void dlock__lease_drop(dlock__lease *lease);

#endif
