/* reply.c — reading numbers out of server replies, strictly.
 *
 * A count kept in a Redis string (a semaphore's permits, a latch's count) is only a count
 * if it is a base-10 64-bit integer, as INCRBY writes and accepts. Anything else under the
 * name ("abc", "12abc", " 5", "1e3", "007", one past INT64_MAX) is another program's data: reading
 * it as 0 would take a garbage latch for finished or a garbage semaphore for empty. So a
 * primitive reads its counts here, and a value that is not an integer fails its call with
 * DLOCK_EREDIS and a text naming the key and what it holds. The readers own nothing; a
 * reply is valid only inside the callback that received it. */
#include <stdio.h>
#include <string.h>

#include "core.h"

/* s[0..len) is entirely a base-10 int64 as Redis writes one and INCRBY takes: an optional
 * '-', then digits without a leading zero ("0" alone), nothing else. */
static bool parse_int64(const char *s, size_t len, int64_t *out) {
    size_t i = 0;
    bool negative = len > 0 && s[0] == '-';
    if (negative)
        i = 1;
    if (i == len || (s[i] == '0' && (len - i > 1 || negative)))
        return false; /* empty, "-", "007", "-0" */
    /* accumulate as a negative number: its range holds INT64_MIN */
    int64_t value = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        int digit = s[i] - '0';
        if (value < (INT64_MIN + digit) / 10)
            return false;
        value = value * 10 - digit;
    }
    if (!negative && value == INT64_MIN)
        return false;
    *out = negative ? value : -value;
    return true;
}

int dlock__reply_int64(const dlock__reply *r, int64_t *out) {
    if (r && r->type == REDIS_REPLY_INTEGER) {
        *out = r->integer;
        return DLOCK_OK;
    }
    int64_t value;
    if (r && r->type == REDIS_REPLY_STRING && parse_int64(r->str, r->len, &value)) {
        *out = value;
        return DLOCK_OK;
    }
    return DLOCK_EREDIS;
}

int dlock__reply_int64_at(const dlock__reply *r, size_t i, int64_t *out) {
    if (!r || r->type != REDIS_REPLY_ARRAY || i >= r->elements)
        return DLOCK_EREDIS;
    return dlock__reply_int64(r->element[i], out);
}

void dlock__reply_describe(const dlock__reply *r, char *buf, size_t size) {
    if (!r || r->type == REDIS_REPLY_NIL) {
        snprintf(buf, size, "nothing");
        return;
    }
    switch (r->type) {
    case REDIS_REPLY_INTEGER:
        snprintf(buf, size, "the integer %lld", r->integer);
        return;
    case REDIS_REPLY_ARRAY:
        snprintf(buf, size, "an array of %zu elements", r->elements);
        return;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR: {
        /* at most 40 bytes of it, so the text stays readable; binary bytes as '?' */
        char shown[41];
        size_t n = r->len < sizeof(shown) - 1 ? r->len : sizeof(shown) - 1;
        for (size_t i = 0; i < n; i++)
            shown[i] = r->str[i] >= 0x20 && r->str[i] < 0x7f ? r->str[i] : '?';
        shown[n] = '\0';
        const char *kind = r->type == REDIS_REPLY_STRING ? "the string"
                           : r->type == REDIS_REPLY_STATUS ? "the status"
                                                           : "the error";
        snprintf(buf, size, "%s \"%s\"%s", kind, shown, r->len > n ? "..." : "");
        return;
    }
    default:
        snprintf(buf, size, "a reply of type %d", r->type);
    }
}

int dlock__op_read_count(dlock__op *op, const dlock__reply *r, bool nil_is_zero,
                         const char *what, const char *key, int64_t *out) {
    if (nil_is_zero && dlock__reply_type(r) == DLOCK__REPLY_NIL) {
        *out = 0;
        return DLOCK_OK;
    }
    if (dlock__reply_int64(r, out) == DLOCK_OK)
        return DLOCK_OK;
    char held[64];
    dlock__reply_describe(r, held, sizeof(held));
    return dlock__op_fail(op, DLOCK_EREDIS, "%s %s holds %s, not an integer count", what, key,
                          held);
}

int dlock__op_bad_reply(dlock__op *op, const dlock__reply *r, const char *what,
                        const char *key) {
    char got[64];
    dlock__reply_describe(r, got, sizeof(got));
    return dlock__op_fail(op, DLOCK_EREDIS, "%s %s: unexpected reply from Redis: %s", what, key,
                          got);
}
