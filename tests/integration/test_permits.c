/* test_permits.c — the permit-expirable semaphore (Redisson RPermitExpirableSemaphore) of
 * src/semaphore/permits.c, blocking and async faces, against a real redis-server.
 *
 * What is proven: a permit with a lease comes back to the pool by itself when the lease
 * ends (measured with the server's clock), and a waiter on an empty pool is woken by the
 * earliest lease end, not by the 5 s recheck; a holder process killed with SIGKILL gives
 * its permit back within its lease; release and update_lease by id (expired, unknown and
 * already released ids are DLOCK_ENOTOWNER, and never give a permit back twice); the Redis
 * layout of REDIS_LAYOUT.md read back with plain commands (the count string, the
 * "{N}:timeout" sorted set of raw 16-byte ids scored by server TIME + lease, the no-lease
 * score, the "redisson_sc:{N}" channel and its messages); the async face on the
 * application's own libev loop; bad input (DLOCK_EINVAL with no I/O, malformed ids, keys
 * of another type).
 *
 * Every test starts its own server. */
#include <ctype.h>
#include <poll.h>
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
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core_call.h"
#include "dlock.h"
#include "dlock/adapters/libev.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60
#define NO_LEASE_SCORE 922337203685477LL

/* ---- helpers ----------------------------------------------------------------------------- */

static dlock_permits *new_permits(dlock_client *c, const char *name) {
    dlock_permits *p = NULL;
    ASSERT_RC(dlock_permits_new(c, name, &p), DLOCK_OK);
    return p;
}

static int64_t available_of(dlock_permits *p) {
    int64_t n = INT64_MIN;
    ASSERT_RC(dlock_permits_available(p, &n), DLOCK_OK);
    return n;
}

/* The server's clock (TIME), in ms since the epoch. */
static int64_t server_time_ms(redis_fixture *f) {
    redisReply *r = redis_fixture_cmd(f, "TIME");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    int64_t ms =
        strtoll(r->element[0]->str, NULL, 10) * 1000 + strtoll(r->element[1]->str, NULL, 10) / 1000;
    freeReplyObject(r);
    return ms;
}

static bool is_lower_hex_32(const char *s) {
    if (strlen(s) != 32)
        return false;
    for (int i = 0; i < 32; i++)
        if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
            return false;
    return true;
}

static void bytes_to_hex(const char *bytes, size_t len, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[(unsigned char)bytes[i] >> 4];
        out[2 * i + 1] = digits[(unsigned char)bytes[i] & 15];
    }
    out[2 * len] = '\0';
}

/* The "{N}:timeout" sorted set as read back: members as hex, scores as numbers. */
typedef struct zentry {
    char hex[33];
    size_t raw_len;
    long long score;
} zentry;

static size_t timeout_set(redis_fixture *f, const char *key, zentry *out, size_t cap) {
    const char *argv[] = {"ZRANGE", key, "0", "-1", "WITHSCORES"};
    size_t lens[] = {6, strlen(key), 1, 2, 10};
    redisReply *r = redis_fixture_cmd_argv(f, 5, argv, lens);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    size_t n = r->elements / 2;
    assert_true(n <= cap);
    for (size_t i = 0; i < n; i++) {
        redisReply *m = r->element[2 * i], *s = r->element[2 * i + 1];
        out[i].raw_len = m->len;
        if (m->len == 16)
            bytes_to_hex(m->str, 16, out[i].hex);
        else
            snprintf(out[i].hex, sizeof(out[i].hex), "<%zu bytes>", m->len);
        out[i].score = strtoll(s->str, NULL, 10);
    }
    freeReplyObject(r);
    return n;
}

/* Publishes "end" on channel, then reads s up to it: the payloads before it as "a,b,". */
static void messages_until_end(redis_fixture *f, redisContext *s, const char *channel, char *buf,
                               size_t size) {
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

/* Waits until the server's clock is past ms (a lease end read from the sorted set). */
static void wait_server_time_past(redis_fixture *f, long long ms) {
    bool past = false;
    POLL_UNTIL(past, server_time_ms(f) > ms, test_slack_ms(10000));
    assert_true(past);
}

/* ---- a blocking acquire on its own thread ------------------------------------------------ */

typedef struct waiter {
    dlock_permits *p;
    int64_t wait_ms;
    int64_t lease_ms;
    int rc;
    dlock_permit_id id;
    int64_t returned_us;
    atomic_bool returned;
} waiter;

static void *acquire_on_thread(void *arg) {
    waiter *w = arg;
    w->rc = dlock_permits_acquire(w->p, w->wait_ms, w->lease_ms, &w->id);
    w->returned_us = test_now_us();
    atomic_store(&w->returned, true);
    return NULL;
}

static pthread_t start_waiter_and_let_it_sleep(redis_fixture *f, const char *channel, waiter *w) {
    long long scripts_before = script_calls(f);
    atomic_init(&w->returned, false);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, acquire_on_thread, w), 0);
    bool asleep = false;
    POLL_UNTIL(asleep, numsub(f, channel) == 1 && script_calls(f) >= scripts_before + 2,
               test_slack_ms(3000));
    assert_true(asleep);
    assert_false(atomic_load(&w->returned));
    return t;
}

/* ---- leases ------------------------------------------------------------------------------ */

