/* SPDX-License-Identifier: MIT */
/* harness.h — the helpers the integration and fault tests share, written once:
 *
 *  - assertions that print the dlock error name and dlock_last_error() text on failure
 *    (ASSERT_RC, ASSERT_OK, ASSERT_BETWEEN, ASSERT_EINVAL, ASSERT_WRONGTYPE);
 *  - a Redis server per test and what a test reads back from it (start_server, numsub,
 *    subscribed_channels, script_calls, total_commands, pttl_of, subscribe_to, owner_field,
 *    db_state);
 *  - a blocking call on a thread of its own, started and left asleep as a waiter
 *    (blocking_call_start_asleep);
 *  - the loop harness of the async-face tests: a libev loop of the test's own, polled
 *    from the test thread, with a client on it (polling_loop_new, connect_on_loop,
 *    RUN_LOOP_UNTIL, run_loop_for, sync_with_client).
 *
 *  - clients made the same way in every test (connect_client, connect_client_cfg), the
 *    record of lost callbacks (record_lost, lost_get), a MONITOR reader
 *    (monitor_count_tcp), an application on a loop of the test's own (app_open) and one
 *    over several masters (masters_app_open).
 *
 * Timing bounds: slack_ms and test_slack_ms are one rule, test_slack_factor() (test_util.h).
 * Polling the clock without a loop (POLL_UNTIL) lives in core_call.h. Everything here fails
 * the running cmocka test on error, so a caller never checks a result. */
#ifndef DLOCK_TEST_HARNESS_H
#define DLOCK_TEST_HARNESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dlock.h"
#include "dlock/adapters/libev.h"
#include "redis_fixture.h"
#include "test_util.h"

/* ---- assertions (the caller includes <cmocka.h>) ------------------------------------------ */

#define ASSERT_RC(expr, want)                                                                      \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ != (want))                                                                         \
            fail_msg("%s = %s (%s), expected %s", #expr, dlock_err_name(rc_), dlock_last_error(),  \
                     dlock_err_name(want));                                                        \
    } while (0)

#define ASSERT_BETWEEN(value, lo, hi)                                                              \
    do {                                                                                           \
        long long v_ = (long long)(value);                                                         \
        if (v_ < (long long)(lo) || v_ > (long long)(hi))                                          \
            fail_msg("%s = %lld, expected %lld..%lld", #value, v_, (long long)(lo),                \
                     (long long)(hi));                                                             \
    } while (0)

#define ASSERT_OK(expr) ASSERT_RC(expr, DLOCK_OK)

