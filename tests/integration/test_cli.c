/* SPDX-License-Identifier: MIT */
/* test_cli.c — the dlock command-line tool (tools/), driven as a user drives it, against a
 * real redis-server.
 *
 * The tool is found in $DLOCK_CLI, else beside this program's build tree
 * (<build>/tests/bin/integration/integration_cli -> <build>/tools/dlock); when it was not
 * built (DLOCK_BUILD_TOOLS=OFF) every test is skipped, unless DLOCK_CLI names it.
 *
 * What is proven (here and in the files split from it): two `dlock run` loops on one name never
 * overlap (enter/exit markers with timestamps and a non-atomic counter in files); the command's
 * exit status (and 128+signal) comes back; DLOCK_TOKEN and DLOCK_NAME are exported and tokens
 * increase; --wait gives up with 73; --read runs share, --write excludes them, --fair runs queue
 * (seen by inspect); a lost lease (key deleted while the command sleeps; watchdog_ms from
 * $DLOCK_WATCHDOG_MS and
 * --watchdog-ms) terminates the command, what it started and dlock with 75, and so does a fixed
 * --lease running out; SIGTERM to dlock reaches the command and the lock is released; `inspect`
 * shows the holder (client id, owner, hold count) of a lock held through the library, and every
 * kind it knows, with valid --json; `release
 * --force` frees a held lock (plain, read-write, fair) and refuses what is not a lock; semaphore
 * set/add/available, run --semaphore, latch set/count-down/count/await round-trip; every --help
 * exits 0; bad usage exits 64; an unreachable Redis 69; a refused password 77.
 *
 * Each test starts its own server; the tool reaches it through DLOCK_URL (or --url).
 * Processes the tests start are recorded and SIGKILLed by the teardown if a test fails.
 *
 * Split by concern: help and usage, inspect and release here; `dlock run` in test_cli_run.c,
 * semaphore and latch in test_cli_objects.c. Helpers: tests/support/cli_helpers.h and
 * cli_run.h.
 */
#include "cli_helpers.h"

/* ---- help and usage --------------------------------------------------------------------- */

static void test_help_of_every_command_exits_0_and_version_matches_the_header(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    static const char *const commands[] = {"run", "inspect", "release", "semaphore", "latch"};
    cli_result r = DLOCK_CLI_RUN(f, 5000, "--help");
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.out, "Usage: dlock");
    ASSERT_CONTAINS(r.out, "Exit codes:");
    ASSERT_CONTAINS(r.out, "75 ");
    cli_result_free(&r);
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        r = DLOCK_CLI_RUN(f, 5000, commands[i], "--help");
        ASSERT_STATUS(r, 0);
        char usage[64];
        snprintf(usage, sizeof(usage), "Usage: dlock %s", commands[i]);
        ASSERT_CONTAINS(r.out, usage);
        cli_result_free(&r);
        r = DLOCK_CLI_RUN(f, 5000, commands[i], "-h");
        ASSERT_STATUS(r, 0);
        cli_result_free(&r);
    }
    r = DLOCK_CLI_RUN(f, 5000, "--version");
    ASSERT_STATUS(r, 0);
    char want[64];
    snprintf(want, sizeof(want), "dlock %s\n", DLOCK_VERSION_STRING);
    assert_string_equal(r.out, want);
    cli_result_free(&r);
    redis_fixture_stop(f);
}

