/* SPDX-License-Identifier: MIT */
/* doctor_acl.c — `dlock doctor`'s ACL checks: may the user run everything dlock sends, on an
 * object's keys and channels?
 *
 * Redis 7's `ACL DRYRUN user command args...` answers whether user could run the command
 * without running it. Asked for:
 *   - every command each primitive's scripts call: dlock__scripts[id].commands, the list
 *     the build reads off each script it embeds, preludes included (cmake/embed_lua.cmake);
 *     in a Cluster a script's PUBLISH goes out as SPUBLISH (src/core/net/script.c), so that is
 *     what is asked;
 *   - the commands the C code sends itself (COMMANDS below: the connection's, the tool's,
 *     sync_replicas', a Cluster client's), with the object's key;
 *   - the object's side keys and channels (SIDE_NAMES below, REDIS_LAYOUT of docs/), each
 *     as a key the scripts write and each channel as one the client subscribes to and the
 *     scripts publish on (sharded in a Cluster).
 * The two tables are the C side of what scripts/acl-rule.py reads off the sources to write
 * the documented rule; tests/integration/test_cli_doctor.c takes each word out of that rule
 * in turn and sees doctor name what is missing, so neither can drift from the other.
 *
 * The key names are those of an object named --name (default "dlock-doctor:probe"): use the
 * prefix the application's names start with. DRYRUN's arguments come from COMMAND INFO
 * (arity, key positions); every other argument is "1". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "doctor.h"

/* The commands the C code sends, by who sends them. A|B is a container's subcommand. */
typedef struct command_group {
    const char *check;        /* the check's name */
    bool cluster_only;        /* only a Cluster client sends them */
    const char *commands[16]; /* NULL-terminated */
} command_group;

static const command_group COMMANDS[] = {
    {"acl: client",
     false,
     {"ping", "select", "eval", "evalsha", "script|load", "subscribe", "unsubscribe", "get",
      "exists", "hexists", "hget", "pttl", NULL}},
    {"acl: tool", false, {"type", "time", "hgetall", "lrange", "zrange", "pubsub|numsub", NULL}},
    {"acl: replicas", false, {"role", "wait", NULL}},
    {"acl: cluster",
     true,
     {"asking", "cluster|slots", "pubsub|shardnumsub", "spublish", "ssubscribe", "sunsubscribe",
      NULL}},
};

/* How an object's side keys and channels are named from its name N. */
typedef enum name_form {
    FORM_PREFIXED, /* "part:{N}" ("part:N" when N holds a '{') */
    FORM_SUFFIXED, /* "{N}:part" ("N:part") */
    FORM_BRACED,   /* "part{N}" */
} name_form;

typedef struct side_name {
    name_form form;
    const char *part;
    bool channel;
} side_name;

static const side_name SIDE_NAMES[] = {
    {FORM_SUFFIXED, "doctor", false}, /* a read-write lock's and a hand-off's "{N}:..." keys */
    {FORM_PREFIXED, "redisson_lock_queue", false},
    {FORM_PREFIXED, "redisson_lock_timeout", false},
    {FORM_PREFIXED, "redisson_lock_token", false},
    {FORM_PREFIXED, "redisson_lock__channel", true},
    {FORM_PREFIXED, "dlock_lock_turn__channel", true},
    {FORM_PREFIXED, "redisson_rwlock", true},
    {FORM_PREFIXED, "redisson_sc", true},
    {FORM_BRACED, "redisson_countdownlatch__channel__", true},
};

/* ---- a small set of strings ------------------------------------------------------------- */

typedef struct words {
    char **v;
    size_t n, cap;
} words;

static bool words_has(const words *w, const char *s) {
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->v[i], s) == 0)
            return true;
    return false;
}

/* Adds a copy of s (len bytes) unless there; false on ENOMEM. */
static bool words_add(words *w, const char *s, size_t len) {
    char *copy = malloc(len + 1);
    if (!copy)
        return false;
    memcpy(copy, s, len);
    copy[len] = '\0';
    if (words_has(w, copy)) {
        free(copy);
        return true;
    }
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 16;
        char **v = realloc(w->v, cap * sizeof(*v));
        if (!v) {
            free(copy);
            return false;
        }
        w->v = v;
        w->cap = cap;
    }
    w->v[w->n++] = copy;
    return true;
}

static void words_free(words *w) {
    for (size_t i = 0; i < w->n; i++)
        free(w->v[i]);
    free(w->v);
    memset(w, 0, sizeof(*w));
}

/* ---- ACL DRYRUN ------------------------------------------------------------------------------ */