/* expr is DLOCK_EINVAL and says why in dlock_last_error() (the caller includes dlock_int.h). */
#define ASSERT_EINVAL(expr)                                                                        \
    do {                                                                                           \
        dlock__set_last_error("");                                                                 \
        ASSERT_RC(expr, DLOCK_EINVAL);                                                             \
        if (!dlock_last_error()[0])                                                                \
            fail_msg("%s: no dlock_last_error() text", #expr);                                     \
    } while (0)

/* expr is DLOCK_EREDIS from a key of another type. */
#define ASSERT_WRONGTYPE(expr)                                                                     \
    do {                                                                                           \
        ASSERT_RC(expr, DLOCK_EREDIS);                                                             \
        if (!strstr(dlock_last_error(), "WRONGTYPE"))                                              \
            fail_msg("%s: last error \"%s\" has no WRONGTYPE", #expr, dlock_last_error());         \
    } while (0)

/* An upper time bound widened by the suite's one slack rule: test_slack_ms (test_util.h). */
int64_t slack_ms(int64_t ms);

/* ---- the server ----------------------------------------------------------------------------- */

/* A fresh redis-server for one test; stop it with redis_fixture_stop. */
redis_fixture *start_server(void);

/* Subscribers of channel (PUBSUB NUMSUB). */
long long numsub(redis_fixture *f, const char *channel);

/* Channels with at least one subscriber (PUBSUB CHANNELS), of any client. */
long long subscribed_channels(redis_fixture *f);
/* The same for the channels matching pattern (PUBSUB CHANNELS pattern). */
long long subscribed_channels_matching(redis_fixture *f, const char *pattern);

/* Script calls the server ran so far (EVALSHA, and EVAL after a script-cache miss). */
long long script_calls(redis_fixture *f);

/* Commands the server processed so far (INFO stats total_commands_processed). */
long long total_commands(redis_fixture *f);

/* Commands the server processed so far besides INFO: what clients sent, not counting the
 * test's own readings of the server's stats (one INFO reads the total, another the INFO
 * count, in which the first is counted). */
long long commands_but_info(redis_fixture *f);

/* Calls of one command so far (INFO commandstats; name in lower case: "exists"). */
long long command_calls(redis_fixture *f, const char *name);

/* HGET key field through the admin connection; 0 when absent. */
long long hget_int(redis_fixture *f, const char *key, const char *field);

/* The hash at key as "field=value;..." ("<none>" when empty or absent). */
void hash_dump(redis_fixture *f, const char *key, char *buf, size_t size);

/* PTTL of key: -2 absent, -1 no expiry. */
long long pttl_of(redis_fixture *f, const char *key);

/* A plain hiredis connection subscribed to channel, to read what the library publishes;
 * redisFree it. */
redisContext *subscribe_to(redis_fixture *f, const char *channel);
/* The same subscribed to the channels matching pattern (PSUBSCRIBE). */
redisContext *psubscribe_to(redis_fixture *f, const char *pattern);

/* Publishes "end" on channel (through the fixture), then reads s (subscribed to channel)
 * up to that message and writes the payloads before it as "a,b,c," into buf. */
void messages_until_end(redis_fixture *f, redisContext *s, const char *channel, char *buf,
                        size_t size);

/* The "<client id>:<owner>" hash field under which c's owner holds a lock. */
void owner_field(dlock_client *c, uint64_t owner, char *buf, size_t size);

/* The whole database as text, to compare before and after a call: every key, sorted, with
 * its DUMP (type and value) in hex and whether it expires. The caller frees it. */
char *db_state(redis_fixture *f);

/* ---- clients ------------------------------------------------------------------------------ */

/* What a test client changes from dlock_options_init's defaults; a zero field keeps the
 * default. */
typedef struct test_client_cfg {
    const char *url; /* NULL: the fixture's unix socket URL */
    int64_t watchdog_ms;
    int64_t timeout_ms;
    int64_t connect_timeout_ms;
    int64_t fair_wait_ms;
    int64_t retry_delay_ms; /* 0: TEST_RETRY_DELAY_MS */
    int retry_attempts;     /* 0: the default; TEST_NO_RETRY: no resend */
    int renew_batch;
} test_client_cfg;

/* A test never waits the default second to reconnect. */
#define TEST_RETRY_DELAY_MS 100
#define TEST_NO_RETRY (-1)

/* retry_attempts for a count that may be 0. */
static inline int test_retries(int n) {
    return n == 0 ? TEST_NO_RETRY : n;
}

/* A client of f (or of cfg.url; f may then be NULL) with cfg applied; fails the test if it
 * cannot connect. Free it with dlock_client_free. */
dlock_client *connect_client_cfg(redis_fixture *f, test_client_cfg cfg);
/* The same with every default. */
dlock_client *connect_client(redis_fixture *f);
/* dlock_client_new's result for such a client, failing nothing: for forked children, which
 * must not fail a cmocka test. */
int test_client_new(redis_fixture *f, const test_client_cfg *cfg, dlock_client **out);
/* dlock_options for a client of f (or cfg.url) with cfg applied; o.url points into f. */
void test_client_options(redis_fixture *f, const test_client_cfg *cfg, dlock_options *o);

/* ---- the first error of worker threads ------------------------------------------------ */

/* How many errors worker threads met, and the text of the first. Zero it before the
 * threads start; read text once they are joined. Thread-safe. */
typedef struct first_error {
    atomic_long count;
    char text[256];
} first_error;

/* Counts an error: "worker <id>: <what>: <DLOCK_E*> (<dlock_last_error()>)" if it is the
 * first. */
void first_error_note(first_error *e, int worker_id, const char *what, int rc);

/* ---- a blocking call on a thread of its own ------------------------------------------------ */

/* A blocking call (an acquire, an await) made on a thread of the test's, so that the test
 * can act while it waits. run(arg) makes the call and returns its status. */
typedef struct blocking_call {
    int (*run)(void *arg);
    void *arg;
    pthread_t thread;
    int rc;              /* run's status, once returned */
    int64_t returned_us; /* test_now_us() right after run returned */
    atomic_bool returned;
} blocking_call;

/* How a test tells that the call sleeps as a waiter: `subscribers` clients are subscribed to
 * channel, and the server ran at least `attempts` more of the commands attempts_of counts
 * (NULL: script_calls) since the call started: its first look, and the one made after its
 * subscription was confirmed, both answered "not yet". */
typedef struct asleep_sign {
    const char *channel;
    long long subscribers;
    long long attempts;
    long long (*attempts_of)(redis_fixture *f);
} asleep_sign;

/* Starts run(arg) on a new thread. */
void blocking_call_start(blocking_call *c, int (*run)(void *arg), void *arg);
/* Starts it and returns once it sleeps as sign says; fails the test if it is not asleep
 * within 3 s (by the slack rule) or has returned. */
void blocking_call_start_asleep(blocking_call *c, int (*run)(void *arg), void *arg,
                                redis_fixture *f, asleep_sign sign);
/* Whether run has returned. */
bool blocking_call_returned(blocking_call *c);
/* Joins the thread; run's status. */
int blocking_call_join(blocking_call *c);

/* ---- one server and one client per test ------------------------------------------------- */

/* What test_world_setup puts in a cmocka test's state. */
typedef struct test_world {
    redis_fixture *f;
    dlock_client *c;
} test_world;

/* cmocka setup: a fresh server and a client of it (retry_delay_ms 20) as a test_world in
 * *state; -1 (cmocka reports it) if either cannot be made. */
int test_world_setup(void **state);
/* The same with cfg applied (its retry_delay_ms 0: 20). */
int test_world_setup_cfg(void **state, test_client_cfg cfg);
/* cmocka teardown: resumes the server (a test may have stopped half-way through a pause),
 * frees the client, stops the server, disarms the test watchdog. */
int test_world_teardown(void **state);

/* ---- lost callbacks -------------------------------------------------------------------------- */

/* What dlock_lock_on_lost callbacks reported. The first call sets reason, owner, lock, arg,
 * first_ms and first_us; later calls only count. */
typedef struct lost_record {
    int calls;
    int reason;
    uint64_t owner;
    dlock_lock *lock;
    void *arg;
    int64_t first_ms; /* test_now_ms() of the first call */
    int64_t first_us;
} lost_record;

/* A dlock_lost_cb recording into the process-wide record (arg is kept in it). */
void record_lost(dlock_lock *l, uint64_t owner, int reason, void *arg);
/* A dlock_lost_cb recording into the lost_record arg points to (zero it before use). */
void record_lost_in(dlock_lock *l, uint64_t owner, int reason, void *record);
/* Clear the process-wide record. */
void lost_reset(void);
/* A copy of the process-wide record, or of *r. */
lost_record lost_get(void);
lost_record lost_get_in(const lost_record *r);
/* lost_get().calls. */
int lost_calls(void);

/* ---- MONITOR ------------------------------------------------------------------------------- */

/* A plain connection to f in MONITOR mode; redisFree it. */
redisContext *monitor_open(redis_fixture *f);

/* Reads a MONITOR stream up to the line of `ECHO end_marker` and counts the commands that
 * came from TCP connections (a client on the fixture's TCP port; the fixture and clients on
 * the unix socket, and commands run by scripts ("lua"), are not counted). Their names go to
 * names, space separated. */
int monitor_count_tcp(redisContext *mon, const char *end_marker, char *names, size_t size);

/* ---- the async face: a loop of the test's own ----------------------------------------------- */

/* A new loop with tick started on it: a 2 ms timer that keeps EVRUN_ONCE from blocking for
 * long while the test polls. polling_loop_free stops tick and destroys the loop. */
struct ev_loop *polling_loop_new(ev_timer *tick);
void polling_loop_free(struct ev_loop *loop, ev_timer *tick);

/* A client of f on loop (dlock_client_new_on_loop with the defaults). */
dlock_client *connect_on_loop(redis_fixture *f, struct ev_loop *loop);

/* Runs loop until cond holds or timeout_ms passes; ok says which. */
#define RUN_LOOP_UNTIL(loop, ok, cond, timeout_ms)                                                 \
    do {                                                                                           \
        int64_t until_ = test_now_ms() + (timeout_ms);                                             \
        while (!((ok) = (cond)) && test_now_ms() < until_)                                         \
            ev_run((loop), EVRUN_ONCE);                                                            \
    } while (0)

/* Runs loop for ms. */
void run_loop_for(struct ev_loop *loop, int64_t ms);

/* One round trip through c (a ping) on loop, within timeout_ms: everything submitted
 * before it has started. */
void sync_with_client(struct ev_loop *loop, dlock_client *c, int64_t timeout_ms);

/* An application on a loop of the test's own: a fresh server, the polling loop, one or two
 * clients on it (connected when app_open returns), and the handles a test opens on them,
 * which app_close frees (NULL ones are skipped) before the clients, the loop and the
 * server. */
typedef struct loop_app {
    redis_fixture *f;
    struct ev_loop *loop;
    ev_timer tick; /* keeps EVRUN_ONCE from blocking for long while the test polls */
    dlock_client *c;
    dlock_client *c2; /* NULL unless opened with two clients */
    dlock_lock *l;
    dlock_semaphore *s;
    dlock_permits *p;
    dlock_latch *latch;
} loop_app;

/* cfg NULL: the defaults; clients: 1 or 2. */
void app_open(loop_app *a, const test_client_cfg *cfg, int clients);
void app_close(loop_app *a);

/* ---- several masters (RedLock) ------------------------------------------------------------ */

#define MASTERS_MAX 8

void masters_start(redis_fixture **f, int n);
void masters_stop(redis_fixture **f, int n);

/* One application's view of n masters: a client on each, a member lock `name` on each
 * client (fenced or plain) and the RedLock over them. */
typedef struct masters_app {
    int n;
    dlock_client *c[MASTERS_MAX];
    dlock_lock *member[MASTERS_MAX];
    dlock_lock *rl;
} masters_app;

/* cfg NULL: the defaults. */
void masters_app_open(masters_app *a, redis_fixture **f, int n, const char *name,
                      const test_client_cfg *cfg, bool fenced);
/* Frees the RedLock, then the members, then the clients. */
void masters_app_close(masters_app *a);

#endif
