/* SPDX-License-Identifier: MIT */
/* test_lock_handoff.c — the reentrant lock's hand-off (src/lock/acquire.lua, release.lua,
 * engine_grant.c): a waiter that finds the lock taken joins the queue {N}:handoff_queue and
 * keeps its place; the last release of holds taken while others waited hands the lock to
 * the queue's first waiter inside its script (the grant: the waiter's hold with a short
 * lease, published on the turn channel, no "0"), and that waiter holds it once its client
 * has heard the grant, with no attempt of its own, and then sets its own lease; a grant of
 * another place in line is looked at, not taken; a grant wakes no waiter of a client none of
 * whose waiters it names; a waiter that dies holds the lock no longer than the grant's
 * lease; one that gives up leaves the queue; a try that does not wait never queues; a
 * free lock promised in the marker {N}:handoff (an earlier dlock's releases) still refuses
 * newcomers until its waiter takes it; the lock hash stays Redisson's. Every test starts
 * its own server. */
#include <limits.h>

#include "kill_helpers.h"
#include "lock_helpers.h"
#include "stats_helpers.h"

#define GRANT_MS 500 /* reentrant.c's HANDOFF_GRANT_MS */

/* The queue's member at place i (0: first), or NULL; the caller frees it. */
static char *queued_at(redis_fixture *f, const char *queue, int i) {
    redisReply *r = redis_fixture_cmd(f, "ZRANGE %s %d %d", queue, i, i);
    assert_non_null(r);
    char *member =
        r->type == REDIS_REPLY_ARRAY && r->elements == 1 ? strdup(r->element[0]->str) : NULL;
    freeReplyObject(r);
    return member;
}

/* Polls until the queue holds n waiters. */
static void queue_holds(redis_fixture *f, const char *queue, long long n) {
    bool ok = false;
    POLL_UNTIL(ok, redis_fixture_int(f, "ZCARD %s", queue) == n, slack_ms(3000));
    if (!ok)
        fail_msg("%s never held %lld waiters", queue, n);
}

/* The server's clock, ms. */
static double server_ms(redis_fixture *f) {
    redisReply *r = redis_fixture_cmd(f, "TIME");
    assert_non_null(r);
    double ms = atof(r->element[0]->str) * 1000 + atof(r->element[1]->str) / 1000;
    freeReplyObject(r);
    return ms;
}

/* What release.lua publishes for a turn, from one script: the turn, then "0". */
static void publish_turn(redis_fixture *f, const char *name, const char *field) {
    char turn[128], channel[128];
    snprintf(turn, sizeof(turn), "dlock_lock_turn__channel:{%s}", name);
    snprintf(channel, sizeof(channel), "redisson_lock__channel:{%s}", name);
    redisReply *r = redis_fixture_cmd(
        f, "EVAL %s 2 %s %s %s",
        "redis.call('publish', KEYS[1], ARGV[1]); return redis.call('publish', KEYS[2], '0')", turn,
        channel, field);
    assert_non_null(r);
    freeReplyObject(r);
}

typedef struct waiter {
    dlock_lock *l;
    int64_t wait_ms;
    uint64_t owner;
    atomic_bool go; /* wait_hold_release: the test lets the holder release */
    blocking_call call;
} waiter;

static int wait_for_lock(void *arg) {
    waiter *w = arg;
    w->owner = dlock_thread_owner();
    return dlock_lock_try_acquire(w->l, w->wait_ms, 30000);
}

/* The wait, then the release on the same thread (the same owner). */
static int wait_then_release(void *arg) {
    waiter *w = arg;
    int rc = wait_for_lock(w);
    return rc == DLOCK_OK ? dlock_lock_release(w->l) : rc;
}

/* The wait, then the release once the test says so (the holder's state stays put until then). */
static int wait_hold_release(void *arg) {
    waiter *w = arg;
    int rc = wait_for_lock(w);
    while (rc == DLOCK_OK && !atomic_load(&w->go))
        test_sleep_ms(1);
    return rc == DLOCK_OK ? dlock_lock_release(w->l) : rc;
}

/* The scene most tests start from: a's owner holds the lock `name`; b's waiter sleeps in
 * line behind it (its busy attempts made, its field in the queue). */
typedef struct scene {
    redis_fixture *f;
    dlock_client *a, *b;
    dlock_lock *la, *lb; /* lb NULL once a test frees it */
    waiter w;            /* b's */
    char field[128];     /* b's waiter's owner field */
    char queue[128];     /* {name}:handoff_queue */
    char marker[128];    /* {name}:handoff */
    double started_ms;   /* the server's clock just before b's wait began */
} scene;

