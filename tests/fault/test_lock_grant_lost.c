/* SPDX-License-Identifier: MIT */
/* test_lock_grant_lost.c — a grant (release.lua hands the lock to the first waiter in line,
 * with a short lease) whose confirmation cannot reach Redis in time (src/lock/engine_grant.c).
 *
 * The waiter's client holds the lock once it hears the grant and confirms it with its own
 * lease right after. Here the confirmation is held back: the grant is made as release.lua
 * makes it, and in the same pipeline the server is told CLIENT PAUSE WRITE, so the grant's
 * message goes out but the confirmation (a script: a write) waits until the test unpauses.
 * The pause lasts until the test has seen what it asserts, never a fixed time, so a slow
 * machine cannot make it pass or fail:
 *   - the grant's lease runs out unconfirmed: the waiter is told it lost the lock
 *     (DLOCK_ECONN, once) while the pause still keeps everyone else out, so nobody is told
 *     they hold it while the waiter believes it does; after the pause another client takes
 *     it, the late confirmation does not bring the waiter's hold back, and the waiter's
 *     release says DLOCK_ELOST;
 *   - the client gave the grant up (a tenth of its lease early, from the earliest it can
 *     have begun) while Redis still had it: the confirmation that lands after that finds the
 *     hold and gives it back, so the lock is not left held by a caller told it lost it. */
#include "lock_helpers.h"

#define GRANT_MS 500 /* reentrant.c's HANDOFF_GRANT_MS */

/* release.lua's grant of the lock KEYS[1] to the first waiter of the queue KEYS[2], on the turn
 * channel KEYS[3], with ARGV[1] as the lease in Redis; returns the subscribers that heard it. */
static const char grant_script[] =
    "local line = redis.call('zrange', KEYS[2], 0, 0, 'withscores') "
    "local heir = line[1] "
    "redis.call('del', KEYS[1]) "
    "redis.call('hset', KEYS[1], heir, 1) "
    "redis.call('pexpire', KEYS[1], ARGV[1]) "
    "redis.call('zrem', KEYS[2], heir) "
    "local joined = math.floor(tonumber(line[2]) * 1000 + 0.5) "
    "local now = redis.call('time') "
    "return redis.call('publish', KEYS[3], heir .. ' 1 0 ' .. string.format('%d', joined) .. "
    "' ' .. now[1] .. string.format('%06d', now[2]))";

typedef struct lost_seen {
    atomic_int count;
    atomic_int reason;
} lost_seen;

static void on_lost(dlock_lock *l, uint64_t owner, int reason, void *arg) {
    (void)l;
    (void)owner;
    lost_seen *s = arg;
    atomic_store(&s->reason, reason);
    atomic_fetch_add(&s->count, 1);
}

#define NOT_YET 1 /* no DLOCK_* status */

/* b's waiter: the wait, then, once the test says so, the release on the same thread (the
 * same owner), whose status the call returns. */
typedef struct waiter {
    dlock_lock *l;
    atomic_int acquired; /* the wait's status; NOT_YET before */
    atomic_bool go;
    blocking_call call;
} waiter;

static int wait_hold_release(void *arg) {
    waiter *w = arg;
    int rc = dlock_lock_try_acquire(w->l, slack_ms(10000), 30000);
    atomic_store(&w->acquired, rc);
    while (rc == DLOCK_OK && !atomic_load(&w->go))
        test_sleep_ms(1);
    return rc == DLOCK_OK ? dlock_lock_release(w->l) : rc;
}

/* Polls until the wait has returned; its status. */
static int acquired(waiter *w) {
    bool returned = false;
    POLL_UNTIL(returned, atomic_load(&w->acquired) != NOT_YET, slack_ms(3000));
    assert_true(returned);
    return atomic_load(&w->acquired);
}

/* The release after the test's go; its status. */
static int released(waiter *w) {
    atomic_store(&w->go, true);
    return blocking_call_join(&w->call);
}

typedef struct scene {
    redis_fixture *f;
    dlock_client *b;
    dlock_lock *lb;
    waiter w;
    lost_seen lost;
    char name[64], queue[96], turn[128];
} scene;

/* Someone else holds `name` (a hash of Redisson's shape); b's waiter sleeps in line behind
 * it, heard on both channels, its command connection up for more than a second (a grant is
 * taken from the message only then). */
static void scene_start(scene *sc, const char *name) {
    memset(sc, 0, sizeof(*sc));
    snprintf(sc->name, sizeof(sc->name), "%s", name);
    snprintf(sc->queue, sizeof(sc->queue), "{%s}:handoff_queue", name);
    snprintf(sc->turn, sizeof(sc->turn), "dlock_lock_turn__channel:{%s}", name);
    sc->f = start_server();
    assert_int_equal(redis_fixture_int(sc->f, "HSET %s other:1 1", name), 1);
    assert_int_equal(redis_fixture_int(sc->f, "PEXPIRE %s 60000", name), 1);
    sc->b = connect_client(sc->f);
    sc->lb = new_lock(sc->b, name);
    ASSERT_RC(dlock_lock_on_lost(sc->lb, on_lost, &sc->lost), DLOCK_OK);
    char channel[128];
    snprintf(channel, sizeof(channel), "redisson_lock__channel:{%s}", name);
    sc->w.l = sc->lb;
    atomic_init(&sc->w.acquired, NOT_YET);
    blocking_call_start_asleep(&sc->w.call, wait_hold_release, &sc->w, sc->f,
                               (asleep_sign){channel, 1, 2, NULL});
    assert_int_equal(redis_fixture_int(sc->f, "ZCARD %s", sc->queue), 1);
    bool heard = false;
    POLL_UNTIL(heard, numsub(sc->f, sc->turn) == 1, slack_ms(3000));
    assert_true(heard);
    test_sleep_ms(1100);
}

