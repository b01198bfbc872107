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
 *     fails with DLOCK_ECONN (or DLOCK_EAUTH if the server refused our credentials). One
 *     with a caller's deadline (an acquisition's wait) that no node may have run gives up
 *     at that deadline when it comes first, but no sooner than timeout_ms after it was
 *     queued (dlock__cmd_give_up_ms): nothing of it ran, so failing it changes nothing.
 * When the connection drops, a command in flight is sent again after the reconnect if it
 * is DLOCK__CMD_RETRY_SAFE and has attempts left, otherwise it fails with DLOCK_ECONN:
 * its effect is unknown.
 *
 * A script that writes (script.c) is acknowledged by a WAIT <replicas> <timeout> when
 * replicas.c asks for any, unless it is sent with DLOCK__CMD_NO_WAIT (a release, a
 * give-back: dlock_int.h says why); its reply is copied and kept until that WAIT answers, and the
 * caller gets both at once (dlock__acks, dlock_int.h). One WAIT covers every write sent
 * before it on the connection, and while it waits the server runs nothing else of the
 * connection, so writes are acknowledged in batches (dlock__ack_batch): at most
 * WAITS_OUT_MAX (3) WAITs are out; a write sent while fewer are goes out with one behind
 * it, and the writes sent while that many are out (they queue on the server behind them)
 * share the WAIT that goes when the first of those answers. A command sent after a WAIT
 * thus waits for at most the WAITs out when it was sent, never for those of writes sent
 * after it, and the writes of a busy connection cost one WAIT per batch instead of one
 * each. A command's reply timeout runs from when the reply before it arrived (Redis
 * answers in order), and a WAIT's also gives it its own time. Replies to commands that
 * need no acknowledgement (reads, PING, ROLE) are not held: they may reach their callers
 * before those of writes sent earlier, which wait for their WAIT.
 *
 * A node may answer that it did not run a command at all: READONLY (under Sentinel or in
 * a Cluster, it is a replica now: a failover moved the master; a plain URL that names a
 * replica gets READONLY as an error), and in a Cluster MOVED, ASK, TRYAGAIN or CLUSTERDOWN.
 * Such a send does not count (sends counts the sends that may have run). On one Redis the
 * command goes back to the front of the queue and the connection is dropped, so that the
 * reconnect finds the master again; in a Cluster the conn's on_redirect hook places it
 * (cluster.c), and the node's answer is kept with the command, so that a command that gives
 * up can say what the node last answered. Which conn a command is queued on is route.c's
 * choice (in a Cluster, cluster.c's). */
#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "net/net.h"

struct dlock__cmd {
    dlock__cmd *next;
    dlock__reply_fn fn;
    dlock__acked_fn acked_fn; /* instead of fn: dlock__script_acked */
    void *arg;
    int64_t deadline_ms; /* the caller's (dlock__script_acked), INT64_MAX otherwise */
    /* this send's acknowledgement: replicas asked (0: none) and the time it gives its
     * WAIT; for the batch's WAIT itself (is_wait), what that WAIT asks */
    int wait_replicas;
    int64_t wait_timeout_ms;
    bool is_wait;     /* the WAIT of a batch (dlock__ack_batch), no caller's command */
    bool asking_next; /* ASK: the answer to ASKING comes next, then the command's */
    redisReply *held; /* in batch.answered: the script's reply, copied */
    int held_status;
    int64_t clock_ms; /* its reply timeout runs from here: sent, or the reply before it */
    unsigned flags;
    int script;    /* enum dlock__script_id, or -1 for a plain command */
    int nkeys;     /* scripts: how many of args are keys */
    bool use_eval; /* the server said NOSCRIPT: send the script's text */
    int sends;
    int slot;                  /* in a Cluster: the slot of its keys; -1 any node */
    int redirects;             /* sends a node did not run */
    bool asking;               /* its next send goes behind ASKING */
    char *not_run_why;         /* what the node said the last time it did not run it; NULL never */
    int64_t give_up_ms;        /* queued + timeout_ms x (retry_attempts + 1) */
    int64_t unsent_give_up_ms; /* while no node may have run it (dlock__cmd_give_up_ms) */
    int argc;
    size_t *argvlen;
    char **argv;
};

static dlock__conn *conn_of(dlock__link *link) {
    return DLOCK__CONTAINER_OF(link, dlock__conn, link);
}

/* ---- queues ----------------------------------------------------------------------------- */

void dlock__cmd_queue_push(dlock__cmd_queue *q, dlock__cmd *cmd) {
    cmd->next = NULL;
    if (q->tail)
        q->tail->next = cmd;
    else
        q->head = cmd;
    q->tail = cmd;
    q->count++;
}

dlock__cmd *dlock__cmd_queue_pop(dlock__cmd_queue *q) {
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

/* Forget a send's state: the command goes again, or ends. */
static void send_reset(dlock__cmd *cmd) {
    reply_copy_free(cmd->held);
    cmd->held = NULL;
    cmd->asking_next = false;
}

/* ---- completion ------------------------------------------------------------------------- */

/* A write that fewer replicas acknowledged than asked, for a caller that does not take the
 * answer itself: it stands; the log says so. */
static void warn_unacked(dlock_client *c, const dlock__cmd *cmd, const dlock__acks *acks) {
    const char *script = cmd->script >= 0 ? dlock__scripts[cmd->script].name : "a command";
    if (acks->wait_error)
        dlock__log(c, DLOCK_LOG_WARN, "%s: WAIT refused (%s); the write stands, unacknowledged",
                   script, acks->wait_error->str);
    else
        dlock__log(c, DLOCK_LOG_WARN,
                   "%s: %d of %d replicas acknowledged the write within %lld ms; it stands "
                   "(sync_replicas)",
                   script, acks->acked, acks->asked, (long long)acks->timeout_ms);
}

static void finish_acked(dlock_client *c, dlock__cmd *cmd, int status, const redisReply *reply,
                         const dlock__acks *acks) {
    static const dlock__acks no_wait = {0};
    if (cmd->is_wait) { /* a batch's WAIT has no caller: its writes end on their own */
        dlock__free(cmd);
        return;
    }
    if (cmd->acked_fn) {
        cmd->acked_fn(c, status, reply, acks ? acks : &no_wait, cmd->sends, cmd->arg);
    } else {
        if (acks && status == DLOCK_OK && acks->acked < acks->asked)
            warn_unacked(c, cmd, acks);
        cmd->fn(c, status, reply, cmd->sends, cmd->arg);
    }
    reply_copy_free(cmd->held);
    dlock__free(cmd->not_run_why);
    dlock__free(cmd);
}

static void finish(dlock__conn *conn, dlock__cmd *cmd, int status, const redisReply *reply) {
    finish_acked(conn->link.client, cmd, status, reply, NULL);
}

void dlock__cmd_fail(dlock_client *c, dlock__cmd *cmd, int status) {
    finish_acked(c, cmd, status, NULL, NULL);
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

/* A command of a Cluster node's connection fails because of that connection: an op's error
 * text quotes the client's command link (op_error.c), which a Cluster client never opens,
 * so the node's reason ("command connection to host:port: Connection refused") goes there. */
static void note_node_failure(dlock__conn *conn, int status) {
    dlock__link *own = &DLOCK__NET(conn->link.client)->conn.link;
    if (&conn->link != own && status != DLOCK_ECANCELED && conn->link.last_error_text[0])
        snprintf(own->last_error_text, sizeof(own->last_error_text), "%s",
                 conn->link.last_error_text);
}

/* ---- sending ---------------------------------------------------------------------------- */

static void arm_deadline(dlock__conn *conn);

/* The reply callback is the same for every command: the reply belongs to the head of
 * `inflight` (Redis answers in order), so the link's arg is not needed. */
static void on_reply(dlock__link *link, const dlock__reply *reply, void *arg);

/* ---- the batch's WAIT -------------------------------------------------------------------- */

/* How many WAITs may be out at once. One alone leaves the server idle for a round trip
 * between a WAIT's answer and the next WAIT (the writes behind it ran at once, their WAIT
 * comes only when the client has read that answer); a few, each covering the writes sent
 * while the ones before were out, keep the next queued behind them. More make batches
 * smaller, and each WAIT blocks the connection while it waits for the replicas' answer.
 * bench/sync_replicas.sh, T = 8 / 32 threads on one client: 1 out cost 56-63 % / 53-64 %
 * of the pairs/s of sync_replicas=0, 2 out 49-54 % / 44-56 %, 3 out 42-45 % / 9-21 %,
 * 4 out 51 % / 28 %, 8 out 66 % / 42 %, no bound 66 % / 78 %. */
#define WAITS_OUT_MAX 3

/* A write went out: the next WAIT covers it. */
static void batch_add(dlock__ack_batch *b, const dlock__cmd *cmd) {
    if (b->unwaited == 0 || cmd->wait_timeout_ms < b->timeout_ms)
        b->timeout_ms = cmd->wait_timeout_ms; /* none waits longer than it was given */
    if (cmd->wait_replicas > b->replicas)
        b->replicas = cmd->wait_replicas;
    b->unwaited++;
}

/* Sends the WAIT for the writes sent since the last one, unless one is still out (it
 * answers first, and this one goes then). */
static void wait_if_due(dlock__conn *conn) {
    dlock__ack_batch *b = &conn->batch;
    if (b->waits_out >= WAITS_OUT_MAX || b->unwaited == 0 || conn->link.state != LINK_READY)
        return;
    dlock__cmd *wait = dlock__calloc(1, sizeof(*wait));
    char replicas[DLOCK__DECIMAL_MAX], timeout[DLOCK__DECIMAL_MAX];
    const char *argv[] = {"WAIT", replicas, timeout};
    size_t lens[] = {4, dlock__decimal(replicas, b->replicas),
                     dlock__decimal(timeout, (long long)b->timeout_ms)};
    if (!wait || dlock__link_send(&conn->link, 3, argv, lens, on_reply, NULL) != DLOCK_OK) {
        /* the writes cannot be acknowledged on this connection: drop it (on_down retries or
         * fails them), as for any command that cannot be sent */
        dlock__free(wait);
        dlock__link_fail_later(&conn->link, DLOCK_ECONN, "cannot send WAIT");
        return;
    }
    wait->is_wait = true;
    wait->script = -1;
    wait->slot = -1;
    wait->deadline_ms = INT64_MAX;
    wait->give_up_ms = INT64_MAX;
    wait->wait_replicas = b->replicas;
    wait->wait_timeout_ms = b->timeout_ms;
    wait->clock_ms = dlock__now_ms();
    dlock__cmd_queue_push(&conn->inflight, wait);
    b->waits_out++;
    b->unwaited = 0;
    b->replicas = 0;
    arm_deadline(conn);
}

/* Whether this send of cmd needs a WAIT, for how many replicas and how long: the URL's
 * sync_timeout_ms, or the time left to the caller's deadline when that is shorter, but
 * never below DLOCK__SYNC_MIN_MS (WAIT's 0 would mean for ever). A batch's WAIT asks for
 * the most and waits the least of its writes'. */
static void plan_wait(dlock__conn *conn, dlock__cmd *cmd) {
    const dlock__endpoint *ep = &DLOCK__NET(conn->link.client)->endpoint;
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

/* Whether a Cluster client leaves the script's KEYS[i + 1] undeclared (script.c). */
static bool undeclared(const dlock__cmd *cmd, unsigned unstored, int i) {
    if (cmd->flags & DLOCK__CMD_FIRST_KEY_ONLY)
        return i > 0;
    return i < 31 && (unstored & (1u << (i + 1)));
}

/* A Cluster client's script arguments after the script (script.c says why): the declared
 * keys, the arguments, the keys it does not declare, and where those go: "2,4" (KEYS[2]
 * and KEYS[4]), or "2+99" (99 keys from KEYS[2] on). Into argv/lens from index at. */
static void cluster_script_args(const dlock__cmd *cmd, unsigned unstored, const char **argv,
                                size_t *lens, int at, char *positions, size_t size, int *declared) {
    int n = at, moved = 0;
    *declared = 0;
    for (int i = 0; i < cmd->nkeys; i++)
        if (!undeclared(cmd, unstored, i)) {
            argv[n] = cmd->argv[i];
            lens[n++] = cmd->argvlen[i];
            (*declared)++;
        }
    for (int i = cmd->nkeys; i < cmd->argc; i++) {
        argv[n] = cmd->argv[i];
        lens[n++] = cmd->argvlen[i];
    }
    size_t used = 0;
    positions[0] = '\0';
    for (int i = 0; i < cmd->nkeys; i++)
        if (undeclared(cmd, unstored, i)) {
            argv[n] = cmd->argv[i];
            lens[n++] = cmd->argvlen[i];
            moved++;
            if (!(cmd->flags & DLOCK__CMD_FIRST_KEY_ONLY))
                used += (size_t)snprintf(positions + used, size - used, used ? ",%d" : "%d", i + 1);
        }
    if ((cmd->flags & DLOCK__CMD_FIRST_KEY_ONLY) && moved > 0)
        used = (size_t)snprintf(positions, size, "2+%d", moved);
    argv[n] = positions;
    lens[n] = used;
}

static bool send_cmd(dlock__conn *conn, dlock__cmd *cmd) {
    dlock_client *c = conn->link.client;
    const char *small_argv[64];
    size_t small_len[64];
    bool cluster_text = cmd->script >= 0 && DLOCK__NET(c)->script_unstored;
    int extra = cmd->script >= 0 ? 3 : 0;
    int argc = cmd->argc + extra + (cluster_text ? 1 : 0);
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
    char nkeys[DLOCK__DECIMAL_MAX], positions[64];
    int declared = cmd->nkeys;
    if (cluster_text)
        cluster_script_args(cmd, DLOCK__NET(c)->script_unstored[cmd->script], argv, lens, extra,
                            positions, sizeof(positions), &declared);
    else
        for (int i = 0; i < cmd->argc; i++) {
            argv[extra + i] = cmd->argv[i];
            lens[extra + i] = cmd->argvlen[i];
        }
    if (cmd->script >= 0) {
        argv[0] = cmd->use_eval ? "EVAL" : "EVALSHA";
        if (cmd->use_eval) {
            argv[1] = dlock__script_text(c, (enum dlock__script_id)cmd->script, &lens[1]);
        } else {
            argv[1] = DLOCK__NET(c)->script_sha[cmd->script];
            lens[1] = strlen(argv[1]);
        }
        argv[2] = nkeys;
        lens[2] = dlock__decimal(nkeys, declared);
        lens[0] = strlen(argv[0]);
    }
    int rc = DLOCK_OK;
    if (cmd->asking_next) {
        const char *asking[] = {"ASKING"};
        size_t asking_len[] = {6};
        rc = dlock__link_send(&conn->link, 1, asking, asking_len, on_reply, NULL);
    }
    if (rc == DLOCK_OK)
        rc = dlock__link_send(&conn->link, argc, argv, lens, on_reply, NULL);
    if (argv != small_argv) {
        dlock__free(argv);
        dlock__free(lens);
    }
    return rc == DLOCK_OK;
}

static bool transmit(dlock__conn *conn, dlock__cmd *cmd) {
    cmd->sends++;
    cmd->clock_ms = dlock__now_ms();
    send_reset(cmd);
    plan_wait(conn, cmd);
    cmd->asking_next = cmd->asking;
    cmd->asking = false; /* once: a later send goes where the map says */
    if (!send_cmd(conn, cmd))
        return false;
    dlock__cmd_queue_push(&conn->inflight, cmd);
    conn->commands_sent++;
    if (cmd->wait_replicas > 0)
        batch_add(&conn->batch, cmd);
    return true;
}

static void flush_pending(dlock__conn *conn) {
    while (conn->link.state == LINK_READY && conn->pending.head) {
        dlock__cmd *cmd = dlock__cmd_queue_pop(&conn->pending);
        if (!transmit(conn, cmd)) {
            /* the context refuses commands: it is going down; keep the order */
            dlock__cmd_queue rest = queue_take(&conn->pending);
            dlock__cmd_queue_push(&conn->pending, cmd);
            if (rest.head) {
                conn->pending.tail->next = rest.head;
                conn->pending.tail = rest.tail;
                conn->pending.count += rest.count;
            }
            dlock__link_fail_later(&conn->link, DLOCK_ECONN, "cannot send");
            break;
        }
    }
    wait_if_due(conn);
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

/* The script of a write answered: keep the reply until the WAIT that covers it answers. */
static void hold_for_wait(dlock__conn *conn, dlock__cmd *cmd, const redisReply *reply) {
    cmd->held = reply_copy(reply);
    cmd->held_status = cmd->held ? reply_status(reply) : DLOCK_ENOMEM;
    dlock__cmd_queue_push(&conn->batch.answered, cmd);
}

/* The batch's WAIT (wait, out of inflight) answered (reply): each write it covers gets its
 * script's reply and the acknowledgement, which holds for every one of them (the replicas
 * that have the last write of the connection have those before it). */
static void settle_batch(dlock__conn *conn, dlock__cmd *wait, const redisReply *reply) {
    dlock__cmd_queue answered = queue_take(&conn->batch.answered);
    dlock__acks acks = {.timeout_ms = wait->wait_timeout_ms};
    bool understood = true;
    if (reply->type == REDIS_REPLY_ERROR)
        acks.wait_error = reply;
    else
        understood = dlock__replicas_wait_answer(&conn->replicas, reply, &acks.acked);
    dlock__free(wait);
    conn->batch.waits_out--;
    dlock__cmd *cmd;
    if (!understood) {
        /* the writes ran, but whether a replica has them is unknown: the connection goes,
         * as for any reply not understood (its text names what arrived), and each caller
         * hears DLOCK_ECONN, never DLOCK_OK */
        dlock__link_protocol_error(&conn->link, "an answer to WAIT that is no count of replicas",
                                   reply);
        while ((cmd = dlock__cmd_queue_pop(&answered)))
            finish(conn, cmd, DLOCK_ECONN, NULL);
        return;
    }
    /* the writes sent while it was out get theirs first: what the callbacks below send
     * then waits for it, and goes in the next batch */
    wait_if_due(conn);
    while ((cmd = dlock__cmd_queue_pop(&answered))) {
        acks.asked = cmd->wait_replicas;
        int status = cmd->held_status;
        finish_acked(conn->link.client, cmd, status, status == DLOCK_ENOMEM ? NULL : cmd->held,
                     &acks);
    }
}

/* The node did not run cmd (see the opening comment). */
static bool not_run(const dlock__conn *conn, const redisReply *reply) {
    if (reply->type != REDIS_REPLY_ERROR)
        return false;
    const char *t = reply->str;
    if (strncmp(t, "READONLY", 8) == 0) /* a plain URL naming a replica: the user's error */
        return conn->follows_failover;
    return conn->on_redirect &&
           (strncmp(t, "MOVED ", 6) == 0 || strncmp(t, "ASK ", 4) == 0 ||
            strncmp(t, "TRYAGAIN", 8) == 0 || strncmp(t, "CLUSTERDOWN", 11) == 0);
}

/* cmd (out of inflight) was not run: place it again (why says why). */
static void place_again(dlock__conn *conn, dlock__cmd *cmd, const redisReply *why) {
    cmd->sends--;
    cmd->redirects++;
    char *text = dlock__strdup(why->str);
    if (text) { /* else the previous reason stands: it only names a failure */
        dlock__free(cmd->not_run_why);
        cmd->not_run_why = text;
    }
    if (conn->on_redirect) {
        conn->on_redirect(conn, cmd, why);
        return;
    }
    /* READONLY on one Redis: this node is a replica now; the reconnect finds the master */
    cmd->next = conn->pending.head;
    conn->pending.head = cmd;
    if (!conn->pending.tail)
        conn->pending.tail = cmd;
    conn->pending.count++;
    dlock__link_fail(&conn->link, DLOCK_ECONN, "the node is a replica now (READONLY)");
}

static void on_reply(dlock__link *link, const dlock__reply *reply, void *arg) {
    (void)arg;
    dlock__conn *conn = conn_of(link);
    dlock__cmd *cmd = conn->inflight.head;
    if (!cmd)
        return;
    if (cmd->asking_next) { /* ASKING's answer; the command's comes next */
        cmd->asking_next = false;
        return;
    }
    dlock__cmd_queue_pop(&conn->inflight);
    if (conn->inflight.head) /* its reply comes next: its timeout runs from now */
        conn->inflight.head->clock_ms = dlock__now_ms();
    if (cmd->is_wait) {
        settle_batch(conn, cmd, reply);
        return;
    }
    if (not_run(conn, reply)) { /* it wrote nothing: no WAIT to wait for */
        place_again(conn, cmd, reply);
        return;
    }
    if (is_noscript(cmd, reply)) {
        /* The script cache was flushed: the script did not run. EVAL runs it and puts it
         * back in the cache for the EVALSHAs that follow. */
        cmd->use_eval = true;
        if (!transmit(conn, cmd))
            finish(conn, cmd, DLOCK_ECONN, NULL);
        wait_if_due(conn);
        arm_deadline(conn);
        return;
    }
    if (cmd->wait_replicas > 0) {
        hold_for_wait(conn, cmd, reply);
        return;
    }
    finish(conn, cmd, reply_status(reply), reply);
}

/* ---- deadlines -------------------------------------------------------------------------- */

/* When the oldest command in flight is overdue: timeout_ms from when its reply became the
 * next to come, plus, for a WAIT, its own time. */
static int64_t reply_due_ms(const dlock__conn *conn) {
    const dlock__cmd *head = conn->inflight.head;
    return head->clock_ms + DLOCK__BASE(conn->link.client)->opts.timeout_ms +
           (head->is_wait ? head->wait_timeout_ms : 0);
}

/* The timer runs to the earliest of: the reply timeout of the oldest command in flight, and
 * the give-up time of a command waiting to be sent (pending_due_ms: no later than the
 * earliest; a command sent since only makes the timer fire early once). */
static void arm_deadline(dlock__conn *conn) {
    dlock__sched *s = &DLOCK__NET(conn->link.client)->sched;
    int64_t due = INT64_MAX;
    if (conn->inflight.head)
        due = reply_due_ms(conn);
    if (!conn->pending.head)
        conn->pending_due_ms = INT64_MAX;
    else if (conn->pending_due_ms < due)
        due = conn->pending_due_ms;
    if (dlock__timer_active(&conn->deadline_timer) && conn->deadline_timer.due_ms <= due)
        return; /* it fires no later than needed and re-arms itself then */
    if (due != INT64_MAX)
        dlock__timer_start_at(s, &conn->deadline_timer, due);
}

/* cmd, in pending, may give up before the others there. */
static void pending_due_include(dlock__conn *conn, const dlock__cmd *cmd) {
    int64_t at = dlock__cmd_give_up_ms(cmd);
    if (at < conn->pending_due_ms)
        conn->pending_due_ms = at;
}

/* pending_due_ms made exact again (after a reconnect put commands back, or a scan). */
static void pending_due_reset(dlock__conn *conn) {
    conn->pending_due_ms = INT64_MAX;
    for (dlock__cmd *cmd = conn->pending.head; cmd; cmd = cmd->next)
        pending_due_include(conn, cmd);
}

static void on_deadline(dlock__timer *t, void *arg) {
    (void)t;
    dlock__conn *conn = arg;
    dlock_client *c = conn->link.client;
    int64_t now = dlock__now_ms();
    if (conn->inflight.head && now >= reply_due_ms(conn)) {
        char why[96];
        snprintf(why, sizeof(why), "no reply within %lld ms",
                 (long long)DLOCK__BASE(c)->opts.timeout_ms);
        dlock__link_fail(&conn->link, DLOCK_ECONN, why); /* on_down settles the commands */
    }
    /* Out of the queue first, then ended: what ending one starts may queue commands here. */
    dlock__cmd_queue waiting = queue_take(&conn->pending), due = {0};
    dlock__cmd *cmd;
    while ((cmd = dlock__cmd_queue_pop(&waiting)))
        dlock__cmd_queue_push(now >= dlock__cmd_give_up_ms(cmd) ? &due : &conn->pending, cmd);
    pending_due_reset(conn);
    while ((cmd = dlock__cmd_queue_pop(&due))) {
        note_node_failure(conn, link_status(conn));
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
    dlock__conn *conn = arg;
    if (reply)
        dlock__replicas_role(&conn->replicas, c, reply);
}

/* A master found through Sentinel may gain its replicas after we connected (a promoted
 * replica gets the old master back as its replica 8-18 s later): ROLE again now and then.
 * (A plain URL's count moves with reconnects and WAIT answers only.) */
static void on_role_check(dlock__timer *t, void *arg) {
    dlock__conn *conn = arg;
    dlock_client *c = conn->link.client;
    if (conn->closing || !dlock__replicas_check_due(&conn->replicas, &DLOCK__NET(c)->endpoint))
        return;
    static const char *const argv[] = {"ROLE"};
    static const size_t lens[] = {4};
    dlock__cmd_request req = {.script = -1,
                              .slot = -1,
                              .flags = DLOCK__CMD_RETRY_SAFE,
                              .fn = on_role,
                              .deadline_ms = INT64_MAX,
                              .arg = conn};
    if (conn->link.state == LINK_READY) /* this connection's own master: not routed */
        dlock__conn_enqueue(conn, &req, 1, argv, lens);
    dlock__timer_start(&DLOCK__NET(c)->sched, t, DLOCK__ROLE_CHECK_MS);
}

/* ---- link events ------------------------------------------------------------------------ */

static void on_ready(dlock__link *link) {
    dlock__conn *conn = conn_of(link);
    dlock_client *c = link->client;
    if (conn->on_outcome)
        conn->on_outcome(conn, DLOCK_OK);
    if (conn->follows_failover && !dlock__timer_active(&conn->replicas.check))
        dlock__timer_start(&DLOCK__NET(c)->sched, &conn->replicas.check, DLOCK__ROLE_CHECK_MS);
    flush_pending(conn);
}

/* Every command sent whose caller has not had its answer, in the order sent: the writes
 * waiting for their WAIT, then inflight. The batch starts again empty. */
static dlock__cmd_queue take_unsettled(dlock__conn *conn) {
    dlock__cmd_queue all = queue_take(&conn->batch.answered);
    dlock__cmd_queue rest = queue_take(&conn->inflight);
    if (!all.head)
        all = rest;
    else if (rest.head) {
        all.tail->next = rest.head;
        all.tail = rest.tail;
        all.count += rest.count;
    }
    memset(&conn->batch, 0, sizeof(conn->batch));
    return all;
}

static void on_down(dlock__link *link, int err) {
    dlock__conn *conn = conn_of(link);
    dlock_client *c = link->client;
    if (conn->on_outcome)
        conn->on_outcome(conn, err);
    /* Commands in flight, and writes that answered but whose WAIT has not (sent before
     * those): resend the ones that may run twice (first, in their order), fail the others.
     * Their callbacks may queue new commands: those go behind. */
    dlock__cmd_queue lost = take_unsettled(conn);
    dlock__cmd_queue retry = {0};
    dlock__cmd *cmd;
    while ((cmd = dlock__cmd_queue_pop(&lost))) {
        if (cmd->is_wait) {
            finish(conn, cmd, DLOCK_ECONN, NULL); /* frees it */
            continue;
        }
        bool may_retry = (cmd->flags & DLOCK__CMD_RETRY_SAFE) &&
                         cmd->sends <= DLOCK__BASE(c)->opts.retry_attempts && !conn->closing;
        if (may_retry) {
            dlock__cmd_queue_push(&retry, cmd);
        } else {
            note_node_failure(conn, conn->closing ? DLOCK_ECANCELED : DLOCK_ECONN);
            finish(conn, cmd, conn->closing ? DLOCK_ECANCELED : DLOCK_ECONN, NULL);
        }
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
        note_node_failure(conn, err);
        while ((cmd = dlock__cmd_queue_pop(&conn->pending)))
            finish(conn, cmd, err, NULL);
    }
    conn->reconnects++;
    dlock__timer_stop(&DLOCK__NET(c)->sched, &conn->deadline_timer);
    pending_due_reset(conn);
    arm_deadline(conn);
}

void dlock__conn_init(dlock__conn *conn, dlock_client *c) {
    memset(conn, 0, sizeof(*conn));
    conn->pending_due_ms = INT64_MAX;
    dlock__link_init(&conn->link, c, "command");
    conn->link.counts_reconnects = true; /* the client's, or a Cluster node's */
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
    dlock__timer_stop(&DLOCK__NET(conn->link.client)->sched, &conn->deadline_timer);
    dlock__timer_stop(&DLOCK__NET(conn->link.client)->sched, &conn->replicas.check);
    dlock__cmd_queue unsettled = take_unsettled(conn);
    dlock__cmd *cmd;
    while ((cmd = dlock__cmd_queue_pop(&unsettled)))
        finish(conn, cmd, DLOCK_ECANCELED, NULL);
    while ((cmd = dlock__cmd_queue_pop(&conn->pending)))
        finish(conn, cmd, DLOCK_ECANCELED, NULL);
}

/* ---- queueing --------------------------------------------------------------------------- */

int dlock__cmd_new(dlock_client *c, const dlock__cmd_request *req, int argc,
                   const char *const *argv, const size_t *argvlen, dlock__cmd **out) {
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
    cmd->slot = req->slot;
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
    const dlock_options *o = &DLOCK__BASE(c)->opts;
    int64_t now = dlock__now_ms();
    cmd->give_up_ms = now + o->timeout_ms * (o->retry_attempts + 1);
    cmd->unsent_give_up_ms = cmd->give_up_ms;
    if (cmd->deadline_ms != INT64_MAX) {
        int64_t at =
            cmd->deadline_ms > now + o->timeout_ms ? cmd->deadline_ms : now + o->timeout_ms;
        if (at < cmd->give_up_ms)
            cmd->unsent_give_up_ms = at;
    }
    *out = cmd;
    return DLOCK_OK;
}

int dlock__conn_enqueue(dlock__conn *conn, const dlock__cmd_request *req, int argc,
                        const char *const *argv, const size_t *argvlen) {
    dlock_client *c = conn->link.client;
    if (conn->closing || atomic_load(&DLOCK__NET(c)->closing))
        return DLOCK_ECLOSED;
    dlock__cmd *cmd;
    int rc = dlock__cmd_new(c, req, argc, argv, argvlen, &cmd);
    if (rc == DLOCK_OK)
        dlock__conn_adopt(conn, cmd, false);
    return rc;
}

void dlock__conn_adopt(dlock__conn *conn, dlock__cmd *cmd, bool asking) {
    if (conn->closing) {
        finish(conn, cmd, DLOCK_ECANCELED, NULL);
        return;
    }
    cmd->asking = asking;
    dlock__cmd_queue_push(&conn->pending, cmd);
    if (conn->link.state == LINK_READY) {
        flush_pending(conn);
        return;
    }
    pending_due_include(conn, cmd);
    arm_deadline(conn);
}

dlock__cmd_queue dlock__conn_take_pending(dlock__conn *conn) {
    return queue_take(&conn->pending);
}

bool dlock__conn_one_write_and_its_wait(const dlock__conn *conn) {
    const dlock__cmd *write = conn->inflight.head;
    return conn->inflight.count == 2 && !write->is_wait && write->next->is_wait &&
           conn->batch.waits_out == 1 && conn->batch.unwaited == 0 && !conn->batch.answered.head;
}

bool dlock__conn_next_is_wait_answer(const dlock__conn *conn) {
    return conn->inflight.head && conn->inflight.head->is_wait;
}

bool dlock__conn_idle(const dlock__conn *conn) {
    return !conn->pending.head && !conn->inflight.head && !conn->batch.answered.head;
}

int dlock__cmd_slot(const dlock__cmd *cmd) {
    return cmd->slot;
}

int64_t dlock__cmd_give_up_ms(const dlock__cmd *cmd) {
    return cmd->sends > 0 ? cmd->give_up_ms : cmd->unsent_give_up_ms;
}

int dlock__cmd_redirects(const dlock__cmd *cmd) {
    return cmd->redirects;
}

const char *dlock__cmd_not_run_why(const dlock__cmd *cmd) {
    return cmd->not_run_why;
}
