/* SPDX-License-Identifier: MIT */
/* sentinel.c — the master of a Sentinel URL: found through the sentinels, checked, and
 * followed through failovers.
 *
 * The client's command and subscriber links ask here, at the start of every attempt,
 * where to connect (their resolve hook). A resolution
 *   1. asks every sentinel of the URL at once `SENTINEL get-master-addr-by-name NAME`, each
 *      on a short-lived connection of its own, all within one connect_timeout_ms: the first
 *      usable answer is checked (among answers that arrived together, the last sentinel
 *      that named the master first). A sentinel that cannot be reached, is silent, refuses
 *      or answers with no address (a NUL byte, a port that is not 1..65535 in digits) costs
 *      nothing but its reason, and N silent sentinels cost one connect_timeout_ms, not N;
 *   2. checks the named node with `ROLE`, on the data nodes' credentials: only a node that
 *      says master is answered. A node that is unreachable, a replica (the sentinels are
 *      mid-failover) or refuses is passed over for the next usable answer, if another
 *      sentinel named another node; else the attempt fails: the link backs off and asks
 *      again.
 * "No such master" from every sentinel that answered is DLOCK_EINVAL naming the master;
 * credentials a node refused are DLOCK_EAUTH (DLOCK_ENOPERM for the ACL), as on a redis://
 * URL; no usable answer at all is DLOCK_ECONN with each sentinel's reason. An answer at
 * most FRESH_MS old is given again without asking (the two links connect together).
 *
 * Failovers: every sentinel of the URL is watched, each on a subscriber connection of its
 * own (SUBSCRIBE +switch-master): a sentinel that is partitioned, paused or slow to hear of
 * a failover then costs nothing, as the first one that reports it is acted on. On
 * "NAME old-ip old-port new-ip new-port" both of the client's links are dropped at once —
 * from then on the old master receives nothing, lock writes included — and their
 * reconnects are answered with the new master (checked with ROLE first). The old address
 * is remembered as demoted for DEMOTED_MS: a sentinel that has not heard of the failover
 * yet and still names it is passed over. One sentinel's word is not trusted blindly: until
 * the new master passes its ROLE check or a second sentinel reports the same switch, the
 * switch is tentative, and a new master that fails its check (unreachable, not a master)
 * withdraws the demotion — the sentinels are asked as usual, so that one sentinel's bogus
 * report cannot shut the client out of the real master. A second report of a withdrawn
 * switch follows it after all. Reports of the switch last acted on are duplicates
 * otherwise, as are those for another master of these sentinels. After a watch connection
 * reconnects (messages may have been missed) a resolution runs, and a link found on
 * another node than the master is dropped. A link whose reconnect goes to another master
 * than before is "moved": the client then has every held lease confirmed on the new master
 * at once.
 *
 * Resources are bounded by the URL, which names at most DLOCK__SENTINELS_MAX sentinels: one
 * watch connection per sentinel, during a resolution one short-lived probe connection per
 * sentinel and one to the candidate, fixed-size state allocated with the resolver. Every
 * watch connection, like every link, reconnects only after the link's capped, jittered
 * backoff (never in a tight loop, also when a sentinel accepts and drops at once or refuses
 * the SUBSCRIBE), and a resolution runs only when none is in progress.
 *
 * A survey (dlock__sentinel_survey, for `dlock doctor`) asks every sentinel once on probes of
 * its own and reports each answer; it never moves the client's links.
 *
 * Everything runs on the client's loop thread. A probe link is never closed or restarted
 * inside its own callbacks: its outcome is noted and acted on from a zero-delay timer. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology/sentinel.h"

#define MAX_SLOTS 2   /* the command and the subscriber link */
#define DEMOTED_MAX 4 /* old masters remembered */
/* How long an old master is passed over: the sentinels agree within seconds, and Redis
 * 7.0 turns the old master into a replica 8-18 s after a forced failover; after that it
 * may rightly be master again (a failover back we did not hear of). */
#define DEMOTED_MS 60000
#define FRESH_MS 1000 /* how long a checked answer is given again without asking */

typedef struct addr {
    char host[256];
    int port; /* 0: none */
} addr;

typedef struct demotion {
    addr old_master;
    int64_t until_ms;
} demotion;

/* A link that takes its endpoint from here. */
typedef struct slot {
    dlock__sentinel *s;
    dlock__link *link;
    bool waiting;       /* its attempt waits for the resolution in progress */
    dlock__endpoint ep; /* the URL's data settings, host and port of `at`; host not owned */
    addr at;            /* the master it was last sent to (port 0: never) */
    bool moved;         /* its last connection went to another master than the one before */
} slot;

/* The watch connection to one sentinel. */
typedef struct watcher {
    dlock__sentinel *s;
    dlock__link link;
    size_t index; /* its sentinel in the URL */
    bool was_up;  /* it was subscribed before: a reconnect may have missed messages */
} watcher;

enum step { STEP_IDLE, STEP_ASKING, STEP_CHECKING };

