/* SPDX-License-Identifier: MIT */
/* test_pubsub.c — the pub/sub router (src/core/net/pubsub.c) against a real redis-server.
 *
 * What is proven: a listener gets every PUBLISH on its channel, byte for byte, after its
 * on_ready; listeners of one channel share one SUBSCRIBE and the channel is unsubscribed
 * when the last one leaves; leaving and coming back while the UNSUBSCRIBE is in flight
 * ends subscribed; leaving the last channel while joining another keeps the subscriber
 * connection working; a killed subscriber connection comes back, says on_ready again and
 * keeps delivering; a thousand channels subscribed at once all deliver.
 *
 * Listeners live on the client's loop thread: the tests register them through a small
 * dlock__op (on_loop) and poll counters the callbacks keep under a mutex. Every listener
 * is in static storage, so a test that fails half-way leaves nothing dangling for the
 * teardown that frees the client. */
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

#define BUDGET_S 30

/* ---- the listeners under test ------------------------------------------------------------ */

#define MAX_PAYLOAD 64

typedef struct probe {
    dlock__listener l;
    const char *channel; /* for messages */
    int ready;           /* on_ready calls */
    int messages;        /* on_message calls */
    int64_t last_message_ms;
    char payload[MAX_PAYLOAD];
    size_t payload_len;
} probe;

static pthread_mutex_t probes_mu = PTHREAD_MUTEX_INITIALIZER;

static void probe_on_ready(dlock__listener *l) {
    probe *p = DLOCK__CONTAINER_OF(l, probe, l);
    pthread_mutex_lock(&probes_mu);
    p->ready++;
    pthread_mutex_unlock(&probes_mu);
}

static void probe_on_message(dlock__listener *l, const char *msg, size_t len) {
    probe *p = DLOCK__CONTAINER_OF(l, probe, l);
    pthread_mutex_lock(&probes_mu);
    p->messages++;
    p->last_message_ms = dlock__now_ms();
    p->payload_len = len < MAX_PAYLOAD ? len : MAX_PAYLOAD;
    memcpy(p->payload, msg, p->payload_len);
    pthread_mutex_unlock(&probes_mu);
}

static void probe_reset(probe *p, const char *channel) {
    memset(p, 0, sizeof(*p));
    p->l.on_ready = probe_on_ready;
    p->l.on_message = probe_on_message;
    p->channel = channel;
}

static int probe_ready(probe *p) {
    pthread_mutex_lock(&probes_mu);
    int n = p->ready;
    pthread_mutex_unlock(&probes_mu);
    return n;
}

static int probe_messages(probe *p) {
    pthread_mutex_lock(&probes_mu);
    int n = p->messages;
    pthread_mutex_unlock(&probes_mu);
    return n;
}

/* Loop-thread steps, run through on_loop. */
typedef struct probe_list {
    probe **probes;
    size_t n;
    int rc; /* first error of dlock__listen */
    bool ready[4];
} probe_list;

static void listen_all(dlock_client *c, void *arg) {
    probe_list *pl = arg;
    pl->rc = DLOCK_OK;
    for (size_t i = 0; i < pl->n; i++) {
        int rc = dlock__listen(c, pl->probes[i]->channel, &pl->probes[i]->l);
        if (rc != DLOCK_OK && pl->rc == DLOCK_OK)
            pl->rc = rc;
    }
}

static void unlisten_all(dlock_client *c, void *arg) {
    probe_list *pl = arg;
    for (size_t i = 0; i < pl->n; i++)
        dlock__unlisten(c, &pl->probes[i]->l);
}

static void read_ready(dlock_client *c, void *arg) {
    (void)c;
    probe_list *pl = arg;
    for (size_t i = 0; i < pl->n && i < 4; i++)
        pl->ready[i] = dlock__listener_ready(&pl->probes[i]->l);
}

static void listen_one(dlock_client *c, probe *p) {
    probe *ps[1] = {p};
    probe_list pl = {.probes = ps, .n = 1};
    on_loop(c, listen_all, &pl);
    assert_int_equal(pl.rc, DLOCK_OK);
}

static void unlisten_one(dlock_client *c, probe *p) {
    probe *ps[1] = {p};
    probe_list pl = {.probes = ps, .n = 1};
    on_loop(c, unlisten_all, &pl);
}

