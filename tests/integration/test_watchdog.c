/* SPDX-License-Identifier: MIT */
/* test_watchdog.c — the watchdog (src/core/engine/renew.c) against a real redis-server.
 *
 * A lease here is what a lock's acquire leaves in Redis: a hash with one owner field and a
 * PEXPIRE of watchdog_ms, created by the test through the fixture, then registered with
 * dlock__lease_new + dlock__lease_held on the client's loop thread. The client runs with
 * watchdog_ms 2400 (a tick every 800 ms) and renew_batch 100: a lease survives a renewal
 * late by more than a second, as one may be on a loaded machine. What is proven: many leases
 * are renewed in batches (script calls per tick, read from the server's commandstats) and
 * never expire; a lease whose field or key is deleted behind its back is reported lost
 * once, within a tick, while the others go on; a server that stops answering makes every
 * lease lost when its confirmed time runs out (not at the first missed renewal, not
 * after Redis could have let it go); a server restarted empty loses every lease; a dropped
 * lease is no longer renewed and never reported lost, even when its renewal was in flight.
 *
 * Lease records are in static storage (a failed assert leaves nothing dangling for the
 * teardown that frees the client); their lost callbacks run on the loop thread and record
 * under a mutex what the test thread polls.
 *
 * It takes about half a minute: proving that nothing is lost or renewed takes fixed windows
 * of whole watchdog periods, and a period has to be seconds long to hold on a loaded machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "core_call.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60
#define WATCHDOG_MS 2400
#define TICK_MS (WATCHDOG_MS / 3)
#define RENEW_BATCH 100
#define FIELD "test-owner:1"

/* ---- leases under test ---------------------------------------------------------------------- */

typedef struct test_lease {
    dlock__lease *lease; /* loop thread only; NULL once lost or dropped */
    char key[40];
    /* recorded by the lost callback, read under mu */
    int lost;
    int64_t lost_ms;
    int reason;       /* the callback's reason */
    bool wrong_lease; /* the callback named another lease than ours */
} test_lease;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void on_lost(dlock__lease *lease, void *owner_ctx, int reason) {
    test_lease *t = owner_ctx;
    pthread_mutex_lock(&mu);
    t->lost++;
    t->lost_ms = dlock__now_ms();
    t->reason = reason;
    if (lease != t->lease)
        t->wrong_lease = true;
    pthread_mutex_unlock(&mu);
    t->lease = NULL; /* freed by the registry after this returns */
}

static const dlock__lease_ops hash_lease = {.renew_script = DLOCK__SCRIPT_CORE_RENEW_HASH,
                                            .lost = on_lost};

#define MAX_LEASES 1000
static test_lease leases[MAX_LEASES];

static int lost_of(const test_lease *t) {
    pthread_mutex_lock(&mu);
    int n = t->lost;
    pthread_mutex_unlock(&mu);
    return n;
}

static int reason_of(const test_lease *t) {
    pthread_mutex_lock(&mu);
    int v = t->reason;
    pthread_mutex_unlock(&mu);
    return v;
}

static int64_t lost_ms_of(const test_lease *t) {
    pthread_mutex_lock(&mu);
    int64_t v = t->lost_ms;
    pthread_mutex_unlock(&mu);
    return v;
}

static int total_lost(size_t from, size_t n) {
    int sum = 0;
    pthread_mutex_lock(&mu);
    for (size_t i = from; i < from + n; i++)
        sum += leases[i].lost;
    pthread_mutex_unlock(&mu);
    return sum;
}

static size_t count_lost_once(size_t from, size_t n) {
    size_t k = 0;
    pthread_mutex_lock(&mu);
    for (size_t i = from; i < from + n; i++)
        k += leases[i].lost == 1 && !leases[i].wrong_lease;
    pthread_mutex_unlock(&mu);
    return k;
}

static void leases_reset(size_t n, const char *tag) {
    for (size_t i = 0; i < n; i++) {
        memset(&leases[i], 0, sizeof(leases[i]));
        snprintf(leases[i].key, sizeof(leases[i].key), "wd:{%s-%zu}", tag, i);
    }
}

/* One EVAL through the admin connection: HSET key FIELD 1 + PEXPIRE key WATCHDOG_MS for
 * leases [from, from+n), as an acquire with a watchdog lease would leave them. */