enum outcome {
    OUT_NONE,    /* no answer yet */
    OUT_ADDRESS, /* a sentinel named the master (named) */
    OUT_UNKNOWN, /* a sentinel knows no master of that name */
    OUT_FAILED,  /* unreachable, refused, an error or a reply of the wrong shape */
    OUT_MASTER,  /* ROLE: master */
    OUT_REPLICA, /* ROLE: anything else */
};

/* One question on a short-lived connection: a sentinel where the master is, or the
 * candidate whether it is the master. */
typedef struct probe {
    dlock__sentinel *s;
    dlock__link link;
    const dlock__endpoint *target;
    bool asks_sentinel; /* SENTINEL get-master-addr-by-name; else ROLE */
    bool open;          /* link started, not closed yet */
    enum outcome outcome;
    int err;    /* OUT_FAILED: DLOCK_EAUTH / DLOCK_ENOPERM for refused credentials, else ECONN */
    addr named; /* OUT_ADDRESS */
    char text[DLOCK__ADDRESS_SIZE + 240]; /* "<role> <where>: " and what happened */
} probe;

/* The last +switch-master acted on, and how far it is believed. */
enum switch_trust {
    SWITCH_TENTATIVE, /* one sentinel's word: its new master not checked yet */
    SWITCH_TRUSTED,   /* the new master said master, or a second sentinel reported it */
    SWITCH_DOUBTED,   /* its new master failed the check: its demotion was withdrawn */
};

struct dlock__sentinel {
    dlock_client *client;
    dlock__sentinel_url url;
    slot slots[MAX_SLOTS];
    size_t nslots;

    /* the resolution in progress */
    enum step step;
    probe *askers;            /* one per sentinel of the URL, in its order */
    bool asked;               /* the askers were started in this resolution */
    probe checker;            /* to the candidate */
    dlock__endpoint check_ep; /* the URL's data settings at the candidate; host not owned */
    addr candidate;
    bool candidate_from_switch; /* the new master of the last +switch-master */
    /* candidates that failed their check: one per sentinel's answer and the switch's */
    addr tried[DLOCK__SENTINELS_MAX + 1];
    size_t ntried;
    int check_err;                                 /* the last failed check's error */
    char check_why[2 * DLOCK__ADDRESS_SIZE + 256]; /* ...and its words */
    size_t preferred;         /* the last sentinel that named the master: first among equals */
    dlock__timer step_timer;  /* zero-delay: act on outcomes outside the probes' callbacks */
    dlock__timer ask_timer;   /* the askers' one bound */
    dlock__timer check_timer; /* the checker's bound */

    /* the last checked master */
    addr master;
    int64_t checked_ms;
    uint64_t checked_switches;

    /* following failovers */
    watcher *watchers; /* one per sentinel of the URL, in its order */
    bool closed;
    uint64_t switches;       /* +switch-master messages for our master acted on */
    addr last_old, last_new; /* the last one acted on: its duplicates are ignored */
    enum switch_trust trust;
    size_t reported_by; /* the sentinel that reported it first */
    addr hint;          /* the new master of the last one, until a resolution takes it */
    demotion demoted[DEMOTED_MAX];
    size_t next_demoted;

    /* a survey (dlock doctor): every sentinel asked once, apart from any resolution */
    probe *surveyors; /* one per sentinel while a survey runs, else NULL */
    dlock__timer survey_timer;
    dlock__sentinel_survey_fn survey_done;
    void *survey_arg;
};

/* ---- addresses -------------------------------------------------------------------------- */

static bool same_addr(const addr *a, const addr *b) {
    return a->port == b->port && a->port != 0 && strcmp(a->host, b->host) == 0;
}

/* An address as a sentinel gives it: a host of printable characters (no NUL, space or
 * control byte: "127.0.0.1\0junk" is not 127.0.0.1) and a port of 1 to 5 digits from 1 to
 * 65535 (not " +6379", which strtol would take). */
static bool set_addr(addr *a, const char *host, size_t host_len, const char *port,
                     size_t port_len) {
    if (host_len == 0 || host_len >= sizeof(a->host) || port_len == 0 || port_len > 5)
        return false;
    for (size_t i = 0; i < host_len; i++)
        if ((unsigned char)host[i] <= ' ' || (unsigned char)host[i] >= 0x7f)
            return false;
    long p = 0;
    for (size_t i = 0; i < port_len; i++) {
        if (port[i] < '0' || port[i] > '9')
            return false;
        p = p * 10 + (port[i] - '0');
    }
    if (p < 1 || p > 65535)
        return false;
    memcpy(a->host, host, host_len);
    a->host[host_len] = '\0';
    a->port = (int)p;
    return true;
}

static bool is_demoted(const dlock__sentinel *s, const addr *a) {
    int64_t now = dlock__now_ms();
    for (size_t i = 0; i < DEMOTED_MAX; i++)
        if (same_addr(&s->demoted[i].old_master, a) && now < s->demoted[i].until_ms)
            return true;
    return false;
}

static void set_demoted(dlock__sentinel *s, const addr *a, bool demoted) {
    for (size_t i = 0; i < DEMOTED_MAX; i++)
        if (same_addr(&s->demoted[i].old_master, a))
            s->demoted[i].old_master.port = 0;
    if (demoted) {
        s->demoted[s->next_demoted] = (demotion){*a, dlock__now_ms() + DEMOTED_MS};
        s->next_demoted = (s->next_demoted + 1) % DEMOTED_MAX;
    }
}

