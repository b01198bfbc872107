/* SPDX-License-Identifier: MIT */
/* tls.c — a client's TLS settings (OpenSSL) and the words of a TLS failure.
 *
 * A rediss:// URL gives one dlock__tls per client: OpenSSL's context with the CA the server
 * is verified against (cacert=, else the system's store), the client certificate of mutual
 * TLS (cert= and key=), whether to verify at all (insecure=1 does not) and the name to
 * verify and send as SNI (sni=, else the URL's host). Both connections of the client make
 * their sessions from it (dlock__tls_session); sock.c drives the handshake and the I/O.
 *
 * The server is verified by its certificate chain and by its name: a host name against the
 * certificate's DNS names, an IP address against its IP addresses. A failure is never
 * papered over: sock.c reports it, the link counts a failed attempt (DLOCK_ECONN with the
 * text made here) and backs off; nothing falls back to plaintext. The text names the likely
 * cause: a server whose first bytes are RESP, not a TLS record, is a plain-text port (the
 * BIO below keeps those bytes); one that said nothing at all during the handshake never got
 * as far as asking for a client certificate. A file of the URL that cannot be opened is
 * named with the system's reason before OpenSSL is asked (it would say only "system lib").
 *
 * A session's bytes go through a socket BIO of our own rather than OpenSSL's: OpenSSL's
 * writes with write(), and a write to a connection the server closed raises SIGPIPE, which
 * ends a process that did not ignore it — the async face runs on the application's thread,
 * with the application's signal dispositions. Ours sends with MSG_NOSIGNAL (Linux has no
 * SO_NOSIGPIPE), as the plaintext path does; it reads, signals end of file and asks for a
 * retry exactly as OpenSSL's does, so the handshake and the failures read the same. */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "net/net.h"

struct dlock__tls {
    SSL_CTX *ctx;
    bool verify;
    bool has_client_cert;
    char *name; /* sni=, or NULL: the host connected to */
};

/* OpenSSL's reason for its latest error, or fallback; clears its error queue. */
static const char *openssl_reason(char *buf, size_t size, const char *fallback) {
    unsigned long e = ERR_peek_last_error();
    const char *reason = e ? ERR_reason_error_string(e) : NULL;
    if (reason)
        snprintf(buf, size, "%s", reason);
    else if (e)
        ERR_error_string_n(e, buf, size);
    else
        snprintf(buf, size, "%s", fallback);
    ERR_clear_error();
    return buf;
}

/* A file of the URL that cannot be opened, said as the system says it ("No such file or
 * directory", "Permission denied") with its path: OpenSSL would only say "system lib". */
static bool unreadable(dlock__tls *tls, char *err, size_t errlen, const char *what,
                       const char *path) {
    FILE *f = fopen(path, "r");
    if (f) {
        fclose(f);
        return false;
    }
    snprintf(err, errlen, "TLS: cannot read %s %s: %s", what, path, strerror(errno));
    dlock__tls_free(tls);
    return true;
}

static int setup_failed(dlock__tls *tls, char *err, size_t errlen, const char *what,
                        const char *path) {
    char reason[160];
    openssl_reason(reason, sizeof(reason), "unknown error");
    snprintf(err, errlen, "TLS: cannot use %s %s: %s", what, path, reason);
    dlock__tls_free(tls);
    return DLOCK_EINVAL;
}