static void test_bad_usage_exits_64_with_a_message(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    static const char *const cases[][8] = {
        {NULL},
        {"frobnicate", NULL},
        {"--no-such-option", NULL},
        {"run", NULL},
        {"run", "name", NULL},
        {"run", "--wait", "soon", "name", "--", "true", NULL},
        {"run", "--wait", NULL},
        {"run", "--lease", "100", "--watchdog", "name", "--", "true", NULL},
        {"run", "--permits", "2", "name", "--", "true", NULL},
        {"run", "--semaphore", "s", "--lease", "5", "--", "true", NULL},
        {"run", "name", "other", "--", "true", NULL},
        {"run", "--watchdog-ms", "abc", "name", "--", "true", NULL},
        {"inspect", NULL},
        {"inspect", "--as", "lock", "x", NULL},
        {"release", "x", NULL},
        {"semaphore", "s", NULL},
        {"semaphore", "s", "grow", "2", NULL},
        {"semaphore", "s", "add", NULL},
        {"latch", "l", "set", "many", NULL},
        {"latch", "l", "count-down", "--wait", "5", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cli_result r = cli_run_argv(f, 5000, cases[i]);
        if (r.status != 64)
            fail_msg("case %zu (dlock %s %s %s ...): exit %d, expected 64\n%s", i,
                     cases[i][0] ? cases[i][0] : "", cases[i][0] && cases[i][1] ? cases[i][1] : "",
                     cases[i][0] && cases[i][1] && cases[i][2] ? cases[i][2] : "", r.status, r.err);
        assert_true(strlen(r.err) > 0);
        ASSERT_CONTAINS(r.err, "dlock");
        cli_result_free(&r);
    }
    /* One lock kind at a time. */
    cli_result r = DLOCK_CLI_RUN(f, 5000, "run", "--read", "--write", "name", "--", "true");
    ASSERT_STATUS(r, 64);
    ASSERT_CONTAINS(r.err, "choose one");
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 5000, "run", "--fair", "--read", "name", "--", "true");
    ASSERT_STATUS(r, 64);
    ASSERT_CONTAINS(r.err, "choose one");
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 5000, "run", "--fair", "--semaphore", "s", "--", "true");
    ASSERT_STATUS(r, 64);
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0); /* nothing was touched */
    redis_fixture_stop(f);
}

static void test_unreachable_redis_exits_69_and_a_refused_password_77(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture_opts o = {.requirepass = "s3cret pass"};
    redis_fixture *f = start_server_with(&o);
    char gone[PATH_MAX + 16];
    snprintf(gone, sizeof(gone), "unix://%s/no-such.sock", redis_fixture_dir(f));
    static const char *const commands[][4] = {
        {"run", "x", "true", NULL},        {"inspect", "x", NULL},
        {"release", "--force", "x", NULL}, {"semaphore", "x", "available", NULL},
        {"latch", "x", "count", NULL},
    };
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        const char *argv[8] = {"--url", gone, "--connect-timeout", "2000"};
        for (int k = 0; commands[i][k]; k++)
            argv[4 + k] = commands[i][k];
        cli_result r = cli_run_argv(f, 10000, argv);
        if (r.status != 69)
            fail_msg("dlock %s with no server: exit %d, expected 69\n%s", commands[i][0], r.status,
                     r.err);
        ASSERT_CONTAINS(r.err, "no-such.sock");
        cli_result_free(&r);
    }
    /* The fixture's URL carries the password: it works, through DLOCK_URL and --url. */
    cli_result r = DLOCK_CLI_RUN(f, 10000, "semaphore", "x", "available");
    ASSERT_STATUS(r, 0);
    assert_string_equal(r.out, "0\n");
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "--url", redis_fixture_unix_url(f), "inspect", "x");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    /* A wrong one is refused: 77. */
    char wrong[PATH_MAX + 32];
    snprintf(wrong, sizeof(wrong), "unix://%s?password=wrong", redis_fixture_socket(f));
    r = DLOCK_CLI_RUN(f, 10000, "--url", wrong, "run", "x", "--", "true");
    ASSERT_STATUS(r, 77);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "--url", wrong, "inspect", "x");
    ASSERT_STATUS(r, 77);
    cli_result_free(&r);
    redis_fixture_stop(f);
}

/* ---- inspect and release ---------------------------------------------------------------- */

