/* SPDX-License-Identifier: MIT */
/* log.c — the client's log line: formatted here, handed to the application's log_cb.
 *
 * A leaf of the core: every layer may log, so this file calls nothing of the core. It
 * reads only the two log fields of the client's options, and costs nothing (no
 * formatting) when the application set no log_cb. A line never carries a password: the
 * callers describe endpoints with dlock__endpoint_describe or dlock__url_masked. */
#include <stdarg.h>
#include <stdio.h>

#include "base/base.h"

void dlock__log(dlock_client *c, int level, const char *fmt, ...) {
    if (!DLOCK__BASE(c)->opts.log_cb)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    DLOCK__BASE(c)->opts.log_cb(level, msg, DLOCK__BASE(c)->opts.log_arg);
}
