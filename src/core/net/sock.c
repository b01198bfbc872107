/* SPDX-License-Identifier: MIT */
/* sock.c — one connection's bytes: resolve, connect, TLS handshake, buffered writes, reads.
 *
 * A sock goes RESOLVING -> CONNECTING -> (HANDSHAKE, under TLS) -> OPEN, or fails on the
 * way; its owner (link.c) bounds the whole by connect_timeout_ms with its own timer and
 * closes the sock when that runs out.
 *   - A host name is resolved by getaddrinfo on a short-lived thread of its own, so the
 *     loop thread never blocks on DNS; the answer comes back through a loop wake-up. A sock
 *     closed meanwhile lets go of the request, and the thread frees what is left when it
 *     ends (the request is shared by the two and counted). Numeric addresses and unix
 *     sockets need no thread.
 *   - Each resolved address is tried in turn (non-blocking connect, then SO_ERROR once the
 *     socket is writable) until one connects.
 *   - Writes are appended to an output buffer and sent when the socket is writable: what
 *     the owner queues in one loop turn leaves in one write. No write raises SIGPIPE (the
 *     async face runs on the application's thread, whose SIGPIPE may end the process):
 *     plaintext sends with MSG_NOSIGNAL, and TLS through tls.c's socket BIO, which does too.
 *   - Reads go to the owner's data hook as they come; TLS records decrypted ahead (SSL
 *     pending) are read in the same turn, as the socket is no longer readable for them.
 *   - Under TLS a read may need the socket writable and a write may need it readable
 *     (renegotiation, key updates): each side remembers what the other needs.
 *   - The reading may be lent to a caller that waits for its own reply on the blocking face
 *     (loop.h, "the lone caller"): the reader watcher is stopped and the caller reads,
 *     holding the loop, when the socket is readable. Whatever else needs the socket (a
 *     write, a failure, LEND_IDLE_MS without a caller) takes it back and rings the bell.
 *   - A TLS handshake the server has not answered at all after PLAIN_CHECK_MS may be
 *     talking to a plain-text port: Redis reads the hello as an inline command, waits for
 *     a newline that never comes, and says nothing until the connect timeout. A second
 *     connection to the same address then says PING in plain text; an answer in RESP
 *     proves it, and the handshake fails at once saying so. A TLS server drops that
 *     connection (and logs a failed handshake), and the handshake goes on as before.
 * Hooks never run inside dlock__sock_open or dlock__sock_close. The owner may close the
 * sock from inside a hook: it is then freed when the hook returns. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "net/net.h"

enum sock_state { S_RESOLVING, S_CONNECTING, S_HANDSHAKE, S_OPEN, S_FAILED };

/* How long a TLS handshake waits for the server's first byte before it asks, on a second
 * connection, whether the port speaks plain text: a TLS server answers the hello at once. */
#define PLAIN_CHECK_MS 500

/* How long a lent socket stays lent without a caller reading it: the I/O thread then
 * watches it again, so that an idle client notices a connection the server closed. */
#define LEND_IDLE_MS 100

/* The plain-text question on its own connection (see the opening comment). */
typedef struct plain_check {
    int fd; /* -1: none */
    dlock__loop_io reader, writer;
    bool reading, writing;
    dlock__loop_timer timer;
    bool timer_running;
} plain_check;

typedef struct resolve_req resolve_req;

