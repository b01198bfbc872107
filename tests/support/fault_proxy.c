/* SPDX-License-Identifier: MIT */
/* fault_proxy.c - the loopback fault-injecting proxy of fault_proxy.h.
 *
 * Data owned here:
 * - `struct fault_proxy`: the listening socket, a wake-up pipe, the proxy thread, the list
 *   of connections, the faults the tests asked for and the counters. One mutex guards all of
 *   it; the proxy thread holds it except while it sleeps in poll(), so a setter that waits
 *   for `applied_gen` to reach its own generation returns only once the thread runs with
 *   the new setting.
 * - `struct pconn`: one accepted client socket and its own socket to the target, the bytes
 *   on their way to the server (one buffer), the bytes on their way to the client (chunks
 *   stamped with the time they may leave: the delay), and a RESP reader per direction that
 *   counts whole requests and replies, so that "lose the reply of request n" cuts exactly
 *   there.
 *
 * The loop: poll the wake pipe, the listener and both sockets of every connection (reading
 * only while the buffer in that direction is small: back-pressure), with a timeout at the
 * earliest held chunk; apply the settings; accept; move bytes; close what ended.
 */
#include "fault_proxy.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define READ_CHUNK 65536
#define UP_HIGH_WATER (1u << 20)   /* stop reading a client while this much waits */
#define DOWN_HIGH_WATER (4u << 20) /* stop reading a server while this much waits */
#define RESP_MAX_DEPTH 16

/* ---- a RESP2 message reader: finds where messages end, keeps none of their bytes ------- */

typedef struct resp_reader {
    int depth;                    /* open arrays */
    int64_t left[RESP_MAX_DEPTH]; /* elements still to come in each open array */
    int64_t bulk_left;            /* > 0: bytes (with the CRLF) of a bulk string to skip */
    char line[32];                /* head of the current header line */
    size_t line_len;
} resp_reader;

/* One element ended: true if that ends the whole message. */
static bool element_done(resp_reader *r) {
    while (r->depth > 0) {
        if (--r->left[r->depth - 1] > 0)
            return false;
        r->depth--;
    }
    return true;
}

/* Consumes buf up to and including the end of one message, or all of it. Returns the bytes
 * consumed; *done says a message ended at that point. */
static size_t resp_feed(resp_reader *r, const char *buf, size_t len, bool *done) {
    *done = false;
    size_t i = 0;
    while (i < len) {
        if (r->bulk_left > 0) {
            size_t take = len - i < (size_t)r->bulk_left ? len - i : (size_t)r->bulk_left;
            r->bulk_left -= (int64_t)take;
            i += take;
            if (r->bulk_left == 0 && element_done(r)) {
                *done = true;
                return i;
            }
            continue;
        }
        char ch = buf[i++];
        if (r->line_len < sizeof(r->line) - 1)
            r->line[r->line_len] = ch;
        r->line_len++;
        if (ch != '\n')
            continue;
        size_t kept = r->line_len < sizeof(r->line) - 1 ? r->line_len : sizeof(r->line) - 1;
        r->line[kept] = '\0';
        r->line_len = 0;
        char type = r->line[0];
        long long v = (type == '*' || type == '$') ? strtoll(r->line + 1, NULL, 10) : 0;
        bool complete;
        if (type == '*' && v > 0 && r->depth < RESP_MAX_DEPTH) {
            r->left[r->depth++] = v;
            complete = false;
        } else if (type == '$' && v >= 0) {
            r->bulk_left = v + 2;
            complete = false;
        } else {
            /* a null or empty array or bulk, a simple string, error or integer, an inline
             * command line */
            complete = element_done(r);
        }
        if (complete) {
            *done = true;
            return i;
        }
    }
    return i;
}

/* ---- connections ------------------------------------------------------------------------ */

typedef struct chunk {
    struct chunk *next;
    int64_t due_ms;
    size_t len, off;
    char data[];
} chunk;

