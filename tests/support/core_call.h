/* SPDX-License-Identifier: MIT */
/* core_call.h — run a command through a dlock client's own command connection, from a
 * test thread, and keep a copy of the reply. Integration tests use it to drive the core
 * below the public API (the command queue, scripts, reconnects) without a primitive. */
#ifndef DLOCK_TEST_CORE_CALL_H
#define DLOCK_TEST_CORE_CALL_H

#include <stdbool.h>
#include <stddef.h>

#include "dlock_int.h"
#include "test_util.h"

typedef struct core_reply {
    int status;        /* DLOCK_OK or the DLOCK_E* the core reported */
    int type;          /* DLOCK__REPLY_* (0 when there is no reply) */
    long long integer; /* INTEGER replies */
    char *str;         /* STRING / STATUS / ERROR text, NUL-terminated copy */
    size_t len;
    size_t count;             /* ARRAY */
    struct core_reply *elems; /* ARRAY elements */
} core_reply;

/* Blocking: queue argv (NULL-terminated list of C strings) with flags and wait for it. */
core_reply *core_call(dlock_client *c, unsigned flags, const char *const *argv);
/* Blocking: run a library script with nkeys keys then args (NULL-terminated). */
core_reply *core_script(dlock_client *c, enum dlock__script_id id, unsigned flags, int nkeys,
                        const char *const *args);
void core_reply_free(core_reply *r);

/* Runs fn(c, arg) on c's loop thread and waits for it (a test's way to call the core's
 * loop-thread-only functions: dlock__listen, dlock__wait_start_on, dlock__lease_new ...). */
typedef void (*loop_fn)(dlock_client *c, void *arg);
void on_loop(dlock_client *c, loop_fn fn, void *arg);

/* test_slack_ms (test_util.h) widens an upper bound of a timing claim. */

/* Polls cond every 2 ms until it holds or timeout_ms passed; ok says which. */
#define POLL_UNTIL(ok, cond, timeout_ms)                                                           \
    do {                                                                                           \
        int64_t until_ = test_now_ms() + (timeout_ms);                                             \
        for (;;) {                                                                                 \
            if (cond) {                                                                            \
                (ok) = true;                                                                       \
                break;                                                                             \
            }                                                                                      \
            if (test_now_ms() >= until_) {                                                         \
                (ok) = (cond);                                                                     \
                break;                                                                             \
            }                                                                                      \
            test_sleep_ms(2);                                                                      \
        }                                                                                          \
    } while (0)

#endif