struct dlock__sock {
    dlock__loop *loop;
    const dlock__sock_hooks *hooks;
    void *arg;
    enum sock_state state;
    int fd;
    dlock__loop_io reader, writer;
    bool reading, writing; /* the watchers are started */
    char *host;            /* TCP: what was resolved (and the name TLS verifies) */
    int port;
    resolve_req *resolving;
    struct addrinfo *addrs, *next_addr;
    char connect_error[160]; /* why the last address failed */
    dlock__tls *tls;
    SSL *ssl;
    bool read_wants_write, write_wants_read;
    int tls_write_len; /* a write to retry with the same length after WANT_* */
    plain_check plain;
    size_t received; /* bytes read while open */
    char *out;
    size_t out_len, out_off, out_cap;
    bool send_deferred; /* a borrowing thread sends out[] when it gives the loop back */
    /* lent to a caller (dlock__sock_lend): the reader watcher is stopped, the caller reads */
    bool lent;
    int bell;                     /* rung when the lending ends */
    uint64_t lends, lends_seen;   /* calls that leaned on the lending; as the timer last saw */
    dlock__loop_timer lend_timer; /* LEND_IDLE_MS without a call: the lending ends */
    bool lend_timer_running;
    int depth; /* > 0 while a hook runs */
    bool closed;
};

/* ---- hooks ------------------------------------------------------------------------------ */

static void lend_end(dlock__sock *s) {
    s->lent = false;
    dlock__loop_bell_ring(s->bell);
}

static void watch(dlock__sock *s, bool read, bool write) {
    if (s->lent && (read || !write)) /* the loop reads it again, or nobody does: give it back */
        lend_end(s);
    if (read != s->reading) {
        (read ? dlock__loop_io_start : dlock__loop_io_stop)(s->loop, &s->reader);
        s->reading = read;
    }
    if (write != s->writing) {
        (write ? dlock__loop_io_start : dlock__loop_io_stop)(s->loop, &s->writer);
        s->writing = write;
    }
}

static void sock_free(dlock__sock *s);
static void plain_check_end(dlock__sock *s);

/* Runs the failed hook once; the sock stays until its owner closes it. false: gone. */
static bool report_failure(dlock__sock *s, const char *why) {
    if (s->state == S_FAILED)
        return true;
    s->state = S_FAILED;
    watch(s, false, false);
    plain_check_end(s);
    s->depth++;
    s->hooks->failed(s->arg, why);
    s->depth--;
    if (s->closed && s->depth == 0) {
        sock_free(s);
        return false;
    }
    return true;
}

/* ---- TLS --------------------------------------------------------------------------------- */

/* "host:port" of the server, for a message. */
static const char *server_where(const dlock__sock *s, char *buf, size_t size) {
    const char *host = s->host ? s->host : "?";
    snprintf(buf, size, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, s->port);
    return buf;
}

static void tls_failed(dlock__sock *s, int ret, bool handshake) {
    int sys_errno = errno;
    int ssl_error = SSL_get_error(s->ssl, ret);
    char why[320], where[300];
    dlock__tls_failure(s->ssl, ssl_error, sys_errno, handshake, dlock__tls_has_client_cert(s->tls),
                       s->received == 0, server_where(s, where, sizeof(where)), why, sizeof(why));
    report_failure(s, why);
}

/* ---- is it a plain-text port? ------------------------------------------------------------ */

static void plain_check_end(dlock__sock *s) {
    plain_check *p = &s->plain;
    if (p->timer_running)
        dlock__loop_timer_stop(s->loop, &p->timer);
    p->timer_running = false;
    if (p->fd < 0)
        return;
    if (p->reading)
        dlock__loop_io_stop(s->loop, &p->reader);
    if (p->writing)
        dlock__loop_io_stop(s->loop, &p->writer);
    p->reading = p->writing = false;
    close(p->fd);
    p->fd = -1;
}

