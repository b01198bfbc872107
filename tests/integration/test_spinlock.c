/* SPDX-License-Identifier: MIT */
/* test_spinlock.c — the spin lock (Redisson RSpinLock) of src/spinlock/, against a real
 * redis-server: the reentrant lock's hash and nothing else in Redis; a busy owner waits by
 * backoff (1 ms doubling to 128 ms), so a wait sends a bounded number of attempts and no
 * SUBSCRIBE, and a release or force release no PUBLISH (proved against a reentrant lock's
 * release, which the same counters do see); contention between two clients under the
 * checker; leases, the watchdog and the lost callback; the async face on the application's
 * own loop; bad input and keys of another type.
 *
 * Every test starts its own server. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "checker.h"
#include "core_call.h"
#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"
#include "spinlock_helpers.h"
#include "test_util.h"

#define BUDGET_S 120
#define FIELD_MAX 128
#define BACKOFF_MAX_MS 128 /* the longest pause between two attempts */

/* ---- helpers ------------------------------------------------------------------------------ */

static dlock_lock *new_spin(dlock_client *c, const char *name) {
    dlock_lock *l = NULL;
    ASSERT_OK(dlock_spinlock_new(c, name, &l));
    return l;
}

/* Two clients of one fresh server, each with a spin lock on one name: a holds, b contends. */
typedef struct duel {
    redis_fixture *f;
    dlock_client *a, *b;
    dlock_lock *la, *lb;
} duel;

/* a's client gets cfg_a; b's the defaults. */
static void duel_open(duel *d, const char *name, test_client_cfg cfg_a) {
    d->f = start_server();
    d->a = connect_client_cfg(d->f, cfg_a);
    d->b = connect_client(d->f);
    d->la = new_spin(d->a, name);
    d->lb = new_spin(d->b, name);
}

static void duel_close(duel *d) {
    dlock_lock_free(d->la);
    dlock_lock_free(d->lb);
    dlock_client_free(d->a);
    dlock_client_free(d->b);
    redis_fixture_stop(d->f);
}

/* A blocking acquire on another thread (another owner), which then releases. */
typedef struct waiting_owner {
    dlock_lock *l;
    int64_t wait_ms;
    int acquire_rc, release_rc;
    int64_t acquired_ms;
    pthread_t thread;
} waiting_owner;

static void *acquire_then_release(void *arg) {
    waiting_owner *w = arg;
    w->acquire_rc = dlock_lock_try_acquire(w->l, w->wait_ms, DLOCK_WATCHDOG);
    w->acquired_ms = test_now_ms();
    w->release_rc = w->acquire_rc == DLOCK_OK ? dlock_lock_release(w->l) : DLOCK_OK;
    return NULL;
}

static void waiting_owner_start(waiting_owner *w, dlock_lock *l, int64_t wait_ms) {
    memset(w, 0, sizeof(*w));
    w->l = l;
    w->wait_ms = wait_ms;
    assert_int_equal(pthread_create(&w->thread, NULL, acquire_then_release, w), 0);
}

/* ---- the layout and reentrancy -------------------------------------------------------------- */

