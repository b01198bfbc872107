/* SPDX-License-Identifier: MIT */
/* test_bad_input_dead_server.c — a client whose server died: every call that needs Redis
 * fails with DLOCK_ECONN within timeout_ms x (retry_attempts + 1), nothing hangs, and the
 * client works again once the server is back. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "bad_input.h"
#include "core_call.h"
#include "dlock.h"
#include "dlock_int.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define DEAD_TIMEOUT_MS 200
#define DEAD_RETRIES 1
#define DEAD_BOUND_MS (DEAD_TIMEOUT_MS * (DEAD_RETRIES + 1))

static struct dead {
    redis_fixture *f;
    dlock_client *c;
    dlock_lock *lock, *held, *fenced, *fair, *multi, *red, *members[2], *red_members[3];
    dlock_rwlock *rw;
    dlock_semaphore *sem;
    dlock_permits *permits;
    dlock_latch *latch;
    dlock_permit_id id;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int async_status;
    bool async_done;
} D = {.mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void dead_async_done(int status) {
    pthread_mutex_lock(&D.mu);
    D.async_status = status;
    D.async_done = true;
    pthread_cond_signal(&D.cond);
    pthread_mutex_unlock(&D.mu);
}
static void dead_lock_cb(dlock_lock *l, int status, void *arg) {
    (void)l, (void)arg;
    dead_async_done(status);
}
static void dead_sem_cb(dlock_semaphore *s, int status, void *arg) {
    (void)s, (void)arg;
    dead_async_done(status);
}
static void dead_permits_cb(dlock_permits *p, int status, const dlock_permit_id *id, void *arg) {
    (void)p, (void)id, (void)arg;
    dead_async_done(status);
}
static void dead_latch_cb(dlock_latch *l, int status, void *arg) {
    (void)l, (void)arg;
    dead_async_done(status);
}
static void dead_client_cb(dlock_client *c, int status, void *arg) {
    (void)c, (void)arg;
    dead_async_done(status);
}

/* Starts an async call and waits for its callback; its status (or the call's error). */
static int async_wait(int rc) {
    if (rc != DLOCK_OK)
        return rc;
    pthread_mutex_lock(&D.mu);
    while (!D.async_done)
        pthread_cond_wait(&D.cond, &D.mu);
    D.async_done = false;
    rc = D.async_status;
    pthread_mutex_unlock(&D.mu);
    return rc;
}

static int client_new_to_dead_server(void) {
    dlock_options o;
    dlock_options_init(&o);
    o.url = redis_fixture_unix_url(D.f);
    o.connect_timeout_ms = DEAD_BOUND_MS;
    dlock_client *c = (dlock_client *)&c;
    int rc = dlock_client_new(&o, &c);
    if (c != (dlock_client *)&c) {
        dlock_client_free(c);
        return NOT_AS_DOCUMENTED;
    }
    return rc;
}