static bool listener_ready(dlock_client *c, probe *p) {
    probe *ps[1] = {p};
    probe_list pl = {.probes = ps, .n = 1};
    on_loop(c, read_ready, &pl);
    return pl.ready[0];
}

/* ---- reading the server's view ------------------------------------------------------------ */

static long long publish(redis_fixture *f, const char *channel, const char *msg, size_t len) {
    return redis_fixture_int(f, "PUBLISH %s %b", channel, msg, len);
}

/* A barrier on the subscriber connection: publishes a marker on p's channel and waits until
 * p got it. The server sends one connection its messages and replies in order, so whatever
 * it sent that connection before the marker (a duplicate message, a confirmation) has been
 * handled by then. */
static void pass_marker(redis_fixture *f, probe *p) {
    int before = probe_messages(p);
    assert_int_equal(publish(f, p->channel, "marker", 6), 1);
    bool ok = false;
    POLL_UNTIL(ok, probe_messages(p) == before + 1, test_slack_ms(1000));
    assert_true(ok);
}

/* ---- per-test server and client ------------------------------------------------------------ */

typedef test_world world;

static int setup(void **state) {
    return test_world_setup(state);
}

static int teardown(void **state) {
    return test_world_teardown(state);
}

/* ---- tests ---------------------------------------------------------------------------------- */

static probe one, two;

static void test_listener_gets_on_ready_then_every_message_byte_for_byte(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    probe_reset(&one, "ps:{exact}");

    int64_t t0 = test_now_ms();
    listen_one(w->c, &one);
    bool ok = false;
    POLL_UNTIL(ok, probe_ready(&one) >= 1, test_slack_ms(2000));
    assert_true(ok);
    int64_t confirmed_in = test_now_ms() - t0;
    /* on_ready means the server has us: a PUBLISH now reaches exactly one subscriber */
    assert_int_equal(numsub(w->f, one.channel), 1);
    assert_true(listener_ready(w->c, &one));

    static const char payload[] = "hello\0wor\xffld \r\n"; /* NUL, high byte, CRLF */
    const size_t len = sizeof(payload) - 1;
    int64_t sent = test_now_ms();
    assert_int_equal(publish(w->f, one.channel, payload, len), 1);
    POLL_UNTIL(ok, probe_messages(&one) == 1, test_slack_ms(1000));
    assert_true(ok);
    pthread_mutex_lock(&probes_mu);
    assert_int_equal(one.payload_len, len);
    assert_memory_equal(one.payload, payload, len);
    int64_t latency = one.last_message_ms - sent;
    pthread_mutex_unlock(&probes_mu);

    /* one more, and no duplicate of either */
    assert_int_equal(publish(w->f, one.channel, "2", 1), 1);
    POLL_UNTIL(ok, probe_messages(&one) == 2, test_slack_ms(1000));
    assert_true(ok);
    pthread_mutex_lock(&probes_mu);
    assert_int_equal(one.payload_len, 1);
    assert_memory_equal(one.payload, "2", 1);
    pthread_mutex_unlock(&probes_mu);
    /* a message on another channel is not ours: the server delivers it to nobody */
    assert_int_equal(publish(w->f, "ps:{other}", "x", 1), 0);
    pass_marker(w->f, &one);
    assert_int_equal(probe_messages(&one), 3); /* the two and the marker: no duplicate */
    assert_int_equal(probe_ready(&one), 1);

    unlisten_one(w->c, &one);
    printf("# subscription confirmed in %lld ms, message delivered in %lld ms\n",
           (long long)confirmed_in, (long long)latency);
}