static void
test_permit_with_a_300_ms_lease_is_back_in_the_pool_after_300_ms_unreleased(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "leased");
    ASSERT_RC(dlock_permits_try_set_permits(p, 3, NULL), DLOCK_OK);
    dlock_permit_id id;
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_permits_acquire(p, 0, 300, &id), DLOCK_OK);
    assert_int_equal(available_of(p), 2);
    bool back = false;
    POLL_UNTIL(back, available_of(p) == 3, test_slack_ms(2000));
    int64_t took = test_now_ms() - start;
    assert_true(back);
    ASSERT_BETWEEN(took, 290, test_slack_ms(800));
    assert_int_equal(redis_fixture_int(f, "ZCARD {leased}:timeout"), 0);
    assert_int_equal(redis_fixture_int(f, "GET leased"), 3);
    printf("# a 300 ms lease was back in the pool %lld ms after the acquire\n", (long long)took);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_waiter_on_an_empty_pool_gets_a_permit_when_the_earliest_lease_ends(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_permits *pa = new_permits(a, "earliest");
    dlock_permits *pb = new_permits(b, "earliest");
    ASSERT_RC(dlock_permits_try_set_permits(pa, 2, NULL), DLOCK_OK);
    dlock_permit_id long_id, short_id, got;
    ASSERT_RC(dlock_permits_acquire(pa, 0, 4000, &long_id), DLOCK_OK);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_permits_acquire(pa, 0, 300, &short_id), DLOCK_OK);
    /* nobody releases; the waiter's only news is the lease end it was told of */
    ASSERT_RC(dlock_permits_acquire(pb, test_slack_ms(4500), -1, &got), DLOCK_OK);
    int64_t took = test_now_ms() - start;
    ASSERT_BETWEEN(took, 290, test_slack_ms(1000));
    /* it got the short lease's permit: the long one is still held */
    ASSERT_RC(dlock_permits_release(pa, &short_id), DLOCK_ENOTOWNER);
    zentry z[4];
    assert_int_equal(timeout_set(f, "{earliest}:timeout", z, 4), 2);
    assert_string_equal(z[0].hex, long_id.hex);
    assert_string_equal(z[1].hex, got.hex);
    assert_int_equal(z[1].score, NO_LEASE_SCORE);
    printf("# waiter on an empty pool got the permit %lld ms after a 300 ms lease began\n",
           (long long)took);
    ASSERT_RC(dlock_permits_release(pb, &got), DLOCK_OK);
    ASSERT_RC(dlock_permits_release(pa, &long_id), DLOCK_OK);
    assert_int_equal(available_of(pa), 2);
    dlock_permits_free(pa);
    dlock_permits_free(pb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void test_waiter_on_an_empty_pool_is_woken_within_100_ms_of_a_release_by_id(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f);
    dlock_client *b = connect_client(f);
    dlock_permits *pa = new_permits(a, "handed");
    dlock_permits *pb = new_permits(b, "handed");
    ASSERT_RC(dlock_permits_try_set_permits(pa, 1, NULL), DLOCK_OK);
    dlock_permit_id held;
    ASSERT_RC(dlock_permits_acquire(pa, 0, -1, &held), DLOCK_OK);
    waiter w = {.p = pb, .wait_ms = test_slack_ms(10000), .lease_ms = -1};
    pthread_t t = start_waiter_and_let_it_sleep(f, "redisson_sc:{handed}", &w);
    int64_t release_start_us = test_now_us();
    ASSERT_RC(dlock_permits_release(pa, &held), DLOCK_OK);
    int64_t release_end_us = test_now_us();
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(w.rc, DLOCK_OK);
    assert_true(w.returned_us >= release_start_us);
    ASSERT_BETWEEN((w.returned_us - release_end_us) / 1000, -test_slack_ms(100),
                   test_slack_ms(100));
    assert_true(is_lower_hex_32(w.id.hex));
    assert_string_not_equal(w.id.hex, held.hex);
    printf("# release by id -> waiting acquire returned %.2f ms later\n",
           (double)(w.returned_us - release_end_us) / 1000.0);
    ASSERT_RC(dlock_permits_release(pb, &w.id), DLOCK_OK);
    dlock_permits_free(pa);
    dlock_permits_free(pb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- a holder process killed with SIGKILL ------------------------------------------------ */

/* The child: its own client (made after the fork), one permit with a lease, then 'A' on the
 * pipe and sleep until killed. Any failure writes 'E' and exits. */
static _Noreturn void permit_holder_child(const char *url, const char *name, int64_t lease_ms,
                                          int wfd) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    dlock_client *c = NULL;
    dlock_permits *p = NULL;
    dlock_permit_id id;
    if (dlock_client_new(&o, &c) != DLOCK_OK || dlock_permits_new(c, name, &p) != DLOCK_OK ||
        dlock_permits_acquire(p, 0, lease_ms, &id) != DLOCK_OK) {
        (void)!write(wfd, "E", 1);
        test_child_exit(1);
    }
    (void)!write(wfd, "A", 1);
    for (;;)
        pause();
}

static pid_t holder_pid; /* the child while it runs, for the teardown */

static int kill_holder_child(void **state) {
    (void)state;
    if (holder_pid > 0) {
        kill(holder_pid, SIGKILL);
        waitpid(holder_pid, NULL, 0);
        holder_pid = 0;
    }
    return 0;
}

static void
test_holder_process_killed_with_sigkill_gives_its_permit_back_within_its_lease(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t lease_ms = 1000;
    freeReplyObject(redis_fixture_cmd(f, "SET crashed 1")); /* one permit */
    int p[2];
    assert_int_equal(pipe(p), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = test_fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        permit_holder_child(redis_fixture_unix_url(f), "crashed", lease_ms, p[1]);
    }
    holder_pid = pid;
    close(p[1]);
    struct pollfd pfd = {.fd = p[0], .events = POLLIN};
    assert_int_equal(poll(&pfd, 1, (int)test_slack_ms(10000)), 1);
    char got = 0;
    assert_int_equal(read(p[0], &got, 1), 1);
    close(p[0]);
    if (got != 'A')
        fail_msg("the holder child could not take the permit");
    assert_int_equal(kill(pid, SIGKILL), 0);
    int64_t killed_at = test_now_ms();
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    holder_pid = 0;
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    /* the dead child's permit is in the sorted set with its lease end */
    zentry z[2];
    assert_int_equal(timeout_set(f, "{crashed}:timeout", z, 2), 1);
    assert_int_equal(z[0].raw_len, 16);
    long long left_ms = z[0].score - server_time_ms(f);
    int64_t left_read_at = test_now_ms();
    ASSERT_BETWEEN(left_ms, -test_slack_ms(1000), lease_ms);

    dlock_client *c = connect_client(f);
    dlock_permits *pp = new_permits(c, "crashed");
    dlock_permit_id id;
    if (left_ms > 50)
        ASSERT_RC(dlock_permits_acquire(pp, 0, -1, &id), DLOCK_ETIMEDOUT); /* still its lease */
    ASSERT_RC(dlock_permits_acquire(pp, test_slack_ms(10000), -1, &id), DLOCK_OK);
    int64_t got_at = test_now_ms();
    int64_t took = got_at - killed_at;
    ASSERT_BETWEEN(took, 0, lease_ms + test_slack_ms(500));
    assert_true(got_at - left_read_at >= left_ms - 5); /* not before the lease ended */
    assert_int_equal(timeout_set(f, "{crashed}:timeout", z, 2), 1);
    assert_string_equal(z[0].hex, id.hex);
    ASSERT_RC(dlock_permits_release(pp, &id), DLOCK_OK);
    assert_int_equal(available_of(pp), 1);
    printf("# holder killed %lld ms before its lease ended; permit taken %lld ms after the kill "
           "(lease %lld ms)\n",
           left_ms, (long long)took, (long long)lease_ms);
    dlock_permits_free(pp);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- release and update_lease by id ------------------------------------------------------ */

static void
test_release_of_an_expired_permit_is_enotowner_and_gives_nothing_back_twice(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "expired");
    ASSERT_RC(dlock_permits_try_set_permits(p, 1, NULL), DLOCK_OK);
    dlock_permit_id id;
    ASSERT_RC(dlock_permits_acquire(p, 0, 200, &id), DLOCK_OK);
    zentry z[2];
    assert_int_equal(timeout_set(f, "{expired}:timeout", z, 2), 1);
    wait_server_time_past(f, z[0].score);
    /* no call came since: the expired permit is still in the set; release finds it gone */
    ASSERT_RC(dlock_permits_release(p, &id), DLOCK_ENOTOWNER);
    assert_true(strlen(dlock_last_error()) > 0);
    assert_int_equal(available_of(p), 1); /* back once, by the expiry */
    assert_int_equal(redis_fixture_int(f, "ZCARD {expired}:timeout"), 0);
    ASSERT_RC(dlock_permits_release(p, &id), DLOCK_ENOTOWNER);
    assert_int_equal(available_of(p), 1);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_release_of_an_unknown_id_is_enotowner_and_changes_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "unknown");
    dlock_permits *other = new_permits(c, "unknown-other");
    ASSERT_RC(dlock_permits_try_set_permits(p, 2, NULL), DLOCK_OK);
    ASSERT_RC(dlock_permits_try_set_permits(other, 1, NULL), DLOCK_OK);
    dlock_permit_id mine, theirs;
    ASSERT_RC(dlock_permits_acquire(p, 0, -1, &mine), DLOCK_OK);
    ASSERT_RC(dlock_permits_acquire(other, 0, -1, &theirs), DLOCK_OK);
    redisContext *sub = subscribe_to(f, "redisson_sc:{unknown}");
    dlock_permit_id made_up = {.hex = "0123456789abcdef0123456789abcdef"};
    ASSERT_RC(dlock_permits_release(p, &made_up), DLOCK_ENOTOWNER);
    ASSERT_RC(dlock_permits_release(p, &theirs), DLOCK_ENOTOWNER); /* another semaphore's */
    dlock_permit_id upper = mine; /* the same id in capitals is the same 16 bytes */
    for (int i = 0; i < 32; i++)
        upper.hex[i] = (char)toupper((unsigned char)upper.hex[i]);
    char got[128];
    messages_until_end(f, sub, "redisson_sc:{unknown}", got, sizeof(got));
    assert_string_equal(got, ""); /* nothing was given back */
    redisFree(sub);
    assert_int_equal(available_of(p), 1);
    assert_int_equal(redis_fixture_int(f, "ZCARD {unknown}:timeout"), 1);
    assert_int_equal(available_of(other), 0);
    ASSERT_RC(dlock_permits_release(p, &upper), DLOCK_OK);
    assert_int_equal(available_of(p), 2);
    ASSERT_RC(dlock_permits_release(other, &theirs), DLOCK_OK);
    dlock_permits_free(other);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_release_of_an_already_released_permit_is_enotowner_the_second_time(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "twice");
    ASSERT_RC(dlock_permits_try_set_permits(p, 2, NULL), DLOCK_OK);
    dlock_permit_id a, b;
    ASSERT_RC(dlock_permits_acquire(p, 0, -1, &a), DLOCK_OK);
    ASSERT_RC(dlock_permits_acquire(p, 0, 10000, &b), DLOCK_OK);
    assert_string_not_equal(a.hex, b.hex);
    assert_int_equal(available_of(p), 0);
    ASSERT_RC(dlock_permits_release(p, &a), DLOCK_OK);
    assert_int_equal(available_of(p), 1);
    ASSERT_RC(dlock_permits_release(p, &a), DLOCK_ENOTOWNER);
    assert_int_equal(available_of(p), 1); /* not 2 */
    ASSERT_RC(dlock_permits_release(p, &b), DLOCK_OK);
    ASSERT_RC(dlock_permits_release(p, &b), DLOCK_ENOTOWNER);
    assert_int_equal(available_of(p), 2);
    assert_int_equal(redis_fixture_int(f, "ZCARD {twice}:timeout"), 0);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_update_lease_extends_a_300_ms_lease_to_5000_and_it_outlives_300_ms(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "extended");
    ASSERT_RC(dlock_permits_try_set_permits(p, 1, NULL), DLOCK_OK);
    dlock_permit_id id;
    ASSERT_RC(dlock_permits_acquire(p, 0, 300, &id), DLOCK_OK);
    int64_t before = server_time_ms(f);
    ASSERT_RC(dlock_permits_update_lease(p, &id, 5000), DLOCK_OK);
    int64_t after = server_time_ms(f);
    zentry z[2];
    assert_int_equal(timeout_set(f, "{extended}:timeout", z, 2), 1);
    assert_string_equal(z[0].hex, id.hex);
    ASSERT_BETWEEN(z[0].score, before + 5000, after + 5000);
    /* well past the first 300 ms, every look still finds it held */
    int64_t until = test_now_ms() + 900;
    while (test_now_ms() < until) {
        assert_int_equal(available_of(p), 0);
        test_sleep_ms(50);
    }
    ASSERT_RC(dlock_permits_release(p, &id), DLOCK_OK);
    assert_int_equal(available_of(p), 1);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_update_lease_shortens_a_lease_and_the_permit_expires_then(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "shortened");
    ASSERT_RC(dlock_permits_try_set_permits(p, 1, NULL), DLOCK_OK);
    dlock_permit_id id;
    ASSERT_RC(dlock_permits_acquire(p, 0, -1, &id), DLOCK_OK); /* no lease at all */
    test_sleep_ms(100);
    assert_int_equal(available_of(p), 0);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_permits_update_lease(p, &id, 300), DLOCK_OK);
    bool back = false;
    POLL_UNTIL(back, available_of(p) == 1, test_slack_ms(2000));
    int64_t took = test_now_ms() - start;
    assert_true(back);
    ASSERT_BETWEEN(took, 290, test_slack_ms(800));
    ASSERT_RC(dlock_permits_release(p, &id), DLOCK_ENOTOWNER);
    ASSERT_RC(dlock_permits_update_lease(p, &id, 5000), DLOCK_ENOTOWNER); /* expired */
    assert_int_equal(available_of(p), 1);
    printf("# lease shortened to 300 ms: permit back %lld ms later\n", (long long)took);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_update_lease_of_an_unknown_id_is_enotowner_and_adds_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "lease-unknown");
    ASSERT_RC(dlock_permits_try_set_permits(p, 1, NULL), DLOCK_OK);
    dlock_permit_id made_up = {.hex = "fedcba9876543210fedcba9876543210"};
    ASSERT_RC(dlock_permits_update_lease(p, &made_up, 5000), DLOCK_ENOTOWNER);
    ASSERT_RC(dlock_permits_update_lease(p, &made_up, -1), DLOCK_ENOTOWNER);
    assert_int_equal(redis_fixture_int(f, "EXISTS {lease-unknown}:timeout"), 0);
    /* released: no longer known either */
    dlock_permit_id id;
    ASSERT_RC(dlock_permits_acquire(p, 0, -1, &id), DLOCK_OK);
    ASSERT_RC(dlock_permits_release(p, &id), DLOCK_OK);
    ASSERT_RC(dlock_permits_update_lease(p, &id, 5000), DLOCK_ENOTOWNER);
    assert_int_equal(redis_fixture_int(f, "EXISTS {lease-unknown}:timeout"), 0);
    assert_int_equal(available_of(p), 1);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- the layout -------------------------------------------------------------------------- */

