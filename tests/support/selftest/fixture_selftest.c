/* SPDX-License-Identifier: MIT */
/* fixture_selftest.c - proves the test support code before any dlock test relies on it.
 *
 * Each claim of redis_fixture.h and test_util.h that other tests lean on is shown here
 * against a real redis-server: start/stop, restart with and without persistence, pause,
 * CLIENT KILL, AUTH, INFO parsing, and above all that no server outlives its test process,
 * whether that process stops cleanly, forgets to stop, aborts, is SIGKILLed or hangs.
 *
 * The program makes itself a child subreaper, so servers orphaned by the crashing children
 * it forks are reparented to it and it can reap them and see exactly when they die, even
 * in a container whose pid 1 never reaps.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>

#include <cmocka.h>

#include "redis_fixture.h"
#include "test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TEST_BUDGET_S 30

/* ---- helpers ------------------------------------------------------------------------------ */

static redis_fixture *start_or_fail(const redis_fixture_opts *o) {
    redis_fixture *f = NULL;
    assert_int_equal(redis_fixture_start(o, &f), 0);
    assert_non_null(f);
    return f;
}

static void assert_str_reply(redis_fixture *f, const char *expected, const char *fmt,
                             const char *arg) {
    char *got = redis_fixture_str(f, fmt, arg);
    if (expected == NULL) {
        assert_null(got);
    } else {
        assert_non_null(got);
        assert_string_equal(got, expected);
    }
    free(got);
}

/* stdout is a buffer cmocka has written into: flushed before fork, or a child that exits
 * through exit() prints the parent's report twice. */
static pid_t fork_child(void) {
    fflush(NULL);
    pid_t pid = test_fork();
    assert_true(pid >= 0);
    return pid;
}

/* Reaps `pid` once it has died and has been reparented to us (we are a subreaper), or sees
 * it vanish otherwise. true when the process is gone for good. */
static bool wait_gone(pid_t pid, int64_t timeout_ms) {
    int64_t deadline = test_now_ms() + timeout_ms;
    do {
        pid_t r = waitpid(pid, NULL, WNOHANG);
        if (r == pid)
            return true;
        if (r == -1 && errno == ECHILD && kill(pid, 0) == -1 && errno == ESRCH)
            return true;
        test_sleep_ms(10);
    } while (test_now_ms() < deadline);
    return false;
}

static void assert_process_gone(pid_t pid) {
    assert_true(wait_gone(pid, 5000));
    errno = 0;
    assert_int_equal(kill(pid, 0), -1);
    assert_int_equal(errno, ESRCH);
}

static void assert_dir_gone(const char *dir) {
    struct stat st;
    errno = 0;
    assert_int_equal(stat(dir, &st), -1);
    assert_int_equal(errno, ENOENT);
}

struct child_report {
    pid_t server_pid;
    char dir[64];
};

static void send_report(int fd, const redis_fixture *f) {
    struct child_report rep;
    memset(&rep, 0, sizeof rep);
    rep.server_pid = redis_fixture_pid(f);
    snprintf(rep.dir, sizeof rep.dir, "%s", redis_fixture_dir(f));
    if (write(fd, &rep, sizeof rep) != (ssize_t)sizeof rep)
        _exit(3);
}

static void read_report(int fd, struct child_report *rep) {
    ssize_t n;
    while ((n = read(fd, rep, sizeof *rep)) == -1 && errno == EINTR) {
    }
    assert_int_equal(n, (ssize_t)sizeof *rep);
    assert_true(rep->server_pid > 0);
}

/* Reads everything until EOF: also proves the server did not inherit the pipe. */
static size_t read_all(int fd, char *buf, size_t size) {
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, buf + len, size - 1 - len);
        if (n == -1 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        if (len == size - 1)
            break;
    }
    buf[len] = '\0';
    return len;
}

static int wait_child(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) == -1 && errno == EINTR) {
    }
    return status;
}

/* ---- start, commands, accessors ----------------------------------------------------------- */

