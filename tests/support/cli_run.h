/* SPDX-License-Identifier: MIT */
/* cli_run.h — the dlock command-line tool (tools/) run from a test as a user runs it.
 *
 * The tool is found in $DLOCK_CLI, else beside the test program's build tree
 * (<build>/tests/bin/<layer>/<program> -> <build>/tools/dlock); a test that needs it and
 * finds none skips (REQUIRE_CLI). Every process started here is remembered until it is
 * reaped, so a failed test's teardown (cli_kill_spawned) leaves none running. The tool
 * reaches Redis through $DLOCK_URL (set it in the test) or --url. Everything here fails the
 * running cmocka test on error (the caller includes <cmocka.h>). */
#ifndef DLOCK_TEST_CLI_RUN_H
#define DLOCK_TEST_CLI_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "redis_fixture.h"

/* true when the tool is there; fails the test if $DLOCK_CLI names something else. */
bool cli_find(void);
/* The tool's path, once cli_find() said true. */
const char *cli_path(void);

#define REQUIRE_CLI()                                                                              \
    do {                                                                                           \
        if (!cli_find()) {                                                                         \
            print_message("dlock tool not built (no <build>/tools/dlock, DLOCK_CLI unset)\n");     \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* Starts argv (argv[0] a path, NULL-terminated) with stdin from /dev/null and stdout /
 * stderr into the files out_path / err_path (NULL: /dev/null). */
pid_t cli_spawn(const char *const argv[], const char *out_path, const char *err_path);
/* Waits for pid up to timeout_ms (widened by the slack rule): its exit status, 128+signal
 * if killed. Fails the test (after SIGKILLing it) on timeout. */
int cli_wait_exit(pid_t pid, int64_t timeout_ms);
/* SIGKILLs and reaps every process cli_spawn started that is not reaped yet. */
void cli_kill_spawned(void);

/* The whole file (an empty string if it cannot be read); free it. */
char *cli_slurp(const char *path);

/* How a run of the tool ended: its exit status (as cli_wait_exit) and what it printed. */
typedef struct cli_result {
    int status;
    char *out, *err;
} cli_result;

void cli_result_free(cli_result *r);

/* Runs `dlock ARGS...` (args NULL-terminated) to its end, within timeout_ms. Its output goes
 * through files in f's directory (f NULL: a directory of this process's own, removed at
 * exit). */
cli_result cli_run_argv(redis_fixture *f, int64_t timeout_ms, const char *const *args);

#define DLOCK_CLI_RUN(f, timeout_ms, ...)                                                          \
    cli_run_argv((f), (timeout_ms), (const char *const[]){__VA_ARGS__, NULL})

#define ASSERT_STATUS(r, want)                                                                     \
    do {                                                                                           \
        if ((r).status != (want))                                                                  \
            fail_msg("exit status %d, expected %d\n--- stdout:\n%s\n--- stderr:\n%s", (r).status,  \
                     (want), (r).out, (r).err);                                                    \
    } while (0)

#define ASSERT_CONTAINS(text, part)                                                                \
    do {                                                                                           \
        if (!strstr((text), (part)))                                                               \
            fail_msg("expected \"%s\" in:\n%s", (part), (text));                                   \
    } while (0)

#endif
