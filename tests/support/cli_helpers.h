/* SPDX-License-Identifier: MIT */
/* cli_helpers.h — the helpers of the cli tests (test_cli.c and the files split from it), written
 * once. Included by those test files only; everything here is static inline. */
#ifndef DLOCK_TEST_CLI_HELPERS_H
#define DLOCK_TEST_CLI_HELPERS_H
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "dlock.h"
#include "cli_run.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 90

extern char **environ;

/* Teardown: nothing a failed test started outlives it. */
static inline int kill_spawned(void **state) {
    (void)state;
    cli_kill_spawned();
    unsetenv("DLOCK_WATCHDOG_MS");
    return 0;
}

/* Paths of files in the server's temp directory (removed with it). */
static inline const char *path_in(redis_fixture *f, const char *file, char *buf, size_t size) {
    snprintf(buf, size, "%s/%s", redis_fixture_dir(f), file);
    return buf;
}

static inline redis_fixture *start_server_with(const redis_fixture_opts *o) {
    redis_fixture *f = NULL;
    assert_int_equal(redis_fixture_start(o, &f), 0);
    setenv("DLOCK_URL", redis_fixture_unix_url(f), 1);
    return f;
}

static inline redis_fixture *start_cli_server(void) {
    return start_server_with(NULL);
}

static inline bool file_exists(const char *path) {
    return access(path, F_OK) == 0;
}

/* Polls until path exists; fails after timeout_ms. */
static inline void wait_for_file(const char *path, int64_t timeout_ms) {
    int64_t until = test_now_ms() + test_slack_ms(timeout_ms);
    while (!file_exists(path)) {
        if (test_now_ms() > until)
            fail_msg("%s did not appear within %lld ms", path, (long long)timeout_ms);
        test_sleep_ms(5);
    }
}

/* ---- a minimal JSON checker (RFC 8259 grammar; enough to prove --json parses) ---------- */

static inline const char *json_value(const char *p);

static inline const char *json_ws(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

static inline const char *json_string(const char *p) {
    if (*p != '"')
        return NULL;
    for (p++; *p && *p != '"'; p++) {
        if ((unsigned char)*p < 0x20)
            return NULL;
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
                        return NULL;
                p += 4;
            } else if (!*p || !strchr("\"\\/bfnrt", *p)) {
                return NULL;
            }
        }
    }
    return *p == '"' ? p + 1 : NULL;
}

static inline const char *json_number(const char *p) {
    const char *start = p;
    if (*p == '-')
        p++;
    if (*p < '0' || *p > '9')
        return NULL;
    while (*p >= '0' && *p <= '9')
        p++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return p > start ? p : NULL;
}

static inline const char *json_value(const char *p) {
    p = json_ws(p);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        bool object = *p == '{';
        p = json_ws(p + 1);
        if (*p == close)
            return p + 1;
        for (;;) {
            if (object) {
                p = json_string(json_ws(p));
                if (!p)
                    return NULL;
                p = json_ws(p);
                if (*p++ != ':')
                    return NULL;
            }
            p = json_value(p);
            if (!p)
                return NULL;
            p = json_ws(p);
            if (*p == close)
                return p + 1;
            if (*p++ != ',')
                return NULL;
        }
    }
    if (*p == '"')
        return json_string(p);
    if (strncmp(p, "true", 4) == 0)
        return p + 4;
    if (strncmp(p, "false", 5) == 0)
        return p + 5;
    if (strncmp(p, "null", 4) == 0)
        return p + 4;
    return json_number(p);
}

static inline void assert_valid_json(const char *text) {
    const char *end = json_value(text);
    if (!end || *json_ws(end) != '\0')
        fail_msg("not one valid JSON value:\n%s", text);
}

/* jq (scripts/deps.sh installs it), when present, must agree with expr (jq -e). */
static inline void assert_jq(redis_fixture *f, const char *json, const char *expr) {
    const char *jq = NULL;
    static const char *const places[] = {"/usr/bin/jq", "/usr/local/bin/jq", "/bin/jq"};
    for (size_t i = 0; i < sizeof(places) / sizeof(places[0]); i++)
        if (access(places[i], X_OK) == 0)
            jq = places[i];
    if (!jq)
        return;
    char in_path[PATH_MAX], out_path[PATH_MAX];
    path_in(f, "jq.in", in_path, sizeof(in_path));
    path_in(f, "jq.out", out_path, sizeof(out_path));
    FILE *fp = fopen(in_path, "w");
    assert_non_null(fp);
    fputs(json, fp);
    fclose(fp);
    const char *argv[] = {jq, "-e", expr, in_path, NULL};
    int status = cli_wait_exit(cli_spawn(argv, out_path, out_path), 10000);
    if (status != 0) {
        char *said = cli_slurp(out_path);
        fail_msg("jq -e '%s' exited %d (%s) on:\n%s", expr, status, said, json);
    }
}

#endif
