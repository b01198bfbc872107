/* SPDX-License-Identifier: MIT */
/* io_thread_switches.h — how often a client's own threads (its I/O thread) went to sleep,
 * read from /proc/self/task: how a test tells, without timing anything, that the I/O thread
 * was not woken for each reply of a lone caller (src/core/loop/loop.h, "the lone caller"). */
#ifndef DLOCK_TEST_IO_THREAD_SWITCHES_H
#define DLOCK_TEST_IO_THREAD_SWITCHES_H

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"

/* ---- the I/O thread, found in /proc ------------------------------------------------------ */

#define MAX_TASKS 64

/* The thread ids of this process, in *n. */
static inline void tasks_of_process(long *tids, int *n) {
    *n = 0;
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) && *n < MAX_TASKS)
        if (e->d_name[0] != '.')
            tids[(*n)++] = atol(e->d_name);
    closedir(d);
}

static inline bool listed(const long *tids, int n, long tid) {
    for (int i = 0; i < n; i++)
        if (tids[i] == tid)
            return true;
    return false;
}

/* How often thread tid went to sleep of its own accord (each time it waits for something:
 * a poll, a lock, a semaphore). */
static inline long voluntary_switches(long tid) {
    char path[64], line[128];
    snprintf(path, sizeof(path), "/proc/self/task/%ld/status", tid);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    long value = -1;
    while (fgets(line, sizeof(line), fp))
        if (sscanf(line, "voluntary_ctxt_switches: %ld", &value) == 1)
            break;
    fclose(fp);
    assert_true(value >= 0);
    return value;
}

/* The threads of this process that were not in before[0..nbefore) (tasks_of_process), in
 * tids[0..*n): what a dlock_client_new made in between started (its I/O thread). */
static inline void threads_since(const long *before, int nbefore, long *tids, int *n) {
    long after[MAX_TASKS];
    int nafter;
    tasks_of_process(after, &nafter);
    *n = 0;
    for (int i = 0; i < nafter; i++)
        if (!listed(before, nbefore, after[i]))
            tids[(*n)++] = after[i];
    assert_true(*n >= 1);
}

/* A client of f (connect_client), and the threads it started (its I/O thread). */
static inline dlock_client *client_and_its_threads(redis_fixture *f, long *tids, int *n) {
    long before[MAX_TASKS];
    int nbefore;
    tasks_of_process(before, &nbefore);
    dlock_client *c = connect_client(f);
    threads_since(before, nbefore, tids, n);
    return c;
}

static inline long switches_of(const long *tids, int n) {
    long sum = 0;
    for (int i = 0; i < n; i++)
        sum += voluntary_switches(tids[i]);
    return sum;
}

#endif