/* The client's data-node settings (credentials, db, TLS: the URL's) at a; ep borrows every
 * string. */
static void point_at(dlock__sentinel *s, dlock__endpoint *ep, addr *a) {
    *ep = DLOCK__NET(s->client)->endpoint;
    ep->host = a->host;
    ep->port = a->port;
}

static const char *describe(const addr *a, char *buf, size_t size) {
    snprintf(buf, size, strchr(a->host, ':') ? "[%s]:%d" : "%s:%d", a->host, a->port);
    return buf;
}

/* The server refused the credentials (or the ACL a command): no retry changes that. */
static bool permanent(int err) {
    return err == DLOCK_EAUTH || err == DLOCK_ENOPERM;
}
/* ---- answering the links ---------------------------------------------------------------- */

static void answer_slot(dlock__sentinel *s, slot *sl) {
    sl->waiting = false;
    if (sl->at.port != 0 && !same_addr(&sl->at, &s->master))
        sl->moved = true;
    sl->at = s->master;
    point_at(s, &sl->ep, &sl->at);
    dlock__link_connect_to(sl->link, &sl->ep);
}

static void answer_all(dlock__sentinel *s, int err, const char *why) {
    for (size_t i = 0; i < s->nslots; i++) {
        slot *sl = &s->slots[i];
        if (!sl->waiting)
            continue;
        if (err == DLOCK_OK) {
            answer_slot(s, sl);
        } else {
            sl->waiting = false;
            dlock__link_resolve_failed(sl->link, err, why);
        }
    }
}

static bool link_connected(const dlock__link *link) {
    return link->state == LINK_CONNECTING || link->state == LINK_HANDSHAKE ||
           link->state == LINK_READY;
}

/* Drops every link of the client that is on (or connecting to) another node than the
 * master: its reconnect asks here again. */
static void drop_links_elsewhere(dlock__sentinel *s, const char *why) {
    for (size_t i = 0; i < s->nslots; i++) {
        slot *sl = &s->slots[i];
        if (!sl->waiting && link_connected(sl->link) && !same_addr(&sl->at, &s->master))
            dlock__link_fail(sl->link, DLOCK_ECONN, why);
    }
}

/* ---- probes: one question on a short-lived connection ----------------------------------- */

/* Notes p's outcome (err: its error for OUT_FAILED; text: printf-style, after the probe's
 * role and address) and acts on it from the step timer. */