int dlock__tls_new(const dlock__endpoint *ep, dlock__tls **out, char *err, size_t errlen) {
    dlock__tls *tls = dlock__calloc(1, sizeof(*tls));
    if (!tls || !(tls->ctx = SSL_CTX_new(TLS_client_method()))) {
        dlock__free(tls);
        ERR_clear_error();
        snprintf(err, errlen, "TLS: out of memory");
        return DLOCK_ENOMEM;
    }
    SSL_CTX_set_min_proto_version(tls->ctx, TLS1_2_VERSION);
    /* writes retried after WANT_WRITE may come from a buffer that has grown (moved) since */
    SSL_CTX_set_mode(tls->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    tls->verify = !ep->tls_insecure;
    if (ep->tls_sni && !(tls->name = dlock__strdup(ep->tls_sni))) {
        dlock__tls_free(tls);
        snprintf(err, errlen, "TLS: out of memory");
        return DLOCK_ENOMEM;
    }
    if (ep->tls_cacert) {
        if (unreadable(tls, err, errlen, "cacert", ep->tls_cacert))
            return DLOCK_EINVAL;
        if (SSL_CTX_load_verify_locations(tls->ctx, ep->tls_cacert, NULL) != 1)
            return setup_failed(tls, err, errlen, "cacert", ep->tls_cacert);
    } else if (SSL_CTX_set_default_verify_paths(tls->ctx) != 1) {
        return setup_failed(tls, err, errlen, "the system's CA store", "");
    }
    if (ep->tls_cert || ep->tls_key) {
        if (!ep->tls_cert || !ep->tls_key) {
            dlock__tls_free(tls);
            snprintf(err, errlen, "bad URL: cert= and key= go together (mutual TLS)");
            return DLOCK_EINVAL;
        }
        if (unreadable(tls, err, errlen, "cert", ep->tls_cert) ||
            unreadable(tls, err, errlen, "key", ep->tls_key))
            return DLOCK_EINVAL;
        if (SSL_CTX_use_certificate_chain_file(tls->ctx, ep->tls_cert) != 1)
            return setup_failed(tls, err, errlen, "cert", ep->tls_cert);
        if (SSL_CTX_use_PrivateKey_file(tls->ctx, ep->tls_key, SSL_FILETYPE_PEM) != 1)
            return setup_failed(tls, err, errlen, "key", ep->tls_key);
        if (SSL_CTX_check_private_key(tls->ctx) != 1)
            return setup_failed(tls, err, errlen, "key (it does not match cert)", ep->tls_key);
        tls->has_client_cert = true;
    }
    SSL_CTX_set_verify(tls->ctx, tls->verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    *out = tls;
    return DLOCK_OK;
}

void dlock__tls_free(dlock__tls *tls) {
    if (!tls)
        return;
    SSL_CTX_free(tls->ctx);
    dlock__free(tls->name);
    dlock__free(tls);
}

/* ---- the socket BIO ------------------------------------------------------------------------ */

/* What a session's BIO knows: its socket, and the first bytes the server sent, which tell
 * a TLS record (content type 20-23) from a plain-text answer (RESP: '+', '-', ...). */
typedef struct bio_state {
    int fd;
    size_t received;
    unsigned char first[8];
} bio_state;

static int bio_fd(BIO *b) {
    return ((bio_state *)BIO_get_data(b))->fd;
}

static bool try_again(int err) {
    return err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == EINPROGRESS;
}

static int bio_write(BIO *b, const char *buf, int len) {
    errno = 0;
    ssize_t n = send(bio_fd(b), buf, (size_t)len, MSG_NOSIGNAL);
    BIO_clear_retry_flags(b);
    if (n < 0 && try_again(errno))
        BIO_set_retry_write(b);
    return (int)n;
}

static int bio_read(BIO *b, char *buf, int len) {
    errno = 0;
    ssize_t n = recv(bio_fd(b), buf, (size_t)len, 0);
    bio_state *state = BIO_get_data(b);
    for (ssize_t i = 0; i < n && state->received + (size_t)i < sizeof(state->first); i++)
        state->first[state->received + (size_t)i] = (unsigned char)buf[i];
    if (n > 0)
        state->received += (size_t)n;
    BIO_clear_retry_flags(b);
    if (n < 0 && try_again(errno))
        BIO_set_retry_read(b);
    else if (n == 0)
        BIO_set_flags(b, BIO_FLAGS_IN_EOF); /* tells OpenSSL the server closed the TCP side */
    return (int)n;
}

static int bio_puts(BIO *b, const char *text) {
    return bio_write(b, text, (int)strlen(text));
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr) {
    (void)num;
    switch (cmd) {
    case BIO_CTRL_FLUSH: /* nothing is buffered here */
    case BIO_CTRL_DUP:
        return 1;
    case BIO_CTRL_EOF:
        return BIO_test_flags(b, BIO_FLAGS_IN_EOF) != 0;
    case BIO_C_GET_FD:
        if (ptr)
            *(int *)ptr = bio_fd(b);
        return bio_fd(b);
    default:
        return 0;
    }
}

static int bio_destroy(BIO *b) {
    dlock__free(BIO_get_data(b));
    BIO_set_data(b, NULL);
    return 1;
}

static BIO_METHOD *nosignal_method;

static void nosignal_method_make(void) {
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR,
                                 "dlock socket (MSG_NOSIGNAL)");
    if (m && BIO_meth_set_write(m, bio_write) == 1 && BIO_meth_set_read(m, bio_read) == 1 &&
        BIO_meth_set_puts(m, bio_puts) == 1 && BIO_meth_set_ctrl(m, bio_ctrl) == 1 &&
        BIO_meth_set_destroy(m, bio_destroy) == 1) {
        nosignal_method = m; /* one per process, for its lifetime */
        return;
    }
    BIO_meth_free(m);
}

/* A BIO on fd (not closed by the BIO) whose writes raise no SIGPIPE; NULL: out of memory. */
static BIO *nosignal_bio(int fd) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, nosignal_method_make);
    bio_state *state = dlock__calloc(1, sizeof(*state));
    BIO *b = nosignal_method && state ? BIO_new(nosignal_method) : NULL;
    if (!b) {
        dlock__free(state);
        return NULL;
    }
    state->fd = fd;
    BIO_set_data(b, state);
    BIO_set_init(b, 1);
    return b;
}

/* ---- sessions -------------------------------------------------------------------------------- */

