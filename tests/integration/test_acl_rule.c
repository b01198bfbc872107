/* SPDX-License-Identifier: MIT */
/* test_acl_rule.c — the ACL rules docs/operations.md prints are the ones dlock needs.
 *
 * scripts/acl-rule.py computes the rules from the sources (every command of the Lua scripts
 * and of the C code, every key and channel prefix). What is proven:
 * - the docs print exactly those rules (acl-rule.py --check), so they cannot drift;
 * - a user made with the single-node rule, on one Redis, and with the single-node rule plus
 *   the Cluster rule, on every node of a cluster, runs every primitive (reentrant, fenced,
 *   fair, spin, read-write, MultiLock, RedLock, semaphore, expirable permits, latch; each
 *   lock kind with a waiter woken by a release) and every `dlock` command (run with each
 *   kind and a semaphore, inspect of each kind, release --force, semaphore, latch) on
 *   `app:` names, and the server refuses nothing: ACL LOG stays empty and no NOPERM is
 *   counted, also inside scripts and their pcalls;
 * - and the rule still refuses a name outside `app:` (dlock run exits 77). */
#include "acl_rule_words.h"
#include "cli_helpers.h"
#include "cluster_fixture.h"
#include "topology_util.h"

#define USER "dlock"
#define PASSWORD "secret"

/* One Redis or a cluster; the rule goes on each of its nodes. */
typedef struct deployment {
    redis_fixture *single;
    cluster_fixture *cluster;
    char *url; /* the user's */
} deployment;

static int node_count(const deployment *d) {
    return d->single ? 1 : CLUSTER_FIXTURE_NODES;
}

static redis_fixture *node(deployment *d, int i) {
    return d->single ? d->single : cluster_fixture_node(d->cluster, i);
}

/* ---- the rule, as scripts/acl-rule.py makes it -------------------------------------------- */

static const char *source_dir(void) {
    const char *dir = getenv("DLOCK_SOURCE_DIR");
    if (!dir || !dir[0])
        fail_msg("DLOCK_SOURCE_DIR is not set (ctest sets it)");
    return dir;
}

static void apply_rule(deployment *d, const char *which) {
    char *words[ACL_RULE_WORDS_MAX];
    int n = acl_rule_words(which, USER, PASSWORD, "app:", words);
    for (int i = 0; i < node_count(d); i++) {
        redisReply *r = redis_fixture_cmd_argv(node(d, i), n, (const char **)words, NULL);
        assert_non_null(r);
        if (r->type == REDIS_REPLY_ERROR)
            fail_msg("node %d: the %s rule: %s", i, which, r->str);
        freeReplyObject(r);
    }
    for (int i = 0; i < n; i++)
        free(words[i]);
}

static void forget_refusals(deployment *d) {
    for (int i = 0; i < node_count(d); i++) {
        freeReplyObject(redis_fixture_cmd(node(d, i), "ACL LOG RESET"));
        freeReplyObject(redis_fixture_cmd(node(d, i), "CONFIG RESETSTAT"));
    }
}

/* Every node's ACL LOG is empty and no NOPERM was counted; else the log, to say what the
 * rule lacks. */
static void assert_nothing_refused(deployment *d) {
    for (int i = 0; i < node_count(d); i++) {
        redis_fixture *f = node(d, i);
        redisReply *r = redis_fixture_cmd(f, "ACL LOG 5");
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        if (r->elements > 0) {
            char text[2048] = "";
            size_t used = 0;
            for (size_t e = 0; e < r->elements && used < sizeof(text) - 200; e++) {
                redisReply *entry = r->element[e];
                for (size_t k = 0; k + 1 < entry->elements; k += 2)
                    if (entry->element[k + 1]->type == REDIS_REPLY_STRING)
                        used +=
                            (size_t)snprintf(text + used, sizeof(text) - used, "%s=%s ",
                                             entry->element[k]->str, entry->element[k + 1]->str);
                used += (size_t)snprintf(text + used, sizeof(text) - used, "\n");
            }
            fail_msg("node %d refused %zu time(s); ACL LOG:\n%s", i, r->elements, text);
        }
        freeReplyObject(r);
        assert_int_equal(redis_fixture_info_int(f, "errorstats", "errorstat_NOPERM.count"), 0);
    }
}

/* ---- waiting ----------------------------------------------------------------------------------
 */

/* Whether some client listens on a channel of the object `name` (its channels carry
 * "{name}"): a waiter went to sleep. */
