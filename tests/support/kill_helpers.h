/* SPDX-License-Identifier: MIT */
/* kill_helpers.h — the helpers of the kill tests (tests/fault/test_kill_*.c), written once:
 * a lock of any kind the scenarios run against (plain, fair, read-write), reading a child's
 * report from a pipe within a bound, and forked children of the running test, killed by
 * the teardown kill_children if the test failed with them alive. Included by those test
 * files only; everything here is static. */
#ifndef DLOCK_TEST_KILL_HELPERS_H
#define DLOCK_TEST_KILL_HELPERS_H

#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "checker.h"
#include "core_call.h"
#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 60

/* The lock kinds the scenarios run against (issues 7 and 8). */
typedef enum lock_kind { KIND_LOCK, KIND_FAIR, KIND_RWLOCK } lock_kind;

static inline const char *kind_name(lock_kind kind) {
    return kind == KIND_LOCK ? "lock" : kind == KIND_FAIR ? "fair lock" : "read-write lock";
}

/* One lock of any kind: l is the lock, or the read-write lock's write half. */
typedef struct any_lock {
    dlock_lock *l;
    dlock_rwlock *rw; /* KIND_RWLOCK only */
} any_lock;

static inline int make_lock(dlock_client *c, const char *name, lock_kind kind, any_lock *out) {
    *out = (any_lock){0};
    switch (kind) {
    case KIND_LOCK:
        return dlock_lock_new(c, name, &out->l);
    case KIND_FAIR:
        return dlock_fairlock_new(c, name, &out->l);
    case KIND_RWLOCK: {
        int rc = dlock_rwlock_new(c, name, &out->rw);
        if (rc == DLOCK_OK)
            out->l = dlock_rwlock_write(out->rw);
        return rc;
    }
    }
    return DLOCK_EINVAL;
}

/* The half a section takes: the lock itself, or the read-write lock's write or read half. */
static inline dlock_lock *lock_half(const any_lock *a, bool write) {
    return a->rw != NULL && !write ? dlock_rwlock_read(a->rw) : a->l;
}

static inline void free_lock(any_lock *a) {
    if (a->rw != NULL)
        dlock_rwlock_free(a->rw);
    else
        dlock_lock_free(a->l);
    *a = (any_lock){0};
}

/* Reads exactly len bytes from fd, waiting at most timeout_ms in all; false on timeout, EOF
 * or error. */
static inline bool read_full(int fd, void *buf, size_t len, int64_t timeout_ms) {
    char *p = buf;
    int64_t until = test_now_ms() + timeout_ms;
    while (len > 0) {
        int64_t left = until - test_now_ms();
        if (left <= 0)
            return false;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int n = poll(&pfd, 1, (int)left);
        if (n < 0)
            continue; /* EINTR */
        if (n == 0)
            return false;
        ssize_t got = read(fd, p, len);
        if (got <= 0)
            return false;
        p += got;
        len -= (size_t)got;
    }
    return true;
}

/* Children of the running test, killed by the teardown if the test failed with them alive. */
#define MAX_CHILDREN 8
static pid_t children[MAX_CHILDREN];

static inline void child_forget(pid_t pid) {
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] == pid)
            children[i] = 0;
}

static inline pid_t fork_child(void) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = test_fork();
    assert_true(pid >= 0);
    if (pid > 0) {
        for (int i = 0; i < MAX_CHILDREN; i++)
            if (children[i] == 0) {
                children[i] = pid;
                break;
            }
    }
    return pid;
}

static inline int kill_children(void **state) {
    (void)state;
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] > 0) {
            kill(children[i], SIGKILL);
            waitpid(children[i], NULL, 0);
            children[i] = 0;
        }
    return 0;
}

#endif
