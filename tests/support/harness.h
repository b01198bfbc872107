/* harness.h — the helpers the integration and fault tests share, written once:
 *
 *  - assertions that print the dlock error name and dlock_last_error() text on failure
 *    (ASSERT_RC, ASSERT_BETWEEN, ASSERT_EINVAL, ASSERT_WRONGTYPE);
 *  - a Redis server per test and what a test reads back from it (start_server, numsub,
 *    script_calls, total_commands, pttl_of, subscribe_to, owner_field);
 *  - the loop harness of the async-face tests: a libev loop of the test's own, polled
 *    from the test thread, with a client on it (polling_loop_new, connect_on_loop,
 *    RUN_LOOP_UNTIL, run_loop_for, sync_with_client).
 *
 * Timing bounds: slack_ms widens a bound 10x under valgrind; core_call.h's test_slack_ms
 * widens it 20x. Each test keeps the one it always used. Polling the clock without a loop
 * (POLL_UNTIL) lives in core_call.h. Everything here fails the running cmocka test on
 * error, so a caller never checks a result. */
#ifndef DLOCK_TEST_HARNESS_H
#define DLOCK_TEST_HARNESS_H

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

/* An upper time bound, widened 10x when the process runs on valgrind. */
int64_t slack_ms(int64_t ms);

/* ---- the server ----------------------------------------------------------------------------- */

/* A fresh redis-server for one test; stop it with redis_fixture_stop. */
redis_fixture *start_server(void);

/* Subscribers of channel (PUBSUB NUMSUB). */
long long numsub(redis_fixture *f, const char *channel);

/* Script calls the server ran so far (EVALSHA, and EVAL after a script-cache miss). */
long long script_calls(redis_fixture *f);

/* Commands the server processed so far (INFO stats total_commands_processed). */
long long total_commands(redis_fixture *f);

/* PTTL of key: -2 absent, -1 no expiry. */
long long pttl_of(redis_fixture *f, const char *key);

/* A plain hiredis connection subscribed to channel, to read what the library publishes;
 * redisFree it. */
redisContext *subscribe_to(redis_fixture *f, const char *channel);

/* The "<client id>:<owner>" hash field under which c's owner holds a lock. */
void owner_field(dlock_client *c, uint64_t owner, char *buf, size_t size);

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

#endif
