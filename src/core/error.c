/* SPDX-License-Identifier: MIT */
/* error.c — error names and texts (from the one list in dlock/error.h), the per-thread
 * detail behind dlock_last_error(), and the clock the core reads. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

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
    default:
        return "DLOCK_UNKNOWN";
    }
}

static _Thread_local char last_error[256];

const char *dlock_last_error(void) {
    return last_error;
}

void dlock__set_last_error(const char *text) {
    snprintf(last_error, sizeof(last_error), "%s", text ? text : "");
}

int dlock__fail(int err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
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
