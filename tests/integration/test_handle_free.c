/* SPDX-License-Identifier: MIT */
/* test_handle_free.c — freeing a handle while a call on it waits, for every primitive
 * (lock, fair lock, read-write lock, semaphore, expiring-permit semaphore, latch), on the
 * application's own libev loop and on a blocking client's own loop thread.
 *
 * What is proven (the contract of dlock.h, "Freeing a handle"): the waiting call's callback
 * runs exactly once, with DLOCK_ECANCELED, never inside *_free; on the application's loop
 * it runs on a later turn, and off the loop thread *_free returns only after it has run.
 * The handle passed to it is still readable there, and every call made on it from there is
 * refused with DLOCK_ECLOSED (its callback never runs). The wait leaves nothing behind: its
 * subscription goes, and valgrind / ASan see no invalid access and no leak.
 *
 * Each test makes the object busy through a second, blocking client (a lock held by it, a
 * latch set by it; the semaphores are simply empty), so the waiting call is the tested
 * client's only business. Every test starts its own server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core_call.h"
#include "dlock.h"
#include "dlock/adapters/libev.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60
#define OWNER 7001u
#define NAME "freed"

/* ---- what the waiting call's callback saw ------------------------------------------------ */

typedef struct seen {
    atomic_int calls;
    int status;
    int retry_rc; /* a call on the same handle made from inside the callback */
    char retry_error[160];
    char name[32];          /* the handle's name, read inside the callback (locks) */
    atomic_int retry_calls; /* callbacks of that call: must stay 0 */
} seen;

static void retry_ran(seen *s) {
    atomic_fetch_add(&s->retry_calls, 1);
}

static void note_retry(seen *s, int rc) {
    s->retry_rc = rc;
    snprintf(s->retry_error, sizeof(s->retry_error), "%s", dlock_last_error());
}

static void lock_retry_done(dlock_lock *l, int status, void *arg) {
    (void)l;
    (void)status;
    retry_ran(arg);
}

static void lock_waited(dlock_lock *l, int status, void *arg) {
    seen *s = arg;
    s->status = status;
    snprintf(s->name, sizeof(s->name), "%s", dlock_lock_name(l));
    note_retry(s, dlock_lock_acquire_async(l, OWNER, DLOCK_FOREVER, 60000, lock_retry_done, s));
    atomic_fetch_add(&s->calls, 1);
}

static void sem_retry_done(dlock_semaphore *sem, int status, void *arg) {
    (void)sem;
    (void)status;
    retry_ran(arg);
}

static void sem_waited(dlock_semaphore *sem, int status, void *arg) {
    seen *s = arg;
    s->status = status;
    note_retry(s, dlock_semaphore_acquire_async(sem, 1, DLOCK_FOREVER, sem_retry_done, s));
    atomic_fetch_add(&s->calls, 1);
}

static void permits_retry_done(dlock_permits *p, int status, const dlock_permit_id *id, void *arg) {
    (void)p;
    (void)status;
    (void)id;
    retry_ran(arg);
}

static void permits_waited(dlock_permits *p, int status, const dlock_permit_id *id, void *arg) {
    (void)id;
    seen *s = arg;
    s->status = status;
    note_retry(s, dlock_permits_acquire_async(p, DLOCK_FOREVER, -1, permits_retry_done, s));
    atomic_fetch_add(&s->calls, 1);
}

static void latch_retry_done(dlock_latch *l, int status, void *arg) {
    (void)l;
    (void)status;
    retry_ran(arg);
}

static void latch_waited(dlock_latch *l, int status, void *arg) {
    seen *s = arg;
    s->status = status;
    note_retry(s, dlock_latch_await_async(l, DLOCK_FOREVER, latch_retry_done, s));
    atomic_fetch_add(&s->calls, 1);
}

/* ---- the subject: a tested client, its handle, and a holder making the object busy ------- */

