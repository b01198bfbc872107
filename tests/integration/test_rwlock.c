/* test_rwlock.c — the read-write lock (Redisson RReadWriteLock) of src/rwlock, blocking face
 * (and one async test), against a real redis-server.
 *
 * What is proven: readers share and a writer waits for the last of them; a writer excludes
 * readers and a write release lets every blocked reader in at once (wake all); downgrade
 * (the writer reads, then releases the write) and no upgrade (a reader's write attempt times
 * out); per-hold reader leases, Redisson's lease cases, a reader whose lease ran out not
 * counting while another renews; the layout of REDIS_LAYOUT.md read back (mode, reader and
 * writer fields, one timeout key per read hold, PTTLs, the channel and its "0" / "1"
 * messages, names with a '{'); dlock's writer priority ({N}:rwlock_writers, held-back
 * readers, a writer that gives up or dies); the watchdog keeping read holds of two clients;
 * a SIGKILLed reader process whose hold runs out by its lease while a live reader renews
 * its own (the zombie case Redisson has); hold counts, is_locked and force_release per
 * half, the lost signal, DLOCK_ENOTOWNER; bad input; the async face on a half; a waiting
 * writer canceled by dlock_rwlock_free leaving the line; and that rw.lua applies a resent
 * acquire or release once.
 *
 * Every test starts its own server. Records that a callback on the client's loop thread
 * writes live in static storage, so a failed assert leaves nothing dangling. */
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
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60

/* ---- helpers ----------------------------------------------------------------------------- */

static dlock_rwlock *new_rw(dlock_client *c, const char *name) {
    dlock_rwlock *rw = NULL;
    ASSERT_RC(dlock_rwlock_new(c, name, &rw), DLOCK_OK);
    assert_non_null(rw);
    return rw;
}

#define READ(rw) dlock_rwlock_read(rw)
#define WRITE(rw) dlock_rwlock_write(rw)

/* "<client-id>:<owner>", the reader field of REDIS_LAYOUT.md. */
static void reader_field(dlock_client *c, uint64_t owner, char *buf, size_t size) {
    snprintf(buf, size, "%s:%llu", dlock_client_id(c), (unsigned long long)owner);
}

/* "<client-id>:<owner>:write", the writer field. */
static void writer_field(dlock_client *c, uint64_t owner, char *buf, size_t size) {
    snprintf(buf, size, "%s:%llu:write", dlock_client_id(c), (unsigned long long)owner);
}

/* The timeout key of read hold k: "{N}:<field>:rwlock_timeout:<k>" (no added braces when N
 * has a '{'). */
static void timeout_key(const char *name, const char *field, int k, char *buf, size_t size) {
    if (strchr(name, '{'))
        snprintf(buf, size, "%s:%s:rwlock_timeout:%d", name, field, k);
    else
        snprintf(buf, size, "{%s}:%s:rwlock_timeout:%d", name, field, k);
}

/* The hash key as "field=value;..." sorted as strings (HGETALL through the fixture), or
 * "<none>": an owner's writer field sorts before its reader field, and "mode" comes last. */
static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void hash_dump(redis_fixture *f, const char *key, char *buf, size_t size) {
    const char *argv[] = {"HGETALL", key};
    size_t lens[] = {7, strlen(key)};
    redisReply *r = redis_fixture_cmd_argv(f, 2, argv, lens);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    buf[0] = '\0';
    if (r->elements == 0)
        snprintf(buf, size, "<none>");
    size_t n = r->elements / 2;
    char **pairs = calloc(n ? n : 1, sizeof(*pairs));
    assert_non_null(pairs);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(r->element[2 * i]->str) + strlen(r->element[2 * i + 1]->str) + 3;
        pairs[i] = malloc(len);
        assert_non_null(pairs[i]);
        snprintf(pairs[i], len, "%s=%s;", r->element[2 * i]->str, r->element[2 * i + 1]->str);
    }
    qsort(pairs, n, sizeof(*pairs), cmp_str);
    for (size_t i = 0; i < n; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, size - used, "%s", pairs[i]);
        free(pairs[i]);
    }
    free(pairs);
    freeReplyObject(r);
}

static long long exists(redis_fixture *f, const char *key) {
    return redis_fixture_int(f, "EXISTS %s", key);
}

static char *mode_of(redis_fixture *f, const char *name) {
    return redis_fixture_str(f, "HGET %s mode", name);
}

static void assert_mode(redis_fixture *f, const char *name, const char *want) {
    char *mode = mode_of(f, name);
    if (!want) {
        if (mode)
            fail_msg("mode of %s = %s, expected none", name, mode);
        return;
    }
    if (!mode)
        fail_msg("mode of %s: none, expected %s", name, want);
    if (strcmp(mode, want) != 0) {
        char copy[16];
        snprintf(copy, sizeof(copy), "%s", mode);
        free(mode);
        fail_msg("mode of %s = %s, expected %s", name, copy, want);
    }
    free(mode);
}

/* Keys that exist now (KEYS *: DBSIZE also counts keys that expired but were not yet
 * reclaimed). */
static long long live_keys(redis_fixture *f) {
    redisReply *r = redis_fixture_cmd(f, "KEYS *");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    long long n = (long long)r->elements;
    freeReplyObject(r);
    return n;
}

/* The server's clock in ms (TIME), which rw.lua's writer deadlines use. */
static long long server_now_ms(redis_fixture *f) {
    redisReply *r = redis_fixture_cmd(f, "TIME");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    long long ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    freeReplyObject(r);
    return ms;
}

/* ---- another thread (another owner) tries a half ----------------------------------------- */

typedef struct attempt {
    dlock_lock *l;
    int64_t wait_ms;
    int64_t lease_ms;
    int64_t hold_ms; /* hold this long before releasing (with release) */
    bool release;    /* release after acquiring */
    atomic_int done; /* set last */
    int rc;
    int release_rc;
    int64_t started_us, acquired_us, finished_us;
} attempt;

static void *attempt_main(void *arg) {
    attempt *a = arg;
    a->started_us = test_now_us();
    a->rc = dlock_lock_try_acquire(a->l, a->wait_ms, a->lease_ms);
    a->acquired_us = test_now_us();
    if (a->rc == DLOCK_OK && a->release) {
        test_sleep_ms(a->hold_ms);
        a->release_rc = dlock_lock_release(a->l);
    }
    a->finished_us = test_now_us();
    atomic_store(&a->done, 1);
    return NULL;
}

static pthread_t attempt_start(attempt *a) {
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, attempt_main, a), 0);
    return t;
}

/* Runs one attempt on a new thread and waits for it: the result as another owner sees it. */
static int try_from_other_thread(dlock_lock *l, int64_t wait_ms, bool release) {
    attempt a = {.l = l, .wait_ms = wait_ms, .lease_ms = 30000, .release = release};
    pthread_t t = attempt_start(&a);
    assert_int_equal(pthread_join(t, NULL), 0);
    if (a.rc == DLOCK_OK && release)
        ASSERT_RC(a.release_rc, DLOCK_OK);
    return a.rc;
}

/* Waits until the waiters started since scripts_before sleep: channel has subscribers
 * subscribers, at least min_calls attempts ran, and no attempt came for 100 ms. (A waiter
 * attempts once, or twice when its client was not yet subscribed.) */
static void wait_until_asleep(redis_fixture *f, const char *channel, long long subscribers,
                              long long scripts_before, long long min_calls) {
    int64_t until = test_now_ms() + slack_ms(5000);
    long long seen = -1;
    int64_t seen_at = 0;
    for (;;) {
        long long calls = script_calls(f);
        if (calls != seen) {
            seen = calls;
            seen_at = test_now_ms();
        }
        if (numsub(f, channel) == subscribers && calls >= scripts_before + min_calls &&
            test_now_ms() - seen_at >= 100)
            return;
        if (test_now_ms() >= until)
            fail_msg("waiters not asleep: %lld subscribers (expected %lld), %lld attempts "
                     "(expected %lld or more)",
                     numsub(f, channel), subscribers, calls - scripts_before, min_calls);
        test_sleep_ms(5);
    }
}

/* Starts a on a new thread and returns once it sleeps as a waiter, subscribed on the lock's
 * channel (its client's subscription makes subscribers in all). */
static pthread_t start_and_let_it_sleep(redis_fixture *f, const char *channel,
                                        long long subscribers, attempt *a) {
    long long scripts_before = script_calls(f);
    pthread_t t = attempt_start(a);
    wait_until_asleep(f, channel, subscribers, scripts_before, 1);
    assert_int_equal(atomic_load(&a->done), 0);
    return t;
}

/* ---- the lost callback's record (static: the loop thread writes it) ---------------------- */

/* ---- readers share, a writer waits -------------------------------------------------------- */

