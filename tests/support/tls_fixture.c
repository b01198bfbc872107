/* SPDX-License-Identifier: MIT */
/* tls_fixture.c - certificates made with the `openssl` tool, and a redis_fixture on TLS.
 *
 * Data owned here: tls_certs (its temp directory and the paths in it) and tls_fixture (its
 * certificates, the redis_fixture and the URLs). Processes and directories are tracked by
 * redis_fixture and topology_util, which kill and remove them at exit if a test fails.
 *
 * One `openssl req -x509` per certificate (OpenSSL 3 signs with -CA/-CAkey there), with the
 * extensions from a config file of our own, so that the system's openssl.cnf changes nothing.
 */
#include "tls_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology_util.h"

#define TLS_PORT_ATTEMPTS 5
#define CERT_DAYS "2"

struct tls_certs {
    char *dir;
    char *config;
    char *log;
    char *ca, *ca_key;
    char *server_cert, *server_key;
    char *client_cert, *client_key;
    char *wrong_ca, *wrong_ca_key;
    char *wrong_client_cert, *wrong_client_key;
    const char *server_args[9];
};

struct tls_fixture {
    tls_certs *certs;
    redis_fixture *server;
    int port;
    char *url;
    char *mtls_url;
};

static const char openssl_config[] = "[req]\n"
                                     "distinguished_name = dn\n"
                                     "prompt = no\n"
                                     "[dn]\n"
                                     "CN = unused\n"
                                     "[ca_ext]\n"
                                     "basicConstraints = critical,CA:TRUE\n"
                                     "keyUsage = critical,keyCertSign,cRLSign\n"
                                     "subjectKeyIdentifier = hash\n"
                                     "[server_ext]\n"
                                     "basicConstraints = critical,CA:FALSE\n"
                                     "keyUsage = critical,digitalSignature,keyEncipherment\n"
                                     "extendedKeyUsage = serverAuth,clientAuth\n"
                                     "subjectAltName = IP:127.0.0.1,DNS:localhost\n"
                                     "subjectKeyIdentifier = hash\n"
                                     "authorityKeyIdentifier = keyid\n"
                                     "[client_ext]\n"
                                     "basicConstraints = critical,CA:FALSE\n"
                                     "keyUsage = critical,digitalSignature\n"
                                     "extendedKeyUsage = clientAuth\n"
                                     "subjectKeyIdentifier = hash\n"
                                     "authorityKeyIdentifier = keyid\n";

/* One key pair and certificate: self-signed when ca/ca_key are NULL, else signed by them. */
static int make_cert(const tls_certs *c, const char *subject, const char *extensions,
                     const char *cert, const char *key, const char *ca, const char *ca_key) {
    char *subj = topo_asprintf("/CN=%s", subject);
    char *argv[] = {"openssl",
                    "req",
                    "-config",
                    c->config,
                    "-x509",
                    "-newkey",
                    "ec",
                    "-pkeyopt",
                    "ec_paramgen_curve:prime256v1",
                    "-noenc",
                    "-days",
                    CERT_DAYS,
                    "-subj",
                    subj,
                    "-extensions",
                    (char *)extensions,
                    "-keyout",
                    (char *)key,
                    "-out",
                    (char *)cert,
                    ca ? "-CA" : NULL,
                    (char *)ca,
                    "-CAkey",
                    (char *)ca_key,
                    NULL};
    int rc = topo_run(argv, c->log, NULL);
    free(subj);
    if (rc != 0) {
        fprintf(stderr, "tls_fixture: openssl could not make %s (exit %d)\n", cert, rc);
        topo_print_log_tail(c->log, 20);
        return -1;
    }
    return 0;
}

