/* SPDX-License-Identifier: MIT */
/* test_sigpipe_tls.c — a client on the application's own loop (the async face) over TLS,
 * in a process where SIGPIPE has its default disposition (it ends the process), survives
 * its server being killed while its writes go out: OpenSSL's writes to the closed socket
 * fail with EPIPE, the client reconnects, and the calls in flight end with DLOCK_ECONN.
 *
 * How the writes are made to meet a closed socket: the server is idle when it is killed (its
 * close then sends FIN, not a reset), and the kill happens after the loop's poll has said
 * the client's socket is writable but before the client writes. The client then writes
 * several TLS records in one go: the first reaches the dead peer, whose reset makes the
 * next write fail with EPIPE — which raises SIGPIPE unless the write asks for none. libev
 * runs check watchers first on each turn, before the I/O callbacks, and the client's queued
 * calls are written two turns after they are made (one turn starts them, the next writes):
 * the killer is a check watcher on that second turn, and it returns once the server's close
 * has reached the client's socket (POLLRDHUP), after that turn's poll. Each test runs the client in
 * a forked child (test_fork) whose death by a signal the parent reports. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "dlock.h"
#include "dlock/adapters/libev.h"
#include "harness.h"
#include "tls_fixture.h"

#define CALLS 4
#define NAME_BYTES 32768 /* each call carries the name twice: several TLS records each */
#define CHILD_BUDGET_MS 20000

/* ---- the child: the application -------------------------------------------------------- */

typedef struct app {
    struct ev_loop *loop;
    pid_t server_pid;
    int server_port;
    dlock_lock *lock;
    ev_timer start;
    ev_check killer;
    int turns_armed; /* check watcher turns since the calls were made */
    int started, finished, failed;
    bool killed;
} app;

static void on_done(dlock_lock *l, int status, void *arg) {
    (void)l;
    app *a = arg;
    a->finished++;
    a->failed += status != DLOCK_OK;
}

/* The client's connection to the server: the socket of this process connected to port. */
static int socket_to(int port) {
    for (int fd = 0; fd < 1024; fd++) {
        struct sockaddr_in peer;
        socklen_t len = sizeof(peer);
        if (getpeername(fd, (struct sockaddr *)&peer, &len) == 0 && peer.sin_family == AF_INET &&
            ntohs(peer.sin_port) == port)
            return fd;
    }
    return -1;
}

/* Kills the server, and returns once its close (FIN) has reached the client's socket: that
 * socket is then readable, but the loop learns it only on its next poll. */
static void kill_on_the_writing_turn(struct ev_loop *loop, ev_check *w, int revents) {
    (void)revents;
    app *a = w->data;
    if (++a->turns_armed < 2)
        return; /* the calls are being started: nothing queued on the socket yet */
    ev_check_stop(loop, w);
    int fd = socket_to(a->server_port);
    kill(a->server_pid, SIGKILL);
    struct pollfd closed = {.fd = fd, .events = POLLRDHUP};
    a->killed = fd >= 0 && poll(&closed, 1, (int)test_slack_ms(5000)) == 1;
}

static void make_the_calls(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)revents;
    app *a = w->data;
    for (uint64_t owner = 1; owner <= CALLS; owner++)
        a->started += dlock_lock_acquire_async(a->lock, owner, 0, 60000, on_done, a) == DLOCK_OK;
    a->killer.data = a;
    ev_check_start(loop, &a->killer);
}

static bool run_until(app *a, const int *count, int want) {
    int64_t until = test_now_ms() + test_slack_ms(CHILD_BUDGET_MS / 2);
    while (*count < want && test_now_ms() < until)
        ev_run(a->loop, EVRUN_ONCE);
    return *count >= want;
}

/* Exit status: 0 the client survived and every call ended; 2.. a step failed. */
static int application(const char *url, pid_t server_pid, int server_port) {
    signal(SIGPIPE, SIG_DFL); /* what an application that never thought of it has */
    app a = {
        .server_pid = server_pid, .server_port = server_port, .loop = ev_loop_new(EVFLAG_AUTO)};
    test_client_cfg cfg = {.url = url, .timeout_ms = 2000, .connect_timeout_ms = 2000};
    dlock_options o;
    test_client_options(NULL, &cfg, &o);
    dlock_client *c = NULL;
    char *name = malloc(NAME_BYTES + 1);
    if (!a.loop || !name || dlock_client_new_on_loop(&o, a.loop, &c) != DLOCK_OK)
        return 2;
    memset(name, 'n', NAME_BYTES);
    name[NAME_BYTES] = '\0';
    if (dlock_lock_new(c, name, &a.lock) != DLOCK_OK)
        return 3;
    /* connected and idle: one call made and answered */
    a.started = dlock_lock_release_async(a.lock, 99, on_done, &a) == DLOCK_OK;
    if (!run_until(&a, &a.finished, 1))
        return 4;
    a.finished = a.failed = a.started = 0;
    ev_check_init(&a.killer, kill_on_the_writing_turn);
    ev_timer_init(&a.start, make_the_calls, 0.001, 0.);
    a.start.data = &a;
    ev_timer_start(a.loop, &a.start);
    if (!run_until(&a, &a.finished, CALLS) || a.started != CALLS)
        return 5;
    fprintf(stderr, "# %d calls ended, %d failed; the server %s killed while they went out\n",
            a.finished, a.failed, a.killed ? "was" : "was not");
    dlock_lock_free(a.lock);
    dlock_client_free(c);
    ev_loop_destroy(a.loop);
    free(name);
    return a.killed ? 0 : 6;
}

/* ---- the test ---------------------------------------------------------------------------- */

static void
test_async_client_over_tls_survives_writes_to_a_killed_server_without_sigpipe(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    tls_fixture *f;
    assert_int_equal(tls_fixture_start(NULL, &f), 0);
    redis_fixture *server = tls_fixture_server(f);
    fflush(NULL);
    pid_t child = test_fork();
    assert_true(child >= 0);
    if (child == 0)
        test_child_exit(
            application(tls_fixture_url(f), redis_fixture_pid(server), tls_fixture_port(f)));
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    redis_fixture_kill(server); /* reaped: the child killed it */
    tls_fixture_stop(f);
    if (WIFSIGNALED(status))
        fail_msg("the application died of signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) != 0)
        fail_msg("the application failed at step %d", WEXITSTATUS(status));
    test_watchdog_disarm();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_async_client_over_tls_survives_writes_to_a_killed_server_without_sigpipe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