static void test_inspect_shows_the_holder_client_id_owner_and_count_and_valid_json(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = NULL;
    assert_int_equal(dlock_fencedlock_new(c, "orders", &l), DLOCK_OK);
    assert_int_equal(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    assert_int_equal(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK); /* 2 holds */
    char owner[32];
    snprintf(owner, sizeof(owner), "%llu", (unsigned long long)dlock_thread_owner());

    cli_result r = DLOCK_CLI_RUN(f, 10000, "inspect", "orders");
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.out, "lock (fenced)");
    ASSERT_CONTAINS(r.out, dlock_client_id(c));
    ASSERT_CONTAINS(r.out, owner);
    ASSERT_CONTAINS(r.out, "held by 1 owner(s), 2 hold(s)");
    ASSERT_CONTAINS(r.out, "token      2");
    cli_result_free(&r);

    r = DLOCK_CLI_RUN(f, 10000, "inspect", "--json", "orders");
    ASSERT_STATUS(r, 0);
    assert_valid_json(r.out);
    char want[160];
    snprintf(want, sizeof(want), "\"client_id\":\"%s\",\"owner\":\"%s\",\"holds\":2",
             dlock_client_id(c), owner);
    ASSERT_CONTAINS(r.out, want);
    ASSERT_CONTAINS(r.out, "\"kind\":\"lock\"");
    ASSERT_CONTAINS(r.out, "\"fenced\":true,\"token\":2");
    char expr[256];
    snprintf(expr, sizeof(expr),
             ".kind == \"lock\" and .holders[0].client_id == \"%s\" and .holders[0].owner == "
             "\"%s\" and .holders[0].holds == 2 and .ttl_ms > 0",
             dlock_client_id(c), owner);
    assert_jq(f, r.out, expr);
    cli_result_free(&r);

    /* A name holding nothing; and the lock once released: free, its token kept. */
    r = DLOCK_CLI_RUN(f, 10000, "inspect", "--json", "nothing-here");
    ASSERT_STATUS(r, 0);
    assert_valid_json(r.out);
    ASSERT_CONTAINS(r.out, "\"kind\":\"none\"");
    cli_result_free(&r);
    assert_int_equal(dlock_lock_release(l), DLOCK_OK);
    assert_int_equal(dlock_lock_release(l), DLOCK_OK);
    r = DLOCK_CLI_RUN(f, 10000, "inspect", "orders");
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.out, "free");
    cli_result_free(&r);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* `dlock inspect [--json] name`, which must succeed (and print valid JSON with --json). */
static cli_result inspected(redis_fixture *f, bool json, const char *name) {
    cli_result r = json ? DLOCK_CLI_RUN(f, 10000, "inspect", "--json", name)
                        : DLOCK_CLI_RUN(f, 10000, "inspect", name);
    ASSERT_STATUS(r, 0);
    if (json)
        assert_valid_json(r.out);
    return r;
}

/* A lock's hand-off as dlock keeps it: the waiters in line, first first, with how long each
 * has waited by the server's clock, and the waiter a release promised the free lock to. */
static void test_inspect_shows_the_hand_off_line_and_promise(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    const char *holder = "6e3814a1-e847-452b-a982-45baf93a1df2:7";
    const char *first = "6e3814a1-e847-452b-a982-45baf93a1df3:9";
    const char *second = "6e3814a1-e847-452b-a982-45baf93a1df4:11";
    const char *promised = "6e3814a1-e847-452b-a982-45baf93a1df5:3";
    redisReply *t = redis_fixture_cmd(f, "TIME");
    assert_non_null(t);
    long long now = atoll(t->element[0]->str) * 1000;
    freeReplyObject(t);
    assert_int_equal(redis_fixture_int(f, "HSET line %s 1", holder), 1);
    assert_int_equal(redis_fixture_int(f, "ZADD {line}:handoff_queue %lld %s %lld %s", now - 5000,
                                       first, now - 2000, second),
                     2);
    char *ok = redis_fixture_str(f, "SET {line}:handoff %s PX 60000", promised);
    free(ok);

    cli_result r = inspected(f, false, "line");
    ASSERT_CONTAINS(r.out, "promised   to 6e3814a1-e847-452b-a982-45baf93a1df5 3");
    ASSERT_CONTAINS(r.out, "waiting in line");
    ASSERT_CONTAINS(r.out, "6e3814a1-e847-452b-a982-45baf93a1df3");
    cli_result_free(&r);

    r = inspected(f, true, "line");
    ASSERT_CONTAINS(r.out, "\"promised_to\":{\"client_id\":\"6e3814a1-e847-452b-a982-"
                           "45baf93a1df5\",\"owner\":\"3\"");
    assert_jq(f, r.out,
              ".queue | length == 2 and .[0].owner == \"9\" and .[1].owner == \"11\" and "
              ".[0].waited_ms >= 5000 and .[0].waited_ms < 65000 and .[1].waited_ms >= 2000 and "
              ".[0].expires_in_ms == null");
    assert_jq(f, r.out,
              ".promised_to.owner == \"3\" and .promised_to.client_id == "
              "\"6e3814a1-e847-452b-a982-45baf93a1df5\" and .promised_to.expires_in_ms > 0");
    cli_result_free(&r);

    /* nobody in line, nobody promised: an empty queue and a null promise */
    assert_int_equal(redis_fixture_int(f, "DEL {line}:handoff_queue {line}:handoff"), 2);
    r = inspected(f, true, "line");
    assert_jq(f, r.out, ".queue == [] and .promised_to == null");
    cli_result_free(&r);
    redis_fixture_stop(f);
}

