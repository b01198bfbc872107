/* conn.c — the command connection: every command and script of a client goes through one
 * link (link.c), in the order it was queued.
 *
 * A command is queued in `pending` until the link is ready, then sent and kept in
 * `inflight` until its reply (Redis answers in order, so replies pop the head; a reply with
 * no command waiting is the link's protocol violation). Commands queued in one loop turn
 * leave in one write: the link's socket flushes its output buffer when writable, after the
 * turn.
 *
 * Time limits, both watched by one timer on the earliest deadline:
 *   - reply timeout: the oldest command in flight has waited timeout_ms -> the connection
 *     is taken for dead and dropped;
 *   - give up: a command gets timeout_ms x (retry_attempts + 1) from when it was queued to
 *     its reply, across reconnects; a command still waiting for a connection after that
 *     fails with DLOCK_ECONN (or DLOCK_EAUTH if the server refused our credentials).
 * When the connection drops, a command in flight is sent again after the reconnect if it
 * is DLOCK__CMD_RETRY_SAFE and has attempts left, otherwise it fails with DLOCK_ECONN:
 * its effect is unknown. */
#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "core.h"

struct dlock__cmd {
    dlock__cmd *next;
    dlock__reply_fn fn;
    void *arg;
    unsigned flags;
    int script;    /* enum dlock__script_id, or -1 for a plain command */
    int nkeys;     /* scripts: how many of args are keys */
    bool use_eval; /* the server said NOSCRIPT: send the script's text */
    int sends;
    int64_t give_up_ms;
    int64_t sent_ms;
    int argc;
    size_t *argvlen;
    char **argv;
};

static dlock__conn *conn_of(dlock__link *link) {
    return DLOCK__CONTAINER_OF(link, dlock__conn, link);
}

/* ---- queues ----------------------------------------------------------------------------- */

static void queue_push(dlock__cmd_queue *q, dlock__cmd *cmd) {
    cmd->next = NULL;
    if (q->tail)
        q->tail->next = cmd;
    else
        q->head = cmd;
    q->tail = cmd;
    q->count++;
}

static dlock__cmd *queue_pop(dlock__cmd_queue *q) {
    dlock__cmd *cmd = q->head;
    if (cmd) {
        q->head = cmd->next;
        if (!q->head)
            q->tail = NULL;
        q->count--;
        cmd->next = NULL;
    }
    return cmd;
}

/* Takes every command out of q, leaving it empty. */
static dlock__cmd_queue queue_take(dlock__cmd_queue *q) {
    dlock__cmd_queue all = *q;
    memset(q, 0, sizeof(*q));
    return all;
}

/* ---- completion ------------------------------------------------------------------------- */

static void finish(dlock__conn *conn, dlock__cmd *cmd, int status, const redisReply *reply) {
    conn->reply_sends = cmd->sends;
    cmd->fn(conn->link.client, status, reply, cmd->arg);
    dlock__free(cmd);
}

/* The server refused the handshake in a way that lasts until someone changes its
 * configuration: our credentials, or the ACL denies a command the handshake sends. */
static bool permanent(int err) {
    return err == DLOCK_EAUTH || err == DLOCK_ENOPERM;
}

/* The status for a command that cannot be sent or answered because of the link. */
static int link_status(const dlock__conn *conn) {
    if (conn->closing)
        return DLOCK_ECANCELED;
    return permanent(conn->link.last_error) ? conn->link.last_error : DLOCK_ECONN;
}

/* ---- sending ---------------------------------------------------------------------------- */

static void arm_deadline(dlock__conn *conn);

/* The reply callback is the same for every command: the reply belongs to the head of
 * `inflight` (Redis answers in order), so the link's arg is not needed. */
static void on_reply(dlock__link *link, const dlock__reply *reply, void *arg);

static bool send_cmd(dlock__conn *conn, dlock__cmd *cmd) {
    dlock_client *c = conn->link.client;
    const char *small_argv[64];
    size_t small_len[64];
    int extra = cmd->script >= 0 ? 3 : 0;
    int argc = cmd->argc + extra;
    const char **argv = small_argv;
    size_t *lens = small_len;
    if (argc > 64) {
        argv = dlock__malloc(sizeof(*argv) * (size_t)argc);
        lens = dlock__malloc(sizeof(*lens) * (size_t)argc);
        if (!argv || !lens) {
            dlock__free(argv);
            dlock__free(lens);
            return false;
        }
    }
    char nkeys[16];
    if (cmd->script >= 0) {
        const dlock__script_source *src = &dlock__scripts[cmd->script];
        argv[0] = cmd->use_eval ? "EVAL" : "EVALSHA";
        argv[1] = cmd->use_eval ? src->text : c->script_sha[cmd->script];
        lens[1] = cmd->use_eval ? src->len : strlen(argv[1]);
        argv[2] = nkeys;
        lens[2] = (size_t)snprintf(nkeys, sizeof(nkeys), "%d", cmd->nkeys);
        lens[0] = strlen(argv[0]);
    }
    for (int i = 0; i < cmd->argc; i++) {
        argv[extra + i] = cmd->argv[i];
        lens[extra + i] = cmd->argvlen[i];
    }
    int rc = dlock__link_send(&conn->link, argc, argv, lens, on_reply, NULL);
    if (argv != small_argv) {
        dlock__free(argv);
        dlock__free(lens);
    }
    return rc == DLOCK_OK;
}