static void scene_start(scene *sc, const char *name, bool fenced, int64_t wait_ms) {
    memset(sc, 0, sizeof(*sc));
    sc->f = start_server();
    sc->a = connect_client(sc->f);
    sc->b = connect_client(sc->f);
    sc->la = fenced ? new_fenced(sc->a, name) : new_lock(sc->a, name);
    sc->lb = fenced ? new_fenced(sc->b, name) : new_lock(sc->b, name);
    snprintf(sc->queue, sizeof(sc->queue), "{%s}:handoff_queue", name);
    snprintf(sc->marker, sizeof(sc->marker), "{%s}:handoff", name);
    char channel[160];
    snprintf(channel, sizeof(channel), "redisson_lock__channel:{%s}", name);
    ASSERT_RC(dlock_lock_acquire(sc->la, 30000), DLOCK_OK);
    sc->started_ms = server_ms(sc->f);
    sc->w = (waiter){.l = sc->lb, .wait_ms = wait_ms};
    blocking_call_start_asleep(&sc->w.call, wait_for_lock, &sc->w, sc->f,
                               (asleep_sign){channel, 1, 2, NULL});
    owner_field(sc->b, sc->w.owner, sc->field, sizeof(sc->field));
    queue_holds(sc->f, sc->queue, 1);
}

/* Frees what scene_start made; b's wait has been joined by the test. */
static void scene_end(scene *sc) {
    dlock_lock_free(sc->la);
    if (sc->lb)
        dlock_lock_free(sc->lb);
    dlock_client_free(sc->a);
    dlock_client_free(sc->b);
    redis_fixture_stop(sc->f);
}

/* ---- the queue, the promise and the refused newcomer ------------------------------------ */

/* The queue, the promise, the refused newcomer and the turn taken, on a lock or a fenced
 * lock (whose token still rises: 1 for the holder, 2 for the waiter). */
static void promised_turn(bool fenced) {
    scene sc;
    scene_start(&sc, "promised", fenced, slack_ms(10000));
    redis_fixture *f = sc.f;
    char holder[128];
    owner_field(sc.a, dlock_thread_owner(), holder, sizeof(holder));

    /* b's busy attempts put it in the queue, once, scored by the server's clock */
    char *first = queued_at(f, sc.queue, 0);
    assert_string_equal(first, sc.field);
    free(first);
    char *score = redis_fixture_str(f, "ZSCORE %s %s", sc.queue, sc.field);
    ASSERT_BETWEEN(atof(score), sc.started_ms, server_ms(f));
    free(score);
    long long life = pttl_of(f, sc.queue);
    ASSERT_BETWEEN(life, 1, 60000); /* reentrant.c's HANDOFF_QUEUE_MS */
    /* the lock hash is Redisson's, untouched by the queue */
    char dump[256], expected[256];
    hash_dump(f, "promised", dump, sizeof(dump));
    snprintf(expected, sizeof(expected), "%s=1;", holder);
    assert_string_equal(dump, expected);

    /* the state a release that promised b leaves, its message not yet read: a's newcomer
     * acquire is refused. (The marker is made to outlive a slow machine: its lifetime is not
     * this test's.) */
    assert_int_equal(redis_fixture_int(f, "ZREM %s %s", sc.queue, sc.field), 1);
    char *ok = redis_fixture_str(f, "SET %s %s PX 60000", sc.marker, sc.field);
    free(ok);
    assert_int_equal(redis_fixture_int(f, "DEL promised"), 1);
    ASSERT_RC(dlock_lock_try_acquire(sc.la, 0, 30000), DLOCK_ETIMEDOUT);
    assert_int_equal(redis_fixture_int(f, "EXISTS promised"), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS %s", sc.queue), 0); /* a try */
    assert_false(blocking_call_returned(&sc.w.call));

    /* the release's turn and "0" wake b, which takes its turn; the marker goes with it */
    publish_turn(f, "promised", sc.field);
    ASSERT_RC(blocking_call_join(&sc.w.call), DLOCK_OK);
    hash_dump(f, "promised", dump, sizeof(dump));
    snprintf(expected, sizeof(expected), "%s=1;", sc.field);
    assert_string_equal(dump, expected);
    assert_int_equal(redis_fixture_int(f, "EXISTS %s", sc.marker), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS %s", sc.queue), 0);
    assert_int_equal(redis_fixture_int(f, "GET redisson_lock_token:{promised}"),
                     fenced ? 2 : LLONG_MIN);
    scene_end(&sc);
}

static void
test_a_free_lock_promised_to_a_waiter_refuses_newcomers_until_it_takes_it(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    promised_turn(false);
}

static void test_a_fenced_lock_promised_to_a_waiter_gives_it_the_next_token(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    promised_turn(true);
}

/* ---- a tight loop of another client ------------------------------------------------------ */

typedef struct looper {
    dlock_lock *l;
    atomic_bool stop;
    long long cycles;
    int rc;
} looper;

/* Acquire, release, again at once, until told to stop: a releasing owner that always
 * comes back first, as a tight loop on a fast loopback does. */
static void *loop_acquire_release(void *arg) {
    looper *lp = arg;
    while (!atomic_load(&lp->stop) && lp->rc == DLOCK_OK) {
        lp->rc = dlock_lock_acquire(lp->l, 30000);
        if (lp->rc == DLOCK_OK)
            lp->rc = dlock_lock_release(lp->l);
        lp->cycles++;
    }
    return NULL;
}

static void test_a_waiter_gets_the_lock_against_an_owner_that_reacquires_at_once(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f);
    dlock_lock *la = new_lock(a, "tight"), *lb = new_lock(b, "tight");
    looper lp = {.l = la, .rc = DLOCK_OK};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, loop_acquire_release, &lp), 0);
    for (int round = 0; round < 20; round++) {
        waiter w = {.l = lb, .wait_ms = slack_ms(3000)};
        blocking_call_start(&w.call, wait_then_release, &w);
        ASSERT_RC(blocking_call_join(&w.call), DLOCK_OK);
    }
    atomic_store(&lp.stop, true);
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(lp.rc, DLOCK_OK);
    assert_true(lp.cycles > 0);
    printf("# 20 waits met %lld cycles of the tight loop\n", lp.cycles);
    assert_int_equal(redis_fixture_int(f, "EXISTS tight"), 0);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- what a release names ---------------------------------------------------------------- */

