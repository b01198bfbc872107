/* SPDX-License-Identifier: MIT */
/* tls_fixture.h - certificates made at test time, and a private redis-server on TLS.
 *
 * tls_certs: a temp directory /tmp/dlock-tls-XXXXXX where the `openssl` tool makes (EC P-256,
 * valid 2 days):
 *   ca.crt/ca.key                 "dlock test CA"
 *   server.crt/server.key         signed by the CA, subjectAltName IP:127.0.0.1, DNS:localhost,
 *                                 serverAuth and clientAuth (Redis also presents it when it is
 *                                 the client: replication, sentinels)
 *   client.crt/client.key         signed by the CA, clientAuth: for mutual TLS
 *   wrong_ca.crt                  an unrelated CA: verifying the server against it must fail
 *   wrong_client.crt/.key         signed by the unrelated CA: a client certificate the server
 *                                 must refuse
 * Takes ~50 ms. The directory is removed by tls_certs_free() or at exit.
 *
 * tls_fixture: a redis_fixture started with --port 0, --bind 127.0.0.1 and --tls-port on a
 * free loopback port, the certificates above and --tls-auth-clients as asked. The unix socket
 * stays plain, so redis_fixture_cmd() and friends on tls_fixture_server() work without TLS;
 * pause, kill and restart work as for any redis_fixture (restart keeps the TLS port). Stopped
 * by pid like every redis_fixture, also when the test fails.
 *
 * Threads: as redis_fixture.h; the path and URL accessors are constant after start.
 */
#ifndef DLOCK_TEST_TLS_FIXTURE_H
#define DLOCK_TEST_TLS_FIXTURE_H

#include "redis_fixture.h"

typedef struct tls_certs tls_certs;

/* Makes the certificates described above in a new temp directory. 0 and the set in *out, or
 * -1 with the openssl output on stderr (leaving *out untouched). */
int tls_certs_make(tls_certs **out);
/* Removes the directory and frees. NULL is a no-op. */
void tls_certs_free(tls_certs *c);

/* Absolute paths, owned by `c`. */
const char *tls_certs_dir(const tls_certs *c);
const char *tls_certs_ca(const tls_certs *c);
const char *tls_certs_server_cert(const tls_certs *c);
const char *tls_certs_server_key(const tls_certs *c);
const char *tls_certs_client_cert(const tls_certs *c);
const char *tls_certs_client_key(const tls_certs *c);
const char *tls_certs_wrong_ca(const tls_certs *c);
const char *tls_certs_wrong_client_cert(const tls_certs *c);
const char *tls_certs_wrong_client_key(const tls_certs *c);

/* The redis-server options that make a server speak TLS with these certificates:
 * --tls-cert-file, --tls-key-file, --tls-ca-cert-file, --tls-auth-clients `auth_clients`
 * ("no", "yes", "optional"). A NULL-terminated array of 8 words owned by `c` (valid until
 * the next call or free). */
const char *const *tls_certs_server_args(tls_certs *c, const char *auth_clients);

/* Starts a redis_fixture that listens on TLS only (besides its plain unix socket):
 * base->extra_args (NULL `base`: defaults) plus --port 0, --bind 127.0.0.1, --tls-port on a
 * free loopback port (another one if that was taken meanwhile) and
 * tls_certs_server_args(c, auth_clients). base->tcp is ignored. For fixtures that build
 * topologies on TLS (replication, sentinels). 0 with the server in *out and its TLS port in
 * *tls_port, or -1 with a message on stderr. */
int tls_certs_start_server(tls_certs *c, const char *auth_clients, const redis_fixture_opts *base,
                           redis_fixture **out, int *tls_port);

typedef enum tls_fixture_client_certs {
    TLS_FIXTURE_CLIENT_CERT_NONE = 0, /* --tls-auth-clients no (the default) */
    TLS_FIXTURE_CLIENT_CERT_REQUIRED, /* yes: a client without a CA-signed certificate fails */
    TLS_FIXTURE_CLIENT_CERT_OPTIONAL, /* optional: one is verified if given */
} tls_fixture_client_certs;

typedef struct tls_fixture_opts {
    tls_fixture_client_certs client_certs;
    /* --requirepass; NULL or "": none. In the URLs as ":PW@", percent-encoded. */
    const char *requirepass;
    /* more redis-server words, as redis_fixture_opts.extra_args. NULL: none. */
    const char *const *extra_args;
} tls_fixture_opts;

typedef struct tls_fixture tls_fixture;

/* Makes certificates and starts the server (`o` NULL: defaults); a TLS port someone took in
 * between is retried on another. Returns 0 and the fixture in *out, or -1 with a message on
 * stderr, leaving *out untouched. */
int tls_fixture_start(const tls_fixture_opts *o, tls_fixture **out);
/* Stops the server by pid (see redis_fixture_stop), removes the certificates, frees.
 * NULL is a no-op. */
void tls_fixture_stop(tls_fixture *f);

/* The server, for admin commands over its plain unix socket, pause/resume/kill/restart, pid.
 * Owned by `f`: never stop it yourself. */
redis_fixture *tls_fixture_server(tls_fixture *f);
/* The certificates the server uses. Owned by `f`. */
tls_certs *tls_fixture_certs(tls_fixture *f);
/* The TLS port on 127.0.0.1. */
int tls_fixture_port(const tls_fixture *f);

/* "rediss://127.0.0.1:PORT?cacert=DIR/ca.crt" ("rediss://:PW@127.0.0.1:..." with
 * requirepass). Owned by `f`. */
const char *tls_fixture_url(const tls_fixture *f);
/* The same plus "&cert=DIR/client.crt&key=DIR/client.key": mutual TLS. Owned by `f`. */
const char *tls_fixture_mtls_url(const tls_fixture *f);

#endif /* DLOCK_TEST_TLS_FIXTURE_H */