static bool transmit(dlock__conn *conn, dlock__cmd *cmd) {
    cmd->sends++;
    cmd->sent_ms = dlock__now_ms();
    if (!send_cmd(conn, cmd))
        return false;
    queue_push(&conn->inflight, cmd);
    conn->commands_sent++;
    return true;
}

static void flush_pending(dlock__conn *conn) {
    while (conn->link.state == LINK_READY && conn->pending.head) {
        dlock__cmd *cmd = queue_pop(&conn->pending);
        if (!transmit(conn, cmd)) {
            /* the context refuses commands: it is going down; keep the order */
            dlock__cmd_queue rest = queue_take(&conn->pending);
            queue_push(&conn->pending, cmd);
            if (rest.head) {
                conn->pending.tail->next = rest.head;
                conn->pending.tail = rest.tail;
                conn->pending.count += rest.count;
            }
            dlock__link_fail_later(&conn->link, DLOCK_ECONN, "cannot send");
            break;
        }
    }
    arm_deadline(conn);
}

/* The server's ACL refused the command, or a command a script ran: "NOPERM ...", or in a
 * script (Redis 7.0) "ERR The user executing the script can't publish to the channel ...". */
static bool acl_refusal(const char *text) {
    return strncmp(text, "NOPERM", 6) == 0 || strstr(text, "user executing the script can't");
}

static void on_reply(dlock__link *link, const dlock__reply *reply, void *arg) {
    (void)arg;
    dlock__conn *conn = conn_of(link);
    dlock__cmd *cmd = queue_pop(&conn->inflight);
    if (!cmd)
        return;
    if (reply->type == REDIS_REPLY_ERROR && cmd->script >= 0 && !cmd->use_eval &&
        strncmp(reply->str, "NOSCRIPT", 8) == 0) {
        /* The script cache was flushed: the script did not run. EVAL runs it and puts it
         * back in the cache for the EVALSHAs that follow. */
        cmd->use_eval = true;
        if (!transmit(conn, cmd))
            finish(conn, cmd, DLOCK_ECONN, NULL);
        return;
    }
    int status = DLOCK_OK;
    if (reply->type == REDIS_REPLY_ERROR)
        status = acl_refusal(reply->str) ? DLOCK_ENOPERM : DLOCK_EREDIS;
    finish(conn, cmd, status, reply);
}

/* ---- deadlines -------------------------------------------------------------------------- */

static void arm_deadline(dlock__conn *conn) {
    dlock__sched *s = &conn->link.client->sched;
    if (dlock__timer_active(&conn->deadline_timer))
        return; /* it fires no later than needed and re-arms itself then */
    int64_t due = INT64_MAX;
    if (conn->inflight.head)
        due = conn->inflight.head->sent_ms + conn->link.client->opts.timeout_ms;
    if (conn->pending.head && conn->pending.head->give_up_ms < due)
        due = conn->pending.head->give_up_ms;
    if (due != INT64_MAX)
        dlock__timer_start_at(s, &conn->deadline_timer, due);
}

static void on_deadline(dlock__timer *t, void *arg) {
    (void)t;
    dlock__conn *conn = arg;
    dlock_client *c = conn->link.client;
    int64_t now = dlock__now_ms();
    if (conn->inflight.head && now >= conn->inflight.head->sent_ms + c->opts.timeout_ms) {
        char why[96];
        snprintf(why, sizeof(why), "no reply within %lld ms", (long long)c->opts.timeout_ms);
        dlock__link_fail(&conn->link, DLOCK_ECONN, why); /* on_down settles the commands */
    }
    while (conn->pending.head && now >= conn->pending.head->give_up_ms) {
        dlock__cmd *cmd = queue_pop(&conn->pending);
        finish(conn, cmd, link_status(conn), NULL);
    }
    arm_deadline(conn);
}

/* ---- link events ------------------------------------------------------------------------ */

static void on_ready(dlock__link *link) {
    dlock__conn *conn = conn_of(link);
    if (conn->on_outcome)
        conn->on_outcome(conn, DLOCK_OK);
    flush_pending(conn);
}

