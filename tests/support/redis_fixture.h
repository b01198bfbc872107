/* SPDX-License-Identifier: MIT */
/* redis_fixture.h - a private redis-server per test, started, controlled and reaped by pid.
 *
 * Every test label except `unit` gets its Redis from here: a fresh redis-server in its own
 * /tmp/dlock-test-XXXXXX directory, on a unix socket (and, on request, a free loopback TCP
 * port), with persistence off unless asked for. No test ever talks to a server it did not
 * start, or to port 6379.
 *
 * Servers never outlive the test process: each one is forked from a helper thread that lives
 * as long as the process and carries PR_SET_PDEATHSIG=SIGKILL, and a process-wide registry
 * lets an atexit handler, the fatal-signal handlers (SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL,
 * SIGTERM, SIGINT, SIGQUIT, SIGHUP) and the test watchdog (test_util.h) kill them all.
 * A forked child of a test inherits the registry but never kills its parent's servers.
 *
 * The fixture also keeps one synchronous hiredis "admin" connection to the unix socket for
 * reading state back and injecting faults (CLIENT KILL, SCRIPT FLUSH, DEBUG SLEEP, CONFIG
 * SET). It reconnects by itself after a restart or after being killed.
 *
 * Threads: the redis_fixture_cmd* / _int / _str / _info_int / _client_kill_type calls may be
 * made from several threads at once (they take turns on the admin connection), and pause,
 * resume and pid may be called while another thread is blocked in a command. start, stop,
 * restart and kill of one fixture must not race with each other. Only the process that
 * started a fixture may stop, restart, kill, pause or resume it; a forked child may use the
 * command calls (it opens its own admin connection).
 */
#ifndef DLOCK_TEST_REDIS_FIXTURE_H
#define DLOCK_TEST_REDIS_FIXTURE_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct redis_fixture redis_fixture;

typedef struct redis_fixture_opts {
    /* Also listen on a free 127.0.0.1 port (default: unix socket only, --port 0). */
    bool tcp;
    /* --requirepass; NULL or "": no password. The admin connection AUTHs with it. */
    const char *requirepass;
    /* true: --appendonly yes --appendfsync always, so acknowledged writes survive
     * redis_fixture_restart(); default: --save '' --appendonly no. */
    bool appendonly;
    /* NULL-terminated words appended to the command line as they are, e.g.
     * {"--user", "alice", "on", ">pw", "~*", "+@all", NULL}. NULL: none. */
    const char *const *extra_args;
} redis_fixture_opts;

/* Start a server. `o` NULL means defaults. Besides the options above the server always gets
 * --protected-mode no and --enable-debug-command yes (Redis 7 refuses DEBUG otherwise).
 * Waits until PING answers on the unix socket (up to 5 s). The server binary is
 * $DLOCK_REDIS_SERVER, else `redis-server` from PATH.
 * Returns 0 and the fixture in *out, or -1 with a message (and the tail of redis.log) on
 * stderr, leaving *out untouched. */
int redis_fixture_start(const redis_fixture_opts *o, redis_fixture **out);

/* SIGTERM (then SIGCONT, so a paused server can act on it), wait up to 2 s, SIGKILL, reap;
 * remove the temp directory and free `f`. NULL is a no-op. */
void redis_fixture_stop(redis_fixture *f);

/* SIGKILL the server (no save on the way out; works while paused) and start it again with
 * the same options on the same socket path and port; wait until it answers PING (with
 * appendonly, until it has loaded its data). Works after redis_fixture_kill() too.
 * Returns 0 or -1 with a message on stderr. */
int redis_fixture_restart(redis_fixture *f);

/* SIGKILL and reap the server; keep the directory so that restart() can bring it back.
 * Returns 0, or -1 if no server was running. */
int redis_fixture_kill(redis_fixture *f);

/* SIGSTOP / SIGCONT the server and wait until the kernel reports it stopped / running.
 * A paused server still accepts connections into the listen backlog but answers nothing.
 * Returns 0, or -1 if no server is running. */
int redis_fixture_pause(redis_fixture *f);
int redis_fixture_resume(redis_fixture *f);