/* X(id, call): a call that needs Redis, on the client whose server is gone. */
#define DEAD_CASES(X)                                                                              \
    X(client_new, client_new_to_dead_server())                                                     \
    X(ping, dlock_client_ping(D.c))                                                                \
    X(ping_async, async_wait(dlock_client_ping_async(D.c, dead_client_cb, NULL)))                  \
    X(acquire_forever, dlock_lock_acquire(D.lock, 1000))                                           \
    X(acquire_forever_watchdog, dlock_lock_acquire(D.lock, DLOCK_WATCHDOG))                        \
    X(try_acquire_5s, dlock_lock_try_acquire(D.lock, 5000, 1000))                                  \
    X(release_a_held_lock, dlock_lock_release(D.held))                                             \
    X(force_release, dlock_lock_force_release(D.lock, NULL))                                       \
    X(is_locked, dlock_lock_is_locked(D.lock, &(bool){false}))                                     \
    X(is_held, dlock_lock_is_held(D.lock, &(bool){false}))                                         \
    X(hold_count, dlock_lock_hold_count(D.lock, &(int64_t){0}))                                    \
    X(ttl, dlock_lock_ttl(D.lock, &(int64_t){0}))                                                  \
    X(acquire_async,                                                                               \
      async_wait(dlock_lock_acquire_async(D.lock, 7, DLOCK_FOREVER, 1000, dead_lock_cb, NULL)))    \
    X(release_async, async_wait(dlock_lock_release_async(D.lock, 7, dead_lock_cb, NULL)))          \
    X(fenced_acquire, dlock_lock_acquire(D.fenced, 1000))                                          \
    X(fair_acquire, dlock_lock_acquire(D.fair, 1000))                                              \
    X(read_acquire, dlock_lock_acquire(dlock_rwlock_read(D.rw), 1000))                             \
    X(write_acquire, dlock_lock_acquire(dlock_rwlock_write(D.rw), 1000))                           \
    X(multilock_acquire, dlock_lock_acquire(D.multi, 1000))                                        \
    X(multilock_is_locked, dlock_lock_is_locked(D.multi, &(bool){false}))                          \
    X(sem_try_set, dlock_semaphore_try_set_permits(D.sem, 1, NULL))                                \
    X(sem_add, dlock_semaphore_add_permits(D.sem, 1))                                              \
    X(sem_acquire_forever, dlock_semaphore_acquire(D.sem, 1))                                      \
    X(sem_try_acquire_5s, dlock_semaphore_try_acquire(D.sem, 1, 5000))                             \
    X(sem_release, dlock_semaphore_release(D.sem, 1))                                              \
    X(sem_available, dlock_semaphore_available(D.sem, &(int64_t){0}))                              \
    X(sem_drain, dlock_semaphore_drain(D.sem, NULL))                                               \
    X(sem_acquire_async,                                                                           \
      async_wait(dlock_semaphore_acquire_async(D.sem, 1, DLOCK_FOREVER, dead_sem_cb, NULL)))       \
    X(sem_release_async, async_wait(dlock_semaphore_release_async(D.sem, 1, dead_sem_cb, NULL)))   \
    X(permits_try_set, dlock_permits_try_set_permits(D.permits, 1, NULL))                          \
    X(permits_acquire_forever, dlock_permits_acquire(D.permits, DLOCK_FOREVER, -1, &D.id))         \
    X(permits_release, dlock_permits_release(D.permits, &D.id))                                    \
    X(permits_update_lease, dlock_permits_update_lease(D.permits, &D.id, 1000))                    \
    X(permits_available, dlock_permits_available(D.permits, &(int64_t){0}))                        \
    X(permits_acquire_async, async_wait(dlock_permits_acquire_async(D.permits, DLOCK_FOREVER, -1,  \
                                                                    dead_permits_cb, NULL)))       \
    X(permits_release_async,                                                                       \
      async_wait(dlock_permits_release_async(D.permits, &D.id, dead_permits_cb, NULL)))            \
    X(latch_try_set, dlock_latch_try_set_count(D.latch, 1, NULL))                                  \
    X(latch_count_down, dlock_latch_count_down(D.latch))                                           \
    X(latch_count, dlock_latch_count(D.latch, &(int64_t){0}))                                      \
    X(latch_await_forever, dlock_latch_await(D.latch, DLOCK_FOREVER))                              \
    X(latch_await_async,                                                                           \
      async_wait(dlock_latch_await_async(D.latch, DLOCK_FOREVER, dead_latch_cb, NULL)))            \
    X(latch_count_down_async,                                                                      \
      async_wait(dlock_latch_count_down_async(D.latch, dead_latch_cb, NULL)))

typedef struct dead_case {
    const char *call;
    int (*run)(void);
} dead_case;

#define DEFINE_DEAD(id, call)                                                                      \
    static int dead_##id(void) {                                                                   \
        return (call);                                                                             \
    }
#define DEAD_ROW(id, call) {#call, dead_##id},
DEAD_CASES(DEFINE_DEAD)
static const dead_case DEAD_TABLE[] = {DEAD_CASES(DEAD_ROW)};

