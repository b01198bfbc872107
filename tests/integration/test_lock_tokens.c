/* SPDX-License-Identifier: MIT */
/* test_lock_tokens.c — the lock tests of test_lock.c, split from it by concern: fencing tokens;
 * resends are applied once. Helpers: tests/support/lock_helpers.h. Every test starts its own
 * server. */
#include "lock_helpers.h"

/* ---- fencing tokens ---------------------------------------------------------------------- */

enum { FENCE_OWNERS = 4 };

static struct {
    pthread_mutex_t mu;
    uint64_t *tokens; /* in section order */
    size_t count, cap;
    int errors;
    char error[256];
} fence = {.mu = PTHREAD_MUTEX_INITIALIZER};

typedef struct fence_worker {
    dlock_lock *l; /* shared by the threads of one client */
    long rounds;
} fence_worker;

static void fence_error(const char *what, int rc) {
    pthread_mutex_lock(&fence.mu);
    if (fence.errors++ == 0)
        snprintf(fence.error, sizeof(fence.error), "%s: %s (%s)", what, dlock_err_name(rc),
                 dlock_last_error());
    pthread_mutex_unlock(&fence.mu);
}

static void *fence_loop(void *arg) {
    fence_worker *w = arg;
    for (long i = 0; i < w->rounds; i++) {
        uint64_t first = 0, second = 0;
        int rc = dlock_lock_acquire(w->l, 30000);
        if (rc != DLOCK_OK) {
            fence_error("acquire", rc);
            return NULL;
        }
        if ((rc = dlock_lock_token(w->l, &first)) != DLOCK_OK)
            fence_error("token", rc);
        bool reentrant = i % 2 == 0;
        if (reentrant) {
            if ((rc = dlock_lock_acquire(w->l, 30000)) != DLOCK_OK)
                fence_error("reentrant acquire", rc);
            if ((rc = dlock_lock_token(w->l, &second)) != DLOCK_OK)
                fence_error("token", rc);
        }
        pthread_mutex_lock(&fence.mu); /* inside the section: log order = section order */
        fence.tokens[fence.count++] = first;
        if (reentrant)
            fence.tokens[fence.count++] = second;
        pthread_mutex_unlock(&fence.mu);
        if (reentrant && (rc = dlock_lock_release(w->l)) != DLOCK_OK)
            fence_error("release", rc);
        if ((rc = dlock_lock_release(w->l)) != DLOCK_OK)
            fence_error("release", rc);
    }
    return NULL;
}