typedef struct pconn {
    struct pconn *next;
    int cfd, sfd;
    char *up; /* client -> server bytes not yet written */
    size_t up_len, up_cap;
    chunk *down_head, *down_tail; /* server -> client, in order, each with its time */
    size_t down_bytes;
    resp_reader req, rep;
    uint64_t requests; /* complete requests read from the client */
    uint64_t replies;  /* complete replies read from the server */
    uint64_t doom_at;  /* drop_after_request: the request whose reply is lost; 0 none */
    bool lost_bytes;   /* bytes were discarded by the blackhole */
    bool dead;
} pconn;

struct fault_proxy {
    char url[64];
    int port;
    int listen_fd;
    int wake[2];
    pthread_t thread;
    /* target */
    bool target_unix;
    char target_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char target_host[256];
    int target_port;

    pthread_mutex_t mu;
    pthread_cond_t applied;
    uint64_t want_gen, applied_gen;
    bool stop;
    /* settings asked for */
    bool blackhole;
    int64_t delay_ms;
    int arm_n;
    uint64_t drop_all_asked, drop_all_done;
    int drop_all_count;
    /* owned by the proxy thread (under mu) */
    bool blackhole_applied;
    pconn *conns;
    fault_proxy_stats stats;
};

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_nonblocking(int fd) {
    int fl = fcntl(fd, F_GETFL, 0);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void set_nodelay(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* fails on unix: fine */
}

static int connect_target(const fault_proxy *p) {
    int fd = -1;
    if (p->target_unix) {
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -1;
        struct sockaddr_un sa;
        memset(&sa, 0, sizeof(sa));
        sa.sun_family = AF_UNIX;
        memcpy(sa.sun_path, p->target_path, strlen(p->target_path) + 1);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
            close(fd);
            return -1;
        }
    } else {
        char port[16];
        snprintf(port, sizeof(port), "%d", p->target_port);
        struct addrinfo hints, *res = NULL;
        memset(&hints, 0, sizeof(hints));
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        if (getaddrinfo(p->target_host, port, &hints, &res) != 0)
            return -1;
        for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
            fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
            if (fd < 0)
                continue;
            if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
                break;
            close(fd);
            fd = -1;
        }
        freeaddrinfo(res);
        if (fd < 0)
            return -1;
        set_nodelay(fd);
    }
    set_nonblocking(fd);
    return fd;
}

static void conn_discard_buffers(fault_proxy *p, pconn *c) {
    p->stats.bytes_discarded += c->up_len;
    c->up_len = 0;
    while (c->down_head) {
        chunk *k = c->down_head;
        c->down_head = k->next;
        p->stats.bytes_discarded += k->len - k->off;
        free(k);
    }
    c->down_tail = NULL;
    c->down_bytes = 0;
}

/* Marks c for closing at the end of this loop turn (the poll array still names it). */
static void conn_kill(fault_proxy *p, pconn *c, bool by_fault) {
    if (c->dead)
        return;
    c->dead = true;
    if (by_fault)
        p->stats.closed_by_fault++;
    conn_discard_buffers(p, c);
}

static void conn_free(fault_proxy *p, pconn *c) {
    conn_discard_buffers(p, c);
    if (c->cfd >= 0)
        close(c->cfd);
    if (c->sfd >= 0)
        close(c->sfd);
    free(c->up);
    free(c);
    p->stats.open--;
}

static bool up_append(pconn *c, const char *buf, size_t len) {
    if (c->up_len + len > c->up_cap) {
        size_t cap = c->up_cap ? c->up_cap : 4096;
        while (cap < c->up_len + len)
            cap *= 2;
        char *nb = realloc(c->up, cap);
        if (!nb)
            return false;
        c->up = nb;
        c->up_cap = cap;
    }
    memcpy(c->up + c->up_len, buf, len);
    c->up_len += len;
    return true;
}