static void note_outcome(probe *p, enum outcome o, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void note_outcome(probe *p, enum outcome o, int err, const char *fmt, ...) {
    if (p->outcome != OUT_NONE)
        return; /* the first outcome is the probe's; a drop after an answer changes nothing */
    p->outcome = o;
    p->err = err;
    char where[DLOCK__ADDRESS_SIZE];
    dlock__endpoint_describe(p->target, where, sizeof(where));
    int used = snprintf(p->text, sizeof(p->text), "%s %s: ", p->link.role, where);
    va_list ap;
    va_start(ap, fmt);
    if (used > 0 && (size_t)used < sizeof(p->text))
        vsnprintf(p->text + used, sizeof(p->text) - (size_t)used, fmt, ap);
    va_end(ap);
    dlock__timer_start(&DLOCK__NET(p->s->client)->sched, &p->s->step_timer, 0);
}

static void probe_resolve(dlock__link *link) {
    probe *p = link->resolve_arg;
    dlock__link_connect_to(link, p->target);
}

static void on_master_addr(probe *p, const dlock__reply *reply) {
    int type = dlock__reply_type(reply);
    if (type == DLOCK__REPLY_NIL ||
        (type == DLOCK__REPLY_ARRAY && dlock__reply_count(reply) == 0)) {
        note_outcome(p, OUT_UNKNOWN, DLOCK_OK, "knows no such master");
        return;
    }
    size_t host_len = 0, port_len = 0;
    const char *host = dlock__reply_str(dlock__reply_at(reply, 0), &host_len);
    const char *port = dlock__reply_str(dlock__reply_at(reply, 1), &port_len);
    if (type != DLOCK__REPLY_ARRAY || dlock__reply_count(reply) != 2 || !host || !port ||
        !set_addr(&p->named, host, host_len, port, port_len)) {
        char what[96];
        dlock__reply_describe(reply, what, sizeof(what));
        note_outcome(p, OUT_FAILED, DLOCK_ECONN,
                     "unexpected answer to SENTINEL get-master-addr-by-name (not a host and a "
                     "port from 1 to 65535): %s",
                     what);
        return;
    }
    note_outcome(p, OUT_ADDRESS, DLOCK_OK, "named the master");
}

static void on_role(probe *p, const dlock__reply *reply) {
    size_t len = 0;
    const char *role = dlock__reply_str(dlock__reply_at(reply, 0), &len);
    if (dlock__reply_type(reply) == DLOCK__REPLY_ARRAY && role && len == 6 &&
        memcmp(role, "master", 6) == 0) {
        note_outcome(p, OUT_MASTER, DLOCK_OK, "is the master");
        return;
    }
    note_outcome(p, OUT_REPLICA, DLOCK_ECONN, "ROLE says %.*s", (int)len, role ? role : "?");
}

static void probe_reply(dlock__link *link, const dlock__reply *reply, void *arg) {
    (void)link;
    probe *p = arg;
    if (dlock__reply_type(reply) == DLOCK__REPLY_ERROR) {
        size_t len = 0;
        const char *text = dlock__reply_str(reply, &len);
        /* an ACL that denies ROLE (or the sentinel's command) is the user's to fix */
        bool noperm = len >= 6 && memcmp(text, "NOPERM", 6) == 0;
        note_outcome(p, OUT_FAILED, noperm ? DLOCK_ENOPERM : DLOCK_ECONN, "refused: %.*s", (int)len,
                     text);
    } else if (p->asks_sentinel) {
        on_master_addr(p, reply);
    } else {
        on_role(p, reply);
    }
}

static void probe_ready(dlock__link *link) {
    probe *p = link->resolve_arg;
    const char *ask[] = {"SENTINEL", "get-master-addr-by-name", p->s->url.master_name};
    const char *role[] = {"ROLE"};
    const char **argv = p->asks_sentinel ? ask : role;
    int argc = p->asks_sentinel ? 3 : 1;
    size_t lens[3];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    dlock__link_send(link, argc, argv, lens, probe_reply, p); /* a failure drops the link */
}

static void probe_down(dlock__link *link, int err) {
    probe *p = link->resolve_arg;
    /* last_error_text reads "<role> connection to <where>: <why>": keep the why */
    const char *why = strstr(link->last_error_text, ": ");
    note_outcome(p, OUT_FAILED, err, "%s", why ? why + 2 : link->last_error_text);
}

static void probe_start(dlock__sentinel *s, probe *p, bool asks_sentinel,
                        const dlock__endpoint *target) {
    p->s = s;
    p->target = target;
    p->asks_sentinel = asks_sentinel;
    p->outcome = OUT_NONE;
    p->err = DLOCK_OK;
    p->open = true;
    dlock__link_init(&p->link, s->client, asks_sentinel ? "sentinel" : "master check");
    p->link.resolve = probe_resolve;
    p->link.resolve_arg = p;
    p->link.on_ready = probe_ready;
    p->link.on_down = probe_down;
    dlock__link_start(&p->link);
}

static void probe_close(probe *p) {
    if (p->open)
        dlock__link_close(&p->link);
    p->open = false;
}

static void askers_close(dlock__sentinel *s) {
    dlock__timer_stop(&DLOCK__NET(s->client)->sched, &s->ask_timer);
    for (size_t i = 0; s->askers && i < s->url.count; i++) {
        probe_close(&s->askers[i]);
        s->askers[i].outcome = OUT_NONE;
    }
    s->asked = false;
}

static void on_ask_timeout(dlock__timer *t, void *arg) {
    (void)t;
    dlock__sentinel *s = arg;
    for (size_t i = 0; i < s->url.count; i++) {
        probe *p = &s->askers[i];
        if (p->open) /* note_outcome keeps an outcome already noted */
            note_outcome(p, OUT_FAILED, DLOCK_ECONN,
                         "no answer within %lld ms (connect_timeout_ms)",
                         (long long)DLOCK__BASE(s->client)->opts.connect_timeout_ms);
    }
}

static void on_check_timeout(dlock__timer *t, void *arg) {
    (void)t;
    dlock__sentinel *s = arg;
    note_outcome(&s->checker, OUT_FAILED, DLOCK_ECONN,
                 "no answer within %lld ms (connect_timeout_ms)",
                 (long long)DLOCK__BASE(s->client)->opts.connect_timeout_ms);
}

/* ---- the resolution --------------------------------------------------------------------- */

/* Asks every sentinel at once, all within one connect_timeout_ms. */
static void ask_all(dlock__sentinel *s) {
    s->step = STEP_ASKING;
    s->asked = true;
    for (size_t i = 0; i < s->url.count; i++)
        probe_start(s, &s->askers[i], true, &s->url.sentinels[i]);
    dlock__timer_start(&DLOCK__NET(s->client)->sched, &s->ask_timer,
                       DLOCK__BASE(s->client)->opts.connect_timeout_ms);
}

static void check_candidate(dlock__sentinel *s) {
    s->step = STEP_CHECKING;
    point_at(s, &s->check_ep, &s->candidate);
    probe_start(s, &s->checker, false, &s->check_ep);
    dlock__timer_start(&DLOCK__NET(s->client)->sched, &s->check_timer,
                       DLOCK__BASE(s->client)->opts.connect_timeout_ms);
}

static void start_resolution(dlock__sentinel *s) {
    askers_close(s);
    s->ntried = 0;
    s->check_err = DLOCK_OK;
    s->check_why[0] = '\0';
    s->candidate_from_switch = s->hint.port != 0;
    if (s->hint.port != 0) { /* a failover told us where: check it before asking around */
        s->candidate = s->hint;
        s->hint.port = 0;
        check_candidate(s);
        return;
    }
    ask_all(s);
}

static bool tried(const dlock__sentinel *s, const addr *a) {
    for (size_t i = 0; i < s->ntried; i++)
        if (same_addr(&s->tried[i], a))
            return true;
    return false;
}

/* The resolution is over: the links waiting get the master, or err and why. */
static void resolution_done(dlock__sentinel *s, int err, const char *why) {
    s->step = STEP_IDLE;
    askers_close(s);
    answer_all(s, err, why);
}

/* Why each sentinel gave no usable answer, in the URL's order. */
static void sentinel_reasons(dlock__sentinel *s, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < s->url.count && used < size; i++) {
        const probe *p = &s->askers[i];
        char named[DLOCK__ADDRESS_SIZE + 64] = "";
        if (p->outcome == OUT_ADDRESS && is_demoted(s, &p->named)) {
            char at[DLOCK__ADDRESS_SIZE];
            snprintf(named, sizeof(named), " %s, the master before the failover",
                     describe(&p->named, at, sizeof(at)));
        }
        int n = snprintf(buf + used, size - used, "%s%s%s", used ? "; " : "", p->text, named);
        used += n > 0 ? (size_t)n : 0;
    }
}