static void
test_readers_of_two_clients_share_and_a_writer_waits_for_the_last_of_them(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f), *w = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "shared"), *rb = new_rw(b, "shared"), *rw = new_rw(w, "shared");
    ASSERT_RC(dlock_lock_try_acquire(READ(ra), 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(READ(rb), 0, 30000), DLOCK_OK);
    /* a third reader: another thread of a's client */
    ASSERT_RC(try_from_other_thread(READ(ra), 0, true), DLOCK_OK);
    assert_mode(f, "shared", "read");
    assert_int_equal(redis_fixture_int(f, "HLEN shared"), 3); /* mode and two readers */
    ASSERT_RC(dlock_lock_try_acquire(WRITE(rw), 0, 30000), DLOCK_ETIMEDOUT);

    attempt wr = {.l = WRITE(rw), .wait_ms = slack_ms(10000), .lease_ms = 30000, .release = true};
    pthread_t t = start_and_let_it_sleep(f, "redisson_rwlock:{shared}", 1, &wr);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    test_sleep_ms(300); /* one reader left: the writer keeps waiting */
    assert_int_equal(atomic_load(&wr.done), 0);
    ASSERT_RC(dlock_lock_release(READ(rb)), DLOCK_OK);
    int64_t released_us = test_now_us();
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(wr.rc, DLOCK_OK);
    ASSERT_RC(wr.release_rc, DLOCK_OK);
    int64_t latency_ms = (wr.acquired_us - released_us) / 1000;
    ASSERT_BETWEEN(latency_ms, -slack_ms(100), slack_ms(100));
    printf("# the writer got in %.2f ms after the last reader released\n",
           (double)(wr.acquired_us - released_us) / 1000.0);
    assert_int_equal(exists(f, "shared"), 0);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rb);
    dlock_rwlock_free(rw);
    dlock_client_free(a);
    dlock_client_free(b);
    dlock_client_free(w);
    redis_fixture_stop(f);
}

/* ---- a write release wakes every reader --------------------------------------------------- */

#define WAKE_READERS 10

typedef struct woken_reader {
    dlock_lock *l;
    atomic_int *inside;
    atomic_int *most_inside;
    int rc, release_rc;
    int64_t acquired_us;
} woken_reader;

/* Acquires, then stays inside until every reader is inside (or 5 s passed): proves the
 * readers hold the lock together, not one after another. */
static void *woken_reader_main(void *arg) {
    woken_reader *r = arg;
    r->rc = dlock_lock_try_acquire(r->l, slack_ms(15000), 30000);
    r->acquired_us = test_now_us();
    if (r->rc != DLOCK_OK)
        return NULL;
    int now = atomic_fetch_add(r->inside, 1) + 1;
    int most = atomic_load(r->most_inside);
    while (now > most && !atomic_compare_exchange_weak(r->most_inside, &most, now)) {
    }
    for (int64_t until = test_now_ms() + slack_ms(5000);
         atomic_load(r->most_inside) < WAKE_READERS && test_now_ms() < until;)
        test_sleep_ms(1);
    atomic_fetch_sub(r->inside, 1);
    r->release_rc = dlock_lock_release(r->l);
    return NULL;
}