static void test_default_fixture_serves_set_and_get(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    redis_fixture *f = start_or_fail(NULL);

    assert_int_equal(redis_fixture_port(f), 0);
    assert_null(redis_fixture_tcp_url(f));
    assert_true(redis_fixture_running(f));
    const char *sock = redis_fixture_socket(f);
    assert_int_equal(strncmp(sock, "/tmp/dlock-test-", 16), 0);
    char expected_url[256];
    snprintf(expected_url, sizeof expected_url, "unix://%s", sock);
    assert_string_equal(redis_fixture_unix_url(f), expected_url);
    assert_int_equal(strncmp(redis_fixture_unix_url(f), "unix:///tmp/dlock-test-", 23), 0);

    redisReply *r = redis_fixture_cmd(f, "SET %s %s", "greeting", "hello world");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    assert_string_equal(r->str, "OK");
    freeReplyObject(r);
    assert_str_reply(f, "hello world", "GET %s", "greeting");
    assert_str_reply(f, NULL, "GET %s", "missing");
    assert_int_equal(redis_fixture_int(f, "INCRBY counter 41"), 41);
    assert_int_equal(redis_fixture_int(f, "GET counter"), 41);
    assert_true(redis_fixture_int(f, "GET missing") == LLONG_MIN);
    assert_true(redis_fixture_int(f, "GET greeting") == LLONG_MIN);

    /* the settings the rest of the suite depends on */
    r = redis_fixture_cmd(f, "CONFIG GET save");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    assert_string_equal(r->element[1]->str, "");
    freeReplyObject(r);
    assert_int_equal(redis_fixture_info_int(f, "persistence", "aof_enabled"), 0);
    r = redis_fixture_cmd(f, "DEBUG SLEEP 0");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);

    redis_fixture_stop(f);
    test_watchdog_disarm();
}

static void test_tcp_fixture_listens_on_loopback_port(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    redis_fixture_opts o = {.tcp = true};
    redis_fixture *f = start_or_fail(&o);
    int port = redis_fixture_port(f);
    assert_true(port > 0 && port < 65536 && port != 6379);
    char expected_url[64];
    snprintf(expected_url, sizeof expected_url, "redis://127.0.0.1:%d", port);
    assert_string_equal(redis_fixture_tcp_url(f), expected_url);

    redisContext *c = redisConnect("127.0.0.1", port);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    redisReply *r = redisCommand(c, "SET via tcp");
    assert_non_null(r);
    freeReplyObject(r);
    redisFree(c);
    assert_str_reply(f, "tcp", "GET %s", "via");

    redis_fixture_stop(f);
    test_watchdog_disarm();
}

static void test_cmd_argv_is_binary_safe(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    redis_fixture *f = start_or_fail(NULL);
    const char *set[] = {"SET", "bin", "a\0b"};
    const size_t set_len[] = {3, 3, 3};
    redisReply *r = redis_fixture_cmd_argv(f, 3, set, set_len);
    assert_non_null(r);
    freeReplyObject(r);
    const char *get[] = {"GET", "bin"};
    r = redis_fixture_cmd_argv(f, 2, get, NULL);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(r->len, 3);
    assert_memory_equal(r->str, "a\0b", 3);
    freeReplyObject(r);
    assert_int_equal(redis_fixture_int(f, "STRLEN bin"), 3);
    redis_fixture_stop(f);
    test_watchdog_disarm();
}

static void test_info_int_reads_stats_and_commandstats(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    redis_fixture *f = start_or_fail(NULL);
    long long before = redis_fixture_info_int(f, "stats", "total_commands_processed");
    assert_true(before > 0);
    assert_int_equal(redis_fixture_info_int(f, "commandstats", "cmdstat_get.calls"), 0);
    for (int i = 0; i < 3; i++)
        assert_str_reply(f, NULL, "GET %s", "nothing");
    assert_int_equal(redis_fixture_info_int(f, "commandstats", "cmdstat_get.calls"), 3);
    assert_true(redis_fixture_info_int(f, "stats", "total_commands_processed") >= before + 3);
    assert_int_equal(redis_fixture_info_int(f, "commandstats", "cmdstat_evalsha.calls"), 0);
    assert_int_equal(redis_fixture_info_int(f, "commandstats", "cmdstat_get.no_such_key"), 0);
    assert_int_equal(redis_fixture_info_int(f, "stats", "no_such_field"), 0);

    assert_int_equal(redis_fixture_int(f, "SET k v"), LLONG_MIN); /* "OK" is no integer */
    assert_int_equal(redis_fixture_info_int(f, "keyspace", "db0.keys"), 1);
    /* present but not an integer */
    assert_int_equal(redis_fixture_info_int(f, "server", "redis_version"), -1);
    redis_fixture_stop(f);
    test_watchdog_disarm();
}

