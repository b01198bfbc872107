/* SPDX-License-Identifier: MIT */
/* cmd_latch.c — `dlock latch NAME set|count-down|count|await`: a count-down latch
 * (Redisson RCountDownLatch), through dlock/latch.h. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

enum { OPT_WAIT = 1 };

static const cli_opt latch_opts[] = {
    {"wait", 0, true, OPT_WAIT, false},
    {NULL, 0, false, 0, false},
};

static void print_help(void) {
    printf("Usage: dlock latch NAME set N              set the count if the latch is not counting\n"
           "       dlock latch NAME count-down         count down by one\n"
           "       dlock latch NAME count              print the remaining count\n"
           "       dlock latch [--wait MS] NAME await  wait until the count reaches zero\n"
           "\n"
           "A count-down latch (Redisson's RCountDownLatch) is a count in Redis that any\n"
           "client counts down; waiters are released when it reaches zero. Unlike Java's,\n"
           "it can be set again once it has finished.\n"
           "\n"
           "  set N        trySetCount: sets the count (N >= 1) only if the latch is unset or\n"
           "               finished; if it is still counting, nothing changes and dlock\n"
           "               exits 1\n"
           "  count-down   one less; at zero the latch finishes and every waiter goes on.\n"
           "               Counting down a finished latch does nothing.\n"
           "  count        the remaining count (0 when unset or finished)\n"
           "  await        returns when the count is zero (at once if it is)\n"
           "\n"
           "Options:\n"
           "  --wait MS    await: give up after MS ms (exit 73); 0 = look once;\n"
           "               default: wait as long as it takes\n"
           "\n"
           "Exit status: 0; 1 set found the latch counting; 64 usage; 65 NAME holds another\n"
           "type; 69 Redis unavailable; 73 await timed out; 77 refused (ACL).\n"
           "\n"
           "%s",
           cli_global_help);
}

int cmd_latch(int argc, char **argv) {
    const char *pos[4] = {NULL};
    int npos = 0;
    int64_t wait_ms = -1;
    bool wait_given = false;
    cli_args a;
    cli_args_init(&a, argc, argv, latch_opts, false);
    for (;;) {
        int id = cli_next(&a);
        if (id == CLI_ARG_END)
            break;
        switch (id) {
        case CLI_ARG_HELP:
            print_help();
            return CLI_EXIT_OK;
        case CLI_ARG_POSITIONAL:
            if (npos == 3)
                return cli_usage_error("unexpected '%s'", a.value);
            pos[npos++] = a.value;
            break;
        case OPT_WAIT:
            if (!cli_parse_i64(a.value, 0, &wait_ms))
                return cli_usage_error("--wait: '%s' is not a number of milliseconds >= 0",
                                       a.value);
            wait_given = true;
            break;
        default:
            return CLI_EXIT_USAGE;
        }
    }
    if (npos < 2)
        return cli_usage_error("expected NAME and set N, count-down, count or await");
    const char *name = pos[0], *action = pos[1];
    bool is_set = strcmp(action, "set") == 0;
    bool is_count_down = strcmp(action, "count-down") == 0;
    bool is_count = strcmp(action, "count") == 0;
    bool is_await = strcmp(action, "await") == 0;
    if (!name[0])
        return cli_usage_error("NAME is empty");
    if (!is_set && !is_count_down && !is_count && !is_await)
        return cli_usage_error("unknown action '%s' (set N, count-down, count, await)", action);
    int64_t n = 0;
    if (is_set) {
        if (npos != 3)
            return cli_usage_error("set needs a number");
        if (!cli_parse_i64(pos[2], 1, &n))
            return cli_usage_error("set: '%s' is not a number >= 1", pos[2]);
    } else if (npos != 2) {
        return cli_usage_error("%s takes no number", action);
    }
    if (wait_given && !is_await)
        return cli_usage_error("--wait goes with await");

    dlock_client *c = NULL;
    int code = cli_connect(&c);
    if (code != 0)
        return code;
    dlock_latch *l = NULL;
    int rc = dlock_latch_new(c, name, &l);
    int64_t count = 0;
    if (rc == DLOCK_OK && is_set) {
        bool was_set = false;
        rc = dlock_latch_try_set_count(l, n, &was_set);
        if (rc == DLOCK_OK && was_set) {
            printf("%s: count %lld\n", name, (long long)n);
        } else if (rc == DLOCK_OK) {
            rc = dlock_latch_count(l, &count);
            if (rc == DLOCK_OK) {
                cli_error("%s is still counting (%lld left); not changed", name, (long long)count);
                code = CLI_EXIT_NO;
            }
        }
    } else if (rc == DLOCK_OK && is_count_down) {
        rc = dlock_latch_count_down(l);
        if (rc == DLOCK_OK)
            rc = dlock_latch_count(l, &count);
        if (rc == DLOCK_OK)
            printf("%s: %lld left\n", name, (long long)count);
    } else if (rc == DLOCK_OK && is_count) {
        rc = dlock_latch_count(l, &count);
        if (rc == DLOCK_OK)
            printf("%lld\n", (long long)count);
    } else if (rc == DLOCK_OK) {
        rc = dlock_latch_await(l, wait_ms);
        if (rc == DLOCK_ETIMEDOUT) {
            int64_t left = 0;
            if (dlock_latch_count(l, &left) == DLOCK_OK)
                cli_error("%s: still %lld left after %lld ms", name, (long long)left,
                          (long long)wait_ms);
            else
                cli_error("%s: not zero after %lld ms", name, (long long)wait_ms);
            code = CLI_EXIT_TIMEOUT;
            rc = DLOCK_OK;
        }
    }
    if (rc != DLOCK_OK)
        code = cli_fail(rc, name);
    dlock_latch_free(l);
    dlock_client_free(c);
    return code;
}