static void plain_check_readable(void *arg) {
    dlock__sock *s = arg;
    char answer[16];
    ssize_t n = recv(s->plain.fd, answer, sizeof(answer) - 1, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    plain_check_end(s);
    /* "+PONG", "-NOAUTH ...", "-ERR ...": RESP, so no TLS; anything else proves nothing */
    if (n <= 0 || (answer[0] != '+' && answer[0] != '-') || s->state != S_HANDSHAKE)
        return;
    answer[n] = '\0';
    answer[strcspn(answer, "\r\n")] = '\0';
    char why[320], where[300];
    dlock__tls_plain_text_text(server_where(s, where, sizeof(where)), answer, why, sizeof(why));
    report_failure(s, why);
}

static void plain_check_writable(void *arg) {
    dlock__sock *s = arg;
    plain_check *p = &s->plain;
    int error = 0;
    socklen_t len = sizeof(error);
    if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0 || error != 0 ||
        send(p->fd, "PING\r\n", 6, MSG_NOSIGNAL) != 6) {
        plain_check_end(s);
        return;
    }
    dlock__loop_io_stop(s->loop, &p->writer);
    p->writing = false;
    dlock__loop_io_start(s->loop, &p->reader);
    p->reading = true;
}

/* The handshake has heard nothing for PLAIN_CHECK_MS: ask the same address in plain text. */
static void plain_check_start(void *arg) {
    dlock__sock *s = arg;
    plain_check *p = &s->plain;
    p->timer_running = false;
    struct sockaddr_storage peer;
    socklen_t len = sizeof(peer);
    if (s->state != S_HANDSHAKE || dlock__tls_heard(s->ssl) > 0 ||
        getpeername(s->fd, (struct sockaddr *)&peer, &len) != 0)
        return;
    p->fd = socket(peer.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (p->fd < 0)
        return;
    if (connect(p->fd, (struct sockaddr *)&peer, len) != 0 && errno != EINPROGRESS) {
        plain_check_end(s);
        return;
    }
    dlock__loop_io_init(&p->reader, p->fd, false, plain_check_readable, s);
    dlock__loop_io_init(&p->writer, p->fd, true, plain_check_writable, s);
    dlock__loop_io_start(s->loop, &p->writer);
    p->writing = true;
}

static void become_open(dlock__sock *s) {
    plain_check_end(s);
    s->state = S_OPEN;
    watch(s, true, s->out_len > s->out_off);
    s->depth++;
    s->hooks->connected(s->arg);
    s->depth--;
    if (s->closed && s->depth == 0)
        sock_free(s);
}

static void handshake_step(dlock__sock *s) {
    ERR_clear_error();
    int ret = SSL_connect(s->ssl);
    if (ret == 1) {
        become_open(s);
        return;
    }
    switch (SSL_get_error(s->ssl, ret)) {
    case SSL_ERROR_WANT_READ:
        watch(s, true, false);
        return;
    case SSL_ERROR_WANT_WRITE:
        watch(s, false, true);
        return;
    default:
        tls_failed(s, ret, true);
    }
}

/* ---- connecting ---------------------------------------------------------------------------- */

static void connected(dlock__sock *s) {
    if (!s->tls) {
        become_open(s);
        return;
    }
    char err[200];
    s->ssl = dlock__tls_session(s->tls, s->fd, s->host ? s->host : "", err, sizeof(err));
    if (!s->ssl) {
        report_failure(s, err);
        return;
    }
    s->state = S_HANDSHAKE;
    dlock__loop_timer_start(s->loop, &s->plain.timer, PLAIN_CHECK_MS);
    s->plain.timer_running = true;
    handshake_step(s);
}

static void close_fd(dlock__sock *s) {
    if (s->fd < 0)
        return;
    watch(s, false, false);
    close(s->fd);
    s->fd = -1;
}

static void on_readable(void *arg);
static void on_writable(void *arg);

/* Starts a non-blocking connect to addr. false with connect_error set when it failed at
 * once. */
static bool connect_start(dlock__sock *s, const struct sockaddr *addr, socklen_t addrlen) {
    s->fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->fd < 0) {
        snprintf(s->connect_error, sizeof(s->connect_error), "socket: %s", strerror(errno));
        return false;
    }
    if (addr->sa_family != AF_UNIX) {
        int on = 1; /* requests are small and latency is all: no Nagle */
        setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    }
    dlock__loop_io_init(&s->reader, s->fd, false, on_readable, s);
    dlock__loop_io_init(&s->writer, s->fd, true, on_writable, s);
    if (connect(s->fd, addr, addrlen) != 0 && errno != EINPROGRESS && errno != EAGAIN) {
        snprintf(s->connect_error, sizeof(s->connect_error), "%s", strerror(errno));
        close_fd(s);
        return false;
    }
    s->state = S_CONNECTING;
    watch(s, false, true); /* writable: the connect has an outcome */
    return true;
}