static void
test_layout_is_a_count_and_a_timeout_zset_of_raw_ids_scored_by_server_time(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "perm");
    bool was_set = false;
    ASSERT_RC(dlock_permits_try_set_permits(p, 3, &was_set), DLOCK_OK);
    assert_true(was_set);
    ASSERT_RC(dlock_permits_try_set_permits(p, 9, &was_set), DLOCK_OK);
    assert_false(was_set);
    dlock_permit_id leased, unleased;
    int64_t before = server_time_ms(f);
    ASSERT_RC(dlock_permits_acquire(p, 0, 10000, &leased), DLOCK_OK);
    int64_t after = server_time_ms(f);
    ASSERT_RC(dlock_permits_acquire(p, 0, -1, &unleased), DLOCK_OK);
    assert_true(is_lower_hex_32(leased.hex));
    assert_true(is_lower_hex_32(unleased.hex));
    assert_string_not_equal(leased.hex, unleased.hex);

    char *type = redis_fixture_str(f, "TYPE perm");
    assert_string_equal(type, "string");
    free(type);
    assert_int_equal(redis_fixture_int(f, "GET perm"), 1);
    type = redis_fixture_str(f, "TYPE {perm}:timeout");
    assert_string_equal(type, "zset");
    free(type);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 2);
    zentry z[4];
    assert_int_equal(timeout_set(f, "{perm}:timeout", z, 4), 2);
    assert_int_equal(z[0].raw_len, 16);
    assert_int_equal(z[1].raw_len, 16);
    assert_string_equal(z[0].hex, leased.hex); /* the 16 raw bytes of the id */
    assert_string_equal(z[1].hex, unleased.hex);
    ASSERT_BETWEEN(z[0].score, before + 10000 - 1000, after + 10000 + 1000);
    assert_int_equal(z[1].score, NO_LEASE_SCORE);
    printf("# lease end score - (server TIME before acquire + lease) = %lld ms\n",
           z[0].score - (before + 10000));

    /* update_lease moves the scores: a lease to none, none to a lease */
    ASSERT_RC(dlock_permits_update_lease(p, &leased, -1), DLOCK_OK);
    before = server_time_ms(f);
    ASSERT_RC(dlock_permits_update_lease(p, &unleased, 20000), DLOCK_OK);
    after = server_time_ms(f);
    assert_int_equal(timeout_set(f, "{perm}:timeout", z, 4), 2);
    assert_string_equal(z[0].hex, unleased.hex);
    ASSERT_BETWEEN(z[0].score, before + 20000 - 1000, after + 20000 + 1000);
    assert_string_equal(z[1].hex, leased.hex);
    assert_int_equal(z[1].score, NO_LEASE_SCORE);

    /* a permit that a Redisson client put in the set is released by its hex id */
    const char raw[16] = "\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee\xff";
    const char *zadd[] = {"ZADD", "{perm}:timeout", "922337203685477", raw};
    size_t zadd_len[] = {4, 14, 15, 16};
    freeReplyObject(redis_fixture_cmd_argv(f, 4, zadd, zadd_len));
    dlock_permit_id foreign = {.hex = "00112233445566778899aabbccddeeff"};
    ASSERT_RC(dlock_permits_release(p, &foreign), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "GET perm"), 2);

    ASSERT_RC(dlock_permits_release(p, &leased), DLOCK_OK);
    ASSERT_RC(dlock_permits_release(p, &unleased), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "GET perm"), 4);
    assert_int_equal(redis_fixture_int(f, "EXISTS {perm}:timeout"), 0);

    /* a name holding a '{' is its own hash tag: "N:timeout", no extra braces */
    dlock_permits *tagged = new_permits(c, "perm{t}");
    ASSERT_RC(dlock_permits_try_set_permits(tagged, 1, NULL), DLOCK_OK);
    dlock_permit_id t;
    ASSERT_RC(dlock_permits_acquire(tagged, 0, -1, &t), DLOCK_OK);
    assert_int_equal(timeout_set(f, "perm{t}:timeout", z, 4), 1);
    assert_string_equal(z[0].hex, t.hex);
    assert_int_equal(redis_fixture_int(f, "GET perm{t}"), 0);
    ASSERT_RC(dlock_permits_release(tagged, &t), DLOCK_OK);
    dlock_permits_free(tagged);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_channel_redisson_sc_carries_the_new_count_of_set_release_and_expiry(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "perm-ch");
    const char *channel = "redisson_sc:{perm-ch}";
    redisContext *sub = subscribe_to(f, channel);
    dlock_permit_id short_lease, unleased;
    ASSERT_RC(dlock_permits_try_set_permits(p, 2, NULL), DLOCK_OK);       /* "2" */
    ASSERT_RC(dlock_permits_try_set_permits(p, 5, NULL), DLOCK_OK);       /* nothing */
    ASSERT_RC(dlock_permits_acquire(p, 0, 200, &short_lease), DLOCK_OK);  /* nothing */
    ASSERT_RC(dlock_permits_acquire(p, 0, -1, &unleased), DLOCK_OK);      /* nothing */
    ASSERT_RC(dlock_permits_update_lease(p, &unleased, 60000), DLOCK_OK); /* nothing */
    ASSERT_RC(dlock_permits_release(p, &unleased), DLOCK_OK);             /* "1" */
    zentry z[2];
    assert_int_equal(timeout_set(f, "{perm-ch}:timeout", z, 2), 1);
    wait_server_time_past(f, z[0].score);
    assert_int_equal(available_of(p), 2);                               /* expiry: "2" */
    ASSERT_RC(dlock_permits_release(p, &short_lease), DLOCK_ENOTOWNER); /* nothing */
    char got[128];
    messages_until_end(f, sub, channel, got, sizeof(got));
    assert_string_equal(got, "2,1,2,");
    redisFree(sub);

    sub = subscribe_to(f, "redisson_sc:perm{t}");
    dlock_permits *tagged = new_permits(c, "perm{t}");
    ASSERT_RC(dlock_permits_try_set_permits(tagged, 4, NULL), DLOCK_OK);
    messages_until_end(f, sub, "redisson_sc:perm{t}", got, sizeof(got));
    assert_string_equal(got, "4,");
    redisFree(sub);
    dlock_permits_free(tagged);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- bad input --------------------------------------------------------------------------- */