static void test_calls_on_a_client_whose_server_died_fail_with_econn_in_time(void **state) {
    (void)state;
    test_watchdog_arm(BAD_BUDGET_S, __func__);
    assert_int_equal(redis_fixture_start(NULL, &D.f), 0);
    dlock_options o;
    dlock_options_init(&o);
    o.url = redis_fixture_unix_url(D.f);
    o.timeout_ms = DEAD_TIMEOUT_MS;
    o.retry_attempts = DEAD_RETRIES;
    o.retry_delay_ms = 50;
    o.connect_timeout_ms = 1000;
    ASSERT_OK(dlock_client_new(&o, &D.c));
    ASSERT_OK(dlock_lock_new(D.c, "dead:lock", &D.lock));
    ASSERT_OK(dlock_lock_new(D.c, "dead:held", &D.held));
    ASSERT_OK(dlock_fencedlock_new(D.c, "dead:fenced", &D.fenced));
    ASSERT_OK(dlock_fairlock_new(D.c, "dead:fair", &D.fair));
    ASSERT_OK(dlock_rwlock_new(D.c, "dead:rw", &D.rw));
    ASSERT_OK(dlock_lock_new(D.c, "dead:m1", &D.members[0]));
    ASSERT_OK(dlock_lock_new(D.c, "dead:m2", &D.members[1]));
    ASSERT_OK(dlock_multilock_new(D.members, 2, &D.multi));
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof(name), "dead:r%d", i);
        ASSERT_OK(dlock_lock_new(D.c, name, &D.red_members[i]));
    }
    ASSERT_OK(dlock_redlock_new(D.red_members, 3, &D.red));
    ASSERT_OK(dlock_semaphore_new(D.c, "dead:sem", &D.sem));
    ASSERT_OK(dlock_permits_new(D.c, "dead:permits", &D.permits));
    ASSERT_OK(dlock_latch_new(D.c, "dead:latch", &D.latch));
    memcpy(D.id.hex, "00112233445566778899aabbccddeeff", 33);
    ASSERT_OK(dlock_lock_try_acquire(D.held, 0, 60000));
    ASSERT_OK(dlock_client_ping(D.c));

    assert_int_equal(redis_fixture_kill(D.f), 0);
    /* seconds more: a loaded machine does not miss it, and a call that waited for anything
     * but its own command limits would still be far beyond it */
    int64_t slack = test_prompt_ms();
    for (size_t i = 0; i < BAD_COUNT(DEAD_TABLE); i++) {
        const dead_case *row = &DEAD_TABLE[i];
        int64_t start = test_now_ms();
        dlock__set_last_error("");
        int rc = row->run();
        int64_t took = test_now_ms() - start;
        if (rc != DLOCK_ECONN)
            fail_msg("dead server: %s = %s (%s) after %lld ms, expected DLOCK_ECONN", row->call,
                     dlock_err_name(rc), dlock_last_error(), (long long)took);
        if (took > DEAD_BOUND_MS + slack)
            fail_msg("dead server: %s took %lld ms, more than %d ms + slack", row->call,
                     (long long)took, DEAD_BOUND_MS);
    }
    /* RedLock: no member answers; it retries until its wait runs out, then reports the
     * members' error (or DLOCK_ETIMEDOUT if none answered within its answer budget). */
    int64_t start = test_now_ms();
    int rc = dlock_lock_try_acquire(D.red, 300, 1000);
    int64_t took = test_now_ms() - start;
    if (rc != DLOCK_ECONN && rc != DLOCK_ETIMEDOUT)
        fail_msg("dead server: redlock try_acquire(300) = %s (%s)", dlock_err_name(rc),
                 dlock_last_error());
    if (took > 300 + DEAD_BOUND_MS + slack)
        fail_msg("dead server: redlock try_acquire(300) took %lld ms", (long long)took);
    printf("dead server: %zu calls (and a RedLock) failed with DLOCK_ECONN within %d ms + slack\n",
           BAD_COUNT(DEAD_TABLE), DEAD_BOUND_MS);

    /* the server comes back (empty): the same client works again */
    assert_int_equal(redis_fixture_restart(D.f), 0);
    bool ok = false;
    POLL_UNTIL(ok, dlock_client_ping(D.c) == DLOCK_OK, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_OK(dlock_lock_try_acquire(D.lock, 0, 1000));
    ASSERT_OK(dlock_lock_release(D.lock));

    dlock_lock_free(D.multi);
    dlock_lock_free(D.red);
    dlock_lock_free(D.members[0]);
    dlock_lock_free(D.members[1]);
    for (int i = 0; i < 3; i++)
        dlock_lock_free(D.red_members[i]);
    dlock_lock_free(D.lock);
    dlock_lock_free(D.held);
    dlock_lock_free(D.fenced);
    dlock_lock_free(D.fair);
    dlock_rwlock_free(D.rw);
    dlock_semaphore_free(D.sem);
    dlock_permits_free(D.permits);
    dlock_latch_free(D.latch);
    ASSERT_OK(dlock_client_free(D.c));
    redis_fixture_stop(D.f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calls_on_a_client_whose_server_died_fail_with_econn_in_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