typedef struct dryrun {
    doctor_report *r;
    const char *user;
    const char *key; /* the object's own key, N */
    bool sharded;
    redis_lib_reply *info; /* COMMAND INFO of every command asked about, or NULL */
    words info_names;      /* ...in its order */
    char denied[1024];     /* "cmd (reason); ..." for the check in progress */
    char grant[512];       /* what to grant: "+cmd ~key &channel" */
    char unknown[512];     /* what could not be asked */
} dryrun;

static void append(char *buf, size_t size, const char *sep, const char *text) {
    size_t used = strlen(buf);
    if (used + 1 >= size)
        return;
    snprintf(buf + used, size - used, "%s%s", used ? sep : "", text);
}

/* The COMMAND INFO entry of cmd (no container), or NULL. */
static const redis_lib_reply *info_of(const dryrun *d, const char *cmd) {
    if (!d->info)
        return NULL;
    for (size_t i = 0; i < d->info_names.n && i < d->info->elements; i++) {
        const redis_lib_reply *e = d->info->element[i];
        if (strcmp(d->info_names.v[i], cmd) == 0 && e->type == DLOCK__REPLY_ARRAY &&
            e->elements >= 6)
            return e;
    }
    return NULL;
}

static bool is_channel_command(const char *cmd) {
    static const char *const channel_commands[] = {
        "publish",      "spublish",      "subscribe",          "ssubscribe", "unsubscribe",
        "sunsubscribe", "pubsub|numsub", "pubsub|shardnumsub", NULL};
    for (int i = 0; channel_commands[i]; i++)
        if (strcmp(cmd, channel_commands[i]) == 0)
            return true;
    return false;
}

/* Asks ACL DRYRUN user words...; notes a refusal under `what` (a command, key or channel)
 * and the grant that fixes it. */
static void ask_dryrun(dryrun *d, const char *what, const char *grant, int argc,
                       const char *const *argv) {
    const char *words_v[24] = {"ACL", "DRYRUN", d->user};
    for (int i = 0; i < argc && i < 21; i++)
        words_v[3 + i] = argv[i];
    redis_lib_reply *rep = NULL;
    int rc = redis_lib_call(d->r->c, 3 + argc, words_v, &rep);
    if (rc != DLOCK_OK) {
        append(d->unknown, sizeof(d->unknown), "; ", what);
        return;
    }
    if (!(rep->type == DLOCK__REPLY_STATUS && strcmp(rep->str, "OK") == 0)) {
        char line[300];
        snprintf(line, sizeof(line), "%s (%s)", what, rep->str);
        append(d->denied, sizeof(d->denied), "; ", line);
        append(d->grant, sizeof(d->grant), " ", grant);
    }
    redis_lib_reply_free(rep);
}

/* DRYRUN of cmd ("zadd", "script|load") with plausible arguments: key and channel are the
 * object's, the others "1", as many as its arity asks. */
static void dryrun_command(dryrun *d, const char *cmd, const char *channel) {
    const char *argv[12];
    int argc = 0;
    char container[32], grant[48];
    snprintf(grant, sizeof(grant), "+%s", cmd);
    const char *bar = strchr(cmd, '|');
    if (bar) {
        snprintf(container, sizeof(container), "%.*s", (int)(bar - cmd), cmd);
        argv[argc++] = container;
        argv[argc++] = bar + 1;
        if (strcmp(cmd, "script|load") == 0)
            argv[argc++] = "return 1";
        else if (is_channel_command(cmd))
            argv[argc++] = channel;
    } else if (strcmp(cmd, "eval") == 0 || strcmp(cmd, "evalsha") == 0) {
        argv[argc++] = cmd;
        argv[argc++] = cmd[4] ? "0000000000000000000000000000000000000000" : "return 1";
        argv[argc++] = "1";
        argv[argc++] = d->key;
    } else if (is_channel_command(cmd)) {
        argv[argc++] = cmd;
        argv[argc++] = channel;
        if (strstr(cmd, "publish"))
            argv[argc++] = "1";
    } else {
        const redis_lib_reply *info = info_of(d, cmd);
        if (!info) {
            append(d->unknown, sizeof(d->unknown), "; ", cmd);
            return;
        }
        long long arity = info->element[1]->integer;
        long long first = info->element[3]->integer, last = info->element[4]->integer;
        long long step = info->element[5]->integer > 0 ? info->element[5]->integer : 1;
        long long n = arity < 0 ? -arity : arity;
        argv[argc++] = cmd;
        for (long long pos = 1; pos < n && argc < 12; pos++) {
            bool key =
                first > 0 && pos >= first && (last < 0 || pos <= last) && (pos - first) % step == 0;
            if (strcmp(cmd, "select") == 0 || strcmp(cmd, "wait") == 0)
                key = false;
            argv[argc++] = key ? d->key : (strcmp(cmd, "wait") == 0 ? "0" : "1");
        }
    }
    ask_dryrun(d, cmd, grant, argc, argv);
}

