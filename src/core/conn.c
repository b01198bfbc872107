/* SPDX-License-Identifier: MIT */
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
 * its effect is unknown.
 *
 * A script that writes (script.c) is followed in the same write by WAIT <replicas>
 * <timeout> when replicas.c asks for any. Its reply is then copied and kept until the
 * WAIT's answer, and the caller gets both at once (dlock__acks, dlock_int.h). WAIT blocks
 * this connection on the server for up to its timeout, so a command's reply timeout runs
 * from when the reply before it arrived (Redis answers in order) and also gives its own
 * WAIT its time. */
#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "core.h"

/* Where a command sent with a WAIT behind it stands. */
enum wait_phase {
    AWAIT_SCRIPT, /* the script's reply comes next */
    AWAIT_ACKS,   /* the script answered (held); the WAIT's answer comes next */
    AWAIT_RESEND, /* NOSCRIPT: the WAIT's answer comes next, then the script goes as EVAL */
};

struct dlock__cmd {
    dlock__cmd *next;
    dlock__reply_fn fn;
    dlock__acked_fn acked_fn; /* instead of fn: dlock__script_acked */
    void *arg;
    int64_t deadline_ms; /* the caller's (dlock__script_acked), INT64_MAX otherwise */
    /* this send's WAIT: replicas asked (0: none) and its timeout */
    int wait_replicas;
    int64_t wait_timeout_ms;
    enum wait_phase phase;
    redisReply *held; /* AWAIT_ACKS: the script's reply, copied */
    int held_status;
    int64_t clock_ms; /* its reply timeout runs from here: sent, or the reply before it */
    unsigned flags;
    int script;    /* enum dlock__script_id, or -1 for a plain command */
    int nkeys;     /* scripts: how many of args are keys */
    bool use_eval; /* the server said NOSCRIPT: send the script's text */
    int sends;
    int64_t give_up_ms;
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

/* ---- a reply kept until its WAIT answers -------------------------------------------------- */

static void reply_copy_free(redisReply *r) {
    if (!r)
        return;
    for (size_t i = 0; i < r->elements; i++)
        reply_copy_free(r->element[i]);
    dlock__free(r->element);
    dlock__free(r->str);
    dlock__free(r);
}

/* A deep copy of r (hiredis' reader frees r once its callback returns); NULL on ENOMEM. */
static redisReply *reply_copy(const redisReply *r) {
    redisReply *c = dlock__calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->type = r->type;
    c->integer = r->integer;
    c->len = r->len;
    bool ok = true;
    if (r->str) {
        c->str = dlock__malloc(r->len + 1);
        ok = c->str != NULL;
        if (ok) {
            memcpy(c->str, r->str, r->len);
            c->str[r->len] = '\0';
        }
    }
    if (ok && r->elements > 0) {
        c->element = dlock__calloc(r->elements, sizeof(*c->element));
        ok = c->element != NULL;
        for (size_t i = 0; ok && i < r->elements; i++, c->elements++)
            ok = (c->element[i] = reply_copy(r->element[i])) != NULL;
    }
    if (!ok) {
        reply_copy_free(c);
        return NULL;
    }
    return c;
}

/* Forget a send's WAIT state: the command goes again, or ends. */
static void wait_reset(dlock__cmd *cmd) {
    reply_copy_free(cmd->held);
    cmd->held = NULL;
    cmd->phase = AWAIT_SCRIPT;
}

/* ---- completion ------------------------------------------------------------------------- */

/* A write that fewer replicas acknowledged than asked, for a caller that does not take the
 * answer itself: it stands; the log says so. */
static void warn_unacked(dlock__conn *conn, const dlock__cmd *cmd, const dlock__acks *acks) {
    const char *script = cmd->script >= 0 ? dlock__scripts[cmd->script].name : "a command";
    if (acks->wait_error)
        dlock__log(conn->link.client, DLOCK_LOG_WARN,
                   "%s: WAIT refused (%s); the write stands, unacknowledged", script,
                   acks->wait_error->str);
    else
        dlock__log(conn->link.client, DLOCK_LOG_WARN,
                   "%s: %d of %d replicas acknowledged the write within %lld ms; it stands "
                   "(sync_replicas)",
                   script, acks->acked, acks->asked, (long long)acks->timeout_ms);
}

static void finish_acked(dlock__conn *conn, dlock__cmd *cmd, int status, const redisReply *reply,
                         const dlock__acks *acks) {
    static const dlock__acks no_wait = {0};
    if (cmd->acked_fn) {
        cmd->acked_fn(conn->link.client, status, reply, acks ? acks : &no_wait, cmd->sends,
                      cmd->arg);
    } else {
        if (acks && status == DLOCK_OK && acks->acked < acks->asked)
            warn_unacked(conn, cmd, acks);
        cmd->fn(conn->link.client, status, reply, cmd->sends, cmd->arg);
    }
    reply_copy_free(cmd->held);
    dlock__free(cmd);
}

static void finish(dlock__conn *conn, dlock__cmd *cmd, int status, const redisReply *reply) {
    finish_acked(conn, cmd, status, reply, NULL);
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

/* The WAIT behind cmd's script, in the same write. */
static int send_wait(dlock__conn *conn, const dlock__cmd *cmd) {
    char replicas[16], timeout[24];
    const char *argv[] = {"WAIT", replicas, timeout};
    size_t lens[] = {
        4, (size_t)snprintf(replicas, sizeof(replicas), "%d", cmd->wait_replicas),
        (size_t)snprintf(timeout, sizeof(timeout), "%lld", (long long)cmd->wait_timeout_ms)};
    return dlock__link_send(&conn->link, 3, argv, lens, on_reply, NULL);
}

/* Whether this send of cmd is followed by a WAIT, for how many replicas and how long: the
 * URL's sync_timeout_ms, or the time left to the caller's deadline when that is shorter,
 * but never below DLOCK__SYNC_MIN_MS (WAIT's 0 would mean for ever). */
static void plan_wait(dlock__conn *conn, dlock__cmd *cmd) {
    const dlock__endpoint *ep = &conn->link.client->endpoint;
    cmd->wait_replicas = 0;
    cmd->wait_timeout_ms = 0;
    if (cmd->script < 0 || (cmd->flags & DLOCK__CMD_NO_WAIT) ||
        !dlock__script_writes((enum dlock__script_id)cmd->script))
        return;
    int replicas = dlock__replicas_asked(&conn->replicas, ep);
    if (replicas <= 0)
        return;
    int64_t timeout = ep->sync_timeout_ms;
    if (cmd->deadline_ms != INT64_MAX) {
        int64_t left = cmd->deadline_ms - dlock__now_ms();
        int64_t floor = timeout < DLOCK__SYNC_MIN_MS ? timeout : DLOCK__SYNC_MIN_MS;
        if (left < timeout)
            timeout = left > floor ? left : floor;
    }
    cmd->wait_replicas = replicas;
    cmd->wait_timeout_ms = timeout;
}

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
    if (rc == DLOCK_OK && cmd->wait_replicas > 0)
        rc = send_wait(conn, cmd);
    return rc == DLOCK_OK;
}

static bool transmit(dlock__conn *conn, dlock__cmd *cmd) {
    cmd->sends++;
    cmd->clock_ms = dlock__now_ms();
    wait_reset(cmd);
    plan_wait(conn, cmd);
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

static bool is_noscript(const dlock__cmd *cmd, const redisReply *reply) {
    return reply->type == REDIS_REPLY_ERROR && cmd->script >= 0 && !cmd->use_eval &&
           strncmp(reply->str, "NOSCRIPT", 8) == 0;
}

static int reply_status(const redisReply *reply) {
    if (reply->type != REDIS_REPLY_ERROR)
        return DLOCK_OK;
    return acl_refusal(reply->str) ? DLOCK_ENOPERM : DLOCK_EREDIS;
}

/* The script of a command with a WAIT behind it answered: keep the reply for the WAIT's
 * answer (the command stays at the head of inflight). */
static void hold_script_reply(dlock__cmd *cmd, const redisReply *reply) {
    if (is_noscript(cmd, reply)) {
        cmd->phase = AWAIT_RESEND;
        return;
    }
    cmd->phase = AWAIT_ACKS;
    cmd->held = reply_copy(reply);
    cmd->held_status = cmd->held ? reply_status(reply) : DLOCK_ENOMEM;
}

/* The WAIT answered (reply): the caller gets the script's reply and the acknowledgement. */
static void settle_acks(dlock__conn *conn, dlock__cmd *cmd, const redisReply *reply) {
    dlock__acks acks = {.asked = cmd->wait_replicas, .timeout_ms = cmd->wait_timeout_ms};
    if (reply->type == REDIS_REPLY_INTEGER) {
        acks.acked = reply->integer > INT32_MAX ? INT32_MAX : (int)reply->integer;
        dlock__replicas_acked(&conn->replicas, reply->integer);
    } else if (reply->type == REDIS_REPLY_ERROR) {
        acks.wait_error = reply;
    }
    int status = cmd->held_status;
    finish_acked(conn, cmd, status, status == DLOCK_ENOMEM ? NULL : cmd->held, &acks);
}

static void on_reply(dlock__link *link, const dlock__reply *reply, void *arg) {
    (void)arg;
    dlock__conn *conn = conn_of(link);
    dlock__cmd *cmd = conn->inflight.head;
    if (!cmd)
        return;
    if (cmd->wait_replicas > 0 && cmd->phase == AWAIT_SCRIPT) {
        hold_script_reply(cmd, reply);
        return;
    }
    queue_pop(&conn->inflight);
    if (conn->inflight.head) /* its reply comes next: its timeout runs from now */
        conn->inflight.head->clock_ms = dlock__now_ms();
    if (cmd->phase == AWAIT_ACKS) {
        settle_acks(conn, cmd, reply);
        return;
    }
    if (cmd->phase == AWAIT_RESEND || is_noscript(cmd, reply)) {
        /* The script cache was flushed: the script did not run. EVAL runs it and puts it
         * back in the cache for the EVALSHAs that follow. */
        cmd->use_eval = true;
        if (!transmit(conn, cmd))
            finish(conn, cmd, DLOCK_ECONN, NULL);
        return;
    }
    finish(conn, cmd, reply_status(reply), reply);
}

/* ---- deadlines -------------------------------------------------------------------------- */

/* When the oldest command in flight is overdue: timeout_ms from when its reply became the
 * next to come, plus its WAIT's own time. */
static int64_t reply_due_ms(const dlock__conn *conn) {
    const dlock__cmd *head = conn->inflight.head;
    return head->clock_ms + conn->link.client->opts.timeout_ms + head->wait_timeout_ms;
}

static void arm_deadline(dlock__conn *conn) {
    dlock__sched *s = &conn->link.client->sched;
    if (dlock__timer_active(&conn->deadline_timer))
        return; /* it fires no later than needed and re-arms itself then */
    int64_t due = INT64_MAX;
    if (conn->inflight.head)
        due = reply_due_ms(conn);
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
    if (conn->inflight.head && now >= reply_due_ms(conn)) {
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

/* ---- the master's replicas (replicas.c) ------------------------------------------------- */

/* The handshake: the scripts, then ROLE under sync_replicas=auto. */
static int handshake_extra(dlock__link *link) {
    int n = dlock__scripts_load(link);
    return n + dlock__replicas_probe(link, &conn_of(link)->replicas);
}

static void on_role(dlock_client *c, int status, const dlock__reply *reply, int sends, void *arg) {
    (void)status;
    (void)sends;
    (void)arg;
    if (reply)
        dlock__replicas_role(&c->conn.replicas, c, reply);
}

/* A master found through Sentinel may gain its replicas after we connected (a promoted
 * replica gets the old master back as its replica 8-18 s later): ROLE again now and then.
 * (A plain URL's count moves with reconnects and WAIT answers only.) */
static void on_role_check(dlock__timer *t, void *arg) {
    dlock__conn *conn = arg;
    dlock_client *c = conn->link.client;
    if (conn->closing || !dlock__replicas_check_due(&conn->replicas, &c->endpoint))
        return;
    static const char *const argv[] = {"ROLE"};
    static const size_t lens[] = {4};
    if (conn->link.state == LINK_READY)
        dlock__command(c, DLOCK__CMD_RETRY_SAFE, on_role, NULL, 1, argv, lens);
    dlock__timer_start(&c->sched, t, DLOCK__ROLE_CHECK_MS);
}

/* ---- link events ------------------------------------------------------------------------ */

static void on_ready(dlock__link *link) {
    dlock__conn *conn = conn_of(link);
    dlock_client *c = link->client;
    if (conn->on_outcome)
        conn->on_outcome(conn, DLOCK_OK);
    if (c->sentinel && !dlock__timer_active(&conn->replicas.check))
        dlock__timer_start(&c->sched, &conn->replicas.check, DLOCK__ROLE_CHECK_MS);
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
    conn->link.handshake_extra = handshake_extra;
    dlock__timer_init(&conn->deadline_timer, on_deadline, conn);
    dlock__timer_init(&conn->replicas.check, on_role_check, conn);
}

void dlock__conn_close(dlock__conn *conn) {
    conn->closing = true;
    dlock__link_close(&conn->link);
    dlock__timer_stop(&conn->link.client->sched, &conn->deadline_timer);
    dlock__timer_stop(&conn->link.client->sched, &conn->replicas.check);
    dlock__cmd *cmd;
    while ((cmd = queue_pop(&conn->inflight)))
        finish(conn, cmd, DLOCK_ECANCELED, NULL);
    while ((cmd = queue_pop(&conn->pending)))
        finish(conn, cmd, DLOCK_ECANCELED, NULL);
}

/* ---- queueing --------------------------------------------------------------------------- */

/* What a caller asks of a command, besides its arguments. */
typedef struct cmd_request {
    int script; /* enum dlock__script_id, or -1 for a plain command */
    int nkeys;
    unsigned flags;
    dlock__reply_fn fn;
    dlock__acked_fn acked_fn; /* instead of fn */
    int64_t deadline_ms;
    void *arg;
} cmd_request;

static int enqueue(dlock_client *c, const cmd_request *req, int argc, const char *const *argv,
                   const size_t *argvlen) {
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
    cmd->fn = req->fn;
    cmd->acked_fn = req->acked_fn;
    cmd->arg = req->arg;
    cmd->deadline_ms = req->deadline_ms;
    cmd->flags = req->flags;
    cmd->script = req->script;
    cmd->nkeys = req->nkeys;
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
    cmd_request req = {
        .script = -1, .flags = flags, .fn = fn, .deadline_ms = INT64_MAX, .arg = arg};
    return enqueue(c, &req, argc, argv, argvlen);
}

int dlock__script(dlock_client *c, enum dlock__script_id script, unsigned flags, dlock__reply_fn fn,
                  void *arg, int nkeys, int nargs, const char *const *args, const size_t *argslen) {
    if ((int)script < 0 || script >= DLOCK__SCRIPT_COUNT || nkeys < 0 || nkeys > nargs)
        return DLOCK_EINVAL;
    cmd_request req = {(int)script, nkeys, flags, fn, NULL, INT64_MAX, arg};
    return enqueue(c, &req, nargs, args, argslen);
}

int dlock__script_acked(dlock_client *c, enum dlock__script_id script, unsigned flags,
                        int64_t deadline_ms, dlock__acked_fn fn, void *arg, int nkeys, int nargs,
                        const char *const *args, const size_t *argslen) {
    if ((int)script < 0 || script >= DLOCK__SCRIPT_COUNT || nkeys < 0 || nkeys > nargs || !fn)
        return DLOCK_EINVAL;
    cmd_request req = {(int)script, nkeys, flags, NULL, fn, deadline_ms, arg};
    return enqueue(c, &req, nargs, args, argslen);
}