/* The next pub/sub message on sub (a PSUBSCRIBE): its channel and payload must be these. */
static void expect_message(redisContext *sub, const char *channel, const char *payload) {
    redisReply *r = NULL;
    assert_int_equal(redisGetReply(sub, (void **)&r), REDIS_OK);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 4); /* pmessage, pattern, channel, payload */
    assert_string_equal(r->element[2]->str, channel);
    assert_string_equal(r->element[3]->str, payload);
    freeReplyObject(r);
}

/* The next pub/sub message on sub must be a grant on the turn channel of `name` that starts
 * with these values ("<field> <1|2> <token> <place>") and ends with the server's clock (µs),
 * within a minute of the test's reading of it. */
static void expect_grant(redis_fixture *f, redisContext *sub, const char *name,
                         const char *values) {
    char channel[128];
    snprintf(channel, sizeof(channel), "dlock_lock_turn__channel:{%s}", name);
    redisReply *r = NULL;
    assert_int_equal(redisGetReply(sub, (void **)&r), REDIS_OK);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 4); /* pmessage, pattern, channel, payload */
    assert_string_equal(r->element[2]->str, channel);
    const char *grant = r->element[3]->str;
    size_t n = strlen(values);
    assert_true(strncmp(grant, values, n) == 0 && grant[n] == ' ');
    ASSERT_BETWEEN(atof(grant + n + 1) / 1000, server_ms(f) - 60000, server_ms(f));
    freeReplyObject(r);
}

/* A queue member's place as acquire.lua and release.lua give it: its score (ms) in µs. */
static long long place_of(redis_fixture *f, const char *queue, const char *member) {
    char *score = redis_fixture_str(f, "ZSCORE %s %s", queue, member);
    assert_non_null(score);
    long long us = (long long)(atof(score) * 1000 + 0.5); /* > 0: truncation is floor */
    free(score);
    return us;
}

/* Others wait in line as a takes the lock: a's last release hands the lock to the queue's
 * first waiter inside its script: the hash is that waiter's, one hold with the grant's
 * lease, the waiter leaves the queue, a fenced lock's token rises for it, and the grant is
 * published on the turn channel with no "0" (the lock is not free): "<field> <1|2> <token>
 * <place>". Lapsed, the lock goes to the next release's heir, the last in line. */
