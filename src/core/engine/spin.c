/* SPDX-License-Identifier: MIT */
/* spin.c — the lone caller's spin: a blocking call alone on its client, which waits for its
 * reply on the socket itself (submit.c, read_own_reply; loop.h, "the lone caller"), polls
 * for it without sleeping for up to dlock_options.reply_spin_us before it sleeps in poll.
 *
 * Why: a round trip to a nearby Redis takes tens of microseconds, about what it costs a
 * CPU to go idle and be woken again — on both ends. A caller that sleeps for its reply
 * pays its own wake-up; and the server, whose client is slow to send the next command,
 * goes idle and pays one too. A caller that is awake when its reply arrives sends its next
 * command sooner and finds the server still awake. docs/benchmarks.md has the figures
 * (uncontended pairs from one thread, with and without the spin).
 *
 * What it costs is the caller's CPU while it spins, at most the budget per reply, and it
 * is bounded three ways so that it costs little where it does not pay:
 *   - one caller per client spins at a time: only the lone caller reads its own reply;
 *   - no more callers of the process spin at once than the CPUs it may keep busy (its
 *     affinity, within its cgroup's CPU quota: base/cpus.c): a spinner must not take the
 *     CPU from the thread its reply or another caller's needs, nor spend a container's
 *     quota; a process limited to less than one CPU does not spin;
 *   - a spin that ends without its reply (a server farther away than the budget, a slow
 *     script, a busy machine) makes the next wait sleep at once, then the next 2, 4 ...
 *     DLOCK__SPIN_BACKOFF_MAX after further misses in a row; one that ends with its reply
 *     sets that back. A client whose replies never come within the budget thus spins once
 *     in DLOCK__SPIN_BACKOFF_MAX + 1 waits. A spin whose yield let another thread run is a
 *     miss too: the CPU is wanted. (8 clients' threads on one CPU lost about 10 % of their
 *     pairs/s to such spins while the backoff stopped at 64 waits; at 1,024, nothing that
 *     stands out of the noise: docs/benchmarks.md.)
 * Spinning is poll() with a zero timeout on the same descriptors (the socket, and the bell
 * that says someone else needs it), yielding between polls, so the spin ends exactly when
 * the sleeping poll would have returned.
 *
 * A client keeps two policies, each with its own backoff: one for the replies the server
 * sends at once, one for the answer of a WAIT (submit.c picks by the reply due next), which
 * comes a replica's round trip later. Whether that round trip fits the budget is another
 * question — a replica across a network misses every time where the server's replies hit —
 * and one policy would let the answer's misses stop the spin for the server's replies. On
 * this 2-CPU machine, an acknowledged pair from one thread spun for both went from
 * 5.6-7.1k to 8.3-9.8k pairs/s (docs/benchmarks.md). */
#include <sched.h>

#include "engine/engine.h"

void dlock__spin_init(dlock__spin *s, int64_t budget_us) {
    s->budget_us = budget_us;
    s->skip = 0;
    s->backoff = 0;
}

int64_t dlock__spin_due(dlock__spin *s) {
    if (s->budget_us <= 0)
        return 0;
    if (s->skip > 0) {
        s->skip--;
        return 0;
    }
    return s->budget_us;
}

void dlock__spin_ended(dlock__spin *s, bool replied) {
    if (replied) {
        s->backoff = 0;
        return;
    }
    s->backoff = s->backoff == 0 ? 1 : s->backoff * 2;
    if (s->backoff > DLOCK__SPIN_BACKOFF_MAX)
        s->backoff = DLOCK__SPIN_BACKOFF_MAX;
    s->skip = s->backoff;
}

/* ---- one spinner per CPU ----------------------------------------------------------------- */

static _Atomic int spinners;
static _Atomic int spinner_cap = -1; /* dlock__cpus_of_this_process(); -1: not counted yet */

bool dlock__spinner_enter(void) {
    int cap = atomic_load(&spinner_cap);
    if (cap < 0) { /* counted once; two threads counting at once count alike */
        cap = dlock__cpus_of_this_process();
        atomic_store(&spinner_cap, cap);
    }
    if (atomic_fetch_add(&spinners, 1) < cap)
        return true;
    atomic_fetch_sub(&spinners, 1);
    return false;
}

void dlock__spinner_leave(void) {
    atomic_fetch_sub(&spinners, 1);
}

/* ---- the wait ---------------------------------------------------------------------------- */

int dlock__spin_poll(dlock__spin *s, struct pollfd *fds, nfds_t n, dlock__spin_outcome *out) {
    *out = (dlock__spin_outcome){0};
    int64_t budget = dlock__spin_due(s);
    if (budget <= 0)
        return poll(fds, n, -1);
    /* A reply there already (the caller came late: a busy CPU) needs no spin, and says
     * nothing of whether spinning pays: no hit, no miss. */
    int ready = poll(fds, n, 0);
    if (ready != 0)
        return ready;
    if (!dlock__spinner_enter())
        return poll(fds, n, -1);
    /* A turn that took long let another thread run (the yield gave it the CPU): the CPU is
     * wanted, so the spin stops and counts as a miss, whatever the poll then says; the time
     * it spun ends with the turn before. */
    int64_t start = dlock__now_us(), before = start, now = start;
    bool gave_way = false;
    for (;;) {
        sched_yield();
        now = dlock__now_us();
        gave_way = now - before > DLOCK__SPIN_GAVE_WAY_US;
        if ((ready = poll(fds, n, 0)) != 0) {
            out->hit = ready > 0 && !gave_way;
            break;
        }
        if (gave_way || now - start >= budget)
            break;
        before = now;
    }
    dlock__spinner_leave();
    out->spun = true;
    out->spun_us = (gave_way ? before : now) - start;
    dlock__spin_ended(s, out->hit);
    if (ready != 0)
        return ready; /* the reply, the bell, or an error (EINTR: the caller polls again) */
    return poll(fds, n, -1);
}
