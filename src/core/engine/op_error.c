/* SPDX-License-Identifier: MIT */
/* op_error.c — the detail of an op's failure, the text dlock_last_error() gives its caller.
 *
 * An op's text is written where the failure is understood: a primitive's own words
 * (dlock__op_fail), a failed command's reply or the connection's last error
 * (dlock__op_fail_reply), a count that is not one, a reply of the wrong shape. The texts
 * read the transport's state (the command link's last error, the subscriber's refused
 * channel, the scripts' texts) but call nothing above the transport, so that the submit
 * door and the handle life cycle can both use them. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "engine/engine.h"

int dlock__op_fail(dlock__op *op, int err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    dlock__vformat_fit(op->error_text, sizeof(op->error_text), fmt, ap);
    va_end(ap);
    return err;
}

/* The command a script was refused. Redis 7.0 names none in a script's refusal ("... can't
 * run this command or subcommand script: <sha>, on @user_script:<line>."), but it names the
 * script and the line, and the client has the text: the line calls the command
 * (redis.call('sadd', ...)). false when the text says otherwise, or the line names no
 * command of its own (a helper that passes its arguments on). */
static bool script_refused_command(const dlock_client *c, const char *text, char *buf,
                                   size_t size) {
    const char *at = strstr(text, " script: ");
    char sha[41];
    long line = 0;
    if (!at || !strstr(text, "run this command") ||
        sscanf(at, " script: %40[0-9a-f], on @user_script:%ld", sha, &line) != 2 || line < 1)
        return false;
    for (int id = 0; id < DLOCK__SCRIPT_COUNT; id++) {
        if (strcmp(dlock__script_sha(c, (enum dlock__script_id)id), sha) != 0)
            continue;
        size_t len;
        const char *s = dlock__script_text(c, (enum dlock__script_id)id, &len);
        (void)len; /* a Cluster text's shebang is its line 1, as Redis counts */
        for (long n = 1; n < line && *s; n++)
            s = strchr(s, '\n') ? strchr(s, '\n') + 1 : s + strlen(s);
        const char *eol = strchr(s, '\n') ? strchr(s, '\n') : s + strlen(s);
        const char *call = strstr(s, "call('");
        if (!call || call > eol)
            return false;
        const char *name = call + strlen("call('"), *end = strchr(name, '\'');
        if (!end || end > eol || end == name || (size_t)(end - name) >= size)
            return false;
        snprintf(buf, size, "%.*s", (int)(end - name), name);
        return true;
    }
    return false;
}

int dlock__op_fail_reply(dlock__op *op, int status, const dlock__reply *reply) {
    dlock_client *c = op->client;
    const char *server_text =
        dlock__reply_type(reply) == DLOCK__REPLY_ERROR ? dlock__reply_str(reply, NULL) : NULL;
    if (status == DLOCK_ENOPERM) {
        /* from a command's reply, the command link's handshake, or (no reply and the command
         * link fine) a refused SUBSCRIBE of a wait */
        char text[sizeof(op->error_text)];
        if (!server_text && DLOCK__NET(c)->conn.link.last_error == DLOCK_ENOPERM)
            server_text = DLOCK__NET(c)->conn.link.last_error_text;
        char command[64];
        if (server_text)
            dlock__noperm_text(
                c, server_text, NULL,
                script_refused_command(c, server_text, command, sizeof(command)) ? command : NULL,
                text, sizeof(text));
        else
            snprintf(text, sizeof(text), "%s", DLOCK__NET(c)->pubsub.refused_text);
        return dlock__op_fail(op, status, "%s", text[0] ? text : dlock_strerror(status));
    }
    if (status == DLOCK_EREDIS && server_text)
        return dlock__op_fail(op, status, "%s", server_text);
    if ((status == DLOCK_ECONN || status == DLOCK_EAUTH) &&
        DLOCK__NET(c)->conn.link.last_error_text[0])
        return dlock__op_fail(op, status, "%s", DLOCK__NET(c)->conn.link.last_error_text);
    return dlock__op_fail(op, status, "%s", dlock_strerror(status));
}

int dlock__op_read_count(dlock__op *op, const dlock__reply *r, bool nil_is_zero, const char *what,
                         const char *key, int64_t *out) {
    if (nil_is_zero && dlock__reply_type(r) == DLOCK__REPLY_NIL) {
        *out = 0;
        return DLOCK_OK;
    }
    if (dlock__reply_int64(r, out) == DLOCK_OK)
        return DLOCK_OK;
    char held[64];
    dlock__reply_describe(r, held, sizeof(held));
    return dlock__op_fail(op, DLOCK_EREDIS, "%s %s holds %s, not an integer count", what, key,
                          held);
}

int dlock__op_bad_reply(dlock__op *op, const dlock__reply *r, const char *what, const char *key) {
    char got[64];
    dlock__reply_describe(r, got, sizeof(got));
    return dlock__op_fail(op, DLOCK_EREDIS, "%s %s: unexpected reply from Redis: %s", what, key,
                          got);
}
