/* SPDX-License-Identifier: MIT */
/* topology_util.h - what the TLS, Sentinel and Cluster fixtures share beyond redis_fixture.
 *
 * Data nodes (plain, TLS, replicas, cluster nodes) are redis_fixture servers. What
 * redis_fixture cannot start is a process whose config file must come first on its command
 * line: a sentinel (Redis refuses Sentinel mode without a writable config file, and
 * redis_fixture puts its own options first). topo_proc starts such processes with the same
 * guarantees: forked from a helper thread that lives as long as the process, with
 * PR_SET_PDEATHSIG=SIGKILL, in a process group of their own, tracked by pid in a registry
 * that an atexit handler walks to SIGKILL and reap whatever a failed test left running.
 * Temp directories made with topo_tempdir() are removed the same way.
 *
 * Also: a free loopback port, running a tool (openssl, redis-cli) to its end, reading INFO
 * fields, percent-encoding for URLs.
 *
 * Threads: everything may be called from any thread; one topo_proc must not be stopped,
 * killed or signalled from two threads at once. Only the process that started a topo_proc
 * may stop, kill, pause or resume it; a forked child of a test never kills its parent's
 * processes, at exit or otherwise.
 */
#ifndef DLOCK_TEST_TOPOLOGY_UTIL_H
#define DLOCK_TEST_TOPOLOGY_UTIL_H

#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A free 127.0.0.1 TCP port, never 6379 or 26379 (bound once and released: free until
 * someone else binds it, so callers retry a start that fails), or -1. */
int topo_free_port(void);

/* "/tmp/<prefix>-XXXXXX", created 0700 and registered for removal at exit. malloc'd, NULL
 * on failure (message on stderr). topo_tempdir_remove() removes the tree, unregisters it and
 * frees `dir`; NULL is a no-op. */
char *topo_tempdir(const char *prefix);
void topo_tempdir_remove(char *dir);

/* Writes `text` to `path` (created 0600, truncated). 0 or -1 with a message on stderr. */
int topo_write_file(const char *path, const char *text);

/* Full path of an executable found in PATH (or `name` itself if it holds a '/'), malloc'd;
 * NULL with a message on stderr naming `package` to install. */
char *topo_find_exe(const char *name, const char *package);

/* Runs argv[0] (searched in PATH) with stdin from /dev/null and waits for it to end.
 * `output` NULL: stdout and stderr are appended to `log_path` (NULL: /dev/null). Otherwise
 * stdout and stderr are captured into a malloc'd NUL-terminated *output (the caller frees
 * it) and `log_path` is ignored. Returns the exit status (0..255), 128+signal if it was
 * killed, or -1 if it could not be run (message on stderr). No timeout: the test watchdog
 * catches a tool that hangs. */
int topo_run(char *const argv[], const char *log_path, char **output);

/* malloc'd copy of field `name` of INFO text ("master_link_status" reads "up" from
 * "master_link_status:up\r\n"), NULL if absent. */
char *topo_info_field(const char *info, const char *name);

/* Percent-encodes everything outside RFC 3986 "unreserved"; malloc'd. */
char *topo_url_encode(const char *s);

/* asprintf that aborts on out-of-memory. */
char *topo_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A hiredis connection to a unix socket with connect and reply timeouts of `timeout_ms`,
 * AUTHed with `password` when not NULL/"". NULL on failure, with the reason in `why`. */
redisContext *topo_connect_unix(const char *path, const char *password, int timeout_ms, char *why,
                                size_t why_size);

/* One command on a fresh connection (see topo_connect_unix), so that it is safe from any
 * thread and never meets a connection broken by a killed process. SIGPIPE is blocked around
 * the exchange. A reply the caller frees (error replies included), or NULL with a message on
 * stderr (`who` names the caller). */
redisReply *topo_unix_vcmd(const char *who, const char *path, const char *password, const char *fmt,
                           va_list ap);

/* For self-tests: true once `pid` is gone (within timeout_ms): reaped if it is a child of
 * ours (e.g. reparented to a subreaper test), or no longer there at all. Never use it on a
 * process a fixture still tracks: it would reap it behind the fixture's back. */
bool topo_wait_gone(pid_t pid, int64_t timeout_ms);

/* true if a plaintext PING to 127.0.0.1:port gets no reply (within 2 s): a TLS-only port. */
bool topo_plaintext_unanswered(int port);

/* ---- processes started from a config file ------------------------------------------------ */

typedef struct topo_proc topo_proc;

/* Starts `exe` (a full path, see topo_find_exe) with argv (argv[0] included, NULL-terminated;
 * copied), stdin /dev/null, stdout and stderr appended to `log_path`. Returns 0 and the
 * process in *out, or -1 (message on stderr) if it could not be executed. It may still exit
 * at once (e.g. its port was taken): see topo_proc_exited(). */
int topo_proc_start(const char *exe, char *const argv[], const char *log_path, topo_proc **out);

/* SIGTERM (and SIGCONT, so a paused process acts on it), wait up to 2 s, SIGKILL, reap, free.
 * NULL is a no-op. In a process that did not start it: only frees. */
void topo_proc_stop(topo_proc *p);

/* SIGKILL and reap; the topo_proc stays valid (pid() keeps the last pid) until stop.
 * Returns 0, or -1 if it was not running. */
int topo_proc_kill(topo_proc *p);

/* SIGSTOP / SIGCONT and wait until the kernel reports it stopped / running. 0 or -1. */
int topo_proc_pause(topo_proc *p);
int topo_proc_resume(topo_proc *p);

/* The pid of the process (also after it was killed). */
pid_t topo_proc_pid(const topo_proc *p);

/* true once the process has exited by itself or been killed (it is not reaped: see stop). */
bool topo_proc_exited(const topo_proc *p);

/* The last `lines` lines of `path` on stderr, framed; for telling why a process failed. */
void topo_print_log_tail(const char *path, int lines);

#endif /* DLOCK_TEST_TOPOLOGY_UTIL_H */
