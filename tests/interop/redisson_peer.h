/* SPDX-License-Identifier: MIT */
/* redisson_peer.h — the real Redisson client (redisson-cli) as a peer of a dlock test.
 *
 * $DLOCK_REDISSON_CLI names the launcher of the Redisson 3.52.0 command-line client (its
 * README: every subcommand, the output lines "<epoch_ms> <tag> <event> key=value ..." and
 * the exit codes). Without it, or if it is not executable, every interop program prints
 * why and exits REDISSON_SKIPPED, which ctest reports as skipped. A peer is one JVM process started
 * with posix_spawn on the fixture's TCP port (Redisson cannot use unix sockets here), its stdout in
 * a file of the fixture's directory that the test polls; it is killed and reaped by its pid when
 * the test ends.
 *
 * Only the interop programs include this header; the functions are static inline so each
 * program takes what it uses. */
#ifndef DLOCK_TEST_REDISSON_PEER_H
#define DLOCK_TEST_REDISSON_PEER_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

extern char **environ;

#define PEER_ARGS_MAX 24

/* What a peer's first line may take beyond the scene's own times: a JVM's start and
 * Redisson's connect, on a machine busy with other tests (several JVMs start at once under
 * ctest -j; 15 s was seen missed). Only a peer that never prints fails on it, so it can be
 * this long and still prove what the line proves. */
#define RJ_START_MS 30000

typedef struct rj_peer {
    pid_t pid;
    char tag[32];
    char log[512];
    int status; /* exit status once reaped, -1 before */
} rj_peer;

/* The launcher, or NULL with the reason in why. */
static inline const char *redisson_cli(char *why, size_t size) {
    const char *cli = getenv("DLOCK_REDISSON_CLI");
    if (!cli || !cli[0]) {
        snprintf(why, size, "DLOCK_REDISSON_CLI is not set (the Redisson 3.52.0 client)");
        return NULL;
    }
    if (access(cli, X_OK) != 0) {
        snprintf(why, size, "DLOCK_REDISSON_CLI=%s is not executable: %s", cli, strerror(errno));
        return NULL;
    }
    return cli;
}

/* The exit status of a program that did not run: ctest reports it as skipped, not passed
 * (SKIP_RETURN_CODE of the interop tests, tests/CMakeLists.txt). */
#define REDISSON_SKIPPED 77

/* For main(): true, having printed why, when the Redisson client is not there; main then
 * returns REDISSON_SKIPPED before any test runs. */
static inline bool redisson_absent(void) {
    char why[512];
    if (redisson_cli(why, sizeof(why)))
        return false;
    printf("skipped: %s; set it to the redisson-cli launcher (README, \"Redisson interop "
           "tests\")\n",
           why);
    return true;
}

