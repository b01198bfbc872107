/* SPDX-License-Identifier: MIT */
/* metrics.c — serving a client's stats to Prometheus: GET /metrics answered with
 * dlock_client_stats_prometheus()'s text, by a tiny HTTP server of the application's own
 * (plain sockets, one request at a time, loopback only).
 *
 * Reads the server from $DLOCK_URL (scripts/run-demo.sh starts a private redis-server and
 * sets it; ctest runs this program that way). Steps, each checked:
 *
 *   1. a client, and some work so that the numbers are not all 0: a lock held under the
 *      watchdog (renewed), another thread waiting for it (a subscription, a message and a
 *      wake when the holder releases)
 *   2. a listening socket on 127.0.0.1 (a free port; --port N picks one)
 *   3. without --serve: the program sends itself "GET /metrics", serves that one request,
 *      reads the answer back, checks it (200, Content-Type text/plain; version=0.0.4, a body
 *      in which every sample has its # HELP and # TYPE, counters end in _total) and prints
 *      the body; it exits 0 only if all of that held.
 *      With --serve: it answers requests one at a time until killed
 *      (curl http://127.0.0.1:PORT/metrics).
 *
 * Build: it is example_metrics in <build>/examples (cmake); run it with
 *   scripts/run-demo.sh build/examples/example_metrics [--serve] [--port N] */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dlock.h"

/* A short watchdog lease so that step 1 sees a renewal within a second. */
#define WATCHDOG_MS 1500
#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

static void sleep_ms(long ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static bool expect(int rc, int want, const char *what) {
    if (rc == want)
        return true;
    fprintf(stderr, "FAILED: %s: got %s, expected %s (%s)\n", what, dlock_err_name(rc),
            dlock_err_name(want), dlock_last_error());
    return false;
}

static bool check(bool ok, const char *what) {
    if (!ok)
        fprintf(stderr, "FAILED: %s\n", what);
    return ok;
}

/* ---- step 1: some work -------------------------------------------------------------------- */

static void *wait_for_the_lock(void *arg) {
    dlock_lock *l = arg;
    int rc = dlock_lock_acquire(l, DLOCK_WATCHDOG); /* this thread is another owner */
    if (rc == DLOCK_OK)
        rc = dlock_lock_release(l);
    return (void *)(intptr_t)rc;
}

static bool do_some_work(dlock_client *c) {
    dlock_lock *l = NULL;
    if (!expect(dlock_lock_new(c, "metrics-example", &l), DLOCK_OK, "dlock_lock_new"))
        return false;
    bool ok = expect(dlock_lock_acquire(l, DLOCK_WATCHDOG), DLOCK_OK, "acquire");
    pthread_t waiter;
    if (ok && check(pthread_create(&waiter, NULL, wait_for_the_lock, l) == 0, "pthread_create")) {
        sleep_ms(WATCHDOG_MS * 2 / 3); /* a renewal is due every WATCHDOG_MS / 3 */
        ok = expect(dlock_lock_release(l), DLOCK_OK, "release");
        void *waiter_rc = NULL;
        pthread_join(waiter, &waiter_rc);
        ok = expect((int)(intptr_t)waiter_rc, DLOCK_OK, "the waiting thread's acquire") && ok;
    }
    dlock_lock_free(l);
    return ok;
}

/* ---- the HTTP server: one request at a time --------------------------------------------- */

static bool send_all(int fd, const char *data, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n <= 0)
            return false;
        data += n;
        len -= (size_t)n;
    }
    return true;
}

static void respond(int fd, const char *status, const char *body, size_t body_len) {
    char head[256];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %s\r\nContent-Type: " CONTENT_TYPE
                     "\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                     status, body_len);
    if (send_all(fd, head, (size_t)n))
        send_all(fd, body, body_len);
}

/* The exposition in a buffer that grows when dlock says it needs more (DLOCK_ENOSPC gives
 * the size). The caller frees *text. */
static int render_metrics(dlock_client *c, char **text, size_t *len) {
    static const dlock_metric_label labels[] = {{"service", "checkout"}};
    size_t size = 8192; /* holds it with short labels (docs/monitoring.md) */
    for (;;) {
        char *buf = malloc(size);
        if (!buf)
            return DLOCK_ENOMEM;
        int rc = dlock_client_stats_prometheus(c, labels, 1, buf, size, len);
        if (rc == DLOCK_OK) {
            *text = buf;
            return DLOCK_OK;
        }
        free(buf);
        if (rc != DLOCK_ENOSPC)
            return rc;
        size = *len + 256; /* slack: a counter may have grown a digit meanwhile */
    }
}

/* Reads one request's head and answers it; the connection is closed after. */
static void serve_one(dlock_client *c, int listener) {
    int fd = accept(listener, NULL, NULL);
    if (fd < 0)
        return;
    char request[2048];
    size_t got = 0;
    while (got + 1 < sizeof(request)) {
        ssize_t n = recv(fd, request + got, sizeof(request) - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
        request[got] = '\0';
        if (strstr(request, "\r\n\r\n"))
            break;
    }
    request[got] = '\0';
    if (strncmp(request, "GET /metrics ", 13) != 0) {
        respond(fd, "404 Not Found", "only GET /metrics here\n", 23);
    } else {
        char *text = NULL;
        size_t len = 0;
        int rc = render_metrics(c, &text, &len);
        if (rc == DLOCK_OK)
            respond(fd, "200 OK", text, len);
        else
            respond(fd, "500 Internal Server Error", dlock_err_name(rc),
                    strlen(dlock_err_name(rc)));
        free(text);
    }
    close(fd);
}

static int listen_on_loopback(int port, int *bound_port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t addr_len = sizeof(addr);
    if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(fd, 16) != 0 ||
        getsockname(fd, (struct sockaddr *)&addr, &addr_len) != 0) {
        close(fd);
        return -1;
    }
    *bound_port = ntohs(addr.sin_port);
    return fd;
}