/* The grant with lease_ms in Redis, then CLIENT PAUSE WRITE, in one pipeline: the server runs
 * both before it writes the grant's message out, so the waiter's confirmation finds the pause. */
static void grant_then_pause(scene *sc, long long lease_ms) {
    redisContext *c = redisConnectUnix(redis_fixture_socket(sc->f));
    assert_true(c && !c->err);
    char lease[24];
    snprintf(lease, sizeof(lease), "%lld", lease_ms);
    redisAppendCommand(c, "EVAL %s 3 %s %s %s %s", grant_script, sc->name, sc->queue, sc->turn,
                       lease);
    redisAppendCommand(c, "CLIENT PAUSE %d WRITE", 10 * TEST_SLOW_MS);
    redisReply *r = NULL;
    assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, 1); /* b's client heard it */
    freeReplyObject(r);
    assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisFree(c);
}

static void unpause(redis_fixture *f) {
    char *ok = redis_fixture_str(f, "CLIENT UNPAUSE");
    free(ok);
}

/* Polls until b's lost callback has run once; unpauses the server either way. */
static void lost_told(scene *sc) {
    bool told = false;
    POLL_UNTIL(told, atomic_load(&sc->lost.count) == 1, slack_ms(3000));
    if (!told)
        unpause(sc->f);
    assert_true(told);
}

static void scene_end(scene *sc) {
    dlock_lock_free(sc->lb);
    dlock_client_free(sc->b);
    redis_fixture_stop(sc->f);
}

static void
test_a_grant_unconfirmed_until_its_lease_ends_is_told_lost_before_anyone_else_holds(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    scene sc;
    scene_start(&sc, "lapsed");
    grant_then_pause(&sc, GRANT_MS);
    ASSERT_RC(acquired(&sc.w), DLOCK_OK); /* held once heard */

    /* the confirmation waits out the pause, and so does every other writer: b is told it
     * lost the lock while nobody else can have been told they hold it */
    lost_told(&sc);
    assert_int_equal(atomic_load(&sc.lost.reason), DLOCK_ECONN);
    unpause(sc.f);

    dlock_client *c = connect_client(sc.f);
    dlock_lock *lc = new_lock(c, "lapsed");
    ASSERT_RC(dlock_lock_try_acquire(lc, slack_ms(10000), 30000), DLOCK_OK);
    char field[128], dump[256], expected[256];
    owner_field(c, dlock_thread_owner(), field, sizeof(field));
    snprintf(expected, sizeof(expected), "%s=1;", field);
    hash_dump(sc.f, "lapsed", dump, sizeof(dump));
    assert_string_equal(dump, expected); /* the late confirmation brought nothing back */
    ASSERT_RC(released(&sc.w), DLOCK_ELOST);
    assert_int_equal(atomic_load(&sc.lost.count), 1);
    hash_dump(sc.f, "lapsed", dump, sizeof(dump));
    assert_string_equal(dump, expected);
    ASSERT_RC(dlock_lock_release(lc), DLOCK_OK);
    dlock_lock_free(lc);
    dlock_client_free(c);
    scene_end(&sc);
}

static void
test_a_confirmation_that_lands_after_the_grant_was_given_up_gives_the_lock_back(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    scene sc;
    scene_start(&sc, "late");
    /* Redis keeps the grant longer than the client counts on it (as when the client's
     * conservative estimate gives up before the lease really ends) */
    grant_then_pause(&sc, 10 * TEST_SLOW_MS);
    ASSERT_RC(acquired(&sc.w), DLOCK_OK);
    lost_told(&sc);
    assert_int_equal(atomic_load(&sc.lost.reason), DLOCK_ECONN);
    char dump[256];
    assert_int_equal(redis_fixture_int(sc.f, "EXISTS late"), 1); /* still b's in Redis */
    unpause(sc.f);

    /* the confirmation lands, finds the hold and gives it back */
    bool given_back = false;
    POLL_UNTIL(given_back, redis_fixture_int(sc.f, "EXISTS late") == 0, slack_ms(3000));
    assert_true(given_back);
    hash_dump(sc.f, "late", dump, sizeof(dump));
    assert_string_equal(dump, "<none>");
    ASSERT_RC(released(&sc.w), DLOCK_ELOST);
    assert_int_equal(atomic_load(&sc.lost.count), 1);
    scene_end(&sc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_a_grant_unconfirmed_until_its_lease_ends_is_told_lost_before_anyone_else_holds),
        cmocka_unit_test(
            test_a_confirmation_that_lands_after_the_grant_was_given_up_gives_the_lock_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
