/* SPDX-License-Identifier: MIT */
/* sentinel.c — the master of a Sentinel URL: found through the sentinels, checked, and
 * followed through failovers.
 *
 * The client's command and subscriber links ask here, at the start of every attempt,
 * where to connect (their resolve hook). A resolution
 *   1. asks the sentinels in the URL's order `SENTINEL get-master-addr-by-name NAME`
 *      (starting with the last one that answered), each on a short-lived connection whose
 *      answer must come within connect_timeout_ms; one that cannot be reached, does not
 *      answer in time or refuses is skipped;
 *   2. checks the named node with `ROLE`: only a node that says master is answered. A
 *      replica (the sentinels are mid-failover) fails the attempt: the link backs off and
 *      asks again.
 * "No such master" from every sentinel that answered is DLOCK_EINVAL naming the master;
 * no sentinel answering is DLOCK_ECONN with each one's reason. An answer at most FRESH_MS
 * old is given again without asking (the two links connect together).
 *
 * Failovers: every sentinel of the URL is watched, each on a subscriber connection of its
 * own (SUBSCRIBE +switch-master): a sentinel that is partitioned, paused or slow to hear of
 * a failover then costs nothing, as the first one that reports it is acted on. On
 * "NAME old-ip old-port new-ip new-port" both of the client's links are dropped at once —
 * from then on the old master receives nothing, lock writes included — and their
 * reconnects are answered with the new master (checked with ROLE first). The other
 * sentinels report the same switch within seconds: a report of the switch last acted on is
 * a duplicate and changes nothing, as does one for another master of these sentinels. The
 * old address is remembered as demoted for DEMOTED_MS: a sentinel that has not heard of the
 * failover yet and still names it is passed over. After a watch connection reconnects
 * (messages may have been missed) a resolution runs, and a link found on another node than
 * the master is dropped. A link whose reconnect goes to another master than before is
 * "moved": the client then has every held lease confirmed on the new master at once.
 *
 * Resources are bounded by the URL, which names at most DLOCK__SENTINELS_MAX sentinels: one
 * watch connection per sentinel, one short-lived probe connection at a time, fixed-size
 * state allocated with the resolver. Every watch connection, like every link, reconnects
 * only after the link's capped, jittered backoff (never in a tight loop, also when a
 * sentinel accepts and drops at once or refuses the SUBSCRIBE), and a resolution runs
 * only when none is in progress.
 *
 * Everything runs on the client's loop thread. The probe link is never closed or restarted
 * inside its own callbacks: its outcome is noted and acted on from a zero-delay timer. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sentinel.h"

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
    OUT_NONE,
    OUT_ADDRESS, /* a sentinel named the master (candidate) */
    OUT_UNKNOWN, /* a sentinel knows no master of that name */
    OUT_FAILED,  /* unreachable, refused, an error or a reply of the wrong shape */
    OUT_MASTER,  /* ROLE: master */
    OUT_REPLICA, /* ROLE: anything else */
};

struct dlock__sentinel {
    dlock_client *client;
    dlock__sentinel_url url;
    slot slots[MAX_SLOTS];
    size_t nslots;

    /* the resolution in progress */
    enum step step;
    dlock__link probe; /* to one sentinel, then to the candidate */
    const dlock__endpoint *probe_target;
    dlock__endpoint check_ep; /* the URL's data settings at the candidate; host not owned */
    addr candidate;
    size_t asking;    /* the sentinel asked */
    size_t asked;     /* how many of this resolution */
    size_t preferred; /* the last sentinel that named the master: asked first */
    int unknown_answers, stale_answers;
    char reasons[600]; /* why each sentinel gave no usable answer */
    enum outcome outcome;
    char outcome_text[240];
    dlock__timer step_timer;  /* zero-delay: act on the outcome outside the probe's callbacks */
    dlock__timer probe_timer; /* the probe's bound */

    /* the last checked master */
    addr master;
    int64_t checked_ms;
    uint64_t checked_switches;

    /* following failovers */
    watcher *watchers; /* one per sentinel of the URL, in its order */
    bool closed;
    uint64_t switches;       /* +switch-master messages for our master acted on */
    addr last_old, last_new; /* the last one acted on: its duplicates are ignored */
    addr hint;               /* the new master of the last one, until a resolution takes it */
    demotion demoted[DEMOTED_MAX];
    size_t next_demoted;
};

/* ---- addresses -------------------------------------------------------------------------- */

