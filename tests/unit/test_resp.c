/* SPDX-License-Identifier: MIT */
/* test_resp.c — dlock__resp_command_len and dlock__resp_command_put (src/core/net/resp.c)
 * write what hiredis's redisFormatCommandArgv writes, byte for byte, and exactly the
 * length they announce: no argument, empty arguments, binary ones (CR, LF, NUL), lengths
 * and argument counts at every number of digits, and 2,000 pseudo-random commands. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "net/net.h"

#define GUARD 16 /* bytes past the announced length that must stay untouched */

static void expect_as_hiredis(int argc, const char **argv, const size_t *lens) {
    char *want = NULL;
    long long want_len = redisFormatCommandArgv(&want, argc, argv, lens);
    assert_true(want_len >= 0);
    size_t len = dlock__resp_command_len(argc, lens);
    assert_int_equal(len, (size_t)want_len);
    char *got = malloc(len + GUARD);
    assert_non_null(got);
    memset(got, 0x5a, len + GUARD);
    dlock__resp_command_put(got, argc, argv, lens);
    if (memcmp(got, want, len) != 0)
        fail_msg("argc %d: the command differs from hiredis's (%zu bytes)", argc, len);
    for (size_t i = len; i < len + GUARD; i++)
        assert_int_equal((unsigned char)got[i], 0x5a);
    free(got);
    redisFreeCommand(want);
}

static void test_plain_commands(void **state) {
    (void)state;
    const char *ping[] = {"PING"};
    size_t ping_lens[] = {4};
    expect_as_hiredis(1, ping, ping_lens);
    const char *evalsha[] = {"EVALSHA",
                             "d63e22e04665fb0f792e1074436225519ee775d4",
                             "2",
                             "lock",
                             "{lock}:handoff",
                             "30000",
                             "0123456789abcdef:1",
                             "0"};
    size_t lens[8];
    for (int i = 0; i < 8; i++)
        lens[i] = strlen(evalsha[i]);
    expect_as_hiredis(8, evalsha, lens);
}

static void test_no_argument_and_empty_ones(void **state) {
    (void)state;
    expect_as_hiredis(0, NULL, NULL);
    const char *empty[] = {"SET", "", ""};
    size_t lens[] = {3, 0, 0};
    expect_as_hiredis(3, empty, lens);
}

static void test_binary_arguments(void **state) {
    (void)state;
    const char bytes[] = {'a', '\r', '\n', '\0', '$', '*', '\n', '\r', 'z'};
    const char *argv[] = {"SET", "k", bytes};
    size_t lens[] = {3, 1, sizeof(bytes)};
    expect_as_hiredis(3, argv, lens);
}

/* a length and an argument count of each number of digits, and their neighbours */
static void test_every_number_of_digits(void **state) {
    (void)state;
    static char big[1000001];
    memset(big, 'x', sizeof(big));
    for (size_t p = 1; p <= 1000000; p *= 10) {
        for (size_t n = p - 1; n <= p + 1; n++) {
            const char *argv[] = {"SET", big};
            size_t lens[] = {3, n};
            expect_as_hiredis(2, argv, lens);
        }
    }
    const char *many[1001];
    size_t lens[1001];
    for (int i = 0; i < 1001; i++) {
        many[i] = big;
        lens[i] = (size_t)i % 13;
    }
    for (int argc = 9; argc <= 1001; argc = argc < 12 ? argc + 1 : argc * 10 - 1)
        expect_as_hiredis(argc, many, lens);
}

static void test_random_commands(void **state) {
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15u; /* xorshift64: the same commands in every run */
    static char pool[70000];
    for (size_t i = 0; i < sizeof(pool); i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        pool[i] = (char)(x & 0xff);
    }
    const char *argv[40];
    size_t lens[40];
    for (int round = 0; round < 2000; round++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int argc = (int)(x % 40);
        for (int i = 0; i < argc; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            lens[i] = (size_t)(x % (i % 5 == 4 ? 65536 : 200));
            argv[i] = pool + (x >> 20) % (sizeof(pool) - lens[i]);
        }
        expect_as_hiredis(argc, argv, lens);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_commands),   cmocka_unit_test(test_no_argument_and_empty_ones),
        cmocka_unit_test(test_binary_arguments), cmocka_unit_test(test_every_number_of_digits),
        cmocka_unit_test(test_random_commands),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
