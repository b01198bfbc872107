/* SPDX-License-Identifier: MIT */
/* reply_injector.c - see reply_injector.h. One thread polls the listening socket and every
 * connection pair; sockets stay blocking for writes (the client and the server read what
 * they are sent), reads happen only when poll says so. */
#include "reply_injector.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_CONNS 32
#define MAX_MARKS 4096

enum rule_kind { RULE_NONE, RULE_AFTER, RULE_REPLACE };

typedef struct buffer {
    char *data;
    size_t len, cap;
} buffer;

typedef struct pconn {
    int client, server;
    buffer up, down;                /* bytes not yet a whole request / reply */
    unsigned char marks[MAX_MARKS]; /* per request in flight: 0 or the rule that matched */
    size_t mark_head, mark_count;
    char *rule_bytes; /* the matched rule's bytes, one rule per connection at a time */
    size_t rule_len;
} pconn;

struct reply_injector {
    pthread_mutex_t mu;
    pthread_t thread;
    int listen_fd, wake_pipe[2];
    char path[108];
    char url[64];
    pconn conns[MAX_CONNS];
    int nconns;
    /* the armed rule */
    enum rule_kind kind;
    bool every; /* the rule stays armed after it fired (reply_injector_replace_every) */
    char pattern[64];
    char *bytes;
    size_t len;
    int fired, accepted;
    bool stopping;
};

/* ---- RESP framing --------------------------------------------------------------------------- */

/* The length of the one RESP value at the start of buf (0: incomplete). Inline requests (no
 * '*') run to their CRLF. */
static size_t resp_length(const char *buf, size_t len) {
    const char *crlf = memmem(buf, len, "\r\n", 2);
    if (!crlf)
        return 0;
    size_t line = (size_t)(crlf - buf) + 2;
    switch (buf[0]) {
    case '$': {
        long n = strtol(buf + 1, NULL, 10);
        if (n < 0)
            return line;
        return len >= line + (size_t)n + 2 ? line + (size_t)n + 2 : 0;
    }
    case '*': {
        long n = strtol(buf + 1, NULL, 10);
        size_t at = line;
        for (long i = 0; i < n; i++) {
            size_t one = resp_length(buf + at, len - at);
            if (!one)
                return 0;
            at += one;
        }
        return at;
    }
    default: /* + - : and inline commands */
        return line;
    }
}

static bool is_push(const char *reply, size_t len) {
    static const char *const pushes[] = {"*3\r\n$7\r\nmessage\r\n", "*4\r\n$8\r\npmessage\r\n",
                                         "*3\r\n$8\r\nsmessage\r\n"};
    for (size_t i = 0; i < sizeof(pushes) / sizeof(pushes[0]); i++)
        if (len >= strlen(pushes[i]) && memcmp(reply, pushes[i], strlen(pushes[i])) == 0)
            return true;
    return false;
}

static void append(buffer *b, const char *data, size_t len) {
    if (b->len + len > b->cap) {
        b->cap = (b->len + len) * 2;
        b->data = realloc(b->data, b->cap);
        if (!b->data)
            abort();
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
}

static void consume(buffer *b, size_t n) {
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

static void send_all(int fd, const char *buf, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            return; /* the peer is gone: the next read notices */
        }
        buf += n;
        len -= (size_t)n;
    }
}

static bool contains_nocase(const char *hay, size_t len, const char *needle) {
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (strncasecmp(hay + i, needle, n) == 0)
            return true;
    return false;
}

/* ---- forwarding ----------------------------------------------------------------------------- */

static void on_request(reply_injector *p, pconn *c, const char *req, size_t len) {
    unsigned char mark = 0;
    pthread_mutex_lock(&p->mu);
    if (p->kind != RULE_NONE && !c->rule_bytes && contains_nocase(req, len, p->pattern)) {
        mark = (unsigned char)p->kind;
        c->rule_len = p->len;
        if (p->every) { /* the rule stays: this request gets a copy of its bytes */
            c->rule_bytes = malloc(p->len ? p->len : 1);
            if (!c->rule_bytes)
                abort();
            memcpy(c->rule_bytes, p->bytes, p->len);
        } else {
            c->rule_bytes = p->bytes;
            p->bytes = NULL;
            p->kind = RULE_NONE;
        }
    }
    pthread_mutex_unlock(&p->mu);
    if (c->mark_count < MAX_MARKS)
        c->marks[(c->mark_head + c->mark_count++) % MAX_MARKS] = mark;
    send_all(c->server, req, len);
}

static void on_reply(reply_injector *p, pconn *c, const char *reply, size_t len) {
    unsigned char mark = 0;
    if (!is_push(reply, len) && c->mark_count > 0) {
        mark = c->marks[c->mark_head];
        c->mark_head = (c->mark_head + 1) % MAX_MARKS;
        c->mark_count--;
    }
    if (mark != RULE_REPLACE)
        send_all(c->client, reply, len);
    if (mark != 0) {
        send_all(c->client, c->rule_bytes, c->rule_len);
        free(c->rule_bytes);
        c->rule_bytes = NULL;
        pthread_mutex_lock(&p->mu);
        p->fired++;
        pthread_mutex_unlock(&p->mu);
    }
}

/* Reads what fd has into b and hands each whole message to fn. false: closed. */
static bool pump(reply_injector *p, pconn *c, int fd, buffer *b,
                 void (*fn)(reply_injector *, pconn *, const char *, size_t)) {
    char buf[16384];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0)
        return n < 0 && errno == EINTR;
    append(b, buf, (size_t)n);
    size_t one;
    while (b->len > 0 && (one = resp_length(b->data, b->len)) > 0) {
        fn(p, c, b->data, one);
        consume(b, one);
    }
    return true;
}

