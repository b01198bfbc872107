/* SPDX-License-Identifier: MIT */
/* dlock/adapters/libev.h — the async face: a client on the application's libev loop.
 *
 * Include this header (it includes <ev.h>) only where the application owns a libev loop.
 * The client then registers its watchers on that loop and never runs a thread of its
 * own; the application runs the loop. */
#ifndef DLOCK_ADAPTERS_LIBEV_H
#define DLOCK_ADAPTERS_LIBEV_H

#include <ev.h>

#include "dlock/client.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates a client on loop, the application's libev loop (the async face). Call it from
 * the thread that runs loop: that thread becomes the client's loop thread, where every
 * async call must be made and every callback runs. It does no I/O: it returns at once, the
 * connection is made in the background, and calls started before it is ready wait for it
 * (and fail with DLOCK_ECONN, DLOCK_EAUTH or DLOCK_ENOPERM if it cannot be made in time).
 * Blocking calls made on the loop thread return DLOCK_EDEADLK; from other threads they
 * work while the application runs the loop. *out is written only on success; the caller
 * owns the client and frees it with dlock_client_free() on the loop thread.
 *
 * No write of dlock raises SIGPIPE: plain connections send with MSG_NOSIGNAL, and TLS
 * (rediss://) goes through a socket BIO that does too. The application need not ignore
 * SIGPIPE for dlock.
 *
 * Returns: DLOCK_OK; DLOCK_EINVAL (NULL loop or out, a bad option or URL, o->size not set,
 *   a TLS file that cannot be read); DLOCK_ENOMEM. */
DLOCK_EXTERN int dlock_client_new_on_loop(const dlock_options *o, struct ev_loop *loop,
                                          dlock_client **out);

#ifdef __cplusplus
}
#endif

#endif