static void test_two_listeners_share_one_subscription_and_both_get_each_message(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    probe_reset(&one, "ps:{shared}");
    probe_reset(&two, "ps:{shared}");
    long long subscribes_before =
        redis_fixture_info_int(w->f, "commandstats", "cmdstat_subscribe.calls");

    listen_one(w->c, &one);
    bool ok = false;
    POLL_UNTIL(ok, probe_ready(&one) == 1, test_slack_ms(2000));
    assert_true(ok);
    listen_one(w->c, &two);
    /* the channel is already confirmed: the second listener is ready at once */
    assert_true(listener_ready(w->c, &two));

    assert_int_equal(numsub(w->f, "ps:{shared}"), 1);
    assert_int_equal(redis_fixture_info_int(w->f, "commandstats", "cmdstat_subscribe.calls") -
                         subscribes_before,
                     1);

    assert_int_equal(publish(w->f, "ps:{shared}", "m1", 2), 1); /* one connection */
    POLL_UNTIL(ok, probe_messages(&one) == 1 && probe_messages(&two) == 1, test_slack_ms(1000));
    assert_true(ok);

    /* one leaves: the other still hears, the one gone does not */
    unlisten_one(w->c, &one);
    assert_int_equal(publish(w->f, "ps:{shared}", "m2", 2), 1);
    POLL_UNTIL(ok, probe_messages(&two) == 2, test_slack_ms(1000));
    assert_true(ok);
    /* m2 reached two: its dispatch to the channel's listeners is over */
    assert_int_equal(probe_messages(&one), 1);
    assert_int_equal(numsub(w->f, "ps:{shared}"), 1);

    /* both gone: the server forgets the channel */
    unlisten_one(w->c, &two);
    POLL_UNTIL(ok, subscribed_channels(w->f) == 0, test_slack_ms(500));
    assert_true(ok);
    assert_int_equal(publish(w->f, "ps:{shared}", "m3", 2), 0); /* delivered to nobody */
}

/* In one loop turn: leave (UNSUBSCRIBE goes out) and come back. */
static void leave_and_come_back(dlock_client *c, void *arg) {
    probe *p = arg;
    dlock__unlisten(c, &p->l);
    int rc = dlock__listen(c, p->channel, &p->l);
    if (rc != DLOCK_OK)
        p->ready = -1000; /* seen by the test as a failure */
}

static void test_leaving_and_listening_again_during_unsubscribe_ends_subscribed(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    probe_reset(&one, "ps:{flap}");
    listen_one(w->c, &one);
    bool ok = false;
    POLL_UNTIL(ok, probe_ready(&one) == 1, test_slack_ms(2000));
    assert_true(ok);
    long long unsubscribes_before =
        redis_fixture_info_int(w->f, "commandstats", "cmdstat_unsubscribe.calls");

    for (int round = 1; round <= 3; round++) {
        on_loop(w->c, leave_and_come_back, &one);
        /* the UNSUBSCRIBE is answered, then the channel is subscribed again */
        POLL_UNTIL(ok, probe_ready(&one) == 1 + round, test_slack_ms(2000));
        assert_true(ok);
        assert_true(listener_ready(w->c, &one));
        assert_int_equal(numsub(w->f, "ps:{flap}"), 1);
        char msg[16];
        int len = snprintf(msg, sizeof(msg), "round %d", round);
        assert_int_equal(publish(w->f, "ps:{flap}", msg, (size_t)len), 1);
        POLL_UNTIL(ok, probe_messages(&one) == round, test_slack_ms(1000));
        assert_true(ok);
        pthread_mutex_lock(&probes_mu);
        assert_int_equal(one.payload_len, (size_t)len);
        assert_memory_equal(one.payload, msg, (size_t)len);
        pthread_mutex_unlock(&probes_mu);
    }
    /* the UNSUBSCRIBEs really went out: this is the path under test */
    assert_int_equal(redis_fixture_info_int(w->f, "commandstats", "cmdstat_unsubscribe.calls") -
                         unsubscribes_before,
                     3);
    unlisten_one(w->c, &one);
    POLL_UNTIL(ok, subscribed_channels(w->f) == 0, test_slack_ms(500));
    assert_true(ok);
}

/* In one loop turn: the only channel's last listener leaves and another channel's first
 * listener arrives, so the server's subscription count drops to 0 while the new SUBSCRIBE
 * is on its way. */
static void swap_channels(dlock_client *c, void *arg) {
    (void)arg;
    dlock__unlisten(c, &one.l);
    if (dlock__listen(c, two.channel, &two.l) != DLOCK_OK)
        two.ready = -1000;
}