struct incr_job {
    redis_fixture *f;
    int n;
};

static void *incr_worker(void *arg) {
    struct incr_job *job = arg;
    for (int i = 0; i < job->n; i++) {
        if (redis_fixture_int(job->f, "INCR shared") == LLONG_MIN)
            return (void *)1;
    }
    return NULL;
}

static void test_cmd_is_usable_from_several_threads(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    redis_fixture *f = start_or_fail(NULL);
    pthread_t threads[4];
    struct incr_job job = {f, (int)test_scaled(200)};
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, incr_worker, &job), 0);
    for (int i = 0; i < 4; i++) {
        void *failed = NULL;
        pthread_join(threads[i], &failed);
        assert_null(failed);
    }
    assert_int_equal(redis_fixture_int(f, "GET shared"), 4 * job.n);
    redis_fixture_stop(f);
    test_watchdog_disarm();
}

/* ---- options ------------------------------------------------------------------------------ */

static void test_requirepass_is_used_by_admin_connection_and_urls(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    redis_fixture_opts o = {.tcp = true, .requirepass = "s3cr:t/pw"};
    redis_fixture *f = start_or_fail(&o);

    /* the admin connection AUTHed, or this would be NOAUTH */
    assert_int_equal(redis_fixture_int(f, "INCR guarded"), 1);

    redisContext *c = redisConnectUnix(redis_fixture_socket(f));
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    redisReply *r = redisCommand(c, "GET guarded");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_int_equal(strncmp(r->str, "NOAUTH", 6), 0);
    freeReplyObject(r);
    r = redisCommand(c, "AUTH %s", "s3cr:t/pw");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisFree(c);

    char expected[256];
    snprintf(expected, sizeof expected, "unix://%s?password=s3cr%%3At%%2Fpw",
             redis_fixture_socket(f));
    assert_string_equal(redis_fixture_unix_url(f), expected);
    snprintf(expected, sizeof expected, "redis://:s3cr%%3At%%2Fpw@127.0.0.1:%d",
             redis_fixture_port(f));
    assert_string_equal(redis_fixture_tcp_url(f), expected);

    /* re-AUTH after restart */
    assert_int_equal(redis_fixture_restart(f), 0);
    assert_int_equal(redis_fixture_int(f, "INCR guarded"), 1);
    redis_fixture_stop(f);
    test_watchdog_disarm();
}

static void test_extra_args_reach_the_server(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    const char *const extra[] = {"--maxmemory", "10mb", "--user", "alice", "on",
                                 ">alicepw",    "~*",   "+@all",  NULL};
    redis_fixture_opts o = {.extra_args = extra};
    redis_fixture *f = start_or_fail(&o);
    redisReply *r = redis_fixture_cmd(f, "CONFIG GET maxmemory");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    assert_string_equal(r->element[1]->str, "10485760");
    freeReplyObject(r);

    redisContext *c = redisConnectUnix(redis_fixture_socket(f));
    assert_non_null(c);
    r = redisCommand(c, "AUTH alice alicepw");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisFree(c);
    redis_fixture_stop(f);
    test_watchdog_disarm();
}

static void test_start_fails_cleanly(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    redis_fixture *untouched = (redis_fixture *)&untouched;

    fprintf(stderr, "fixture_selftest: a failing start is expected below\n");
    const char *const bad[] = {"--no-such-option", "1", NULL};
    redis_fixture_opts o = {.extra_args = bad};
    assert_int_equal(redis_fixture_start(&o, &untouched), -1);
    assert_ptr_equal(untouched, (redis_fixture *)&untouched);

    const char *old = getenv("DLOCK_REDIS_SERVER");
    char *saved = old ? strdup(old) : NULL;
    setenv("DLOCK_REDIS_SERVER", "/nonexistent/redis-server", 1);
    assert_int_equal(redis_fixture_start(NULL, &untouched), -1);
    assert_ptr_equal(untouched, (redis_fixture *)&untouched);
    if (saved) {
        setenv("DLOCK_REDIS_SERVER", saved, 1);
        free(saved);
    } else {
        unsetenv("DLOCK_REDIS_SERVER");
    }
    redis_fixture_stop(NULL);
    test_watchdog_disarm();
}

/* ---- restart, kill, pause ----------------------------------------------------------------- */

