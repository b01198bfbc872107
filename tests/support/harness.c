/* SPDX-License-Identifier: MIT */
/* harness.c — see harness.h. */
#include "harness.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core_call.h"

int64_t slack_ms(int64_t ms) {
    return test_slack_ms(ms);
}

redis_fixture *start_server(void) {
    redis_fixture *f = NULL;
    assert_int_equal(redis_fixture_start(NULL, &f), 0);
    return f;
}

long long numsub(redis_fixture *f, const char *channel) {
    redisReply *r = redis_fixture_cmd(f, "PUBSUB NUMSUB %s", channel);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    long long n = r->element[1]->integer;
    freeReplyObject(r);
    return n;
}

static long long channels_reply_count(redisReply *r) {
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    long long n = (long long)r->elements;
    freeReplyObject(r);
    return n;
}

long long subscribed_channels(redis_fixture *f) {
    return channels_reply_count(redis_fixture_cmd(f, "PUBSUB CHANNELS"));
}

long long subscribed_channels_matching(redis_fixture *f, const char *pattern) {
    return channels_reply_count(redis_fixture_cmd(f, "PUBSUB CHANNELS %s", pattern));
}

void messages_until_end(redis_fixture *f, redisContext *s, const char *channel, char *buf,
                        size_t size) {
    freeReplyObject(redis_fixture_cmd(f, "PUBLISH %s end", channel));
    buf[0] = '\0';
    for (;;) {
        void *m = NULL;
        assert_int_equal(redisGetReply(s, &m), REDIS_OK);
        redisReply *r = m;
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_int_equal(r->elements, 3);
        assert_string_equal(r->element[0]->str, "message");
        assert_string_equal(r->element[1]->str, channel);
        bool end = strcmp(r->element[2]->str, "end") == 0;
        if (!end) {
            size_t used = strlen(buf);
            snprintf(buf + used, size - used, "%s,", r->element[2]->str);
        }
        freeReplyObject(r);
        if (end)
            return;
    }
}

long long script_calls(redis_fixture *f) {
    return redis_fixture_info_int(f, "commandstats", "cmdstat_evalsha.calls") +
           redis_fixture_info_int(f, "commandstats", "cmdstat_eval.calls");
}

long long total_commands(redis_fixture *f) {
    return redis_fixture_info_int(f, "stats", "total_commands_processed");
}

long long commands_but_info(redis_fixture *f) {
    long long total = total_commands(f);        /* without the INFO reading it */
    long long infos = command_calls(f, "info"); /* with the one above, without itself */
    return total - (infos - 1);
}

long long command_calls(redis_fixture *f, const char *name) {
    char field[64];
    snprintf(field, sizeof(field), "cmdstat_%s.calls", name);
    return redis_fixture_info_int(f, "commandstats", field);
}

long long hget_int(redis_fixture *f, const char *key, const char *field) {
    const char *argv[] = {"HGET", key, field};
    size_t lens[] = {4, strlen(key), strlen(field)};
    redisReply *r = redis_fixture_cmd_argv(f, 3, argv, lens);
    assert_non_null(r);
    long long v = 0;
    if (r->type == REDIS_REPLY_STRING)
        v = strtoll(r->str, NULL, 10);
    else if (r->type != REDIS_REPLY_NIL)
        fail_msg("HGET %s: reply type %d", key, r->type);
    freeReplyObject(r);
    return v;
}

void hash_dump(redis_fixture *f, const char *key, char *buf, size_t size) {
    const char *argv[] = {"HGETALL", key};
    size_t lens[] = {7, strlen(key)};
    redisReply *r = redis_fixture_cmd_argv(f, 2, argv, lens);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    buf[0] = '\0';
    if (r->elements == 0)
        snprintf(buf, size, "<none>");
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        size_t used = strlen(buf);
        snprintf(buf + used, size - used, "%s=%s;", r->element[i]->str, r->element[i + 1]->str);
    }
    freeReplyObject(r);
}

long long pttl_of(redis_fixture *f, const char *key) {
    return redis_fixture_int(f, "PTTL %s", key);
}