static void
test_writer_excludes_readers_and_10_blocked_readers_all_enter_within_300_ms_of_the_write_release(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *w = connect_client(f), *b = connect_client(f), *c = connect_client(f);
    dlock_rwlock *rww = new_rw(w, "wake-all"), *rwb = new_rw(b, "wake-all"),
                 *rwc = new_rw(c, "wake-all");
    const int rounds = 3;
    int64_t worst_us = 0, total_us = 0;
    for (int round = 0; round < rounds; round++) {
        ASSERT_RC(dlock_lock_acquire(WRITE(rww), 30000), DLOCK_OK); /* no renewals in the way */
        ASSERT_RC(dlock_lock_try_acquire(READ(rwb), 0, 30000), DLOCK_ETIMEDOUT);
        atomic_int inside = 0, most_inside = 0;
        woken_reader readers[WAKE_READERS];
        pthread_t t[WAKE_READERS];
        long long scripts_before = script_calls(f);
        for (int i = 0; i < WAKE_READERS; i++) {
            /* half on each of two clients: every client's waiters are woken */
            readers[i] = (woken_reader){
                .l = READ(i % 2 ? rwb : rwc), .inside = &inside, .most_inside = &most_inside};
            assert_int_equal(pthread_create(&t[i], NULL, woken_reader_main, &readers[i]), 0);
        }
        wait_until_asleep(f, "redisson_rwlock:{wake-all}", 2, scripts_before, WAKE_READERS);
        assert_int_equal(atomic_load(&inside), 0); /* the writer excludes them */
        ASSERT_RC(dlock_lock_release(WRITE(rww)), DLOCK_OK);
        int64_t released_us = test_now_us();
        int64_t last_us = released_us;
        for (int i = 0; i < WAKE_READERS; i++) {
            assert_int_equal(pthread_join(t[i], NULL), 0);
            ASSERT_RC(readers[i].rc, DLOCK_OK);
            ASSERT_RC(readers[i].release_rc, DLOCK_OK);
            if (readers[i].acquired_us > last_us)
                last_us = readers[i].acquired_us;
        }
        assert_int_equal(atomic_load(&most_inside), WAKE_READERS); /* all inside at once */
        int64_t all_in_us = last_us - released_us;
        ASSERT_BETWEEN(all_in_us / 1000, 0, slack_ms(300));
        if (all_in_us > worst_us)
            worst_us = all_in_us;
        total_us += all_in_us;
        assert_int_equal(exists(f, "wake-all"), 0);
    }
    printf("# write release -> all %d blocked readers (2 clients) inside: mean %.2f ms, worst "
           "%.2f ms (%d rounds)\n",
           WAKE_READERS, (double)total_us / rounds / 1000.0, (double)worst_us / 1000.0, rounds);
    dlock_rwlock_free(rww);
    dlock_rwlock_free(rwb);
    dlock_rwlock_free(rwc);
    dlock_client_free(w);
    dlock_client_free(b);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- downgrade, no upgrade ---------------------------------------------------------------- */

static void test_writer_that_reads_then_releases_the_write_hold_leaves_mode_read(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "downgrade"), *rb = new_rw(b, "downgrade");
    ASSERT_RC(dlock_lock_acquire(WRITE(ra), 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(READ(ra), 0, 30000), DLOCK_OK); /* the writer may read */
    assert_mode(f, "downgrade", "write");
    ASSERT_RC(dlock_lock_try_acquire(READ(rb), 0, 30000), DLOCK_ETIMEDOUT);
    ASSERT_RC(try_from_other_thread(READ(ra), 0, true), DLOCK_ETIMEDOUT); /* only the writer */
    bool locked = false;
    ASSERT_RC(dlock_lock_is_locked(WRITE(rb), &locked), DLOCK_OK);
    assert_true(locked);
    ASSERT_RC(dlock_lock_is_locked(READ(rb), &locked), DLOCK_OK);
    assert_false(locked); /* as Redisson: the mode says write */

    ASSERT_RC(dlock_lock_release(WRITE(ra)), DLOCK_OK);
    assert_mode(f, "downgrade", "read");
    char field[128];
    writer_field(a, dlock_thread_owner(), field, sizeof(field));
    assert_int_equal(redis_fixture_int(f, "HEXISTS downgrade %s", field), 0);
    int64_t holds = -1;
    ASSERT_RC(dlock_lock_hold_count(READ(ra), &holds), DLOCK_OK);
    assert_int_equal(holds, 1);
    ASSERT_RC(dlock_lock_is_locked(READ(rb), &locked), DLOCK_OK);
    assert_true(locked);
    ASSERT_RC(dlock_lock_is_locked(WRITE(rb), &locked), DLOCK_OK);
    assert_false(locked);
    /* readers share with the former writer; writers are kept out, the former one too */
    ASSERT_RC(dlock_lock_try_acquire(READ(rb), 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(WRITE(rb), 0, 30000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_try_acquire(WRITE(ra), 0, 30000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(rb)), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    /* and the lock is free for a writer again */
    ASSERT_RC(dlock_lock_try_acquire(WRITE(rb), 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(WRITE(rb)), DLOCK_OK);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void
test_reader_cannot_upgrade_its_write_attempt_times_out_and_it_still_reads(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "no-upgrade"), *rb = new_rw(b, "no-upgrade");
    ASSERT_RC(dlock_lock_acquire(READ(ra), 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(WRITE(ra), 0, 30000), DLOCK_ETIMEDOUT);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(WRITE(ra), 500, 30000), DLOCK_ETIMEDOUT);
    int64_t took = test_now_ms() - start;
    ASSERT_BETWEEN(took, 450, slack_ms(1200));
    int64_t holds = -1;
    ASSERT_RC(dlock_lock_hold_count(READ(ra), &holds), DLOCK_OK);
    assert_int_equal(holds, 1);
    ASSERT_RC(dlock_lock_hold_count(WRITE(ra), &holds), DLOCK_OK);
    assert_int_equal(holds, 0);
    assert_mode(f, "no-upgrade", "read");
    /* the attempt left the writers' line when it gave up: new readers are not held back */
    bool gone = false;
    POLL_UNTIL(gone, redis_fixture_int(f, "EXISTS {no-upgrade}:rwlock_writers") == 0,
               slack_ms(1000));
    assert_true(gone);
    ASSERT_RC(dlock_lock_try_acquire(READ(rb), 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(rb)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(WRITE(ra), 0, 30000), DLOCK_OK); /* now it may write */
    ASSERT_RC(dlock_lock_release(WRITE(ra)), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- reader leases ------------------------------------------------------------------------ */

/* Redisson's testReadLockLeaseTimeout: the second hold (3 s in) neither prolongs the first
 * nor outlives its own release. */
static void
test_read_hold_of_4_s_and_a_second_hold_at_3_s_released_let_a_writer_in_at_5_s(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "lease-4s"), *rb = new_rw(b, "lease-4s");
    char field[128], key1[256], key2[256];
    reader_field(a, dlock_thread_owner(), field, sizeof(field));
    timeout_key("lease-4s", field, 1, key1, sizeof(key1));
    timeout_key("lease-4s", field, 2, key2, sizeof(key2));
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(READ(ra), 1000, 4000), DLOCK_OK);
    test_sleep_ms(3000 - (test_now_ms() - start));
    ASSERT_RC(dlock_lock_try_acquire(READ(ra), 1000, 4000), DLOCK_OK);
    ASSERT_BETWEEN(pttl_of(f, key2), 3500, 4000);
    ASSERT_BETWEEN(pttl_of(f, "lease-4s"), 3500, 4000);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    assert_int_equal(exists(f, key2), 0);
    /* the hash lives as long as the longest live hold: the first, about 1 s more */
    ASSERT_BETWEEN(pttl_of(f, "lease-4s"), 1, 1200);
    ASSERT_BETWEEN(pttl_of(f, key1), 1, 1200);
    if (test_now_ms() - start < 3700)
        ASSERT_RC(dlock_lock_try_acquire(WRITE(rb), 0, 4000), DLOCK_ETIMEDOUT);
    test_sleep_ms(5000 - (test_now_ms() - start));
    ASSERT_RC(dlock_lock_try_acquire(WRITE(rb), 0, 4000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(WRITE(rb)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_ELOST); /* its first hold ran out */
    assert_int_equal(live_keys(f), 0);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void
test_reader_whose_lease_ran_out_stops_counting_while_another_reader_renews(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f),
                 *b = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = 1500}),
                 *w = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "one-expires"), *rb = new_rw(b, "one-expires"),
                 *rw = new_rw(w, "one-expires");
    char field_a[128], key_a[256];
    reader_field(a, dlock_thread_owner(), field_a, sizeof(field_a));
    timeout_key("one-expires", field_a, 1, key_a, sizeof(key_a));
    ASSERT_RC(dlock_lock_acquire(READ(ra), 1000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(READ(rb), DLOCK_WATCHDOG), DLOCK_OK);
    bool expired = false;
    POLL_UNTIL(expired, exists(f, key_a) == 0, slack_ms(3000));
    assert_true(expired);
    test_sleep_ms(1500); /* more than one renewal of b's hold since */
    assert_int_equal(exists(f, "one-expires"), 1);
    ASSERT_RC(dlock_lock_try_acquire(WRITE(rw), 0, 30000), DLOCK_ETIMEDOUT); /* b reads */
    /* a's field is gone or goes with the next change: it no longer keeps anyone out */
    ASSERT_RC(dlock_lock_release(READ(rb)), DLOCK_OK);
    assert_int_equal(exists(f, "one-expires"), 0);
    ASSERT_RC(dlock_lock_try_acquire(WRITE(rw), 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_ELOST);
    ASSERT_RC(dlock_lock_release(WRITE(rw)), DLOCK_OK);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rb);
    dlock_rwlock_free(rw);
    dlock_client_free(a);
    dlock_client_free(b);
    dlock_client_free(w);
    redis_fixture_stop(f);
}

/* Redisson's testReadLockLeaseTimeoutDiffThreadsWRR, shortened: a write hold with a lease
 * that is never released keeps two readers out until it runs out, then both get in. */
static void test_write_lease_that_runs_out_lets_two_waiting_readers_in(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "write-lease"), *rb = new_rw(b, "write-lease");
    ASSERT_RC(dlock_lock_try_acquire(WRITE(ra), 1000, 1500), DLOCK_OK);
    int64_t start = test_now_us();
    attempt r1 = {.l = READ(rb),
                  .wait_ms = slack_ms(10000),
                  .lease_ms = 5000,
                  .release = true,
                  .hold_ms = 200};
    attempt r2 = r1;
    pthread_t t1 = attempt_start(&r1), t2 = attempt_start(&r2);
    assert_int_equal(pthread_join(t1, NULL), 0);
    assert_int_equal(pthread_join(t2, NULL), 0);
    ASSERT_RC(r1.rc, DLOCK_OK);
    ASSERT_RC(r2.rc, DLOCK_OK);
    ASSERT_RC(r1.release_rc, DLOCK_OK);
    ASSERT_RC(r2.release_rc, DLOCK_OK);
    ASSERT_BETWEEN((r1.acquired_us - start) / 1000, 1200, 1500 + slack_ms(500));
    ASSERT_BETWEEN((r2.acquired_us - start) / 1000, 1200, 1500 + slack_ms(500));
    /* together: each got in before the other released */
    assert_true(r1.acquired_us < r2.finished_us && r2.acquired_us < r1.finished_us);
    ASSERT_RC(dlock_lock_release(WRITE(ra)), DLOCK_ELOST);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- the layout --------------------------------------------------------------------------- */

static void
test_layout_is_mode_reader_and_writer_fields_and_a_timeout_key_per_read_hold(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_rwlock *rw = new_rw(c, "layout");
    char rfield[128], wfield[128], key1[256], key2[256], want[512], dump[1024];
    reader_field(c, dlock_thread_owner(), rfield, sizeof(rfield));
    writer_field(c, dlock_thread_owner(), wfield, sizeof(wfield));
    timeout_key("layout", rfield, 1, key1, sizeof(key1));
    timeout_key("layout", rfield, 2, key2, sizeof(key2));

    ASSERT_RC(dlock_lock_acquire(WRITE(rw), 20000), DLOCK_OK);
    snprintf(want, sizeof(want), "%s=1;mode=write;", wfield);
    hash_dump(f, "layout", dump, sizeof(dump));
    assert_string_equal(dump, want);
    char *type = redis_fixture_str(f, "TYPE layout");
    assert_string_equal(type, "hash");
    free(type);
    ASSERT_BETWEEN(pttl_of(f, "layout"), 19000, 20000);

    /* the writer reads: a reader field and the hold's own timeout key */
    ASSERT_RC(dlock_lock_acquire(READ(rw), 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(READ(rw), 30000), DLOCK_OK);
    snprintf(want, sizeof(want), "%s=1;%s=2;mode=write;", wfield, rfield);
    hash_dump(f, "layout", dump, sizeof(dump));
    assert_string_equal(dump, want);
    char *v = redis_fixture_str(f, "GET %s", key1);
    assert_string_equal(v, "1");
    free(v);
    type = redis_fixture_str(f, "TYPE %s", key2);
    assert_string_equal(type, "string");
    free(type);
    ASSERT_BETWEEN(pttl_of(f, key1), 9000, 10000);
    ASSERT_BETWEEN(pttl_of(f, key2), 29000, 30000);
    ASSERT_BETWEEN(pttl_of(f, "layout"), 29000, 30000); /* the longest hold */

    ASSERT_RC(dlock_lock_release(WRITE(rw)), DLOCK_OK);
    snprintf(want, sizeof(want), "%s=2;mode=read;", rfield);
    hash_dump(f, "layout", dump, sizeof(dump));
    assert_string_equal(dump, want);
    ASSERT_BETWEEN(pttl_of(f, "layout"), 28000, 30000);

    /* releases go last hold first: the 30 s hold goes, the hash keeps the 10 s one's TTL */
    ASSERT_RC(dlock_lock_release(READ(rw)), DLOCK_OK);
    assert_int_equal(exists(f, key2), 0);
    ASSERT_BETWEEN(pttl_of(f, key1), 8000, 10000);
    ASSERT_BETWEEN(pttl_of(f, "layout"), 8000, 10000);
    snprintf(want, sizeof(want), "%s=1;mode=read;", rfield);
    hash_dump(f, "layout", dump, sizeof(dump));
    assert_string_equal(dump, want);
    int64_t ttl = 0;
    ASSERT_RC(dlock_lock_ttl(READ(rw), &ttl), DLOCK_OK);
    ASSERT_BETWEEN(ttl, 8000, 10000);
    ASSERT_RC(dlock_lock_release(READ(rw)), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    ASSERT_RC(dlock_lock_ttl(WRITE(rw), &ttl), DLOCK_OK);
    assert_int_equal(ttl, -2);
    dlock_rwlock_free(rw);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* Subscribes a plain hiredis connection to channel and runs, on name: write + release
 * ("1"), read + release ("0"), two readers and one release (nothing), the other release
 * ("0"), write + read, release the write ("1": readers may enter), release the read ("0");
 * then publishes a marker itself. The subscriber must see exactly that. Also checks the
 * timeout key's name. */
static void check_channel_and_keys(const char *name, const char *channel, const char *not_key) {
    redis_fixture *f = start_server();
    redisContext *sub = redisConnectUnix(redis_fixture_socket(f));
    assert_non_null(sub);
    assert_int_equal(sub->err, 0);
    struct timeval tv = {.tv_sec = test_under_valgrind() ? 60 : 10};
    redisSetTimeout(sub, tv);
    redisReply *r = redisCommand(sub, "SUBSCRIBE %s", channel);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    freeReplyObject(r);

    dlock_client *c = connect_client(f), *d = connect_client(f);
    dlock_rwlock *rw = new_rw(c, name), *rd = new_rw(d, name);
    ASSERT_RC(dlock_lock_acquire(WRITE(rw), 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(WRITE(rw)), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(READ(rw), 20000), DLOCK_OK);
    char field[128], key[512];
    reader_field(c, dlock_thread_owner(), field, sizeof(field));
    timeout_key(name, field, 1, key, sizeof(key));
    ASSERT_BETWEEN(pttl_of(f, key), 19000, 20000);
    assert_int_equal(live_keys(f), 2); /* N and the one timeout key */
    assert_int_equal(exists(f, not_key), 0);
    ASSERT_RC(dlock_lock_release(READ(rw)), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(READ(rw), 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(READ(rd), 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(rw)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(rd)), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(WRITE(rw), 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(READ(rw), 20000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(WRITE(rw)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(rw)), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    assert_int_equal(redis_fixture_int(f, "PUBLISH %s marker", channel), 1);

    const char *want[] = {"1", "0", "0", "1", "0", "marker"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        void *m = NULL;
        assert_int_equal(redisGetReply(sub, &m), REDIS_OK);
        r = m;
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_int_equal(r->elements, 3);
        assert_string_equal(r->element[0]->str, "message");
        assert_string_equal(r->element[1]->str, channel);
        if (strcmp(r->element[2]->str, want[i]) != 0) {
            char got[32];
            snprintf(got, sizeof(got), "%s", r->element[2]->str);
            freeReplyObject(r);
            fail_msg("message %zu = \"%s\", expected \"%s\"", i, got, want[i]);
        }
        freeReplyObject(r);
    }
    redisFree(sub);
    dlock_rwlock_free(rw);
    dlock_rwlock_free(rd);
    dlock_client_free(c);
    dlock_client_free(d);
    redis_fixture_stop(f);
}

static void
test_write_release_publishes_1_and_a_read_release_that_frees_it_publishes_0(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    check_channel_and_keys("doc", "redisson_rwlock:{doc}", "doc:x");
}

static void
test_name_with_a_brace_uses_channel_and_timeout_keys_without_extra_braces(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    check_channel_and_keys("user:{7}:doc", "redisson_rwlock:user:{7}:doc", "{user:{7}:doc}:x");
}

/* ---- dlock's writer priority -------------------------------------------------------------- */

static void test_waiting_writer_holds_new_readers_back_and_is_listed_with_a_server_clock_deadline(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t fair_wait_ms = 3000;
    dlock_client *a = connect_client(f),
                 *w = connect_client_cfg(f, (test_client_cfg){.fair_wait_ms = fair_wait_ms}),
                 *n = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "priority"), *rw = new_rw(w, "priority"),
                 *rn = new_rw(n, "priority");
    ASSERT_RC(dlock_lock_acquire(READ(ra), 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(READ(rn), 0, 30000), DLOCK_OK); /* nobody waits yet */
    ASSERT_RC(dlock_lock_release(READ(rn)), DLOCK_OK);

    attempt wr = {.l = WRITE(rw), .wait_ms = 1500, .lease_ms = 30000, .release = true};
    pthread_t t = start_and_let_it_sleep(f, "redisson_rwlock:{priority}", 1, &wr);
    char wfield[128];
    /* the writer thread's owner id is not known here: read the one member */
    redisReply *r = redis_fixture_cmd(f, "ZRANGE {priority}:rwlock_writers 0 -1 WITHSCORES");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    snprintf(wfield, sizeof(wfield), "%s", r->element[0]->str);
    long long deadline = atoll(r->element[1]->str);
    freeReplyObject(r);
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "%s:", dlock_client_id(w));
    assert_memory_equal(wfield, prefix, strlen(prefix));
    assert_string_equal(wfield + strlen(wfield) - 6, ":write");
    long long now = server_now_ms(f);
    ASSERT_BETWEEN(deadline - now, fair_wait_ms - slack_ms(1000), fair_wait_ms);

    /* a new reader is held back; a reader already in may read more */
    ASSERT_RC(dlock_lock_try_acquire(READ(rn), 0, 30000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_try_acquire(READ(rn), 200, 30000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_try_acquire(READ(ra), 0, 30000), DLOCK_OK);
    int64_t holds = 0;
    ASSERT_RC(dlock_lock_hold_count(READ(ra), &holds), DLOCK_OK);
    assert_int_equal(holds, 2);

    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(wr.rc, DLOCK_ETIMEDOUT); /* a still reads */
    bool gone = false;
    POLL_UNTIL(gone, exists(f, "{priority}:rwlock_writers") == 0, slack_ms(1000));
    assert_true(gone);
    ASSERT_RC(dlock_lock_try_acquire(READ(rn), 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(rn)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rw);
    dlock_rwlock_free(rn);
    dlock_client_free(a);
    dlock_client_free(w);
    dlock_client_free(n);
    redis_fixture_stop(f);
}

static void test_writer_that_gives_up_lets_the_readers_it_held_back_in_at_once(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *w = connect_client(f), *n = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "gives-up"), *rw = new_rw(w, "gives-up"),
                 *rn = new_rw(n, "gives-up");
    ASSERT_RC(dlock_lock_acquire(READ(ra), 30000), DLOCK_OK);
    attempt wr = {.l = WRITE(rw), .wait_ms = 1000, .lease_ms = 30000};
    pthread_t tw = start_and_let_it_sleep(f, "redisson_rwlock:{gives-up}", 1, &wr);
    /* the held-back reader's hint is the writer's deadline (fair_wait_ms, 5 s): it must be
     * the writer's "leave" message that lets it in */
    attempt rd = {.l = READ(rn), .wait_ms = slack_ms(10000), .lease_ms = 30000, .release = true};
    pthread_t tr = start_and_let_it_sleep(f, "redisson_rwlock:{gives-up}", 2, &rd);
    assert_int_equal(pthread_join(tw, NULL), 0);
    ASSERT_RC(wr.rc, DLOCK_ETIMEDOUT);
    assert_int_equal(pthread_join(tr, NULL), 0);
    ASSERT_RC(rd.rc, DLOCK_OK);
    ASSERT_RC(rd.release_rc, DLOCK_OK);
    int64_t after_ms = (rd.acquired_us - wr.acquired_us) / 1000;
    ASSERT_BETWEEN(after_ms, -slack_ms(50), slack_ms(150));
    printf("# the writer gave up; the reader it held back got in %.2f ms later\n",
           (double)(rd.acquired_us - wr.acquired_us) / 1000.0);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rw);
    dlock_rwlock_free(rn);
    dlock_client_free(a);
    dlock_client_free(w);
    dlock_client_free(n);
    redis_fixture_stop(f);
}

static void test_dead_waiting_writer_holds_readers_back_no_longer_than_its_deadline(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_rwlock *rw = new_rw(c, "ghost");
    /* a writer that joined the line and died: its deadline 1 s from now, never refreshed */
    long long deadline = server_now_ms(f) + 1000;
    assert_int_equal(
        redis_fixture_int(f, "ZADD {ghost}:rwlock_writers %lld ghost-client:1:write", deadline), 1);
    int64_t start = test_now_ms();
    ASSERT_RC(dlock_lock_try_acquire(READ(rw), 0, 30000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_try_acquire(READ(rw), slack_ms(5000), 30000), DLOCK_OK);
    int64_t took = test_now_ms() - start;
    ASSERT_BETWEEN(took, 800, 1000 + slack_ms(300));
    assert_int_equal(redis_fixture_int(f, "ZCARD {ghost}:rwlock_writers"), 0); /* purged */
    ASSERT_RC(dlock_lock_release(READ(rw)), DLOCK_OK);
    printf("# a dead writer (deadline 1000 ms) held a reader back for %lld ms\n", (long long)took);
    dlock_rwlock_free(rw);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- the watchdog ------------------------------------------------------------------------- */

static void test_watchdog_keeps_read_holds_of_two_clients_for_four_periods(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t watchdog_ms = 1500;
    dlock_client *a = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = watchdog_ms}),
                 *b = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = watchdog_ms}),
                 *w = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "kept"), *rb = new_rw(b, "kept"), *rw = new_rw(w, "kept");
    ASSERT_RC(dlock_lock_acquire(READ(ra), DLOCK_WATCHDOG), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(READ(ra), DLOCK_WATCHDOG), DLOCK_OK); /* two holds, two keys */
    ASSERT_RC(dlock_lock_acquire(READ(rb), DLOCK_WATCHDOG), DLOCK_OK);
    char fa[128], fb[128], ka1[256], ka2[256], kb[256];
    reader_field(a, dlock_thread_owner(), fa, sizeof(fa));
    reader_field(b, dlock_thread_owner(), fb, sizeof(fb));
    timeout_key("kept", fa, 1, ka1, sizeof(ka1));
    timeout_key("kept", fa, 2, ka2, sizeof(ka2));
    timeout_key("kept", fb, 1, kb, sizeof(kb));
    int64_t start = test_now_ms();
    long long lowest = watchdog_ms;
    int checks = 0;
    while (test_now_ms() - start < 4 * watchdog_ms + 500) {
        const char *keys[] = {"kept", ka1, ka2, kb};
        for (int i = 0; i < 4; i++) {
            long long pttl = pttl_of(f, keys[i]);
            ASSERT_BETWEEN(pttl, 1, watchdog_ms);
            if (pttl < lowest)
                lowest = pttl;
        }
        ASSERT_RC(dlock_lock_try_acquire(WRITE(rw), 0, 1000), DLOCK_ETIMEDOUT);
        checks++;
        test_sleep_ms(200);
    }
    int64_t held_for = test_now_ms() - start;
    assert_true(held_for >= 4 * watchdog_ms);
    int64_t holds = 0;
    ASSERT_RC(dlock_lock_hold_count(READ(ra), &holds), DLOCK_OK);
    assert_int_equal(holds, 2);
    ASSERT_RC(dlock_lock_hold_count(READ(rb), &holds), DLOCK_OK);
    assert_int_equal(holds, 1);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(rb)), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    printf("# watchdog %lld ms: 3 read holds of 2 clients kept %lld ms, %d checks, lowest PTTL "
           "%lld ms\n",
           (long long)watchdog_ms, (long long)held_for, checks, lowest);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rb);
    dlock_rwlock_free(rw);
    dlock_client_free(a);
    dlock_client_free(b);
    dlock_client_free(w);
    redis_fixture_stop(f);
}

/* ---- a reader process killed with SIGKILL (the zombie case) ------------------------------- */

/* The child: its own client (made after the fork), a watchdog read hold, then its field on
 * the pipe and sleep until killed. Any failure writes "E" and exits. */
static _Noreturn void reader_child(const char *url, const char *name, int64_t watchdog_ms,
                                   int wfd) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.watchdog_ms = watchdog_ms;
    dlock_client *c = NULL;
    dlock_rwlock *rw = NULL;
    if (dlock_client_new(&o, &c) != DLOCK_OK || dlock_rwlock_new(c, name, &rw) != DLOCK_OK ||
        dlock_lock_acquire(dlock_rwlock_read(rw), DLOCK_WATCHDOG) != DLOCK_OK) {
        (void)!write(wfd, "E", 1);
        test_child_exit(1);
    }
    char field[128];
    int n = snprintf(field, sizeof(field), "%s:%llu", dlock_client_id(c),
                     (unsigned long long)dlock_thread_owner());
    (void)!write(wfd, field, (size_t)n);
    for (;;)
        pause();
}

static pid_t child_pid; /* the child while it runs, for the teardown */

static int kill_reader_child(void **state) {
    (void)state;
    if (child_pid > 0) {
        kill(child_pid, SIGKILL);
        waitpid(child_pid, NULL, 0);
        child_pid = 0;
    }
    return 0;
}

/* Forks the reader child on name and returns its reader field once it holds, after its
 * watchdog renewed its timeout key at least once. */
static void start_reader_child(redis_fixture *f, const char *name, int64_t watchdog_ms, char *field,
                               size_t size, char *key, size_t key_size) {
    int p[2];
    assert_int_equal(pipe(p), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        reader_child(redis_fixture_unix_url(f), name, watchdog_ms, p[1]);
    }
    child_pid = pid;
    close(p[1]);
    struct pollfd pfd = {.fd = p[0], .events = POLLIN};
    assert_int_equal(poll(&pfd, 1, (int)slack_ms(10000)), 1);
    ssize_t n = read(p[0], field, size - 1);
    close(p[0]);
    assert_true(n > 0);
    field[n] = '\0';
    if (strcmp(field, "E") == 0)
        fail_msg("the reader child could not take its read hold");
    timeout_key(name, field, 1, key, key_size);
    long long lowest = pttl_of(f, key);
    ASSERT_BETWEEN(lowest, 1, watchdog_ms);
    bool renewed = false;
    for (int64_t until = test_now_ms() + slack_ms(2 * watchdog_ms);
         !renewed && test_now_ms() < until; test_sleep_ms(5)) {
        long long pttl = pttl_of(f, key);
        ASSERT_BETWEEN(pttl, 1, watchdog_ms);
        renewed = pttl > lowest + 100;
        if (pttl < lowest)
            lowest = pttl;
    }
    assert_true(renewed);
}

static int64_t kill_child_now(void) {
    assert_int_equal(kill(child_pid, SIGKILL), 0);
    int64_t killed_at = test_now_ms();
    int status = 0;
    assert_int_equal(waitpid(child_pid, &status, 0), child_pid);
    child_pid = 0;
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    return killed_at;
}

static void
test_dead_clients_read_hold_runs_out_while_a_live_reader_renews_and_the_writer_gets_in_after_it(
    void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t watchdog_ms = 2000;
    char child_field[128], child_key[256];
    start_reader_child(f, "zombie", watchdog_ms, child_field, sizeof(child_field), child_key,
                       sizeof(child_key));
    dlock_client *live = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = 1500}),
                 *w = connect_client(f);
    dlock_rwlock *rl = new_rw(live, "zombie"), *rw = new_rw(w, "zombie");
    ASSERT_RC(dlock_lock_acquire(READ(rl), DLOCK_WATCHDOG), DLOCK_OK);
    int64_t killed_at = kill_child_now();
    attempt wr = {.l = WRITE(rw), .wait_ms = slack_ms(30000), .lease_ms = 30000, .release = true};
    pthread_t t = attempt_start(&wr);
    /* the dead reader's lease runs out: nobody renews its key, though the hash lives on */
    bool expired = false;
    POLL_UNTIL(expired, exists(f, child_key) == 0, watchdog_ms + slack_ms(1000));
    assert_true(expired);
    int64_t key_gone_ms = test_now_ms() - killed_at;
    ASSERT_BETWEEN(key_gone_ms, test_under_valgrind() ? 0 : watchdog_ms / 2,
                   watchdog_ms + slack_ms(1000));
    /* the live reader keeps renewing its own hold (two more periods): the writer waits */
    test_sleep_ms(3000);
    assert_int_equal(exists(f, "zombie"), 1);
    assert_int_equal(atomic_load(&wr.done), 0);
    ASSERT_RC(dlock_lock_release(READ(rl)), DLOCK_OK);
    int64_t released_us = test_now_us();
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(wr.rc, DLOCK_OK);
    ASSERT_RC(wr.release_rc, DLOCK_OK);
    int64_t latency_us = wr.acquired_us - released_us;
    ASSERT_BETWEEN(latency_us / 1000, -slack_ms(200), slack_ms(200));
    assert_int_equal(live_keys(f), 0);
    printf("# dead reader's key gone %lld ms after SIGKILL (watchdog_ms %lld); writer in %.2f ms "
           "after the live reader released\n",
           (long long)key_gone_ms, (long long)watchdog_ms, (double)latency_us / 1000.0);
    dlock_rwlock_free(rl);
    dlock_rwlock_free(rw);
    dlock_client_free(live);
    dlock_client_free(w);
    redis_fixture_stop(f);
}

static void test_dead_clients_read_hold_keeps_a_writer_out_no_longer_than_its_lease(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    const int64_t watchdog_ms = 2000;
    char child_field[128], child_key[256];
    start_reader_child(f, "zombie-alone", watchdog_ms, child_field, sizeof(child_field), child_key,
                       sizeof(child_key));
    dlock_client *live = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = 1500}),
                 *w = connect_client(f);
    dlock_rwlock *rl = new_rw(live, "zombie-alone"), *rw = new_rw(w, "zombie-alone");
    /* a live reader renews its own hold for a while, then releases right after the kill */
    ASSERT_RC(dlock_lock_acquire(READ(rl), DLOCK_WATCHDOG), DLOCK_OK);
    test_sleep_ms(600);
    int64_t killed_at = kill_child_now();
    ASSERT_RC(dlock_lock_release(READ(rl)), DLOCK_OK);
    assert_int_equal(exists(f, "zombie-alone"), 1); /* the dead reader's lease still runs */
    ASSERT_RC(dlock_lock_try_acquire(WRITE(rw), 0, 30000), DLOCK_ETIMEDOUT);
    ASSERT_RC(dlock_lock_try_acquire(WRITE(rw), slack_ms(10000), 30000), DLOCK_OK);
    int64_t took = test_now_ms() - killed_at;
    ASSERT_BETWEEN(took, test_under_valgrind() ? 1 : watchdog_ms / 2, watchdog_ms + slack_ms(500));
    char dump[512];
    hash_dump(f, "zombie-alone", dump, sizeof(dump));
    assert_null(strstr(dump, child_field)); /* the dead reader was purged */
    ASSERT_RC(dlock_lock_release(WRITE(rw)), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    printf("# reader killed, the writer got in %lld ms later (watchdog_ms %lld)\n", (long long)took,
           (long long)watchdog_ms);
    dlock_rwlock_free(rl);
    dlock_rwlock_free(rw);
    dlock_client_free(live);
    dlock_client_free(w);
    redis_fixture_stop(f);
}

/* ---- hold counts, ownership, is_locked ---------------------------------------------------- */

static void count_through(dlock_lock *l, int64_t seen[6]) {
    ASSERT_RC(dlock_lock_hold_count(l, &seen[0]), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(l, &seen[1]), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(l, &seen[2]), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(l, &seen[3]), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(l, &seen[4]), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(l, &seen[5]), DLOCK_OK);
}

static void test_hold_counts_of_each_half_go_0_1_0_2_1_0_and_count_apart(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_rwlock *rw = new_rw(c, "counted");
    const int64_t want[6] = {0, 1, 0, 2, 1, 0};
    dlock_lock *halves[2] = {READ(rw), WRITE(rw)};
    for (int h = 0; h < 2; h++) {
        int64_t seen[6];
        count_through(halves[h], seen);
        for (int i = 0; i < 6; i++)
            if (seen[i] != want[i])
                fail_msg("%s half: hold count #%d = %lld, expected %lld", h ? "write" : "read", i,
                         (long long)seen[i], (long long)want[i]);
        assert_int_equal(live_keys(f), 0);
    }
    /* a writer that also reads: each half counts its own holds */
    ASSERT_RC(dlock_lock_acquire(WRITE(rw), 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(READ(rw), 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(READ(rw), 10000), DLOCK_OK);
    int64_t r = 0, w = 0;
    bool held_r = false, held_w = false;
    ASSERT_RC(dlock_lock_hold_count(READ(rw), &r), DLOCK_OK);
    ASSERT_RC(dlock_lock_hold_count(WRITE(rw), &w), DLOCK_OK);
    ASSERT_RC(dlock_lock_is_held(READ(rw), &held_r), DLOCK_OK);
    ASSERT_RC(dlock_lock_is_held(WRITE(rw), &held_w), DLOCK_OK);
    assert_int_equal(r, 2);
    assert_int_equal(w, 1);
    assert_true(held_r && held_w);
    ASSERT_RC(dlock_lock_release(WRITE(rw)), DLOCK_OK);
    ASSERT_RC(dlock_lock_is_held(WRITE(rw), &held_w), DLOCK_OK);
    assert_false(held_w);
    ASSERT_RC(dlock_lock_release(READ(rw)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(rw)), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    dlock_rwlock_free(rw);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

typedef struct other_release {
    dlock_lock *l;
    int rc;
    bool held;
} other_release;

static void *release_from_other_thread(void *arg) {
    other_release *o = arg;
    int rc = dlock_lock_is_held(o->l, &o->held);
    o->rc = rc != DLOCK_OK ? rc : dlock_lock_release(o->l);
    return NULL;
}

static void
test_release_without_a_hold_is_enotowner_on_each_half_and_changes_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "owned"), *rb = new_rw(b, "owned");
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_ENOTOWNER); /* nobody holds anything */
    ASSERT_RC(dlock_lock_release(WRITE(ra)), DLOCK_ENOTOWNER);
    ASSERT_RC(dlock_lock_acquire(READ(ra), 30000), DLOCK_OK);
    char before[512], after[512];
    hash_dump(f, "owned", before, sizeof(before));
    other_release o = {.l = READ(ra)};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, release_from_other_thread, &o), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(o.rc, DLOCK_ENOTOWNER); /* another thread of the same client */
    assert_false(o.held);
    ASSERT_RC(dlock_lock_release(READ(rb)), DLOCK_ENOTOWNER);  /* another client */
    ASSERT_RC(dlock_lock_release(WRITE(ra)), DLOCK_ENOTOWNER); /* a reader is no writer */
    hash_dump(f, "owned", after, sizeof(after));
    assert_string_equal(before, after);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);

    ASSERT_RC(dlock_lock_acquire(WRITE(ra), 30000), DLOCK_OK);
    hash_dump(f, "owned", before, sizeof(before));
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_ENOTOWNER); /* a writer that never read */
    o = (other_release){.l = WRITE(ra)};
    assert_int_equal(pthread_create(&t, NULL, release_from_other_thread, &o), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(o.rc, DLOCK_ENOTOWNER);
    ASSERT_RC(dlock_lock_release(WRITE(rb)), DLOCK_ENOTOWNER);
    hash_dump(f, "owned", after, sizeof(after));
    assert_string_equal(before, after);
    ASSERT_RC(dlock_lock_release(WRITE(ra)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(WRITE(ra)), DLOCK_ENOTOWNER);
    assert_int_equal(live_keys(f), 0);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void expect_locked(dlock_rwlock *rw, bool read, bool write) {
    bool r = !read, w = !write;
    ASSERT_RC(dlock_lock_is_locked(READ(rw), &r), DLOCK_OK);
    ASSERT_RC(dlock_lock_is_locked(WRITE(rw), &w), DLOCK_OK);
    if (r != read || w != write)
        fail_msg("is_locked: read %d write %d, expected read %d write %d", r, w, read, write);
}

static void test_is_locked_of_each_half_follows_the_mode_as_in_redisson(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *b = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "which"), *rb = new_rw(b, "which");
    expect_locked(rb, false, false);
    ASSERT_RC(dlock_lock_acquire(READ(ra), 30000), DLOCK_OK);
    expect_locked(rb, true, false);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    expect_locked(rb, false, false);
    ASSERT_RC(dlock_lock_acquire(WRITE(ra), 30000), DLOCK_OK);
    expect_locked(rb, false, true);
    ASSERT_RC(dlock_lock_acquire(READ(ra), 30000), DLOCK_OK);
    expect_locked(rb, false, true); /* Redisson's testWR */
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    expect_locked(rb, false, true);
    ASSERT_RC(dlock_lock_release(WRITE(ra)), DLOCK_OK);
    expect_locked(rb, false, false);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

/* ---- force release and the lost signal ---------------------------------------------------- */

/* Redisson's testForceUnlock, and the holder is told: its watchdog finds its hold gone. */
static void
test_force_release_of_each_half_frees_only_its_mode_and_the_holder_is_told(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = 1500}),
                 *b = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "forced"), *rb = new_rw(b, "forced");
    ASSERT_RC(dlock_lock_on_lost(READ(ra), record_lost, NULL), DLOCK_OK);
    ASSERT_RC(dlock_lock_on_lost(WRITE(ra), record_lost, NULL), DLOCK_OK);
    dlock_lock *halves[2] = {READ(ra), WRITE(ra)};
    for (int h = 0; h < 2; h++) {
        lost_reset();
        ASSERT_RC(dlock_lock_acquire(halves[h], DLOCK_WATCHDOG), DLOCK_OK);
        bool was_locked = true;
        /* the other half's force release leaves it alone */
        ASSERT_RC(dlock_lock_force_release(h ? READ(rb) : WRITE(rb), &was_locked), DLOCK_OK);
        assert_false(was_locked);
        expect_locked(rb, h == 0, h == 1);
        ASSERT_RC(dlock_lock_force_release(h ? WRITE(rb) : READ(rb), &was_locked), DLOCK_OK);
        assert_true(was_locked);
        expect_locked(rb, false, false);
        assert_int_equal(exists(f, "forced"), 0);
        bool told = false;
        POLL_UNTIL(told, lost_calls() > 0, slack_ms(1500));
        assert_true(told);
        lost_record lost = lost_get();
        int reason = lost.reason;
        dlock_lock *which = lost.lock;
        ASSERT_RC(reason, DLOCK_ELOST);
        assert_ptr_equal(which, halves[h]);
        ASSERT_RC(dlock_lock_release(halves[h]), DLOCK_ELOST);
        ASSERT_RC(dlock_lock_release(halves[h]), DLOCK_ENOTOWNER);
        assert_int_equal(lost_calls(), 1);
        ASSERT_RC(dlock_lock_force_release(READ(rb), &was_locked), DLOCK_OK);
        assert_false(was_locked);
    }
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rb);
    dlock_client_free(a);
    dlock_client_free(b);
    redis_fixture_stop(f);
}

static void test_force_release_of_the_read_half_wakes_a_waiting_writer(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *w = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "forced-wake"), *rw = new_rw(w, "forced-wake");
    ASSERT_RC(dlock_lock_acquire(READ(ra), 30000), DLOCK_OK);
    attempt wr = {.l = WRITE(rw), .wait_ms = slack_ms(10000), .lease_ms = 30000, .release = true};
    pthread_t t = start_and_let_it_sleep(f, "redisson_rwlock:{forced-wake}", 1, &wr);
    bool was_locked = false;
    ASSERT_RC(dlock_lock_force_release(READ(ra), &was_locked), DLOCK_OK);
    int64_t forced_us = test_now_us();
    assert_true(was_locked);
    assert_int_equal(pthread_join(t, NULL), 0);
    ASSERT_RC(wr.rc, DLOCK_OK);
    ASSERT_RC(wr.release_rc, DLOCK_OK);
    ASSERT_BETWEEN((wr.acquired_us - forced_us) / 1000, -slack_ms(100), slack_ms(100));
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_ELOST);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rw);
    dlock_client_free(a);
    dlock_client_free(w);
    redis_fixture_stop(f);
}

