/* SPDX-License-Identifier: MIT */
/* test_sentinel_watch.c — a client of a redis-sentinel:// URL listens for +switch-master on
 * every sentinel of the URL:
 *   - it is subscribed on each of them, and dlock_client_free closes those connections;
 *   - with the sentinel it would have listened to first paused (it can report nothing), a
 *     SENTINEL FAILOVER still moves the client to the new master within seconds, not when
 *     the old master turns replica (8-18 s later on Redis 7.0);
 *   - the switch every sentinel reports is acted on once, the other reports ignored;
 *   - a URL naming more sentinels than the client keeps connections to is DLOCK_EINVAL.
 * A fresh fixture (1 master + 1 replica + 3 sentinels) per test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core_call.h"
#include "harness.h"
#include "sentinel_fixture.h"

/* from the sentinels' agreement to the client's first call on the new master */
#define FOLLOWS_WITHIN_MS 3000

static sentinel_fixture *fx;
static char url[1024];

static int setup(void **state) {
    (void)state;
    test_watchdog_arm(90, "test_sentinel_watch");
    if (sentinel_fixture_start(NULL, &fx) != 0)
        return -1;
    /* no WAIT: a call on the old master, which has lost its replica, fails only slowly */
    snprintf(url, sizeof(url), "%s?sync_replicas=0", sentinel_fixture_url(fx));
    return 0;
}

static int teardown(void **state) {
    (void)state;
    sentinel_fixture_stop(fx);
    fx = NULL;
    test_watchdog_disarm();
    return 0;
}

/* What the client logged about +switch-master (on its loop thread). A report that comes
 * while the switch's new master is still being checked confirms it (it is trusted from then
 * on) and follows nothing again, as one that comes after the check: both count as ignored.
 * Which of the two a report is depends on how fast the check is answered, not on the client. */
static atomic_int switches_followed, switches_ignored;

static void count_switches(int level, const char *msg, void *arg) {
    (void)level;
    (void)arg;
    if (strstr(msg, "sentinel: failover of"))
        atomic_fetch_add(&switches_followed, 1);
    else if (strstr(msg, "already followed") || strstr(msg, "confirms the failover of"))
        atomic_fetch_add(&switches_ignored, 1);
}

static dlock_client *watching_client(void) {
    atomic_store(&switches_followed, 0);
    atomic_store(&switches_ignored, 0);
    test_client_cfg cfg = {.url = url, .connect_timeout_ms = 1000, .timeout_ms = 1000};
    dlock_options o;
    test_client_options(NULL, &cfg, &o);
    o.log_cb = count_switches;
    dlock_client *c = NULL;
    ASSERT_OK(dlock_client_new(&o, &c));
    return c;
}

static bool every_sentinel_has_subscribers(long n) {
    for (int i = 0; i < SENTINEL_FIXTURE_SENTINELS; i++)
        if (sentinel_fixture_sentinel_subscribers(fx, i) != n)
            return false;
    return true;
}

static void expect_watched_by_every_sentinel(void) {
    bool watched = false;
    POLL_UNTIL(watched, every_sentinel_has_subscribers(1), slack_ms(3000));
    if (!watched)
        fail_msg("the client is not subscribed on every sentinel (subscribers: %ld, %ld, %ld)",
                 sentinel_fixture_sentinel_subscribers(fx, 0),
                 sentinel_fixture_sentinel_subscribers(fx, 1),
                 sentinel_fixture_sentinel_subscribers(fx, 2));
}

/* True once an acquisition through c succeeds and its key is on node: c's command
 * connection is there. */
static bool calls_land_on(dlock_client *c, int node, int attempt) {
    char name[48];
    snprintf(name, sizeof(name), "watch-probe-%d", attempt);
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(c, name, &l));
    int rc = dlock_lock_try_acquire(l, 0, 60000);
    bool there = rc == DLOCK_OK &&
                 redis_fixture_int(sentinel_fixture_node(fx, node), "EXISTS %s", name) == 1;
    dlock_lock_free(l);
    return there;
}

/* ---- tests ------------------------------------------------------------------------------- */

static void test_client_watches_every_sentinel_and_free_closes_the_watches(void **state) {
    (void)state;
    dlock_client *c = watching_client();
    expect_watched_by_every_sentinel();
    dlock_client_free(c);
    bool closed = false;
    POLL_UNTIL(closed, every_sentinel_has_subscribers(0), slack_ms(3000));
    assert_true(closed);
}

static void
test_failover_is_followed_promptly_when_the_first_sentinel_cannot_report_it(void **state) {
    (void)state;
    dlock_client *c = watching_client();
    int old_master = sentinel_fixture_master_index(fx);
    assert_true(calls_land_on(c, old_master, 0));
    expect_watched_by_every_sentinel();
    /* the sentinel a single watch would listen to hears of nothing, and says nothing */
    assert_int_equal(sentinel_fixture_pause_sentinel(fx, 0), 0);
    int64_t start = test_now_ms();
    int new_master = sentinel_fixture_failover(fx);
    int64_t agreed = test_now_ms();
    assert_int_equal(new_master, 1 - old_master);
    bool followed = false;
    int attempt = 1;
    POLL_UNTIL(followed, calls_land_on(c, new_master, attempt++), slack_ms(FOLLOWS_WITHIN_MS));
    int64_t landed = test_now_ms();
    if (!followed)
        fail_msg("the client did not follow the failover within %lld ms of the sentinels' "
                 "agreement",
                 (long long)slack_ms(FOLLOWS_WITHIN_MS));
    printf("# first call on the new master %lld ms after the sentinels agreed (%lld ms after "
           "the failover began)\n",
           (long long)(landed - agreed), (long long)(landed - start));
    assert_int_equal(sentinel_fixture_resume_sentinel(fx, 0), 0);
    dlock_client_free(c);
}

static void test_switch_reported_by_every_sentinel_is_followed_once(void **state) {
    (void)state;
    dlock_client *c = watching_client();
    expect_watched_by_every_sentinel();
    assert_true(sentinel_fixture_failover(fx) >= 0);
    bool all_reported = false;
    POLL_UNTIL(all_reported,
               atomic_load(&switches_followed) + atomic_load(&switches_ignored) ==
                   SENTINEL_FIXTURE_SENTINELS,
               slack_ms(5000));
    if (!all_reported)
        fail_msg("%d reports of the switch followed, %d ignored: expected %d in all",
                 atomic_load(&switches_followed), atomic_load(&switches_ignored),
                 SENTINEL_FIXTURE_SENTINELS);
    assert_int_equal(atomic_load(&switches_followed), 1);
    dlock_client_free(c);
}

static void test_url_with_more_sentinels_than_the_client_watches_is_einval(void **state) {
    (void)state;
    char many[2048] = "redis-sentinel://";
    for (int i = 0; i < 17; i++) {
        char host[32];
        snprintf(host, sizeof(host), "%s127.0.0.1:%d", i ? "," : "", 26000 + i);
        strcat(many, host);
    }
    strcat(many, "/mymaster");
    dlock_options o;
    dlock_options_init(&o);
    o.url = many;
    dlock_client *c = NULL;
    ASSERT_RC(dlock_client_new(&o, &c), DLOCK_EINVAL);
    assert_null(c);
    assert_non_null(strstr(dlock_last_error(), "at most 16"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_client_watches_every_sentinel_and_free_closes_the_watches, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_failover_is_followed_promptly_when_the_first_sentinel_cannot_report_it, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_switch_reported_by_every_sentinel_is_followed_once,
                                        setup, teardown),
        cmocka_unit_test(test_url_with_more_sentinels_than_the_client_watches_is_einval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
