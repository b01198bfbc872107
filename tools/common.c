/* SPDX-License-Identifier: MIT */
/* common.c — what every dlock command needs: the global settings, the client, numbers,
 * messages, and the one place where a library error becomes an exit code. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

cli_global cli_g;
const char *cli_command = NULL;

const char *cli_url(void) {
    if (cli_g.url)
        return cli_g.url;
    const char *env = getenv("DLOCK_URL");
    return env && env[0] ? env : "redis://127.0.0.1:6379";
}

static void vmessage(const char *fmt, va_list ap) {
    if (cli_command)
        fprintf(stderr, "dlock %s: ", cli_command);
    else
        fputs("dlock: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void cli_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmessage(fmt, ap);
    va_end(ap);
}

int cli_usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmessage(fmt, ap);
    va_end(ap);
    if (cli_command)
        fprintf(stderr, "Try 'dlock %s --help'.\n", cli_command);
    else
        fputs("Try 'dlock --help'.\n", stderr);
    return CLI_EXIT_USAGE;
}

int cli_exit_code(int rc) {
    const char *detail = dlock_last_error();
    switch (rc) {
    case DLOCK_OK:
        return CLI_EXIT_OK;
    case DLOCK_EINVAL:
        return CLI_EXIT_USAGE;
    case DLOCK_ETIMEDOUT:
        return CLI_EXIT_TIMEOUT;
    case DLOCK_ELOST:
        return CLI_EXIT_LOST;
    case DLOCK_ECONN:
        return CLI_EXIT_UNAVAILABLE;
    case DLOCK_EAUTH:
    case DLOCK_ENOPERM:
        return CLI_EXIT_NOPERM;
    case DLOCK_EREDIS:
        if (strstr(detail, "WRONGTYPE"))
            return CLI_EXIT_DATAERR;
        if (strstr(detail, "NOPERM") || strstr(detail, "NOAUTH"))
            return CLI_EXIT_NOPERM;
        return CLI_EXIT_UNAVAILABLE; /* OOM, LOADING, READONLY, BUSY, MASTERDOWN... */
    default:
        return CLI_EXIT_SOFTWARE;
    }
}

int cli_fail(int rc, const char *what) {
    const char *detail = dlock_last_error();
    if (detail && detail[0] && strcmp(detail, dlock_strerror(rc)) != 0)
        cli_error("%s: %s (%s)", what, dlock_strerror(rc), detail);
    else
        cli_error("%s: %s", what, dlock_strerror(rc));
    return cli_exit_code(rc);
}

static void log_to_stderr(int level, const char *msg, void *arg) {
    (void)arg;
    static const char *const names[] = {"error", "warn", "info", "debug"};
    if (level <= cli_g.verbose + 1) /* -v: errors, warnings, info; -vv: debug too */
        fprintf(stderr, "dlock: [%s] %s\n", level >= 0 && level <= 3 ? names[level] : "log", msg);
}

int cli_connect(dlock_client **out) {
    dlock_options o;
    dlock_options_init(&o);
    o.url = cli_g.url; /* NULL: the library reads $DLOCK_URL */
    if (cli_g.watchdog_ms > 0) {
        o.watchdog_ms = cli_g.watchdog_ms;
    } else {
        const char *env = getenv("DLOCK_WATCHDOG_MS");
        int64_t ms;
        if (env && env[0]) {
            if (!cli_parse_i64(env, 3, &ms))
                return cli_usage_error("DLOCK_WATCHDOG_MS='%s' is not a number >= 3", env);
            o.watchdog_ms = ms;
        }
    }
    if (cli_g.connect_timeout_ms > 0)
        o.connect_timeout_ms = cli_g.connect_timeout_ms;
    if (cli_g.timeout_ms > 0)
        o.timeout_ms = cli_g.timeout_ms;
    if (cli_g.verbose > 0)
        o.log_cb = log_to_stderr;
    int rc = dlock_client_new(&o, out);
    if (rc == DLOCK_OK)
        return CLI_EXIT_OK;
    char shown[CLI_URL_SHOWN_MAX], what[CLI_URL_SHOWN_MAX + 32];
    snprintf(what, sizeof(what), "cannot connect to %s",
             dlock__url_masked(cli_url(), shown, sizeof(shown)));
    if (rc == DLOCK_EINVAL)
        return cli_usage_error("%s: %s", what, dlock_last_error());
    return cli_fail(rc, what);
}

bool cli_parse_i64(const char *s, int64_t min, int64_t *out) {
    if (!s || !s[0])
        return false;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min)
        return false;
    *out = (int64_t)v;
    return true;
}

int64_t cli_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