/* Every layout of REDIS_LAYOUT.md, written with plain commands, is named right, and the
 * JSON of each is valid (names with quotes and bytes that are not UTF-8 included). */
static void test_inspect_recognises_every_layout(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    const char *id = "6e3814a1-e847-452b-a982-45baf93a1df2";
    redisReply *rep;
#define ADMIN(...)                                                                                 \
    do {                                                                                           \
        rep = redis_fixture_cmd(f, __VA_ARGS__);                                                   \
        assert_non_null(rep);                                                                      \
        assert_int_not_equal(rep->type, REDIS_REPLY_ERROR);                                        \
        freeReplyObject(rep);                                                                      \
    } while (0)
    ADMIN("HSET fair %s:7 1", id);
    ADMIN("PEXPIRE fair 30000");
    ADMIN("RPUSH redisson_lock_queue:{fair} %s:8 %s:9", id, id);
    ADMIN("ZADD redisson_lock_timeout:{fair} 99999999999999 %s:8 99999999999999 %s:9", id, id);
    ADMIN("HSET rw mode read %s:7 2 %s:8 1", id, id);
    ADMIN("SET {rw}:%s:7:rwlock_timeout:1 1 PX 20000", id);
    ADMIN("SET {rw}:%s:7:rwlock_timeout:2 1 PX 25000", id);
    ADMIN("HSET rww mode write %s:7:write 1", id);
    ADMIN("SET sem 3");
    ADMIN("SET pex 1");
    ADMIN("ZADD {pex}:timeout 922337203685477 0123456789abcdef");
    ADMIN("SET gate 2");
    ADMIN("SET text hello");
    ADMIN("RPUSH alist x");

    static const struct {
        const char *name, *as, *kind, *part;
    } cases[] = {
        {"fair", NULL, "fair_lock", "\"queue\":[{\"client_id\":\"6e3814a1"},
        {"rw", NULL, "rwlock", "\"mode\":\"read\""},
        {"rww", NULL, "rwlock", "\"mode\":\"write\""},
        {"sem", NULL, "count", "\"count\":3"},
        {"sem", "semaphore", "semaphore", "\"channel\":\"redisson_sc:{sem}\""},
        {"gate", "latch", "latch", "redisson_countdownlatch__channel__{gate}"},
        {"pex", NULL, "permits", "\"id\":\"30313233343536373839616263646566\""},
        {"text", NULL, "other", "\"redis_type\":\"string\""},
        {"alist", NULL, "other", "\"redis_type\":\"list\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cli_result r = cases[i].as ? DLOCK_CLI_RUN(f, 10000, "inspect", "--json", "--as",
                                                   cases[i].as, cases[i].name)
                                   : DLOCK_CLI_RUN(f, 10000, "inspect", "--json", cases[i].name);
        ASSERT_STATUS(r, 0);
        assert_valid_json(r.out);
        char kind[64];
        snprintf(kind, sizeof(kind), "\"kind\":\"%s\"", cases[i].kind);
        ASSERT_CONTAINS(r.out, kind);
        ASSERT_CONTAINS(r.out, cases[i].part);
        cli_result_free(&r);
        r = cases[i].as ? DLOCK_CLI_RUN(f, 10000, "inspect", "--as", cases[i].as, cases[i].name)
                        : DLOCK_CLI_RUN(f, 10000, "inspect", cases[i].name);
        ASSERT_STATUS(r, 0);
        ASSERT_CONTAINS(r.out, cases[i].name);
        cli_result_free(&r);
    }
    /* A latch somebody awaits is told from a semaphore by its channel. */
    const char *await_argv[] = {cli_path(), "latch", "gate", "await", NULL};
    pid_t waiter = cli_spawn(await_argv, NULL, NULL);
    int64_t until = test_now_ms() + 10000;
    while (test_now_ms() < until) {
        cli_result r = DLOCK_CLI_RUN(f, 10000, "inspect", "--json", "gate");
        bool latch = strstr(r.out, "\"kind\":\"latch\"") != NULL;
        cli_result_free(&r);
        if (latch)
            break;
        test_sleep_ms(20);
    }
    cli_result r = DLOCK_CLI_RUN(f, 10000, "inspect", "gate");
    ASSERT_CONTAINS(r.out, "count-down latch");
    ASSERT_CONTAINS(r.out, "1 client(s) subscribed");
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "latch", "gate", "count-down");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "latch", "gate", "count-down");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    assert_int_equal(cli_wait_exit(waiter, 10000), 0);

    /* Odd names: a quote, a backslash, a newline and a byte that is not UTF-8. */
    const char odd[] = "we\"ird\\na\nme\xff";
    rep = redis_fixture_cmd(f, "HSET %s %s:1 1", odd, id);
    freeReplyObject(rep);
    r = DLOCK_CLI_RUN(f, 10000, "inspect", "--json", odd);
    ASSERT_STATUS(r, 0);
    assert_valid_json(r.out);
    ASSERT_CONTAINS(r.out, "\"kind\":\"lock\"");
    assert_jq(f, r.out, ".holders | length == 1");
    cli_result_free(&r);
