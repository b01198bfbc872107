/* SPDX-License-Identifier: MIT */
/* cli.h — what the files of the dlock command-line tool share.
 *
 *   dlock.c          main: the global options, the command table, `dlock --help`
 *   args.c           the option parser every command uses (cli_args)
 *   common.c         global settings, the client, numbers, messages, error -> exit code
 *   cmd_run.c        dlock run       (events.c: signals and callbacks to the main thread;
 *                                     child.c: the command's process)
 *   cmd_inspect.c    dlock inspect   (inspect_read.c reads the layouts through
 *                                     redis_lib.c; inspect.h is the model between them)
 *   cmd_release.c    dlock release --force
 *   cmd_semaphore.c  dlock semaphore
 *   cmd_latch.c      dlock latch
 *   cmd_doctor.c     dlock doctor    (doctor_server.c, doctor_acl.c, doctor_sentinel.c: the
 *                                     checks; doctor.h)
 *
 * Every action on a lock, semaphore or latch goes through the public API (dlock.h). Only
 * inspect, a read-only diagnostic, reads keys with plain commands, sent on a client's own
 * connection (redis_lib.c), so it reaches Redis however the client does.
 *
 * Exit codes (docs/cli.md; `dlock --help`): sysexits.h numbers, so they do not collide
 * with the small codes commands use. `dlock run` passes the command's own status through,
 * which may be any of 0..255, including these. */
#ifndef DLOCK_CLI_H
#define DLOCK_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "dlock.h"
#include "dlock_int.h" /* dlock__url_masked, dlock__free: the library, linked statically */

enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_NO = 1,            /* valid request, not applied: the object was already set;
                                 * doctor: a check failed */
    CLI_EXIT_USAGE = 64,        /* bad command line, or a feature this version lacks */
    CLI_EXIT_DATAERR = 65,      /* the key holds something else (WRONGTYPE, not a lock) */
    CLI_EXIT_UNAVAILABLE = 69,  /* Redis unreachable, or refusing (OOM, LOADING, READONLY) */
    CLI_EXIT_SOFTWARE = 70,     /* internal error: out of memory, an unexpected library code */
    CLI_EXIT_TIMEOUT = 73,      /* not obtained within --wait */
    CLI_EXIT_NOT_RELEASED = 74, /* run: the release (or the permits' return) failed or was
                                 * refused: held until the lease runs out (permits: for good) */
    CLI_EXIT_LOST = 75,         /* the lease was lost while the command ran */
    CLI_EXIT_NOPERM = 77,       /* AUTH refused, or an ACL forbids a command, key, channel */
    CLI_EXIT_CANNOT_EXEC = 126, /* run: COMMAND found but not executable */
    CLI_EXIT_NOT_FOUND = 127,   /* run: COMMAND not found */
};

/* ---- global settings (common.c) --------------------------------------------------------- */

typedef struct cli_global {
    const char *url;            /* --url; NULL: $DLOCK_URL, else redis://127.0.0.1:6379 */
    int64_t watchdog_ms;        /* --watchdog-ms or $DLOCK_WATCHDOG_MS; 0: library default */
    int64_t connect_timeout_ms; /* --connect-timeout; 0: library default */
    int64_t timeout_ms;         /* --timeout (per command); 0: library default */
    int verbose;                /* -v: the library's log on stderr */
} cli_global;

extern cli_global cli_g;
extern const char *cli_command; /* "run", "inspect", ...: for messages */

/* The URL in force: --url, else $DLOCK_URL, else the library's default. */
const char *cli_url(void);

/* The room for a URL as the tool may print it: the library's masking (dlock__url_masked,
 * dlock_int.h) puts *** where a password was. Every URL the tool shows goes through it. */
#define CLI_URL_SHOWN_MAX 512

/* Makes the blocking-face client from the global settings. On failure prints why and
 * returns the exit code (69, 77, 64); 0 and *out on success. */
int cli_connect(dlock_client **out);

/* The exit code for a library error code (rc < 0), using dlock_last_error() for EREDIS. */
int cli_exit_code(int rc);

/* Prints "dlock CMD: <what>: <strerror> (<last error>)" and returns cli_exit_code(rc). */
int cli_fail(int rc, const char *what);

/* "dlock CMD: ..." on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same, then "Try 'dlock CMD --help'."; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Decimal numbers. Return false on junk, overflow or a value below min. */
bool cli_parse_i64(const char *s, int64_t min, int64_t *out);

/* Milliseconds now, CLOCK_MONOTONIC. */
int64_t cli_now_ms(void);

/* ---- the option parser (args.c) --------------------------------------------------------- */

typedef struct cli_opt {
    const char *name; /* long name without "--"; NULL ends a table */
    char short_name;  /* 0: none */
    bool has_value;   /* --name VALUE or --name=VALUE */
    int id;           /* > 0, returned by cli_next */
    bool hidden;      /* not listed by a typo hint */
} cli_opt;

enum {
    CLI_ARG_END = 0,         /* no more arguments */
    CLI_ARG_POSITIONAL = -1, /* a->value is the argument */
    CLI_ARG_ERROR = -2,      /* message printed; exit CLI_EXIT_USAGE */
    CLI_ARG_HELP = -3,       /* -h / --help */
};

typedef struct cli_args {
    int argc;
    char **argv;
    int next;            /* index of the next argument to look at */
    const cli_opt *opts; /* the command's options (global ones are always accepted) */
    bool options_first;  /* options end at the first positional (dlock run) */
    bool options_done;   /* after "--", or the first positional with options_first */
    const char *value;   /* the option's value, or the positional */
} cli_args;

void cli_args_init(cli_args *a, int argc, char **argv, const cli_opt *opts, bool options_first);

/* The next option's id, or one of CLI_ARG_*. Global options (--url, --watchdog-ms,
 * --connect-timeout, --timeout, -v) are taken here and never returned. An argument that
 * looks like a negative number ("-3") is a positional. */
int cli_next(cli_args *a);

/* ---- commands --------------------------------------------------------------------------- */

int cmd_run(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_release(int argc, char **argv);
int cmd_semaphore(int argc, char **argv);
int cmd_latch(int argc, char **argv);
int cmd_doctor(int argc, char **argv);

/* The text `dlock --help` ends with: global options and exit codes. */
extern const char cli_global_help[];
extern const char cli_exit_codes_help[];

#endif
