/* SPDX-License-Identifier: MIT */
/* test_decimal.c — dlock__decimal and dlock__decimal_u64 write what snprintf's "%lld" and
 * "%" PRIu64 write, at the edges (0, -1, the extremes, each power of ten and its
 * neighbours) and for 200,000 pseudo-random values of every magnitude (test_owner.c checks
 * the owner fields built with them). */
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "dlock_int.h"

static void expect_signed(long long v) {
    char want[32], got[DLOCK__DECIMAL_MAX + 8];
    memset(got, 'x', sizeof(got));
    int n = snprintf(want, sizeof(want), "%lld", v);
    size_t len = dlock__decimal(got, v);
    if (len != (size_t)n || strcmp(got, want) != 0)
        fail_msg("dlock__decimal(%s) wrote \"%.*s\" (%zu bytes)", want, (int)len, got, len);
    assert_true(len < DLOCK__DECIMAL_MAX);
}

static void expect_unsigned(uint64_t v) {
    char want[32], got[DLOCK__DECIMAL_MAX + 8];
    memset(got, 'x', sizeof(got));
    int n = snprintf(want, sizeof(want), "%" PRIu64, v);
    size_t len = dlock__decimal_u64(got, v);
    if (len != (size_t)n || strcmp(got, want) != 0)
        fail_msg("dlock__decimal_u64(%s) wrote \"%.*s\" (%zu bytes)", want, (int)len, got, len);
    assert_true(len < DLOCK__DECIMAL_MAX);
}

static void test_the_edges_read_as_printf_writes_them(void **state) {
    (void)state;
    long long edges[] = {
        0, 1, -1, 9, -9, 10, -10, LLONG_MAX, LLONG_MIN, LLONG_MAX - 1, LLONG_MIN + 1};
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
        expect_signed(edges[i]);
    expect_unsigned(0);
    expect_unsigned(UINT64_MAX);
    expect_unsigned(UINT64_MAX - 1);
    uint64_t p = 1;
    for (int i = 0; i < 20; i++, p *= 10) {
        expect_unsigned(p - 1);
        expect_unsigned(p);
        expect_unsigned(p + 1);
        if (p <= (uint64_t)LLONG_MAX) {
            expect_signed((long long)p);
            expect_signed(-(long long)p);
            expect_signed((long long)p - 1);
            expect_signed(1 - (long long)p);
        }
    }
}

static void test_200000_values_of_every_magnitude(void **state) {
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15u; /* xorshift64: the same values every run */
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t v = x >> (x % 64); /* every number of digits, not only 19-20 */
        expect_unsigned(v);
        expect_signed((long long)v);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_edges_read_as_printf_writes_them),
        cmocka_unit_test(test_200000_values_of_every_magnitude),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
