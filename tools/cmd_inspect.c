/* SPDX-License-Identifier: MIT */
/* cmd_inspect.c — `dlock inspect NAME`: what a name holds in Redis, as a table for people
 * or as JSON for scripts (--json). Reading is inspect_read.c's; this file prints.
 *
 * JSON: one object, every key always present (null when it does not apply), so scripts
 * need no existence checks. Strings are escaped to valid JSON whatever bytes they hold
 * (a byte that is not UTF-8 becomes \u00XX). Owner ids are strings: they exceed 2^53. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "inspect.h"

enum { OPT_JSON = 1, OPT_AS };

static const cli_opt inspect_opts[] = {
    {"json", 0, false, OPT_JSON, false},
    {"as", 0, true, OPT_AS, false},
    {NULL, 0, false, 0, false},
};

static void print_help(void) {
    printf("Usage: dlock inspect [--json] [--as semaphore|latch] NAME\n"
           "\n"
           "Shows what NAME holds in Redis, read-only:\n"
           "  kind         lock, fair lock, read-write lock, semaphore, permit-expirable\n"
           "               semaphore (permits), count-down latch, nothing, or not ours; a\n"
           "               reentrant lock and a spin lock are the same hash in Redis, so a\n"
           "               lock shows as 'lock (reentrant or spin)', or 'lock (fenced)'\n"
           "  holders      (locks) client id, owner id and hold count of each holder; mode\n"
           "               and lease of each (read-write locks)\n"
           "  ttl          the lock's remaining lease\n"
           "  token        (fenced locks) the last fencing token issued\n"
           "  queue        (fair locks) the waiters in order, and when each counts as gone;\n"
           "               (read-write locks) the writers waiting; (locks) dlock's waiters\n"
           "               in line for the hand-off, and how long each has been there\n"
           "  promised     (locks) the dlock waiter a release promised the free lock to\n"
           "  permits      (semaphores) available permits; acquired ones with their lease\n"
           "  count        (latches) the remaining count\n"
           "  waiting      clients subscribed to the object's channel (one per client); a\n"
           "               spin lock's waiters subscribe to nothing and are not counted\n"
           "  node         the Redis that served it: the URL's server, the master the\n"
           "               sentinels name, or the node of its slot in a cluster\n"
           "  url          the URL it was read through, password masked\n"
           "\n"
           "A semaphore and a latch are both a bare number in Redis: the one somebody waits\n"
           "on is recognised; otherwise the kind is 'semaphore or latch' unless --as says.\n"
           "\n"
           "Options:\n"
           "  --json       one JSON object instead of the table; every key always present:\n"
           "               name, kind (none|lock|fair_lock|rwlock|semaphore|permits|latch|\n"
           "               count|other), title, redis_type, exists, ttl_ms (null: no key;\n"
           "               -1: no expiry), fenced, token, mode, count, holders[] {client_id,\n"
           "               owner, holds, mode, ttl_ms}, queue[] {client_id, owner,\n"
           "               expires_in_ms, waited_ms} (fair lock: in line; read-write lock:\n"
           "               writers waiting; lock: in line for the hand-off, waited_ms),\n"
           "               promised_to {client_id, owner, expires_in_ms} or null,\n"
           "               permits[] {id, expires_in_ms (null: no lease)},\n"
           "               channel, subscribers, note, node, url\n"
           "  --as KIND    read a bare number as a 'semaphore' or a 'latch'\n"
           "\n"
           "Exit status: 0 (also when nothing is there), 64 usage, 69 Redis unavailable,\n"
           "77 refused (ACL).\n"
           "\n"
           "%s",
           cli_global_help);
}

/* ---- text ------------------------------------------------------------------------------ */

/* s with control characters and bytes >= 0x7f shown as \xNN. */
static void put_text(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p >= 0x7f)
            printf("\\x%02x", *p);
        else
            putchar(*p);
    }
}

static void put_ms(long long ms) {
    if (ms >= 60000)
        printf("%lld ms (%.1f min)", ms, (double)ms / 60000.0);
    else
        printf("%lld ms", ms);
}

static void row(const char *label) {
    printf("%-11s", label);
}

