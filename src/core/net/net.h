/* SPDX-License-Identifier: MIT */
/* net.h — the net floor: one Redis. TLS settings (tls.c), a connection's bytes (sock.c),
 * replies (reply.c), a connection with its handshake and reconnects (link.c), the command
 * connection and its queue (conn.c), replica acknowledgement (replicas.c), the script
 * registry (script.c) and the subscriber connection with its channel router (pubsub.c);
 * and the client's net part. The only files that include hiredis or OpenSSL are here.
 *
 * This floor knows one server at a time: which server (a Sentinel's master, a Cluster's
 * node) is the topology's to say, through the hooks a link and a conn are given. */
#ifndef DLOCK_CORE_NET_H
#define DLOCK_CORE_NET_H

#include <pthread.h>

#include "base/base.h"
#include "loop/loop.h"
#include "loop/sched.h"

struct redisReader; /* hiredis: only this floor's files include it */

/* ---- TLS settings (tls.c) ------------------------------------------------------------------ */

/* A client's TLS settings from a rediss:// endpoint: OpenSSL's context, the CA, the client
 * certificate, whether and against which name the server is verified. DLOCK_EINVAL (a file
 * that cannot be read, cert without key) or DLOCK_ENOMEM with the reason in err. */
typedef struct dlock__tls dlock__tls;
int dlock__tls_new(const dlock__endpoint *ep, dlock__tls **out, char *err, size_t errlen);
void dlock__tls_free(dlock__tls *tls); /* NULL: no-op */
/* For sock.c: a client session (OpenSSL's SSL) on fd that verifies host (or sni=); NULL
 * with the reason in err. */
void *dlock__tls_session(dlock__tls *tls, int fd, const char *host, char *err, size_t errlen);
void dlock__tls_session_free(void *session);
bool dlock__tls_has_client_cert(const dlock__tls *tls);
/* The words for a failed TLS call: verification, the server's alert, a reset (with the
 * hint that a client certificate may be required when none was given and the server said
 * nothing yet after the handshake), a plain-text port (an answer in RESP; where is the
 * server's host:port). */
void dlock__tls_failure(void *session, int ssl_error, int sys_errno, bool in_handshake,
                        bool client_cert, bool nothing_received, const char *where, char *buf,
                        size_t size);
/* How many bytes the server has sent on session so far (TLS records or not). */
size_t dlock__tls_heard(void *session);
/* Seconds until the certificate the server presented on session stops being valid (its
 * notAfter; negative: expired); false when it presented none (no handshake yet). */
bool dlock__tls_peer_seconds_left(void *session, int64_t *out);
/* The words for a server at where (host:port) found to answer in plain text (answer: the
 * start of what it said, may be ""). */
void dlock__tls_plain_text_text(const char *where, const char *answer, char *buf, size_t size);

/* ---- a connection's bytes (sock.c) ------------------------------------------------------ */

/* See sock.c: resolve (off the loop thread), connect, TLS handshake, buffered writes and
 * reads. No time limit of its own: the owner closes it when its connect timeout runs out.
 * The hooks run on the loop thread, never inside dlock__sock_open / dlock__sock_close; the
 * owner may close the sock from inside any of them. */
typedef struct dlock__sock dlock__sock;
typedef struct dlock__sock_hooks {
    void (*connected)(void *arg);                         /* open (TLS: handshake done) */
    void (*data)(void *arg, const char *buf, size_t len); /* bytes read */
    void (*failed)(void *arg, const char *why);           /* once; the sock does nothing more */
} dlock__sock_hooks;

/* Starts connecting to ep (over TLS with tls when ep->tls). NULL with the reason in err
 * when it failed at once (then no hook runs). */
dlock__sock *dlock__sock_open(dlock__loop *loop, const dlock__endpoint *ep, dlock__tls *tls,
                              const dlock__sock_hooks *hooks, void *arg, char *err, size_t errlen);
