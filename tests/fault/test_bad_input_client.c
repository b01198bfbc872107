/* SPDX-License-Identifier: MIT */
/* test_bad_input_client.c — the bad-input catalogue (tests/support/bad_input.h) for
 * dlock/error.h, dlock/client.h and the client options: every call with each invalid
 * argument it can get returns its documented code and Redis sees nothing. Option times
 * above DLOCK_MAX_TIME_MS are refused (they used to overflow in deadline arithmetic). */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bad_input.h"
#include "dlock.h"
#include "harness.h"
#include "test_util.h"

/* Rows picked at random, with random invalid values (DLOCK_TEST_SCALE scales it). */
#define RANDOM_CALLS 2000

/* ---- client options -------------------------------------------------------------------------- */

enum opt_field {
    OF_WATCHDOG,
    OF_FAIR_WAIT,
    OF_TIMEOUT,
    OF_CONNECT,
    OF_BATCH,
    OF_ATTEMPTS,
    OF_DELAY,
    OF_SIZE,
    OF_URL
};

/* dlock_client_new (or _on_loop) with one bad field, every other field valid and the URL
 * that of the test's server: an option wrongly accepted would connect to it. */
static int client_new_with(enum opt_field field, const bad *b, bool on_loop) {
    dlock_options o;
    dlock_options_init(&o);
    o.url = redis_fixture_unix_url(BW.f);
    o.connect_timeout_ms = 2000;
    switch (field) {
    case OF_WATCHDOG:
        o.watchdog_ms = b->below3;
        break;
    case OF_FAIR_WAIT:
        o.fair_wait_ms = b->below3;
        break;
    case OF_TIMEOUT:
        o.timeout_ms = b->nonpos;
        break;
    case OF_CONNECT:
        o.connect_timeout_ms = b->nonpos;
        break;
    case OF_BATCH:
        o.renew_batch = b->batch;
        break;
    case OF_ATTEMPTS:
        o.retry_attempts = b->attempts;
        break;
    case OF_DELAY:
        o.retry_delay_ms = b->delay;
        break;
    case OF_SIZE:
        o.size = b->size;
        break;
    case OF_URL:
        o.url = b->url;
        break;
    }
    int rc = on_loop ? dlock_client_new_on_loop(&o, BW.loop, &BW.out_client)
                     : dlock_client_new(&o, &BW.out_client);
    if (rc == DLOCK_OK) { /* wrongly accepted: the row fails; free what was made */
        dlock_client_free(BW.out_client);
        BW.out_client = NULL;
    }
    return rc;
}

static int client_new_good(dlock_client **out, struct ev_loop *loop, bool on_loop) {
    dlock_options o;
    dlock_options_init(&o);
    o.url = redis_fixture_unix_url(BW.f);
    return on_loop ? dlock_client_new_on_loop(&o, loop, out) : dlock_client_new(&o, out);
}

/* ---- the catalogue --------------------------------------------------------------------------- */

/* X(id, kind, expected, call): `call` may use `b`, the invalid values (bad_input.h). */