/* Tries the next resolved addresses until a connect starts; reports the failure when none
 * is left. */
static void connect_next(dlock__sock *s) {
    while (s->next_addr) {
        struct addrinfo *a = s->next_addr;
        s->next_addr = a->ai_next;
        if (connect_start(s, a->ai_addr, a->ai_addrlen))
            return;
    }
    report_failure(s, s->connect_error[0] ? s->connect_error : "no address to connect to");
}

static void connect_finished(dlock__sock *s) {
    int so_error = 0;
    socklen_t len = sizeof(so_error);
    if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &so_error, &len) != 0)
        so_error = errno;
    if (so_error != 0) {
        snprintf(s->connect_error, sizeof(s->connect_error), "%s", strerror(so_error));
        close_fd(s);
        connect_next(s);
        return;
    }
    connected(s);
}

/* ---- resolving a host name off the loop thread ----------------------------------------- */

struct resolve_req {
    pthread_mutex_t mu;
    int refs; /* the sock and the thread */
    bool canceled;
    char *host;
    char port[8];
    int gai_rc;
    struct addrinfo *result;
    dlock__loop *loop;
    dlock__loop_wake done;
    dlock__sock *sock;
};

static void req_unref(resolve_req *r) {
    pthread_mutex_lock(&r->mu);
    bool last = --r->refs == 0;
    pthread_mutex_unlock(&r->mu);
    if (!last)
        return;
    if (r->result)
        freeaddrinfo(r->result);
    pthread_mutex_destroy(&r->mu);
    dlock__free(r->host);
    dlock__free(r);
}

static void *resolve_main(void *arg) {
    resolve_req *r = arg;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *result = NULL;
    int rc = getaddrinfo(r->host, r->port, &hints, &result);
    pthread_mutex_lock(&r->mu);
    r->gai_rc = rc;
    r->result = result;
    if (!r->canceled) /* under the lock: the sock cannot stop the wake-up meanwhile */
        dlock__loop_wake_send(r->loop, &r->done);
    pthread_mutex_unlock(&r->mu);
    req_unref(r);
    return NULL;
}

/* The sock lets go of its request (an answer, or a close while it is out). Loop thread. */
static void resolve_detach(dlock__sock *s) {
    resolve_req *r = s->resolving;
    if (!r)
        return;
    s->resolving = NULL;
    pthread_mutex_lock(&r->mu);
    r->canceled = true;
    dlock__loop_wake_stop(r->loop, &r->done);
    pthread_mutex_unlock(&r->mu);
    req_unref(r);
}

static void on_resolved(void *arg) {
    resolve_req *r = arg;
    dlock__sock *s = r->sock;
    pthread_mutex_lock(&r->mu);
    int rc = r->gai_rc;
    s->addrs = r->result;
    r->result = NULL;
    pthread_mutex_unlock(&r->mu);
    resolve_detach(s);
    if (rc != 0) {
        char why[DLOCK__ERROR_TEXT_SIZE / 2]; /* a host name of up to 255 bytes, whole */
        snprintf(why, sizeof(why), "cannot resolve %s: %s", s->host, gai_strerror(rc));
        report_failure(s, why);
        return;
    }
    s->next_addr = s->addrs;
    connect_next(s);
}