static void test_restart_loses_data_without_appendonly(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    redis_fixture_opts o = {.tcp = true};
    redis_fixture *f = start_or_fail(&o);
    pid_t old_pid = redis_fixture_pid(f);
    char sock[128];
    snprintf(sock, sizeof sock, "%s", redis_fixture_socket(f));
    int port = redis_fixture_port(f);
    assert_int_equal(redis_fixture_int(f, "INCR volatile"), 1);

    assert_int_equal(redis_fixture_restart(f), 0);
    assert_true(redis_fixture_pid(f) != old_pid);
    assert_process_gone(old_pid);
    assert_string_equal(redis_fixture_socket(f), sock);
    assert_int_equal(redis_fixture_port(f), port);
    assert_str_reply(f, NULL, "GET %s", "volatile");

    redisContext *c = redisConnect("127.0.0.1", port); /* same TCP address too */
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    redisReply *r = redisCommand(c, "PING");
    assert_non_null(r);
    freeReplyObject(r);
    redisFree(c);
    redis_fixture_stop(f);
    test_watchdog_disarm();
}

static void test_restart_keeps_data_with_appendonly(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    redis_fixture_opts o = {.appendonly = true};
    redis_fixture *f = start_or_fail(&o);
    assert_int_equal(redis_fixture_info_int(f, "persistence", "aof_enabled"), 1);
    for (int i = 0; i < 100; i++)
        assert_int_equal(redis_fixture_int(f, "INCR durable"), i + 1);
    /* SIGKILL: only what was fsynced before each reply survives */
    assert_int_equal(redis_fixture_restart(f), 0);
    assert_int_equal(redis_fixture_int(f, "GET durable"), 100);
    redis_fixture_stop(f);
    test_watchdog_disarm();
}

static void test_kill_then_restart_brings_server_back(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    redis_fixture *f = start_or_fail(NULL);
    pid_t pid = redis_fixture_pid(f);
    assert_int_equal(redis_fixture_kill(f), 0);
    assert_false(redis_fixture_running(f));
    assert_int_equal(redis_fixture_pid(f), pid);
    errno = 0;
    assert_int_equal(kill(pid, 0), -1); /* reaped, not a zombie */
    assert_int_equal(errno, ESRCH);
    assert_int_equal(redis_fixture_kill(f), -1);
    assert_int_equal(redis_fixture_pause(f), -1);

    fprintf(stderr, "fixture_selftest: an unreachable-server message is expected below\n");
    assert_null(redis_fixture_cmd(f, "PING"));
    assert_true(redis_fixture_int(f, "DBSIZE") == LLONG_MIN);
    assert_int_equal(redis_fixture_info_int(f, "stats", "total_commands_processed"), -1);

    assert_int_equal(redis_fixture_restart(f), 0);
    assert_true(redis_fixture_running(f));
    assert_int_equal(redis_fixture_int(f, "DBSIZE"), 0);
    redis_fixture_stop(f);
    test_watchdog_disarm();
}

/* hiredis 0.14 applies the *WithTimeout value to connect() only; replies wait forever unless
 * redisSetTimeout() is called. A paused server's socket still completes connects (the kernel
 * fills the listen backlog), so the timeout that trips is the reply timeout. */
static void expect_stalled(redisContext *c, const char *what) {
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    struct timeval tv = {0, 200000};
    assert_int_equal(redisSetTimeout(c, tv), REDIS_OK);
    int64_t t0 = test_now_ms();
    redisReply *r = redisCommand(c, "PING");
    int64_t elapsed = test_now_ms() - t0;
    print_message("paused server over %s: connect succeeded, PING failed after %lld ms (%s)\n",
                  what, (long long)elapsed, c->errstr);
    assert_null(r);
    assert_int_equal(c->err, REDIS_ERR_IO);
    assert_in_range(elapsed, 150, 2000);
    redisFree(c);
}

