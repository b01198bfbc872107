/* semaphore_helpers.h — the helpers of the semaphore tests (test_semaphore.c and the files split
 * from it), written once. Included by those test files only; everything here is static inline. */
#ifndef DLOCK_TEST_SEMAPHORE_HELPERS_H
#define DLOCK_TEST_SEMAPHORE_HELPERS_H
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core_call.h"
#include "dlock.h"
#include "dlock/adapters/libev.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60

/* ---- helpers ----------------------------------------------------------------------------- */

static inline dlock_semaphore *new_semaphore(dlock_client *c, const char *name) {
    dlock_semaphore *s = NULL;
    ASSERT_RC(dlock_semaphore_new(c, name, &s), DLOCK_OK);
    return s;
}

static inline int64_t available_of(dlock_semaphore *s) {
    int64_t n = INT64_MIN;
    ASSERT_RC(dlock_semaphore_available(s, &n), DLOCK_OK);
    return n;
}

/* Publishes "end" on channel (through the fixture), then reads s up to that message and
 * writes the payloads before it as "a,b,c," into buf. */
static inline void messages_until_end(redis_fixture *f, redisContext *s, const char *channel,
                                      char *buf, size_t size) {
    freeReplyObject(redis_fixture_cmd(f, "PUBLISH %s end", channel));
    buf[0] = '\0';
    for (;;) {
        void *m = NULL;
        assert_int_equal(redisGetReply(s, &m), REDIS_OK);
        redisReply *r = m;
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_int_equal(r->elements, 3);
        assert_string_equal(r->element[0]->str, "message");
        assert_string_equal(r->element[1]->str, channel);
        bool end = strcmp(r->element[2]->str, "end") == 0;
        if (!end) {
            size_t used = strlen(buf);
            snprintf(buf + used, size - used, "%s,", r->element[2]->str);
        }
        freeReplyObject(r);
        if (end)
            return;
    }
}

/* ---- a blocking acquire on its own thread ------------------------------------------------ */

typedef struct waiter {
    dlock_semaphore *s;
    int64_t permits;
    int64_t wait_ms;
    int rc;
    int64_t returned_us;
    atomic_bool returned;
} waiter;

static inline void *acquire_on_thread(void *arg) {
    waiter *w = arg;
    w->rc = dlock_semaphore_try_acquire(w->s, w->permits, w->wait_ms);
    w->returned_us = test_now_us();
    atomic_store(&w->returned, true);
    return NULL;
}

/* Starts w on a new thread and returns once it sleeps as a waiter: its channel has
 * `subscribers` subscribed clients and at least `attempts` more script calls ran. */
static inline pthread_t start_waiter_and_let_it_sleep(redis_fixture *f, const char *channel,
                                                      waiter *w, long long subscribers,
                                                      int attempts) {
    long long scripts_before = script_calls(f);
    atomic_init(&w->returned, false);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, acquire_on_thread, w), 0);
    bool asleep = false;
    POLL_UNTIL(asleep,
               numsub(f, channel) == subscribers && script_calls(f) >= scripts_before + attempts,
               test_slack_ms(3000));
    if (!asleep)
        fail_msg("the waiter did not go to sleep (returned: %d, rc %s)",
                 (int)atomic_load(&w->returned), dlock_err_name(w->rc));
    assert_false(atomic_load(&w->returned));
    return t;
}

#endif