static bool someone_listens(deployment *d, const char *name) {
    if (d->cluster) {
        for (int i = 0; i < CLUSTER_FIXTURE_NODES; i++)
            if (cluster_fixture_shard_subscribed(d->cluster, i, name))
                return true;
        return false;
    }
    redisReply *r = redis_fixture_cmd(d->single, "PUBSUB CHANNELS *{%s}*", name);
    assert_non_null(r);
    bool any = r->type == REDIS_REPLY_ARRAY && r->elements > 0;
    freeReplyObject(r);
    return any;
}

static void wait_until_someone_listens(deployment *d, const char *name) {
    int64_t until = test_now_ms() + test_slack_ms(10000);
    while (!someone_listens(d, name)) {
        if (test_now_ms() > until)
            fail_msg("nobody waits on %s", name);
        test_sleep_ms(10);
    }
}

/* A waiter's whole turn on its own thread (the owner is the thread): wait, look, release. */
static int waiter_turn(void *arg) {
    dlock_lock *l = arg;
    int rc = dlock_lock_try_acquire(l, slack_ms(20000), DLOCK_WATCHDOG);
    if (rc != DLOCK_OK)
        return rc;
    bool held = false;
    int64_t holds = 0, ttl = 0;
    if ((rc = dlock_lock_is_held(l, &held)) != DLOCK_OK ||
        (rc = dlock_lock_hold_count(l, &holds)) != DLOCK_OK ||
        (rc = dlock_lock_ttl(l, &ttl)) != DLOCK_OK)
        return rc;
    if (!held || holds != 1 || ttl <= 0)
        return DLOCK_EREDIS;
    return dlock_lock_release(l);
}

/* holder takes its lock (twice: reentrant), waiter waits for it on a thread, holder lets
 * go, and the waiter is woken by the release, holds, and releases. name: the object's name
 * as its channels carry it. */
static void contend(deployment *d, dlock_lock *holder, dlock_lock *waiter, const char *name) {
    ASSERT_OK(dlock_lock_acquire(holder, DLOCK_WATCHDOG));
    ASSERT_OK(dlock_lock_acquire(holder, DLOCK_WATCHDOG));
    bool locked = false;
    ASSERT_OK(dlock_lock_is_locked(holder, &locked));
    assert_true(locked);
    blocking_call w;
    blocking_call_start(&w, waiter_turn, waiter);
    if (name)
        wait_until_someone_listens(d, name);
    ASSERT_OK(dlock_lock_release(holder));
    ASSERT_OK(dlock_lock_release(holder));
    ASSERT_RC(blocking_call_join(&w), DLOCK_OK);
}

/* ---- every primitive ---------------------------------------------------------------------------
 */

static dlock_client *user_client(deployment *d) {
    return connect_client_cfg(NULL, (test_client_cfg){.url = d->url, .watchdog_ms = 3000});
}

typedef int (*lock_maker)(dlock_client *c, const char *name, dlock_lock **out);

static void lock_kind(deployment *d, dlock_client *a, dlock_client *b, lock_maker make,
                      const char *name, bool listens) {
    dlock_lock *held, *waiting;
    ASSERT_OK(make(a, name, &held));
    ASSERT_OK(make(b, name, &waiting));
    contend(d, held, waiting, listens ? name : NULL);
    ASSERT_OK(dlock_lock_acquire(held, 30000));
    bool was_locked = false;
    ASSERT_OK(dlock_lock_force_release(waiting, &was_locked));
    assert_true(was_locked);
    dlock_lock_free(held);
    dlock_lock_free(waiting);
}

static void read_write(deployment *d, dlock_client *a, dlock_client *b) {
    dlock_rwlock *rw_a, *rw_b;
    ASSERT_OK(dlock_rwlock_new(a, "app:rw", &rw_a));
    ASSERT_OK(dlock_rwlock_new(b, "app:rw", &rw_b));
    contend(d, dlock_rwlock_write(rw_a), dlock_rwlock_read(rw_b), "app:rw"); /* a reader waits */
    contend(d, dlock_rwlock_read(rw_a), dlock_rwlock_write(rw_b), "app:rw"); /* a writer waits */
    dlock_rwlock_free(rw_a);
    dlock_rwlock_free(rw_b);
}