/* Adds the check `name` from what d gathered since the last one. */
static void conclude(dryrun *d, const char *name, const char *what, size_t asked) {
    if (d->denied[0]) {
        char fix[700];
        snprintf(fix, sizeof(fix),
                 "ACL SETUSER %s %s (or the whole rule in docs/operations.md, \"ACL: what a dlock "
                 "user needs\")",
                 d->user, d->grant);
        doctor_add(d->r, name, DOCTOR_FAIL, fix, "user %s may not: %s", d->user, d->denied);
    } else if (d->unknown[0]) {
        doctor_add(d->r, name, DOCTOR_WARN,
                   "run dlock doctor with the URL of a user that may run COMMAND INFO and ACL "
                   "DRYRUN",
                   "user %s: could not ask about %s", d->user, d->unknown);
    } else {
        doctor_add(d->r, name, DOCTOR_OK, NULL, "user %s may use all %zu %s", d->user, asked, what);
    }
    d->denied[0] = d->grant[0] = d->unknown[0] = '\0';
}

/* "part:{N}" etc. for n, in buf. */
static const char *side_name_of(const side_name *s, const char *n, char *buf, size_t size) {
    bool braced = strchr(n, '{') != NULL;
    switch (s->form) {
    case FORM_PREFIXED:
        snprintf(buf, size, braced ? "%s:%s" : "%s:{%s}", s->part, n);
        break;
    case FORM_SUFFIXED:
        snprintf(buf, size, braced ? "%s:%s" : "{%s}:%s", n, s->part);
        break;
    case FORM_BRACED:
        snprintf(buf, size, "%s{%s}", s->part, n);
        break;
    }
    return buf;
}

/* ---- the checks ------------------------------------------------------------------------------ */

/* The scripts' commands of folder (all folders: NULL) into out. */
static bool folder_commands(const char *folder, bool sharded, words *out) {
    for (int id = 0; id < DLOCK__SCRIPT_COUNT; id++) {
        const char *name = dlock__scripts[id].name;
        size_t len = strcspn(name, "/");
        if (folder && (strlen(folder) != len || strncmp(name, folder, len) != 0))
            continue;
        for (const char *const *c = dlock__scripts[id].commands; *c; c++) {
            const char *cmd = sharded && strcmp(*c, "publish") == 0 ? "spublish" : *c;
            if (!words_add(out, cmd, strlen(cmd)))
                return false;
        }
    }
    return true;
}

/* COMMAND INFO of every plain command doctor asks about, in one call. */
static void load_command_info(dryrun *d) {
    words all = {0};
    bool ok = folder_commands(NULL, d->sharded, &all);
    for (size_t g = 0; ok && g < sizeof(COMMANDS) / sizeof(COMMANDS[0]); g++)
        for (int i = 0; ok && COMMANDS[g].commands[i]; i++)
            if (!strchr(COMMANDS[g].commands[i], '|'))
                ok = words_add(&all, COMMANDS[g].commands[i], strlen(COMMANDS[g].commands[i]));
    const char **argv = ok ? malloc((all.n + 2) * sizeof(*argv)) : NULL;
    if (argv) {
        argv[0] = "COMMAND";
        argv[1] = "INFO";
        for (size_t i = 0; i < all.n; i++)
            argv[2 + i] = all.v[i];
        redis_lib_reply *rep = NULL;
        if (redis_lib_call(d->r->c, (int)all.n + 2, argv, &rep) == DLOCK_OK) {
            if (rep->type == DLOCK__REPLY_ARRAY && rep->elements == all.n) {
                d->info = rep;
                d->info_names = all;
                memset(&all, 0, sizeof(all));
            } else {
                redis_lib_reply_free(rep);
            }
        }
        free(argv);
    } else {
        d->r->out_of_memory = true;
    }
    words_free(&all);
}