static void test_holds_count_0_1_2_1_0_in_the_reentrant_locks_hash_and_nothing_else(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_spin(c, "counted");
    char field[FIELD_MAX];
    owner_field(c, dlock_thread_owner(), field, sizeof(field));
    int64_t seen[5];
    ASSERT_OK(dlock_lock_hold_count(l, &seen[0]));
    ASSERT_OK(dlock_lock_acquire(l, 10000));
    ASSERT_OK(dlock_lock_hold_count(l, &seen[1]));
    ASSERT_OK(dlock_lock_try_acquire(l, 0, 20000));
    ASSERT_OK(dlock_lock_hold_count(l, &seen[2]));

    /* N is the reentrant lock's hash: field -> holds, the lease as its PEXPIRE */
    assert_int_equal(redis_fixture_int(f, "HGET counted %s", field), 2);
    assert_int_equal(redis_fixture_int(f, "HLEN counted"), 1);
    ASSERT_BETWEEN(pttl_of(f, "counted"), 1, 20000);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 1); /* no token, queue or other key */
    bool locked = false, held = false;
    ASSERT_OK(dlock_lock_is_locked(l, &locked));
    ASSERT_OK(dlock_lock_is_held(l, &held));
    assert_true(locked && held);

    ASSERT_OK(dlock_lock_release(l));
    ASSERT_OK(dlock_lock_hold_count(l, &seen[3]));
    assert_int_equal(redis_fixture_int(f, "HGET counted %s", field), 1);
    ASSERT_OK(dlock_lock_release(l));
    ASSERT_OK(dlock_lock_hold_count(l, &seen[4]));
    const int64_t want[5] = {0, 1, 2, 1, 0};
    for (int i = 0; i < 5; i++)
        if (seen[i] != want[i])
            fail_msg("hold count #%d = %lld, expected %lld", i, (long long)seen[i],
                     (long long)want[i]);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    int64_t ttl = 0;
    ASSERT_OK(dlock_lock_ttl(l, &ttl));
    assert_int_equal(ttl, -2);
    ASSERT_RC(dlock_lock_release(l), DLOCK_ENOTOWNER);
    uint64_t token = 0;
    ASSERT_RC(dlock_lock_token(l, &token), DLOCK_EINVAL); /* not fenced */
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_a_spin_lock_and_a_reentrant_lock_of_one_name_exclude_each_other(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_lock *plain = NULL;
    ASSERT_OK(dlock_lock_new(a, "shared", &plain));
    dlock_lock *spin = new_spin(b, "shared");
    ASSERT_OK(dlock_lock_acquire(plain, 10000));
    ASSERT_RC(dlock_lock_try_acquire(spin, 0, 10000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_release(spin), DLOCK_ENOTOWNER);
    ASSERT_OK(dlock_lock_release(plain));
    ASSERT_OK(dlock_lock_try_acquire(spin, 0, 10000));
    ASSERT_RC(dlock_lock_try_acquire(plain, 0, 10000), DLOCK_ETIMEDOUT);
    ASSERT_OK(dlock_lock_release(spin));
    assert_int_equal(redis_fixture_int(f, "EXISTS shared"), 0);
    dlock_lock_free(spin);
    dlock_lock_free(plain);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- waiting ------------------------------------------------------------------------------ */

static void test_try_acquire_on_a_held_spin_lock_times_out_after_its_wait(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    duel d;
    duel_open(&d, "busy", (test_client_cfg){0});
    ASSERT_OK(dlock_lock_acquire(d.la, 20000));

    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(d.lb, 300, 10000), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    ASSERT_BETWEEN(took, 300, 300 + test_prompt_ms()); /* the holder's lease is 20 s */
    assert_non_null(strstr(dlock_last_error(), "spin lock"));

    long long scripts = script_calls(d.f);
    start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(d.lb, 0, 10000), DLOCK_ETIMEDOUT); /* one attempt */
    ASSERT_BETWEEN(test_now_ms() - start, 0, test_prompt_ms());
    assert_int_equal(script_calls(d.f) - scripts, 1);

    char field[FIELD_MAX];
    owner_field(d.a, dlock_thread_owner(), field, sizeof(field));
    assert_int_equal(redis_fixture_int(d.f, "HGET busy %s", field), 1); /* untouched */
    assert_int_equal(redis_fixture_int(d.f, "HLEN busy"), 1);
    ASSERT_OK(dlock_lock_release(d.la));
    duel_close(&d);
}

static void
test_a_waiter_gets_the_lock_after_release_with_no_publish_and_no_subscribe(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    duel d;
    duel_open(&d, "quiet", (test_client_cfg){0});
    long long pubsub_before = pubsub_calls(d.f);
    ASSERT_OK(dlock_lock_acquire(d.la, DLOCK_WATCHDOG));

    long long scripts = script_calls(d.f);
    waiting_owner w;
    waiting_owner_start(&w, d.lb, DLOCK_FOREVER);
    bool ok = false;
    POLL_UNTIL(ok, script_calls(d.f) - scripts >= 4, test_slack_ms(2000)); /* busy 4 times */
    assert_true(ok);
    assert_int_equal(numsub(d.f, "redisson_lock__channel:{quiet}"), 0);
    assert_no_subscriptions(d.f);

    int64_t released_ms = test_now_ms();
    ASSERT_OK(dlock_lock_release(d.la));
    assert_int_equal(pthread_join(w.thread, NULL), 0);
    ASSERT_OK(w.acquire_rc);
    ASSERT_OK(w.release_rc);
    /* seen at its next attempt, one backoff step after the release, not when the holder's
     * 30 s watchdog lease would have run out */
    ASSERT_BETWEEN(w.acquired_ms - released_ms, 0, BACKOFF_MAX_MS + test_prompt_ms());
    assert_int_equal(pubsub_calls(d.f), pubsub_before);
    assert_no_subscriptions(d.f);

    /* the counters do see a release's PUBLISH from inside a script: a reentrant lock's */
    dlock_lock *plain = NULL;
    ASSERT_OK(dlock_lock_new(d.a, "loud", &plain));
    ASSERT_OK(dlock_lock_acquire(plain, 10000));
    ASSERT_OK(dlock_lock_release(plain));
    assert_int_equal(pubsub_calls(d.f), pubsub_before + 1);
    printf("# the waiter had the lock %lld ms after the release\n",
           (long long)(w.acquired_ms - released_ms));
    dlock_lock_free(plain);
    duel_close(&d);
}

/* Attempts (script calls) of one try_acquire of wait_ms on a lock held all along. */
static long long attempts_in_wait(redis_fixture *f, dlock_lock *waiter, int64_t wait_ms) {
    long long before = script_calls(f);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(waiter, wait_ms, 10000), DLOCK_ETIMEDOUT);
    ASSERT_BETWEEN(test_now_ms() - start, wait_ms, wait_ms + test_prompt_ms());
    return script_calls(f) - before;
}

