/* SPDX-License-Identifier: MIT */
/* test_error_text_long.c — a long error text keeps its end, where it says what to do.
 *
 * A permission error names the user twice (the refusal, then the ACL SETUSER that fixes it).
 * With a user name of 300 bytes the text is longer than any fixed buffer dlock once had
 * (200 and 256 bytes): proven here that dlock_last_error() still ends with the very words a
 * short-named user gets after its name, and holds the whole long name right before them, for
 * a key the ACL refuses (the command's reply) and for a channel it refuses (the SUBSCRIBE of
 * a wait). And a text too long for any buffer (an object name of 4000 bytes in a refused
 * channel) loses its middle, marked " ... " (the start of the long word kept), never its
 * end. A host name of 251 bytes that does not resolve is named whole, followed by the
 * resolver's reason, as a short one is. A MultiLock whose member is refused says so with the
 * member's whole text (it was cut at 160 bytes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define LONG_USER_LEN 300
#define LONG_NAME_LEN 4000

typedef enum refusal { REFUSED_KEY, REFUSED_CHANNEL } refusal;

static void add_user(redis_fixture *f, const char *user, refusal what) {
    redisReply *r = redis_fixture_cmd(f, "ACL SETUSER %s on >pw %s %s +@all", user,
                                      what == REFUSED_KEY ? "~other:*" : "~*",
                                      what == REFUSED_KEY ? "allchannels" : "resetchannels");
    assert_non_null(r);
    assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
}

/* dlock_last_error() of a call `user` makes that the ACL refuses, into text. A refused
 * channel needs a wait: another client holds the lock. */
static void refused_text(redis_fixture *f, const char *user, refusal what, const char *name,
                         char *text, size_t size) {
    add_user(f, user, what);
    char url[2048];
    snprintf(url, sizeof(url), "unix://%s?user=%s&password=pw", redis_fixture_socket(f), user);
    dlock_client *holder = NULL, *c = connect_client_cfg(NULL, (test_client_cfg){.url = url});
    dlock_lock *held = NULL, *l = NULL;
    if (what == REFUSED_CHANNEL) {
        holder = connect_client(f);
        ASSERT_RC(dlock_lock_new(holder, name, &held), DLOCK_OK);
        ASSERT_RC(dlock_lock_try_acquire(held, 0, 60000), DLOCK_OK);
    }
    ASSERT_RC(dlock_lock_new(c, name, &l), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(l, slack_ms(30000), 60000), DLOCK_ENOPERM);
    snprintf(text, size, "%s", dlock_last_error());
    printf("# %zu bytes: %s\n", strlen(text), text);
    dlock_lock_free(l);
    dlock_client_free(c);
    if (holder) {
        ASSERT_RC(dlock_lock_release(held), DLOCK_OK);
        dlock_lock_free(held);
        dlock_client_free(holder);
    }
}

/* What a text says after "ACL SETUSER <user> ": the grant, the end of the hint. */
static const char *after_grant_of(const char *text, const char *user) {
    char want[1024];
    snprintf(want, sizeof(want), "ACL SETUSER %s ", user);
    const char *at = strstr(text, want);
    if (!at)
        fail_msg("\"%s\" has no \"%s\"", text, want);
    return at + strlen(want);
}

static void long_user_keeps_the_hint(refusal what) {
    redis_fixture *f = start_server();
    char short_text[2048], long_text[4096];
    refused_text(f, "u", what, "job", short_text, sizeof(short_text));
    char user[LONG_USER_LEN + 1];
    for (int i = 0; i < LONG_USER_LEN; i++)
        user[i] = (char)('a' + i % 26);
    user[LONG_USER_LEN] = '\0';
    refused_text(f, user, what, "job", long_text, sizeof(long_text));
    assert_true(strlen(long_text) > 2 * LONG_USER_LEN); /* the name twice: nothing was cut */
    assert_null(strstr(long_text, " ... "));
    assert_string_equal(after_grant_of(long_text, user), after_grant_of(short_text, "u"));
    redis_fixture_stop(f);
}

static void test_a_refused_key_of_a_long_named_user_keeps_the_whole_hint(void **state) {
    (void)state;
    test_watchdog_arm(120, __func__);
    long_user_keeps_the_hint(REFUSED_KEY);
}

static void test_a_refused_channel_of_a_long_named_user_keeps_the_whole_hint(void **state) {
    (void)state;
    test_watchdog_arm(120, __func__);
    long_user_keeps_the_hint(REFUSED_CHANNEL);
}

