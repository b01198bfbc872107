/* SPDX-License-Identifier: MIT */
/* dlock.c — the dlock command-line tool: main, the command table, `dlock --help`.
 *
 *   dlock [GLOBAL OPTIONS] COMMAND [OPTIONS] ARGS...
 *
 * Global options may come before or after COMMAND (args.c takes them anywhere). Each
 * command lives in its own cmd_*.c and prints its own --help. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"run", cmd_run, "run a command while holding a lock (or a semaphore's permits)"},
    {"inspect", cmd_inspect, "show what a name holds in Redis: kind, holders, TTL, queue"},
    {"release", cmd_release, "release a lock whoever holds it (--force)"},
    {"semaphore", cmd_semaphore, "set, add to or read a semaphore's permits"},
    {"latch", cmd_latch, "set, count down, read or await a count-down latch"},
    {"doctor", cmd_doctor, "check a Redis for everything dlock needs (read-only)"},
};

const char cli_global_help[] =
    "Global options (before or after COMMAND):\n"
    "  --url URL             the Redis to use:\n"
    "                          redis://[user:password@]host[:port][/db]\n"
    "                          rediss://... (TLS: ?cacert=PATH&cert=PATH&key=PATH&sni=NAME)\n"
    "                          unix:///path/to/redis.sock[?db=N&user=U&password=P]\n"
    "                          redis-sentinel://[user:password@]host[:port][,host...]/MASTER\n"
    "                            [/db][?sentinel_user=U&sentinel_password=P]\n"
    "                          rediss-sentinel://... (the same over TLS)\n"
    "                          redis-cluster://[user:password@]host[:port][,host[:port]...]\n"
    "                          rediss-cluster://... (a Redis Cluster over TLS)\n"
    "                        default: $DLOCK_URL, else redis://127.0.0.1:6379\n"
    "  --connect-timeout MS  give up connecting after MS ms (default 10000)\n"
    "  --timeout MS          reply timeout of each Redis command (default 3000)\n"
    "  --watchdog-ms MS      lease of watchdog holds, renewed every third of it\n"
    "                        (default: $DLOCK_WATCHDOG_MS, else 30000)\n"
    "  -v, --verbose         the library's log on stderr (-vv: debug too)\n"
    "  -h, --help            help (of COMMAND, after it)\n";

const char cli_exit_codes_help[] =
    "Exit codes:\n"
    "  0        success (dlock run: COMMAND's own status, which may be any of 0..255)\n"
    "  1        not applied: the semaphore or latch was already set; doctor: a check\n"
    "           failed\n"
    "  64       usage: bad command line, or a feature this version lacks\n"
    "  65       the name holds something else (another type or kind of object)\n"
    "  69       Redis unavailable: unreachable, or refusing (OOM, LOADING, READONLY)\n"
    "  70       internal error\n"
    "  73       not obtained within --wait (lock, permits, latch await)\n"
    "  74       run: the release failed or was refused: the lock stays held until its\n"
    "           lease runs out (permits not given back stay taken)\n"
    "  75       run: the lease was lost while COMMAND ran; COMMAND was terminated\n"
    "  77       Redis refused the credentials, or an ACL forbids a command, key or\n"
    "           channel\n"
    "  126/127  run: COMMAND is not executable / was not found\n"
    "  128+N    run: COMMAND was killed by signal N (dlock itself too, while waiting)\n";

static void print_help(void) {
    printf("Usage: dlock [GLOBAL OPTIONS] COMMAND [OPTIONS] ARGS...\n"
           "\n"
           "Locks, semaphores and count-down latches kept in Redis, compatible with\n"
           "Redisson's (libdlock %s).\n"
           "\n"
           "Commands:\n",
           dlock_version_string());
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        printf("  %-10s %s\n", commands[i].name, commands[i].summary);
    printf("\n"
           "'dlock COMMAND --help' tells more of each. Examples:\n"
           "  dlock run nightly-report -- ./report.sh        one at a time, across machines\n"
           "  dlock run --wait 0 backup -- ./backup.sh       skip if already running (73)\n"
           "  dlock inspect nightly-report                   who holds it, for how long\n"
           "\n"
           "%s"
           "  --version             print the version (before COMMAND)\n"
           "\n%s",
           cli_global_help, cli_exit_codes_help);
}

enum { OPT_VERSION = 1 };

int main(int argc, char **argv) {
    static const cli_opt opts[] = {
        {"version", 0, false, OPT_VERSION, false},
        {NULL, 0, false, 0, false},
    };
    cli_args a;
    cli_args_init(&a, argc, argv, opts, true);
    for (;;) {
        int id = cli_next(&a);
        switch (id) {
        case CLI_ARG_HELP:
            print_help();
            return CLI_EXIT_OK;
        case OPT_VERSION:
            printf("dlock %s\n", dlock_version_string());
            return CLI_EXIT_OK;
        case CLI_ARG_ERROR:
            return CLI_EXIT_USAGE;
        case CLI_ARG_END:
            return cli_usage_error(
                "no command given (run, inspect, release, semaphore, latch, doctor)");
        case CLI_ARG_POSITIONAL:
            break;
        default:
            return CLI_EXIT_SOFTWARE;
        }
        break;
    }
    /* a.value is the command; the command parses argv[a.next - 1 ...]. */
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(a.value, commands[i].name) == 0) {
            cli_command = commands[i].name;
            return commands[i].run(argc - (a.next - 1), argv + (a.next - 1));
        }
    }
    return cli_usage_error("unknown command '%s' (run, inspect, release, semaphore, latch, doctor)",
                           a.value);
}
