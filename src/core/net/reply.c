/* SPDX-License-Identifier: MIT */
/* reply.c — reading server replies: the one place where a dlock__reply is hiredis'
 * redisReply, and where the core's reply types are tied to hiredis' numbering.
 *
 * The accessors give a primitive what a reply holds without hiredis' header. The strict
 * readers are for counts kept in a Redis string (a semaphore's permits, a latch's count):
 * only a base-10 64-bit integer, as INCRBY writes and accepts, is a count. Anything else
 * under the name ("abc", "12abc", " 5", "1e3", "007", one past INT64_MAX) is another
 * program's data: reading it as 0 would take a garbage latch for finished or a garbage
 * semaphore for empty, so the caller fails with DLOCK_EREDIS instead (op_error.c words it).
 * The readers own nothing; a reply is valid only inside the callback that received it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "net/net.h"

/* DLOCK__REPLY_* are hiredis' own numbers, so dlock__reply_type() passes the type through;
 * a hiredis that renumbered them would stop the build here instead of every reply. */
_Static_assert(DLOCK__REPLY_STRING == REDIS_REPLY_STRING, "reply type STRING");
_Static_assert(DLOCK__REPLY_ARRAY == REDIS_REPLY_ARRAY, "reply type ARRAY");
_Static_assert(DLOCK__REPLY_INTEGER == REDIS_REPLY_INTEGER, "reply type INTEGER");
_Static_assert(DLOCK__REPLY_NIL == REDIS_REPLY_NIL, "reply type NIL");
_Static_assert(DLOCK__REPLY_STATUS == REDIS_REPLY_STATUS, "reply type STATUS");
_Static_assert(DLOCK__REPLY_ERROR == REDIS_REPLY_ERROR, "reply type ERROR");

/* ---- accessors ------------------------------------------------------------------------- */

int dlock__reply_type(const dlock__reply *r) {
    return r ? r->type : DLOCK__REPLY_NIL;
}

long long dlock__reply_int(const dlock__reply *r) {
    if (!r)
        return 0;
    if (r->type == REDIS_REPLY_INTEGER)
        return r->integer;
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
        return strtoll(r->str, NULL, 10);
    return 0;
}

const char *dlock__reply_str(const dlock__reply *r, size_t *len) {
    if (!r || !(r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
                r->type == REDIS_REPLY_ERROR)) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = r->len;
    return r->str;
}

size_t dlock__reply_count(const dlock__reply *r) {
    return r && r->type == REDIS_REPLY_ARRAY ? r->elements : 0;
}

const dlock__reply *dlock__reply_at(const dlock__reply *r, size_t i) {
    return i < dlock__reply_count(r) ? r->element[i] : NULL;
}

/* ---- strict readers ------------------------------------------------------------------- */

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

static void describe_text(const char *text, char *buf, size_t size, size_t *used) {
    if (*used < size) {
        int n = snprintf(buf + *used, size - *used, "%s", text);
        *used += n > 0 ? (size_t)n : 0;
    }
}

/* One reply in words, appended at buf[*used] (snprintf cuts what does not fit). An array
 * shows its first elements, one level deep: enough to tell {1, "1", "7"} from {1, 1, 7}. */
static void describe(const dlock__reply *r, int depth, char *buf, size_t size, size_t *used) {
    char *at = buf + (*used < size ? *used : size - 1);
    size_t room = *used < size ? size - *used : 1;
    int n;
    if (!r || r->type == REDIS_REPLY_NIL) {
        n = snprintf(at, room, "nothing");
    } else if (r->type == REDIS_REPLY_INTEGER) {
        n = snprintf(at, room, "the integer %lld", r->integer);
    } else if (r->type == REDIS_REPLY_ARRAY) {
        n = snprintf(at, room, "an array of %zu elements", r->elements);
        *used += n > 0 ? (size_t)n : 0;
        if (depth > 0 || r->elements == 0)
            return;
        size_t shown = r->elements < 4 ? r->elements : 4;
        for (size_t i = 0; i < shown; i++) {
            describe_text(i == 0 ? " [" : ", ", buf, size, used);
            describe(r->element[i], depth + 1, buf, size, used);
        }
        describe_text(r->elements > shown ? ", ...]" : "]", buf, size, used);
        return;
    } else if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
               r->type == REDIS_REPLY_ERROR) {
        /* at most 40 bytes of it, so the text stays readable; binary bytes as '?' */
        char shown[41];
        size_t len = r->len < sizeof(shown) - 1 ? r->len : sizeof(shown) - 1;
        for (size_t i = 0; i < len; i++)
            shown[i] = r->str[i] >= 0x20 && r->str[i] < 0x7f ? r->str[i] : '?';
        shown[len] = '\0';
        const char *kind = r->type == REDIS_REPLY_STRING   ? "the string"
                           : r->type == REDIS_REPLY_STATUS ? "the status"
                                                           : "the error";
        n = snprintf(at, room, "%s \"%s\"%s", kind, shown, r->len > len ? "..." : "");
    } else {
        n = snprintf(at, room, "a reply of type %d", r->type);
    }
    *used += n > 0 ? (size_t)n : 0;
}

void dlock__reply_describe(const dlock__reply *r, char *buf, size_t size) {
    if (size == 0)
        return;
    size_t used = 0;
    describe(r, 0, buf, size, &used);
}
