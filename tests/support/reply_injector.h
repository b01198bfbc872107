/* SPDX-License-Identifier: MIT */
/* reply_injector.h - a loopback TCP proxy in front of a real redis-server that sends the
 * client bytes the server never sent: a reply after a real one (unsolicited), a reply in
 * place of the server's, a push of the wrong shape, garbage. It is how "never trust a
 * reply" is tested: what a buggy proxy or anyone on the path could send.
 *
 * The proxy listens on a free 127.0.0.1 port and runs one thread (a poll loop). Every
 * connection it accepts gets its own connection to the target (a unix socket path). It
 * reads RESP both ways: requests (arrays of bulk strings) are forwarded as they come and
 * remembered in order; replies are forwarded whole, each matched to the oldest request not
 * yet answered (pub/sub messages answer none). A rule is armed for the next request whose
 * bytes contain `pattern` (case-insensitive) on any connection, and fires once:
 *   - after:   the server's reply to that request is forwarded, then `bytes`;
 *   - replace: `bytes` is sent instead of the server's reply to it.
 * Arming replaces a rule that has not fired yet. reply_injector_replace_every arms a replace
 * that never disarms: every matching request gets `bytes` (a client that asks again, as a
 * Sentinel client does within its connect timeout, hears the same answer). Thread safety: every
 * call from any thread; reply_injector_stop must not race with the others. SIGPIPE is never raised.
 */
#ifndef DLOCK_TEST_REPLY_INJECTOR_H
#define DLOCK_TEST_REPLY_INJECTOR_H

#include <stddef.h>

typedef struct reply_injector reply_injector;

/* Starts a proxy to the unix socket at path. 0 and the proxy in *out, or -1 with a message
 * on stderr (leaving *out untouched). */
int reply_injector_start(const char *unix_path, reply_injector **out);
/* Closes every connection, joins the thread, frees. NULL: no-op. */
void reply_injector_stop(reply_injector *p);

/* "redis://127.0.0.1:PORT", owned by p. */
const char *reply_injector_url(const reply_injector *p);

/* Arms a rule (see above); bytes are copied. */
void reply_injector_after(reply_injector *p, const char *pattern, const char *bytes, size_t len);
void reply_injector_replace(reply_injector *p, const char *pattern, const char *bytes, size_t len);
void reply_injector_replace_every(reply_injector *p, const char *pattern, const char *bytes,
                                  size_t len);

/* How many rules have fired since start. */
int reply_injector_fired(reply_injector *p);
/* How many client connections were accepted since start (a reconnect makes one more). */
int reply_injector_accepted(reply_injector *p);

#endif /* DLOCK_TEST_REPLY_INJECTOR_H */