typedef struct subject {
    redis_fixture *f;
    bool app_loop; /* the tested client is on the test's loop, else a blocking client */
    struct ev_loop *loop;
    ev_timer tick;
    dlock_client *c;
    dlock_client *holder_client;
    /* the tested handle (one of) */
    dlock_lock *l;
    dlock_rwlock *rw;
    dlock_semaphore *s;
    dlock_permits *p;
    dlock_latch *latch;
    /* the holder's handle, if it needs one */
    dlock_lock *holder_lock;
    dlock_rwlock *holder_rw;
    dlock_latch *holder_latch;
} subject;

typedef struct kind {
    const char *what;
    void (*open)(subject *t);               /* the handle on t->c, the object made busy */
    int (*wait_async)(subject *t, seen *s); /* an async call that waits on the busy object */
    void (*free_handle)(subject *t);
} kind;

static void lock_wait_open(subject *t, int (*make)(dlock_client *, const char *, dlock_lock **)) {
    ASSERT_RC(make(t->c, NAME, &t->l), DLOCK_OK);
    ASSERT_RC(make(t->holder_client, NAME, &t->holder_lock), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(t->holder_lock, 0, 60000), DLOCK_OK);
}

static void plain_lock_open(subject *t) {
    lock_wait_open(t, dlock_lock_new);
}

static void fair_lock_open(subject *t) {
    lock_wait_open(t, dlock_fairlock_new);
}

/* The write half of the tested read-write lock waits on a read hold of the holder's. */
static void rw_lock_open(subject *t) {
    ASSERT_RC(dlock_rwlock_new(t->c, NAME, &t->rw), DLOCK_OK);
    t->l = dlock_rwlock_write(t->rw);
    ASSERT_RC(dlock_rwlock_new(t->holder_client, NAME, &t->holder_rw), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(dlock_rwlock_read(t->holder_rw), 0, 60000), DLOCK_OK);
}

static int lock_wait_async(subject *t, seen *s) {
    return dlock_lock_acquire_async(t->l, OWNER, DLOCK_FOREVER, 60000, lock_waited, s);
}

static void lock_free(subject *t) {
    dlock_lock_free(t->l);
    t->l = NULL;
}

static void rw_free(subject *t) {
    dlock_rwlock_free(t->rw);
    t->rw = NULL;
    t->l = NULL;
}

static void semaphore_open(subject *t) {
    ASSERT_RC(dlock_semaphore_new(t->c, NAME, &t->s), DLOCK_OK); /* absent: 0 permits */
}

static int semaphore_wait_async(subject *t, seen *s) {
    return dlock_semaphore_acquire_async(t->s, 1, DLOCK_FOREVER, sem_waited, s);
}

static void semaphore_free(subject *t) {
    dlock_semaphore_free(t->s);
    t->s = NULL;
}

static void permits_open(subject *t) {
    ASSERT_RC(dlock_permits_new(t->c, NAME, &t->p), DLOCK_OK); /* absent: no permit */
}

static int permits_wait_async(subject *t, seen *s) {
    return dlock_permits_acquire_async(t->p, DLOCK_FOREVER, -1, permits_waited, s);
}

static void permits_free(subject *t) {
    dlock_permits_free(t->p);
    t->p = NULL;
}

static void latch_open(subject *t) {
    ASSERT_RC(dlock_latch_new(t->c, NAME, &t->latch), DLOCK_OK);
    ASSERT_RC(dlock_latch_new(t->holder_client, NAME, &t->holder_latch), DLOCK_OK);
    ASSERT_RC(dlock_latch_try_set_count(t->holder_latch, 1, NULL), DLOCK_OK);
}

static int latch_wait_async(subject *t, seen *s) {
    return dlock_latch_await_async(t->latch, DLOCK_FOREVER, latch_waited, s);
}

static void latch_free(subject *t) {
    dlock_latch_free(t->latch);
    t->latch = NULL;
}

static const kind LOCK = {"lock", plain_lock_open, lock_wait_async, lock_free};
static const kind FAIR_LOCK = {"fair lock", fair_lock_open, lock_wait_async, lock_free};
static const kind RW_LOCK = {"rw lock", rw_lock_open, lock_wait_async, rw_free};
static const kind SEMAPHORE = {"semaphore", semaphore_open, semaphore_wait_async, semaphore_free};
static const kind PERMITS = {"permits", permits_open, permits_wait_async, permits_free};
static const kind LATCH = {"latch", latch_open, latch_wait_async, latch_free};

