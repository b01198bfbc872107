/* SPDX-License-Identifier: MIT */
/* args.c — the option parser of every dlock command.
 *
 * Long options (--wait 500, --wait=500), a few short ones (-h, -v; -vv is -v twice), and
 * positionals in any order, unless the command asks for options first (dlock run:
 * everything after NAME is the command to run, options included). "--" ends the options.
 * "-3" is a number, not an option, so `dlock semaphore NAME add -3` works. The global
 * options are accepted by every command and stored in cli_g here, so commands never see
 * them. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

enum {
    GLOBAL_URL = 1000,
    GLOBAL_WATCHDOG_MS,
    GLOBAL_CONNECT_TIMEOUT,
    GLOBAL_TIMEOUT,
    GLOBAL_VERBOSE,
    GLOBAL_HELP,
};

static const cli_opt global_opts[] = {
    {"url", 0, true, GLOBAL_URL, false},
    {"watchdog-ms", 0, true, GLOBAL_WATCHDOG_MS, false},
    {"connect-timeout", 0, true, GLOBAL_CONNECT_TIMEOUT, false},
    {"timeout", 0, true, GLOBAL_TIMEOUT, false},
    {"verbose", 'v', false, GLOBAL_VERBOSE, false},
    {"help", 'h', false, GLOBAL_HELP, false},
    {NULL, 0, false, 0, false},
};

void cli_args_init(cli_args *a, int argc, char **argv, const cli_opt *opts, bool options_first) {
    memset(a, 0, sizeof(*a));
    a->argc = argc;
    a->argv = argv;
    a->next = 1; /* argv[0] is the command's name */
    a->opts = opts;
    a->options_first = options_first;
}

static const cli_opt *find_long(const cli_opt *table, const char *name, size_t len) {
    for (const cli_opt *o = table; o && o->name; o++)
        if (strlen(o->name) == len && memcmp(o->name, name, len) == 0)
            return o;
    return NULL;
}

static const cli_opt *find_short(const cli_opt *table, char c) {
    for (const cli_opt *o = table; o && o->name; o++)
        if (o->short_name && o->short_name == c)
            return o;
    return NULL;
}

static bool looks_like_number(const char *s) {
    return s[0] == '-' && s[1] >= '0' && s[1] <= '9';
}

/* Stores a global option; false (message printed) on a bad value. */
static bool take_global(int id, const char *option, const char *value) {
    int64_t *ms = NULL;
    int64_t min = 1;
    switch (id) {
    case GLOBAL_URL:
        if (!value[0]) { /* every command refuses it alike, before connecting */
            cli_usage_error("--url: the URL is empty");
            return false;
        }
        cli_g.url = value;
        return true;
    case GLOBAL_VERBOSE:
        cli_g.verbose++;
        return true;
    case GLOBAL_WATCHDOG_MS:
        ms = &cli_g.watchdog_ms;
        min = 3; /* renewed every third */
        break;
    case GLOBAL_CONNECT_TIMEOUT:
        ms = &cli_g.connect_timeout_ms;
        break;
    case GLOBAL_TIMEOUT:
        ms = &cli_g.timeout_ms;
        break;
    default:
        return false;
    }
    if (!cli_parse_i64(value, min, ms)) {
        cli_usage_error("--%s: '%s' is not a number of milliseconds >= %lld", option, value,
                        (long long)min);
        return false;
    }
    return true;
}

/* "-vv": a bundle of global flags that take no value, each taken as if given alone (so
 * -vv is -v -v). false (message printed) if any letter is not such a flag. */
static bool take_bundle(const char *arg) {
    for (const char *p = arg + 1; *p; p++) {
        const cli_opt *o = find_short(global_opts, *p);
        if (!o || o->has_value || o->id == GLOBAL_HELP) {
            cli_usage_error("unknown option '%s' (options are long: --name; -v may repeat: -vv)",
                            arg);
            return false;
        }
    }
    for (const char *p = arg + 1; *p; p++)
        if (!take_global(find_short(global_opts, *p)->id, NULL, NULL))
            return false;
    return true;
}

int cli_next(cli_args *a) {
    for (;;) {
        if (a->next >= a->argc)
            return CLI_ARG_END;
        char *arg = a->argv[a->next++];
        if (a->options_done || arg[0] != '-' || arg[1] == '\0' || looks_like_number(arg)) {
            if (a->options_first)
                a->options_done = true;
            a->value = arg;
            return CLI_ARG_POSITIONAL;
        }
        if (strcmp(arg, "--") == 0) {
            a->options_done = true;
            continue;
        }

        const cli_opt *o = NULL;
        const char *inline_value = NULL;
        char shown[64];
        if (arg[1] == '-') {
            const char *name = arg + 2, *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            o = find_long(a->opts, name, len);
            if (!o)
                o = find_long(global_opts, name, len);
            inline_value = eq ? eq + 1 : NULL;
            snprintf(shown, sizeof(shown), "--%.*s", (int)(len < 40 ? len : 40), name);
        } else {
            if (arg[2] != '\0') {
                if (!take_bundle(arg))
                    return CLI_ARG_ERROR;
                continue;
            }
            o = find_short(a->opts, arg[1]);
            if (!o)
                o = find_short(global_opts, arg[1]);
            snprintf(shown, sizeof(shown), "-%c", arg[1]);
        }
        if (!o) {
            cli_usage_error("unknown option '%s'", shown);
            return CLI_ARG_ERROR;
        }

        const char *value = NULL;
        if (o->has_value) {
            if (inline_value) {
                value = inline_value;
            } else if (a->next < a->argc) {
                value = a->argv[a->next++];
            } else {
                cli_usage_error("%s needs a value", shown);
                return CLI_ARG_ERROR;
            }
        } else if (inline_value) {
            cli_usage_error("%s takes no value", shown);
            return CLI_ARG_ERROR;
        }

        if (o->id == GLOBAL_HELP)
            return CLI_ARG_HELP;
        if (o->id >= GLOBAL_URL) {
            if (!take_global(o->id, o->name, value))
                return CLI_ARG_ERROR;
            continue;
        }
        a->value = value;
        return o->id;
    }
}