static void on_down(dlock__link *link, int err) {
    dlock__conn *conn = conn_of(link);
    dlock_client *c = link->client;
    if (conn->on_outcome)
        conn->on_outcome(conn, err);
    /* Commands in flight: resend the ones that may run twice (first, in their order),
     * fail the others. Their callbacks may queue new commands: those go behind. */
    dlock__cmd_queue lost = queue_take(&conn->inflight);
    dlock__cmd_queue retry = {0};
    dlock__cmd *cmd;
    while ((cmd = queue_pop(&lost))) {
        bool may_retry = (cmd->flags & DLOCK__CMD_RETRY_SAFE) &&
                         cmd->sends <= c->opts.retry_attempts && !conn->closing;
        if (may_retry)
            queue_push(&retry, cmd);
        else
            finish(conn, cmd, conn->closing ? DLOCK_ECANCELED : DLOCK_ECONN, NULL);
    }
    if (retry.head) {
        retry.tail->next = conn->pending.head;
        if (!conn->pending.head)
            conn->pending.tail = retry.tail;
        conn->pending.head = retry.head;
        conn->pending.count += retry.count;
    }
    if (permanent(err)) {
        /* The server will keep refusing until someone fixes the credentials or the ACL: do
         * not make callers wait for their give-up time. */
        while ((cmd = queue_pop(&conn->pending)))
            finish(conn, cmd, err, NULL);
    }
    conn->reconnects++;
    dlock__timer_stop(&c->sched, &conn->deadline_timer);
    arm_deadline(conn);
}

void dlock__conn_init(dlock__conn *conn, dlock_client *c) {
    memset(conn, 0, sizeof(*conn));
    dlock__link_init(&conn->link, c, "command");
    conn->link.select_db = true;
    conn->link.on_ready = on_ready;
    conn->link.on_down = on_down;
    conn->link.handshake_extra = dlock__scripts_load;
    dlock__timer_init(&conn->deadline_timer, on_deadline, conn);
}

void dlock__conn_close(dlock__conn *conn) {
    conn->closing = true;
    dlock__link_close(&conn->link);
    dlock__timer_stop(&conn->link.client->sched, &conn->deadline_timer);
    dlock__cmd *cmd;
    while ((cmd = queue_pop(&conn->inflight)))
        finish(conn, cmd, DLOCK_ECANCELED, NULL);
    while ((cmd = queue_pop(&conn->pending)))
        finish(conn, cmd, DLOCK_ECANCELED, NULL);
}

/* ---- queueing --------------------------------------------------------------------------- */

static int enqueue(dlock_client *c, int script, int nkeys, unsigned flags, dlock__reply_fn fn,
                   void *arg, int argc, const char *const *argv, const size_t *argvlen) {
    dlock__conn *conn = &c->conn;
    if (conn->closing || atomic_load(&c->closing))
        return DLOCK_ECLOSED;
    size_t bytes = sizeof(dlock__cmd) + (size_t)argc * (sizeof(char *) + sizeof(size_t));
    for (int i = 0; i < argc; i++)
        bytes += argvlen[i] + 1;
    dlock__cmd *cmd = dlock__malloc(bytes);
    if (!cmd)
        return DLOCK_ENOMEM;
    memset(cmd, 0, sizeof(*cmd));
    cmd->fn = fn;
    cmd->arg = arg;
    cmd->flags = flags;
    cmd->script = script;
    cmd->nkeys = nkeys;
    cmd->argc = argc;
    /* one allocation: header, then the length array, the pointer array, the bytes */
    cmd->argvlen = (size_t *)(cmd + 1);
    cmd->argv = (char **)(cmd->argvlen + argc);
    char *bytes_at = (char *)(cmd->argv + argc);
    for (int i = 0; i < argc; i++) {
        cmd->argv[i] = bytes_at;
        cmd->argvlen[i] = argvlen[i];
        memcpy(bytes_at, argv[i], argvlen[i]);
        bytes_at[argvlen[i]] = '\0';
        bytes_at += argvlen[i] + 1;
    }
    cmd->give_up_ms = dlock__now_ms() + c->opts.timeout_ms * (c->opts.retry_attempts + 1);
    queue_push(&conn->pending, cmd);
    if (conn->link.state == LINK_READY)
        flush_pending(conn);
    else
        arm_deadline(conn);
    return DLOCK_OK;
}

int dlock__command(dlock_client *c, unsigned flags, dlock__reply_fn fn, void *arg, int argc,
                   const char *const *argv, const size_t *argvlen) {
    if (argc < 1)
        return DLOCK_EINVAL;
    return enqueue(c, -1, 0, flags, fn, arg, argc, argv, argvlen);
}

int dlock__script(dlock_client *c, enum dlock__script_id script, unsigned flags, dlock__reply_fn fn,
                  void *arg, int nkeys, int nargs, const char *const *args, const size_t *argslen) {
    if ((int)script < 0 || script >= DLOCK__SCRIPT_COUNT || nkeys < 0 || nkeys > nargs)
        return DLOCK_EINVAL;
    return enqueue(c, (int)script, nkeys, flags, fn, arg, nargs, args, argslen);
}

int dlock__reply_sends(const dlock_client *c) {
    return c->conn.reply_sends;
}