static void print_table(const inspection *in, const char *url) {
    row("name");
    put_text(in->name);
    putchar('\n');
    row("kind");
    if (in->kind == OBJ_LOCK && in->fenced)
        printf("lock (fenced)"); /* the token says so: a spin lock has none */
    else
        printf("%s", obj_kind_title(in->kind));
    if (in->kind == OBJ_OTHER)
        printf(" (Redis %s)", in->redis_type);
    putchar('\n');

    bool is_lock = in->kind == OBJ_LOCK || in->kind == OBJ_FAIR_LOCK || in->kind == OBJ_RWLOCK;
    if (is_lock) {
        long long holds = 0;
        for (size_t i = 0; i < in->nholders; i++)
            holds += in->holders[i].holds;
        row("state");
        if (in->nholders == 0)
            printf("free\n");
        else if (in->kind == OBJ_RWLOCK)
            printf("held for %s by %zu owner(s), %lld hold(s)\n", in->mode, in->nholders, holds);
        else
            printf("held by %zu owner(s), %lld hold(s)\n", in->nholders, holds);
        row("ttl");
        if (in->ttl_ms >= 0)
            put_ms(in->ttl_ms);
        else
            printf(in->ttl_ms == -1 ? "no expiry" : "-");
        putchar('\n');
    }
    if (in->promised.client_id) {
        row("promised");
        printf("to %s %s (the free lock is kept for it ", in->promised.client_id,
               in->promised.owner);
        if (in->promised.expires_in_ms >= 0)
            put_ms(in->promised.expires_in_ms);
        else
            printf("?");
        printf(" more)\n");
    }
    if (in->fenced) {
        row("token");
        printf("%lld (the last issued; the next acquisition gets a higher one)\n", in->token);
    }
    if (in->has_count) {
        row(in->kind == OBJ_LATCH ? "count" : in->kind == OBJ_COUNT ? "value" : "permits");
        printf("%lld%s\n", in->count,
               in->kind == OBJ_PERMITS || in->kind == OBJ_SEMAPHORE ? " available" : "");
    }
    if (in->channel) {
        row("waiting");
        printf("%lld client(s) subscribed to ", in->subscribers);
        put_text(in->channel);
        putchar('\n');
    }
    if (in->note[0]) {
        row("note");
        put_text(in->note);
        putchar('\n');
    }
    row("node");
    put_text(in->node);
    putchar('\n');
    row("url");
    put_text(url);
    putchar('\n');

    if (in->nholders > 0) {
        bool rw = in->kind == OBJ_RWLOCK;
        printf("\n%s%-38s %-21s %5s%s\n", rw ? "MODE   " : "", "CLIENT ID", "OWNER", "HOLDS",
               rw ? "  LEASE" : "");
        for (size_t i = 0; i < in->nholders; i++) {
            const holder *h = &in->holders[i];
            if (rw)
                printf("%-6s ", h->mode);
            printf("%-38s ", h->client_id);
            printf("%-21s %5lld", h->owner, h->holds);
            if (rw && h->ttl_ms >= 0)
                printf("  %lld ms", h->ttl_ms);
            else if (rw)
                printf("  %s", h->ttl_ms == -1 ? "no expiry" : "-");
            putchar('\n');
        }
    }
    if (in->nqueue > 0 && in->kind == OBJ_LOCK) {
        printf("\nwaiting in line (dlock's hand-off; Redisson's waiters are not in it):\n");
        printf("%-5s %-38s %-21s %s\n", "#", "CLIENT ID", "OWNER", "IN LINE FOR");
        for (size_t i = 0; i < in->nqueue; i++) {
            const waiter *w = &in->queue[i];
            printf("%-5zu %-38s %-21s %lld ms\n", i + 1, w->client_id, w->owner, w->waited_ms);
        }
    } else if (in->nqueue > 0) {
        printf("\n%s\n", in->kind == OBJ_RWLOCK ? "writers waiting (readers wait behind them):"
                                                : "queue (first in line first):");
        printf("%-5s %-38s %-21s %s\n", "#", "CLIENT ID", "OWNER", "GONE IN (unless refreshed)");
        for (size_t i = 0; i < in->nqueue; i++) {
            const waiter *w = &in->queue[i];
            printf("%-5zu %-38s %-21s ", i + 1, w->client_id, w->owner);
            if (w->expires_in_ms == -3)
                printf("?\n");
            else
                printf("%lld ms\n", w->expires_in_ms);
        }
    }
    if (in->npermits > 0) {
        printf("\n%-33s %s\n", "ACQUIRED PERMIT", "LEASE ENDS IN");
        for (size_t i = 0; i < in->npermits; i++) {
            const permit *p = &in->permits[i];
            printf("%-33s ", p->id);
            if (p->expires_in_ms == -1)
                printf("no lease\n");
            else if (p->expires_in_ms < 0)
                printf("ended (comes back at the next call)\n");
            else
                printf("%lld ms\n", p->expires_in_ms);
        }
    }
}

/* ---- JSON ------------------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at p (1..4), or 0. */
static size_t utf8_len(const unsigned char *p) {
    size_t n;
    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        n = 2;
    else if (p[0] >= 0xe0 && p[0] <= 0xef)
        n = 3;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4)
        n = 4;
    else
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

static void json_str(const char *s) {
    if (!s) {
        fputs("null", stdout);
        return;
    }
    putchar('"');
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        if (*p == '"' || *p == '\\') {
            printf("\\%c", *p);
            p++;
        } else if (*p < 0x20) {
            printf("\\u%04x", *p);
            p++;
        } else {
            size_t n = utf8_len(p);
            if (n == 0) {
                printf("\\u%04x", *p); /* not UTF-8: the byte as a code point */
                p++;
            } else {
                fwrite(p, 1, n, stdout);
                p += n;
            }
        }
    }
    putchar('"');
}

static void json_key(const char *key, bool first) {
    printf("%s\"%s\":", first ? "" : ",", key);
}

static void json_int_or_null(long long v, bool present) {
    if (present)
        printf("%lld", v);
    else
        fputs("null", stdout);
}