#define ERROR_AND_CLIENT_CASES(X)                                                                  \
    X(strerror_unknown, V_NONE, DLOCK_OK, str_is(dlock_strerror(7), "unknown error"))              \
    X(strerror_min, V_NONE, DLOCK_OK, str_is(dlock_strerror(INT_MIN), "unknown error"))            \
    X(err_name_unknown, V_NONE, DLOCK_OK, str_is(dlock_err_name(-9999), "DLOCK_UNKNOWN"))          \
    X(err_name_max, V_NONE, DLOCK_OK, str_is(dlock_err_name(INT_MAX), "DLOCK_UNKNOWN"))            \
    X(options_init_null, V_NONE, DLOCK_OK, (dlock_options_init(NULL), DLOCK_OK))                   \
    X(new_watchdog, V_BELOW3, DLOCK_EINVAL, client_new_with(OF_WATCHDOG, b, false))                \
    X(new_fair_wait, V_BELOW3, DLOCK_EINVAL, client_new_with(OF_FAIR_WAIT, b, false))              \
    X(new_timeout, V_NONPOS, DLOCK_EINVAL, client_new_with(OF_TIMEOUT, b, false))                  \
    X(new_connect_timeout, V_NONPOS, DLOCK_EINVAL, client_new_with(OF_CONNECT, b, false))          \
    X(new_renew_batch, V_BATCH, DLOCK_EINVAL, client_new_with(OF_BATCH, b, false))                 \
    X(new_retry_attempts, V_ATTEMPTS, DLOCK_EINVAL, client_new_with(OF_ATTEMPTS, b, false))        \
    X(new_retry_delay, V_DELAY, DLOCK_EINVAL, client_new_with(OF_DELAY, b, false))                 \
    X(new_size, V_SIZE, DLOCK_EINVAL, client_new_with(OF_SIZE, b, false))                          \
    X(new_url, V_URL, DLOCK_EINVAL, client_new_with(OF_URL, b, false))                             \
    X(new_null_out, V_NONE, DLOCK_EINVAL, client_new_good(NULL, NULL, false))                      \
    X(loop_watchdog, V_BELOW3, DLOCK_EINVAL, client_new_with(OF_WATCHDOG, b, true))                \
    X(loop_fair_wait, V_BELOW3, DLOCK_EINVAL, client_new_with(OF_FAIR_WAIT, b, true))              \
    X(loop_timeout, V_NONPOS, DLOCK_EINVAL, client_new_with(OF_TIMEOUT, b, true))                  \
    X(loop_connect_timeout, V_NONPOS, DLOCK_EINVAL, client_new_with(OF_CONNECT, b, true))          \
    X(loop_renew_batch, V_BATCH, DLOCK_EINVAL, client_new_with(OF_BATCH, b, true))                 \
    X(loop_retry_attempts, V_ATTEMPTS, DLOCK_EINVAL, client_new_with(OF_ATTEMPTS, b, true))        \
    X(loop_retry_delay, V_DELAY, DLOCK_EINVAL, client_new_with(OF_DELAY, b, true))                 \
    X(loop_size, V_SIZE, DLOCK_EINVAL, client_new_with(OF_SIZE, b, true))                          \
    X(loop_url, V_URL, DLOCK_EINVAL, client_new_with(OF_URL, b, true))                             \
    X(loop_null_loop, V_NONE, DLOCK_EINVAL, client_new_good(&BW.out_client, NULL, true))           \
    X(loop_null_out, V_NONE, DLOCK_EINVAL, client_new_good(NULL, BW.loop, true))                   \
    X(client_free_null, V_NONE, DLOCK_OK, dlock_client_free(NULL))                                 \
    X(client_id_null, V_NONE, DLOCK_OK, str_is(dlock_client_id(NULL), ""))                         \
    X(ping_null, V_NONE, DLOCK_EINVAL, dlock_client_ping(NULL))                                    \
    X(ping_async_null, V_NONE, DLOCK_EINVAL,                                                       \
      dlock_client_ping_async(NULL, unexpected_client_cb, NULL))                                   \
    X(ping_async_null_cb, V_NONE, DLOCK_EINVAL, dlock_client_ping_async(BW.c, NULL, NULL))

/* Blocking calls on the async client's loop thread (this thread): DLOCK_EDEADLK, before
 * any I/O. Valid arguments otherwise. */
#define LOOP_THREAD_CASES(X) X(lt_ping, V_NONE, DLOCK_EDEADLK, dlock_client_ping(BW.lc))

ERROR_AND_CLIENT_CASES(BAD_DEFINE_CALL)
LOOP_THREAD_CASES(BAD_DEFINE_CALL)

static const bad_case CLIENT_TABLE[] = {ERROR_AND_CLIENT_CASES(BAD_TABLE_ROW)};
static const bad_case LOOP_THREAD_TABLE[] = {LOOP_THREAD_CASES(BAD_TABLE_ROW)};

static const bad_group GROUPS[] = {
    BAD_GROUP("error.h, client.h, options", CLIENT_TABLE),
    BAD_GROUP("client.h on the loop thread (DLOCK_EDEADLK)", LOOP_THREAD_TABLE),
};

int main(void) {
    bad_catalogue cat = {GROUPS, BAD_COUNT(GROUPS), RANDOM_CALLS};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(
            test_every_bad_argument_gets_its_documented_code_and_redis_sees_nothing, &cat),
        cmocka_unit_test_prestate(
            test_random_bad_arguments_get_their_documented_codes_and_redis_sees_nothing, &cat),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
