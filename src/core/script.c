/* SPDX-License-Identifier: MIT */
/* script.c — the registry of the library's Lua scripts.
 *
 * The scripts are the src/<primitive>/<op>.lua files, embedded at build time into the
 * generated dlock__scripts[] table (cmake/embed_lua.cmake). Each (re)connect of the
 * command connection loads all of them with SCRIPT LOAD as part of its handshake, which
 * also gives their SHA1s; commands then run them with EVALSHA. When the server has lost
 * its cache anyway (SCRIPT FLUSH, a failover to a replica that never saw the load), the
 * NOSCRIPT reply makes conn.c resend that one command as EVAL. */
#include <stdint.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "core.h"

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
    memcpy(link->client->script_sha[id], reply->str, 40);
    link->client->script_sha[id][40] = '\0';
    dlock__link_handshake_step(link);
}

int dlock__scripts_load(dlock__link *link) {
    int n = 0;
    for (size_t i = 0; i < DLOCK__SCRIPT_COUNT; i++) {
        const dlock__script_source *src = &dlock__scripts[i];
        const char *argv[] = {"SCRIPT", "LOAD", src->text};
        size_t lens[] = {6, 4, src->len};
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
    return c->script_sha[id];
}