static void test_a_wait_backs_off_from_1_ms_doubling_to_128_ms_steps(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    duel d;
    duel_open(&d, "paced", (test_client_cfg){0});
    /* an explicit lease and no watchdog: the holder sends nothing in the windows */
    ASSERT_OK(dlock_lock_acquire(d.la, 60000));

    /* 120 ms: the first attempt, then pauses of 1, 2, 4, 8, 16, 32, 64 ms (each less up to a
     * quarter) and the one at the deadline: about 8. A fixed 128 ms pause would give 2. */
    long long early = attempts_in_wait(d.f, d.lb, 120);
    /* 1500 ms: the same 8 in the first ~127 ms, then one every 96..128 ms: 19..24. A 1 ms
     * poll would send over a thousand. */
    long long later = attempts_in_wait(d.f, d.lb, 1500);
    printf("# attempts: %lld in a 120 ms wait, %lld in a 1500 ms wait\n", early, later);
    ASSERT_BETWEEN(early, 3, 10);
    ASSERT_BETWEEN(later, 8, 26);
    /* after the doubling, the 1380 ms more cost at most one attempt per 96 ms */
    ASSERT_BETWEEN(later - early, 1, 1380 / 96 + 2);
    assert_no_subscriptions(d.f);
    ASSERT_OK(dlock_lock_release(d.la));
    duel_close(&d);
}

static void test_a_waiter_looks_again_when_the_holders_lease_runs_out(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    duel d;
    duel_open(&d, "leased", (test_client_cfg){0});
    ASSERT_OK(dlock_lock_acquire(d.la, 400));
    int64_t start = test_now_ms();
    ASSERT_OK(dlock_lock_try_acquire(d.lb, TEST_SLOW_MS, 10000));
    /* Redis frees it at 400 ms; the waiter is then one pause late, not at its deadline */
    ASSERT_BETWEEN(test_now_ms() - start, 350, 400 + BACKOFF_MAX_MS + test_prompt_ms());
    ASSERT_OK(dlock_lock_release(d.lb));
    duel_close(&d);
}

/* ---- contention ------------------------------------------------------------------------------ */

#define CLIENTS 2
#define THREADS_PER_CLIENT 2

typedef struct spin_worker {
    checker *k;
    dlock_lock *l;
    int id;
    long sections;
} spin_worker;