/* Room for len more bytes at the end of the output buffer, or NULL (out of memory: the
 * buffer is as it was). The caller fills it, then says so with dlock__sock_wrote(s, len),
 * before anything else touches s: the bytes are sent once open and writable. */
char *dlock__sock_reserve(dlock__sock *s, size_t len);
void dlock__sock_wrote(dlock__sock *s, size_t len);
void dlock__sock_close(dlock__sock *s); /* NULL: no-op */
/* The TLS session of s (dlock__tls_*), or NULL: plain, or s NULL. */
void *dlock__sock_tls_session(const dlock__sock *s);
/* Lends the reading of s to the calling thread, which holds the loop and has just
 * written on s (loop.h, "the lone caller"): its descriptor, or -1 when s cannot be lent
 * (TLS, not open, a write pending) or lend is false (then a lending still on ends: the
 * call's reply is the loop's to read). The lending ends when anything else needs s,
 * ringing bell. */
int dlock__sock_lend(dlock__sock *s, int bell, bool lend);
bool dlock__sock_lent(const dlock__sock *s); /* lent, and not taken back since */
/* The lent s is readable: reads it on the calling thread (which holds the loop). False,
 * reading nothing, when the lending has ended. s may be gone when it returns. */
bool dlock__sock_read_lent(dlock__sock *s);

/* ---- a command as Redis reads it (resp.c) ---------------------------------------------- */

/* A command (argc arguments of lens[i] bytes, binary-safe) in RESP: how many bytes it
 * takes, and those bytes written at out, which has room for them. */
size_t dlock__resp_command_len(int argc, const size_t *lens);
void dlock__resp_command_put(char *out, int argc, const char *const *argv, const size_t *lens);

/* ---- a connection to Redis with its handshake and reconnects (link.c) ------------------ */

enum dlock__link_state {
    LINK_IDLE,       /* not started */
    LINK_CONNECTING, /* TCP/unix connect in progress */
    LINK_HANDSHAKE,  /* AUTH / SELECT / script loads in flight */
    LINK_READY,
    LINK_BACKOFF, /* failed; reconnect timer running */
    LINK_CLOSED,
};

typedef struct dlock__link dlock__link;

/* A reply for the command it answers; reply is valid only during the call. */
typedef void (*dlock__link_reply_fn)(dlock__link *link, const dlock__reply *reply, void *arg);
typedef struct dlock__link_expect {
    dlock__link_reply_fn fn;
    void *arg;
} dlock__link_expect;

struct dlock__link {
    dlock_client *client;
    const char *role; /* "command" | "subscriber", for logs */
    enum dlock__link_state state;
    /* the connection: its bytes, its RESP reader and the replies it waits for, in the
     * order the commands were sent (a ring) */
    dlock__sock *sock;
    struct redisReader *reader;
    size_t reply_elements; /* array elements the reply being read has announced so far */
    dlock__link_expect *expect;
    size_t expect_head, expect_count, expect_cap;
    uint64_t generation;           /* +1 each time a connection is dropped */
    const dlock__endpoint *target; /* where the current attempt connects */
    bool select_db;                /* SELECT on connect (the command link) */
    int handshake_pending;
    int failures;           /* consecutive failed attempts (a ready link dropping counts): the
                               backoff exponent, back to 0 only for a link that stayed up long */
    int64_t ready_ms;       /* when the link last became ready */
    bool counts_reconnects; /* a command or subscriber link, of any node: dlock_stats counts
                               each time it is ready again */
    int last_error;
    char last_error_text[DLOCK__ERROR_TEXT_SIZE];
    dlock__timer timer; /* connect timeout, or the backoff delay */
    /* owner's hooks */
    void (*on_ready)(dlock__link *link);
    void (*on_down)(dlock__link *link, int err); /* a ready link dropped, or an attempt failed */
    /* extra handshake commands (the script loads); returns how many replies to wait for */
    int (*handshake_extra)(dlock__link *link);
    /* The subscriber's: a reply that is an array opening with a string may be a push (a
     * message), which answers no command. Returns true when it took the reply (a push it
     * understood, or one of the wrong shape it reported with dlock__link_protocol_error);
     * false: the reply answers the oldest command. NULL: every reply answers a command. */
    bool (*on_push)(dlock__link *link, const dlock__reply *reply);
    /* Where to connect, asked at the start of every attempt (NULL: the client's URL). The
     * hook answers, at once or later on the loop thread, with dlock__link_connect_to or
     * dlock__link_resolve_failed, and bounds its own time (it must answer): the attempt's
     * connect timeout runs from dlock__link_connect_to, so that a sentinel that had to be
     * waited out does not also cost the connection to the master its time.
     * Sentinel plugs in here (ask the sentinels for the master, then connect to it). */
    void (*resolve)(dlock__link *link);
    void *resolve_arg; /* the hook's own */
};