int tls_certs_make(tls_certs **out) {
    tls_certs *c = calloc(1, sizeof *c);
    if (c == NULL)
        abort();
    c->dir = topo_tempdir("dlock-tls");
    if (c->dir == NULL) {
        free(c);
        return -1;
    }
    c->config = topo_asprintf("%s/openssl.cnf", c->dir);
    c->log = topo_asprintf("%s/openssl.log", c->dir);
    c->ca = topo_asprintf("%s/ca.crt", c->dir);
    c->ca_key = topo_asprintf("%s/ca.key", c->dir);
    c->server_cert = topo_asprintf("%s/server.crt", c->dir);
    c->server_key = topo_asprintf("%s/server.key", c->dir);
    c->client_cert = topo_asprintf("%s/client.crt", c->dir);
    c->client_key = topo_asprintf("%s/client.key", c->dir);
    c->wrong_ca = topo_asprintf("%s/wrong_ca.crt", c->dir);
    c->wrong_ca_key = topo_asprintf("%s/wrong_ca.key", c->dir);
    c->wrong_client_cert = topo_asprintf("%s/wrong_client.crt", c->dir);
    c->wrong_client_key = topo_asprintf("%s/wrong_client.key", c->dir);
    int rc = topo_write_file(c->config, openssl_config);
    if (rc == 0)
        rc = make_cert(c, "dlock test CA", "ca_ext", c->ca, c->ca_key, NULL, NULL);
    if (rc == 0)
        rc = make_cert(c, "localhost", "server_ext", c->server_cert, c->server_key, c->ca,
                       c->ca_key);
    if (rc == 0)
        rc = make_cert(c, "dlock test client", "client_ext", c->client_cert, c->client_key, c->ca,
                       c->ca_key);
    if (rc == 0)
        rc = make_cert(c, "dlock unrelated CA", "ca_ext", c->wrong_ca, c->wrong_ca_key, NULL, NULL);
    if (rc == 0)
        rc = make_cert(c, "dlock stranger", "client_ext", c->wrong_client_cert, c->wrong_client_key,
                       c->wrong_ca, c->wrong_ca_key);
    if (rc != 0) {
        tls_certs_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

void tls_certs_free(tls_certs *c) {
    if (c == NULL)
        return;
    topo_tempdir_remove(c->dir);
    char *paths[] = {c->config,
                     c->log,
                     c->ca,
                     c->ca_key,
                     c->server_cert,
                     c->server_key,
                     c->client_cert,
                     c->client_key,
                     c->wrong_ca,
                     c->wrong_ca_key,
                     c->wrong_client_cert,
                     c->wrong_client_key};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        free(paths[i]);
    free(c);
}

const char *tls_certs_dir(const tls_certs *c) {
    return c ? c->dir : NULL;
}
const char *tls_certs_ca(const tls_certs *c) {
    return c ? c->ca : NULL;
}
const char *tls_certs_server_cert(const tls_certs *c) {
    return c ? c->server_cert : NULL;
}
const char *tls_certs_server_key(const tls_certs *c) {
    return c ? c->server_key : NULL;
}
const char *tls_certs_client_cert(const tls_certs *c) {
    return c ? c->client_cert : NULL;
}
const char *tls_certs_client_key(const tls_certs *c) {
    return c ? c->client_key : NULL;
}
const char *tls_certs_wrong_ca(const tls_certs *c) {
    return c ? c->wrong_ca : NULL;
}
const char *tls_certs_wrong_client_cert(const tls_certs *c) {
    return c ? c->wrong_client_cert : NULL;
}
const char *tls_certs_wrong_client_key(const tls_certs *c) {
    return c ? c->wrong_client_key : NULL;
}

const char *const *tls_certs_server_args(tls_certs *c, const char *auth_clients) {
    const char *words[] = {"--tls-cert-file",    c->server_cert,       "--tls-key-file",
                           c->server_key,        "--tls-ca-cert-file", c->ca,
                           "--tls-auth-clients", auth_clients,         NULL};
    memcpy(c->server_args, words, sizeof words);
    return c->server_args;
}

/* ---- the server ---------------------------------------------------------------------------- */

static const char *auth_clients_word(tls_fixture_client_certs mode) {
    switch (mode) {
    case TLS_FIXTURE_CLIENT_CERT_REQUIRED:
        return "yes";
    case TLS_FIXTURE_CLIENT_CERT_OPTIONAL:
        return "optional";
    case TLS_FIXTURE_CLIENT_CERT_NONE:
        break;
    }
    return "no";
}

int tls_certs_start_server(tls_certs *c, const char *auth_clients, const redis_fixture_opts *base,
                           redis_fixture **out, int *tls_port) {
    static const redis_fixture_opts defaults = {0};
    if (base == NULL)
        base = &defaults;
    size_t n_extra = 0;
    while (base->extra_args != NULL && base->extra_args[n_extra] != NULL)
        n_extra++;
    const char **args = calloc(16 + n_extra, sizeof *args);
    if (args == NULL)
        abort();
    const char *const *tls_args = tls_certs_server_args(c, auth_clients);
    char port_buf[16];
    int rc = -1;
    for (int attempt = 1; attempt <= TLS_PORT_ATTEMPTS && rc != 0; attempt++) {
        int port = topo_free_port();
        if (port < 0)
            break;
        snprintf(port_buf, sizeof port_buf, "%d", port);
        size_t i = 0;
        args[i++] = "--bind";
        args[i++] = "127.0.0.1";
        args[i++] = "--tls-port";
        args[i++] = port_buf;
        for (size_t k = 0; tls_args[k] != NULL; k++)
            args[i++] = tls_args[k];
        for (size_t k = 0; k < n_extra; k++)
            args[i++] = base->extra_args[k];
        args[i] = NULL;
        redis_fixture_opts ro = *base;
        ro.tcp = false;
        ro.extra_args = args;
        rc = redis_fixture_start(&ro, out);
        if (rc == 0)
            *tls_port = port;
        else if (attempt < TLS_PORT_ATTEMPTS)
            fprintf(stderr, "tls_fixture: no server on TLS port %d, trying another port\n", port);
    }
    free(args);
    return rc;
}

int tls_fixture_start(const tls_fixture_opts *o, tls_fixture **out) {
    static const tls_fixture_opts defaults = {0};
    if (o == NULL)
        o = &defaults;
    tls_fixture *f = calloc(1, sizeof *f);
    if (f == NULL)
        abort();
    redis_fixture_opts base = {.requirepass = o->requirepass, .extra_args = o->extra_args};
    if (tls_certs_make(&f->certs) != 0 ||
        tls_certs_start_server(f->certs, auth_clients_word(o->client_certs), &base, &f->server,
                               &f->port) != 0) {
        fprintf(stderr, "tls_fixture: could not start a TLS server\n");
        tls_certs_free(f->certs);
        free(f);
        return -1;
    }
    char *auth = NULL;
    if (o->requirepass != NULL && *o->requirepass != '\0') {
        char *pw = topo_url_encode(o->requirepass);
        auth = topo_asprintf(":%s@", pw);
        free(pw);
    }
    f->url =
        topo_asprintf("rediss://%s127.0.0.1:%d?cacert=%s", auth ? auth : "", f->port, f->certs->ca);
    f->mtls_url =
        topo_asprintf("%s&cert=%s&key=%s", f->url, f->certs->client_cert, f->certs->client_key);
    free(auth);
    *out = f;
    return 0;
}

void tls_fixture_stop(tls_fixture *f) {
    if (f == NULL)
        return;
    redis_fixture_stop(f->server);
    tls_certs_free(f->certs);
    free(f->url);
    free(f->mtls_url);
    free(f);
}

redis_fixture *tls_fixture_server(tls_fixture *f) {
    return f ? f->server : NULL;
}

tls_certs *tls_fixture_certs(tls_fixture *f) {
    return f ? f->certs : NULL;
}

int tls_fixture_port(const tls_fixture *f) {
    return f ? f->port : 0;
}

const char *tls_fixture_url(const tls_fixture *f) {
    return f ? f->url : NULL;
}

const char *tls_fixture_mtls_url(const tls_fixture *f) {
    return f ? f->mtls_url : NULL;
}