static void *spin_worker_loop(void *arg) {
    spin_worker *w = arg;
    int64_t lease = w->id % 2 ? 30000 : DLOCK_WATCHDOG;
    for (long i = 0; i < w->sections; i++) {
        int rc = dlock_lock_acquire(w->l, lease);
        if (rc != DLOCK_OK) {
            checker_error(w->k, w->id, "acquire: %s", dlock_err_name(rc));
            break;
        }
        bool again = i % 2 == 1; /* reentrant inside every other section */
        if (again && (rc = dlock_lock_acquire(w->l, lease)) != DLOCK_OK)
            checker_error(w->k, w->id, "reentrant acquire: %s", dlock_err_name(rc));
        long slot = checker_enter(w->k, w->id);
        checker_exit(w->k, slot, 0);
        if (again && (rc = dlock_lock_release(w->l)) != DLOCK_OK)
            checker_error(w->k, w->id, "reentrant release: %s", dlock_err_name(rc));
        if ((rc = dlock_lock_release(w->l)) != DLOCK_OK) {
            checker_error(w->k, w->id, "release: %s", dlock_err_name(rc));
            break;
        }
        if (i % 4 == 3)
            test_sleep_ms(1); /* now and then out for a while: the others get in */
    }
    checker_finished(w->k, w->id);
    return NULL;
}

static void test_threads_of_two_clients_never_overlap_and_the_counter_is_exact(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    enum { WORKERS = CLIENTS * THREADS_PER_CLIENT };
    long sections = test_scaled(100);
    checker *k = checker_new("spin lock", WORKERS, WORKERS * sections, false);
    dlock_client *c[CLIENTS];
    dlock_lock *l[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        c[i] = connect_client(f);
        l[i] = new_spin(c[i], "contended");
    }
    long long pubsub_before = pubsub_calls(f);
    spin_worker w[WORKERS];
    pthread_t t[WORKERS];
    int64_t start = test_now_ms();
    for (int i = 0; i < WORKERS; i++) {
        w[i] = (spin_worker){.k = k, .l = l[i % CLIENTS], .id = i, .sections = sections};
        assert_int_equal(pthread_create(&t[i], NULL, spin_worker_loop, &w[i]), 0);
    }
    for (int i = 0; i < WORKERS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    int64_t took = test_now_ms() - start;
    checker_report r = checker_check(k);
    printf("# %ld sections in %lld ms\n", r.sections, (long long)took);
    if (!r.ok)
        fail_msg("checker: %s %s", r.first_error, r.first_problem);
    assert_int_equal(r.overlaps, 0);
    assert_int_equal(r.counter, WORKERS * sections);
    assert_int_equal(r.counter, r.expected);
    assert_int_equal(pubsub_calls(f), pubsub_before);
    assert_int_equal(redis_fixture_int(f, "EXISTS contended"), 0);
    for (int i = 0; i < CLIENTS; i++) {
        dlock_lock_free(l[i]);
        dlock_client_free(c[i]);
    }
    checker_free(k);
    redis_fixture_stop(f);
}

/* ---- leases, the watchdog, losing it -------------------------------------------------------- */

static void test_the_watchdog_keeps_a_spin_lock_past_two_leases(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t watchdog = TEST_WATCHDOG_MS; /* a late renewal does not lose it */
    dlock_client *c = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = watchdog});
    dlock_lock *l = new_spin(c, "kept");
    lost_reset();
    ASSERT_OK(dlock_lock_on_lost(l, record_lost, NULL));
    ASSERT_OK(dlock_lock_acquire(l, DLOCK_WATCHDOG));
    int64_t until = test_now_ms() + 2 * watchdog;
    while (test_now_ms() < until) { /* held at every look, through two leases */
        ASSERT_BETWEEN(pttl_of(f, "kept"), 1, watchdog);
        test_sleep_ms(20);
    }
    bool held = false;
    ASSERT_OK(dlock_lock_is_held(l, &held));
    assert_true(held);
    assert_int_equal(lost_calls(), 0);
    ASSERT_OK(dlock_lock_release(l));
    assert_int_equal(redis_fixture_int(f, "EXISTS kept"), 0);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void