/* ---- step 3: ask ourselves, and check the answer ----------------------------------------- */

/* The family a sample of `name` (name_len bytes) belongs to among the typed ones: its own
 * name, or for a histogram's samples the name without _bucket, _sum or _count. -1: none. */
static int family_of(char typed[][64], char kinds[][16], size_t ntyped, const char *name,
                     size_t name_len) {
    static const char *const histogram_suffixes[] = {"", "_bucket", "_sum", "_count"};
    for (size_t i = 0; i < ntyped; i++) {
        size_t family_len = strlen(typed[i]);
        for (size_t k = 0; k < 4; k++) {
            if (k > 0 && strcmp(kinds[i], "histogram") != 0)
                break;
            const char *suffix = histogram_suffixes[k];
            if (family_len + strlen(suffix) == name_len &&
                strncmp(name, typed[i], family_len) == 0 &&
                strncmp(name + family_len, suffix, strlen(suffix)) == 0)
                return (int)i;
        }
    }
    return -1;
}

/* Every sample line's metric has had a # HELP and a # TYPE line before it, a counter's name
 * ends in _total, and every value is a number. (tests/integration/test_stats_prometheus.c
 * checks the format in full: escapes, labels, the histogram's buckets.) */
static bool body_is_well_formed(const char *body) {
    char typed[64][64], kinds[64][16];
    size_t ntyped = 0, samples = 0;
    char help[64] = "";
    for (const char *line = body; *line;) {
        const char *nl = strchr(line, '\n');
        if (!check(nl != NULL, "every line ends with a newline"))
            return false;
        char name[64] = "", kind[16] = "";
        if (sscanf(line, "# HELP %63s", name) == 1) {
            snprintf(help, sizeof(help), "%s", name);
        } else if (sscanf(line, "# TYPE %63s %15s", name, kind) == 2) {
            if (!check(strcmp(name, help) == 0 && ntyped < 64, "# TYPE after its # HELP") ||
                !check(strcmp(kind, "counter") != 0 ||
                           strstr(name, "_total") == name + strlen(name) - 6,
                       "a counter's name ends in _total"))
                return false;
            snprintf(typed[ntyped], sizeof(typed[0]), "%s", name);
            snprintf(kinds[ntyped++], sizeof(kinds[0]), "%s", kind);
        } else {
            int family = family_of(typed, kinds, ntyped, line, strcspn(line, "{ "));
            const char *value = memchr(line, ' ', (size_t)(nl - line));
            while (value && memchr(value + 1, ' ', (size_t)(nl - value - 1)))
                value = memchr(value + 1, ' ', (size_t)(nl - value - 1)); /* a label's space */
            char *end = NULL;
            if (value)
                strtod(value + 1, &end);
            if (!check(family >= 0, "a sample has its # HELP and # TYPE before it") ||
                !check(value && end == nl, "a sample's value is a number"))
                return false;
            samples++;
        }
        line = nl + 1;
    }
    return check(samples > 0, "the body has samples");
}

static bool fetch_metrics_from_ourselves(dlock_client *c, int listener, int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* connect completes in the listen backlog, and the request fits the socket's buffer:
     * one thread can ask, serve and then read the answer */
    const char *request = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    if (!check(fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0, "connect") ||
        !check(send_all(fd, request, strlen(request)), "send the request")) {
        if (fd >= 0)
            close(fd);
        return false;
    }
    serve_one(c, listener);
    static char response[65536];
    size_t got = 0;
    ssize_t n;
    while (got + 1 < sizeof(response) &&
           (n = recv(fd, response + got, sizeof(response) - 1 - got, 0)) > 0)
        got += (size_t)n;
    response[got] = '\0';
    close(fd);

    const char *body = strstr(response, "\r\n\r\n");
    if (!check(strncmp(response, "HTTP/1.1 200 OK\r\n", 17) == 0, "status 200") ||
        !check(strstr(response, "\r\nContent-Type: " CONTENT_TYPE "\r\n") != NULL,
               "Content-Type " CONTENT_TYPE) ||
        !check(body != NULL, "a body") || !body_is_well_formed(body + 4))
        return false;
    fputs(body + 4, stdout);
    return true;
}

int main(int argc, char **argv) {
    bool serve = false;
    int port = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--serve") == 0) {
            serve = true;
        } else if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
            port = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--serve] [--port N]\n", argv[0]);
            return 2;
        }
    }

    dlock_options opts;
    dlock_options_init(&opts);
    opts.watchdog_ms = WATCHDOG_MS;
    dlock_client *c = NULL;
    if (!expect(dlock_client_new(&opts, &c), DLOCK_OK, "dlock_client_new"))
        return 1;
    bool ok = do_some_work(c);

    int bound_port = 0;
    int listener = ok ? listen_on_loopback(port, &bound_port) : -1;
    ok = ok && check(listener >= 0, "listen on 127.0.0.1");
    if (ok && serve) {
        fprintf(stderr, "serving http://127.0.0.1:%d/metrics (Ctrl-C stops)\n", bound_port);
        for (;;)
            serve_one(c, listener);
    }
    if (ok)
        ok = fetch_metrics_from_ourselves(c, listener, bound_port);
    if (listener >= 0)
        close(listener);
    dlock_client_free(c);
    if (!ok)
        return 1;
    fprintf(stderr, "metrics example: ok\n");
    return 0;
}