void dlock__link_init(dlock__link *link, dlock_client *c, const char *role);
void dlock__link_start(dlock__link *link);
/* From the resolve hook, for the attempt in progress (ignored once it has timed out):
 * connect to ep, which the hook keeps unchanged until its next call (or the link's close). */
void dlock__link_connect_to(dlock__link *link, const dlock__endpoint *ep);
/* From the resolve hook: no endpoint this time; a failed attempt (backoff, retry). */
void dlock__link_resolve_failed(dlock__link *link, int err, const char *why);
/* Tear the connection down now and reconnect after a backoff (err says why). Safe from
 * anywhere on the loop thread, reply callbacks included: the dispatch stops at once. */
void dlock__link_fail(dlock__link *link, int err, const char *why);
/* The same, from a zero-delay timer; only the first failure's reason is kept. */
void dlock__link_fail_later(dlock__link *link, int err, const char *why);
void dlock__link_close(dlock__link *link);
/* Drops the connection and stops reconnecting: the link is LINK_IDLE again and
 * dlock__link_start opens it later; its failure count (backoff) stays. No on_down. */
void dlock__link_stop(dlock__link *link);
/* Whether the oldest command in flight is answered by fn(arg). */
bool dlock__link_awaits(const dlock__link *link, dlock__link_reply_fn fn, const void *arg);
/* Sends a command (binary-safe argv) on a connected link (handshake or ready); fn(arg) gets
 * its reply. DLOCK_OK, DLOCK_ENOMEM, DLOCK_ECONN (no connection). */
int dlock__link_send(dlock__link *link, int argc, const char **argv, const size_t *lens,
                     dlock__link_reply_fn fn, void *arg);
/* Something arrived that the protocol does not allow (a reply to no command, a push of the
 * wrong shape, bytes that are not RESP): log what arrived, drop the connection (commands in
 * flight fail or are resent as on any drop), reconnect after the backoff. */
void dlock__link_protocol_error(dlock__link *link, const char *what, const dlock__reply *reply);
/* From a handshake reply callback: one expected reply arrived fine. */
void dlock__link_handshake_step(dlock__link *link);
/* From a handshake reply callback: the server refused; fail the attempt. */
void dlock__link_handshake_error(dlock__link *link, const dlock__reply *reply);
/* A dlock__link_reply_fn for handshake commands that only need to succeed (AUTH, PING). */
void dlock__link_handshake_reply(dlock__link *link, const dlock__reply *reply, void *arg);

/* The text of a permission error for dlock_last_error(): what the server said (server_text,
 * may be NULL), the user, the channel (may be NULL) and what to grant: the channel, else
 * the refused command (command, "sadd", when the caller found it; else the one the server
 * names, if it does). */
void dlock__noperm_text(const dlock_client *c, const char *server_text, const char *channel,
                        const char *command, char *buf, size_t size);

/* ---- the command connection and its queue (conn.c) ------------------------------------- */

