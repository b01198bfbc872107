/* SPDX-License-Identifier: MIT */
/* cmd_semaphore.c — `dlock semaphore NAME set|add|available`: a semaphore's permits
 * (Redisson RSemaphore), through dlock/semaphore.h. Taking permits for the length of a
 * command is `dlock run --semaphore NAME`. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void print_help(void) {
    printf("Usage: dlock semaphore NAME set N       set N permits if NAME does not exist yet\n"
           "       dlock semaphore NAME add N       add N permits (negative: take them away)\n"
           "       dlock semaphore NAME available   print the available permits\n"
           "\n"
           "A semaphore (Redisson's RSemaphore) is a count of permits in Redis shared by\n"
           "every client using NAME. 'dlock run --semaphore NAME --permits K -- COMMAND'\n"
           "holds K of them while COMMAND runs.\n"
           "\n"
           "  set N        trySetPermits: sets the count only if NAME does not exist; if it\n"
           "               does, nothing changes and dlock exits 1 (use add to change it)\n"
           "  add N        adds N (may be negative; the count may go below zero); creates\n"
           "               NAME at N if needed; wakes waiters when permits become available\n"
           "  available    the available permits (0 if NAME does not exist; may be negative)\n"
           "\n"
           "Exit status: 0; 1 set found NAME already set; 64 usage; 65 NAME holds another\n"
           "type; 69 Redis unavailable; 77 refused (ACL).\n"
           "\n"
           "%s",
           cli_global_help);
}

int cmd_semaphore(int argc, char **argv) {
    const char *pos[4] = {NULL};
    int npos = 0;
    cli_args a;
    cli_args_init(&a, argc, argv, NULL, false);
    for (;;) {
        int id = cli_next(&a);
        if (id == CLI_ARG_END)
            break;
        if (id == CLI_ARG_HELP) {
            print_help();
            return CLI_EXIT_OK;
        }
        if (id != CLI_ARG_POSITIONAL)
            return CLI_EXIT_USAGE;
        if (npos == 3)
            return cli_usage_error("unexpected '%s'", a.value);
        pos[npos++] = a.value;
    }
    if (npos < 2)
        return cli_usage_error("expected NAME and set N, add N or available");
    const char *name = pos[0], *action = pos[1];
    int64_t n = 0;
    bool is_set = strcmp(action, "set") == 0, is_add = strcmp(action, "add") == 0;
    bool is_available = strcmp(action, "available") == 0;
    if (!name[0])
        return cli_usage_error("NAME is empty");
    if (!is_set && !is_add && !is_available)
        return cli_usage_error("unknown action '%s' (set N, add N, available)", action);
    if (is_available && npos != 2)
        return cli_usage_error("available takes no number");
    if (!is_available) {
        if (npos != 3)
            return cli_usage_error("%s needs a number", action);
        if (!cli_parse_i64(pos[2], is_set ? 0 : INT64_MIN, &n))
            return cli_usage_error("%s: '%s' is not a number%s", action, pos[2],
                                   is_set ? " >= 0" : "");
    }

    dlock_client *c = NULL;
    int code = cli_connect(&c);
    if (code != 0)
        return code;
    dlock_semaphore *s = NULL;
    int rc = dlock_semaphore_new(c, name, &s);
    bool was_set = false;
    int64_t available = 0;
    if (rc == DLOCK_OK && is_set) {
        rc = dlock_semaphore_try_set_permits(s, n, &was_set);
        if (rc == DLOCK_OK && !was_set) {
            rc = dlock_semaphore_available(s, &available);
            if (rc == DLOCK_OK) {
                cli_error("%s already exists with %lld permit(s) available; not changed (use add)",
                          name, (long long)available);
                code = CLI_EXIT_NO;
            }
        } else if (rc == DLOCK_OK) {
            printf("%s: %lld permit(s)\n", name, (long long)n);
        }
    } else if (rc == DLOCK_OK && is_add) {
        rc = dlock_semaphore_add_permits(s, n);
        if (rc == DLOCK_OK)
            rc = dlock_semaphore_available(s, &available);
        if (rc == DLOCK_OK)
            printf("%s: %lld permit(s) available\n", name, (long long)available);
    } else if (rc == DLOCK_OK) {
        rc = dlock_semaphore_available(s, &available);
        if (rc == DLOCK_OK)
            printf("%lld\n", (long long)available);
    }
    if (rc != DLOCK_OK)
        code = cli_fail(rc, name);
    dlock_semaphore_free(s);
    dlock_client_free(c);
    return code;
}