static void release_hands_the_lock_over(bool fenced) {
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_lock *la = fenced ? new_fenced(a, "names") : new_lock(a, "names");
    char young[64];
    snprintf(young, sizeof(young), "%.3f", server_ms(f) + 3600000);
    assert_int_equal(
        redis_fixture_int(f, "ZADD {names}:handoff_queue 1000 old:1 %s young:2", young), 2);
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    long long young_place = place_of(f, "{names}:handoff_queue", "young:2");
    redisContext *sub = psubscribe_to(f, "*__channel:{names}");

    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    expect_grant(f, sub, "names", fenced ? "old:1 2 2 1000000" : "old:1 2 0 1000000");
    char dump[256];
    hash_dump(f, "names", dump, sizeof(dump));
    assert_string_equal(dump, "old:1=1;");
    ASSERT_BETWEEN(pttl_of(f, "names"), 0, GRANT_MS);
    char *first = queued_at(f, "{names}:handoff_queue", 0);
    assert_string_equal(first, "young:2");
    free(first);
    assert_int_equal(redis_fixture_int(f, "ZCARD {names}:handoff_queue"), 1);
    assert_int_equal(redis_fixture_int(f, "EXISTS {names}:handoff"), 0);
    assert_int_equal(redis_fixture_int(f, "PEXPIRE names 60000"), 1);
    ASSERT_RC(dlock_lock_try_acquire(la, 0, 30000), DLOCK_ETIMEDOUT); /* old:1's */

    assert_int_equal(redis_fixture_int(f, "DEL names"), 1); /* as if its grant lapsed */
    ASSERT_RC(dlock_lock_try_acquire(la, 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    char expected[128];
    snprintf(expected, sizeof(expected), "young:2 1 %s %lld", fenced ? "4" : "0", young_place);
    expect_grant(f, sub, "names", expected);
    hash_dump(f, "names", dump, sizeof(dump));
    assert_string_equal(dump, "young:2=1;");
    assert_int_equal(redis_fixture_int(f, "EXISTS {names}:handoff_queue"), 0);
    assert_int_equal(redis_fixture_int(f, "GET redisson_lock_token:{names}"),
                     fenced ? 4 : LLONG_MIN);
    redisFree(sub);
    dlock_lock_free(la);
    dlock_client_free(a);
    redis_fixture_stop(f);
}

static void test_a_release_hands_the_lock_to_the_first_waiter_in_its_script(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    release_hands_the_lock_over(false);
}

static void test_a_fenced_release_hands_the_heir_the_next_token(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    release_hands_the_lock_over(true);
}

/* Client commands MONITOR saw until the line of `ECHO end`, whose arguments include the
 * quoted word and not the quoted unless: the commands run inside scripts ("lua") are not
 * counted. */
static int monitor_count_with(redisContext *mon, const char *end, const char *word,
                              const char *unless) {
    char marker[128], quoted[160], quoted_unless[160];
    snprintf(marker, sizeof(marker), "\"%s\"", end);
    snprintf(quoted, sizeof(quoted), "\"%s\"", word);
    snprintf(quoted_unless, sizeof(quoted_unless), "\"%s\"", unless);
    int count = 0;
    for (;;) {
        void *m = NULL;
        assert_int_equal(redisGetReply(mon, &m), REDIS_OK);
        redisReply *r = m;
        assert_int_equal(r->type, REDIS_REPLY_STATUS);
        bool at_end = strstr(r->str, marker) != NULL;
        if (!at_end && !strstr(r->str, " lua]") && strstr(r->str, quoted) &&
            !strstr(r->str, quoted_unless))
            count++;
        freeReplyObject(r);
        if (at_end)
            return count;
    }
}

/* b's waiter sleeps in line behind a's hold (taken again with b in line, so that a's last
 * release hands the lock on): that release makes b's waiter the holder, which returns with
 * no attempt of its own (no command names the marker key without the token counter, as
 * every attempt of a plain lock does), then sets its own lease (30 s, where the grant gave
 * 500 ms). */
static void test_a_granted_waiter_returns_without_an_attempt_of_its_own(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    scene sc;
    scene_start(&sc, "granted", false, slack_ms(10000));
    redis_fixture *f = sc.f;
    ASSERT_RC(dlock_lock_acquire(sc.la, 30000), DLOCK_OK); /* a second hold, b in line */
    ASSERT_RC(dlock_lock_release(sc.la), DLOCK_OK);
    /* a grant is taken from the message only on a command connection up for a second
     * (engine_grant.c): b's has been up since its first attempt, and nothing drops it */
    test_sleep_ms(1100);
    dlock_stats before = stats_of(sc.b);
    redisContext *mon = monitor_open(f);

    ASSERT_RC(dlock_lock_release(sc.la), DLOCK_OK);
    ASSERT_RC(blocking_call_join(&sc.w.call), DLOCK_OK);
    char dump[256], expected[256];
    hash_dump(f, "granted", dump, sizeof(dump));
    snprintf(expected, sizeof(expected), "%s=1;", sc.field);
    assert_string_equal(dump, expected);
    bool leased = false;
    POLL_UNTIL(leased, pttl_of(f, "granted") > GRANT_MS, slack_ms(3000));
    assert_true(leased);
    redisReply *r = redis_fixture_cmd(f, "ECHO granted-end");
    freeReplyObject(r);
    /* an attempt names the marker key, not the token counter (the release names both) */
    assert_int_equal(
        monitor_count_with(mon, "granted-end", sc.marker, "redisson_lock_token:{granted}"), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS %s", sc.queue), 0);
    assert_int_equal(stats_of(sc.b).wakes, before.wakes + 1); /* the grant: one waiter */
    redisFree(mon);
    scene_end(&sc);
}

/* A grant of a place in line the waiter does not hold (heard late: an earlier place, whose
 * lease may have run out and whose lock may be another's by now) is not taken: the waiter
 * looks (one attempt), finds a's hold and sleeps on. */
static void test_a_grant_of_another_place_is_looked_at_not_taken(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    scene sc;
    scene_start(&sc, "stale", false, slack_ms(10000));
    redis_fixture *f = sc.f;
    long long place = place_of(f, sc.queue, sc.field);
    long long calls = script_calls(f);
    char grant[256];
    snprintf(grant, sizeof(grant), "%s 1 0 %lld", sc.field, place - 1000);
    assert_int_equal(redis_fixture_int(f, "PUBLISH dlock_lock_turn__channel:{stale} %s", grant), 1);
    bool looked = false;
    POLL_UNTIL(looked, script_calls(f) == calls + 1, slack_ms(3000));
    assert_true(looked);
    assert_false(blocking_call_returned(&sc.w.call));
    char holder[128], dump[256], expected[256];
    owner_field(sc.a, dlock_thread_owner(), holder, sizeof(holder));
    hash_dump(f, "stale", dump, sizeof(dump));
    snprintf(expected, sizeof(expected), "%s=1;", holder);
    assert_string_equal(dump, expected);
    ASSERT_RC(dlock_lock_release(sc.la), DLOCK_OK);
    ASSERT_RC(blocking_call_join(&sc.w.call), DLOCK_OK); /* a's "0" wakes it */
    scene_end(&sc);
}

/* A hold taken while nobody waited in line: its release carries two keys and names
 * nobody, though a waiter lined up meanwhile; its "0" wakes that waiter all the same (one
 * per client, as without turns), which takes the lock. */
static void test_a_release_of_a_hold_taken_with_nobody_in_line_names_nobody(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    scene sc;
    scene_start(&sc, "alone", false, slack_ms(10000));
    redisContext *sub = psubscribe_to(sc.f, "*__channel:{alone}");
    ASSERT_RC(dlock_lock_release(sc.la), DLOCK_OK);
    expect_message(sub, "redisson_lock__channel:{alone}", "0"); /* no turn before it */
    ASSERT_RC(blocking_call_join(&sc.w.call), DLOCK_OK);
    assert_int_equal(redis_fixture_int(sc.f, "EXISTS %s", sc.marker), 0);
    assert_int_equal(redis_fixture_int(sc.f, "EXISTS %s", sc.queue), 0);
    redisFree(sub);
    scene_end(&sc);
}

/* A waiter promised the lock (by an earlier dlock's release) but beaten to it by a client
 * that knows no marker (Redisson's: it takes a free lock as ever) waits in line again, at its
 * end (a place in line is a join time, which a grant names: it is never made up), and its
 * promise goes. */
static void test_a_waiter_beaten_to_its_promise_waits_in_line_again(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    scene sc;
    scene_start(&sc, "front", false, slack_ms(10000));
    redis_fixture *f = sc.f;
    char *score = redis_fixture_str(f, "ZSCORE %s %s", sc.queue, sc.field);
    char later[64];
    snprintf(later, sizeof(later), "%.3f", atof(score) + 1);
    free(score);
    assert_int_equal(redis_fixture_int(f, "ZADD %s %s later:9", sc.queue, later), 1);

    /* a's lock freed with b promised (as a release leaves it), then a Redisson holder */
    assert_int_equal(redis_fixture_int(f, "ZREM %s %s", sc.queue, sc.field), 1);
    char *ok = redis_fixture_str(f, "SET %s %s PX 60000", sc.marker, sc.field);
    free(ok);
    assert_int_equal(redis_fixture_int(f, "DEL front"), 1);
    assert_int_equal(redis_fixture_int(f, "HSET front redisson-client:1 1"), 1);
    assert_int_equal(redis_fixture_int(f, "PEXPIRE front 60000"), 1);
    /* a "0" without a turn (Redisson's release) wakes b, whose attempt finds the lock taken */
    assert_int_equal(redis_fixture_int(f, "PUBLISH redisson_lock__channel:{front} 0"), 1);
    bool gone = false;
    POLL_UNTIL(gone, redis_fixture_int(f, "EXISTS %s", sc.marker) == 0, slack_ms(3000));
    assert_true(gone);
    char *first = queued_at(f, sc.queue, 0);
    assert_string_equal(first, "later:9");
    free(first);
    char *second = NULL;
    bool again = false;
    POLL_UNTIL(again, (free(second), second = queued_at(f, sc.queue, 1)) != NULL, slack_ms(3000));
    assert_true(again);
    assert_string_equal(second, sc.field);
    free(second);

    /* the Redisson holder leaves; b takes the lock and its place goes */
    assert_int_equal(redis_fixture_int(f, "ZREM %s later:9", sc.queue), 1);
    assert_int_equal(redis_fixture_int(f, "DEL front"), 1);
    assert_int_equal(redis_fixture_int(f, "PUBLISH redisson_lock__channel:{front} 0"), 1);
    ASSERT_RC(blocking_call_join(&sc.w.call), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "EXISTS %s", sc.queue), 0);
    scene_end(&sc);
}

/* ---- one waiter answers a release ---------------------------------------------------------- */

static bool subscribed_twice(dlock_client *c) {
    return stats_of(c).subscriptions == 2; /* the lock's channel and its turn channel */
}

/* a holds; b's waiter is first in the queue, c's second, both asleep. a's last release names
 * b's waiter on the turn channel: c lets the release's "0" pass without waking its waiter,
 * b takes the lock. b's own release names c's waiter, which is woken and takes the lock. */
static void test_a_release_that_names_one_clients_waiter_wakes_no_waiter_of_another(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f), *c = connect_client(f);
    dlock_lock *la = new_lock(a, "one-wakes"), *lb = new_lock(b, "one-wakes"),
               *lc = new_lock(c, "one-wakes");
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    waiter wb = {.l = lb, .wait_ms = slack_ms(10000)};
    blocking_call_start_asleep(&wb.call, wait_hold_release, &wb, f,
                               (asleep_sign){"redisson_lock__channel:{one-wakes}", 1, 2, NULL});
    queue_holds(f, "{one-wakes}:handoff_queue", 1);
    waiter wc = {.l = lc, .wait_ms = slack_ms(10000)};
    blocking_call_start_asleep(&wc.call, wait_then_release, &wc, f,
                               (asleep_sign){"redisson_lock__channel:{one-wakes}", 2, 2, NULL});
    queue_holds(f, "{one-wakes}:handoff_queue", 2);
    char *first = queued_at(f, "{one-wakes}:handoff_queue", 0);
    assert_true(strncmp(first, dlock_client_id(b), 36) == 0);
    free(first);
    bool ready = false;
    POLL_UNTIL(ready, subscribed_twice(b) && subscribed_twice(c), slack_ms(3000));
    assert_true(ready);
    /* a's first hold was taken with nobody in line; a second one sees the line, so a's
     * last release names its first */
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    dlock_stats c_before = stats_of(c);

    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    bool spared = false;
    POLL_UNTIL(spared, stats_of(c).wakes_spared == c_before.wakes_spared + 1, slack_ms(3000));
    assert_true(spared);
    /* b took its turn and holds: nothing else can wake c's waiter meanwhile */
    bool b_holds = false;
    char holder[160];
    POLL_UNTIL(b_holds,
               (hash_dump(f, "one-wakes", holder, sizeof(holder)),
                strncmp(holder, dlock_client_id(b), 36) == 0),
               slack_ms(3000));
    assert_true(b_holds);
    assert_true(stats_of(b).wakes >= 1);
    /* the "0" was let pass, not made a wake (a wake of c now can only be the lapse of b's
     * turn, 100 ms on: the waiter looks again, finds b's hold and sleeps) */
    assert_int_equal(stats_of(c).wakes_spared, c_before.wakes_spared + 1);
    atomic_store(&wb.go, true);
    ASSERT_RC(blocking_call_join(&wb.call), DLOCK_OK);
    ASSERT_RC(blocking_call_join(&wc.call), DLOCK_OK); /* b's release named c's waiter */
    dlock_stats c_after = stats_of(c);
    assert_true(c_after.wakes >= c_before.wakes + 1);
    assert_int_equal(c_after.wakes_spared, c_before.wakes_spared + 1); /* b's release named c */
    assert_int_equal(redis_fixture_int(f, "EXISTS one-wakes"), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS {one-wakes}:handoff_queue"), 0);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_lock_free(lc);
    dlock_client_free(a);
    dlock_client_free(b);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- a waiter killed --------------------------------------------------------------------- */

/* The child: its own client (made after the fork), then a wait for the lock that never
 * ends; killed while it waits. */
static _Noreturn void waiter_child(const char *url, const char *name) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    dlock_client *c = NULL;
    dlock_lock *l = NULL;
    if (dlock_client_new(&o, &c) != DLOCK_OK || dlock_lock_new(c, name, &l) != DLOCK_OK)
        test_child_exit(1);
    dlock_lock_acquire(l, 30000);
    test_child_exit(1); /* the parent holds the lock until the child is killed */
}

static void test_a_killed_waiter_holds_the_lock_no_longer_than_its_grant(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *c = connect_client(f);
    dlock_lock *la = new_lock(a, "dead-waiter"), *lc = new_lock(c, "dead-waiter");
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    pid_t pid = fork_child();
    if (pid == 0)
        waiter_child(redis_fixture_unix_url(f), "dead-waiter");
    queue_holds(f, "{dead-waiter}:handoff_queue", 1);
    char *dead = queued_at(f, "{dead-waiter}:handoff_queue", 0);
    assert_int_equal(kill(pid, SIGKILL), 0);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    child_forget(pid);
    /* a second hold, taken with the child in line: a's last release hands it the lock; c
     * waits in line behind it (so a client hears the grant: one nobody hears is no grant) */
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    waiter wc = {.l = lc, .wait_ms = TEST_SLOW_MS};
    blocking_call_start_asleep(&wc.call, wait_then_release, &wc, f,
                               (asleep_sign){"redisson_lock__channel:{dead-waiter}", 1, 2, NULL});
    queue_holds(f, "{dead-waiter}:handoff_queue", 2);

    /* handed to the dead for no longer than the grant's lease */
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    int64_t released_at = test_now_ms();
    char holder[160], expected[160];
    hash_dump(f, "dead-waiter", holder, sizeof(holder));
    long long left = pttl_of(f, "dead-waiter");
    snprintf(expected, sizeof(expected), "%s=1;", dead);
    assert_true(strcmp(holder, "<none>") == 0 || strcmp(holder, expected) == 0);
    assert_true(left == -2 || (left >= 0 && left <= GRANT_MS));
    /* c's wait is TEST_SLOW_MS, and it sleeps on a's 30 s lease: only the lapse of the grant
     * it heard wakes it, and a grant that outlived its lease would keep it out that long (c
     * takes the lock and releases it) */
    ASSERT_RC(blocking_call_join(&wc.call), DLOCK_OK);
    int64_t took = test_now_ms() - released_at;
    ASSERT_BETWEEN(took, 0, GRANT_MS + test_prompt_ms());
    printf("# the lock taken %lld ms after its release (the grant had %lld ms left)\n",
           (long long)took, left);
    assert_int_equal(redis_fixture_int(f, "EXISTS {dead-waiter}:handoff_queue"), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS dead-waiter"), 0); /* c took it and released */
    free(dead);
    dlock_lock_free(la);
    dlock_lock_free(lc);
    dlock_client_free(a);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- a waiter that does not wait, one that gives up --------------------------------------- */

static void test_a_try_without_waiting_never_queues(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f);
    dlock_lock *la = new_lock(a, "no-claim"), *lb = new_lock(b, "no-claim");
    ASSERT_RC(dlock_lock_acquire(la, 30000), DLOCK_OK);
    for (int i = 0; i < 5; i++)
        ASSERT_RC(dlock_lock_try_acquire(lb, 0, 30000), DLOCK_ETIMEDOUT);
    assert_int_equal(redis_fixture_int(f, "EXISTS {no-claim}:handoff"), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS {no-claim}:handoff_queue"), 0);
    ASSERT_RC(dlock_lock_release(la), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(lb, 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(lb), DLOCK_OK);
    dlock_lock_free(la);
    dlock_lock_free(lb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* A waiter that was promised the lock and then gave up leaves the queue and takes its
 * promise back: the lock it leaves free is anybody's at once, not refused for the marker's
 * lifetime. */
static void test_a_waiter_that_gave_up_leaves_the_queue_and_its_promise(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    scene sc;
    scene_start(&sc, "left", false, 60000);
    char *ok = redis_fixture_str(sc.f, "SET %s %s PX 60000", sc.marker, sc.field);
    free(ok);
    /* the wait ends without the lock: freeing its handle cancels it */
    dlock_lock_free(sc.lb);
    sc.lb = NULL;
    ASSERT_RC(blocking_call_join(&sc.w.call), DLOCK_ECANCELED);
    ASSERT_RC(dlock_lock_release(sc.la), DLOCK_OK);
    /* another owner of the same client: its try follows the leaving on b's connection
     * (commands leave in order) */
    dlock_lock *other = new_lock(sc.b, "left");
    ASSERT_RC(dlock_lock_try_acquire(other, 0, 30000), DLOCK_OK);
    assert_int_equal(redis_fixture_int(sc.f, "EXISTS %s", sc.marker), 0);
    assert_int_equal(redis_fixture_int(sc.f, "EXISTS %s", sc.queue), 0);
    ASSERT_RC(dlock_lock_release(other), DLOCK_OK);
    dlock_lock_free(other);
    scene_end(&sc);
}

/* A release handed the lock to a waiter (the grant) just before the waiter gave up, the
 * grant's message not yet taken: leaving the queue gives the lock back at once (freed, "0"
 * published), not after the grant's lease. The grant here is given a minute's lease, so that
 * only the giving back frees the lock within the poll's bound. */
static void test_a_waiter_that_gave_up_gives_back_a_grant_it_never_took(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    assert_int_equal(redis_fixture_int(f, "HSET ungranted other:1 1"), 1);
    assert_int_equal(redis_fixture_int(f, "PEXPIRE ungranted 60000"), 1);
    dlock_client *b = connect_client(f);
    dlock_lock *lb = new_lock(b, "ungranted");
    waiter w = {.l = lb, .wait_ms = 60000};
    blocking_call_start_asleep(&w.call, wait_for_lock, &w, f,
                               (asleep_sign){"redisson_lock__channel:{ungranted}", 1, 2, NULL});
    char field[128];
    owner_field(b, w.owner, field, sizeof(field));
    queue_holds(f, "{ungranted}:handoff_queue", 1);
    /* release.lua's grant, its message unpublished (not yet heard) */
    redisReply *r = redis_fixture_cmd(
        f, "EVAL %s 2 ungranted {ungranted}:handoff_queue %s",
        "redis.call('del', KEYS[1]); redis.call('hset', KEYS[1], ARGV[1], 1); "
        "redis.call('pexpire', KEYS[1], 60000); return redis.call('zrem', KEYS[2], ARGV[1])",
        field);
    assert_non_null(r);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    redisContext *sub = subscribe_to(f, "redisson_lock__channel:{ungranted}");

    /* the wait ends without the lock: freeing its handle cancels it */
    dlock_lock_free(lb);
    ASSERT_RC(blocking_call_join(&w.call), DLOCK_ECANCELED);
    bool given_back = false;
    POLL_UNTIL(given_back, redis_fixture_int(f, "EXISTS ungranted") == 0, slack_ms(3000));
    assert_true(given_back);
    char seen[64];
    messages_until_end(f, sub, "redisson_lock__channel:{ungranted}", seen, sizeof(seen));
    assert_string_equal(seen, "0,"); /* the lock is free: every client's waiters look */
    assert_int_equal(redis_fixture_int(f, "EXISTS {ungranted}:handoff_queue"), 0);
    redisFree(sub);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- a marker or queue of another type ----------------------------------------------------- */

static void test_a_marker_or_queue_of_another_type_is_refused_and_changes_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_lock *la = new_lock(a, "typed");
    assert_int_equal(redis_fixture_int(f, "HSET {typed}:handoff x 1"), 1);
    char *before = db_state(f);
    ASSERT_WRONGTYPE(dlock_lock_try_acquire(la, 0, 30000));
    char *after = db_state(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
    /* the queue is written by a wait's attempts that find the lock taken */
    assert_int_equal(redis_fixture_int(f, "DEL {typed}:handoff"), 1);
    assert_int_equal(redis_fixture_int(f, "HSET {typed}:handoff_queue x 1"), 1);
    assert_int_equal(redis_fixture_int(f, "HSET typed other-client:1 1"), 1);
    before = db_state(f);
    ASSERT_WRONGTYPE(dlock_lock_try_acquire(la, slack_ms(1000), 30000));
    after = db_state(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
    dlock_lock_free(la);
    dlock_client_free(a);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_free_lock_promised_to_a_waiter_refuses_newcomers_until_it_takes_it),
        cmocka_unit_test(test_a_fenced_lock_promised_to_a_waiter_gives_it_the_next_token),
        cmocka_unit_test(test_a_waiter_gets_the_lock_against_an_owner_that_reacquires_at_once),
        cmocka_unit_test(test_a_release_hands_the_lock_to_the_first_waiter_in_its_script),
        cmocka_unit_test(test_a_fenced_release_hands_the_heir_the_next_token),
        cmocka_unit_test(test_a_granted_waiter_returns_without_an_attempt_of_its_own),
        cmocka_unit_test(test_a_grant_of_another_place_is_looked_at_not_taken),
        cmocka_unit_test(test_a_release_of_a_hold_taken_with_nobody_in_line_names_nobody),
        cmocka_unit_test(test_a_waiter_beaten_to_its_promise_waits_in_line_again),
        cmocka_unit_test(test_a_release_that_names_one_clients_waiter_wakes_no_waiter_of_another),
        cmocka_unit_test_teardown(test_a_killed_waiter_holds_the_lock_no_longer_than_its_grant,
                                  kill_children),
        cmocka_unit_test(test_a_try_without_waiting_never_queues),
        cmocka_unit_test(test_a_waiter_that_gave_up_leaves_the_queue_and_its_promise),
        cmocka_unit_test(test_a_waiter_that_gave_up_gives_back_a_grant_it_never_took),
        cmocka_unit_test(test_a_marker_or_queue_of_another_type_is_refused_and_changes_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