static void count_calls(dlock_permits *p, int status, const dlock_permit_id *id, void *arg) {
    (void)p;
    (void)status;
    (void)id;
    (*(int *)arg)++;
}

static void test_bad_arguments_and_malformed_ids_are_einval_without_any_io(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "valid");
    long long before = total_commands(f);

    dlock_permits *out = (dlock_permits *)&out; /* a sentinel: constructors leave it */
    dlock_permits *const sentinel = out;
    ASSERT_EINVAL(dlock_permits_new(NULL, "n", &out));
    ASSERT_EINVAL(dlock_permits_new(c, NULL, &out));
    ASSERT_EINVAL(dlock_permits_new(c, "", &out));
    ASSERT_EINVAL(dlock_permits_new(c, "n", NULL));
    assert_ptr_equal(out, sentinel);

    bool was_set = false;
    int64_t n = 0;
    dlock_permit_id id = {.hex = "0123456789abcdef0123456789abcdef"};
    dlock_permit_id untouched = id;
    ASSERT_EINVAL(dlock_permits_try_set_permits(NULL, 1, &was_set));
    ASSERT_EINVAL(dlock_permits_try_set_permits(p, -1, &was_set));
    ASSERT_EINVAL(dlock_permits_acquire(NULL, 0, -1, &id));
    ASSERT_EINVAL(dlock_permits_acquire(p, -2, -1, &id));
    ASSERT_EINVAL(dlock_permits_acquire(p, INT64_MIN, -1, &id));
    ASSERT_EINVAL(dlock_permits_acquire(p, 0, 0, &id));
    ASSERT_EINVAL(dlock_permits_acquire(p, 0, -2, &id));
    ASSERT_EINVAL(dlock_permits_acquire(p, 0, INT64_MIN, &id));
    ASSERT_EINVAL(dlock_permits_acquire(p, 0, -1, NULL));
    assert_memory_equal(&id, &untouched, sizeof(id));
    ASSERT_EINVAL(dlock_permits_available(NULL, &n));
    ASSERT_EINVAL(dlock_permits_available(p, NULL));

    /* ids: NULL, empty, short, a non-hex digit, too long (no NUL after 32 digits), a space */
    dlock_permit_id bad[6];
    memset(bad, 0, sizeof(bad));
    snprintf(bad[1].hex, sizeof(bad[1].hex), "0123456789abcdef");
    snprintf(bad[2].hex, sizeof(bad[2].hex), "0123456789abcdef0123456789abcdeg");
    memset(bad[3].hex, 'a', sizeof(bad[3].hex));
    snprintf(bad[4].hex, sizeof(bad[4].hex), "0123456789abcdef 123456789abcdef");
    snprintf(bad[5].hex, sizeof(bad[5].hex), "0x23456789abcdef0123456789abcdef");
    ASSERT_EINVAL(dlock_permits_release(p, NULL));
    ASSERT_EINVAL(dlock_permits_update_lease(p, NULL, 1000));
    for (int i = 0; i < 6; i++) {
        ASSERT_EINVAL(dlock_permits_release(p, &bad[i]));
        ASSERT_EINVAL(dlock_permits_update_lease(p, &bad[i], 1000));
    }
    ASSERT_EINVAL(dlock_permits_release(NULL, &id));
    ASSERT_EINVAL(dlock_permits_update_lease(NULL, &id, 1000));
    ASSERT_EINVAL(dlock_permits_update_lease(p, &id, 0));
    ASSERT_EINVAL(dlock_permits_update_lease(p, &id, -2));
    ASSERT_EINVAL(dlock_permits_update_lease(p, &id, INT64_MIN));

    int calls = 0;
    ASSERT_EINVAL(dlock_permits_acquire_async(NULL, 0, -1, count_calls, &calls));
    ASSERT_EINVAL(dlock_permits_acquire_async(p, 0, -1, NULL, &calls));
    ASSERT_EINVAL(dlock_permits_acquire_async(p, -2, -1, count_calls, &calls));
    ASSERT_EINVAL(dlock_permits_acquire_async(p, 0, 0, count_calls, &calls));
    ASSERT_EINVAL(dlock_permits_release_async(NULL, &id, count_calls, &calls));
    ASSERT_EINVAL(dlock_permits_release_async(p, &id, NULL, &calls));
    ASSERT_EINVAL(dlock_permits_release_async(p, NULL, count_calls, &calls));
    ASSERT_EINVAL(dlock_permits_release_async(p, &bad[2], count_calls, &calls));
    ASSERT_EINVAL(dlock_permits_release_async(p, &bad[3], count_calls, &calls));
    dlock_permits_free(NULL);

    test_sleep_ms(50);
    assert_int_equal(calls, 0);
    assert_int_equal(total_commands(f) - before, 1); /* only the first INFO */
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void expect_hash_unchanged(redis_fixture *f, const char *key) {
    char *type = redis_fixture_str(f, "TYPE %s", key);
    assert_string_equal(type, "hash");
    free(type);
    assert_int_equal(redis_fixture_int(f, "HLEN %s", key), 1);
    char *v = redis_fixture_str(f, "HGET %s f", key);
    assert_string_equal(v, "v");
    free(v);
}