static int resolve_start(dlock__sock *s, const char *port) {
    resolve_req *r = dlock__calloc(1, sizeof(*r));
    if (!r || !(r->host = dlock__strdup(s->host))) {
        dlock__free(r);
        return DLOCK_ENOMEM;
    }
    pthread_mutex_init(&r->mu, NULL);
    r->refs = 2;
    snprintf(r->port, sizeof(r->port), "%s", port);
    r->loop = s->loop;
    r->sock = s;
    dlock__loop_wake_init(&r->done, on_resolved, r);
    dlock__loop_wake_start(s->loop, &r->done);
    s->resolving = r;
    /* the thread takes no signal of the application's */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t thread;
    int rc = pthread_create(&thread, &attr, resolve_main, r);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        r->refs--; /* the thread's */
        resolve_detach(s);
        return DLOCK_ENOMEM;
    }
    return DLOCK_OK;
}

/* ---- reading and writing ---------------------------------------------------------------- */

static void flush(dlock__sock *s);

/* Reads what is there and hands it to the owner. */
static void read_some(dlock__sock *s) {
    char buf[16384];
    for (;;) {
        ssize_t n;
        if (s->ssl) {
            s->read_wants_write = false;
            ERR_clear_error();
            int ret = SSL_read(s->ssl, buf, (int)sizeof(buf));
            if (ret <= 0) {
                int e = SSL_get_error(s->ssl, ret);
                if (e == SSL_ERROR_WANT_READ)
                    break;
                if (e == SSL_ERROR_WANT_WRITE) {
                    s->read_wants_write = true;
                    watch(s, true, true);
                    break;
                }
                tls_failed(s, ret, false);
                return;
            }
            n = ret;
        } else {
            n = recv(s->fd, buf, sizeof(buf), 0);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                    break;
                report_failure(s, strerror(errno));
                return;
            }
            if (n == 0) {
                report_failure(s, "connection closed by the server");
                return;
            }
        }
        s->received += (size_t)n;
        s->depth++;
        s->hooks->data(s->arg, buf, (size_t)n);
        s->depth--;
        if (s->closed) {
            if (s->depth == 0)
                sock_free(s);
            return;
        }
        if (s->state != S_OPEN)
            return;
        /* a short plain read emptied the socket; TLS may hold decrypted bytes back */
        if ((size_t)n < sizeof(buf) && !(s->ssl && SSL_pending(s->ssl) > 0))
            break;
    }
    if (s->write_wants_read && s->state == S_OPEN)
        flush(s);
}

/* Sends what the buffer holds, as much as the socket takes. */
static void flush(dlock__sock *s) {
    s->write_wants_read = false;
    while (s->out_off < s->out_len) {
        size_t left = s->out_len - s->out_off;
        ssize_t n;
        if (s->ssl) {
            int len = s->tls_write_len ? s->tls_write_len : (int)(left < 65536 ? left : 65536);
            ERR_clear_error();
            int ret = SSL_write(s->ssl, s->out + s->out_off, len);
            if (ret <= 0) {
                int e = SSL_get_error(s->ssl, ret);
                s->tls_write_len = len; /* retried with the same length */
                if (e == SSL_ERROR_WANT_WRITE) {
                    watch(s, true, true);
                    return;
                }
                if (e == SSL_ERROR_WANT_READ) {
                    s->write_wants_read = true;
                    watch(s, true, s->read_wants_write);
                    return;
                }
                tls_failed(s, ret, false);
                return;
            }
            s->tls_write_len = 0;
            n = ret;
        } else {
            n = send(s->fd, s->out + s->out_off, left, MSG_NOSIGNAL);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                    watch(s, true, true);
                    return;
                }
                report_failure(s, strerror(errno));
                return;
            }
        }
        s->out_off += (size_t)n;
    }
    s->out_off = s->out_len = 0;
    watch(s, true, s->read_wants_write);
}