static bool same_addr(const addr *a, const addr *b) {
    return a->port == b->port && a->port != 0 && strcmp(a->host, b->host) == 0;
}

static bool set_addr(addr *a, const char *host, size_t host_len, const char *port) {
    char *end;
    long p = strtol(port, &end, 10);
    if (host_len == 0 || host_len >= sizeof(a->host) || *end != '\0' || p < 1 || p > 65535)
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
    *ep = s->client->endpoint;
    ep->host = a->host;
    ep->port = a->port;
}

static const char *describe(const addr *a, char *buf, size_t size) {
    snprintf(buf, size, strchr(a->host, ':') ? "[%s]:%d" : "%s:%d", a->host, a->port);
    return buf;
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

/* ---- the probe: one question on a short-lived connection -------------------------------- */

/* Notes the probe's outcome (text: printf-style, for a failure, after the probe's role and
 * address) and acts on it from the step timer. */
static void note_outcome(dlock__sentinel *s, enum outcome o, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note_outcome(dlock__sentinel *s, enum outcome o, const char *fmt, ...) {
    if (s->outcome != OUT_NONE)
        return; /* the first outcome is the probe's; a drop after an answer changes nothing */
    s->outcome = o;
    char where[160];
    dlock__endpoint_describe(s->probe_target, where, sizeof(where));
    int used = snprintf(s->outcome_text, sizeof(s->outcome_text), "%s %s: ", s->probe.role, where);
    va_list ap;
    va_start(ap, fmt);
    if (used > 0 && (size_t)used < sizeof(s->outcome_text))
        vsnprintf(s->outcome_text + used, sizeof(s->outcome_text) - (size_t)used, fmt, ap);
    va_end(ap);
    dlock__timer_start(&s->client->sched, &s->step_timer, 0);
}

static void probe_resolve(dlock__link *link) {
    dlock__sentinel *s = link->resolve_arg;
    dlock__link_connect_to(link, s->probe_target);
}

static void on_master_addr(dlock__sentinel *s, const dlock__reply *reply) {
    int type = dlock__reply_type(reply);
    if (type == DLOCK__REPLY_NIL ||
        (type == DLOCK__REPLY_ARRAY && dlock__reply_count(reply) == 0)) {
        note_outcome(s, OUT_UNKNOWN, "knows no such master");
        return;
    }
    size_t host_len = 0, port_len = 0;
    const char *host = dlock__reply_str(dlock__reply_at(reply, 0), &host_len);
    const char *port = dlock__reply_str(dlock__reply_at(reply, 1), &port_len);
    char port_text[8];
    snprintf(port_text, sizeof(port_text), "%.*s", (int)port_len, port ? port : "");
    if (type != DLOCK__REPLY_ARRAY || dlock__reply_count(reply) != 2 || !host || !port ||
        !set_addr(&s->candidate, host, host_len, port_text)) {
        char what[96];
        dlock__reply_describe(reply, what, sizeof(what));
        note_outcome(s, OUT_FAILED, "unexpected answer to SENTINEL get-master-addr-by-name: %s",
                     what);
        return;
    }
    note_outcome(s, OUT_ADDRESS, "named the master");
}

static void on_role(dlock__sentinel *s, const dlock__reply *reply) {
    size_t len = 0;
    const char *role = dlock__reply_str(dlock__reply_at(reply, 0), &len);
    if (dlock__reply_type(reply) == DLOCK__REPLY_ARRAY && role && len == 6 &&
        memcmp(role, "master", 6) == 0) {
        note_outcome(s, OUT_MASTER, "is the master");
        return;
    }
    note_outcome(s, OUT_REPLICA, "ROLE says %.*s", (int)len, role ? role : "?");
}

static void probe_reply(dlock__link *link, const dlock__reply *reply, void *arg) {
    (void)link;
    dlock__sentinel *s = arg;
    if (dlock__reply_type(reply) == DLOCK__REPLY_ERROR) {
        size_t len = 0;
        const char *text = dlock__reply_str(reply, &len);
        note_outcome(s, OUT_FAILED, "refused: %.*s", (int)len, text);
    } else if (s->step == STEP_ASKING) {
        on_master_addr(s, reply);
    } else {
        on_role(s, reply);
    }
}

static void probe_ready(dlock__link *link) {
    dlock__sentinel *s = link->resolve_arg;
    const char *ask[] = {"SENTINEL", "get-master-addr-by-name", s->url.master_name};
    const char *role[] = {"ROLE"};
    bool asking = s->step == STEP_ASKING;
    const char **argv = asking ? ask : role;
    int argc = asking ? 3 : 1;
    size_t lens[3];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    dlock__link_send(link, argc, argv, lens, probe_reply, s); /* a failure drops the link */
}

static void probe_down(dlock__link *link, int err) {
    (void)err;
    /* last_error_text reads "<role> connection to <where>: <why>": keep the why */
    const char *why = strstr(link->last_error_text, ": ");
    note_outcome(link->resolve_arg, OUT_FAILED, "%s", why ? why + 2 : link->last_error_text);
}

static void on_probe_timeout(dlock__timer *t, void *arg) {
    (void)t;
    dlock__sentinel *s = arg;
    note_outcome(s, OUT_FAILED, "no answer within %lld ms (connect_timeout_ms)",
                 (long long)s->client->opts.connect_timeout_ms);
}

static void probe_start(dlock__sentinel *s, enum step step, const dlock__endpoint *target) {
    dlock_client *c = s->client;
    s->step = step;
    s->probe_target = target;
    s->outcome = OUT_NONE;
    dlock__link_init(&s->probe, c, step == STEP_ASKING ? "sentinel" : "master check");
    s->probe.resolve = probe_resolve;
    s->probe.resolve_arg = s;
    s->probe.on_ready = probe_ready;
    s->probe.on_down = probe_down;
    dlock__timer_start(&c->sched, &s->probe_timer, c->opts.connect_timeout_ms);
    dlock__link_start(&s->probe);
}

static void probe_stop(dlock__sentinel *s) {
    dlock__timer_stop(&s->client->sched, &s->probe_timer);
    dlock__timer_stop(&s->client->sched, &s->step_timer);
    if (s->probe.client)
        dlock__link_close(&s->probe);
}

/* ---- the resolution --------------------------------------------------------------------- */

/* Asks the next sentinel in the round that starts at the preferred one. */
static void ask_next_sentinel(dlock__sentinel *s) {
    s->asking = (s->preferred + s->asked++) % s->url.count;
    probe_start(s, STEP_ASKING, &s->url.sentinels[s->asking]);
}

static void check_candidate(dlock__sentinel *s) {
    point_at(s, &s->check_ep, &s->candidate);
    probe_start(s, STEP_CHECKING, &s->check_ep);
}

static void start_resolution(dlock__sentinel *s) {
    s->unknown_answers = s->stale_answers = 0;
    s->reasons[0] = '\0';
    if (s->hint.port != 0) { /* a failover told us where: check it before asking around */
        s->candidate = s->hint;
        s->hint.port = 0;
        check_candidate(s);
        return;
    }
    s->asked = 0;
    ask_next_sentinel(s);
}

static void add_reason(dlock__sentinel *s, const char *reason) {
    size_t used = strlen(s->reasons);
    snprintf(s->reasons + used, sizeof(s->reasons) - used, "%s%s", used ? "; " : "", reason);
}

/* Every sentinel has been asked and none named a usable master. */
static void resolution_failed(dlock__sentinel *s) {
    char why[sizeof(s->reasons) + 200];
    int err;
    if (s->unknown_answers > 0 && s->stale_answers == 0) {
        err = DLOCK_EINVAL;
        snprintf(why, sizeof(why),
                 "no sentinel knows a master named '%s' (%d of %zu answered that there is no "
                 "such master; check the name in the URL)",
                 s->url.master_name, s->unknown_answers, s->url.count);
    } else {
        err = DLOCK_ECONN;
        snprintf(why, sizeof(why), "no sentinel named the master '%s': %s", s->url.master_name,
                 s->reasons);
    }
    s->step = STEP_IDLE;
    answer_all(s, err, why);
}

static void next_sentinel(dlock__sentinel *s) {
    if (s->asked < s->url.count)
        ask_next_sentinel(s);
    else
        resolution_failed(s);
}

static void after_asking(dlock__sentinel *s, enum outcome o) {
    if (o == OUT_ADDRESS && !is_demoted(s, &s->candidate)) {
        s->preferred = s->asking;
        check_candidate(s);
        return;
    }
    if (o == OUT_ADDRESS) {
        char named[160], reason[sizeof(s->outcome_text) + 200];
        s->stale_answers++;
        snprintf(reason, sizeof(reason), "%s %s, the master before the failover", s->outcome_text,
                 describe(&s->candidate, named, sizeof(named)));
        add_reason(s, reason);
    } else {
        s->unknown_answers += o == OUT_UNKNOWN;
        add_reason(s, s->outcome_text);
    }
    next_sentinel(s);
}

static void after_checking(dlock__sentinel *s, enum outcome o) {
    char at[160], why[sizeof(s->outcome_text) + 200];
    describe(&s->candidate, at, sizeof(at));
    s->step = STEP_IDLE;
    if (o == OUT_MASTER && is_demoted(s, &s->candidate)) {
        start_resolution(s); /* a failover was announced while it was being checked */
        return;
    }
    if (o == OUT_MASTER) {
        s->master = s->candidate;
        s->checked_ms = dlock__now_ms();
        s->checked_switches = s->switches;
        dlock__log(s->client, DLOCK_LOG_INFO, "sentinel: master '%s' is at %s", s->url.master_name,
                   at);
        answer_all(s, DLOCK_OK, NULL);
        char moved[300];
        snprintf(moved, sizeof(moved), "the master '%s' is now at %s", s->url.master_name, at);
        drop_links_elsewhere(s, moved);
        return;
    }
    if (o == OUT_REPLICA)
        snprintf(why, sizeof(why),
                 "named master '%s' by the sentinels, but %s (a failover in progress?); asking "
                 "again after the backoff",
                 s->url.master_name, s->outcome_text);
    else
        snprintf(why, sizeof(why), "master '%s': %s", s->url.master_name, s->outcome_text);
    answer_all(s, DLOCK_ECONN, why);
}

static void on_step(dlock__timer *t, void *arg) {
    (void)t;
    dlock__sentinel *s = arg;
    enum outcome o = s->outcome;
    probe_stop(s);
    if (s->step == STEP_ASKING)
        after_asking(s, o);
    else if (s->step == STEP_CHECKING)
        after_checking(s, o);
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

/* "NAME old-ip old-port new-ip new-port", from w's sentinel */
static void on_switch_master(watcher *w, const char *msg, size_t len) {
    dlock__sentinel *s = w->s;
    char text[700], *fields[5];
    if (len >= sizeof(text))
        return;
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
    addr old_master, new_master;
    if (n != 5 || strcmp(fields[0], s->url.master_name) != 0 ||
        !set_addr(&old_master, fields[1], strlen(fields[1]), fields[2]) ||
        !set_addr(&new_master, fields[3], strlen(fields[3]), fields[4]))
        return; /* another master of these sentinels */
    if (same_addr(&old_master, &s->last_old) && same_addr(&new_master, &s->last_new)) {
        dlock__log(s->client, DLOCK_LOG_DEBUG,
                   "sentinel: sentinel %zu reports the failover of '%s' already followed",
                   w->index + 1, s->url.master_name);
        return;
    }
    s->last_old = old_master;
    s->last_new = new_master;
    char from[160], to[160], why[400];
    describe(&old_master, from, sizeof(from));
    describe(&new_master, to, sizeof(to));
    dlock__log(s->client, DLOCK_LOG_WARN,
               "sentinel: failover of '%s': %s -> %s (reported first by sentinel %zu)",
               s->url.master_name, from, to, w->index + 1);
    s->switches++;
    set_demoted(s, &new_master, false);
    set_demoted(s, &old_master, true);
    s->hint = new_master;
    /* Stop writing to the old master now: every link not waiting for an answer goes. */
    snprintf(why, sizeof(why), "failover: the master '%s' moved from %s to %s", s->url.master_name,
             from, to);
    for (size_t i = 0; i < s->nslots; i++)
        if (!s->slots[i].waiting && !same_addr(&s->slots[i].at, &new_master))
            dlock__link_fail(s->slots[i].link, DLOCK_ECONN, why);
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
    if (!s->watchers) {
        dlock__sentinel_free(s);
        return DLOCK_ENOMEM;
    }
    dlock__timer_init(&s->step_timer, on_step, s);
    dlock__timer_init(&s->probe_timer, on_probe_timeout, s);
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
    probe_stop(s);
    s->step = STEP_IDLE;
    for (size_t i = 0; s->watchers && i < s->url.count; i++)
        if (s->watchers[i].link.client)
            dlock__link_close(&s->watchers[i].link);
}

void dlock__sentinel_free(dlock__sentinel *s) {
    if (!s)
        return;
    dlock__sentinel_url_free(&s->url);
    dlock__free(s->watchers);
    dlock__free(s);
}