static void
test_calls_reading_a_hash_count_key_are_eredis_wrongtype_and_the_key_is_unchanged(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "a-hash");
    freeReplyObject(redis_fixture_cmd(f, "HSET a-hash f v"));
    bool was_set = false;
    int64_t n = 0;
    dlock_permit_id id;
    ASSERT_WRONGTYPE(dlock_permits_try_set_permits(p, 3, &was_set));
    ASSERT_WRONGTYPE(dlock_permits_acquire(p, 0, -1, &id));
    ASSERT_WRONGTYPE(dlock_permits_acquire(p, 0, 1000, &id));
    ASSERT_WRONGTYPE(dlock_permits_acquire(p, DLOCK_FOREVER, -1, &id)); /* ends the wait */
    ASSERT_WRONGTYPE(dlock_permits_available(p, &n));
    expect_hash_unchanged(f, "a-hash");
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 1); /* no timeout set was made */
    assert_int_equal(numsub(f, "redisson_sc:{a-hash}"), 0);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* The count key turned into a hash while a permit is held: releasing or re-leasing by id
 * must fail with WRONGTYPE before it writes anything, not take the permit out of the
 * timeout set and then fail to give it back. */
static void
test_release_by_id_with_a_hash_count_key_is_eredis_wrongtype_and_the_permit_stays(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "turned");
    ASSERT_RC(dlock_permits_try_set_permits(p, 1, NULL), DLOCK_OK);
    dlock_permit_id held, made_up = {.hex = "0123456789abcdef0123456789abcdef"};
    ASSERT_RC(dlock_permits_acquire(p, 0, -1, &held), DLOCK_OK);
    freeReplyObject(redis_fixture_cmd(f, "DEL turned"));
    freeReplyObject(redis_fixture_cmd(f, "HSET turned f v"));
    int release_rc = dlock_permits_release(p, &held);
    long long held_left = redis_fixture_int(f, "ZCARD {turned}:timeout");
    int unknown_rc = dlock_permits_release(p, &made_up);
    int lease_rc = dlock_permits_update_lease(p, &made_up, 1000);
    expect_hash_unchanged(f, "turned");
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
    ASSERT_RC(release_rc, DLOCK_EREDIS);
    if (held_left != 1)
        fail_msg("the failed release took the permit out of the timeout set (ZCARD %lld): it "
                 "is neither held nor back in the pool",
                 held_left);
    ASSERT_RC(unknown_rc, DLOCK_EREDIS);
    ASSERT_RC(lease_rc, DLOCK_EREDIS);
}