static void test_a_text_too_long_for_any_buffer_loses_its_middle_not_its_end(void **state) {
    (void)state;
    test_watchdog_arm(120, __func__);
    redis_fixture *f = start_server();
    char name[LONG_NAME_LEN + 1], short_text[2048], long_text[4096];
    memset(name, 'n', LONG_NAME_LEN);
    name[LONG_NAME_LEN] = '\0';
    refused_text(f, "u", REFUSED_CHANNEL, "job", short_text, sizeof(short_text));
    refused_text(f, "u", REFUSED_CHANNEL, name, long_text, sizeof(long_text));
    assert_non_null(strstr(long_text, " ... "));
    assert_non_null(strstr(long_text, "denies channel redisson_lock__channel:{nnnnnnnn"));
    assert_true(strlen(long_text) < LONG_NAME_LEN);
    /* the grant does not hold the name (a channel's siblings: the prefix and '*') */
    assert_string_equal(after_grant_of(long_text, "u"), after_grant_of(short_text, "u"));
    assert_memory_equal(long_text, short_text, strlen("the ACL of user 'u'"));
    redis_fixture_stop(f);
}

static void test_a_multilock_members_refusal_keeps_the_whole_hint(void **state) {
    (void)state;
    test_watchdog_arm(120, __func__);
    redis_fixture *f = start_server();
    const char *user = "orders-service"; /* the member's text: 185 bytes */
    char lone[2048];
    refused_text(f, user, REFUSED_KEY, "job", lone, sizeof(lone));
    char url[1024];
    snprintf(url, sizeof(url), "unix://%s?user=%s&password=pw", redis_fixture_socket(f), user);
    dlock_client *c = connect_client_cfg(NULL, (test_client_cfg){.url = url});
    dlock_lock *members[2] = {NULL, NULL}, *ml = NULL;
    ASSERT_RC(dlock_lock_new(c, "job", &members[0]), DLOCK_OK);
    ASSERT_RC(dlock_lock_new(c, "job2", &members[1]), DLOCK_OK);
    ASSERT_RC(dlock_multilock_new(members, 2, &ml), DLOCK_OK);
    ASSERT_RC(dlock_lock_try_acquire(ml, 0, 60000), DLOCK_ENOPERM);
    char text[2048];
    snprintf(text, sizeof(text), "%s", dlock_last_error());
    printf("# %zu bytes: %s\n", strlen(text), text);
    /* the member named, then its whole text: the same grant a lone lock is told */
    assert_non_null(strstr(text, "member job"));
    assert_string_equal(after_grant_of(text, user), after_grant_of(lone, user));
    dlock_lock_free(ml);
    dlock_lock_free(members[0]);
    dlock_lock_free(members[1]);
    dlock_client_free(c);
    redis_fixture_stop(f);
}

/* dlock_client_new's detail for a host name that does not resolve. */
static void unresolvable(const char *host, char *text, size_t size) {
    char url[512];
    snprintf(url, sizeof(url), "redis://%s:6390", host);
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.connect_timeout_ms = 30000; /* the resolver answers long before (valgrind: ~1 s) */
    dlock_client *c = NULL;
    ASSERT_RC(dlock_client_new(&o, &c), DLOCK_ECONN);
    snprintf(text, size, "%s", dlock_last_error());
    printf("# %zu bytes: %s\n", strlen(text), text);
}

static void test_a_host_name_of_251_bytes_is_named_whole_with_the_resolvers_reason(void **state) {
    (void)state;
    test_watchdog_arm(60, __func__);
    /* four labels of 60 bytes and ".invalid" (RFC 6761: never resolves, answered locally) */
    char host[256];
    snprintf(host, sizeof(host), "%.60s.%.60s.%.60s.%.60s.invalid",
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
             "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
             "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc",
             "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd");
    assert_int_equal(strlen(host), 251);
    char short_text[1024], long_text[2048];
    unresolvable("nohost.invalid", short_text, sizeof(short_text));
    unresolvable(host, long_text, sizeof(long_text));
    /* the same words after "cannot resolve <host>", the resolver's reason whole */
    char want[300];
    snprintf(want, sizeof(want), "cannot resolve %s", host);
    const char *at = strstr(long_text, want);
    if (!at)
        fail_msg("\"%s\" lacks \"%s\"", long_text, want);
    const char *short_at = strstr(short_text, "cannot resolve nohost.invalid");
    assert_non_null(short_at);
    assert_string_equal(at + strlen(want), short_at + strlen("cannot resolve nohost.invalid"));
    assert_null(strstr(long_text, " ... "));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_refused_key_of_a_long_named_user_keeps_the_whole_hint),
        cmocka_unit_test(test_a_refused_channel_of_a_long_named_user_keeps_the_whole_hint),
        cmocka_unit_test(test_a_text_too_long_for_any_buffer_loses_its_middle_not_its_end),
        cmocka_unit_test(test_a_host_name_of_251_bytes_is_named_whole_with_the_resolvers_reason),
        cmocka_unit_test(test_a_multilock_members_refusal_keeps_the_whole_hint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