typedef struct dlock__cmd dlock__cmd;
typedef struct dlock__cmd_queue {
    dlock__cmd *head, *tail;
    size_t count;
} dlock__cmd_queue;

void dlock__cmd_queue_push(dlock__cmd_queue *q, dlock__cmd *cmd);
dlock__cmd *dlock__cmd_queue_pop(dlock__cmd_queue *q); /* NULL when empty */

/* What a caller asks of a command, besides its arguments (route.c fills it in). */
typedef struct dlock__cmd_request {
    int script; /* enum dlock__script_id, or -1 for a plain command */
    int nkeys;
    int slot; /* in a Cluster: its keys' slot, where it is placed again; -1 any node */
    unsigned flags;
    dlock__reply_fn fn;
    dlock__acked_fn acked_fn; /* instead of fn */
    int64_t deadline_ms;
    void *arg;
} dlock__cmd_request;

/* ---- replica acknowledgement (replicas.c) ---------------------------------------------- */

/* What the command connection knows of its master's replicas, for the WAIT that follows
 * every write (sync_replicas=auto asks for `seen`). */
typedef struct dlock__replicas {
    int seen;           /* the most replicas the master was seen with since we connected to it */
    char master[160];   /* which master seen is about (dlock__endpoint_describe) */
    bool role_refused;  /* the ACL refused ROLE: said once in the log */
    dlock__timer check; /* the next ROLE (auto only) */
} dlock__replicas;

/* Handshake of the command link: ROLE under auto (a new master starts from 0); returns the
 * replies to wait for. */
int dlock__replicas_probe(dlock__link *link, dlock__replicas *r);
/* A ROLE reply (or its error) from the handshake or a later check: raises seen. */
void dlock__replicas_role(dlock__replicas *r, dlock_client *c, const dlock__reply *reply);
/* Replicas seen (ROLE) or acknowledging (WAIT): raises seen. */
void dlock__replicas_acked(dlock__replicas *r, long long acked);
/* More replicas than a master can have (each is a connection to it): a count above is none. */
#define DLOCK__REPLICAS_MAX 1000000
/* WAIT's answer (not an error): true with the replicas that have the write in *acked (raises
 * seen); false when it is no count of replicas (not an integer from 0 to DLOCK__REPLICAS_MAX):
 * a protocol violation, whether the write reached any replica is unknown. */
bool dlock__replicas_wait_answer(dlock__replicas *r, const dlock__reply *reply, int *acked);
/* How many replicas a write asks for (0: send no WAIT). */
int dlock__replicas_asked(const dlock__replicas *r, const dlock__endpoint *ep);
/* Whether conn.c should look at ROLE again now and then (auto, and ROLE not refused). */
bool dlock__replicas_check_due(const dlock__replicas *r, const dlock__endpoint *ep);
#define DLOCK__ROLE_CHECK_MS 2000

/* The WAITs that acknowledge writes in batches (conn.c): a WAIT covers every write sent
 * before it on its connection, and the server runs nothing more of that connection while
 * it waits, so few are out at a time, each covering the writes sent since the one before. */
typedef struct dlock__ack_batch {
    dlock__cmd_queue answered; /* writes whose script answered, until their WAIT does */
    int unwaited;              /* writes sent since the last WAIT went out */
    int replicas;              /* the most replicas one of those asks for */
    int64_t timeout_ms;        /* the least time one of those gives its WAIT */
    int waits_out;             /* WAITs in flight */
} dlock__ack_batch;