static void multilock_and_redlock(deployment *d, dlock_client *a, dlock_client *b,
                                  dlock_client *c) {
    dlock_lock *ma[2], *mb[2], *ml_a, *ml_b;
    const char *names[2] = {"app:ml1", "app:ml2"};
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(dlock_lock_new(a, names[i], &ma[i]));
        ASSERT_OK(dlock_lock_new(b, names[i], &mb[i]));
    }
    ASSERT_OK(dlock_multilock_new(ma, 2, &ml_a));
    ASSERT_OK(dlock_multilock_new(mb, 2, &ml_b));
    contend(d, ml_a, ml_b, "app:ml1");
    dlock_lock_free(ml_a); /* a composite before its members */
    dlock_lock_free(ml_b);
    for (int i = 0; i < 2; i++) {
        dlock_lock_free(ma[i]);
        dlock_lock_free(mb[i]);
    }

    /* three clients stand for three servers: a member each, of its own name */
    dlock_lock *members[3], *red;
    dlock_client *clients[3] = {a, b, c};
    const char *red_names[3] = {"app:red1", "app:red2", "app:red3"};
    for (int i = 0; i < 3; i++)
        ASSERT_OK(dlock_fencedlock_new(clients[i], red_names[i], &members[i]));
    ASSERT_OK(dlock_redlock_new(members, 3, &red));
    ASSERT_OK(dlock_lock_acquire(red, DLOCK_WATCHDOG));
    bool locked = false;
    ASSERT_OK(dlock_lock_is_locked(red, &locked));
    assert_true(locked);
    ASSERT_OK(dlock_lock_release(red));
    dlock_lock_free(red);
    for (int i = 0; i < 3; i++)
        dlock_lock_free(members[i]);
}

static int semaphore_waiter(void *arg) {
    dlock_semaphore *s = arg;
    int rc = dlock_semaphore_try_acquire(s, 1, slack_ms(20000));
    return rc == DLOCK_OK ? dlock_semaphore_release(s, 1) : rc;
}

static void semaphore(deployment *d, dlock_client *a, dlock_client *b) {
    dlock_semaphore *sa, *sb;
    ASSERT_OK(dlock_semaphore_new(a, "app:sem", &sa));
    ASSERT_OK(dlock_semaphore_new(b, "app:sem", &sb));
    bool was_set = false;
    ASSERT_OK(dlock_semaphore_try_set_permits(sa, 0, &was_set));
    blocking_call w;
    blocking_call_start(&w, semaphore_waiter, sb);
    wait_until_someone_listens(d, "app:sem");
    ASSERT_OK(dlock_semaphore_add_permits(sa, 1));
    ASSERT_RC(blocking_call_join(&w), DLOCK_OK);
    int64_t available = -1, drained = -1;
    ASSERT_OK(dlock_semaphore_available(sa, &available));
    assert_int_equal(available, 1);
    ASSERT_OK(dlock_semaphore_drain(sa, &drained));
    assert_int_equal(drained, 1);
    dlock_semaphore_free(sa);
    dlock_semaphore_free(sb);
}

static int permits_waiter(void *arg) {
    dlock_permits *p = arg;
    dlock_permit_id id;
    int rc = dlock_permits_acquire(p, slack_ms(20000), 30000, &id);
    if (rc == DLOCK_OK)
        rc = dlock_permits_update_lease(p, &id, 60000);
    return rc == DLOCK_OK ? dlock_permits_release(p, &id) : rc;
}

static void permits(deployment *d, dlock_client *a, dlock_client *b) {
    dlock_permits *pa, *pb;
    ASSERT_OK(dlock_permits_new(a, "app:pm", &pa));
    ASSERT_OK(dlock_permits_new(b, "app:pm", &pb));
    bool was_set = false;
    ASSERT_OK(dlock_permits_try_set_permits(pa, 1, &was_set));
    assert_true(was_set);
    dlock_permit_id id;
    ASSERT_OK(dlock_permits_acquire(pa, 0, 30000, &id));
    blocking_call w;
    blocking_call_start(&w, permits_waiter, pb);
    wait_until_someone_listens(d, "app:pm");
    ASSERT_OK(dlock_permits_release(pa, &id));
    ASSERT_RC(blocking_call_join(&w), DLOCK_OK);
    int64_t available = -1;
    ASSERT_OK(dlock_permits_available(pa, &available));
    assert_int_equal(available, 1);
    dlock_permits_free(pa);
    dlock_permits_free(pb);
}

static int latch_waiter(void *arg) {
    return dlock_latch_await(arg, slack_ms(20000));
}