/* Every sentinel has answered (or run out of time) and none named a usable master. */
static void resolution_failed(dlock__sentinel *s) {
    char why[sizeof(s->check_why) + 800];
    int err = DLOCK_ECONN, unknown = 0, refused = 0, stale = 0;
    for (size_t i = 0; i < s->url.count; i++) {
        const probe *p = &s->askers[i];
        unknown += p->outcome == OUT_UNKNOWN;
        stale += p->outcome == OUT_ADDRESS;
        refused += p->outcome == OUT_FAILED && p->err == DLOCK_EAUTH;
    }
    if (s->ntried > 0) {
        /* a node was named and failed its check: its reason is the answer (a refused
         * password there is DLOCK_EAUTH, as on a redis:// URL) */
        err = permanent(s->check_err) ? s->check_err : DLOCK_ECONN;
        snprintf(why, sizeof(why), "%s", s->check_why);
    } else if (unknown > 0 && stale == 0) {
        err = DLOCK_EINVAL;
        snprintf(why, sizeof(why),
                 "no sentinel knows a master named '%s' (%d of %zu answered that there is no "
                 "such master; check the name in the URL)",
                 s->url.master_name, unknown, s->url.count);
    } else {
        char reasons[800];
        sentinel_reasons(s, reasons, sizeof(reasons));
        if ((size_t)refused == s->url.count)
            err = DLOCK_EAUTH; /* every sentinel refused sentinel_user / sentinel_password */
        snprintf(why, sizeof(why), "no sentinel named the master '%s': %s", s->url.master_name,
                 reasons);
    }
    resolution_done(s, err, why);
}

/* The first usable answer among those in (the last sentinel that named the master first),
 * checked; none while a sentinel may still answer: wait; else the resolution failed. */
static void decide(dlock__sentinel *s) {
    bool waiting = false;
    for (size_t k = 0; k < s->url.count; k++) {
        size_t i = (s->preferred + k) % s->url.count;
        probe *p = &s->askers[i];
        waiting = waiting || p->outcome == OUT_NONE;
        if (p->outcome == OUT_ADDRESS && !is_demoted(s, &p->named) && !tried(s, &p->named)) {
            s->preferred = i;
            s->candidate = p->named;
            s->candidate_from_switch = false;
            check_candidate(s);
            return;
        }
    }
    if (!waiting)
        resolution_failed(s);
}

/* The new master of the last +switch-master is believed: its demotion of the old master
 * stands (again, if it had been withdrawn). */
static void trust_switch(dlock__sentinel *s) {
    if (s->trust == SWITCH_DOUBTED)
        set_demoted(s, &s->last_old, true);
    s->trust = SWITCH_TRUSTED;
}

/* The new master one sentinel reported failed its check: the old master is not passed over
 * on that sentinel's word alone (a second report, or the new master checked, restores it). */
static void doubt_switch(dlock__sentinel *s, const char *why) {
    char from[DLOCK__ADDRESS_SIZE], to[DLOCK__ADDRESS_SIZE];
    s->trust = SWITCH_DOUBTED;
    set_demoted(s, &s->last_old, false);
    dlock__log(s->client, DLOCK_LOG_WARN,
               "sentinel: sentinel %zu alone reported a failover of '%s' from %s to %s, but %s: "
               "not followed unless another sentinel reports it too",
               s->reported_by + 1, s->url.master_name, describe(&s->last_old, from, sizeof(from)),
               describe(&s->last_new, to, sizeof(to)), why);
}