typedef struct dlock__conn {
    dlock__link link;
    dlock__replicas replicas;
    dlock__cmd_queue pending;    /* waiting for the link to be ready */
    dlock__cmd_queue inflight;   /* sent, reply not yet in: replies come back in this order */
    dlock__ack_batch batch;      /* writes waiting for their WAIT */
    dlock__timer deadline_timer; /* earliest reply timeout / give-up time */
    int64_t pending_due_ms;      /* the earliest give-up time in pending, or earlier */
    bool closing;
    uint64_t commands_sent; /* counters for tests and diagnostics */
    uint64_t reconnects;
    /* the client's hook (may be NULL): each attempt's outcome, DLOCK_OK once the link is
     * ready, else the error of the failed attempt or of the ready link that dropped */
    void (*on_outcome)(struct dlock__conn *conn, int status);
    /* the cluster's hook (NULL elsewhere): the node did not run cmd (reply: MOVED, ASK,
     * TRYAGAIN, CLUSTERDOWN or READONLY, valid during the call); cmd is out of every queue
     * and the hook places it (dlock__conn_adopt) or ends it (dlock__cmd_fail) */
    void (*on_redirect)(struct dlock__conn *conn, dlock__cmd *cmd, const dlock__reply *reply);
    bool follows_failover; /* its master may change (Sentinel, Cluster): ROLE now and then */
} dlock__conn;

void dlock__conn_init(dlock__conn *conn, dlock_client *c);
void dlock__conn_close(dlock__conn *conn); /* fails every command with DLOCK_ECANCELED */
/* Queues a new command on conn (route.c, or a command meant for this node: ROLE, CLUSTER
 * SLOTS). Contract of dlock__command. */
int dlock__conn_enqueue(dlock__conn *conn, const dlock__cmd_request *req, int argc,
                        const char *const *argv, const size_t *argvlen);
/* Queues cmd, made on another conn, on this one (asking: behind ASKING, once). A closing
 * conn ends it with DLOCK_ECANCELED. */
void dlock__conn_adopt(dlock__conn *conn, dlock__cmd *cmd, bool asking);
/* Takes every command still waiting to be sent (the caller places each). */
dlock__cmd_queue dlock__conn_take_pending(dlock__conn *conn);
bool dlock__conn_idle(const dlock__conn *conn); /* nothing waiting, nothing in flight */
/* Whether what is in flight is one write and the WAIT that acknowledges it alone. */
bool dlock__conn_one_write_and_its_wait(const dlock__conn *conn);
/* Whether the next reply due on conn is a WAIT's answer (a replica's round trip away). */
bool dlock__conn_next_is_wait_answer(const dlock__conn *conn);
int dlock__cmd_slot(const dlock__cmd *cmd);
/* When cmd gives up waiting to be sent or answered: timeout_ms x (retry_attempts + 1) after
 * it was queued; and for a command with a caller's deadline (an acquisition's wait,
 * dlock__script_acked) that no node may have run yet (never sent, or only answered "not
 * here": MOVED, READONLY ...), so that failing it changes nothing, that deadline when it
 * comes first: a call does not wait for a connection (or a Cluster slot's master) four
 * times longer than for the object. Never sooner than timeout_ms after it was queued, the
 * time the client gives one command: a try made as a connection drops, or as Sentinel
 * moves the master, still rides through the reconnect. */
int64_t dlock__cmd_give_up_ms(const dlock__cmd *cmd);
int dlock__cmd_redirects(const dlock__cmd *cmd); /* how often a node did not run it */
/* What the node answered the last time it did not run cmd ("MOVED 12 host:port",
 * "TRYAGAIN ..."), NULL if it always ran; valid while cmd lives. */
const char *dlock__cmd_not_run_why(const dlock__cmd *cmd);
/* A command not yet on any connection (a Cluster's slot without a master parks it): ENOMEM;
 * placed with dlock__conn_adopt or ended with dlock__cmd_fail. */
int dlock__cmd_new(dlock_client *c, const dlock__cmd_request *req, int argc,
                   const char *const *argv, const size_t *argvlen, dlock__cmd **out);
/* Ends cmd with status (no reply), its callback run now. */
void dlock__cmd_fail(dlock_client *c, dlock__cmd *cmd, int status);

/* ---- the script registry (script.c) ----------------------------------------------------- */