/* The send of a thread that borrowed the loop (dlock__sock_wrote). It sends what it can;
 * anything else — a full socket, an error — is left to the loop thread, as though the
 * bytes had been queued there: what reacts to a failure runs on the loop thread. TLS
 * sockets are not sent from here (a TLS write may need to read first). */
static void send_borrowed(void *arg) {
    dlock__sock *s = arg;
    s->send_deferred = false;
    if (s->state != S_OPEN || s->writing || s->out_off == s->out_len)
        return;
    ssize_t n;
    do
        n = send(s->fd, s->out + s->out_off, s->out_len - s->out_off, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n > 0)
        s->out_off += (size_t)n;
    if (s->out_off == s->out_len)
        s->out_off = s->out_len = 0;
    else
        watch(s, true, true); /* the rest, or the error, on the loop thread */
}

static void on_readable(void *arg) {
    dlock__sock *s = arg;
    if (s->state == S_HANDSHAKE)
        handshake_step(s);
    else if (s->state == S_OPEN)
        read_some(s);
}

static void on_writable(void *arg) {
    dlock__sock *s = arg;
    switch (s->state) {
    case S_CONNECTING:
        connect_finished(s);
        break;
    case S_HANDSHAKE:
        handshake_step(s);
        break;
    case S_OPEN:
        if (s->read_wants_write) {
            read_some(s); /* may free s */
            return;
        }
        flush(s);
        break;
    default:
        break;
    }
}

char *dlock__sock_reserve(dlock__sock *s, size_t len) {
    if (s->out_len + len > s->out_cap) {
        size_t cap = s->out_cap ? s->out_cap : 4096;
        while (cap < s->out_len + len)
            cap *= 2;
        char *grown = dlock__realloc(s->out, cap);
        if (!grown)
            return NULL;
        s->out = grown;
        s->out_cap = cap;
    }
    return s->out + s->out_len;
}

void dlock__sock_wrote(dlock__sock *s, size_t len) {
    s->out_len += len;
    /* Someone else's command: its reply is the loop's to read. A caller that holds the
     * loop settles it once its call has started (dlock__sock_lend). */
    if (s->lent && !dlock__loop_held_here(s->loop))
        watch(s, true, s->writing);
    if (s->state != S_OPEN || s->write_wants_read || s->writing || s->send_deferred)
        return; /* it leaves with what is already waiting to */
    /* On a thread that borrowed the loop (loop.h), the bytes leave when it gives the loop
     * back; on the loop thread (or with the borrow's list full), when the socket is
     * writable, on this loop turn. */
    if (!s->ssl && dlock__loop_defer(s->loop, send_borrowed, s))
        s->send_deferred = true;
    else
        watch(s, true, true);
}

/* ---- lending the reading to a caller --------------------------------------------------- */

static void lend_idle_check(void *arg) {
    dlock__sock *s = arg;
    s->lend_timer_running = false;
    if (!s->lent)
        return;
    if (s->lends != s->lends_seen) { /* a caller leaned on it since: keep it lent */
        s->lends_seen = s->lends;
        dlock__loop_timer_start(s->loop, &s->lend_timer, LEND_IDLE_MS);
        s->lend_timer_running = true;
        return;
    }
    watch(s, true, s->writing);
}

int dlock__sock_lend(dlock__sock *s, int bell, bool lend) {
    if (!lend || bell < 0 || s->ssl || s->state != S_OPEN || s->writing || s->depth > 0) {
        if (s->lent)
            watch(s, true, s->writing);
        return -1;
    }
    if (!s->lent) {
        if (!s->reading)
            return -1;
        dlock__loop_io_lend(s->loop, &s->reader);
        s->reading = false;
        s->lent = true;
        s->bell = bell;
        if (!s->lend_timer_running) {
            dlock__loop_timer_start(s->loop, &s->lend_timer, LEND_IDLE_MS);
            s->lend_timer_running = true;
        }
    }
    s->lends++;
    return s->fd;
}

bool dlock__sock_lent(const dlock__sock *s) {
    return s->lent;
}

