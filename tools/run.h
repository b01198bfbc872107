/* SPDX-License-Identifier: MIT */
/* run.h — the plumbing of `dlock run` (cmd_run.c): how its main thread learns of signals
 * and of the library's callbacks (events.c), and the command's process (child.c). */
#ifndef DLOCK_CLI_RUN_H
#define DLOCK_CLI_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- events.c ----------------------------------------------------------------------------
 * One self-pipe wakes the main thread. Signal handlers and the library's callbacks (on its
 * I/O thread) set a flag and write a byte; the main thread sleeps in events_wait() and
 * then looks at every flag. The pipe carries no data: a full pipe loses nothing. */

/* Opens the pipe and catches SIGINT, SIGTERM, SIGHUP, SIGQUIT (to stop the wait or pass
 * them on to the command) and SIGCHLD. 0, or -1 with errno. */
int events_open(void);

/* Wakes events_wait(). Any thread, async-signal-safe. */
void events_wake(void);

/* Sleeps until woken or timeout_ms passed (-1: no limit). */
void events_wait(int64_t timeout_ms);

/* A terminating signal received since the last call (SIGINT, SIGTERM, SIGHUP, SIGQUIT),
 * or 0. *from_terminal says whether the kernel sent it (the terminal's ^C, ^\), rather
 * than kill(2). */
int events_take_signal(bool *from_terminal);

/* Whether SIGCHLD arrived since the last call. */
bool events_take_child(void);

/* ---- child.c -----------------------------------------------------------------------------
 * The command: fork + exec with its environment, its process group, its signals, its exit
 * status. */

typedef struct run_child {
    pid_t pid;
    /* Interactive (stdin is a terminal whose foreground dlock owns): the command stays in
     * dlock's process group, so ^C and ^Z reach it as usual, and only its pid is
     * signalled. Otherwise it leads a process group of its own, and the whole group is
     * signalled, so what it started is stopped with it. */
    bool own_group;
    pid_t group; /* the command's process group when own_group; kept after the reap */
} run_child;

/* Starts argv[0] (searched in PATH) with envp. 0 once it runs; -1 if it could not be
 * started, with *exit_code 126/127 (message printed) or 70 (fork failed). */
int child_start(run_child *ch, char *const argv[], char *const envp[], int *exit_code);

/* Sends sig to the command (its group when own_group). */
void child_signal(const run_child *ch, int sig);

/* After a terminated command was reaped: SIGKILL what is left of its process group (what
 * it started and that ignored SIGTERM). Nothing when it had no group of its own. */
void child_kill_leftovers(const run_child *ch);

/* Reaps the command if it ended: true and its wait status in *status. */
bool child_reap(run_child *ch, int *status);

/* A wait status as an exit code: the exit status, or 128 + the signal. */
int child_exit_code(int status);

#endif
