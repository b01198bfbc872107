/* SPDX-License-Identifier: MIT */
/* script.c — the registry of the library's Lua scripts.
 *
 * The scripts are the src/<primitive>/<op>.lua files, embedded at build time into the
 * generated dlock__scripts[] table (cmake/embed_lua.cmake). Each (re)connect of the
 * command connection loads all of them with SCRIPT LOAD as part of its handshake, which
 * also gives their SHA1s; commands then run them with EVALSHA. When the server has lost
 * its cache anyway (SCRIPT FLUSH, a failover to a replica that never saw the load), the
 * NOSCRIPT reply makes conn.c resend that one command as EVAL.
 *
 * In a Cluster the scripts run as Redisson's do there: their wake-ups go out with SPUBLISH
 * (sharded pub/sub: the message reaches the subscribers of the channel's shard, not every
 * node), and they declare allow-cross-slot-keys, which the watchdog's renewal batches need:
 * one batch per node touches keys of many slots, all but the first undeclared (Redis 7.0
 * refuses declared keys of several slots even with the flag; the flag lets a script touch
 * undeclared keys of its node). The cluster's text of a script is made from the
 * embedded one when the client is made: the shebang line and a prelude (below) in front,
 * and every `('publish',` written `('spublish',` — the one form the scripts publish in,
 * through redis.call or redis.pcall (tests/unit/test_cluster_url.c checks that no other is
 * left).
 *
 * A Cluster also judges a script by its declared keys while their slot is being migrated:
 * a key the old owner lacks sends the script to the new one (ASK), and a multi-key script
 * with some keys missing is refused (TRYAGAIN) until the migration ends. A channel, which
 * Redisson's scripts take among their KEYS, is never stored, so it would count as missing
 * for the whole migration, and every release would wait for its end — past a short lease.
 * So in a Cluster the KEYS that are no stored keys (the channels, the read-write lock's
 * name base: each script's header tags them [unstored], and the build turns the tags into
 * dlock__scripts[id].unstored_keys, cmake/embed_lua.cmake) are not declared: conn.c passes them
 * after the arguments, then a last argument naming their positions ("2,4"; "2+99" for the
 * watchdog's batches, which declare their first key only), and the prelude puts KEYS and ARGV back
 * as the script wrote them. (Publishing to a shard channel is served by the slot's owner during a
 * migration: the cluster checks no channel's presence.) */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "net/net.h"

#ifndef DLOCK__HAVE_SCRIPTS
#error "the core's own scripts (src/core/*.lua) were not embedded"
#endif

static void on_loaded(dlock__link *link, const dlock__reply *reply, void *privdata) {
    if (reply->type == REDIS_REPLY_ERROR) {
        dlock__link_handshake_error(link, reply);
        return;
    }
    if (reply->type != REDIS_REPLY_STRING || reply->len != 40) {
        dlock__link_protocol_error(link, "SCRIPT LOAD answered without a SHA1", reply);
        return;
    }
    size_t id = (size_t)(uintptr_t)privdata;
    memcpy(DLOCK__NET(link->client)->script_sha[id], reply->str, 40);
    DLOCK__NET(link->client)->script_sha[id][40] = '\0';
    dlock__link_handshake_step(link);
}

int dlock__scripts_load(dlock__link *link) {
    int n = 0;
    for (size_t i = 0; i < DLOCK__SCRIPT_COUNT; i++) {
        size_t len;
        const char *text = dlock__script_text(link->client, (enum dlock__script_id)i, &len);
        const char *argv[] = {"SCRIPT", "LOAD", text};
        size_t lens[] = {6, 4, len};
        if (dlock__link_send(link, 3, argv, lens, on_loaded, (void *)(uintptr_t)i) != DLOCK_OK)
            break; /* the link failed: the attempt is over */
        n++;
    }
    return n;
}

/* The scripts that never write, by name ("<folder>/<op>"): no WAIT follows them (conn.c,
 * replicas.c). Every other script is taken to write. The one list: a new read-only script
 * goes here. None today — even permits.lua's 'available' gives expired permits back. */
static const char *const read_only_scripts[] = {NULL};

bool dlock__script_writes(enum dlock__script_id id) {
    for (size_t i = 0; read_only_scripts[i]; i++)
        if (strcmp(dlock__scripts[id].name, read_only_scripts[i]) == 0)
            return false;
    return true;
}