bool dlock__sock_read_lent(dlock__sock *s) {
    if (!s->lent)
        return false;
    on_readable(s); /* may free s */
    return true;
}

/* ---- opening and closing ------------------------------------------------------------------ */

static void sock_free(dlock__sock *s) {
    if (s->lent)
        lend_end(s);
    if (s->lend_timer_running)
        dlock__loop_timer_stop(s->loop, &s->lend_timer);
    if (s->send_deferred)
        dlock__loop_undefer(s->loop, send_borrowed, s);
    resolve_detach(s);
    plain_check_end(s);
    if (s->ssl)
        dlock__tls_session_free(s->ssl); /* no close_notify: the peer sees the close */
    close_fd(s);
    if (s->addrs)
        freeaddrinfo(s->addrs);
    dlock__free(s->host);
    dlock__free(s->out);
    dlock__free(s);
}

void *dlock__sock_tls_session(const dlock__sock *s) {
    return s ? s->ssl : NULL;
}

void dlock__sock_close(dlock__sock *s) {
    if (!s)
        return;
    if (s->depth > 0) { /* inside one of its hooks: freed when the hook returns */
        s->closed = true;
        watch(s, false, false);
        return;
    }
    sock_free(s);
}

/* Starts connecting to ep; 0, or an error with the reason in err (nothing to close). */
static int sock_start(dlock__sock *s, const dlock__endpoint *ep, char *err, size_t errlen) {
    if (ep->is_unix) {
        struct sockaddr_un sun = {.sun_family = AF_UNIX};
        snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", ep->path);
        if (!connect_start(s, (struct sockaddr *)&sun, sizeof(sun))) {
            snprintf(err, errlen, "%s", s->connect_error);
            return DLOCK_ECONN;
        }
        return DLOCK_OK;
    }
    if (!(s->host = dlock__strdup(ep->host)))
        return DLOCK_ENOMEM;
    char port[8];
    snprintf(port, sizeof(port), "%d", ep->port);
    /* an address needs no DNS: resolved here, without a thread */
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
    if (getaddrinfo(ep->host, port, &hints, &s->addrs) == 0) {
        s->next_addr = s->addrs;
        while (s->next_addr) {
            struct addrinfo *a = s->next_addr;
            s->next_addr = a->ai_next;
            if (connect_start(s, a->ai_addr, a->ai_addrlen))
                return DLOCK_OK;
        }
        snprintf(err, errlen, "%s", s->connect_error);
        return DLOCK_ECONN;
    }
    s->addrs = NULL;
    s->state = S_RESOLVING;
    int rc = resolve_start(s, port);
    if (rc != DLOCK_OK)
        snprintf(err, errlen, "cannot start resolving %s", ep->host);
    return rc;
}

dlock__sock *dlock__sock_open(dlock__loop *loop, const dlock__endpoint *ep, dlock__tls *tls,
                              const dlock__sock_hooks *hooks, void *arg, char *err, size_t errlen) {
    err[0] = '\0';
    dlock__sock *s = dlock__calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->loop = loop;
    s->hooks = hooks;
    s->arg = arg;
    s->fd = -1;
    s->port = ep->port;
    s->plain.fd = -1;
    dlock__loop_timer_init(&s->plain.timer, plain_check_start, s);
    dlock__loop_timer_init(&s->lend_timer, lend_idle_check, s);
    s->tls = ep->tls ? tls : NULL;
    if (ep->tls && !tls) {
        snprintf(err, errlen, "TLS asked for, but the client has no TLS settings");
        dlock__free(s);
        return NULL;
    }
    int rc = sock_start(s, ep, err, errlen);
    if (rc != DLOCK_OK) {
        if (rc == DLOCK_ENOMEM && !err[0])
            snprintf(err, errlen, "out of memory");
        sock_free(s);
        return NULL;
    }
    return s;
}