void doctor_check_acl(doctor_report *r) {
    char err[256], user[128];
    bool refused = false;
    if (r->acl_user) {
        snprintf(user, sizeof(user), "%s", r->acl_user);
    } else {
        redis_lib_reply *who = doctor_ask(r, err, sizeof(err), &refused, "ACL", "WHOAMI", NULL);
        if (!who) {
            doctor_add(r, "acl", DOCTOR_WARN,
                       "run dlock doctor --user NAME with the URL of a user that may run ACL "
                       "DRYRUN (an admin)",
                       "cannot check the user's ACL: ACL WHOAMI %s (%s)",
                       refused ? "refused" : "failed", err);
            return;
        }
        snprintf(user, sizeof(user), "%s", who->str);
        redis_lib_reply_free(who);
    }

    dryrun d = {.r = r, .user = user, .key = r->object_name, .sharded = r->sharded};
    char channel[512], key[512];
    side_name_of(&SIDE_NAMES[4], r->object_name, channel, sizeof(channel));

    /* Can DRYRUN answer at all? (Redis < 7, or a user that may not run it.) */
    const char *probe[] = {"ping"};
    ask_dryrun(&d, "ping", "+ping", 1, probe);
    if (d.unknown[0] && strstr(dlock_last_error(), "' not found")) {
        /* ACL users are each server's own: in a Cluster, one node may lack the user */
        doctor_add(r, "acl", DOCTOR_FAIL,
                   "create the user on this server (the whole rule in docs/operations.md, "
                   "\"ACL: what a dlock user needs\"): ACL users are each server's own",
                   "user %s does not exist here (%s)", user, dlock_last_error());
        return;
    }
    if (d.unknown[0]) {
        doctor_add(r, "acl", DOCTOR_WARN,
                   "on Redis 7 or later, run dlock doctor --user NAME with the URL of a user "
                   "that may run ACL DRYRUN (an admin)",
                   "cannot check user %s's ACL: ACL DRYRUN failed (%s)", user, dlock_last_error());
        return;
    }
    d.denied[0] = d.grant[0] = '\0';
    load_command_info(&d);

    for (size_t g = 0; g < sizeof(COMMANDS) / sizeof(COMMANDS[0]); g++) {
        if (COMMANDS[g].cluster_only && !d.sharded)
            continue;
        size_t asked = 0;
        for (int i = 0; COMMANDS[g].commands[i]; i++, asked++)
            dryrun_command(&d, COMMANDS[g].commands[i], channel);
        conclude(&d, COMMANDS[g].check, "commands it sends", asked);
    }

    /* one check per primitive: the folder of its scripts */
    words folders = {0};
    for (int id = 0; id < DLOCK__SCRIPT_COUNT; id++) {
        const char *name = dlock__scripts[id].name;
        if (!words_add(&folders, name, strcspn(name, "/")))
            r->out_of_memory = true;
    }
    for (size_t f = 0; f < folders.n; f++) {
        words cmds = {0};
        if (!folder_commands(folders.v[f], d.sharded, &cmds))
            r->out_of_memory = true;
        for (size_t i = 0; i < cmds.n; i++)
            dryrun_command(&d, cmds.v[i], channel);
        char check[64];
        snprintf(check, sizeof(check), "acl: %s scripts", folders.v[f]);
        conclude(&d, check, "commands its scripts call", cmds.n);
        words_free(&cmds);
    }
    words_free(&folders);

    /* the keys and channels of an object named --name */
    size_t asked = 1;
    const char *own[] = {"del", r->object_name};
    char grant[600];
    snprintf(grant, sizeof(grant), "~%s", r->object_name);
    ask_dryrun(&d, r->object_name, grant, 2, own);
    for (size_t i = 0; i < sizeof(SIDE_NAMES) / sizeof(SIDE_NAMES[0]); i++, asked++) {
        const side_name *s = &SIDE_NAMES[i];
        side_name_of(s, r->object_name, key, sizeof(key));
        const char *as_key[] = {"del", key};
        snprintf(grant, sizeof(grant), "~%s", key);
        ask_dryrun(&d, key, grant, 2, as_key); /* the scripts get channels as KEYS too */
        if (!s->channel)
            continue;
        const char *sub[] = {d.sharded ? "ssubscribe" : "subscribe", key};
        const char *pub[] = {d.sharded ? "spublish" : "publish", key, "1"};
        snprintf(grant, sizeof(grant), "&%s", key);
        char what[600];
        snprintf(what, sizeof(what), "channel %s", key);
        ask_dryrun(&d, what, grant, 2, sub);
        ask_dryrun(&d, what, grant, 3, pub);
    }
    char what[600];
    snprintf(what, sizeof(what), "keys and channels of an object named %s", r->object_name);
    conclude(&d, "acl: keys and channels", what, asked);

    redis_lib_reply_free(d.info);
    words_free(&d.info_names);
}