static void subject_open(subject *t, const kind *k, bool app_loop) {
    memset(t, 0, sizeof(*t));
    t->f = start_server();
    t->app_loop = app_loop;
    t->holder_client = connect_client(t->f);
    if (app_loop) {
        t->loop = polling_loop_new(&t->tick);
        t->c = connect_on_loop(t->f, t->loop);
        sync_with_client(t->loop, t->c, slack_ms(5000)); /* connected */
    } else {
        t->c = connect_client(t->f);
    }
    k->open(t);
}

static void subject_close(subject *t) {
    dlock_lock_free(t->holder_lock);
    dlock_rwlock_free(t->holder_rw);
    dlock_latch_free(t->holder_latch);
    ASSERT_RC(dlock_client_free(t->holder_client), DLOCK_OK);
    ASSERT_RC(dlock_client_free(t->c), DLOCK_OK);
    if (t->loop)
        polling_loop_free(t->loop, &t->tick);
    redis_fixture_stop(t->f);
}

/* Until cond holds within timeout_ms: the test's loop runs meanwhile if the client is on it. */
#define WAIT_FOR(t, cond, timeout_ms)                                                              \
    do {                                                                                           \
        bool ok_ = false;                                                                          \
        if ((t)->app_loop)                                                                         \
            RUN_LOOP_UNTIL((t)->loop, ok_, cond, timeout_ms);                                      \
        else                                                                                       \
            POLL_UNTIL(ok_, cond, timeout_ms);                                                     \
        if (!ok_)                                                                                  \
            fail_msg("%s: not within %lld ms", #cond, (long long)(timeout_ms));                    \
    } while (0)

static void expect_canceled_once_and_retry_refused(subject *t, const kind *k, seen *s) {
    if (atomic_load(&s->calls) != 1)
        fail_msg("%s: the waiting call's callback ran %d times", k->what, atomic_load(&s->calls));
    ASSERT_RC(s->status, DLOCK_ECANCELED);
    if (s->retry_rc != DLOCK_ECLOSED)
        fail_msg("%s: a call from the cancel callback gave %s (%s), expected DLOCK_ECLOSED",
                 k->what, dlock_err_name(s->retry_rc), s->retry_error);
    assert_true(s->retry_error[0] != '\0');
    /* the wait leaves nothing behind; a refused call never calls back */
    WAIT_FOR(t, subscribed_channels(t->f) == 0, slack_ms(5000));
    if (t->app_loop)
        sync_with_client(t->loop, t->c, slack_ms(5000));
    else
        ASSERT_RC(dlock_client_ping(t->c), DLOCK_OK);
    assert_int_equal(atomic_load(&s->calls), 1);
    assert_int_equal(atomic_load(&s->retry_calls), 0);
}

/* A call waits on the busy object; its handle is freed; the cancel callback follows. */
static void free_while_waiting(const kind *k, bool app_loop) {
    test_watchdog_arm(BUDGET_S, k->what);
    subject t;
    subject_open(&t, k, app_loop);
    seen s = {0};
    ASSERT_RC(k->wait_async(&t, &s), DLOCK_OK);
    /* it waits (a lock's waiter listens on the lock's turn channel too) */
    WAIT_FOR(&t, subscribed_channels(t.f) >= 1, slack_ms(5000));
    assert_int_equal(atomic_load(&s.calls), 0);
    k->free_handle(&t);
    if (app_loop) {
        assert_int_equal(atomic_load(&s.calls), 0); /* never inside *_free */
        WAIT_FOR(&t, atomic_load(&s.calls) > 0, slack_ms(5000));
    }
    /* off the loop thread *_free has waited for the callback */
    expect_canceled_once_and_retry_refused(&t, k, &s);
    if (s.name[0])
        assert_string_equal(s.name, NAME);
    subject_close(&t);
}

/* ---- tests: the application's loop ------------------------------------------------------- */

static void test_lock_freed_on_app_loop_cancels_its_wait_once_and_refuses_calls(void **state) {
    (void)state;
    free_while_waiting(&LOCK, true);
}

static void test_fair_lock_freed_on_app_loop_cancels_its_wait_once_and_refuses_calls(void **state) {
    (void)state;
    free_while_waiting(&FAIR_LOCK, true);
}

static void test_rw_lock_freed_on_app_loop_cancels_its_wait_once_and_refuses_calls(void **state) {
    (void)state;
    free_while_waiting(&RW_LOCK, true);
}

static void test_semaphore_freed_on_app_loop_cancels_its_wait_once_and_refuses_calls(void **state) {
    (void)state;
    free_while_waiting(&SEMAPHORE, true);
}

static void test_permits_freed_on_app_loop_cancels_its_wait_once_and_refuses_calls(void **state) {
    (void)state;
    free_while_waiting(&PERMITS, true);
}

static void test_latch_freed_on_app_loop_cancels_its_wait_once_and_refuses_calls(void **state) {
    (void)state;
    free_while_waiting(&LATCH, true);
}

/* ---- tests: a blocking client's own loop thread ------------------------------------------- */

static void test_lock_freed_off_its_loop_returns_after_the_cancel_callback(void **state) {
    (void)state;
    free_while_waiting(&LOCK, false);
}

static void test_fair_lock_freed_off_its_loop_returns_after_the_cancel_callback(void **state) {
    (void)state;
    free_while_waiting(&FAIR_LOCK, false);
}

static void test_rw_lock_freed_off_its_loop_returns_after_the_cancel_callback(void **state) {
    (void)state;
    free_while_waiting(&RW_LOCK, false);
}

static void test_semaphore_freed_off_its_loop_returns_after_the_cancel_callback(void **state) {
    (void)state;
    free_while_waiting(&SEMAPHORE, false);
}

static void test_permits_freed_off_its_loop_returns_after_the_cancel_callback(void **state) {
    (void)state;
    free_while_waiting(&PERMITS, false);
}

static void test_latch_freed_off_its_loop_returns_after_the_cancel_callback(void **state) {
    (void)state;
    free_while_waiting(&LATCH, false);
}

/* ---- a call freed before it started ------------------------------------------------------- */

/* The acquire is still in the client's queue when the handle is freed: it never starts,
 * its callback says DLOCK_ECANCELED on the next turn, and the call made from there is
 * refused like any other. */
static void test_lock_freed_before_its_queued_acquire_started_cancels_it(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    subject t;
    subject_open(&t, &LOCK, true);
    seen s = {0};
    ASSERT_RC(lock_wait_async(&t, &s), DLOCK_OK);
    lock_free(&t);
    assert_int_equal(atomic_load(&s.calls), 0);
    WAIT_FOR(&t, atomic_load(&s.calls) > 0, slack_ms(5000));
    expect_canceled_once_and_retry_refused(&t, &LOCK, &s);
    subject_close(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lock_freed_on_app_loop_cancels_its_wait_once_and_refuses_calls),
        cmocka_unit_test(test_fair_lock_freed_on_app_loop_cancels_its_wait_once_and_refuses_calls),
        cmocka_unit_test(test_rw_lock_freed_on_app_loop_cancels_its_wait_once_and_refuses_calls),
        cmocka_unit_test(test_semaphore_freed_on_app_loop_cancels_its_wait_once_and_refuses_calls),
        cmocka_unit_test(test_permits_freed_on_app_loop_cancels_its_wait_once_and_refuses_calls),
        cmocka_unit_test(test_latch_freed_on_app_loop_cancels_its_wait_once_and_refuses_calls),
        cmocka_unit_test(test_lock_freed_off_its_loop_returns_after_the_cancel_callback),
        cmocka_unit_test(test_fair_lock_freed_off_its_loop_returns_after_the_cancel_callback),
        cmocka_unit_test(test_rw_lock_freed_off_its_loop_returns_after_the_cancel_callback),
        cmocka_unit_test(test_semaphore_freed_off_its_loop_returns_after_the_cancel_callback),
        cmocka_unit_test(test_permits_freed_off_its_loop_returns_after_the_cancel_callback),
        cmocka_unit_test(test_latch_freed_off_its_loop_returns_after_the_cancel_callback),
        cmocka_unit_test(test_lock_freed_before_its_queued_acquire_started_cancels_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
