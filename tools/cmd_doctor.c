/* SPDX-License-Identifier: MIT */
/* cmd_doctor.c — `dlock doctor [URL]`: will this Redis do for dlock? One line per check (ok,
 * warn or fail, what it saw, the fix), or with --json one object
 * {"checks":[{"name","status","detail","fix"}]}.
 *
 * Exit 0 when nothing would break dlock (warnings allowed), 1 when a check failed, and the
 * tool's usual codes when it cannot connect at all (69, 77, 64). The checks are
 * doctor_server.c's, doctor_acl.c's, doctor_sentinel.c's and, in a Cluster, those two on
 * every node (doctor_cluster.c); they only read (doctor.h). The one thing connecting
 * does beside reading is what every dlock client does: load dlock's scripts into the script
 * cache (SCRIPT LOAD, which stores nothing in the data set). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "doctor.h"

enum { OPT_JSON = 1, OPT_NAME, OPT_USER };

static const cli_opt doctor_opts[] = {
    {"json", 0, false, OPT_JSON, false},
    {"name", 0, true, OPT_NAME, false},
    {"user", 0, true, OPT_USER, false},
    {NULL, 0, false, 0, false},
};

#define DEFAULT_NAME "dlock-doctor:probe"

static void print_help(void) {
    printf("Usage: dlock doctor [--json] [--name PREFIX] [--user USER] [URL]\n"
           "\n"
           "Checks a deployment for everything dlock needs, read-only, one line per check:\n"
           "  server            Redis version, Lua scripting\n"
           "  maxmemory-policy  anything but noeviction may evict held locks: fail\n"
           "  persistence       what a restart loses\n"
           "  replicas          the master's replicas, WAIT, what sync_replicas will do\n"
           "  sentinels         (Sentinel) how many sentinels name the master; do they agree\n"
           "  cluster slots     (Cluster) all 16384 slots served; sharded pub/sub; then\n"
           "                    every check on each master and replica, naming the nodes\n"
           "                    that fail\n"
           "  tls certificate   (TLS) when the server's certificate expires\n"
           "  clock             the server's clock against this machine's\n"
           "  round trip        p50/p99 of PING\n"
           "  script cache      dlock's scripts cached\n"
           "  acl: ...          ACL DRYRUN (Redis 7) of every command the client, the tool\n"
           "                    and each primitive's scripts send, and of an object's keys\n"
           "                    and channels (sharded in a Cluster)\n"
           "Each line: ok, warn or fail, the check, what it saw, and the fix after '->'.\n"
           "\n"
           "URL defaults to --url, $DLOCK_URL, then redis://127.0.0.1:6379. It changes\n"
           "nothing in Redis: no writes, no CONFIG SET (connecting loads dlock's scripts, as\n"
           "every dlock client does).\n"
           "\n"
           "Options:\n"
           "  --json         {\"checks\":[{\"name\",\"status\",\"detail\",\"fix\"}]} instead\n"
           "  --name PREFIX  the ACL is checked on the keys and channels of an object with\n"
           "                 this name: use the prefix your names start with\n"
           "                 (default " DEFAULT_NAME ")\n"
           "  --user USER    check USER's ACL instead of the URL's own user (ACL DRYRUN\n"
           "                 needs an admin's URL)\n"
           "\n"
           "Exit status: 0 nothing would break dlock (warnings allowed), 1 a check failed,\n"
           "64 usage, 69 Redis unavailable, 77 refused (AUTH).\n"
           "\n"
           "%s",
           cli_global_help);
}

/* ---- output ------------------------------------------------------------------------------ */

static const char *status_word(doctor_status s) {
    return s == DOCTOR_OK ? "ok" : s == DOCTOR_WARN ? "warn" : "fail";
}

/* s as a JSON string: the texts are ASCII; any other byte is written as \u00XX. */
static void put_json_string(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static void print_json(const doctor_report *r) {
    fputs("{\"checks\":[", stdout);
    for (size_t i = 0; i < r->count; i++) {
        const doctor_check *c = &r->checks[i];
        fputs(i ? ",{\"name\":" : "{\"name\":", stdout);
        put_json_string(c->name);
        fputs(",\"status\":", stdout);
        put_json_string(status_word(c->status));
        fputs(",\"detail\":", stdout);
        put_json_string(c->detail);
        fputs(",\"fix\":", stdout);
        put_json_string(c->fix);
        putchar('}');
    }
    fputs("]}\n", stdout);
}

static void print_text(const doctor_report *r) {
    printf("dlock doctor: %s\n", r->url_shown);
    for (size_t i = 0; i < r->count; i++) {
        const doctor_check *c = &r->checks[i];
        printf("%-4s  %-22s %s", status_word(c->status), c->name, c->detail);
        if (c->fix[0])
            printf(" -> %s", c->fix);
        putchar('\n');
    }
}

/* ---- the command --------------------------------------------------------------------------- */

int cmd_doctor(int argc, char **argv) {
    bool json = false;
    doctor_report r;
    memset(&r, 0, sizeof(r));
    r.object_name = DEFAULT_NAME;
    cli_args a;
    cli_args_init(&a, argc, argv, doctor_opts, false);
    const char *url = NULL;
    for (int id; (id = cli_next(&a)) != CLI_ARG_END;) {
        switch (id) {
        case CLI_ARG_HELP:
            print_help();
            return CLI_EXIT_OK;
        case CLI_ARG_ERROR:
            return CLI_EXIT_USAGE;
        case OPT_JSON:
            json = true;
            break;
        case OPT_NAME:
            if (dlock__check_name(a.value) != DLOCK_OK)
                return cli_usage_error("--name: %s", dlock_last_error());
            r.object_name = a.value;
            break;
        case OPT_USER:
            if (!a.value[0])
                return cli_usage_error("--user: empty user name");
            r.acl_user = a.value;
            break;
        case CLI_ARG_POSITIONAL:
            if (url)
                return cli_usage_error("one URL at most ('%s' is extra)", a.value);
            url = a.value;
            break;
        default:
            return CLI_EXIT_SOFTWARE;
        }
    }
    if (url)
        cli_g.url = url; /* the positional URL is --url's */

    char shown[CLI_URL_SHOWN_MAX];
    r.url = cli_url();
    r.url_shown = dlock__url_masked(r.url, shown, sizeof(shown));
    r.sentinel_url = strncmp(r.url_shown, "redis-sentinel://", 17) == 0 ||
                     strncmp(r.url_shown, "rediss-sentinel://", 18) == 0;
    int rc = cli_connect(&r.c);
    if (rc != CLI_EXIT_OK)
        return rc;
    r.sharded = dlock__client_channels_sharded(r.c);
    if (r.sharded) { /* a Cluster: every node on its own */
        doctor_check_cluster(&r);
    } else {
        doctor_check_server(&r);
        doctor_check_sentinels(&r);
        doctor_check_acl(&r);
    }
    dlock_client_free(r.c);

    if (r.out_of_memory) {
        doctor_report_free(&r);
        cli_error("out of memory");
        return CLI_EXIT_SOFTWARE;
    }
    if (json)
        print_json(&r);
    else
        print_text(&r);
    int status = CLI_EXIT_OK;
    for (size_t i = 0; i < r.count; i++)
        if (r.checks[i].status == DOCTOR_FAIL)
            status = CLI_EXIT_NO;
    doctor_report_free(&r);
    return status;
}