/* Skips the running test (cmocka skip()) unless the Redisson client is there. */
#define SKIP_WITHOUT_REDISSON()                                                                    \
    do {                                                                                           \
        char why_[512];                                                                            \
        if (!redisson_cli(why_, sizeof(why_))) {                                                   \
            printf("# skipped: %s\n", why_);                                                       \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* A server with a TCP port for the Java peers. */
static inline redis_fixture *start_tcp_server(void) {
    redis_fixture_opts o = {.tcp = true};
    redis_fixture *f = NULL;
    if (redis_fixture_start(&o, &f) != 0)
        fail_msg("redis-server did not start");
    return f;
}

/* Starts `redisson-cli WHERE... --tag TAG [--watchdog MS] ARGS...`, its output in
 * DIR/java-TAG.log (where: the server or topology options, args: the command; both
 * NULL-terminated; watchdog_ms 0: Redisson's default). */
static inline void rj_start_at(rj_peer *p, const char *dir, const char *tag, int64_t watchdog_ms,
                               const char *const *where, const char *const *args) {
    char why[512], watchdog[24];
    const char *cli = redisson_cli(why, sizeof(why));
    assert_non_null(cli);
    memset(p, 0, sizeof(*p));
    p->status = -1;
    snprintf(p->tag, sizeof(p->tag), "%s", tag);
    snprintf(p->log, sizeof(p->log), "%s/java-%s.log", dir, tag);
    snprintf(watchdog, sizeof(watchdog), "%lld", (long long)watchdog_ms);
    const char *argv[PEER_ARGS_MAX] = {cli};
    int n = 1;
    for (; *where && n < PEER_ARGS_MAX - 1; where++)
        argv[n++] = *where;
    argv[n++] = "--tag";
    argv[n++] = tag;
    if (watchdog_ms > 0) {
        argv[n++] = "--watchdog";
        argv[n++] = watchdog;
    }
    for (; *args && n < PEER_ARGS_MAX - 1; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, p->log, O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    char errlog[600];
    snprintf(errlog, sizeof(errlog), "%s.err", p->log);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, errlog, O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    int rc = posix_spawn(&p->pid, cli, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        fail_msg("posix_spawn %s: %s", cli, strerror(rc));
}

/* The same on one server, the fixture's TCP port (`--port P`). */
static inline void rj_start(rj_peer *p, redis_fixture *f, const char *tag, int64_t watchdog_ms,
                            const char *const *args) {
    char port[16];
    snprintf(port, sizeof(port), "%d", redis_fixture_port(f));
    rj_start_at(p, redis_fixture_dir(f), tag, watchdog_ms,
                (const char *const[]){"--port", port, NULL}, args);
}

/* The first line of p's output that has " <tag> <event>", copied to line; false if none. */
static inline bool rj_find(const rj_peer *p, const char *event, char *line, size_t size) {
    FILE *in = fopen(p->log, "r");
    if (!in)
        return false;
    char want[96], buf[1024];
    snprintf(want, sizeof(want), " %s %s", p->tag, event);
    bool found = false;
    while (!found && fgets(buf, sizeof(buf), in)) {
        char *at = strstr(buf, want);
        size_t n = strlen(want);
        if (at && (at[n] == ' ' || at[n] == '\n' || at[n] == '\0')) {
            snprintf(line, size, "%s", buf);
            found = true;
        }
    }
    fclose(in);
    return found;
}

/* Reaps p if it has ended; true then. */
static inline bool rj_ended(rj_peer *p) {
    if (p->status >= 0)
        return true;
    int st = 0;
    if (waitpid(p->pid, &st, WNOHANG) != p->pid)
        return false;
    p->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return true;
}

/* Waits up to timeout_ms for p's line with event; fails the test (with the peer's log)
 * if it does not come. */
static inline void rj_wait_line(rj_peer *p, const char *event, int64_t timeout_ms, char *line,
                                size_t size) {
    int64_t until = test_now_ms() + timeout_ms;
    while (!rj_find(p, event, line, size)) {
        if (test_now_ms() >= until || rj_ended(p)) {
            if (rj_find(p, event, line, size))
                return;
            fail_msg("Redisson peer %s: no \"%s\" within %lld ms (exit %d; see %s)", p->tag, event,
                     (long long)timeout_ms, p->status, p->log);
        }
        test_sleep_ms(5);
    }
}

/* Waits up to timeout_ms for p to exit; its exit status. Fails the test if it runs on. */
static inline int rj_wait_exit(rj_peer *p, int64_t timeout_ms) {
    int64_t until = test_now_ms() + timeout_ms;
    while (!rj_ended(p)) {
        if (test_now_ms() >= until)
            fail_msg("Redisson peer %s still runs after %lld ms (see %s)", p->tag,
                     (long long)timeout_ms, p->log);
        test_sleep_ms(5);
    }
    return p->status;
}

/* Ends p if it still runs (a failed test) and reaps it. */
static inline void rj_stop(rj_peer *p) {
    if (p->pid > 0 && !rj_ended(p)) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
        p->status = 137;
    }
}

/* The value of " key=" in line as a long long; fails the test if absent. */
static inline long long rj_value(const char *line, const char *key) {
    char want[64];
    snprintf(want, sizeof(want), " %s=", key);
    const char *at = strstr(line, want);
    if (!at)
        fail_msg("no %s= in: %s", key, line);
    return atoll(at + strlen(want));
}

/* The string value of " key=" (up to a space) into out. */
static inline void rj_string(const char *line, const char *key, char *out, size_t size) {
    char want[64];
    snprintf(want, sizeof(want), " %s=", key);
    const char *at = strstr(line, want);
    if (!at)
        fail_msg("no %s= in: %s", key, line);
    at += strlen(want);
    size_t n = strcspn(at, " \n");
    snprintf(out, size, "%.*s", (int)n, at);
}

/* The line's epoch_ms (its first word). */
static inline long long rj_epoch_ms(const char *line) {
    return atoll(line);
}

/* One round of the `loop` protocol (redisson-cli's README) inside the lock, as `me`, on the
 * keys NAME:holder and NAME:counter of `data`: SET holder NX, a non-atomic read-modify-write
 * of the counter, GET holder is still me, DEL it. Each way it can find another holder
 * inside adds one to *overlaps. */
static inline void rj_round_inside(redis_fixture *data, const char *name, const char *me,
                                   atomic_long *overlaps) {
    char *set = redis_fixture_str(data, "SET %s:holder %s NX", name, me);
    if (!set)
        atomic_fetch_add(overlaps, 1);
    free(set);
    long long v = redis_fixture_int(data, "GET %s:counter", name);
    if (v == LLONG_MIN)
        v = 0;
    freeReplyObject(redis_fixture_cmd(data, "SET %s:counter %lld", name, v + 1));
    char *holder = redis_fixture_str(data, "GET %s:holder", name);
    if (!holder || strcmp(holder, me) != 0)
        atomic_fetch_add(overlaps, 1);
    else
        freeReplyObject(redis_fixture_cmd(data, "DEL %s:holder", name));
    free(holder);
}

/* CLOCK_REALTIME in ms: what the peers' lines are stamped with. */
static inline long long wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