static void after_checking(dlock__sentinel *s) {
    const probe *p = &s->checker;
    char at[DLOCK__ADDRESS_SIZE];
    describe(&s->candidate, at, sizeof(at));
    if (p->outcome == OUT_MASTER && is_demoted(s, &s->candidate)) {
        start_resolution(s); /* a failover was announced while it was being checked */
        return;
    }
    if (p->outcome == OUT_MASTER) {
        if (same_addr(&s->candidate, &s->last_new))
            trust_switch(s);
        s->master = s->candidate;
        s->checked_ms = dlock__now_ms();
        s->checked_switches = s->switches;
        dlock__log(s->client, DLOCK_LOG_INFO, "sentinel: master '%s' is at %s", s->url.master_name,
                   at);
        resolution_done(s, DLOCK_OK, NULL);
        char moved[DLOCK__ADDRESS_SIZE + 128];
        snprintf(moved, sizeof(moved), "the master '%s' is now at %s", s->url.master_name, at);
        drop_links_elsewhere(s, moved);
        return;
    }
    s->check_err = p->err;
    if (p->outcome == OUT_REPLICA)
        snprintf(s->check_why, sizeof(s->check_why),
                 "named master '%s' by the sentinels, but %s (a failover in progress?); asking "
                 "again after the backoff",
                 s->url.master_name, p->text);
    else
        snprintf(s->check_why, sizeof(s->check_why), "master '%s': %s", s->url.master_name,
                 p->text);
    if (s->ntried < sizeof(s->tried) / sizeof(s->tried[0])) /* never full: see tried */
        s->tried[s->ntried++] = s->candidate;
    if (s->candidate_from_switch && s->trust == SWITCH_TENTATIVE &&
        same_addr(&s->candidate, &s->last_new))
        doubt_switch(s, p->text);
    if (!s->asked) { /* the switch's word failed: ask the sentinels */
        ask_all(s);
        return;
    }
    s->step = STEP_ASKING; /* another sentinel's answer, or wait for one */
    decide(s);
}

static void survey_step(dlock__sentinel *s);

static void on_step(dlock__timer *t, void *arg) {
    (void)t;
    dlock__sentinel *s = arg;
    if (s->surveyors)
        survey_step(s);
    /* probes that are done go now, outside their own callbacks; their outcomes stay */
    for (size_t i = 0; i < s->url.count; i++)
        if (s->askers[i].outcome != OUT_NONE)
            probe_close(&s->askers[i]);
    bool checked = s->checker.open && s->checker.outcome != OUT_NONE;
    if (checked) {
        dlock__timer_stop(&DLOCK__NET(s->client)->sched, &s->check_timer);
        probe_close(&s->checker);
    }
    if (s->step == STEP_CHECKING && checked)
        after_checking(s);
    else if (s->step == STEP_ASKING)
        decide(s);
}

/* ---- a survey: what every sentinel says (dlock doctor) ------------------------------------- */

/* The survey's probes are the resolution's kind (probe_start ... note_outcome), so their
 * outcomes come to on_step too; they are kept apart, and a survey never moves the client. */

static void survey_finish(dlock__sentinel *s) {
    dlock__timer_stop(&DLOCK__NET(s->client)->sched, &s->survey_timer);
    size_t n = s->url.count;
    dlock__sentinel_answer *answers = dlock__calloc(n, sizeof(*answers));
    for (size_t i = 0; answers && i < n; i++) {
        const probe *p = &s->surveyors[i];
        dlock__sentinel_answer *a = &answers[i];
        dlock__endpoint_describe(&s->url.sentinels[i], a->sentinel, sizeof(a->sentinel));
        a->named = p->outcome == OUT_ADDRESS ? 1 : p->outcome == OUT_UNKNOWN ? 0 : -1;
        if (a->named == 1)
            describe(&p->named, a->master, sizeof(a->master));
        /* the probe's text is "<role> <where>: <why>": keep the why */
        const char *why = strstr(p->text, ": ");
        snprintf(a->why, sizeof(a->why), "%s", why ? why + 2 : p->text);
    }
    dlock__sentinel_survey_fn done = s->survey_done;
    void *arg = s->survey_arg;
    dlock__free(s->surveyors);
    s->surveyors = NULL;
    done(s->client, answers, answers ? n : 0, arg);
    dlock__free(answers);
}

static void survey_step(dlock__sentinel *s) {
    bool all = true;
    for (size_t i = 0; i < s->url.count; i++) {
        if (s->surveyors[i].outcome != OUT_NONE)
            probe_close(&s->surveyors[i]);
        else
            all = false;
    }
    if (all)
        survey_finish(s);
}

static void on_survey_timeout(dlock__timer *t, void *arg) {
    (void)t;
    dlock__sentinel *s = arg;
    for (size_t i = 0; s->surveyors && i < s->url.count; i++)
        if (s->surveyors[i].open)
            note_outcome(&s->surveyors[i], OUT_FAILED, DLOCK_ECONN,
                         "no answer within %lld ms (connect_timeout_ms)",
                         (long long)DLOCK__BASE(s->client)->opts.connect_timeout_ms);
}