/* Pid of the current server process; after redis_fixture_kill() the pid of the last one
 * (never 0 or -1, which kill(2) would read as "my process group" / "everyone"). */
pid_t redis_fixture_pid(const redis_fixture *f);
/* true while a server process is up (possibly paused). */
bool redis_fixture_running(const redis_fixture *f);

/* "/tmp/dlock-test-XXXXXX/redis.sock". Owned by `f`. */
const char *redis_fixture_socket(const redis_fixture *f);
/* The TCP port, 0 unless opts.tcp. */
int redis_fixture_port(const redis_fixture *f);
/* The temp directory (holds redis.sock, redis.log and any persistence files). */
const char *redis_fixture_dir(const redis_fixture *f);
/* "unix:///tmp/dlock-test-XXXXXX/redis.sock", plus "?password=PW" with requirepass.
 * Characters of PW outside [A-Za-z0-9-._~] are percent-encoded. Owned by `f`. */
const char *redis_fixture_unix_url(const redis_fixture *f);
/* "redis://127.0.0.1:PORT" or "redis://:PW@127.0.0.1:PORT" with requirepass (PW encoded as
 * above); NULL unless opts.tcp. Owned by `f`. */
const char *redis_fixture_tcp_url(const redis_fixture *f);

/* Run an admin command (hiredis redisCommand format) on the admin connection. A broken
 * connection is re-opened (and re-AUTHed) first; a command whose connection dies under it
 * is sent once more on a fresh one. Replies have no timeout below 60 s, so a command sent to
 * a paused server waits for resume (or the test watchdog).
 * Returns a reply the caller frees with freeReplyObject (error replies included), or NULL
 * if the server can't be reached (message on stderr). */
redisReply *redis_fixture_cmd(redis_fixture *f, const char *fmt, ...);
redisReply *redis_fixture_cmd_argv(redis_fixture *f, int argc, const char **argv,
                                   const size_t *argvlen);

/* Integer reply, or a string/status reply that is entirely a decimal integer.
 * LLONG_MIN on nil, error (printed on stderr), unreachable server or anything else. */
long long redis_fixture_int(redis_fixture *f, const char *fmt, ...);

/* malloc'd copy of a string or status reply (an integer reply is formatted in decimal);
 * the caller frees it. NULL on nil, error (printed on stderr) or unreachable server. */
char *redis_fixture_str(redis_fixture *f, const char *fmt, ...);

/* An integer field of INFO `section`: ("stats", "total_commands_processed") reads
 * "total_commands_processed:123". "NAME.KEY" reads KEY out of a "NAME:k=v,k=v" line:
 * ("commandstats", "cmdstat_evalsha.calls"), ("keyspace", "db0.keys").
 * Returns the value, 0 if the field is absent (e.g. a command never called), -1 on error
 * (unreachable server, error reply, value not an integer). */
long long redis_fixture_info_int(redis_fixture *f, const char *section, const char *field);

/* CLIENT KILL TYPE `type` SKIPME yes (type: normal, pubsub, replica, master).
 * Returns the number of connections killed, or -1. The admin connection is skipped, so it is
 * not counted; should it ever be killed (e.g. by a raw CLIENT KILL ... SKIPME no through
 * redis_fixture_cmd) the next command reconnects. */
int redis_fixture_client_kill_type(redis_fixture *f, const char *type);

/* SIGKILL every server started by this process and not yet stopped, without reaping or
 * waiting, and say so on stderr (the directories stay: their redis.log tells what
 * happened). Async-signal-safe and lock-free: for crash handlers and the test watchdog. */
void redis_fixture_kill_all(void);

/* What exit() does through atexit, callable before _exit() in a forked child (see
 * test_child_exit()): kill and reap the servers this process still runs (with a note on
 * stderr) and remove their directories, close every admin connection this process opened,
 * and join the helper thread. Fixtures stay valid for redis_fixture_stop(); a later start
 * works. Idempotent; must not race with other redis_fixture calls. */
void redis_fixture_cleanup_process(void);

#endif /* DLOCK_TEST_REDIS_FIXTURE_H */