static void conn_close(pconn *c) {
    close(c->client);
    close(c->server);
    free(c->up.data);
    free(c->down.data);
    free(c->rule_bytes);
    memset(c, 0, sizeof(*c));
}

static int connect_target(const reply_injector *p) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", p->path);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

static void accept_one(reply_injector *p) {
    int client = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (client < 0)
        return;
    int server = connect_target(p);
    if (server < 0 || p->nconns == MAX_CONNS) {
        close(client);
        if (server >= 0)
            close(server);
        return;
    }
    pconn *c = &p->conns[p->nconns++];
    memset(c, 0, sizeof(*c));
    c->client = client;
    c->server = server;
    pthread_mutex_lock(&p->mu);
    p->accepted++;
    pthread_mutex_unlock(&p->mu);
}

static void *injector_main(void *arg) {
    reply_injector *p = arg;
    for (;;) {
        struct pollfd fds[2 + 2 * MAX_CONNS];
        int nfds = 0;
        fds[nfds++] = (struct pollfd){.fd = p->wake_pipe[0], .events = POLLIN};
        fds[nfds++] = (struct pollfd){.fd = p->listen_fd, .events = POLLIN};
        for (int i = 0; i < p->nconns; i++) {
            fds[nfds++] = (struct pollfd){.fd = p->conns[i].client, .events = POLLIN};
            fds[nfds++] = (struct pollfd){.fd = p->conns[i].server, .events = POLLIN};
        }
        if (poll(fds, (nfds_t)nfds, -1) < 0 && errno != EINTR)
            break;
        if (fds[0].revents) {
            pthread_mutex_lock(&p->mu);
            bool stopping = p->stopping;
            pthread_mutex_unlock(&p->mu);
            if (stopping)
                break;
            char drain[16];
            if (read(p->wake_pipe[0], drain, sizeof(drain)) < 0)
                break;
        }
        int conns = p->nconns; /* accept_one may add one: it is polled next turn */
        for (int i = conns - 1; i >= 0; i--) {
            pconn *c = &p->conns[i];
            bool alive = true;
            if (fds[2 + 2 * i].revents)
                alive = pump(p, c, c->client, &c->up, on_request);
            if (alive && fds[3 + 2 * i].revents)
                alive = pump(p, c, c->server, &c->down, on_reply);
            if (!alive) {
                conn_close(c);
                p->conns[i] = p->conns[--p->nconns]; /* the last, already served */
            }
        }
        if (fds[1].revents)
            accept_one(p);
    }
    for (int i = 0; i < p->nconns; i++)
        conn_close(&p->conns[i]);
    p->nconns = 0;
    return NULL;
}

/* ---- the API ----------------------------------------------------------------------------------
 */

int reply_injector_start(const char *unix_path, reply_injector **out) {
    reply_injector *p = calloc(1, sizeof(*p));
    if (!p)
        return -1;
    snprintf(p->path, sizeof(p->path), "%s", unix_path);
    pthread_mutex_init(&p->mu, NULL);
    p->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t slen = sizeof(sin);
    if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
        listen(p->listen_fd, 16) != 0 ||
        getsockname(p->listen_fd, (struct sockaddr *)&sin, &slen) != 0 ||
        pipe2(p->wake_pipe, O_CLOEXEC) != 0) {
        fprintf(stderr, "reply_injector: cannot listen: %s\n", strerror(errno));
        if (p->listen_fd >= 0)
            close(p->listen_fd);
        free(p);
        return -1;
    }
    snprintf(p->url, sizeof(p->url), "redis://127.0.0.1:%d", ntohs(sin.sin_port));
    if (pthread_create(&p->thread, NULL, injector_main, p) != 0) {
        close(p->listen_fd);
        close(p->wake_pipe[0]);
        close(p->wake_pipe[1]);
        free(p);
        return -1;
    }
    *out = p;
    return 0;
}

void reply_injector_stop(reply_injector *p) {
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_mutex_unlock(&p->mu);
    if (write(p->wake_pipe[1], "x", 1) < 0)
        perror("reply_injector: wake");
    pthread_join(p->thread, NULL);
    close(p->listen_fd);
    close(p->wake_pipe[0]);
    close(p->wake_pipe[1]);
    free(p->bytes);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

const char *reply_injector_url(const reply_injector *p) {
    return p->url;
}

static void arm(reply_injector *p, enum rule_kind kind, bool every, const char *pattern,
                const char *bytes, size_t len) {
    char *copy = malloc(len ? len : 1);
    if (!copy)
        abort();
    memcpy(copy, bytes, len);
    pthread_mutex_lock(&p->mu);
    free(p->bytes);
    p->bytes = copy;
    p->len = len;
    p->kind = kind;
    p->every = every;
    snprintf(p->pattern, sizeof(p->pattern), "%s", pattern);
    pthread_mutex_unlock(&p->mu);
}

void reply_injector_after(reply_injector *p, const char *pattern, const char *bytes, size_t len) {
    arm(p, RULE_AFTER, false, pattern, bytes, len);
}

void reply_injector_replace(reply_injector *p, const char *pattern, const char *bytes, size_t len) {
    arm(p, RULE_REPLACE, false, pattern, bytes, len);
}

void reply_injector_replace_every(reply_injector *p, const char *pattern, const char *bytes,
                                  size_t len) {
    arm(p, RULE_REPLACE, true, pattern, bytes, len);
}

int reply_injector_fired(reply_injector *p) {
    pthread_mutex_lock(&p->mu);
    int n = p->fired;
    pthread_mutex_unlock(&p->mu);
    return n;
}

int reply_injector_accepted(reply_injector *p) {
    pthread_mutex_lock(&p->mu);
    int n = p->accepted;
    pthread_mutex_unlock(&p->mu);
    return n;
}