/* Sends SCRIPT LOAD for every script on link (the handshake); returns replies to wait for. */
int dlock__scripts_load(dlock__link *link);
/* A Cluster client's texts of the scripts (SPUBLISH, allow-cross-slot-keys; script.c
 * says why). DLOCK_ENOMEM; dlock__scripts_free frees what was made. */
int dlock__scripts_shard(dlock_client *c);
void dlock__scripts_free(dlock_client *c);
/* The text a client sends for a script: the embedded one, or its Cluster text. */
const char *dlock__script_text(const dlock_client *c, enum dlock__script_id id, size_t *len);
const char *dlock__script_sha(const dlock_client *c, enum dlock__script_id id);
/* false for the scripts that never write (script.c's one list): no WAIT follows them. */
bool dlock__script_writes(enum dlock__script_id id);

/* ---- the pub/sub router (pubsub.c) ------------------------------------------------------ */

typedef struct dlock__pubsub {
    dlock__link link;
    /* A Cluster shard's subscriber (cluster.c sets these before the first listener):
     * SSUBSCRIBE, smessage; a channel whose slot the server gave away (its sunsubscribe)
     * is kept, and on_slot_lost tells the owner, whose new map moves it. */
    bool sharded;
    void *owner;
    void (*on_slot_lost)(struct dlock__pubsub *ps);
    dlock__map channels;                       /* name -> struct channel */
    char refused_text[DLOCK__ERROR_TEXT_SIZE]; /* the last refused SUBSCRIBE, for
                                                  dlock_last_error() */
} dlock__pubsub;

void dlock__pubsub_init(dlock__pubsub *ps, dlock_client *c);
void dlock__pubsub_close(dlock__pubsub *ps);
/* dlock__listen on the subscriber route.c chose for the channel. */
int dlock__pubsub_listen(dlock__pubsub *ps, const char *channel, dlock__listener *l);
/* A Cluster map changed: every channel of ps for which stays(ps, channel) is false leaves
 * ps (UNSUBSCRIBEd if it was subscribed), and each of its listeners is handed to
 * move(ps, channel, l), which listens on the channel's new subscriber (on_ready follows
 * there). A channel that stays and lost its subscription (the server's sunsubscribe) is
 * subscribed again. */
void dlock__pubsub_follow_slots(dlock__pubsub *ps,
                                bool (*stays)(dlock__pubsub *ps, const char *channel),
                                void (*move)(dlock__pubsub *ps, const char *channel,
                                             dlock__listener *l));
bool dlock__pubsub_idle(const dlock__pubsub *ps); /* no channel, nothing in flight */

/* DLOCK_ENOPERM when the server refused l's channel (the ACL denies it to our user):
 * listeners get on_ready then, and find this. A refusal is not retried while the channel
 * has listeners; once the last leaves, the next listener asks the server again.
 * DLOCK_OK otherwise. */
int dlock__listener_error(const dlock__listener *l);

/* ---- the client's net part ---------------------------------------------------------------- */

typedef struct dlock__client_net {
    dlock__client_base base; /* first: see base.h */
    dlock__endpoint endpoint;
    dlock__tls *tls; /* rediss://: both connections' TLS settings; NULL otherwise */
    dlock__loop *loop;
    atomic_bool closing;
    dlock__sched sched;
    dlock__conn conn;
    dlock__pubsub pubsub;
    char (*script_sha)[41];    /* DLOCK__SCRIPT_COUNT entries; "" until loaded */
    char **script_text;        /* Cluster: the scripts' texts there (script.c); else NULL */
    unsigned *script_unstored; /* Cluster: each script's KEYS passed undeclared (script.c) */
    /* The shortest lease the watchdog keeps or is about to keep, 0 when it keeps none (the
     * engine's hook: the links' reconnect backoff stays below a third of it, link.c). */
    int64_t (*shortest_lease_ms)(const dlock_client *c);
} dlock__client_net;

#define DLOCK__NET(c) DLOCK__PART(dlock__client_net, c)

#endif