int dlock__sentinel_survey(dlock__sentinel *s, dlock__sentinel_survey_fn done, void *arg) {
    if (s->closed)
        return dlock__fail(DLOCK_ECLOSED, "the client is closing");
    if (s->surveyors)
        return dlock__fail(DLOCK_EINVAL, "a survey of the sentinels is already running");
    s->surveyors = dlock__calloc(s->url.count, sizeof(*s->surveyors));
    if (!s->surveyors)
        return dlock__fail(DLOCK_ENOMEM, "out of memory");
    s->survey_done = done;
    s->survey_arg = arg;
    for (size_t i = 0; i < s->url.count; i++)
        probe_start(s, &s->surveyors[i], true, &s->url.sentinels[i]);
    dlock__timer_start(&DLOCK__NET(s->client)->sched, &s->survey_timer,
                       DLOCK__BASE(s->client)->opts.connect_timeout_ms);
    return DLOCK_OK;
}

/* The links' resolve hook. */
static void slot_resolve(dlock__link *link) {
    slot *sl = link->resolve_arg;
    dlock__sentinel *s = sl->s;
    sl->waiting = true;
    if (s->step != STEP_IDLE)
        return; /* the resolution in progress answers it */
    bool fresh = s->master.port != 0 && s->checked_switches == s->switches &&
                 dlock__now_ms() - s->checked_ms < FRESH_MS;
    if (fresh)
        answer_slot(s, sl);
    else
        start_resolution(s);
}

/* ---- following failovers ---------------------------------------------------------------- */

static void watch_resolve(dlock__link *link) {
    watcher *w = link->resolve_arg;
    dlock__link_connect_to(link, &w->s->url.sentinels[w->index]);
}

/* Acts on the last switch: the old master demoted, the new one where to reconnect, and
 * every link not waiting for an answer dropped — the old master receives nothing more. */
static void follow_switch(dlock__sentinel *s) {
    char from[DLOCK__ADDRESS_SIZE], to[DLOCK__ADDRESS_SIZE], why[3 * DLOCK__ADDRESS_SIZE];
    describe(&s->last_old, from, sizeof(from));
    describe(&s->last_new, to, sizeof(to));
    s->switches++;
    set_demoted(s, &s->last_new, false);
    set_demoted(s, &s->last_old, true);
    s->hint = s->last_new;
    snprintf(why, sizeof(why), "failover: the master '%s' moved from %s to %s", s->url.master_name,
             from, to);
    for (size_t i = 0; i < s->nslots; i++)
        if (!s->slots[i].waiting && !same_addr(&s->slots[i].at, &s->last_new))
            dlock__link_fail(s->slots[i].link, DLOCK_ECONN, why);
}

/* "NAME old-ip old-port new-ip new-port", from w's sentinel */
static void on_switch_master(watcher *w, const char *msg, size_t len) {
    dlock__sentinel *s = w->s;
    char text[700], *fields[5];
    if (len >= sizeof(text) || memchr(msg, '\0', len))
        return; /* no message of Redis holds a NUL byte */
    memcpy(text, msg, len);
    text[len] = '\0';
    int n = 0;
    for (char *f = text; *f && n < 5;) {
        size_t flen = strcspn(f, " ");
        fields[n++] = f;
        f += flen;
        if (*f)
            *f++ = '\0';
    }
    if (n != 5 || strcmp(fields[0], s->url.master_name) != 0)
        return; /* another master of these sentinels */
    addr old_master, new_master;
    if (!set_addr(&old_master, fields[1], strlen(fields[1]), fields[2], strlen(fields[2])) ||
        !set_addr(&new_master, fields[3], strlen(fields[3]), fields[4], strlen(fields[4]))) {
        dlock__log(s->client, DLOCK_LOG_WARN,
                   "sentinel: sentinel %zu reported a failover of '%s' with an address that is "
                   "not a host and a port from 1 to 65535: ignored",
                   w->index + 1, s->url.master_name);
        return;
    }
    char from[DLOCK__ADDRESS_SIZE], to[DLOCK__ADDRESS_SIZE];
    describe(&old_master, from, sizeof(from));
    describe(&new_master, to, sizeof(to));
    if (same_addr(&old_master, &s->last_old) && same_addr(&new_master, &s->last_new)) {
        if (s->trust == SWITCH_TRUSTED || w->index == s->reported_by) {
            dlock__log(s->client, DLOCK_LOG_DEBUG,
                       "sentinel: sentinel %zu reports the failover of '%s' already followed",
                       w->index + 1, s->url.master_name);
            return;
        }
        dlock__log(s->client, DLOCK_LOG_INFO,
                   "sentinel: sentinel %zu confirms the failover of '%s': %s -> %s", w->index + 1,
                   s->url.master_name, from, to);
        if (s->trust == SWITCH_DOUBTED) { /* withdrawn on one word; two make it stand */
            trust_switch(s);
            follow_switch(s);
        }
        s->trust = SWITCH_TRUSTED;
        return;
    }
    s->last_old = old_master;
    s->last_new = new_master;
    s->trust = SWITCH_TENTATIVE;
    s->reported_by = w->index;
    dlock__log(s->client, DLOCK_LOG_WARN,
               "sentinel: failover of '%s': %s -> %s (reported first by sentinel %zu)",
               s->url.master_name, from, to, w->index + 1);
    follow_switch(s);
}