static void
test_fenced_tokens_strictly_increase_across_clients_owners_and_reentrant_acquires(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c[2] = {connect_client(f), connect_client(f)};
    dlock_lock *l[2] = {new_fenced(c[0], "fence"), new_fenced(c[1], "fence")};
    long rounds = test_scaled(60);
    pthread_mutex_lock(&fence.mu);
    fence.cap = (size_t)(FENCE_OWNERS * rounds * 2);
    fence.tokens = calloc(fence.cap, sizeof(uint64_t));
    fence.count = 0;
    fence.errors = 0;
    pthread_mutex_unlock(&fence.mu);
    fence_worker w[FENCE_OWNERS];
    pthread_t t[FENCE_OWNERS];
    for (int i = 0; i < FENCE_OWNERS; i++) {
        w[i] = (fence_worker){.l = l[i % 2], .rounds = rounds};
        assert_int_equal(pthread_create(&t[i], NULL, fence_loop, &w[i]), 0);
    }
    for (int i = 0; i < FENCE_OWNERS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    if (fence.errors)
        fail_msg("%d errors, first: %s", fence.errors, fence.error);
    /* every owner took (rounds + rounds/2 rounded up) tokens */
    size_t want = (size_t)(FENCE_OWNERS * (rounds + (rounds + 1) / 2));
    assert_int_equal(fence.count, want);
    for (size_t i = 1; i < fence.count; i++)
        if (fence.tokens[i] <= fence.tokens[i - 1])
            fail_msg("token #%zu = %llu after %llu", i, (unsigned long long)fence.tokens[i],
                     (unsigned long long)fence.tokens[i - 1]);
    assert_int_equal(fence.tokens[0], 1);
    assert_int_equal(fence.tokens[fence.count - 1], fence.count); /* no token skipped */
    assert_int_equal(redis_fixture_int(f, "GET redisson_lock_token:{fence}"), fence.count);
    assert_int_equal(redis_fixture_int(f, "EXISTS fence"), 0);
    printf("# %zu tokens from %d owners on 2 clients, strictly increasing\n", fence.count,
           FENCE_OWNERS);
    free(fence.tokens);
    fence.tokens = NULL;
    dlock_lock_free(l[0]);
    dlock_lock_free(l[1]);
    dlock_client_free(c[0]);
    dlock_client_free(c[1]);
    redis_fixture_stop(f);
}

static void test_token_of_a_plain_lock_is_einval(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_lock(c, "plain");
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    uint64_t token = 12345;
    ASSERT_RC(dlock_lock_token(l, &token), DLOCK_EINVAL);
    ASSERT_RC(dlock_lock_token_of(l, dlock_thread_owner(), &token), DLOCK_EINVAL);
    assert_int_equal(token, 12345);
    assert_int_equal(redis_fixture_int(f, "EXISTS redisson_lock_token:{plain}"), 0);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

typedef struct token_probe {
    dlock_lock *l;
    int rc;
    uint64_t token;
} token_probe;

static void *token_from_other_thread(void *arg) {
    token_probe *p = arg;
    p->rc = dlock_lock_token(p->l, &p->token);
    return NULL;
}

static void test_token_before_any_acquire_is_enotowner(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = new_fenced(c, "fenced-fresh");
    uint64_t token = 777;
    ASSERT_RC(dlock_lock_token(l, &token), DLOCK_ENOTOWNER);
    assert_int_equal(token, 777);
    ASSERT_RC(dlock_lock_acquire(l, 10000), DLOCK_OK);
    ASSERT_RC(dlock_lock_token(l, &token), DLOCK_OK);
    assert_int_equal(token, 1);
    /* another thread never acquired it: still ENOTOWNER there */
    token_probe p = {.l = l, .token = 777};
    on_other_thread(token_from_other_thread, &p);
    ASSERT_RC(p.rc, DLOCK_ENOTOWNER);
    assert_int_equal(p.token, 777);
    ASSERT_RC(dlock_lock_release(l), DLOCK_OK);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* ---- resends are applied once ------------------------------------------------------------ */

static core_reply *run_script(dlock_client *c, enum dlock__script_id id, const char *key1,
                              const char *key2, const char *lease, const char *field,
                              const char *believed) {
    const char *args[] = {key1, key2, lease, field, believed, NULL};
    core_reply *r = core_script(c, id, DLOCK__CMD_RETRY_SAFE, 2, args);
    if (r->status != DLOCK_OK)
        fail_msg("script: %s (%s)", dlock_err_name(r->status), r->str ? r->str : "");
    return r;
}

static void expect_acquired(core_reply *r, long long holds, long long token) {
    assert_int_equal(r->type, DLOCK__REPLY_ARRAY);
    assert_int_equal(r->count, 3);
    assert_int_equal(r->elems[0].integer, 1);
    assert_int_equal(r->elems[1].integer, holds);
    assert_int_equal(r->elems[2].integer, token);
    core_reply_free(r);
}

static void
test_acquire_script_sent_twice_with_the_same_belief_takes_one_hold_and_one_token(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    const char *field = "0b7b5a80-0000-4000-8000-000000000001:42";
    const char *N = "resent", *T = "redisson_lock_token:{resent}";
    enum dlock__script_id acq = DLOCK__SCRIPT_LOCK_ACQUIRE;
    /* the client believes 0 holds: first send takes one, the resend changes nothing */
    expect_acquired(run_script(c, acq, N, T, "30000", field, "0"), 1, 1);
    expect_acquired(run_script(c, acq, N, T, "30000", field, "0"), 1, 1);
    assert_int_equal(redis_fixture_int(f, "HGET resent %s", field), 1);
    assert_int_equal(redis_fixture_int(f, "GET %s", T), 1);
    /* a reentrant acquire (belief 1), sent twice: one more hold, one more token */
    expect_acquired(run_script(c, acq, N, T, "30000", field, "1"), 2, 2);
    expect_acquired(run_script(c, acq, N, T, "30000", field, "1"), 2, 2);
    assert_int_equal(redis_fixture_int(f, "HGET resent %s", field), 2);
    assert_int_equal(redis_fixture_int(f, "GET %s", T), 2);
    assert_int_equal(redis_fixture_int(f, "HLEN resent"), 1);
    ASSERT_BETWEEN(pttl_of(f, "resent"), 29000, 30000);
    /* another owner is still refused, with the holder's PTTL as the hint */
    core_reply *r = run_script(c, acq, N, T, "30000", "other:1", "0");
    assert_int_equal(r->count, 2);
    assert_int_equal(r->elems[0].integer, 0);
    ASSERT_BETWEEN(r->elems[1].integer, 29000, 30000);
    core_reply_free(r);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static long long release_reply(core_reply *r) {
    assert_int_equal(r->type, DLOCK__REPLY_INTEGER);
    long long v = r->integer;
    core_reply_free(r);
    return v;
}

static void test_release_script_sent_twice_with_the_same_belief_removes_one_hold(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    const char *field = "0b7b5a80-0000-4000-8000-000000000001:42";
    const char *N = "resent-release", *CH = "redisson_lock__channel:{resent-release}";
    freeReplyObject(redis_fixture_cmd(f, "HSET resent-release %s 3", field));
    freeReplyObject(redis_fixture_cmd(f, "PEXPIRE resent-release 30000"));
    enum dlock__script_id rel = DLOCK__SCRIPT_LOCK_RELEASE;
    /* the client believes 3: the first send leaves 2, the resend changes nothing */
    assert_int_equal(release_reply(run_script(c, rel, N, CH, "20000", field, "3")), 2);
    assert_int_equal(release_reply(run_script(c, rel, N, CH, "20000", field, "3")), 2);
    assert_int_equal(redis_fixture_int(f, "HGET resent-release %s", field), 2);
    ASSERT_BETWEEN(pttl_of(f, "resent-release"), 19000, 20000); /* a hold left: new lease */
    assert_int_equal(release_reply(run_script(c, rel, N, CH, "20000", field, "2")), 1);
    assert_int_equal(release_reply(run_script(c, rel, N, CH, "20000", field, "2")), 1);
    assert_int_equal(redis_fixture_int(f, "HGET resent-release %s", field), 1);
    /* the last hold: deleted once; its resend finds nothing (-1), which the client reads
     * with the number of sends */
    assert_int_equal(release_reply(run_script(c, rel, N, CH, "20000", field, "1")), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS resent-release"), 0);
    assert_int_equal(release_reply(run_script(c, rel, N, CH, "20000", field, "1")), -1);
    assert_int_equal(redis_fixture_int(f, "EXISTS resent-release"), 0);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

static void test_release_script_drops_holds_the_client_never_learned_of(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_server();
    dlock_client *c = connect_client(f);
    const char *field = "0b7b5a80-0000-4000-8000-000000000001:42";
    const char *N = "orphans", *CH = "redisson_lock__channel:{orphans}";
    /* 3 holds in Redis, the client believes 1 (two acquires it reported failed were
     * applied after all): its last release frees the lock */
    freeReplyObject(redis_fixture_cmd(f, "HSET orphans %s 3", field));
    freeReplyObject(redis_fixture_cmd(f, "PEXPIRE orphans 30000"));
    assert_int_equal(
        release_reply(run_script(c, DLOCK__SCRIPT_LOCK_RELEASE, N, CH, "20000", field, "1")), 0);
    assert_int_equal(redis_fixture_int(f, "EXISTS orphans"), 0);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_fenced_tokens_strictly_increase_across_clients_owners_and_reentrant_acquires),
        cmocka_unit_test(test_token_of_a_plain_lock_is_einval),
        cmocka_unit_test(test_token_before_any_acquire_is_enotowner),
        cmocka_unit_test(
            test_acquire_script_sent_twice_with_the_same_belief_takes_one_hold_and_one_token),
        cmocka_unit_test(test_release_script_sent_twice_with_the_same_belief_removes_one_hold),
        cmocka_unit_test(test_release_script_drops_holds_the_client_never_learned_of),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