static void latch(deployment *d, dlock_client *a, dlock_client *b) {
    dlock_latch *la, *lb;
    ASSERT_OK(dlock_latch_new(a, "app:latch", &la));
    ASSERT_OK(dlock_latch_new(b, "app:latch", &lb));
    bool was_set = false;
    ASSERT_OK(dlock_latch_try_set_count(la, 1, &was_set));
    assert_true(was_set);
    blocking_call w;
    blocking_call_start(&w, latch_waiter, lb);
    wait_until_someone_listens(d, "app:latch");
    ASSERT_OK(dlock_latch_count_down(la));
    ASSERT_RC(blocking_call_join(&w), DLOCK_OK);
    int64_t count = -1;
    ASSERT_OK(dlock_latch_count(la, &count));
    assert_int_equal(count, 0);
    dlock_latch_free(la);
    dlock_latch_free(lb);
}

/* The watchdog's renewals (a lock's and a read hold's scripts) run as the user too: sent
 * here, and judged by the server's ACL LOG at the end (the CLI's calls come after them). */
static void renewals(dlock_client *a) {
    dlock_lock *l;
    dlock_rwlock *rw;
    ASSERT_OK(dlock_lock_new(a, "app:renewed", &l));
    ASSERT_OK(dlock_rwlock_new(a, "app:renewed-rw", &rw));
    ASSERT_OK(dlock_lock_acquire(l, DLOCK_WATCHDOG));
    ASSERT_OK(dlock_lock_acquire(dlock_rwlock_read(rw), DLOCK_WATCHDOG));
    dlock_stats before, now;
    dlock_stats_init(&before);
    dlock_stats_init(&now);
    ASSERT_OK(dlock_client_stats(a, &before));
    int64_t until = test_now_ms() + test_slack_ms(10000); /* a tick every second */
    do {
        if (test_now_ms() > until)
            fail_msg("no renewal of the two holds within 10 s");
        test_sleep_ms(50);
        ASSERT_OK(dlock_client_stats(a, &now));
    } while (now.renewals_sent < before.renewals_sent + 4); /* two ticks of both */
    ASSERT_OK(dlock_lock_release(dlock_rwlock_read(rw)));
    ASSERT_OK(dlock_lock_release(l));
    dlock_rwlock_free(rw);
    dlock_lock_free(l);
}

static void every_primitive(deployment *d) {
    dlock_client *a = user_client(d), *b = user_client(d), *c = user_client(d);
    ASSERT_OK(dlock_client_ping(a));
    lock_kind(d, a, b, dlock_lock_new, "app:reentrant", true);
    lock_kind(d, a, b, dlock_fencedlock_new, "app:fenced", true);
    lock_kind(d, a, b, dlock_fairlock_new, "app:fair", true);
    lock_kind(d, a, b, dlock_spinlock_new, "app:spin", false);
    read_write(d, a, b);
    multilock_and_redlock(d, a, b, c);
    semaphore(d, a, b);
    permits(d, a, b);
    latch(d, a, b);
    renewals(a);
    dlock_client_free(c);
    dlock_client_free(b);
    dlock_client_free(a);
}

/* ---- every dlock command ------------------------------------------------------------------- */

#define CLI_OK(d, ...)                                                                             \
    do {                                                                                           \
        cli_result r_ = DLOCK_CLI_RUN(NULL, 30000, "--url", (d)->url, __VA_ARGS__);                \
        ASSERT_STATUS(r_, 0);                                                                      \
        cli_result_free(&r_);                                                                      \
    } while (0)

static void every_command(deployment *d) {
    CLI_OK(d, "semaphore", "app:csem", "set", "1");
    CLI_OK(d, "semaphore", "app:csem", "add", "1");
    CLI_OK(d, "semaphore", "app:csem", "available");
    CLI_OK(d, "run", "--semaphore", "app:csem", "--", "true");
    CLI_OK(d, "run", "app:cmd", "--", "true");
    CLI_OK(d, "run", "--fair", "app:cmd", "--", "true");
    CLI_OK(d, "run", "--spin", "app:cmd", "--", "true");
    CLI_OK(d, "run", "--read", "app:crw", "--", "true");
    CLI_OK(d, "run", "--write", "app:crw", "--", "true");
    CLI_OK(d, "latch", "app:clatch", "set", "1");
    CLI_OK(d, "latch", "app:clatch", "count");
    CLI_OK(d, "latch", "app:clatch", "count-down");
    CLI_OK(d, "latch", "--wait", "5000", "app:clatch", "await");

    /* inspect what each kind keeps, held, then release --force */
    dlock_client *a = user_client(d);
    dlock_lock *fenced, *fair;
    dlock_rwlock *rw;
    ASSERT_OK(dlock_fencedlock_new(a, "app:ifenced", &fenced));
    ASSERT_OK(dlock_fairlock_new(a, "app:ifair", &fair));
    ASSERT_OK(dlock_rwlock_new(a, "app:irw", &rw));
    ASSERT_OK(dlock_lock_acquire(fenced, 30000));
    ASSERT_OK(dlock_lock_acquire(fair, 30000));
    ASSERT_OK(dlock_lock_acquire(dlock_rwlock_read(rw), 30000));
    const char *names[] = {"app:ifenced", "app:ifair", "app:irw", "app:pm", "app:nothing"};
    for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
        CLI_OK(d, "inspect", names[i]);
        CLI_OK(d, "inspect", "--json", names[i]);
    }
    CLI_OK(d, "inspect", "--as", "semaphore", "app:csem");
    CLI_OK(d, "inspect", "--as", "latch", "app:clatch");
    CLI_OK(d, "release", "--force", "app:ifenced");
    CLI_OK(d, "release", "--force", "app:ifair");
    CLI_OK(d, "release", "--force", "app:irw");
    dlock_lock_free(fenced);
    dlock_lock_free(fair);
    dlock_rwlock_free(rw);
    dlock_client_free(a);
}