static void test_leaving_the_last_channel_while_joining_another_keeps_delivering(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    probe_reset(&one, "ps:{first}");
    probe_reset(&two, "ps:{second}");
    listen_one(w->c, &one);
    bool ok = false;
    POLL_UNTIL(ok, probe_ready(&one) == 1, test_slack_ms(2000));
    assert_true(ok);

    on_loop(w->c, swap_channels, NULL);
    POLL_UNTIL(ok, probe_ready(&two) == 1, test_slack_ms(2000));
    assert_true(ok);
    assert_int_equal(numsub(w->f, "ps:{second}"), 1);
    assert_int_equal(numsub(w->f, "ps:{first}"), 0);
    assert_int_equal(publish(w->f, "ps:{second}", "after", 5), 1);
    POLL_UNTIL(ok, probe_messages(&two) == 1, test_slack_ms(1000));
    assert_true(ok);
    unlisten_one(w->c, &two);
}

static void test_killed_subscriber_connection_comes_back_ready_and_delivering(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    probe_reset(&one, "ps:{survivor}");
    probe_reset(&two, "ps:{survivor2}");
    probe *ps[2] = {&one, &two};
    probe_list pl = {.probes = ps, .n = 2};
    on_loop(w->c, listen_all, &pl);
    assert_int_equal(pl.rc, DLOCK_OK);
    bool ok = false;
    POLL_UNTIL(ok, probe_ready(&one) == 1 && probe_ready(&two) == 1, test_slack_ms(2000));
    assert_true(ok);
    assert_int_equal(publish(w->f, "ps:{survivor}", "before", 6), 1);
    POLL_UNTIL(ok, probe_messages(&one) == 1, test_slack_ms(1000));
    assert_true(ok);

    int64_t killed_at = test_now_ms();
    assert_int_equal(redis_fixture_client_kill_type(w->f, "pubsub"), 1);
    POLL_UNTIL(ok, probe_ready(&one) == 2 && probe_ready(&two) == 2, test_slack_ms(3000));
    assert_true(ok);
    int64_t back_in = test_now_ms() - killed_at;
    assert_int_equal(numsub(w->f, "ps:{survivor}"), 1);
    assert_int_equal(numsub(w->f, "ps:{survivor2}"), 1);

    assert_int_equal(publish(w->f, "ps:{survivor}", "after", 5), 1);
    assert_int_equal(publish(w->f, "ps:{survivor2}", "after2", 6), 1);
    POLL_UNTIL(ok, probe_messages(&one) == 2 && probe_messages(&two) == 1, test_slack_ms(1000));
    assert_true(ok);
    pthread_mutex_lock(&probes_mu);
    assert_int_equal(one.payload_len, 5);
    assert_memory_equal(one.payload, "after", 5);
    pthread_mutex_unlock(&probes_mu);
    pass_marker(w->f, &one);
    assert_int_equal(probe_ready(&one), 2); /* once per confirmation, no more */

    on_loop(w->c, unlisten_all, &pl);
    POLL_UNTIL(ok, subscribed_channels(w->f) == 0, test_slack_ms(500));
    assert_true(ok);
    printf("# subscriptions back %lld ms after CLIENT KILL\n", (long long)back_in);
}

/* ---- many channels -------------------------------------------------------------------------- */

#define MANY 1000
static probe many[MANY];
static char many_names[MANY][32];
static probe *many_ptrs[MANY];

static size_t many_reset(void) {
    size_t n = (size_t)test_scaled(MANY);
    for (size_t i = 0; i < n; i++) {
        snprintf(many_names[i], sizeof(many_names[i]), "ps:{many-%zu}", i);
        probe_reset(&many[i], many_names[i]);
        many_ptrs[i] = &many[i];
    }
    return n;
}

static size_t count_ready_once(size_t n) {
    size_t k = 0;
    pthread_mutex_lock(&probes_mu);
    for (size_t i = 0; i < n; i++)
        k += many[i].ready == 1;
    pthread_mutex_unlock(&probes_mu);
    return k;
}

static size_t count_with_messages(size_t n, int want) {
    size_t k = 0;
    pthread_mutex_lock(&probes_mu);
    for (size_t i = 0; i < n; i++)
        k += many[i].messages == want;
    pthread_mutex_unlock(&probes_mu);
    return k;
}