static void
test_every_call_with_a_hash_timeout_key_is_eredis_wrongtype_and_it_is_unchanged(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_permits *p = new_permits(c, "t-hash");
    freeReplyObject(redis_fixture_cmd(f, "SET t-hash 2"));
    freeReplyObject(redis_fixture_cmd(f, "HSET {t-hash}:timeout f v"));
    bool was_set = false;
    int64_t n = 0;
    dlock_permit_id id = {.hex = "0123456789abcdef0123456789abcdef"};
    ASSERT_WRONGTYPE(dlock_permits_try_set_permits(p, 3, &was_set));
    ASSERT_WRONGTYPE(dlock_permits_acquire(p, 0, -1, &id));
    ASSERT_WRONGTYPE(dlock_permits_acquire(p, DLOCK_FOREVER, 1000, &id));
    ASSERT_WRONGTYPE(dlock_permits_release(p, &id));
    ASSERT_WRONGTYPE(dlock_permits_update_lease(p, &id, 1000));
    ASSERT_WRONGTYPE(dlock_permits_available(p, &n));
    expect_hash_unchanged(f, "{t-hash}:timeout");
    assert_int_equal(redis_fixture_int(f, "GET t-hash"), 2);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 2);
    dlock_permits_free(p);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- the async face ---------------------------------------------------------------------- */

