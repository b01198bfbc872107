/* SPDX-License-Identifier: MIT */
/* error.c — error names and texts (from the one list in dlock/error.h), the per-thread
 * detail behind dlock_last_error(), the one way a detail too long for its buffer is cut (its
 * middle, at word boundaries: the hint a text ends with survives), and the clock the core
 * reads. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dlock/lock.h" /* DLOCK_LOST_MAX_HOLD, a lost callback's reason */
#include "dlock/version.h"
#include "dlock_int.h"

const char *dlock_strerror(int err) {
    switch (err) {
    case DLOCK_OK:
        return "success";
#define DLOCK_ERRNO_TEXT_(name, value, text)                                                       \
    case DLOCK_##name:                                                                             \
        return text;
        DLOCK_ERRNO_MAP(DLOCK_ERRNO_TEXT_)
#undef DLOCK_ERRNO_TEXT_
    case DLOCK_LOST_MAX_HOLD:
        return "the hold reached its max_hold_ms bound and its lease ran out";
    default:
        return "unknown error";
    }
}

const char *dlock_err_name(int err) {
    switch (err) {
    case DLOCK_OK:
        return "DLOCK_OK";
#define DLOCK_ERRNO_NAME_(name, value, text)                                                       \
    case DLOCK_##name:                                                                             \
        return "DLOCK_" #name;
        DLOCK_ERRNO_MAP(DLOCK_ERRNO_NAME_)
#undef DLOCK_ERRNO_NAME_
    case DLOCK_LOST_MAX_HOLD:
        return "DLOCK_LOST_MAX_HOLD";
    default:
        return "DLOCK_UNKNOWN";
    }
}

/* ---- texts that do not fit ------------------------------------------------------------- */

/* How far a cut looks for a space: at most WORD_MAX bytes and a quarter of the part it
 * keeps. A longer word (a 4000-byte object name) is cut inside, so that its start still
 * shows, rather than dropped whole. */
#define WORD_MAX 64

static size_t reach_of(size_t part) {
    return part / 4 < WORD_MAX ? part / 4 : WORD_MAX;
}

/* Where a cut at or before `at` lands: just before the last space within `reach` bytes (the
 * cut drops it), or, in a longer word, the start of the UTF-8 character at `at`. */
static size_t cut_back(const char *text, size_t at, size_t reach) {
    for (size_t i = at; i > 0 && at - i < reach; i--)
        if (text[i - 1] == ' ')
            return i - 1;
    while (at > 0 && ((unsigned char)text[at] & 0xC0) == 0x80)
        at--;
    return at;
}

/* The same, forward: just past the first space within `reach` bytes, or the next
 * character's start. */
static size_t cut_forward(const char *text, size_t at, size_t len, size_t reach) {
    for (size_t i = at; i < len && i - at < reach; i++)
        if (text[i] == ' ')
            return i + 1;
    while (at < len && ((unsigned char)text[at] & 0xC0) == 0x80)
        at++;
    return at;
}

void dlock__text_fit(char *buf, size_t size, const char *text) {
    static const char gap[] = " ... ";
    size_t len = strlen(text);
    if (size == 0)
        return;
    if (len < size || size < sizeof(gap) + 2) {
        snprintf(buf, size, "%s", text);
        return;
    }
    size_t keep = size - sizeof(gap); /* bytes of text kept, head and tail together */
    size_t head = cut_back(text, keep / 2, reach_of(keep / 2));
    size_t tail = cut_forward(text, len - (keep - keep / 2), len, reach_of(keep - keep / 2));
    memmove(buf, text, head);
    memcpy(buf + head, gap, sizeof(gap) - 1);
    memmove(buf + head + sizeof(gap) - 1, text + tail, len - tail + 1);
}

void dlock__vformat_fit(char *buf, size_t size, const char *fmt, va_list ap) {
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(buf, size, fmt, ap);
    if (n >= 0 && (size_t)n >= size) {
        char *whole = dlock__malloc((size_t)n + 1);
        if (whole) {
            vsnprintf(whole, (size_t)n + 1, fmt, again);
            dlock__text_fit(buf, size, whole);
            dlock__free(whole);
        }
    }
    va_end(again);
}

void dlock__format_fit(char *buf, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    dlock__vformat_fit(buf, size, fmt, ap);
    va_end(ap);
}

/* ---- the calling thread's detail -------------------------------------------------------- */

static _Thread_local char last_error[DLOCK__ERROR_TEXT_SIZE];

const char *dlock_last_error(void) {
    return last_error;
}

void dlock__set_last_error(const char *text) {
    dlock__text_fit(last_error, sizeof(last_error), text ? text : "");
}

int dlock__fail(int err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    dlock__vformat_fit(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return err;
}

int64_t dlock__now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t dlock__now_ms(void) {
    return dlock__now_us() / 1000;
}

const char *dlock_version_string(void) {
    return DLOCK_VERSION_STRING;
}

unsigned dlock_version_hex(void) {
    return DLOCK_VERSION_HEX;
}