#undef ADMIN
    redis_fixture_stop(f);
}

static void test_release_force_frees_a_held_lock_and_refuses_what_is_not_a_lock(void **state) {
    (void)state;
    REQUIRE_CLI();
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = start_cli_server();
    dlock_client *c = connect_client(f);
    dlock_lock *l = NULL;
    assert_int_equal(dlock_lock_new(c, "stuck", &l), DLOCK_OK);
    assert_int_equal(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);

    cli_result r = DLOCK_CLI_RUN(f, 10000, "release", "--force", "stuck");
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.out, "released");
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "EXISTS stuck"), 0);
    /* Another client gets it at once. */
    r = DLOCK_CLI_RUN(f, 10000, "run", "--wait", "0", "stuck", "--", "true");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    /* Nothing to release: still 0, and said. */
    r = DLOCK_CLI_RUN(f, 10000, "release", "--force", "stuck");
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.err, "not locked");
    cli_result_free(&r);

    /* Not a lock: refused, left alone. */
    redisReply *rep = redis_fixture_cmd(f, "HSET appdata field value");
    freeReplyObject(rep);
    rep = redis_fixture_cmd(f, "SET permits 4");
    freeReplyObject(rep);
    r = DLOCK_CLI_RUN(f, 10000, "release", "--force", "appdata");
    ASSERT_STATUS(r, 65);
    cli_result_free(&r);
    r = DLOCK_CLI_RUN(f, 10000, "release", "--force", "permits");
    ASSERT_STATUS(r, 65);
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "EXISTS appdata"), 1);
    assert_int_equal(redis_fixture_int(f, "GET permits"), 4);

    assert_int_equal(dlock_lock_release(l), DLOCK_ELOST); /* the holder learns it */
    dlock_lock_free(l);

    /* A read-write lock and a fair lock are released through their own kind. */
    dlock_rwlock *rw = NULL;
    assert_int_equal(dlock_rwlock_new(c, "rw", &rw), DLOCK_OK);
    assert_int_equal(dlock_lock_acquire(dlock_rwlock_write(rw), DLOCK_WATCHDOG), DLOCK_OK);
    r = DLOCK_CLI_RUN(f, 10000, "release", "--force", "rw");
    ASSERT_STATUS(r, 0);
    ASSERT_CONTAINS(r.out, "released");
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "EXISTS rw"), 0);
    dlock_rwlock_free(rw);
    assert_int_equal(dlock_fairlock_new(c, "fair", &l), DLOCK_OK);
    assert_int_equal(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK);
    redisReply *q = redis_fixture_cmd(f, "RPUSH redisson_lock_queue:{fair} someone:1");
    freeReplyObject(q); /* a queue makes it recognisably fair */
    r = DLOCK_CLI_RUN(f, 10000, "release", "--force", "fair");
    ASSERT_STATUS(r, 0);
    cli_result_free(&r);
    assert_int_equal(redis_fixture_int(f, "EXISTS fair"), 0);
    dlock_lock_free(l);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_help_of_every_command_exits_0_and_version_matches_the_header,
                                  kill_spawned),
        cmocka_unit_test_teardown(test_bad_usage_exits_64_with_a_message, kill_spawned),
        cmocka_unit_test_teardown(test_unreachable_redis_exits_69_and_a_refused_password_77,
                                  kill_spawned),
        cmocka_unit_test_teardown(
            test_inspect_shows_the_holder_client_id_owner_and_count_and_valid_json, kill_spawned),
        cmocka_unit_test_teardown(test_inspect_shows_the_hand_off_line_and_promise, kill_spawned),
        cmocka_unit_test_teardown(test_inspect_recognises_every_layout, kill_spawned),
        cmocka_unit_test_teardown(
            test_release_force_frees_a_held_lock_and_refuses_what_is_not_a_lock, kill_spawned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