const char *dlock__script_sha(const dlock_client *c, enum dlock__script_id id) {
    return DLOCK__NET(c)->script_sha[id];
}

/* ---- the cluster's texts ------------------------------------------------------------------ */

static const char SHEBANG[] =
    "#!lua flags=allow-cross-slot-keys\n"
    "local KEYS, ARGV = KEYS, ARGV\n"
    "do -- the undeclared KEYS back in their places (script.c)\n"
    "  local at, keys, args, d = {}, {}, {}, 1\n"
    "  local from, count = string.match(ARGV[#ARGV], '^(%d+)%+(%d+)$')\n"
    "  if from then\n"
    "    for j = 0, count - 1 do at[#at + 1] = from + j end\n"
    "  else\n"
    "    for p in string.gmatch(ARGV[#ARGV], '%d+') do at[#at + 1] = tonumber(p) end\n"
    "  end\n"
    "  local nargs = #ARGV - 1 - #at\n"
    "  for j = 1, #at do keys[at[j]] = ARGV[nargs + j] end\n"
    "  for i = 1, #KEYS + #at do\n"
    "    if not keys[i] then keys[i] = KEYS[d]; d = d + 1 end\n"
    "  end\n"
    "  for i = 1, nargs do args[i] = ARGV[i] end\n"
    "  KEYS, ARGV = keys, args\n"
    "end\n";
static const char PUBLISH[] = "('publish',", SPUBLISH[] = "('spublish',";

static size_t count_of(const char *text, const char *what) {
    size_t n = 0;
    for (const char *at = text; (at = strstr(at, what)); at += strlen(what))
        n++;
    return n;
}

/* The cluster's text of src, in a new string. */
static char *sharded_text(const dlock__script_source *src) {
    size_t size = sizeof(SHEBANG) + src->len + count_of(src->text, PUBLISH) + 1;
    char *out = dlock__malloc(size), *w = out;
    if (!out)
        return NULL;
    memcpy(w, SHEBANG, sizeof(SHEBANG) - 1);
    w += sizeof(SHEBANG) - 1;
    for (const char *r = src->text; *r;) {
        const char *hit = strstr(r, PUBLISH);
        size_t plain = hit ? (size_t)(hit - r) : strlen(r);
        memcpy(w, r, plain);
        w += plain;
        r += plain;
        if (hit) {
            memcpy(w, SPUBLISH, sizeof(SPUBLISH) - 1);
            w += sizeof(SPUBLISH) - 1;
            r += sizeof(PUBLISH) - 1;
        }
    }
    *w = '\0';
    return out;
}

int dlock__scripts_shard(dlock_client *c) {
    DLOCK__NET(c)->script_text =
        dlock__calloc(DLOCK__SCRIPT_COUNT, sizeof(*DLOCK__NET(c)->script_text));
    if (!DLOCK__NET(c)->script_text)
        return DLOCK_ENOMEM;
    DLOCK__NET(c)->script_unstored =
        dlock__calloc(DLOCK__SCRIPT_COUNT, sizeof(*DLOCK__NET(c)->script_unstored));
    if (!DLOCK__NET(c)->script_unstored)
        return DLOCK_ENOMEM;
    for (size_t i = 0; i < DLOCK__SCRIPT_COUNT; i++) {
        if (!(DLOCK__NET(c)->script_text[i] = sharded_text(&dlock__scripts[i])))
            return DLOCK_ENOMEM;
        DLOCK__NET(c)->script_unstored[i] = dlock__scripts[i].unstored_keys;
    }
    return DLOCK_OK;
}

const char *dlock__script_text(const dlock_client *c, enum dlock__script_id id, size_t *len) {
    const char *text =
        DLOCK__NET(c)->script_text ? DLOCK__NET(c)->script_text[id] : dlock__scripts[id].text;
    *len = DLOCK__NET(c)->script_text ? strlen(text) : dlock__scripts[id].len;
    return text;
}

void dlock__scripts_free(dlock_client *c) {
    for (size_t i = 0; DLOCK__NET(c)->script_text && i < DLOCK__SCRIPT_COUNT; i++)
        dlock__free(DLOCK__NET(c)->script_text[i]);
    dlock__free(DLOCK__NET(c)->script_text);
    dlock__free(DLOCK__NET(c)->script_unstored);
    DLOCK__NET(c)->script_text = NULL;
    DLOCK__NET(c)->script_unstored = NULL;
}
