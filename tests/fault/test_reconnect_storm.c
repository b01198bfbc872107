/* SPDX-License-Identifier: MIT */
/* test_reconnect_storm.c — an immediate first reconnect never becomes a reconnect loop
 * (issue 32, item 1).
 *
 * The first reconnect after a drop is at once; every further consecutive failure waits a
 * step that doubles from 10 ms up to retry_delay_ms (jittered over its upper half), and a
 * connection that drops within a second of becoming ready counts as a failure that goes on
 * (src/core/net/link.c). So a link facing a server that drops everything attempts at most
 *   1 (at once) + 7 (steps 10..640 ms, together at least 635 ms) + (W - 635) / 500
 * times in a window of W ms with the default retry_delay_ms of 1000: 17 in 5 s. A loaded
 * machine only makes fewer. A link that reconnected at once every time would attempt
 * hundreds or thousands of times.
 *
 * What is proven, counting the connections the server (or the proxy in front of it) took
 * over 5 s:
 * - a proxy that closes every connection as soon as it is open (fault_proxy_drop_all
 *   every 2 ms): the client's command link attempts at most 40 times, and at least twice;
 * - a server that kills every normal connection every 5 ms, so that most connections are
 *   killed right after they became ready (the handshake answered): the same bound, since
 *   a drop soon after ready counts as a failure that goes on.
 *
 * Every test starts its own redis-server and prints its figures ("# ..."). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include <setjmp.h> /* cmocka */
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "dlock.h"
#include "fault_proxy.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define WINDOW_MS 5000
#define DEFAULT_RETRY_DELAY_MS 1000 /* dlock_options_init's: the tests' own is shorter */
/* 17 by the schedule above; generous, yet a tight loop makes hundreds */
#define ATTEMPTS_MAX 40

typedef struct dropper {
    fault_proxy *p;
    atomic_bool stop;
} dropper;

static void *dropper_main(void *arg) {
    dropper *d = arg;
    while (!atomic_load(&d->stop)) {
        fault_proxy_drop_all(d->p);
        test_sleep_ms(2);
    }
    return NULL;
}

static void test_a_proxy_that_drops_every_connection_is_not_hammered(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    redis_fixture *f = start_server();
    fault_proxy *p = NULL;
    assert_int_equal(fault_proxy_start(redis_fixture_unix_url(f), &p), 0);
    dlock_client *c =
        connect_client_cfg(NULL, (test_client_cfg){.url = fault_proxy_url(p),
                                                   .retry_delay_ms = DEFAULT_RETRY_DELAY_MS});

    dropper d = {.p = p};
    atomic_init(&d.stop, false);
    uint64_t before = fault_proxy_stats_get(p).accepted;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, dropper_main, &d), 0);
    test_sleep_ms(WINDOW_MS); /* the window to count in */
    uint64_t attempts = fault_proxy_stats_get(p).accepted - before;
    atomic_store(&d.stop, true);
    assert_int_equal(pthread_join(t, NULL), 0);
    printf("# every connection dropped as soon as open: %llu attempts in %d ms\n",
           (unsigned long long)attempts, WINDOW_MS);
    ASSERT_BETWEEN(attempts, 2, ATTEMPTS_MAX);

    /* and the client comes back once the proxy lets it: a ping within its backoff's step */
    ASSERT_RC(dlock_client_ping(c), DLOCK_OK);
    dlock_client_free(c);
    fault_proxy_stop(p);
    redis_fixture_stop(f);
}

static long long connections(redis_fixture *f) {
    return redis_fixture_info_int(f, "stats", "total_connections_received");
}

static void test_connections_killed_right_after_ready_are_not_remade_in_a_loop(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    redis_fixture *f = start_server();
    dlock_client *c =
        connect_client_cfg(f, (test_client_cfg){.retry_delay_ms = DEFAULT_RETRY_DELAY_MS});
    long long before = connections(f);
    int killed = 0;
    int64_t until = test_now_ms() + WINDOW_MS;
    while (test_now_ms() < until) {
        int n = redis_fixture_client_kill_type(f, "normal");
        assert_true(n >= 0);
        killed += n;
        test_sleep_ms(5);
    }
    long long attempts = connections(f) - before;
    dlock_stats st;
    dlock_stats_init(&st);
    ASSERT_RC(dlock_client_stats(c, &st), DLOCK_OK);
    printf("# normal connections killed every 5 ms: %lld connections made in %d ms, %d killed, "
           "%llu times ready again\n",
           attempts, WINDOW_MS, killed, (unsigned long long)st.reconnects);
    ASSERT_BETWEEN(attempts, 2, ATTEMPTS_MAX);
    assert_true(killed >= 2);

    ASSERT_RC(dlock_client_ping(c), DLOCK_OK);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_proxy_that_drops_every_connection_is_not_hammered),
        cmocka_unit_test(test_connections_killed_right_after_ready_are_not_remade_in_a_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