/* A plain connection to f that ran `command target` (SUBSCRIBE or PSUBSCRIBE) and got its
 * confirmation; a read waits at most 5 s, widened by the slack rule. */
static redisContext *listener(redis_fixture *f, const char *command, const char *confirmation,
                              const char *target) {
    redisContext *s = redisConnectUnix(redis_fixture_socket(f));
    assert_true(s && s->err == 0);
    int64_t read_ms = test_slack_ms(5000);
    struct timeval tv = {.tv_sec = (time_t)(read_ms / 1000),
                         .tv_usec = (suseconds_t)(read_ms % 1000) * 1000};
    redisSetTimeout(s, tv);
    redisReply *r = redisCommand(s, "%s %s", command, target);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 3);
    assert_string_equal(r->element[0]->str, confirmation);
    freeReplyObject(r);
    return s;
}

redisContext *subscribe_to(redis_fixture *f, const char *channel) {
    return listener(f, "SUBSCRIBE", "subscribe", channel);
}

redisContext *psubscribe_to(redis_fixture *f, const char *pattern) {
    return listener(f, "PSUBSCRIBE", "psubscribe", pattern);
}

void owner_field(dlock_client *c, uint64_t owner, char *buf, size_t size) {
    snprintf(buf, size, "%s:%llu", dlock_client_id(c), (unsigned long long)owner);
}

static void append(char **buf, size_t *len, const char *s, size_t n) {
    char *grown = realloc(*buf, *len + n + 1);
    assert_non_null(grown);
    memcpy(grown + *len, s, n);
    *len += n;
    grown[*len] = '\0';
    *buf = grown;
}

static int by_key_name(const void *a, const void *b) {
    const redisReply *x = *(redisReply *const *)a, *y = *(redisReply *const *)b;
    return strcmp(x->str, y->str);
}

char *db_state(redis_fixture *f) {
    redisReply *keys = redis_fixture_cmd(f, "KEYS *");
    assert_non_null(keys);
    assert_int_equal(keys->type, REDIS_REPLY_ARRAY);
    if (keys->elements > 1)
        qsort(keys->element, keys->elements, sizeof(*keys->element), by_key_name);
    char *buf = NULL;
    size_t len = 0;
    append(&buf, &len, "", 0);
    for (size_t i = 0; i < keys->elements; i++) {
        const redisReply *k = keys->element[i];
        redisReply *dump = redis_fixture_cmd(f, "DUMP %b", k->str, k->len);
        assert_non_null(dump);
        append(&buf, &len, k->str, k->len);
        append(&buf, &len, " = ", 3);
        for (size_t b = 0; dump->type == REDIS_REPLY_STRING && b < dump->len; b++) {
            char hex[3];
            snprintf(hex, sizeof(hex), "%02x", (unsigned char)dump->str[b]);
            append(&buf, &len, hex, 2);
        }
        freeReplyObject(dump);
        long long pttl = redis_fixture_int(f, "PTTL %b", k->str, k->len);
        const char *expiry = pttl == -1 ? " (no expiry)\n" : " (expires)\n";
        append(&buf, &len, expiry, strlen(expiry));
    }
    freeReplyObject(keys);
    return buf;
}

static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop;
    (void)w;
    (void)revents;
}

struct ev_loop *polling_loop_new(ev_timer *tick) {
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    assert_non_null(loop);
    ev_timer_init(tick, tick_cb, 0.002, 0.002);
    ev_timer_start(loop, tick);
    return loop;
}

void polling_loop_free(struct ev_loop *loop, ev_timer *tick) {
    ev_timer_stop(loop, tick);
    ev_loop_destroy(loop);
}

dlock_client *connect_on_loop(redis_fixture *f, struct ev_loop *loop) {
    dlock_options o;
    dlock_options_init(&o);
    o.url = redis_fixture_unix_url(f);
    dlock_client *c = NULL;
    ASSERT_RC(dlock_client_new_on_loop(&o, loop, &c), DLOCK_OK);
    return c;
}