test_force_release_by_another_client_calls_the_lost_callback_and_publishes_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    /* the renewal, not a late one's confirmed time running out, finds it gone */
    const int64_t watchdog = TEST_WATCHDOG_MS;
    duel d;
    duel_open(&d, "taken", (test_client_cfg){.watchdog_ms = watchdog});
    lost_reset();
    ASSERT_OK(dlock_lock_on_lost(d.la, record_lost, NULL));
    ASSERT_OK(dlock_lock_acquire(d.la, DLOCK_WATCHDOG));
    long long pubsub_before = pubsub_calls(d.f);

    bool was_locked = false;
    ASSERT_OK(dlock_lock_force_release(d.lb, &was_locked));
    assert_true(was_locked);
    assert_int_equal(redis_fixture_int(d.f, "EXISTS taken"), 0);
    assert_int_equal(pubsub_calls(d.f), pubsub_before);
    bool ok = false;
    POLL_UNTIL(ok, lost_calls() == 1, watchdog / 3 + test_prompt_ms()); /* the next renewal */
    assert_true(ok);
    lost_record r = lost_get();
    assert_int_equal(r.reason, DLOCK_ELOST);
    assert_true(r.owner == dlock_thread_owner());
    assert_ptr_equal(r.lock, d.la);
    ASSERT_RC(dlock_lock_release(d.la), DLOCK_ELOST);

    ASSERT_OK(dlock_lock_force_release(d.lb, &was_locked));
    assert_false(was_locked);
    duel_close(&d);
}

/* ---- the async face on the application's loop ------------------------------------------ */

typedef struct call_record {
    int calls;
    int status;
    int64_t at_ms;
} call_record;

static void record_call(dlock_lock *l, int status, void *arg) {
    (void)l;
    call_record *r = arg;
    r->calls++;
    r->status = status;
    r->at_ms = test_now_ms();
}

static void test_async_acquire_waits_on_the_apps_loop_and_gets_it_after_release(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app app;
    app_open(&app, NULL, 2);
    app.l = new_spin(app.c, "async");
    dlock_lock *other = new_spin(app.c2, "async");
    call_record first = {0}, second = {0}, released = {0}, last = {0};
    long long pubsub_before = pubsub_calls(app.f);
    bool ok = false;

    ASSERT_OK(dlock_lock_acquire_async(app.l, 1, 0, DLOCK_WATCHDOG, record_call, &first));
    RUN_LOOP_UNTIL(app.loop, ok, first.calls == 1, test_slack_ms(2000));
    assert_true(ok);
    ASSERT_OK(first.status);
    ASSERT_OK(
        dlock_lock_acquire_async(other, 2, DLOCK_FOREVER, DLOCK_WATCHDOG, record_call, &second));
    run_loop_for(app.loop, 200); /* it backs off meanwhile */
    assert_int_equal(second.calls, 0);

    ASSERT_OK(dlock_lock_release_async(app.l, 1, record_call, &released));
    RUN_LOOP_UNTIL(app.loop, ok, released.calls == 1 && second.calls == 1,
                   BACKOFF_MAX_MS + test_prompt_ms());
    assert_true(ok);
    ASSERT_OK(released.status);
    ASSERT_OK(second.status);
    ASSERT_BETWEEN(second.at_ms - released.at_ms, 0, BACKOFF_MAX_MS + test_prompt_ms());
    char field[FIELD_MAX];
    owner_field(app.c2, 2, field, sizeof(field));
    assert_int_equal(redis_fixture_int(app.f, "HGET async %s", field), 1);

    ASSERT_OK(dlock_lock_release_async(other, 2, record_call, &last));
    RUN_LOOP_UNTIL(app.loop, ok, last.calls == 1, test_slack_ms(2000));
    assert_true(ok);
    ASSERT_OK(last.status);
    run_loop_for(app.loop, 50); /* each callback ran once */
    assert_int_equal(first.calls + second.calls + released.calls + last.calls, 4);
    assert_int_equal(redis_fixture_int(app.f, "EXISTS async"), 0);
    assert_int_equal(pubsub_calls(app.f), pubsub_before);
    dlock_lock_free(other);
    app_close(&app);
}

/* ---- no channel rights ------------------------------------------------------------------- */

/* A client of f as a user with every key and command but no channel (ACL resetchannels). */
static dlock_client *connect_without_channels(redis_fixture *f) {
    char url[512];
    snprintf(url, sizeof(url), "unix://%s?user=nochan&password=pw", redis_fixture_socket(f));
    return connect_client_cfg(f, (test_client_cfg){.url = url});
}