static bool watch_push(dlock__link *link, const dlock__reply *reply) {
    size_t len = 0;
    const char *kind = dlock__reply_str(dlock__reply_at(reply, 0), &len);
    if (len != 7 || memcmp(kind, "message", 7) != 0)
        return false; /* the SUBSCRIBE's confirmation answers the command */
    const char *payload = dlock__reply_str(dlock__reply_at(reply, 2), &len);
    if (dlock__reply_count(reply) != 3 || !payload) {
        dlock__link_protocol_error(link, "a message of the wrong shape", reply);
        return true;
    }
    on_switch_master(link->resolve_arg, payload, len);
    return true;
}

static void watch_subscribed(dlock__link *link, const dlock__reply *reply, void *arg) {
    (void)link;
    watcher *w = arg;
    dlock__sentinel *s = w->s;
    if (dlock__reply_type(reply) == DLOCK__REPLY_ERROR) {
        size_t len = 0;
        const char *text = dlock__reply_str(reply, &len);
        dlock__log(s->client, DLOCK_LOG_ERROR,
                   "sentinel: SUBSCRIBE +switch-master refused by sentinel %zu (%.*s): a failover "
                   "it reports is not heard from it; grant the channel +switch-master",
                   w->index + 1, (int)len, text);
        return;
    }
    /* Back after a drop: a failover may have been announced meanwhile. */
    if (w->was_up && s->step == STEP_IDLE)
        start_resolution(s);
    w->was_up = true;
}

static void watch_ready(dlock__link *link) {
    const char *argv[] = {"SUBSCRIBE", "+switch-master"};
    size_t lens[] = {9, 14};
    dlock__link_send(link, 2, argv, lens, watch_subscribed, link->resolve_arg);
}

/* ---- the API ---------------------------------------------------------------------------- */

int dlock__sentinel_new(dlock__sentinel_url *url, dlock__sentinel **out) {
    dlock__sentinel *s = dlock__calloc(1, sizeof(*s));
    if (!s) {
        dlock__sentinel_url_free(url);
        return DLOCK_ENOMEM;
    }
    s->url = *url;
    memset(url, 0, sizeof(*url));
    s->watchers = dlock__calloc(s->url.count, sizeof(*s->watchers));
    s->askers = dlock__calloc(s->url.count, sizeof(*s->askers));
    if (!s->watchers || !s->askers) {
        dlock__sentinel_free(s);
        return DLOCK_ENOMEM;
    }
    dlock__timer_init(&s->step_timer, on_step, s);
    dlock__timer_init(&s->ask_timer, on_ask_timeout, s);
    dlock__timer_init(&s->check_timer, on_check_timeout, s);
    dlock__timer_init(&s->survey_timer, on_survey_timeout, s);
    *out = s;
    return DLOCK_OK;
}

void dlock__sentinel_attach(dlock__sentinel *s, dlock__link *link) {
    if (s->nslots == MAX_SLOTS)
        return;
    slot *sl = &s->slots[s->nslots++];
    s->client = link->client;
    sl->s = s;
    sl->link = link;
    link->resolve = slot_resolve;
    link->resolve_arg = sl;
}

void dlock__sentinel_start(dlock__sentinel *s) {
    for (size_t i = 0; i < s->url.count; i++) {
        watcher *w = &s->watchers[i];
        w->s = s;
        w->index = i;
        dlock__link_init(&w->link, s->client, "sentinel watch");
        w->link.resolve = watch_resolve;
        w->link.resolve_arg = w;
        w->link.on_ready = watch_ready;
        w->link.on_push = watch_push;
        dlock__link_start(&w->link);
    }
}

bool dlock__sentinel_take_moved(dlock__sentinel *s, const dlock__link *link) {
    for (size_t i = 0; i < s->nslots; i++) {
        if (s->slots[i].link == link && s->slots[i].moved) {
            s->slots[i].moved = false;
            return true;
        }
    }
    return false;
}

const char *dlock__sentinel_master_name(const dlock__sentinel *s) {
    return s->url.master_name;
}

void dlock__sentinel_close(dlock__sentinel *s) {
    if (!s || s->closed)
        return;
    s->closed = true;
    dlock__timer_stop(&DLOCK__NET(s->client)->sched, &s->step_timer);
    dlock__timer_stop(&DLOCK__NET(s->client)->sched, &s->check_timer);
    askers_close(s);
    probe_close(&s->checker);
    s->step = STEP_IDLE;
    if (s->surveyors) { /* its answers so far, as a survey that ends now */
        for (size_t i = 0; i < s->url.count; i++) {
            probe_close(&s->surveyors[i]);
            if (s->surveyors[i].outcome == OUT_NONE)
                snprintf(s->surveyors[i].text, sizeof(s->surveyors[i].text),
                         "sentinel: the client closed");
        }
        survey_finish(s);
    }
    for (size_t i = 0; s->watchers && i < s->url.count; i++)
        if (s->watchers[i].link.client)
            dlock__link_close(&s->watchers[i].link);
}

void dlock__sentinel_free(dlock__sentinel *s) {
    if (!s)
        return;
    dlock__sentinel_url_free(&s->url);
    dlock__free(s->watchers);
    dlock__free(s->askers);
    dlock__free(s);
}
