/* SPDX-License-Identifier: MIT */
/* decimal.c — integers as the decimal text Redis reads, without printf.
 *
 * Every command dlock sends carries numbers (a lease, a hold count, EVALSHA's key count, a
 * WAIT's timeout) and every hold an owner field; formatted through snprintf, whose format
 * parsing and stream set-up cost about 3 % of the client's CPU per uncontended pair (perf,
 * bench/dlock-bench --only uncontended_pair, T = 1). The digits are written backwards into
 * a small buffer and copied out once. */
#include <string.h>

#include "base/base.h"

size_t dlock__decimal_u64(char *buf, uint64_t v) {
    char digits[20]; /* 2^64 - 1 has 20 */
    size_t n = 0;
    do {
        digits[sizeof(digits) - ++n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    memcpy(buf, digits + sizeof(digits) - n, n);
    buf[n] = '\0';
    return n;
}

size_t dlock__decimal(char *buf, long long v) {
    if (v >= 0)
        return dlock__decimal_u64(buf, (uint64_t)v);
    buf[0] = '-';
    /* -(v + 1) + 1: the magnitude of LLONG_MIN, which has no positive long long */
    return 1 + dlock__decimal_u64(buf + 1, (uint64_t)(-(v + 1)) + 1);
}
