/* SPDX-License-Identifier: MIT */
/* events.c — how the main thread of `dlock run` learns what happened elsewhere (run.h).
 *
 * Signal handlers and the library's callbacks (which run on the library's I/O thread)
 * record what happened in lock-free atomics and write one byte to a self-pipe; the main
 * thread poll()s the pipe, drains it and reads the atomics. Every signal the library's
 * I/O thread could receive is blocked there by the library, so handlers run on the main
 * thread or are deferred to it. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

static int wake_pipe[2] = {-1, -1};

/* The terminating signals we catch, with what arrived of each. */
static const int caught[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define NCAUGHT (sizeof(caught) / sizeof(caught[0]))
static atomic_int pending[NCAUGHT];
static atomic_int pending_from_terminal[NCAUGHT];
static atomic_int child_changed;

void events_wake(void) {
    int saved = errno;
    if (wake_pipe[1] >= 0) {
        ssize_t n = write(wake_pipe[1], "", 1);
        (void)n; /* EAGAIN: the pipe is full, so a wake-up is pending anyway */
    }
    errno = saved;
}

static void on_signal(int sig, siginfo_t *info, void *uctx) {
    (void)uctx;
    if (sig == SIGCHLD) {
        atomic_store(&child_changed, 1);
    } else {
        for (size_t i = 0; i < NCAUGHT; i++) {
            if (caught[i] == sig) {
                atomic_store(&pending_from_terminal[i], info && info->si_code == SI_KERNEL);
                atomic_store(&pending[i], 1);
            }
        }
    }
    events_wake();
}

int events_open(void) {
    if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        return -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NCAUGHT; i++)
        if (sigaction(caught[i], &sa, NULL) != 0)
            return -1;
    sa.sa_flags |= SA_NOCLDSTOP;
    return sigaction(SIGCHLD, &sa, NULL);
}

void events_wait(int64_t timeout_ms) {
    struct pollfd p = {.fd = wake_pipe[0], .events = POLLIN};
    int timeout = timeout_ms < 0 ? -1 : timeout_ms > 1000000 ? 1000000 : (int)timeout_ms;
    if (poll(&p, 1, timeout) > 0) {
        char buf[64];
        while (read(wake_pipe[0], buf, sizeof(buf)) > 0)
            ;
    }
}

int events_take_signal(bool *from_terminal) {
    for (size_t i = 0; i < NCAUGHT; i++) {
        if (atomic_exchange(&pending[i], 0)) {
            if (from_terminal)
                *from_terminal = atomic_load(&pending_from_terminal[i]);
            return caught[i];
        }
    }
    return 0;
}

bool events_take_child(void) {
    return atomic_exchange(&child_changed, 0) != 0;
}
