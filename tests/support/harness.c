/* harness.c — see harness.h. */
#include "harness.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

int64_t slack_ms(int64_t ms) {
    return test_under_valgrind() ? ms * 10 : ms;
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

long long script_calls(redis_fixture *f) {
    return redis_fixture_info_int(f, "commandstats", "cmdstat_evalsha.calls") +
           redis_fixture_info_int(f, "commandstats", "cmdstat_eval.calls");
}

long long total_commands(redis_fixture *f) {
    return redis_fixture_info_int(f, "stats", "total_commands_processed");
}

long long pttl_of(redis_fixture *f, const char *key) {
    return redis_fixture_int(f, "PTTL %s", key);
}

redisContext *subscribe_to(redis_fixture *f, const char *channel) {
    redisContext *s = redisConnectUnix(redis_fixture_socket(f));
    assert_true(s && s->err == 0);
    struct timeval tv = {.tv_sec = test_under_valgrind() ? 60 : 10};
    redisSetTimeout(s, tv);
    redisReply *r = redisCommand(s, "SUBSCRIBE %s", channel);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    return s;
}

void owner_field(dlock_client *c, uint64_t owner, char *buf, size_t size) {
    snprintf(buf, size, "%s:%llu", dlock_client_id(c), (unsigned long long)owner);
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