static void create_hashes(redis_fixture *f, size_t from, size_t n) {
    static const char script[] = "for i = 1, #KEYS do redis.call('hset', KEYS[i], ARGV[1], 1); "
                                 "redis.call('pexpire', KEYS[i], ARGV[2]) end return #KEYS";
    const char **argv = calloc(n + 5, sizeof(*argv));
    assert_non_null(argv);
    char nkeys[16], ttl[16];
    snprintf(nkeys, sizeof(nkeys), "%zu", n);
    snprintf(ttl, sizeof(ttl), "%d", WATCHDOG_MS);
    argv[0] = "EVAL";
    argv[1] = script;
    argv[2] = nkeys;
    for (size_t i = 0; i < n; i++)
        argv[3 + i] = leases[from + i].key;
    argv[3 + n] = FIELD;
    argv[4 + n] = ttl;
    redisReply *r = redis_fixture_cmd_argv(f, (int)n + 5, argv, NULL);
    free(argv);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, (long long)n);
    freeReplyObject(r);
}

/* The smallest PTTL among leases [from, from+n): -2 if one is gone, -1 if one has no TTL. */
static long long min_pttl(redis_fixture *f, size_t from, size_t n) {
    static const char script[] =
        "local m = nil for i = 1, #KEYS do local p = redis.call('pttl', KEYS[i]) "
        "if p < 0 then return p end if m == nil or p < m then m = p end end return m";
    const char **argv = calloc(n + 3, sizeof(*argv));
    assert_non_null(argv);
    char nkeys[16];
    snprintf(nkeys, sizeof(nkeys), "%zu", n);
    argv[0] = "EVAL";
    argv[1] = script;
    argv[2] = nkeys;
    for (size_t i = 0; i < n; i++)
        argv[3 + i] = leases[from + i].key;
    redisReply *r = redis_fixture_cmd_argv(f, (int)n + 3, argv, NULL);
    free(argv);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

static long long pttl(redis_fixture *f, const char *key) {
    return redis_fixture_int(f, "PTTL %s", key);
}

/* Loop-thread steps. */
typedef struct lease_range {
    size_t from, n;
    int64_t sent_at_ms; /* when the "acquire" went out: before the hashes were made */
    bool failed;
} lease_range;

static void register_held(dlock_client *c, void *arg) {
    lease_range *r = arg;
    for (size_t i = r->from; i < r->from + r->n; i++) {
        test_lease *t = &leases[i];
        t->lease = dlock__lease_new(c, &hash_lease, t->key, FIELD, t);
        if (!t->lease) {
            r->failed = true;
            return;
        }
        dlock__lease_held(t->lease, r->sent_at_ms);
    }
}

static void drop_range(dlock_client *c, void *arg) {
    (void)c;
    lease_range *r = arg;
    for (size_t i = r->from; i < r->from + r->n; i++) {
        dlock__lease_drop(leases[i].lease); /* NULL (already lost) is a no-op */
        leases[i].lease = NULL;
    }
}

typedef test_world world;

/* Creates leases [from, from+n) in Redis and registers them as held. */
static void hold(world *w, size_t from, size_t n) {
    lease_range r = {.from = from, .n = n, .sent_at_ms = test_now_ms()};
    create_hashes(w->f, from, n);
    on_loop(w->c, register_held, &r);
    assert_false(r.failed);
}

static void drop(world *w, size_t from, size_t n) {
    lease_range r = {.from = from, .n = n};
    on_loop(w->c, drop_range, &r);
}

/* The watchdog's counters and the command queue, read on the loop thread. */
typedef struct renew_view {
    uint64_t ticks, calls;
    size_t held, inflight, pending;
} renew_view;

static void read_renew_view(dlock_client *c, void *arg) {
    renew_view *v = arg;
    v->ticks = DLOCK__ENGINE(c)->renew.ticks;
    v->calls = DLOCK__ENGINE(c)->renew.renew_calls;
    v->held = DLOCK__ENGINE(c)->renew.held_count;
    v->inflight = DLOCK__NET(c)->conn.inflight.count;
    v->pending = DLOCK__NET(c)->conn.pending.count;
}

static renew_view renew_view_of(dlock_client *c) {
    renew_view v;
    on_loop(c, read_renew_view, &v);
    return v;
}

/* Waits until at least `ticks` ticks have run and every command they sent is answered. */
static renew_view wait_ticks_settled(dlock_client *c, uint64_t ticks) {
    int64_t until = test_now_ms() + TICK_MS + test_prompt_ms();
    for (;;) {
        renew_view v = renew_view_of(c);
        if (v.ticks >= ticks && v.inflight == 0 && v.pending == 0)
            return v;
        assert_true(test_now_ms() < until);
        test_sleep_ms(2);
    }
}

/* ---- per-test server and client ------------------------------------------------------------ */

static int setup(void **state) {
    return test_world_setup_cfg(
        state, (test_client_cfg){.watchdog_ms = WATCHDOG_MS, .renew_batch = RENEW_BATCH});
}

static int teardown(void **state) {
    return test_world_teardown(state);
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_thousand_leases_renew_in_batches_and_outlive_two_watchdog_periods(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    size_t n = (size_t)test_scaled(MAX_LEASES);
    leases_reset(n, "many");
    hold(w, 0, n);
    int64_t held_at = test_now_ms();

    /* 2+ watchdog periods: no key ever runs out, nothing is reported lost */
    long long lowest = WATCHDOG_MS;
    while (test_now_ms() - held_at < 2 * WATCHDOG_MS + 200) {
        long long m = min_pttl(w->f, 0, n);
        assert_true(m > 0);
        if (m < lowest)
            lowest = m;
        test_sleep_ms(50);
    }
    assert_int_equal(total_lost(0, n), 0);
    assert_int_equal(redis_fixture_info_int(w->f, "stats", "expired_keys"), 0);
    assert_int_equal(redis_fixture_info_int(w->f, "keyspace", "db0.keys"), (long long)n);

    /* script calls of exactly one tick, as the server counts them */
    long long per_tick_max = (long long)(n / RENEW_BATCH) + 1;
    long long per_tick_min = (long long)((n + RENEW_BATCH - 1) / RENEW_BATCH);
    renew_view a, b;
    long long e1, e2;
    for (;;) { /* a settled point with no tick between it and the INFO */
        a = wait_ticks_settled(w->c, 0);
        e1 = redis_fixture_info_int(w->f, "commandstats", "cmdstat_evalsha.calls");
        if (renew_view_of(w->c).ticks == a.ticks)
            break;
    }
    for (;;) {
        b = wait_ticks_settled(w->c, a.ticks + 1);
        e2 = redis_fixture_info_int(w->f, "commandstats", "cmdstat_evalsha.calls");
        if (renew_view_of(w->c).ticks == b.ticks)
            break;
    }
    long long ticks = (long long)(b.ticks - a.ticks);
    long long calls = e2 - e1;
    assert_true(ticks >= 1);
    assert_int_equal(calls, (long long)(b.calls - a.calls)); /* the server saw each call once */
    assert_true(calls >= ticks * per_tick_min);              /* every lease was renewed... */
    assert_true(calls <= ticks * per_tick_max);              /* ...in batches of renew_batch */
    assert_int_equal(b.held, n);
    printf("# %zu leases: %lld script calls in %lld tick(s); lowest PTTL seen %lld ms\n", n, calls,
           ticks, lowest);
    drop(w, 0, n);
    assert_int_equal(renew_view_of(w->c).held, 0);
}

/* Holds 5 leases; `vandal` takes lease 2 away behind the watchdog's back. Lease 2 is
 * reported lost once, within a tick; the others keep being renewed. */
static void lease_taken_away_is_lost_once_within_a_tick(world *w, const char *tag,
                                                        void (*vandal)(world *w, const char *key)) {
    leases_reset(5, tag);
    hold(w, 0, 5);
    wait_ticks_settled(w->c, renew_view_of(w->c).ticks + 1);
    int64_t taken_at = test_now_ms();
    vandal(w, leases[2].key);
    bool ok = false;
    /* the next renewal finds it gone (DLOCK_ELOST below, not DLOCK_ECONN: its confirmed
     * time did not run out first) */
    POLL_UNTIL(ok, lost_of(&leases[2]) == 1, TICK_MS + test_prompt_ms());
    int others_lost = total_lost(0, 5) - lost_of(&leases[2]);
    if (!ok || others_lost != 0) { /* say what happened */
        test_sleep_ms(WATCHDOG_MS);
        printf("# lease 2 %s; %d of 5 leases reported lost (lease 0: %lld ms, lease 2: %lld ms "
               "after lease 2 was taken away)\n",
               ok ? "was reported" : "was not reported within a tick", total_lost(0, 5),
               (long long)(lost_ms_of(&leases[0]) - taken_at),
               (long long)(lost_ms_of(&leases[2]) - taken_at));
    }
    assert_true(ok);
    assert_int_equal(others_lost, 0);
    int64_t found_in = lost_ms_of(&leases[2]) - taken_at;
    assert_true(found_in <= TICK_MS + test_prompt_ms());

    /* the others go on for more than a watchdog period (they would have run out without
     * their renewals); lease 2 is not reported again */
    test_sleep_ms(WATCHDOG_MS + TICK_MS);
    pthread_mutex_lock(&mu);
    bool wrong = leases[2].wrong_lease;
    pthread_mutex_unlock(&mu);
    assert_false(wrong);
    assert_int_equal(reason_of(&leases[2]), DLOCK_ELOST); /* found gone, not unconfirmed */
    assert_int_equal(lost_of(&leases[2]), 1);
    assert_int_equal(total_lost(0, 5), 1);
    for (size_t i = 0; i < 5; i++)
        if (i != 2)
            assert_true(pttl(w->f, leases[i].key) > 0);
    assert_int_equal(renew_view_of(w->c).held, 4);
    printf("# lost reported %lld ms after the lease was taken away\n", (long long)found_in);
    drop(w, 0, 5);
}

static void delete_field_keep_key(world *w, const char *key) {
    /* another owner's field keeps the hash (and its TTL) alive: only ours is gone */
    assert_int_equal(redis_fixture_int(w->f, "HSET %s %s 1", key, "someone-else:7"), 1);
    assert_int_equal(redis_fixture_int(w->f, "HDEL %s %s", key, FIELD), 1);
}

static void delete_key(world *w, const char *key) {
    assert_int_equal(redis_fixture_int(w->f, "DEL %s", key), 1);
}

static void test_lease_whose_field_is_deleted_is_lost_once_within_a_tick(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    lease_taken_away_is_lost_once_within_a_tick(w, "hdel", delete_field_keep_key);
    /* a lost lease is not renewed: the other owner's hash runs out by its old TTL */
    bool ok = false;
    POLL_UNTIL(ok, pttl(w->f, leases[2].key) == -2, WATCHDOG_MS + test_prompt_ms());
    assert_true(ok);
}

static void test_lease_whose_key_is_deleted_is_lost_once_within_a_tick(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    lease_taken_away_is_lost_once_within_a_tick(w, "del", delete_key);
    /* and the renewal did not bring the key back */
    assert_int_equal(pttl(w->f, leases[2].key), -2);
}

static void overwrite_with_a_string(world *w, const char *key) {
    /* someone else's SET replaces the hash: the lease is gone, the key is not */
    redisReply *r = redis_fixture_cmd(w->f, "SET %s %s PX %d", key, "not-a-lock", 60000);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
}

static void test_lease_whose_key_is_overwritten_by_another_type_is_lost_alone(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    /* the five share a renewal batch: the wrong-type key must not sink the other four */
    lease_taken_away_is_lost_once_within_a_tick(w, "wrongtype", overwrite_with_a_string);
    /* and the stranger's key is left alone */
    assert_true(pttl(w->f, leases[2].key) > 50000);
}

static void test_paused_server_makes_leases_lost_when_their_confirmed_time_runs_out(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    leases_reset(3, "pause");
    hold(w, 0, 3);
    /* right after a renewal: its confirmation is the last one before the pause */
    wait_ticks_settled(w->c, renew_view_of(w->c).ticks + 1);
    int64_t before_pttl = test_now_ms();
    long long left = min_pttl(w->f, 0, 3);
    assert_true(left > 0);
    int64_t expires_at = before_pttl + left; /* when Redis lets the first of them go */
    assert_int_equal(redis_fixture_pause(w->f), 0);
    int64_t paused_at = test_now_ms();

    bool ok = false;
    POLL_UNTIL(ok, count_lost_once(0, 3) == 3, WATCHDOG_MS + test_prompt_ms());
    int64_t seen_at = test_now_ms();
    int64_t first = INT64_MAX, last = 0;
    for (size_t i = 0; i < 3; i++) {
        int64_t at = lost_ms_of(&leases[i]);
        if (lost_of(&leases[i]) && at < first)
            first = at;
        if (at > last)
            last = at;
    }
    assert_int_equal(redis_fixture_resume(w->f), 0);
    assert_true(ok);
    for (size_t i = 0; i < 3; i++) /* unconfirmed, not found gone */
        assert_int_equal(reason_of(&leases[i]), DLOCK_ECONN);
    /* not at the first missed renewal: only when the confirmed lease has run out... */
    if (!test_under_valgrind()) /* there, the pause may come long after the renewal */
        assert_true(first - paused_at >= WATCHDOG_MS - TICK_MS - 100);
    assert_true(first >= expires_at - (test_under_valgrind() ? 500 : 100));
    /* ...and then, not a tick or a renewal later. (That the client's own deadline is before
     * Redis's is not measurable here: on a loaded machine its timer may run late.) */
    assert_true(last <= expires_at + test_prompt_ms());

    /* the renewals answered after the resume report nothing more */
    wait_ticks_settled(w->c, 0);
    test_sleep_ms(3 * TICK_MS);
    assert_int_equal(total_lost(0, 3), 3);
    assert_int_equal(renew_view_of(w->c).held, 0);
    printf("# paused: lost %lld..%lld ms after the pause; Redis expiry %lld ms after it "
           "(noticed at %lld)\n",
           (long long)(first - paused_at), (long long)(last - paused_at),
           (long long)(expires_at - paused_at), (long long)(seen_at - paused_at));
}

static void test_server_restarted_empty_makes_every_held_lease_lost(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    size_t n = 5;
    leases_reset(n, "restart");
    hold(w, 0, n);
    wait_ticks_settled(w->c, renew_view_of(w->c).ticks + 1);
    assert_int_equal(total_lost(0, n), 0);

    int64_t restarted_at = test_now_ms();
    assert_int_equal(redis_fixture_restart(w->f), 0);
    bool ok = false;
    POLL_UNTIL(ok, count_lost_once(0, n) == n, WATCHDOG_MS + test_prompt_ms());
    assert_true(ok);
    int64_t last = 0;
    for (size_t i = 0; i < n; i++)
        if (lost_ms_of(&leases[i]) > last)
            last = lost_ms_of(&leases[i]);
    int found_gone = 0;
    for (size_t i = 0; i < n; i++) {
        int reason = reason_of(&leases[i]);
        assert_true(reason == DLOCK_ELOST || reason == DLOCK_ECONN);
        found_gone += reason == DLOCK_ELOST;
    }
    assert_int_equal(redis_fixture_info_int(w->f, "keyspace", "db0.keys"), 0);
    test_sleep_ms(3 * TICK_MS);
    assert_int_equal(total_lost(0, n), (int)n); /* once each */
    assert_int_equal(renew_view_of(w->c).held, 0);
    printf("# restart: every lease lost within %lld ms (%d found gone by a renewal)\n",
           (long long)(last - restarted_at), found_gone);
}

static void test_dropped_lease_is_no_longer_renewed_and_its_key_expires(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    leases_reset(2, "drop");
    hold(w, 0, 2);
    /* renewed: alive past its first lease */
    test_sleep_ms(WATCHDOG_MS + 300);
    assert_true(pttl(w->f, leases[0].key) > 0);
    assert_true(pttl(w->f, leases[1].key) > 0);

    drop(w, 0, 1);
    int64_t dropped_at = test_now_ms();
    test_sleep_ms(50); /* a renewal already on the wire may still land */
    long long prev = pttl(w->f, leases[0].key);
    assert_true(prev > 0);
    for (;;) {
        test_sleep_ms(20);
        long long now = pttl(w->f, leases[0].key);
        if (now == -2)
            break;
        assert_true(now >= 0);    /* 0: its last millisecond */
        assert_true(now <= prev); /* counts down: nobody renews it */
        prev = now;
        assert_true(test_now_ms() - dropped_at <= WATCHDOG_MS + test_prompt_ms());
    }
    int64_t expired_in = test_now_ms() - dropped_at;
    assert_true(expired_in <= WATCHDOG_MS + test_prompt_ms());
    /* the other lease is still renewed, nothing is lost */
    assert_true(pttl(w->f, leases[1].key) > 0);
    test_sleep_ms(2 * TICK_MS);
    assert_int_equal(total_lost(0, 2), 0);
    assert_int_equal(renew_view_of(w->c).held, 1);
    printf("# dropped lease's key expired %lld ms after the drop\n", (long long)expired_in);
    drop(w, 1, 1);
}

static void test_dropped_lease_never_reports_lost_even_when_its_key_is_deleted(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    leases_reset(2, "droplost");
    hold(w, 0, 2);
    wait_ticks_settled(w->c, renew_view_of(w->c).ticks + 1);
    drop(w, 0, 1);
    delete_key(w, leases[0].key);
    delete_key(w, leases[1].key); /* the kept one: proves a deletion is noticed */
    bool ok = false;
    POLL_UNTIL(ok, lost_of(&leases[1]) == 1, TICK_MS + test_prompt_ms());
    assert_true(ok);
    /* more than a watchdog period later the dropped one has said nothing */
    test_sleep_ms(WATCHDOG_MS + TICK_MS);
    assert_int_equal(lost_of(&leases[0]), 0);
    assert_int_equal(lost_of(&leases[1]), 1);
    assert_int_equal(renew_view_of(w->c).held, 0);
}

typedef struct drop_in_flight {
    uint64_t ticks;
    size_t inflight;
} drop_in_flight;

static void drop_first_while_renewing(dlock_client *c, void *arg) {
    drop_in_flight *d = arg;
    d->ticks = DLOCK__ENGINE(c)->renew.ticks;
    d->inflight = DLOCK__NET(c)->conn.inflight.count;
    dlock__lease_drop(leases[0].lease);
    leases[0].lease = NULL;
}

static void test_lease_dropped_while_its_renewal_is_in_flight_never_reports_lost(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    leases_reset(2, "dropflight");
    hold(w, 0, 2);
    renew_view v = wait_ticks_settled(w->c, renew_view_of(w->c).ticks + 1);
    /* both keys go; the next renewal, which names both, is held up by a paused server */
    delete_key(w, leases[0].key);
    delete_key(w, leases[1].key);
    assert_int_equal(redis_fixture_pause(w->f), 0);
    bool ok = false;
    POLL_UNTIL(ok, renew_view_of(w->c).ticks >= v.ticks + 1, TICK_MS + test_prompt_ms());
    drop_in_flight d = {0};
    if (ok)
        on_loop(w->c, drop_first_while_renewing, &d);
    assert_int_equal(redis_fixture_resume(w->f), 0);
    assert_true(ok);
    assert_int_equal(d.ticks, v.ticks + 1); /* that renewal, not a later one */
    assert_true(d.inflight >= 1);

    /* its answer says "gone" for both: only the lease still held is reported */
    POLL_UNTIL(ok, lost_of(&leases[1]) == 1, test_prompt_ms());
    assert_true(ok);
    assert_int_equal(reason_of(&leases[1]), DLOCK_ELOST);
    test_sleep_ms(3 * TICK_MS);
    assert_int_equal(lost_of(&leases[0]), 0);
    assert_int_equal(lost_of(&leases[1]), 1);
    assert_int_equal(renew_view_of(w->c).held, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_thousand_leases_renew_in_batches_and_outlive_two_watchdog_periods, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_lease_whose_field_is_deleted_is_lost_once_within_a_tick, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lease_whose_key_is_deleted_is_lost_once_within_a_tick,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_lease_whose_key_is_overwritten_by_another_type_is_lost_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_paused_server_makes_leases_lost_when_their_confirmed_time_runs_out, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_server_restarted_empty_makes_every_held_lease_lost,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_dropped_lease_is_no_longer_renewed_and_its_key_expires,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_dropped_lease_never_reports_lost_even_when_its_key_is_deleted, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_lease_dropped_while_its_renewal_is_in_flight_never_reports_lost, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
