/* SPDX-License-Identifier: MIT */
/* child.c — the command `dlock run` runs (run.h): fork + exec, its process group, its
 * signals and its exit status.
 *
 * The process is multi-threaded (the library's I/O thread), so between fork and exec the
 * child only makes async-signal-safe calls: everything it needs (argv, the environment)
 * is built before the fork. An exec failure comes back to the parent through a
 * close-on-exec pipe, so "command not found" is reported by dlock, with 127, as a shell
 * would. The child asks for SIGTERM should dlock die (PR_SET_PDEATHSIG): without dlock
 * nobody renews the lease, so the command must not go on believing it is protected. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"
#include "run.h"

static bool interactive(void) {
    return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
}

int child_start(run_child *ch, char *const argv[], char *const envp[], int *exit_code) {
    ch->own_group = !interactive();
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
        cli_error("cannot start %s: pipe: %s", argv[0], strerror(errno));
        *exit_code = CLI_EXIT_SOFTWARE;
        return -1;
    }
    fflush(NULL); /* nothing buffered may be written twice */
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        cli_error("cannot start %s: fork: %s", argv[0], strerror(errno));
        close(report[0]);
        close(report[1]);
        *exit_code = CLI_EXIT_SOFTWARE;
        return -1;
    }
    if (pid == 0) {
        close(report[0]);
        if (ch->own_group)
            setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) /* dlock died before the line above */
            _exit(CLI_EXIT_LOST);
        /* The dispositions dlock caught become SIG_DFL at exec; the mask is the main
         * thread's, which dlock leaves alone. */
        execvpe(argv[0], argv, envp);
        int err = errno;
        ssize_t n = write(report[1], &err, sizeof(err));
        (void)n;
        _exit(err == ENOENT ? CLI_EXIT_NOT_FOUND : CLI_EXIT_CANNOT_EXEC);
    }
    close(report[1]);
    if (ch->own_group)
        setpgid(pid, pid); /* also here: no signal may miss the group (EACCES after exec) */
    ch->pid = pid;
    ch->group = ch->own_group ? pid : 0;

    int err = 0;
    ssize_t n;
    do
        n = read(report[0], &err, sizeof(err));
    while (n < 0 && errno == EINTR);
    close(report[0]);
    if (n == (ssize_t)sizeof(err)) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        ch->pid = 0;
        ch->group = 0;
        cli_error("cannot run %s: %s", argv[0], strerror(err));
        *exit_code = err == ENOENT ? CLI_EXIT_NOT_FOUND : CLI_EXIT_CANNOT_EXEC;
        return -1;
    }
    return 0;
}

void child_signal(const run_child *ch, int sig) {
    if (ch->pid <= 0)
        return;
    if (ch->own_group && kill(-ch->pid, sig) == 0)
        return;
    kill(ch->pid, sig);
}

void child_kill_leftovers(const run_child *ch) {
    if (ch->own_group && ch->group > 0)
        kill(-ch->group, SIGKILL); /* ESRCH: nothing was left */
}

bool child_reap(run_child *ch, int *status) {
    if (ch->pid <= 0)
        return false;
    pid_t r;
    do
        r = waitpid(ch->pid, status, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r != ch->pid)
        return false;
    ch->pid = 0;
    return true;
}

int child_exit_code(int status) {
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return CLI_EXIT_SOFTWARE;
}