static bool is_ip_address(const char *host) {
    unsigned char addr[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
}

void *dlock__tls_session(dlock__tls *tls, int fd, const char *host, char *err, size_t errlen) {
    SSL *ssl = SSL_new(tls->ctx);
    BIO *bio = ssl ? nosignal_bio(fd) : NULL;
    if (!bio) {
        SSL_free(ssl);
        openssl_reason(err, errlen, "TLS: out of memory");
        return NULL;
    }
    SSL_set_bio(ssl, bio, bio); /* the session owns it */
    const char *name = tls->name ? tls->name : host;
    bool ip = is_ip_address(name);
    bool ok = true;
    if (!ip && name[0])
        ok = SSL_set_tlsext_host_name(ssl, name) == 1; /* SNI carries names, never addresses */
    if (ok && tls->verify)
        ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1
                : SSL_set1_host(ssl, name) == 1;
    if (!ok) {
        SSL_free(ssl);
        char reason[120];
        snprintf(err, errlen, "TLS: cannot verify the name %s: %s", name,
                 openssl_reason(reason, sizeof(reason), "bad name"));
        return NULL;
    }
    SSL_set_connect_state(ssl);
    return ssl;
}

void dlock__tls_session_free(void *ssl) {
    SSL_free(ssl);
}

bool dlock__tls_has_client_cert(const dlock__tls *tls) {
    return tls->has_client_cert;
}

bool dlock__tls_peer_seconds_left(void *session, int64_t *out) {
    X509 *cert = SSL_get1_peer_certificate(session);
    if (!cert)
        return false;
    int days = 0, seconds = 0;
    bool ok = ASN1_TIME_diff(&days, &seconds, NULL, X509_get0_notAfter(cert)) == 1;
    X509_free(cert);
    if (ok)
        *out = (int64_t)days * 86400 + seconds;
    return ok;
}

size_t dlock__tls_heard(void *session) {
    const bio_state *state = BIO_get_data(SSL_get_rbio(session));
    return state ? state->received : 0;
}

/* Whether what the server sent first is RESP, not a TLS record: a plain-text port. */
static bool heard_plain_text(SSL *ssl) {
    const bio_state *state = BIO_get_data(SSL_get_rbio(ssl));
    return state && state->received > 0 && strchr("+-:$*_", state->first[0]) &&
           state->first[0] != '\0';
}

void dlock__tls_plain_text_text(const char *where, const char *answer, char *buf, size_t size) {
    snprintf(buf, size,
             "TLS handshake failed: the server at %s answered in plain text%s%s%s, not TLS: is "
             "it a TLS port? use redis:// for a plain-text port, or the server's tls-port",
             where, answer[0] ? " (\"" : "", answer, answer[0] ? "\")" : "");
}

void dlock__tls_failure(void *session, int ssl_error, int sys_errno, bool in_handshake,
                        bool client_cert, bool nothing_received, const char *where, char *buf,
                        size_t size) {
    SSL *ssl = session;
    char reason[200];
    if (in_handshake && heard_plain_text(ssl)) {
        const bio_state *state = BIO_get_data(SSL_get_rbio(ssl));
        char answer[sizeof(state->first) + 1];
        size_t n = 0;
        for (; n < sizeof(state->first) && n < state->received; n++) {
            unsigned char ch = state->first[n];
            if (ch == '\r' || ch == '\n')
                break;
            answer[n] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
        }
        answer[n] = '\0';
        ERR_clear_error();
        dlock__tls_plain_text_text(where, answer, buf, size);
        return;
    }
    long verify = in_handshake ? SSL_get_verify_result(ssl) : X509_V_OK;
    if (verify != X509_V_OK) {
        ERR_clear_error();
        snprintf(buf, size,
                 "TLS: the server's certificate failed verification: %s (check cacert= and the "
                 "name it is issued for; insecure=1 skips verification)",
                 X509_verify_cert_error_string(verify));
        return;
    }
    if (ssl_error == SSL_ERROR_ZERO_RETURN)
        snprintf(reason, sizeof(reason), "the server closed the TLS session");
    else if (ssl_error == SSL_ERROR_SYSCALL && ERR_peek_last_error() == 0)
        snprintf(reason, sizeof(reason), "%s",
                 sys_errno ? strerror(sys_errno) : "connection closed by the server");
    else
        openssl_reason(reason, sizeof(reason), "TLS error");
    ERR_clear_error();
    /* Under TLS 1.3 the client's handshake ends before the server has checked the client's
     * certificate: a server that wants one it did not get says so with an alert, or only
     * with a reset, on the first read. A server that sent nothing at all during the
     * handshake never got that far (a TLS server answers the hello before it asks for a
     * certificate): it is no TLS server, or not one on that port. */
    bool heard = dlock__tls_heard(ssl) > 0;
    const char *hint =
        !client_cert && ((in_handshake && heard) || (!in_handshake && nothing_received))
            ? "; the server may require a client certificate (cert=...&key=...)"
            : "";
    const char *hint_port =
        in_handshake && (!heard || strstr(reason, "wrong version number"))
            ? " (it did not answer the TLS handshake: is this a TLS port? use redis:// for a "
              "plain-text one)"
            : "";
    snprintf(buf, size, "TLS%s: %s%s%s", in_handshake ? " handshake failed" : "", reason, hint_port,
             hint);
}