static void print_json(const inspection *in, const char *url) {
    putchar('{');
    json_key("name", true);
    json_str(in->name);
    json_key("kind", false);
    json_str(obj_kind_name(in->kind));
    json_key("title", false);
    json_str(obj_kind_title(in->kind));
    json_key("redis_type", false);
    json_str(in->redis_type);
    json_key("exists", false);
    fputs(in->exists ? "true" : "false", stdout);
    json_key("ttl_ms", false);
    json_int_or_null(in->ttl_ms, in->ttl_ms != -2);
    json_key("fenced", false);
    fputs(in->fenced ? "true" : "false", stdout);
    json_key("token", false);
    json_int_or_null(in->token, in->fenced);
    json_key("mode", false);
    json_str(in->mode);
    json_key("count", false);
    json_int_or_null(in->count, in->has_count);

    json_key("holders", false);
    putchar('[');
    for (size_t i = 0; i < in->nholders; i++) {
        const holder *h = &in->holders[i];
        printf("%s{", i ? "," : "");
        json_key("client_id", true);
        json_str(h->client_id);
        json_key("owner", false);
        json_str(h->owner);
        json_key("holds", false);
        printf("%lld", h->holds);
        json_key("mode", false);
        json_str(h->mode);
        json_key("ttl_ms", false);
        json_int_or_null(h->ttl_ms, h->mode && strcmp(h->mode, "read") == 0 && h->ttl_ms != -2);
        putchar('}');
    }
    putchar(']');

    json_key("queue", false);
    putchar('[');
    for (size_t i = 0; i < in->nqueue; i++) {
        const waiter *w = &in->queue[i];
        printf("%s{", i ? "," : "");
        json_key("client_id", true);
        json_str(w->client_id);
        json_key("owner", false);
        json_str(w->owner);
        json_key("expires_in_ms", false);
        json_int_or_null(w->expires_in_ms, w->expires_in_ms != -3);
        json_key("waited_ms", false);
        json_int_or_null(w->waited_ms, in->kind == OBJ_LOCK);
        putchar('}');
    }
    putchar(']');
    json_key("promised_to", false);
    if (in->promised.client_id) {
        putchar('{');
        json_key("client_id", true);
        json_str(in->promised.client_id);
        json_key("owner", false);
        json_str(in->promised.owner);
        json_key("expires_in_ms", false);
        json_int_or_null(in->promised.expires_in_ms, in->promised.expires_in_ms >= 0);
        putchar('}');
    } else {
        fputs("null", stdout);
    }

    json_key("permits", false);
    putchar('[');
    for (size_t i = 0; i < in->npermits; i++) {
        const permit *p = &in->permits[i];
        printf("%s{", i ? "," : "");
        json_key("id", true);
        json_str(p->id);
        json_key("expires_in_ms", false);
        json_int_or_null(p->expires_in_ms, p->expires_in_ms != -1);
        putchar('}');
    }
    putchar(']');

    json_key("channel", false);
    json_str(in->channel);
    json_key("subscribers", false);
    printf("%lld", in->subscribers);
    json_key("note", false);
    json_str(in->note[0] ? in->note : NULL);
    json_key("node", false);
    json_str(in->node);
    json_key("url", false);
    json_str(url);
    puts("}");
}

/* ---- the command ----------------------------------------------------------------------- */

int cmd_inspect(int argc, char **argv) {
    bool json = false;
    int as = -1;
    const char *name = NULL;
    cli_args a;
    cli_args_init(&a, argc, argv, inspect_opts, false);
    for (;;) {
        int id = cli_next(&a);
        if (id == CLI_ARG_END)
            break;
        switch (id) {
        case CLI_ARG_HELP:
            print_help();
            return CLI_EXIT_OK;
        case CLI_ARG_ERROR:
            return CLI_EXIT_USAGE;
        case CLI_ARG_POSITIONAL:
            if (name)
                return cli_usage_error("one NAME at a time ('%s' and '%s')", name, a.value);
            name = a.value;
            break;
        case OPT_JSON:
            json = true;
            break;
        case OPT_AS:
            as = obj_kind_parse(a.value);
            if (as != OBJ_SEMAPHORE && as != OBJ_LATCH)
                return cli_usage_error("--as: '%s' is neither 'semaphore' nor 'latch'", a.value);
            break;
        default:
            return CLI_EXIT_SOFTWARE;
        }
    }
    if (!name || !name[0])
        return cli_usage_error("no NAME given");

    dlock_client *c = NULL;
    int code = cli_connect(&c);
    if (code != 0)
        return code;
    inspection in;
    code = inspect_read(c, name, as, &in);
    dlock_client_free(c);
    if (code == 0) {
        char url[CLI_URL_SHOWN_MAX];
        dlock__url_masked(cli_url(), url, sizeof(url));
        if (json)
            print_json(&in, url);
        else
            print_table(&in, url);
        if (fflush(stdout) != 0)
            code = CLI_EXIT_SOFTWARE;
    }
    inspection_free(&in);
    return code;
}