static bool down_append(pconn *c, const char *buf, size_t len, int64_t due_ms) {
    chunk *k = malloc(sizeof(*k) + len);
    if (!k)
        return false;
    k->next = NULL;
    k->due_ms = due_ms;
    k->len = len;
    k->off = 0;
    memcpy(k->data, buf, len);
    if (c->down_tail)
        c->down_tail->next = k;
    else
        c->down_head = k;
    c->down_tail = k;
    c->down_bytes += len;
    return true;
}

/* send() without SIGPIPE: 1 all sent or would block (n sent in *sent), -1 peer gone. */
static int send_some(int fd, const char *buf, size_t len, size_t *sent) {
    *sent = 0;
    while (*sent < len) {
        ssize_t n = send(fd, buf + *sent, len - *sent, MSG_NOSIGNAL);
        if (n > 0) {
            *sent += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 1;
        return -1;
    }
    return 1;
}

static void flush_up(fault_proxy *p, pconn *c) {
    if (c->dead || c->up_len == 0)
        return;
    size_t sent;
    int rc = send_some(c->sfd, c->up, c->up_len, &sent);
    p->stats.bytes_up += sent;
    memmove(c->up, c->up + sent, c->up_len - sent);
    c->up_len -= sent;
    if (rc < 0)
        conn_kill(p, c, false);
}

/* Sends the held chunks that are due (all of them when `all`). */
static void flush_down(fault_proxy *p, pconn *c, int64_t now, bool all) {
    while (!c->dead && c->down_head && (all || c->down_head->due_ms <= now)) {
        chunk *k = c->down_head;
        size_t sent;
        int rc = send_some(c->cfd, k->data + k->off, k->len - k->off, &sent);
        p->stats.bytes_down += sent;
        k->off += sent;
        c->down_bytes -= sent;
        if (rc < 0) {
            conn_kill(p, c, false);
            return;
        }
        if (k->off < k->len)
            return; /* would block: POLLOUT */
        c->down_head = k->next;
        if (!c->down_head)
            c->down_tail = NULL;
        free(k);
    }
}

/* Bytes from the client. */
static void on_client_bytes(fault_proxy *p, pconn *c, const char *buf, size_t len) {
    if (p->blackhole_applied) {
        p->stats.bytes_discarded += len;
        c->lost_bytes = true;
        return;
    }
    if (p->arm_n > 0 && c->doom_at == 0) {
        /* the first connection to send after arming is the one whose reply is lost */
        c->doom_at = c->requests + (uint64_t)p->arm_n;
        p->arm_n = 0;
    }
    size_t pos = 0;
    while (pos < len) {
        if (c->doom_at && c->requests >= c->doom_at) {
            p->stats.bytes_discarded += len - pos; /* requests after the doomed one */
            return;
        }
        bool done;
        size_t n = resp_feed(&c->req, buf + pos, len - pos, &done);
        if (!up_append(c, buf + pos, n)) {
            conn_kill(p, c, false);
            return;
        }
        pos += n;
        if (done) {
            c->requests++;
            p->stats.requests_up++;
        }
    }
}

/* Bytes from the server. */
static void on_server_bytes(fault_proxy *p, pconn *c, const char *buf, size_t len, int64_t now) {
    if (p->blackhole_applied) {
        p->stats.bytes_discarded += len;
        c->lost_bytes = true;
        return;
    }
    int64_t due = now + p->delay_ms;
    size_t pos = 0;
    while (pos < len) {
        if (c->doom_at && c->replies + 1 >= c->doom_at) {
            /* the first byte of the doomed reply: the server ran the request; the client
             * never hears of it */
            p->stats.bytes_discarded += len - pos;
            p->stats.replies_lost++;
            conn_kill(p, c, true);
            return;
        }
        bool done;
        size_t n = resp_feed(&c->rep, buf + pos, len - pos, &done);
        if (!down_append(c, buf + pos, n, due)) {
            conn_kill(p, c, false);
            return;
        }
        pos += n;
        if (done) {
            c->replies++;
            p->stats.replies_down++;
        }
    }
}

/* Reads what fd has (one read): >0 bytes, 0 nothing now, -1 closed or failed. */
static ssize_t read_some(int fd, char *buf, size_t cap) {
    for (;;) {
        ssize_t n = recv(fd, buf, cap, 0);
        if (n > 0)
            return n;
        if (n == 0)
            return -1;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        return -1;
    }
}

static void accept_all(fault_proxy *p) {
    for (;;) {
        int cfd = accept4(p->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
            if (errno == EINTR)
                continue;
            return; /* EAGAIN, or out of descriptors: try again next turn */
        }
        p->stats.accepted++;
        set_nodelay(cfd);
        int sfd = connect_target(p);
        if (sfd < 0) {
            close(cfd); /* the client sees the server as down */
            continue;
        }
        pconn *c = calloc(1, sizeof(*c));
        if (!c) {
            close(cfd);
            close(sfd);
            continue;
        }
        c->cfd = cfd;
        c->sfd = sfd;
        c->next = p->conns;
        p->conns = c;
        p->stats.open++;
    }
}

/* Applies the settings the tests asked for since the last turn. */
static void apply_settings(fault_proxy *p) {
    if (p->blackhole != p->blackhole_applied) {
        for (pconn *c = p->conns; c; c = c->next) {
            if (p->blackhole) {
                /* nothing more leaves, not even what was read before */
                if (c->up_len || c->down_head)
                    c->lost_bytes = true;
                conn_discard_buffers(p, c);
            } else if (c->lost_bytes) {
                conn_kill(p, c, true);
            }
        }
        p->blackhole_applied = p->blackhole;
    }
    if (p->drop_all_done < p->drop_all_asked) {
        int n = 0;
        for (pconn *c = p->conns; c; c = c->next)
            if (!c->dead) {
                conn_kill(p, c, true);
                n++;
            }
        p->drop_all_count = n;
        p->drop_all_done = p->drop_all_asked;
    }
    if (p->applied_gen != p->want_gen) {
        p->applied_gen = p->want_gen;
        pthread_cond_broadcast(&p->applied);
    }
}

static void reap_dead(fault_proxy *p) {
    pconn **link = &p->conns;
    while (*link) {
        pconn *c = *link;
        if (c->dead) {
            *link = c->next;
            conn_free(p, c);
        } else {
            link = &c->next;
        }
    }
}

static void *proxy_main(void *arg) {
    fault_proxy *p = arg;
    struct pollfd *fds = NULL;
    pconn **owners = NULL;
    size_t cap = 0;
    char *buf = malloc(READ_CHUNK);
    pthread_mutex_lock(&p->mu);
    while (!p->stop && buf) {
        apply_settings(p);
        reap_dead(p);
        /* the poll set: wake pipe, listener, then two per connection */
        size_t need = 2;
        for (pconn *c = p->conns; c; c = c->next)
            need += 2;
        if (need > cap) {
            size_t ncap = need * 2;
            struct pollfd *nf = realloc(fds, ncap * sizeof(*fds));
            if (nf)
                fds = nf;
            pconn **no = realloc(owners, ncap * sizeof(*owners));
            if (no)
                owners = no;
            if (!nf || !no)
                break;
            cap = ncap;
        }
        size_t n = 0;
        fds[n] = (struct pollfd){.fd = p->wake[0], .events = POLLIN};
        owners[n++] = NULL;
        fds[n] = (struct pollfd){.fd = p->listen_fd, .events = POLLIN};
        owners[n++] = NULL;
        int64_t now = now_ms();
        int64_t next_due = -1;
        for (pconn *c = p->conns; c; c = c->next) {
            short cev = c->up_len < UP_HIGH_WATER ? POLLIN : 0;
            if (c->down_head && c->down_head->due_ms <= now)
                cev |= POLLOUT;
            if (c->down_head && c->down_head->due_ms > now &&
                (next_due < 0 || c->down_head->due_ms < next_due))
                next_due = c->down_head->due_ms;
            short sev = c->down_bytes < DOWN_HIGH_WATER ? POLLIN : 0;
            if (c->up_len)
                sev |= POLLOUT;
            fds[n] = (struct pollfd){.fd = c->cfd, .events = cev};
            owners[n++] = c;
            fds[n] = (struct pollfd){.fd = c->sfd, .events = sev};
            owners[n++] = c;
        }
        int timeout = next_due < 0 ? -1 : (int)(next_due - now + 1);
        pthread_mutex_unlock(&p->mu);
        int rc = poll(fds, n, timeout);
        pthread_mutex_lock(&p->mu);
        if (rc < 0 && errno != EINTR)
            break;
        if (rc <= 0)
            goto flush;
        if (fds[0].revents) {
            char drain[64];
            while (read(p->wake[0], drain, sizeof(drain)) > 0) {
            }
        }
        if (p->stop)
            break;
        apply_settings(p); /* before any byte moves: a setter's change holds from here */
        if (fds[1].revents & POLLIN)
            accept_all(p);
        now = now_ms();
        for (size_t i = 2; i < n; i++) {
            pconn *c = owners[i];
            short re = fds[i].revents;
            if (!re || c->dead)
                continue;
            bool is_client = fds[i].fd == c->cfd;
            if (re & POLLOUT) {
                if (is_client)
                    flush_down(p, c, now, false);
                else
                    flush_up(p, c);
            }
            if (c->dead || !(re & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t got = read_some(is_client ? c->cfd : c->sfd, buf, READ_CHUNK);
            if (got > 0) {
                if (is_client)
                    on_client_bytes(p, c, buf, (size_t)got);
                else
                    on_server_bytes(p, c, buf, (size_t)got, now);
            } else if (got < 0) {
                /* one side is gone: hand the other what is already on its way, then close */
                if (is_client)
                    flush_up(p, c);
                else
                    flush_down(p, c, now, true);
                conn_kill(p, c, false);
            }
        }
    flush:
        now = now_ms();
        for (pconn *c = p->conns; c; c = c->next) {
            flush_up(p, c);
            flush_down(p, c, now, false);
        }
    }
    /* stop (or a failure of the loop itself): everything closes */
    for (pconn *c = p->conns; c; c = c->next)
        conn_kill(p, c, false);
    reap_dead(p);
    p->stop = true; /* setters waiting for this thread give up */
    pthread_cond_broadcast(&p->applied);
    pthread_mutex_unlock(&p->mu);
    free(fds);
    free(owners);
    free(buf);
    return NULL;
}

/* ---- the API ---------------------------------------------------------------------------- */

static int parse_target(fault_proxy *p, const char *target) {
    const char *path = NULL;
    if (strncmp(target, "unix://", 7) == 0)
        path = target + 7;
    else if (target[0] == '/')
        path = target;
    if (path) {
        size_t len = strcspn(path, "?");
        if (len == 0 || len >= sizeof(p->target_path))
            return -1;
        memcpy(p->target_path, path, len);
        p->target_path[len] = '\0';
        p->target_unix = true;
        return 0;
    }
    const char *hp = target;
    if (strncmp(hp, "redis://", 8) == 0) {
        hp += 8;
        const char *at = strchr(hp, '@');
        if (at)
            hp = at + 1;
    }
    size_t hlen = strcspn(hp, "/?");
    char hostport[300];
    if (hlen == 0 || hlen >= sizeof(hostport))
        return -1;
    memcpy(hostport, hp, hlen);
    hostport[hlen] = '\0';
    char *colon = strrchr(hostport, ':');
    if (!colon)
        return -1;
    *colon = '\0';
    char *host = hostport;
    size_t l = strlen(host);
    if (l >= 2 && host[0] == '[' && host[l - 1] == ']') {
        host[l - 1] = '\0';
        host++;
    }
    int port = atoi(colon + 1);
    if (port <= 0 || port > 65535 || strlen(host) >= sizeof(p->target_host))
        return -1;
    memcpy(p->target_host, host, strlen(host) + 1);
    p->target_port = port;
    p->target_unix = false;
    return 0;
}

int fault_proxy_start(const char *target, fault_proxy **out) {
    if (!target || !out) {
        fprintf(stderr, "fault_proxy_start: NULL argument\n");
        return -1;
    }
    fault_proxy *p = calloc(1, sizeof(*p));
    if (!p) {
        fprintf(stderr, "fault_proxy_start: out of memory\n");
        return -1;
    }
    p->listen_fd = -1;
    p->wake[0] = p->wake[1] = -1;
    if (parse_target(p, target) != 0) {
        fprintf(stderr, "fault_proxy_start: cannot read target '%s'\n", target);
        free(p);
        return -1;
    }
    p->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0; /* the kernel picks a free port */
    socklen_t sl = sizeof(sa);
    if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(p->listen_fd, 128) != 0 ||
        getsockname(p->listen_fd, (struct sockaddr *)&sa, &sl) != 0 ||
        pipe2(p->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
        fprintf(stderr, "fault_proxy_start: cannot listen: %s\n", strerror(errno));
        if (p->listen_fd >= 0)
            close(p->listen_fd);
        free(p);
        return -1;
    }
    p->port = ntohs(sa.sin_port);
    snprintf(p->url, sizeof(p->url), "redis://127.0.0.1:%d", p->port);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->applied, NULL);
    if (pthread_create(&p->thread, NULL, proxy_main, p) != 0) {
        fprintf(stderr, "fault_proxy_start: cannot start its thread\n");
        close(p->listen_fd);
        close(p->wake[0]);
        close(p->wake[1]);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->applied);
        free(p);
        return -1;
    }
    *out = p;
    return 0;
}

static void wake(fault_proxy *p) {
    char one = 1;
    ssize_t n = write(p->wake[1], &one, 1); /* a full pipe is awake already */
    (void)n;
}

/* Called with p->mu held: waits until the proxy thread ran with every change so far. */
static void wait_applied_locked(fault_proxy *p) {
    uint64_t gen = ++p->want_gen;
    wake(p);
    while (p->applied_gen < gen && !p->stop)
        pthread_cond_wait(&p->applied, &p->mu);
}

void fault_proxy_stop(fault_proxy *p) {
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_mutex_unlock(&p->mu);
    wake(p);
    pthread_join(p->thread, NULL);
    close(p->listen_fd);
    close(p->wake[0]);
    close(p->wake[1]);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->applied);
    free(p);
}