static void test_pause_stalls_clients_and_resume_revives(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    redis_fixture_opts o = {.tcp = true};
    redis_fixture *f = start_or_fail(&o);
    assert_int_equal(redis_fixture_pause(f), 0);
    struct timeval tv = {0, 200000};
    expect_stalled(redisConnectUnixWithTimeout(redis_fixture_socket(f), tv), "unix");
    expect_stalled(redisConnectWithTimeout("127.0.0.1", redis_fixture_port(f), tv), "tcp");

    assert_int_equal(redis_fixture_resume(f), 0);
    redisContext *c = redisConnectUnixWithTimeout(redis_fixture_socket(f), tv);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    redisReply *r = redisCommand(c, "PING");
    assert_non_null(r);
    assert_string_equal(r->str, "PONG");
    freeReplyObject(r);
    redisFree(c);

    /* restart works on a paused server too */
    assert_int_equal(redis_fixture_int(f, "INCR before"), 1);
    assert_int_equal(redis_fixture_pause(f), 0);
    pid_t old_pid = redis_fixture_pid(f);
    assert_int_equal(redis_fixture_restart(f), 0);
    assert_process_gone(old_pid);
    assert_str_reply(f, NULL, "GET %s", "before");
    redis_fixture_stop(f);
    test_watchdog_disarm();
}

/* ---- CLIENT KILL -------------------------------------------------------------------------- */

static void test_client_kill_type_spares_admin_connection(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    redis_fixture *f = start_or_fail(NULL);
    assert_int_equal(redis_fixture_int(f, "INCR n"), 1);

    redisContext *normal = redisConnectUnix(redis_fixture_socket(f));
    assert_non_null(normal);
    redisReply *r = redisCommand(normal, "PING");
    assert_non_null(r);
    freeReplyObject(r);
    redisContext *sub = redisConnectUnix(redis_fixture_socket(f));
    assert_non_null(sub);
    r = redisCommand(sub, "SUBSCRIBE chan");
    assert_non_null(r);
    freeReplyObject(r);

    assert_int_equal(redis_fixture_client_kill_type(f, "pubsub"), 1);
    assert_int_equal(redis_fixture_client_kill_type(f, "normal"), 1);
    void *lost = NULL; /* read, not write: writing to a closed unix socket raises SIGPIPE */
    assert_int_equal(redisGetReply(normal, &lost), REDIS_ERR);
    assert_int_equal(normal->err, REDIS_ERR_EOF);
    assert_int_equal(redis_fixture_int(f, "INCR n"), 2);
    assert_int_equal(redis_fixture_client_kill_type(f, "normal"), 0);
    assert_int_equal(redis_fixture_client_kill_type(f, "no-such-type"), -1);
    redisFree(normal);
    redisFree(sub);

    /* Even when the admin connection itself is killed, the next command reconnects. */
    long long killed = redis_fixture_int(f, "CLIENT KILL TYPE normal SKIPME no");
    assert_int_equal(killed, 1);
    assert_int_equal(redis_fixture_int(f, "INCR n"), 3);
    r = redis_fixture_cmd(f, "CLIENT KILL TYPE normal SKIPME no");
    assert_non_null(r);
    freeReplyObject(r);
    assert_int_equal(redis_fixture_client_kill_type(f, "normal"), 0);
    assert_int_equal(redis_fixture_int(f, "INCR n"), 4);

    /* Redis closes a self-killed connection just after the reply: the next command often
     * races the close and meets ECONNRESET, and must be re-sent on a fresh connection. */
    long rounds = test_scaled(300);
    for (long i = 0; i < rounds; i++) {
        assert_int_equal(redis_fixture_int(f, "CLIENT KILL TYPE normal SKIPME no"), 1);
        assert_int_equal(redis_fixture_int(f, "INCR n"), 5 + i);
    }
    redis_fixture_stop(f);
    test_watchdog_disarm();
}

/* ---- stop and the no-server-left-behind guarantees ---------------------------------------- */

static void test_stop_removes_dir_and_process(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    redis_fixture_opts o = {.appendonly = true, .tcp = true};
    redis_fixture *f = start_or_fail(&o);
    pid_t pid = redis_fixture_pid(f);
    char dir[64];
    snprintf(dir, sizeof dir, "%s", redis_fixture_dir(f));
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    redis_fixture_stop(f);
    assert_dir_gone(dir);
    errno = 0;
    assert_int_equal(kill(pid, 0), -1);
    assert_int_equal(errno, ESRCH);

    f = start_or_fail(NULL); /* stop of a paused server does not wait out the grace time */
    pid = redis_fixture_pid(f);
    assert_int_equal(redis_fixture_pause(f), 0);
    int64_t t0 = test_now_ms();
    redis_fixture_stop(f);
    assert_true(test_now_ms() - t0 < 1500);
    errno = 0;
    assert_int_equal(kill(pid, 0), -1);
    assert_int_equal(errno, ESRCH);
    test_watchdog_disarm();
}

