/* SPDX-License-Identifier: MIT */
/* cli_run.c — see cli_run.h. */
#include "cli_run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_util.h"

static char tool[PATH_MAX + 32];

bool cli_find(void) {
    const char *env = getenv("DLOCK_CLI");
    if (env && env[0]) {
        if (access(env, X_OK) != 0)
            fail_msg("DLOCK_CLI=%s is not an executable", env);
        snprintf(tool, sizeof(tool), "%s", env);
        return true;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return false;
    self[n] = '\0';
    /* <build>/tests/bin/<layer>/<program>: up three folders is <build>. */
    for (int up = 0; up < 4; up++) {
        char *slash = strrchr(self, '/');
        if (!slash)
            return false;
        *slash = '\0';
    }
    snprintf(tool, sizeof(tool), "%s/tools/dlock", self);
    return access(tool, X_OK) == 0;
}

const char *cli_path(void) {
    return tool;
}

/* ---- processes -------------------------------------------------------------------------- */

#define MAX_SPAWNED 16
static pid_t spawned[MAX_SPAWNED];

static void remember(pid_t pid) {
    for (int i = 0; i < MAX_SPAWNED; i++)
        if (spawned[i] == 0) {
            spawned[i] = pid;
            return;
        }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    fail_msg("more than %d processes of the tool at once", MAX_SPAWNED);
}

static void forget(pid_t pid) {
    for (int i = 0; i < MAX_SPAWNED; i++)
        if (spawned[i] == pid)
            spawned[i] = 0;
}

void cli_kill_spawned(void) {
    for (int i = 0; i < MAX_SPAWNED; i++) {
        if (spawned[i] > 0) {
            kill(spawned[i], SIGKILL);
            waitpid(spawned[i], NULL, 0);
            spawned[i] = 0;
        }
    }
}

pid_t cli_spawn(const char *const argv[], const char *out_path, const char *err_path) {
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { /* only async-signal-safe calls until exec */
        int in = open("/dev/null", O_RDONLY);
        int out = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int err = open(err_path ? err_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (in < 0 || out < 0 || err < 0)
            _exit(126);
        dup2(in, 0);
        dup2(out, 1);
        dup2(err, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    remember(pid);
    return pid;
}

int cli_wait_exit(pid_t pid, int64_t timeout_ms) {
    int64_t until = test_now_ms() + test_slack_ms(timeout_ms);
    for (;;) {
        int status;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            forget(pid);
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        if (r < 0 && errno != EINTR)
            fail_msg("waitpid(%d): %s", (int)pid, strerror(errno));
        if (test_now_ms() > until) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            forget(pid);
            fail_msg("process %d still running after %lld ms", (int)pid, (long long)timeout_ms);
        }
        test_sleep_ms(5);
    }
}

char *cli_slurp(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return strdup("");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int ch;
    while ((ch = fgetc(fp)) != EOF) {
        if (len + 2 > cap) {
            cap = cap ? cap * 2 : 256;
            char *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                fclose(fp);
                fail_msg("out of memory reading %s", path);
            }
            buf = grown;
        }
        buf[len++] = (char)ch;
    }
    fclose(fp);
    if (!buf)
        return strdup("");
    buf[len] = '\0';
    return buf;
}

void cli_result_free(cli_result *r) {
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof(*r));
}

/* ---- a run to its end ---------------------------------------------------------------------- */

static char own_dir[64]; /* for runs without a fixture; made on first use */
static pid_t own_dir_owner;

static void remove_own_dir(void) {
    if (!own_dir[0] || own_dir_owner != getpid())
        return;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/cli.out", own_dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/cli.err", own_dir);
    unlink(path);
    rmdir(own_dir);
}

static const char *output_dir(redis_fixture *f) {
    if (f)
        return redis_fixture_dir(f);
    if (!own_dir[0] || own_dir_owner != getpid()) {
        snprintf(own_dir, sizeof(own_dir), "/tmp/dlock-cli-XXXXXX");
        if (!mkdtemp(own_dir))
            fail_msg("mkdtemp %s: %s", own_dir, strerror(errno));
        if (own_dir_owner == 0)
            atexit(remove_own_dir);
        own_dir_owner = getpid();
    }
    return own_dir;
}

cli_result cli_run_argv(redis_fixture *f, int64_t timeout_ms, const char *const *args) {
    const char *argv[32];
    int n = 0;
    argv[n++] = tool;
    for (; args[n - 1] && n < 31; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    const char *dir = output_dir(f);
    char out_path[PATH_MAX], err_path[PATH_MAX];
    snprintf(out_path, sizeof(out_path), "%s/cli.out", dir);
    snprintf(err_path, sizeof(err_path), "%s/cli.err", dir);
    pid_t pid = cli_spawn(argv, out_path, err_path);
    cli_result r;
    r.status = cli_wait_exit(pid, timeout_ms);
    r.out = cli_slurp(out_path);
    r.err = cli_slurp(err_path);
    return r;
}