typedef struct done {
    int calls;
    int status;
    int order;
    bool has_id;
    dlock_permit_id id;
    dlock_permits *p;
    int64_t at_ms;
} done;

static int callbacks_so_far;

static void record_done(dlock_permits *p, int status, const dlock_permit_id *id, void *arg) {
    done *d = arg;
    d->calls++;
    d->status = status;
    d->order = ++callbacks_so_far;
    d->has_id = id != NULL;
    if (id)
        d->id = *id;
    d->p = p;
    d->at_ms = test_now_ms();
}

static void
test_async_acquire_gives_the_id_to_its_callback_and_release_async_hands_it_on(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 1);
    ASSERT_RC(dlock_permits_new(a.c, "async-perm", &a.p), DLOCK_OK);
    callbacks_so_far = 0;
    done first = {0}, second = {0}, rel = {0}, again = {0}, busy = {0};
    bool ok = false;
    freeReplyObject(redis_fixture_cmd(a.f, "SET async-perm 1"));

    ASSERT_RC(dlock_permits_acquire_async(a.p, 0, -1, record_done, &first), DLOCK_OK);
    assert_int_equal(first.calls, 0); /* never inside the call */
    RUN_LOOP_UNTIL(a.loop, ok, first.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(first.status, DLOCK_OK);
    assert_ptr_equal(first.p, a.p);
    assert_true(first.has_id);
    assert_true(is_lower_hex_32(first.id.hex));
    zentry z[2];
    assert_int_equal(timeout_set(a.f, "{async-perm}:timeout", z, 2), 1);
    assert_string_equal(z[0].hex, first.id.hex);

    /* empty pool, wait 0: DLOCK_ETIMEDOUT and no id */
    ASSERT_RC(dlock_permits_acquire_async(a.p, 0, 5000, record_done, &busy), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, busy.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(busy.status, DLOCK_ETIMEDOUT);
    assert_false(busy.has_id);

    long long scripts_before = script_calls(a.f);
    ASSERT_RC(dlock_permits_acquire_async(a.p, DLOCK_FOREVER, 10000, record_done, &second),
              DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok,
                   numsub(a.f, "redisson_sc:{async-perm}") == 1 &&
                       script_calls(a.f) >= scripts_before + 2,
                   test_slack_ms(5000));
    assert_true(ok);
    run_loop_for(a.loop, 50);
    assert_int_equal(second.calls, 0);

    ASSERT_RC(dlock_permits_release_async(a.p, &first.id, record_done, &rel), DLOCK_OK);
    assert_int_equal(rel.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, second.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    assert_int_equal(rel.calls, 1);
    ASSERT_RC(rel.status, DLOCK_OK);
    ASSERT_RC(second.status, DLOCK_OK);
    assert_true(rel.order < second.order);
    ASSERT_BETWEEN(second.at_ms - rel.at_ms, 0, test_slack_ms(100));
    assert_true(second.has_id);
    assert_string_not_equal(second.id.hex, first.id.hex);
    assert_int_equal(timeout_set(a.f, "{async-perm}:timeout", z, 2), 1);
    assert_string_equal(z[0].hex, second.id.hex);

    /* the first id is gone now: DLOCK_ENOTOWNER through the callback, no id */
    ASSERT_RC(dlock_permits_release_async(a.p, &first.id, record_done, &again), DLOCK_OK);
    assert_int_equal(again.calls, 0);
    RUN_LOOP_UNTIL(a.loop, ok, again.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(again.status, DLOCK_ENOTOWNER);
    assert_false(again.has_id);

    run_loop_for(a.loop, 100); /* nothing is called twice */
    assert_int_equal(first.calls, 1);
    assert_int_equal(busy.calls, 1);
    assert_int_equal(second.calls, 1);
    assert_int_equal(rel.calls, 1);
    assert_int_equal(again.calls, 1);
    assert_int_equal(callbacks_so_far, 5);
    printf("# async release by id -> waiting async acquire: %lld ms\n",
           (long long)(second.at_ms - rel.at_ms));
    app_close(&a);
}

static void
test_permits_free_with_a_waiting_async_acquire_calls_it_back_canceled_once(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    loop_app a;
    app_open(&a, NULL, 1);
    ASSERT_RC(dlock_permits_new(a.c, "async-canceled", &a.p), DLOCK_OK);
    done acq = {0};
    bool ok = false;
    ASSERT_RC(dlock_permits_acquire_async(a.p, DLOCK_FOREVER, -1, record_done, &acq), DLOCK_OK);
    RUN_LOOP_UNTIL(a.loop, ok, numsub(a.f, "redisson_sc:{async-canceled}") == 1,
                   test_slack_ms(5000));
    assert_true(ok);
    run_loop_for(a.loop, 20);
    assert_int_equal(acq.calls, 0);
    dlock_permits_free(a.p);
    a.p = NULL;
    assert_int_equal(acq.calls, 0); /* not inside the call */
    RUN_LOOP_UNTIL(a.loop, ok, acq.calls > 0, test_slack_ms(5000));
    assert_true(ok);
    ASSERT_RC(acq.status, DLOCK_ECANCELED);
    assert_false(acq.has_id);
    RUN_LOOP_UNTIL(a.loop, ok, numsub(a.f, "redisson_sc:{async-canceled}") == 0,
                   test_slack_ms(2000));
    assert_true(ok);
    run_loop_for(a.loop, 50);
    assert_int_equal(acq.calls, 1);
    assert_int_equal(redis_fixture_int(a.f, "DBSIZE"), 0); /* it took nothing */
    app_close(&a);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN); /* the adapter's rule for the application's loop thread */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_permit_with_a_300_ms_lease_is_back_in_the_pool_after_300_ms_unreleased),
        cmocka_unit_test(test_waiter_on_an_empty_pool_gets_a_permit_when_the_earliest_lease_ends),
        cmocka_unit_test(test_waiter_on_an_empty_pool_is_woken_within_100_ms_of_a_release_by_id),
        cmocka_unit_test_teardown(
            test_holder_process_killed_with_sigkill_gives_its_permit_back_within_its_lease,
            kill_holder_child),
        cmocka_unit_test(
            test_release_of_an_expired_permit_is_enotowner_and_gives_nothing_back_twice),
        cmocka_unit_test(test_release_of_an_unknown_id_is_enotowner_and_changes_nothing),
        cmocka_unit_test(test_release_of_an_already_released_permit_is_enotowner_the_second_time),
        cmocka_unit_test(test_update_lease_extends_a_300_ms_lease_to_5000_and_it_outlives_300_ms),
        cmocka_unit_test(test_update_lease_shortens_a_lease_and_the_permit_expires_then),
        cmocka_unit_test(test_update_lease_of_an_unknown_id_is_enotowner_and_adds_nothing),
        cmocka_unit_test(
            test_layout_is_a_count_and_a_timeout_zset_of_raw_ids_scored_by_server_time),
        cmocka_unit_test(test_channel_redisson_sc_carries_the_new_count_of_set_release_and_expiry),
        cmocka_unit_test(test_bad_arguments_and_malformed_ids_are_einval_without_any_io),
        cmocka_unit_test(
            test_calls_reading_a_hash_count_key_are_eredis_wrongtype_and_the_key_is_unchanged),
        cmocka_unit_test(
            test_release_by_id_with_a_hash_count_key_is_eredis_wrongtype_and_the_permit_stays),
        cmocka_unit_test(
            test_every_call_with_a_hash_timeout_key_is_eredis_wrongtype_and_it_is_unchanged),
        cmocka_unit_test(
            test_async_acquire_gives_the_id_to_its_callback_and_release_async_hands_it_on),
        cmocka_unit_test(
            test_permits_free_with_a_waiting_async_acquire_calls_it_back_canceled_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