/* Every channel has exactly one subscriber on the server (one PUBSUB NUMSUB for all). */
static void assert_all_subscribed(redis_fixture *f, size_t n) {
    const char **argv = calloc(n + 2, sizeof(*argv));
    assert_non_null(argv);
    argv[0] = "PUBSUB";
    argv[1] = "NUMSUB";
    for (size_t i = 0; i < n; i++)
        argv[i + 2] = many_names[i];
    redisReply *r = redis_fixture_cmd_argv(f, (int)n + 2, argv, NULL);
    free(argv);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2 * n);
    size_t subscribed = 0;
    for (size_t i = 0; i < n; i++)
        subscribed += r->element[2 * i + 1]->integer == 1;
    freeReplyObject(r);
    assert_int_equal(subscribed, n);
}

/* `others`: channels of this client subscribed besides the many. */
static void many_channels_all_deliver(world *w, const char *how, long long others) {
    size_t n = many_reset();
    probe_list pl = {.probes = many_ptrs, .n = n};
    int64_t t0 = test_now_ms();
    on_loop(w->c, listen_all, &pl);
    assert_int_equal(pl.rc, DLOCK_OK);
    bool ok = false;
    POLL_UNTIL(ok, count_ready_once(n) == n, test_slack_ms(5000));
    assert_true(ok);
    int64_t ready_in = test_now_ms() - t0;
    assert_all_subscribed(w->f, n);
    assert_int_equal(subscribed_channels(w->f), (long long)n + others);

    size_t delivered = 0;
    for (size_t i = 0; i < n; i++)
        delivered += publish(w->f, many_names[i], many_names[i], strlen(many_names[i])) == 1;
    assert_int_equal(delivered, n);
    POLL_UNTIL(ok, count_with_messages(n, 1) == n, test_slack_ms(5000));
    assert_true(ok);
    pthread_mutex_lock(&probes_mu);
    size_t exact = 0;
    for (size_t i = 0; i < n; i++)
        exact += many[i].payload_len == strlen(many_names[i]) &&
                 memcmp(many[i].payload, many_names[i], many[i].payload_len) == 0;
    pthread_mutex_unlock(&probes_mu);
    assert_int_equal(exact, n); /* each got its own channel's message, not a neighbour's */

    on_loop(w->c, unlisten_all, &pl);
    POLL_UNTIL(ok, subscribed_channels(w->f) == others, test_slack_ms(2000));
    assert_true(ok);
    printf("# %zu channels (%s) confirmed in %lld ms\n", n, how, (long long)ready_in);
}

static void
test_thousand_channels_at_once_on_a_new_connection_all_subscribe_and_deliver(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    /* the subscriber connection is opened by the first listen: every channel goes out in
     * the batched SUBSCRIBEs of its on_ready */
    many_channels_all_deliver(w, "new connection", 0);
}

static void
test_thousand_channels_at_once_on_a_ready_connection_all_subscribe_and_deliver(void **state) {
    world *w = *state;
    test_watchdog_arm(BUDGET_S, __func__);
    probe_reset(&one, "ps:{opener}");
    listen_one(w->c, &one);
    bool ok = false;
    POLL_UNTIL(ok, probe_ready(&one) == 1, test_slack_ms(2000));
    assert_true(ok);
    /* the connection is up: each listen sends its own SUBSCRIBE, all in one write */
    many_channels_all_deliver(w, "ready connection", 1);
    /* the channel that was there before is untouched by the many leaving */
    assert_int_equal(numsub(w->f, "ps:{opener}"), 1);
    assert_int_equal(publish(w->f, "ps:{opener}", "still", 5), 1);
    POLL_UNTIL(ok, probe_messages(&one) == 1, test_slack_ms(1000));
    assert_true(ok);
    unlisten_one(w->c, &one);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_listener_gets_on_ready_then_every_message_byte_for_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_two_listeners_share_one_subscription_and_both_get_each_message, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_leaving_and_listening_again_during_unsubscribe_ends_subscribed, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_leaving_the_last_channel_while_joining_another_keeps_delivering, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_killed_subscriber_connection_comes_back_ready_and_delivering, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_thousand_channels_at_once_on_a_new_connection_all_subscribe_and_deliver, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_thousand_channels_at_once_on_a_ready_connection_all_subscribe_and_deliver, setup,
            teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