void run_loop_for(struct ev_loop *loop, int64_t ms) {
    int64_t until = test_now_ms() + ms;
    while (test_now_ms() < until)
        ev_run(loop, EVRUN_ONCE);
}

static void ping_done(dlock_client *c, int status, void *arg) {
    (void)c;
    *(int *)arg = status;
}

void sync_with_client(struct ev_loop *loop, dlock_client *c, int64_t timeout_ms) {
    int status = 1;
    ASSERT_RC(dlock_client_ping_async(c, ping_done, &status), DLOCK_OK);
    bool ok = false;
    RUN_LOOP_UNTIL(loop, ok, status != 1, timeout_ms);
    assert_true(ok);
    ASSERT_RC(status, DLOCK_OK);
}

/* ---- clients ------------------------------------------------------------------------------ */

void test_client_options(redis_fixture *f, const test_client_cfg *cfg, dlock_options *o) {
    static const test_client_cfg defaults = {0};
    if (cfg == NULL)
        cfg = &defaults;
    dlock_options_init(o);
    o->url = cfg->url != NULL ? cfg->url : redis_fixture_unix_url(f);
    o->retry_delay_ms = cfg->retry_delay_ms > 0 ? cfg->retry_delay_ms : TEST_RETRY_DELAY_MS;
    if (cfg->watchdog_ms > 0)
        o->watchdog_ms = cfg->watchdog_ms;
    if (cfg->timeout_ms > 0)
        o->timeout_ms = cfg->timeout_ms;
    if (cfg->connect_timeout_ms > 0)
        o->connect_timeout_ms = cfg->connect_timeout_ms;
    if (cfg->fair_wait_ms > 0)
        o->fair_wait_ms = cfg->fair_wait_ms;
    if (cfg->retry_attempts == TEST_NO_RETRY)
        o->retry_attempts = 0;
    else if (cfg->retry_attempts > 0)
        o->retry_attempts = cfg->retry_attempts;
    if (cfg->renew_batch > 0)
        o->renew_batch = cfg->renew_batch;
}

dlock_client *connect_client_cfg(redis_fixture *f, test_client_cfg cfg) {
    dlock_options o;
    test_client_options(f, &cfg, &o);
    dlock_client *c = NULL;
    int rc = dlock_client_new(&o, &c);
    if (rc != DLOCK_OK)
        fail_msg("connect %s: %s (%s)", o.url, dlock_err_name(rc), dlock_last_error());
    return c;
}

int test_client_new(redis_fixture *f, const test_client_cfg *cfg, dlock_client **out) {
    dlock_options o;
    test_client_options(f, cfg, &o);
    return dlock_client_new(&o, out);
}

dlock_client *connect_client(redis_fixture *f) {
    return connect_client_cfg(f, (test_client_cfg){0});
}

/* ---- one server and one client per test ------------------------------------------------- */

int test_world_setup_cfg(void **state, test_client_cfg cfg) {
    test_world *w = calloc(1, sizeof(*w));
    if (!w || redis_fixture_start(NULL, &w->f) != 0) {
        free(w);
        return -1;
    }
    if (cfg.retry_delay_ms == 0)
        cfg.retry_delay_ms = 20;
    if (test_client_new(w->f, &cfg, &w->c) != DLOCK_OK) {
        fprintf(stderr, "dlock_client_new: %s\n", dlock_last_error());
        redis_fixture_stop(w->f);
        free(w);
        return -1;
    }
    *state = w;
    return 0;
}

int test_world_setup(void **state) {
    return test_world_setup_cfg(state, (test_client_cfg){0});
}

int test_world_teardown(void **state) {
    test_world *w = *state;
    if (w) {
        redis_fixture_resume(w->f);
        dlock_client_free(w->c);
        redis_fixture_stop(w->f);
        free(w);
    }
    test_watchdog_disarm();
    return 0;
}

/* ---- lost callbacks -------------------------------------------------------------------------- */

/* One mutex for every record: callbacks run on client loop threads, readers on the test's. */
static pthread_mutex_t lost_mu = PTHREAD_MUTEX_INITIALIZER;
static lost_record lost_global;