struct thread_start {
    redis_fixture *f;
    int rc;
};

static void *start_in_thread(void *arg) {
    struct thread_start *ts = arg;
    ts->rc = redis_fixture_start(NULL, &ts->f);
    return NULL;
}

static void *restart_in_thread(void *arg) {
    struct thread_start *ts = arg;
    ts->rc = redis_fixture_restart(ts->f);
    return NULL;
}

/* PR_SET_PDEATHSIG follows the forking thread: the fixture must not die with a thread. */
static void test_server_outlives_the_thread_that_started_it(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    struct thread_start ts = {NULL, -1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, start_in_thread, &ts), 0);
    pthread_join(t, NULL);
    assert_int_equal(ts.rc, 0);
    assert_int_equal(pthread_create(&t, NULL, restart_in_thread, &ts), 0);
    pthread_join(t, NULL);
    assert_int_equal(ts.rc, 0);
    test_sleep_ms(200);
    assert_true(redis_fixture_running(ts.f));
    assert_int_equal(kill(redis_fixture_pid(ts.f), 0), 0);
    assert_int_equal(redis_fixture_int(ts.f, "INCR alive"), 1);
    redis_fixture_stop(ts.f);
    test_watchdog_disarm();
}

enum child_ending { END_ABORT, END_SIGKILL, END_EXIT, END_SEGV };

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
    (void)sb;
    (void)type;
    (void)ftw;
    remove(path);
    return 0;
}