static void
test_a_user_without_channel_rights_holds_waits_for_and_releases_a_spin_lock(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    redisReply *r = redis_fixture_cmd(f, "ACL SETUSER nochan on >pw ~* resetchannels +@all");
    assert_true(r && r->type != REDIS_REPLY_ERROR);
    freeReplyObject(r);
    dlock_client *a = connect_without_channels(f);
    dlock_client *b = connect_without_channels(f);
    dlock_lock *la = new_spin(a, "acl");
    dlock_lock *lb = new_spin(b, "acl");
    ASSERT_OK(dlock_lock_acquire(la, DLOCK_WATCHDOG));
    long long scripts = script_calls(f);
    waiting_owner w;
    waiting_owner_start(&w, lb, 10000);
    bool ok = false;
    POLL_UNTIL(ok, script_calls(f) - scripts >= 3, test_slack_ms(2000)); /* it waits */
    assert_true(ok);
    ASSERT_OK(dlock_lock_release(la));
    assert_int_equal(pthread_join(w.thread, NULL), 0);
    ASSERT_OK(w.acquire_rc);
    ASSERT_OK(w.release_rc);
    bool was_locked = true;
    ASSERT_OK(dlock_lock_force_release(lb, &was_locked));
    assert_false(was_locked);

    /* the same user cannot release a reentrant lock: its PUBLISH is refused */
    dlock_lock *plain = NULL;
    ASSERT_OK(dlock_lock_new(a, "acl-plain", &plain));
    ASSERT_OK(dlock_lock_acquire(plain, 10000));
    ASSERT_RC(dlock_lock_release(plain), DLOCK_ENOPERM);
    dlock_lock_free(plain);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- bad input ------------------------------------------------------------------------------- */

static void test_bad_arguments_are_einval_and_a_key_of_another_type_is_left_alone(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    static char sentinel;
    dlock_lock *const untouched = (dlock_lock *)&sentinel;
    dlock_lock *l = untouched; /* a refused constructor leaves *out as it was */
    ASSERT_RC(dlock_spinlock_new(NULL, "x", &l), DLOCK_EINVAL);
    ASSERT_RC(dlock_spinlock_new(c, NULL, &l), DLOCK_EINVAL);
    ASSERT_RC(dlock_spinlock_new(c, "", &l), DLOCK_EINVAL);
    ASSERT_RC(dlock_spinlock_new(c, "x", NULL), DLOCK_EINVAL);
    assert_ptr_equal(l, untouched);

    l = new_spin(c, "text");
    freeReplyObject(redis_fixture_cmd(f, "SET text hello"));
    ASSERT_RC(dlock_lock_try_acquire(l, 0, 1000), DLOCK_EREDIS);
    assert_non_null(strstr(dlock_last_error(), "WRONGTYPE"));
    bool was_locked = true;
    ASSERT_RC(dlock_lock_force_release(l, &was_locked), DLOCK_EREDIS);
    assert_non_null(strstr(dlock_last_error(), "WRONGTYPE"));
    char *value = redis_fixture_str(f, "GET text");
    assert_string_equal(value, "hello");
    free(value);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_holds_count_0_1_2_1_0_in_the_reentrant_locks_hash_and_nothing_else),
        cmocka_unit_test(test_a_spin_lock_and_a_reentrant_lock_of_one_name_exclude_each_other),
        cmocka_unit_test(test_try_acquire_on_a_held_spin_lock_times_out_after_its_wait),
        cmocka_unit_test(
            test_a_waiter_gets_the_lock_after_release_with_no_publish_and_no_subscribe),
        cmocka_unit_test(test_a_wait_backs_off_from_1_ms_doubling_to_128_ms_steps),
        cmocka_unit_test(test_a_waiter_looks_again_when_the_holders_lease_runs_out),
        cmocka_unit_test(test_threads_of_two_clients_never_overlap_and_the_counter_is_exact),
        cmocka_unit_test(test_the_watchdog_keeps_a_spin_lock_past_two_leases),
        cmocka_unit_test(
            test_force_release_by_another_client_calls_the_lost_callback_and_publishes_nothing),
        cmocka_unit_test(test_async_acquire_waits_on_the_apps_loop_and_gets_it_after_release),
        cmocka_unit_test(
            test_a_user_without_channel_rights_holds_waits_for_and_releases_a_spin_lock),
        cmocka_unit_test(test_bad_arguments_are_einval_and_a_key_of_another_type_is_left_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
