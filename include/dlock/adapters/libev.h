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

/* Creates a client on loop. Call it from the thread that runs loop: that thread becomes
 * the client's loop thread, where every async call must be made and every callback runs.
 * Returns at once (DLOCK_OK, or DLOCK_EINVAL/DLOCK_ENOMEM before any I/O); the
 * connection is made in the background and operations started before it is ready wait
 * for it (and fail with DLOCK_ECONN if it cannot be made in time). Blocking calls made
 * on the loop thread return DLOCK_EDEADLK; from other threads they work while the
 * application runs the loop. Free with dlock_client_free() on the loop thread.
 *
 * hiredis writes with plain write(): when Redis closes a connection, the next write raises
 * SIGPIPE on the loop thread. Ignore SIGPIPE (signal(SIGPIPE, SIG_IGN)) or block it on
 * that thread, as for any program that writes to sockets; the blocking face does this
 * for its own I/O thread. */
DLOCK_EXTERN int dlock_client_new_on_loop(const dlock_options *o, struct ev_loop *loop,
                                          dlock_client **out);

#ifdef __cplusplus
}
#endif

#endif