static void lost_note(lost_record *r, dlock_lock *l, uint64_t owner, int reason, void *arg) {
    int64_t now_us = test_now_us();
    pthread_mutex_lock(&lost_mu);
    if (r->calls++ == 0) {
        r->reason = reason;
        r->owner = owner;
        r->lock = l;
        r->arg = arg;
        r->first_us = now_us;
        r->first_ms = now_us / 1000;
    }
    pthread_mutex_unlock(&lost_mu);
}

void record_lost(dlock_lock *l, uint64_t owner, int reason, void *arg) {
    lost_note(&lost_global, l, owner, reason, arg);
}

void record_lost_in(dlock_lock *l, uint64_t owner, int reason, void *record) {
    lost_note(record, l, owner, reason, record);
}

void lost_reset(void) {
    pthread_mutex_lock(&lost_mu);
    memset(&lost_global, 0, sizeof lost_global);
    pthread_mutex_unlock(&lost_mu);
}

lost_record lost_get_in(const lost_record *r) {
    pthread_mutex_lock(&lost_mu);
    lost_record copy = *r;
    pthread_mutex_unlock(&lost_mu);
    return copy;
}

lost_record lost_get(void) {
    return lost_get_in(&lost_global);
}

int lost_calls(void) {
    return lost_get().calls;
}

/* ---- MONITOR ------------------------------------------------------------------------------- */