static void test_read_hash_deleted_behind_the_readers_fires_each_lost_callback_once(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client_cfg(f, (test_client_cfg){.watchdog_ms = 1500});
    dlock_rwlock *ra = new_rw(a, "deleted");
    ASSERT_RC(dlock_lock_on_lost(READ(ra), record_lost, NULL), DLOCK_OK);
    lost_reset();
    ASSERT_RC(dlock_lock_acquire(READ(ra), DLOCK_WATCHDOG), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire(READ(ra), DLOCK_WATCHDOG), DLOCK_OK);
    assert_int_equal(redis_fixture_int(f, "DEL deleted"), 1);
    bool told = false;
    POLL_UNTIL(told, lost_calls() > 0, slack_ms(1500));
    assert_true(told);
    test_sleep_ms(600); /* more renewal ticks: still one call */
    assert_int_equal(lost_calls(), 1);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_ELOST);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_ELOST);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_ENOTOWNER);
    dlock_rwlock_free(ra);
    dlock_client_free(a);
    redis_fixture_stop(f);
}

/* ---- bad input ---------------------------------------------------------------------------- */

static void test_bad_arguments_are_einval_without_any_io(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_rwlock *rw = new_rw(c, "valid");
    long long before = redis_fixture_info_int(f, "stats", "total_commands_processed");

    dlock_rwlock *out = (dlock_rwlock *)&out; /* a sentinel: constructors leave it alone */
    dlock_rwlock *const sentinel = out;
    ASSERT_EINVAL(dlock_rwlock_new(NULL, "n", &out));
    ASSERT_EINVAL(dlock_rwlock_new(c, NULL, &out));
    ASSERT_EINVAL(dlock_rwlock_new(c, "", &out));
    ASSERT_EINVAL(dlock_rwlock_new(c, "n", NULL));
    size_t huge_len = 64 * 1024 + 1;
    char *huge = malloc(huge_len + 1);
    assert_non_null(huge);
    memset(huge, 'h', huge_len);
    huge[huge_len] = '\0';
    ASSERT_EINVAL(dlock_rwlock_new(c, huge, &out));
    free(huge);
    assert_ptr_equal(out, sentinel);
    assert_null(dlock_rwlock_read(NULL));
    assert_null(dlock_rwlock_write(NULL));
    dlock_rwlock_free(NULL);

    dlock_lock *halves[2] = {READ(rw), WRITE(rw)};
    for (int h = 0; h < 2; h++) {
        dlock_lock *l = halves[h];
        assert_non_null(l);
        assert_string_equal(dlock_lock_name(l), "valid");
        ASSERT_EINVAL(dlock_lock_acquire(l, 0));
        ASSERT_EINVAL(dlock_lock_acquire(l, -2));
        ASSERT_EINVAL(dlock_lock_try_acquire(l, -2, 1000));
        ASSERT_EINVAL(dlock_lock_try_acquire(l, 0, 0));
        ASSERT_EINVAL(dlock_lock_try_acquire(l, DLOCK_FOREVER, -100));
        bool b = false;
        int64_t n = 0;
        uint64_t token = 0;
        ASSERT_EINVAL(dlock_lock_is_locked(l, NULL));
        ASSERT_EINVAL(dlock_lock_is_held(l, NULL));
        ASSERT_EINVAL(dlock_lock_hold_count(l, NULL));
        ASSERT_EINVAL(dlock_lock_ttl(l, NULL));
        ASSERT_EINVAL(dlock_lock_token(l, &token)); /* not a fenced lock */
        ASSERT_EINVAL(dlock_lock_acquire_async(l, 0, 0, 1000, NULL, NULL));
        ASSERT_EINVAL(dlock_lock_release_async(l, 7, NULL, NULL));
        (void)b;
        (void)n;
    }
    long long after = redis_fixture_info_int(f, "stats", "total_commands_processed");
    assert_int_equal(after - before, 1); /* only the first INFO */
    assert_int_equal(live_keys(f), 0);
    dlock_rwlock_free(rw);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void
test_key_of_another_type_is_eredis_wrongtype_on_both_halves_and_unchanged(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_rwlock *rw = new_rw(c, "a-string");
    freeReplyObject(redis_fixture_cmd(f, "SET a-string x"));
    dlock_lock *halves[2] = {READ(rw), WRITE(rw)};
    for (int h = 0; h < 2; h++) {
        dlock_lock *l = halves[h];
        ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_EREDIS);
        assert_non_null(strstr(dlock_last_error(), "WRONGTYPE"));
        ASSERT_RC(dlock_lock_try_acquire(l, 0, DLOCK_WATCHDOG), DLOCK_EREDIS);
        ASSERT_RC(dlock_lock_try_acquire(l, 1000, 10000), DLOCK_EREDIS);
        ASSERT_RC(dlock_lock_release(l), DLOCK_EREDIS);
        bool b = false;
        ASSERT_RC(dlock_lock_is_locked(l, &b), DLOCK_EREDIS);
        ASSERT_RC(dlock_lock_is_held(l, &b), DLOCK_EREDIS);
        ASSERT_RC(dlock_lock_force_release(l, &b), DLOCK_EREDIS);
        assert_non_null(strstr(dlock_last_error(), "WRONGTYPE"));
    }
    char *v = redis_fixture_str(f, "GET a-string");
    assert_string_equal(v, "x");
    free(v);
    assert_int_equal(pttl_of(f, "a-string"), -1);
    assert_int_equal(live_keys(f), 1);
    dlock_rwlock_free(rw);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- the async face on a half ------------------------------------------------------------- */

static struct {
    atomic_int status[4]; /* 1 = not yet called */
    atomic_int calls[4];
} async_rec;

static void async_done(dlock_lock *l, int status, void *arg) {
    (void)l;
    int i = (int)(intptr_t)arg;
    atomic_store(&async_rec.status[i], status);
    atomic_fetch_add(&async_rec.calls[i], 1);
}

static int await_async(int i) {
    bool called = false;
    POLL_UNTIL(called, atomic_load(&async_rec.calls[i]) > 0, slack_ms(5000));
    assert_true(called);
    int status = atomic_load(&async_rec.status[i]);
    atomic_store(&async_rec.calls[i], 0);
    return status;
}

static void test_async_owners_share_the_read_half_and_an_async_writer_waits_for_both(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_rwlock *rw = new_rw(c, "async");
    for (int i = 0; i < 4; i++)
        atomic_store(&async_rec.calls[i], 0);
    ASSERT_RC(dlock_lock_acquire_async(READ(rw), 7, 0, 30000, async_done, (void *)0), DLOCK_OK);
    ASSERT_RC(await_async(0), DLOCK_OK);
    ASSERT_RC(dlock_lock_acquire_async(READ(rw), 8, 0, 30000, async_done, (void *)1), DLOCK_OK);
    ASSERT_RC(await_async(1), DLOCK_OK);
    char f7[128], f8[128], w9[128], want[512], dump[1024];
    reader_field(c, 7, f7, sizeof(f7));
    reader_field(c, 8, f8, sizeof(f8));
    writer_field(c, 9, w9, sizeof(w9));
    snprintf(want, sizeof(want), "%s=1;%s=1;mode=read;", f7, f8);
    hash_dump(f, "async", dump, sizeof(dump));
    assert_string_equal(dump, want);
    ASSERT_RC(dlock_lock_acquire_async(WRITE(rw), 9, slack_ms(10000), 30000, async_done, (void *)2),
              DLOCK_OK);
    test_sleep_ms(200);
    assert_int_equal(atomic_load(&async_rec.calls[2]), 0); /* two readers hold it */
    ASSERT_RC(dlock_lock_release_async(READ(rw), 7, async_done, (void *)0), DLOCK_OK);
    ASSERT_RC(await_async(0), DLOCK_OK);
    test_sleep_ms(100);
    assert_int_equal(atomic_load(&async_rec.calls[2]), 0);
    ASSERT_RC(dlock_lock_release_async(READ(rw), 8, async_done, (void *)1), DLOCK_OK);
    ASSERT_RC(await_async(1), DLOCK_OK);
    ASSERT_RC(await_async(2), DLOCK_OK);
    snprintf(want, sizeof(want), "%s=1;mode=write;", w9);
    hash_dump(f, "async", dump, sizeof(dump));
    assert_string_equal(dump, want);
    ASSERT_RC(dlock_lock_release_async(READ(rw), 9, async_done, (void *)3), DLOCK_OK);
    ASSERT_RC(await_async(3), DLOCK_ENOTOWNER); /* the writer holds no read */
    ASSERT_RC(dlock_lock_release_async(WRITE(rw), 9, async_done, (void *)3), DLOCK_OK);
    ASSERT_RC(await_async(3), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    dlock_rwlock_free(rw);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_waiting_writer_canceled_by_free_leaves_the_line_and_readers_enter(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *a = connect_client(f), *w = connect_client(f), *n = connect_client(f);
    dlock_rwlock *ra = new_rw(a, "canceled"), *rw = new_rw(w, "canceled"),
                 *rn = new_rw(n, "canceled");
    atomic_store(&async_rec.calls[0], 0);
    ASSERT_RC(dlock_lock_acquire(READ(ra), 30000), DLOCK_OK);
    long long scripts_before = script_calls(f);
    ASSERT_RC(dlock_lock_acquire_async(WRITE(rw), 9, DLOCK_FOREVER, 30000, async_done, (void *)0),
              DLOCK_OK);
    wait_until_asleep(f, "redisson_rwlock:{canceled}", 1, scripts_before, 1);
    assert_int_equal(redis_fixture_int(f, "ZCARD {canceled}:rwlock_writers"), 1);
    ASSERT_RC(dlock_lock_try_acquire(READ(rn), 0, 30000), DLOCK_ETIMEDOUT); /* held back */
    dlock_rwlock_free(rw); /* the waiting acquire ends with DLOCK_ECANCELED */
    ASSERT_RC(await_async(0), DLOCK_ECANCELED);
    bool gone = false;
    POLL_UNTIL(gone, exists(f, "{canceled}:rwlock_writers") == 0, slack_ms(1000));
    assert_true(gone);
    ASSERT_RC(dlock_lock_try_acquire(READ(rn), 0, 30000), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(rn)), DLOCK_OK);
    ASSERT_RC(dlock_lock_release(READ(ra)), DLOCK_OK);
    assert_int_equal(live_keys(f), 0);
    dlock_rwlock_free(ra);
    dlock_rwlock_free(rn);
    dlock_client_free(a);
    dlock_client_free(w);
    dlock_client_free(n);
    redis_fixture_stop(f);
}

/* ---- resends are applied once ------------------------------------------------------------- */

/* rw.lua on N = "resent": KEYS N, channel, writers, key base; ARGV op, lease, field,
 * believed holds, fair_wait. */
static core_reply *rw_script(dlock_client *c, const char *op, const char *field,
                             const char *believed) {
    const char *args[] = {"resent",
                          "redisson_rwlock:{resent}",
                          "{resent}:rwlock_writers",
                          "{resent}",
                          op,
                          "30000",
                          field,
                          believed,
                          "5000",
                          NULL};
    core_reply *r = core_script(c, DLOCK__SCRIPT_RWLOCK_RW, DLOCK__CMD_RETRY_SAFE, 4, args);
    if (r->status != DLOCK_OK)
        fail_msg("script: %s (%s)", dlock_err_name(r->status), r->str ? r->str : "");
    return r;
}

static void expect_acquired(core_reply *r, long long holds) {
    assert_int_equal(r->type, DLOCK__REPLY_ARRAY);
    assert_int_equal(r->count, 3);
    assert_int_equal(r->elems[0].integer, 1);
    assert_int_equal(r->elems[1].integer, holds);
    core_reply_free(r);
}

static long long release_reply(core_reply *r) {
    assert_int_equal(r->type, DLOCK__REPLY_INTEGER);
    long long v = r->integer;
    core_reply_free(r);
    return v;
}

static void test_read_and_write_scripts_sent_twice_with_the_same_belief_apply_once(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    const char *reader = "0b7b5a80-0000-4000-8000-000000000001:42";
    const char *writer = "0b7b5a80-0000-4000-8000-000000000001:43:write";
    const char *k1 = "{resent}:0b7b5a80-0000-4000-8000-000000000001:42:rwlock_timeout:1";
    const char *k2 = "{resent}:0b7b5a80-0000-4000-8000-000000000001:42:rwlock_timeout:2";
    expect_acquired(rw_script(c, "read", reader, "0"), 1);
    expect_acquired(rw_script(c, "read", reader, "0"), 1);
    assert_int_equal(redis_fixture_int(f, "HGET resent %s", reader), 1);
    expect_acquired(rw_script(c, "read", reader, "1"), 2);
    expect_acquired(rw_script(c, "read", reader, "1"), 2);
    assert_int_equal(redis_fixture_int(f, "HGET resent %s", reader), 2);
    assert_int_equal(exists(f, k2), 1);
    assert_int_equal(live_keys(f), 3);
    assert_int_equal(release_reply(rw_script(c, "unread", reader, "2")), 1);
    assert_int_equal(release_reply(rw_script(c, "unread", reader, "2")), 1);
    assert_int_equal(exists(f, k2), 0);
    assert_int_equal(exists(f, k1), 1);
    assert_int_equal(release_reply(rw_script(c, "unread", reader, "1")), 0);
    assert_int_equal(release_reply(rw_script(c, "unread", reader, "1")), -1);
    assert_int_equal(live_keys(f), 0);

    expect_acquired(rw_script(c, "write", writer, "0"), 1);
    expect_acquired(rw_script(c, "write", writer, "0"), 1);
    expect_acquired(rw_script(c, "write", writer, "1"), 2);
    expect_acquired(rw_script(c, "write", writer, "1"), 2);
    assert_int_equal(redis_fixture_int(f, "HGET resent %s", writer), 2);
    assert_int_equal(release_reply(rw_script(c, "unwrite", writer, "2")), 1);
    assert_int_equal(release_reply(rw_script(c, "unwrite", writer, "2")), 1);
    assert_int_equal(release_reply(rw_script(c, "unwrite", writer, "1")), 0);
    assert_int_equal(release_reply(rw_script(c, "unwrite", writer, "1")), -1);
    assert_int_equal(live_keys(f), 0);
    /* read holds the client never learned of go with the owner's last release */
    expect_acquired(rw_script(c, "read", reader, "0"), 1);
    expect_acquired(rw_script(c, "read", reader, "1"), 2);
    expect_acquired(rw_script(c, "read", reader, "2"), 3);
    assert_int_equal(release_reply(rw_script(c, "unread", reader, "1")), 0);
    assert_int_equal(live_keys(f), 0);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_readers_of_two_clients_share_and_a_writer_waits_for_the_last_of_them),
        cmocka_unit_test(
            test_writer_excludes_readers_and_10_blocked_readers_all_enter_within_300_ms_of_the_write_release),
        cmocka_unit_test(test_writer_that_reads_then_releases_the_write_hold_leaves_mode_read),
        cmocka_unit_test(test_reader_cannot_upgrade_its_write_attempt_times_out_and_it_still_reads),
        cmocka_unit_test(
            test_read_hold_of_4_s_and_a_second_hold_at_3_s_released_let_a_writer_in_at_5_s),
        cmocka_unit_test(
            test_reader_whose_lease_ran_out_stops_counting_while_another_reader_renews),
        cmocka_unit_test(test_write_lease_that_runs_out_lets_two_waiting_readers_in),
        cmocka_unit_test(
            test_layout_is_mode_reader_and_writer_fields_and_a_timeout_key_per_read_hold),
        cmocka_unit_test(
            test_write_release_publishes_1_and_a_read_release_that_frees_it_publishes_0),
        cmocka_unit_test(test_name_with_a_brace_uses_channel_and_timeout_keys_without_extra_braces),
        cmocka_unit_test(
            test_waiting_writer_holds_new_readers_back_and_is_listed_with_a_server_clock_deadline),
        cmocka_unit_test(test_writer_that_gives_up_lets_the_readers_it_held_back_in_at_once),
        cmocka_unit_test(test_dead_waiting_writer_holds_readers_back_no_longer_than_its_deadline),
        cmocka_unit_test(test_watchdog_keeps_read_holds_of_two_clients_for_four_periods),
        cmocka_unit_test_teardown(
            test_dead_clients_read_hold_runs_out_while_a_live_reader_renews_and_the_writer_gets_in_after_it,
            kill_reader_child),
        cmocka_unit_test_teardown(
            test_dead_clients_read_hold_keeps_a_writer_out_no_longer_than_its_lease,
            kill_reader_child),
        cmocka_unit_test(test_hold_counts_of_each_half_go_0_1_0_2_1_0_and_count_apart),
        cmocka_unit_test(test_release_without_a_hold_is_enotowner_on_each_half_and_changes_nothing),
        cmocka_unit_test(test_is_locked_of_each_half_follows_the_mode_as_in_redisson),
        cmocka_unit_test(
            test_force_release_of_each_half_frees_only_its_mode_and_the_holder_is_told),
        cmocka_unit_test(test_force_release_of_the_read_half_wakes_a_waiting_writer),
        cmocka_unit_test(test_read_hash_deleted_behind_the_readers_fires_each_lost_callback_once),
        cmocka_unit_test(test_bad_arguments_are_einval_without_any_io),
        cmocka_unit_test(test_key_of_another_type_is_eredis_wrongtype_on_both_halves_and_unchanged),
        cmocka_unit_test(test_async_owners_share_the_read_half_and_an_async_writer_waits_for_both),
        cmocka_unit_test(test_waiting_writer_canceled_by_free_leaves_the_line_and_readers_enter),
        cmocka_unit_test(test_read_and_write_scripts_sent_twice_with_the_same_belief_apply_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