/* A command the rule lacks is named in the hint, also from a Cluster client's scripts (whose
 * text starts with a shebang line). */
static void assert_hint_names_a_missing_command(deployment *d) {
    for (int i = 0; i < node_count(d); i++)
        freeReplyObject(redis_fixture_cmd(node(d, i), "ACL SETUSER " USER " -pexpire"));
    cli_result r = DLOCK_CLI_RUN(NULL, 30000, "--url", d->url, "run", "app:hint", "--", "true");
    ASSERT_STATUS(r, 77);
    ASSERT_CONTAINS(r.err, "grant it: ACL SETUSER " USER " +pexpire");
    cli_result_free(&r);
    for (int i = 0; i < node_count(d); i++)
        freeReplyObject(redis_fixture_cmd(node(d, i), "ACL SETUSER " USER " +pexpire"));
}

/* What the rule is for: a name outside app: is refused. */
static void assert_other_names_refused(deployment *d) {
    cli_result r = DLOCK_CLI_RUN(NULL, 30000, "--url", d->url, "run", "other", "--", "true");
    ASSERT_STATUS(r, 77 /* an ACL refusal */);
    cli_result_free(&r);
}

/* ---- the tests ------------------------------------------------------------------------------ */

static void test_the_docs_print_the_rules_the_sources_need(void **state) {
    (void)state;
    char *command =
        topo_asprintf("python3 '%s/scripts/acl-rule.py' --check '%s/docs/operations.md'",
                      source_dir(), source_dir());
    int status = system(command);
    free(command);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("docs/operations.md does not print the ACL rules acl-rule.py computes (above)");
}

static void test_the_rule_runs_everything_on_one_redis(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S * 2, __func__);
    REQUIRE_CLI();
    deployment d = {.single = start_server()};
    apply_rule(&d, "single");
    forget_refusals(&d);
    d.url =
        topo_asprintf("unix://%s?user=" USER "&password=" PASSWORD, redis_fixture_socket(d.single));
    every_primitive(&d);
    every_command(&d);
    assert_nothing_refused(&d);
    assert_hint_names_a_missing_command(&d);
    assert_other_names_refused(&d);
    free(d.url);
    redis_fixture_stop(d.single);
}

static void test_the_rule_and_the_cluster_rule_run_everything_on_a_cluster(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S * 3, __func__);
    REQUIRE_CLI();
    deployment d = {0};
    if (cluster_fixture_start(NULL, &d.cluster) != 0)
        fail_msg("cannot start a cluster");
    apply_rule(&d, "single");
    apply_rule(&d, "cluster");
    forget_refusals(&d);
    d.url =
        topo_asprintf("redis-cluster://" USER ":" PASSWORD "@%s", cluster_fixture_hosts(d.cluster));
    every_primitive(&d);
    every_command(&d);
    assert_nothing_refused(&d);
    assert_hint_names_a_missing_command(&d);
    assert_other_names_refused(&d);
    free(d.url);
    cluster_fixture_stop(d.cluster);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_docs_print_the_rules_the_sources_need),
        cmocka_unit_test_teardown(test_the_rule_runs_everything_on_one_redis, kill_spawned),
        cmocka_unit_test_teardown(test_the_rule_and_the_cluster_rule_run_everything_on_a_cluster,
                                  kill_spawned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