const char *fault_proxy_url(const fault_proxy *p) {
    return p->url;
}

int fault_proxy_port(const fault_proxy *p) {
    return p->port;
}

void fault_proxy_pass(fault_proxy *p) {
    pthread_mutex_lock(&p->mu);
    p->blackhole = false;
    p->delay_ms = 0;
    p->arm_n = 0;
    wait_applied_locked(p);
    pthread_mutex_unlock(&p->mu);
}

int fault_proxy_drop_all(fault_proxy *p) {
    pthread_mutex_lock(&p->mu);
    uint64_t asked = ++p->drop_all_asked;
    wait_applied_locked(p);
    int n = p->drop_all_done >= asked ? p->drop_all_count : 0;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void fault_proxy_drop_after_request(fault_proxy *p, int n) {
    pthread_mutex_lock(&p->mu);
    p->arm_n = n > 0 ? n : 0;
    wait_applied_locked(p);
    pthread_mutex_unlock(&p->mu);
}

void fault_proxy_delay_replies(fault_proxy *p, int64_t ms) {
    pthread_mutex_lock(&p->mu);
    p->delay_ms = ms > 0 ? ms : 0;
    wait_applied_locked(p);
    pthread_mutex_unlock(&p->mu);
}

void fault_proxy_blackhole(fault_proxy *p, bool on) {
    pthread_mutex_lock(&p->mu);
    p->blackhole = on;
    wait_applied_locked(p);
    pthread_mutex_unlock(&p->mu);
}

fault_proxy_stats fault_proxy_stats_get(fault_proxy *p) {
    pthread_mutex_lock(&p->mu);
    fault_proxy_stats s = p->stats;
    pthread_mutex_unlock(&p->mu);
    return s;
}