/* A crashed test keeps its directory (the log is the evidence); we don't want the litter. */
static void remove_tree(const char *dir) {
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A child process starts a fixture, reports its pid and dir, then ends as told. Its stderr
 * tells which mechanism killed the server: the fatal-signal handler and the atexit handler
 * say so, PR_SET_PDEATHSIG (the only one left after SIGKILL) is silent. */
static void run_child_and_check_cleanup(enum child_ending ending) {
    int report[2], err[2];
    assert_int_equal(pipe(report), 0);
    assert_int_equal(pipe(err), 0);
    pid_t child = fork_child();
    if (child == 0) {
        close(report[0]);
        close(err[0]);
        dup2(err[1], STDERR_FILENO);
        close(err[1]);
        /* cmocka's SIGSEGV handler would longjmp this child back into the test runner */
        signal(SIGSEGV, SIG_DFL);
        redis_fixture *f = NULL;
        if (redis_fixture_start(NULL, &f) != 0)
            _exit(2);
        send_report(report[1], f);
        close(report[1]);
        switch (ending) {
        case END_ABORT:
            abort();
        case END_SEGV:
            raise(SIGSEGV);
            _exit(4);
        case END_EXIT:
            exit(0); /* without redis_fixture_stop(): atexit cleans up */
        case END_SIGKILL:
            for (;;)
                pause();
        }
        _exit(5);
    }
    close(report[1]);
    close(err[1]);
    struct child_report rep;
    read_report(report[0], &rep);
    close(report[0]);
    if (ending == END_SIGKILL)
        kill(child, SIGKILL);
    char text[4096];
    read_all(err[0], text, sizeof text);
    close(err[0]);
    int status = wait_child(child);
    char killed_by_handler[64];
    snprintf(killed_by_handler, sizeof killed_by_handler, "killed server %d, log",
             (int)rep.server_pid);
    switch (ending) {
    case END_ABORT:
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
        assert_non_null(strstr(text, killed_by_handler));
        break;
    case END_SEGV:
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
        assert_non_null(strstr(text, killed_by_handler));
        break;
    case END_SIGKILL:
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        assert_null(strstr(text, "killed"));
        break;
    case END_EXIT:
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_non_null(strstr(text, "still running at exit; killed"));
        assert_dir_gone(rep.dir);
        break;
    }
    assert_process_gone(rep.server_pid);
    remove_tree(rep.dir);
}

static void test_aborting_child_leaves_no_server(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    run_child_and_check_cleanup(END_ABORT);
    test_watchdog_disarm();
}

static void test_segfaulting_child_leaves_no_server(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    run_child_and_check_cleanup(END_SEGV);
    test_watchdog_disarm();
}

static void test_sigkilled_child_leaves_no_server(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    run_child_and_check_cleanup(END_SIGKILL);
    test_watchdog_disarm();
}

static void test_child_exiting_without_stop_leaves_no_server(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    run_child_and_check_cleanup(END_EXIT);
    test_watchdog_disarm();
}

/* Workers forked by a test inherit the registry; their deaths must not touch our servers,
 * and they may use our fixture's commands on a connection of their own. */
static void test_forked_child_never_kills_parent_servers(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    redis_fixture *f = start_or_fail(NULL);
    assert_int_equal(redis_fixture_int(f, "INCR parent"), 1);

    pid_t child = fork_child();
    if (child == 0) {
        bool ok = redis_fixture_int(f, "INCR child") == 1;
        test_child_exit(ok ? 0 : 1);
    }
    int status = wait_child(child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(redis_fixture_int(f, "INCR parent"), 2); /* our connection is intact */

    const int endings[] = {SIGABRT, SIGTERM, 0};
    for (size_t i = 0; i < sizeof endings / sizeof endings[0]; i++) {
        child = fork_child();
        if (child == 0) {
            if (endings[i] == 0)
                exit(0); /* runs the inherited atexit handlers */
            raise(endings[i]);
            _exit(9);
        }
        wait_child(child);
        assert_int_equal(kill(redis_fixture_pid(f), 0), 0);
        assert_int_equal(redis_fixture_int(f, "GET child"), 1);
    }
    redis_fixture_stop(f);
    test_watchdog_disarm();
}

/* ---- watchdog ----------------------------------------------------------------------------- */

/* The watchdog _exit(1)s with its helper threads still running; memcheck reports their TLS
 * as possibly lost and makes the status its --error-exitcode (99 in our runs). */
static void assert_watchdog_status(int status) {
    assert_true(WIFEXITED(status));
    int code = WEXITSTATUS(status);
    if (test_under_valgrind() && code == 99)
        return;
    assert_int_equal(code, 1);
}

static void test_watchdog_kills_a_hanging_test(void **state) {
    (void)state;
    int64_t budget_ms = test_slack_ms(1000);
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    int report[2], err[2];
    assert_int_equal(pipe(report), 0);
    assert_int_equal(pipe(err), 0);
    pid_t child = fork_child();
    if (child == 0) {
        close(report[0]);
        close(err[0]);
        dup2(err[1], STDERR_FILENO);
        close(err[1]);
        redis_fixture *f = NULL;
        if (redis_fixture_start(NULL, &f) != 0)
            _exit(2);
        send_report(report[1], f);
        test_watchdog_arm(1, "hanging test");
        test_sleep_ms(60000);
        _exit(0);
    }
    close(report[1]);
    close(err[1]);
    struct child_report rep;
    read_report(report[0], &rep);
    close(report[0]);
    int64_t t0 = test_now_ms();
    char text[4096];
    read_all(err[0], text, sizeof text);
    close(err[0]);
    int status = wait_child(child);
    int64_t elapsed = test_now_ms() - t0;
    print_message("watchdog fired after %lld ms (budget %lld ms): %s", (long long)elapsed,
                  (long long)budget_ms, text);
    assert_watchdog_status(status);
    assert_in_range(elapsed, budget_ms - 300, budget_ms + test_slack_ms(1000));
    char expected[128];
    snprintf(expected, sizeof expected,
             "TEST HANG: hanging test did not finish within %.1f s (1 s x%g slack)\n",
             (double)budget_ms / 1000.0, test_slack_factor());
    assert_non_null(strstr(text, expected));
    assert_process_gone(rep.server_pid);
    remove_tree(rep.dir);
    test_watchdog_disarm();
}

static void test_watchdog_rearm_and_disarm(void **state) {
    (void)state;
    test_watchdog_arm(TEST_BUDGET_S, __func__);
    /* disarm in time: the child lives on and exits 0 */
    pid_t child = fork_child();
    if (child == 0) {
        test_watchdog_arm_exact_ms(300, "disarmed");
        test_watchdog_disarm();
        test_sleep_ms(600);
        test_child_exit(0);
    }
    int status = wait_child(child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* arming again replaces the deadline, earlier as well as later */
    int64_t t0 = test_now_ms();
    child = fork_child();
    if (child == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, STDERR_FILENO);
        test_watchdog_arm_exact_ms(20000, "long");
        test_watchdog_arm_exact_ms(300, "short");
        test_sleep_ms(20000);
        _exit(0);
    }
    status = wait_child(child);
    int64_t elapsed = test_now_ms() - t0;
    assert_watchdog_status(status);
    assert_in_range(elapsed, 250, test_under_valgrind() ? 5000 : 1500);

    t0 = test_now_ms();
    child = fork_child();
    if (child == 0) {
        test_watchdog_arm_exact_ms(200, "extended");
        test_watchdog_arm_exact_ms(800, "extended");
        test_sleep_ms(500); /* past the first deadline, inside the second */
        test_watchdog_disarm();
        test_child_exit(0);
    }
    status = wait_child(child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    test_watchdog_disarm();
}

/* ---- test_util ---------------------------------------------------------------------------- */

static void test_scale_reads_environment(void **state) {
    (void)state;
    const char *old = getenv("DLOCK_TEST_SCALE");
    char *saved = old ? strdup(old) : NULL;
    const char *old_preload = getenv("LD_PRELOAD");
    bool on_valgrind = old_preload != NULL && strstr(old_preload, "vgpreload") != NULL;

    unsetenv("DLOCK_TEST_SCALE");
    assert_true(test_scale() == 1.0);
    assert_int_equal(test_scaled(1000), 1000);
    assert_true(test_under_valgrind() == on_valgrind);

    setenv("DLOCK_TEST_SCALE", "0.05", 1);
    assert_true(test_scale() == 0.05);
    assert_int_equal(test_scaled(1000), 50);
    assert_int_equal(test_scaled(10), 1);
    assert_int_equal(test_scaled(0), 1);
    assert_true(test_under_valgrind());

    const char *invalid[] = {"abc", "0", "-0.5", "2", "0.5x", ""};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        setenv("DLOCK_TEST_SCALE", invalid[i], 1);
        assert_true(test_scale() == 1.0);
    }
    if (saved) {
        setenv("DLOCK_TEST_SCALE", saved, 1);
        free(saved);
    } else {
        unsetenv("DLOCK_TEST_SCALE");
    }
}

static void test_clock_and_sleep(void **state) {
    (void)state;
    int64_t ms0 = test_now_ms(), us0 = test_now_us();
    test_sleep_ms(50);
    int64_t slept_ms = test_now_ms() - ms0, slept_us = test_now_us() - us0;
    assert_in_range(slept_ms, 50, 1000);
    assert_in_range(slept_us, 50000, 1000000);
    int64_t t0 = test_now_ms();
    test_sleep_ms(0);
    test_sleep_ms(-5);
    assert_true(test_now_ms() - t0 < 20);
}

int main(void) {
    /* Orphaned servers of crashed children come to us, so we can watch them die. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        perror("prctl(PR_SET_CHILD_SUBREAPER)");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_fixture_serves_set_and_get),
        cmocka_unit_test(test_tcp_fixture_listens_on_loopback_port),
        cmocka_unit_test(test_cmd_argv_is_binary_safe),
        cmocka_unit_test(test_info_int_reads_stats_and_commandstats),
        cmocka_unit_test(test_cmd_is_usable_from_several_threads),
        cmocka_unit_test(test_requirepass_is_used_by_admin_connection_and_urls),
        cmocka_unit_test(test_extra_args_reach_the_server),
        cmocka_unit_test(test_start_fails_cleanly),
        cmocka_unit_test(test_restart_loses_data_without_appendonly),
        cmocka_unit_test(test_restart_keeps_data_with_appendonly),
        cmocka_unit_test(test_kill_then_restart_brings_server_back),
        cmocka_unit_test(test_pause_stalls_clients_and_resume_revives),
        cmocka_unit_test(test_client_kill_type_spares_admin_connection),
        cmocka_unit_test(test_stop_removes_dir_and_process),
        cmocka_unit_test(test_server_outlives_the_thread_that_started_it),
        cmocka_unit_test(test_aborting_child_leaves_no_server),
        cmocka_unit_test(test_segfaulting_child_leaves_no_server),
        cmocka_unit_test(test_sigkilled_child_leaves_no_server),
        cmocka_unit_test(test_child_exiting_without_stop_leaves_no_server),
        cmocka_unit_test(test_forked_child_never_kills_parent_servers),
        cmocka_unit_test(test_watchdog_kills_a_hanging_test),
        cmocka_unit_test(test_watchdog_rearm_and_disarm),
        cmocka_unit_test(test_scale_reads_environment),
        cmocka_unit_test(test_clock_and_sleep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
