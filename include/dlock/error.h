/* SPDX-License-Identifier: MIT */
/* dlock/error.h — error codes.
 *
 * Every dlock call that can fail returns int: DLOCK_OK (0) or one of the negative codes
 * below. The codes are never renumbered; new ones are added at the end of the list. What
 * each code means wherever it appears, and the one form in which every function's comment
 * lists its codes ("Returns: ..."), are in dlock.h. */
#ifndef DLOCK_ERROR_H
#define DLOCK_ERROR_H

#include "dlock/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, text): the one list the enum, dlock_strerror() and dlock_err_name()
 * are made from. */
#define DLOCK_ERRNO_MAP(X)                                                                         \
    X(EINVAL, -1, "invalid argument")                                                              \
    X(ENOMEM, -2, "out of memory")                                                                 \
    X(ETIMEDOUT, -3, "timed out waiting for lock")                                                 \
    X(ENOTOWNER, -4, "not held by this owner")                                                     \
    X(ELOST, -5, "lease was lost while held")                                                      \
    X(ECONN, -6, "Redis connection failed")                                                        \
    X(EAUTH, -7, "Redis refused the credentials")                                                  \
    X(EREDIS, -8, "Redis replied with an error")                                                   \
    X(ECANCELED, -9, "operation canceled")                                                         \
    X(ECLOSED, -10, "client or handle is closed")                                                  \
    X(EBUSY, -11, "object is busy")                                                                \
    X(EDEADLK, -12, "blocking call on the client's loop thread")                                   \
    X(ENOPERM, -13, "Redis ACL denies this user a command, key or channel")                        \
    X(ENOSPC, -14, "buffer too small")

typedef enum dlock_errno {
    DLOCK_OK = 0,
#define DLOCK_ERRNO_ENUM_(name, value, text) DLOCK_##name = (value),
    DLOCK_ERRNO_MAP(DLOCK_ERRNO_ENUM_)
#undef DLOCK_ERRNO_ENUM_
} dlock_errno;

/* A short English text for err, e.g. "timed out waiting for lock". No I/O; safe from any
 * thread.
 *
 * Returns: the text, in static storage, never NULL ("unknown error" for a code that is not
 * in the list). */
DLOCK_EXTERN const char *dlock_strerror(int err);

/* The code's name, e.g. "DLOCK_ETIMEDOUT". No I/O; safe from any thread.
 *
 * Returns: the name, in static storage, never NULL ("DLOCK_OK" for 0, "DLOCK_UNKNOWN" for a
 * code that is not in the list). */
DLOCK_EXTERN const char *dlock_err_name(int err);

/* Detail of the calling thread's most recent failed dlock call: the server's error text
 * for DLOCK_EREDIS ("WRONGTYPE Operation against a key ..."), what was wrong for
 * DLOCK_EINVAL ("bad URL: port out of range"), and so on. On the async face the detail of
 * a failure reported to a callback is readable from inside that callback. Safe from any
 * thread: each thread has its own text.
 *
 * Returns: the text, never NULL ("" when the thread has no failure yet); it belongs to the
 * thread and stays valid until the thread's next dlock call. */
DLOCK_EXTERN const char *dlock_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