redisContext *monitor_open(redis_fixture *f) {
    redisContext *mon = redisConnectUnix(redis_fixture_socket(f));
    assert_true(mon && mon->err == 0);
    struct timeval tv = {.tv_sec = test_slack_ms(10000) / 1000};
    redisSetTimeout(mon, tv);
    redisReply *r = redisCommand(mon, "MONITOR");
    assert_true(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    return mon;
}

int monitor_count_tcp(redisContext *mon, const char *end_marker, char *names, size_t size) {
    char marker[128];
    snprintf(marker, sizeof(marker), "\"%s\"", end_marker);
    int count = 0;
    names[0] = '\0';
    for (;;) {
        void *m = NULL;
        assert_int_equal(redisGetReply(mon, &m), REDIS_OK);
        redisReply *r = m;
        assert_int_equal(r->type, REDIS_REPLY_STATUS);
        bool end = strstr(r->str, marker) != NULL;
        const char *src = strstr(r->str, " 127.0.0.1:");
        const char *cmd = src ? strstr(src, "] \"") : NULL;
        if (!end && cmd) {
            count++;
            size_t used = strlen(names);
            const char *name = cmd + 3;
            size_t nlen = strcspn(name, "\"");
            snprintf(names + used, size - used, "%s%.*s", used ? " " : "", (int)nlen, name);
        }
        freeReplyObject(r);
        if (end)
            return count;
    }
}

/* ---- an application on a loop of the test's own ------------------------------------------- */

static dlock_client *connect_on_loop_cfg(redis_fixture *f, struct ev_loop *loop,
                                         const test_client_cfg *cfg) {
    dlock_options o;
    test_client_options(f, cfg, &o);
    dlock_client *c = NULL;
    ASSERT_RC(dlock_client_new_on_loop(&o, loop, &c), DLOCK_OK);
    return c;
}

void app_open(loop_app *a, const test_client_cfg *cfg, int clients) {
    assert_true(clients == 1 || clients == 2);
    memset(a, 0, sizeof(*a));
    a->f = start_server();
    a->loop = polling_loop_new(&a->tick);
    a->c = connect_on_loop_cfg(a->f, a->loop, cfg);
    sync_with_client(a->loop, a->c, test_slack_ms(5000)); /* connected */
    if (clients == 2) {
        a->c2 = connect_on_loop_cfg(a->f, a->loop, cfg);
        sync_with_client(a->loop, a->c2, test_slack_ms(5000));
    }
}

void app_close(loop_app *a) {
    /* On the loop thread a free goes through the client's queue: one round trip later it
     * has run. */
    dlock_lock_free(a->l);
    dlock_semaphore_free(a->s);
    dlock_permits_free(a->p);
    dlock_latch_free(a->latch);
    sync_with_client(a->loop, a->c, test_slack_ms(5000));
    if (a->c2 != NULL) {
        sync_with_client(a->loop, a->c2, test_slack_ms(5000));
        ASSERT_RC(dlock_client_free(a->c2), DLOCK_OK);
    }
    ASSERT_RC(dlock_client_free(a->c), DLOCK_OK);
    polling_loop_free(a->loop, &a->tick);
    redis_fixture_stop(a->f);
    memset(a, 0, sizeof(*a));
}

/* ---- several masters ---------------------------------------------------------------------- */

void masters_start(redis_fixture **f, int n) {
    for (int i = 0; i < n; i++)
        f[i] = start_server();
}

void masters_stop(redis_fixture **f, int n) {
    for (int i = 0; i < n; i++)
        redis_fixture_stop(f[i]);
}

void masters_app_open(masters_app *a, redis_fixture **f, int n, const char *name,
                      const test_client_cfg *cfg, bool fenced) {
    assert_true(n > 0 && n <= MASTERS_MAX);
    memset(a, 0, sizeof(*a));
    a->n = n;
    for (int i = 0; i < n; i++) {
        dlock_options o;
        test_client_options(f[i], cfg, &o);
        ASSERT_RC(dlock_client_new(&o, &a->c[i]), DLOCK_OK);
        ASSERT_RC(fenced ? dlock_fencedlock_new(a->c[i], name, &a->member[i])
                         : dlock_lock_new(a->c[i], name, &a->member[i]),
                  DLOCK_OK);
    }
    ASSERT_RC(dlock_redlock_new(a->member, (size_t)n, &a->rl), DLOCK_OK);
}

void masters_app_close(masters_app *a) {
    dlock_lock_free(a->rl);
    for (int i = 0; i < a->n; i++)
        dlock_lock_free(a->member[i]);
    for (int i = 0; i < a->n; i++)
        ASSERT_RC(dlock_client_free(a->c[i]), DLOCK_OK);
    memset(a, 0, sizeof(*a));
}

/* ---- the first error of worker threads ------------------------------------------------ */

void first_error_note(first_error *e, int worker_id, const char *what, int rc) {
    if (atomic_fetch_add(&e->count, 1) == 0) /* the only writer of text */
        snprintf(e->text, sizeof(e->text), "worker %d: %s: %s (%s)", worker_id, what,
                 dlock_err_name(rc), dlock_last_error());
}

/* ---- a blocking call on a thread of its own ------------------------------------------------ */

static void *blocking_call_main(void *arg) {
    blocking_call *c = arg;
    c->rc = c->run(c->arg);
    c->returned_us = test_now_us();
    atomic_store(&c->returned, true);
    return NULL;
}

void blocking_call_start(blocking_call *c, int (*run)(void *arg), void *arg) {
    c->run = run;
    c->arg = arg;
    c->rc = DLOCK_EINVAL;
    c->returned_us = 0;
    atomic_init(&c->returned, false);
    assert_int_equal(pthread_create(&c->thread, NULL, blocking_call_main, c), 0);
}

void blocking_call_start_asleep(blocking_call *c, int (*run)(void *arg), void *arg,
                                redis_fixture *f, asleep_sign sign) {
    long long (*attempts_of)(redis_fixture *) = sign.attempts_of ? sign.attempts_of : script_calls;
    long long before = attempts_of(f);
    blocking_call_start(c, run, arg);
    bool asleep = false;
    POLL_UNTIL(asleep,
               numsub(f, sign.channel) == sign.subscribers &&
                   attempts_of(f) >= before + sign.attempts,
               test_slack_ms(3000));
    if (!asleep)
        fail_msg("the call did not go to sleep on %s (returned: %d, rc %s)", sign.channel,
                 (int)atomic_load(&c->returned), dlock_err_name(c->rc));
    assert_false(atomic_load(&c->returned));
}

bool blocking_call_returned(blocking_call *c) {
    return atomic_load(&c->returned);
}

int blocking_call_join(blocking_call *c) {
    assert_int_equal(pthread_join(c->thread, NULL), 0);
    return c->rc;
}
