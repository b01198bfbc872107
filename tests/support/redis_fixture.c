/* SPDX-License-Identifier: MIT */
/* redis_fixture.c - starts, controls and always reaps the private redis-server of a test.
 *
 * Data owned here:
 * - `struct redis_fixture`: a deep copy of the options, the temp directory, the current
 *   server pid and the admin hiredis connection (guarded by conn_mu).
 * - the registry: a fixed array of (owner pid, server pid, fixture) slots. Slots are taken
 *   and released under registry_mu, but the pids are atomics so that a signal handler or
 *   the test watchdog can walk the array without a lock and SIGKILL every server the
 *   current process owns.
 * - the spawner: one helper thread that does every fork+exec. PR_SET_PDEATHSIG fires when
 *   the *thread* that forked the child exits, not the process, so forking from the calling
 *   thread would kill a server the moment a short-lived test thread that started or
 *   restarted it returns. The spawner lives until exit, so "parent died" means "the test
 *   process died".
 *
 * pthread_atfork keeps all of this sane in forked children of a test: locks are released,
 * condition variables re-initialised and the spawner marked absent (the child gets its own
 * spawner when it starts a fixture of its own).
 */
#include "redis_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REGISTRY_SLOTS 256
#define START_ATTEMPTS_TCP 5
#define RESTART_ATTEMPTS 5
#define READY_TIMEOUT_MS 5000
#define READY_POLL_MS 10
#define STOP_GRACE_MS 2000
#define CONNECT_TIMEOUT_MS 2000
/* Long enough for any DEBUG SLEEP a test does; the test watchdog catches real hangs. */
#define ADMIN_REPLY_TIMEOUT_MS 60000
#define LOG_TAIL_LINES 20

struct redis_fixture {
    /* deep copy of the options, so restart() works after the caller's opts are gone */
    bool tcp;
    bool appendonly;
    char *requirepass;
    char **extra_args; /* NULL-terminated */

    char *exe; /* resolved redis-server path */
    char dir[64];
    char socket_path[96];
    char log_path[96];
    int port;
    char *unix_url;
    char *tcp_url;

    int slot;               /* registry index */
    _Atomic pid_t pid;      /* running server, 0 if none */
    _Atomic pid_t last_pid; /* for redis_fixture_pid() after kill() */

    pthread_mutex_t conn_mu;
    redisContext *conn;
    pid_t conn_pid; /* process that opened conn: a forked child must not share the socket */
};

/* ---- small helpers ---------------------------------------------------------------------- */

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

static char *xstrdup(const char *s) {
    char *copy = strdup(s);
    if (copy == NULL) {
        fprintf(stderr, "redis_fixture: out of memory\n");
        abort();
    }
    return copy;
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...) {
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0) {
        fprintf(stderr, "redis_fixture: out of memory\n");
        abort();
    }
    return s;
}

/* Percent-encode everything outside RFC 3986 "unreserved", so any password survives a URL. */
static char *url_encode(const char *s) {
    static const char hex[] = "0123456789ABCDEF";
    char *out = malloc(strlen(s) * 3 + 1);
    if (out == NULL)
        abort();
    char *p = out;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
            *c == '-' || *c == '.' || *c == '_' || *c == '~') {
            *p++ = (char)*c;
        } else {
            *p++ = '%';
            *p++ = hex[*c >> 4];
            *p++ = hex[*c & 15];
        }
    }
    *p = '\0';
    return out;
}

/* true once `pid` has exited. Uses WNOWAIT so the zombie keeps the pid reserved until we
 * have cleared it from the registry: a crash handler must never SIGKILL a recycled pid. */
static bool has_exited(pid_t pid) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == -1)
        return errno == ECHILD && kill(pid, 0) == -1 && errno == ESRCH; /* SIGCHLD ignored */
    return info.si_pid == pid;
}

static bool wait_exit(pid_t pid, int64_t timeout_ms) {
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        if (has_exited(pid))
            return true;
        if (now_ms() >= deadline)
            return false;
        sleep_ms(2);
    }
}

static void reap(pid_t pid) {
    while (waitpid(pid, NULL, 0) == -1 && errno == EINTR) {
    }
}

/* Process state letter from /proc/PID/stat ('T' stopped, 'Z' zombie, ...), '?' if gone.
 * comm may hold spaces and parentheses, so the state is found after the last ')'. */
static char proc_state(pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd == -1)
        return '?';
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return '?';
    buf[n] = '\0';
    char *rp = strrchr(buf, ')');
    return (rp != NULL && rp[1] == ' ' && rp[2] != '\0') ? rp[2] : '?';
}

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
    (void)sb;
    (void)type;
    (void)ftw;
    remove(path);
    return 0;
}

static void remove_tree(const char *dir) {
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The last lines of redis.log tell why a server did not come up; nothing else does. */
static void print_log_tail(const redis_fixture *f) {
    char buf[8192];
    int fd = open(f->log_path, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        fprintf(stderr, "redis_fixture: (no %s: %s)\n", f->log_path, strerror(errno));
        return;
    }
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > (off_t)sizeof buf - 1 ? size - (off_t)(sizeof buf - 1) : 0;
    ssize_t n = pread(fd, buf, sizeof buf - 1, from);
    close(fd);
    if (n < 0)
        n = 0;
    buf[n] = '\0';
    char *end = buf + n;
    if (end > buf && end[-1] == '\n')
        end--; /* the final newline does not start a line */
    char *start = end;
    for (int lines = 0; start > buf; start--) {
        if (start[-1] == '\n' && ++lines == LOG_TAIL_LINES)
            break;
    }
    fprintf(stderr, "redis_fixture: ---- tail of %s ----\n%s", f->log_path, start);
    if (n > 0 && buf[n - 1] != '\n')
        fputc('\n', stderr);
    fprintf(stderr, "redis_fixture: ---- end of log ----\n");
}

/* ---- registry ----------------------------------------------------------------------------- */

struct registry_slot {
    _Atomic pid_t owner;  /* process that started the server; 0: slot free */
    _Atomic pid_t server; /* live server pid, 0 if none */
    redis_fixture *_Atomic fixture;
};

static struct registry_slot registry[REGISTRY_SLOTS];
static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* Builds "redis_fixture: killed server PID, log DIR/redis.log\n" without stdio or malloc:
 * callers are signal handlers and a watchdog racing a hung thread that may hold any lock. */
static void say_killed(pid_t pid, const redis_fixture *f) {
    char msg[256], digits[16];
    size_t len = 0, nd = 0;
    const char *parts[] = {"redis_fixture: killed server ", NULL, ", log ", f ? f->dir : "?",
                           "/redis.log\n"};
    for (unsigned v = (unsigned)pid; nd == 0 || v != 0; v /= 10)
        digits[nd++] = (char)('0' + v % 10);
    for (size_t p = 0; p < sizeof parts / sizeof parts[0]; p++) {
        if (parts[p] == NULL) {
            while (nd > 0 && len < sizeof msg)
                msg[len++] = digits[--nd];
            continue;
        }
        for (const char *c = parts[p]; *c != '\0' && len < sizeof msg; c++)
            msg[len++] = *c;
    }
    ssize_t ignored = write(STDERR_FILENO, msg, len);
    (void)ignored;
}

void redis_fixture_kill_all(void) {
    pid_t self = getpid();
    for (int i = 0; i < REGISTRY_SLOTS; i++) {
        pid_t server = atomic_load(&registry[i].server);
        if (server > 0 && atomic_load(&registry[i].owner) == self) {
            kill(server, SIGKILL);
            /* the directory stays: its redis.log is the evidence of what went wrong */
            say_killed(server, atomic_load(&registry[i].fixture));
        }
    }
}

static int registry_add(redis_fixture *f) {
    int slot = -1;
    pthread_mutex_lock(&registry_mu);
    for (int i = 0; i < REGISTRY_SLOTS; i++) {
        if (atomic_load(&registry[i].owner) == 0) {
            slot = i;
            atomic_store(&registry[i].fixture, f);
            atomic_store(&registry[i].server, 0);
            atomic_store(&registry[i].owner, getpid());
            break;
        }
    }
    pthread_mutex_unlock(&registry_mu);
    return slot;
}

static void registry_remove(int slot) {
    pthread_mutex_lock(&registry_mu);
    atomic_store(&registry[slot].server, 0);
    atomic_store(&registry[slot].owner, 0);
    atomic_store(&registry[slot].fixture, NULL);
    pthread_mutex_unlock(&registry_mu);
}

/* Servers are reaped only after their slot forgets them (see has_exited()). */
static void forget_and_reap(redis_fixture *f, pid_t pid) {
    atomic_store(&registry[f->slot].server, 0);
    atomic_store(&f->pid, 0);
    reap(pid);
}

/* ---- fatal-signal handlers ---------------------------------------------------------------- */

static const int fatal_signals[] = {SIGABRT, SIGSEGV, SIGBUS,  SIGFPE, SIGILL,
                                    SIGTERM, SIGINT,  SIGQUIT, SIGHUP};
static struct sigaction prev_action[NSIG];
static volatile sig_atomic_t in_handler[NSIG];

static void fatal_signal_handler(int sig, siginfo_t *info, void *uctx) {
    const struct sigaction *prev = &prev_action[sig];
    bool prev_is_function = (prev->sa_flags & SA_SIGINFO)
                                ? prev->sa_sigaction != NULL
                                : (prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN);
    if (prev_is_function && !in_handler[sig]) {
        /* Someone (cmocka recovers from SIGSEGV with longjmp, a test may handle SIGTERM)
         * had a say first: let them decide. If the process dies after all, PDEATHSIG and
         * atexit still take the servers with it. */
        in_handler[sig] = 1;
        if (prev->sa_flags & SA_SIGINFO)
            prev->sa_sigaction(sig, info, uctx);
        else
            prev->sa_handler(sig);
        in_handler[sig] = 0;
        return;
    }
    redis_fixture_kill_all();
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    /* Blocked until we return; then the default action (core dump, exit) takes place. */
    raise(sig);
}

/* Called at every start: cmocka installs and later restores its own handlers around each
 * group run, so ours may have been replaced since the last fixture. */
static void install_signal_handlers(void) {
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
        int sig = fatal_signals[i];
        struct sigaction cur;
        if (sigaction(sig, NULL, &cur) == -1)
            continue;
        if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == fatal_signal_handler)
            continue;
        if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_IGN)
            continue; /* e.g. SIGINT in a background job: ignoring it was someone's choice */
        prev_action[sig] = cur;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = fatal_signal_handler;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(sig, &sa, NULL);
    }
}

/* ---- spawner thread ------------------------------------------------------------------------ */

struct spawn_request {
    const char *exe;
    char *const *argv;
    int log_fd;
    int null_fd;
    int slot;
    bool taken;
    bool done;
    pid_t pid; /* result: > 0 on success */
    int err;   /* result: errno of fork or exec */
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool running;
    bool shutdown;
    pid_t process; /* the process the thread runs in */
    pthread_t thread;
    struct spawn_request *req;
} spawner = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static int max_fd_hint = 1024; /* for systems without close_range(); set in init */
/* Set by the spawner around its fork: the child (a copy of this thread) skips the atfork
 * cleanup. Thread-local, so a test thread forking at the same moment is not fooled. */
static _Thread_local bool forking_server;

/* Between fork and exec: async-signal-safe calls only (the parent has other threads). */
static void exec_server(const struct spawn_request *rq, pid_t parent, int err_fd) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++) {
        if (sig != SIGKILL && sig != SIGSTOP)
            sigaction(sig, &dfl, NULL); /* ignored signals would stay ignored across exec */
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL); /* the spawner thread blocks everything */

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127); /* the test process died before prctl took effect */
    setpgid(0, 0);  /* a test's kill(0, sig) or a terminal ^C must not reach the server */

    /* Lift every descriptor we need above 2 first: a test that closed its stdio may have
     * handed us fds 0..2, and dup2 onto itself would keep O_CLOEXEC. */
    err_fd = fcntl(err_fd, F_DUPFD_CLOEXEC, 10);
    int log_fd = fcntl(rq->log_fd, F_DUPFD_CLOEXEC, 10);
    int null_fd = fcntl(rq->null_fd, F_DUPFD_CLOEXEC, 10);
    if (err_fd == -1)
        _exit(127);
    if (log_fd == -1 || null_fd == -1 || dup2(null_fd, 0) == -1 || dup2(log_fd, 1) == -1 ||
        dup2(log_fd, 2) == -1)
        goto fail;
    /* Inherited descriptors (pipes to workers, sockets) would keep peers from seeing EOF for
     * as long as the server lives. err_fd is O_CLOEXEC and must survive until exec. */
    if (close_range(3, (unsigned)err_fd - 1, 0) == -1)
        for (int fd = 3; fd < err_fd; fd++)
            close(fd);
    if (close_range((unsigned)err_fd + 1, ~0U, 0) == -1)
        for (int fd = err_fd + 1; fd < max_fd_hint; fd++)
            close(fd);
    execv(rq->exe, rq->argv);
fail:;
    int e = errno;
    ssize_t ignored = write(err_fd, &e, sizeof e);
    (void)ignored;
    _exit(127);
}

static void do_spawn(struct spawn_request *rq) {
    int err_pipe[2];
    if (pipe2(err_pipe, O_CLOEXEC) == -1) {
        rq->err = errno;
        return;
    }
    pid_t parent = getpid();
    forking_server = true;
    pid_t pid = fork();
    forking_server = false;
    if (pid == -1) {
        rq->err = errno;
        close(err_pipe[0]);
        close(err_pipe[1]);
        return;
    }
    if (pid == 0) {
        close(err_pipe[0]);
        exec_server(rq, parent, err_pipe[1]);
    }
    atomic_store(&registry[rq->slot].server, pid); /* tracked before anything can fail */
    close(err_pipe[1]);
    int child_errno = 0;
    ssize_t n;
    while ((n = read(err_pipe[0], &child_errno, sizeof child_errno)) == -1 && errno == EINTR) {
    }
    close(err_pipe[0]);
    if (n == (ssize_t)sizeof child_errno) { /* exec failed */
        atomic_store(&registry[rq->slot].server, 0);
        reap(pid);
        rq->err = child_errno;
        return;
    }
    rq->pid = pid;
}

static void *spawner_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&spawner.mu);
    for (;;) {
        while (!spawner.shutdown && (spawner.req == NULL || spawner.req->taken))
            pthread_cond_wait(&spawner.cv, &spawner.mu);
        if (spawner.shutdown)
            break;
        struct spawn_request *rq = spawner.req;
        rq->taken = true;
        pthread_mutex_unlock(&spawner.mu); /* fork runs the atfork prepare that takes it */
        do_spawn(rq);
        pthread_mutex_lock(&spawner.mu);
        rq->done = true;
        spawner.req = NULL;
        pthread_cond_broadcast(&spawner.cv);
    }
    pthread_mutex_unlock(&spawner.mu);
    return NULL;
}

/* Runs the request on the spawner thread, starting that thread if this process has none. */
static int spawn(struct spawn_request *rq) {
    pthread_mutex_lock(&spawner.mu);
    if (!spawner.running) {
        /* All signals blocked in the helper: asynchronous signals belong to test threads. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int rc = pthread_create(&spawner.thread, NULL, spawner_main, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc != 0) {
            pthread_mutex_unlock(&spawner.mu);
            rq->err = rc;
            return -1;
        }
        spawner.running = true;
        spawner.shutdown = false;
        spawner.process = getpid();
    }
    while (spawner.req != NULL)
        pthread_cond_wait(&spawner.cv, &spawner.mu);
    spawner.req = rq;
    pthread_cond_broadcast(&spawner.cv);
    while (!rq->done)
        pthread_cond_wait(&spawner.cv, &spawner.mu);
    pthread_mutex_unlock(&spawner.mu);
    return rq->pid > 0 ? 0 : -1;
}

static void drop_conn(redis_fixture *f);

/* ---- process-wide setup: atexit and atfork ------------------------------------------------ */

void redis_fixture_cleanup_process(void) {
    pid_t self = getpid();
    pthread_mutex_lock(&registry_mu);
    /* Servers first: a thread blocked in a command on one of them gets EOF and lets go of
     * the connection lock we want next. */
    for (int i = 0; i < REGISTRY_SLOTS; i++) {
        redis_fixture *f = atomic_load(&registry[i].fixture);
        pid_t pid = atomic_load(&registry[i].server);
        if (f == NULL || pid <= 0 || atomic_load(&registry[i].owner) != self)
            continue;
        fprintf(stderr, "redis_fixture: server pid %d (%s) still running at exit; killed\n",
                (int)pid, f->dir);
        kill(pid, SIGKILL);
        wait_exit(pid, STOP_GRACE_MS);
        atomic_store(&registry[i].server, 0);
        atomic_store(&f->pid, 0);
        reap(pid);
        remove_tree(f->dir);
    }
    /* A live hiredis context at exit is "possibly lost" to memcheck (sds strings are only
     * pointed to past their header), and in a forked child memcheck then turns the exit
     * status into its error code. The fixtures themselves stay: a test may still stop them. */
    for (int i = 0; i < REGISTRY_SLOTS; i++) {
        redis_fixture *f = atomic_load(&registry[i].fixture);
        if (f == NULL || pthread_mutex_trylock(&f->conn_mu) != 0)
            continue;
        if (f->conn != NULL && f->conn_pid == self)
            drop_conn(f);
        pthread_mutex_unlock(&f->conn_mu);
    }
    pthread_mutex_unlock(&registry_mu);

    pthread_mutex_lock(&spawner.mu);
    bool join = spawner.running && spawner.process == self;
    spawner.shutdown = true;
    pthread_cond_broadcast(&spawner.cv);
    pthread_mutex_unlock(&spawner.mu);
    if (join) { /* joined so that memory checkers see no thread left behind */
        pthread_join(spawner.thread, NULL);
        pthread_mutex_lock(&spawner.mu);
        spawner.running = false;
        spawner.shutdown = false;
        pthread_mutex_unlock(&spawner.mu);
    }
}

static void cleanup_at_exit(void) {
    redis_fixture_cleanup_process();
}

static void atfork_prepare(void) {
    pthread_mutex_lock(&registry_mu);
    pthread_mutex_lock(&spawner.mu);
}

static void atfork_parent(void) {
    pthread_mutex_unlock(&spawner.mu);
    pthread_mutex_unlock(&registry_mu);
}

/* The child has only the forking thread: no spawner, and waiters counted in the condition
 * variable that no longer exist. Inherited admin connections share their socket with the
 * parent, and a thread that held a connection lock is gone: each fixture gets a fresh lock
 * and no connection (the child opens its own when it needs one). Not in the spawner's own
 * child, which is about to exec and must stay async-signal-safe. */
static void atfork_child(void) {
    spawner.running = false;
    spawner.shutdown = false;
    spawner.req = NULL;
    pthread_cond_init(&spawner.cv, NULL);
    pthread_mutex_unlock(&spawner.mu);
    if (!forking_server) {
        for (int i = 0; i < REGISTRY_SLOTS; i++) {
            redis_fixture *f = atomic_load(&registry[i].fixture);
            if (f == NULL)
                continue;
            pthread_mutex_init(&f->conn_mu, NULL);
            drop_conn(f); /* closes the child's copy of the descriptor only */
        }
    }
    pthread_mutex_unlock(&registry_mu);
}

static void init_process(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        max_fd_hint = rl.rlim_cur > 65536 ? 65536 : (int)rl.rlim_cur;
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    atexit(cleanup_at_exit);
}

/* ---- starting the server ------------------------------------------------------------------ */

static char *find_in_path(const char *name) {
    const char *path = getenv("PATH");
    if (path == NULL || *path == '\0')
        path = "/usr/local/bin:/usr/bin:/bin";
    const char *p = path;
    for (;;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        /* an empty PATH entry means the current directory */
        char *candidate = len ? xasprintf("%.*s/%s", (int)len, p, name) : xasprintf("./%s", name);
        if (access(candidate, X_OK) == 0)
            return candidate;
        free(candidate);
        if (end == NULL)
            return NULL;
        p = end + 1;
    }
}

/* Resolved before fork: execvp may allocate, which a child of a threaded process must not. */
static char *find_redis_server(void) {
    const char *env = getenv("DLOCK_REDIS_SERVER");
    const char *name = (env != NULL && *env != '\0') ? env : "redis-server";
    char *exe =
        strchr(name, '/') ? (access(name, X_OK) == 0 ? xstrdup(name) : NULL) : find_in_path(name);
    if (exe == NULL)
        fprintf(stderr,
                "redis_fixture: %s not found or not executable (%s); install redis-server or "
                "set DLOCK_REDIS_SERVER\n",
                name, env != NULL && *env != '\0' ? "from DLOCK_REDIS_SERVER" : "searched PATH");
    return exe;
}

static int free_loopback_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd == -1)
        return -1;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    int port = -1;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

static char **build_argv(const redis_fixture *f, char *port_buf) {
    size_t n_extra = 0;
    while (f->extra_args[n_extra] != NULL)
        n_extra++;
    char **argv = calloc(40 + n_extra, sizeof *argv);
    if (argv == NULL)
        abort();
    size_t i = 0;
    argv[i++] = f->exe;
    argv[i++] = "--port";
    argv[i++] = port_buf;
    if (f->tcp) {
        argv[i++] = "--bind";
        argv[i++] = "127.0.0.1";
    }
    argv[i++] = "--unixsocket";
    argv[i++] = (char *)f->socket_path;
    argv[i++] = "--unixsocketperm";
    argv[i++] = "700";
    argv[i++] = "--dir";
    argv[i++] = (char *)f->dir;
    argv[i++] = "--daemonize";
    argv[i++] = "no";
    argv[i++] = "--protected-mode";
    argv[i++] = "no";
    argv[i++] = "--enable-debug-command";
    argv[i++] = "yes";
    argv[i++] = "--save";
    argv[i++] = "";
    argv[i++] = "--appendonly";
    argv[i++] = f->appendonly ? "yes" : "no";
    if (f->appendonly) {
        argv[i++] = "--appendfsync";
        argv[i++] = "always";
    }
    if (f->requirepass != NULL) {
        argv[i++] = "--requirepass";
        argv[i++] = f->requirepass;
    }
    for (size_t k = 0; k < n_extra; k++)
        argv[i++] = f->extra_args[k];
    argv[i] = NULL;
    return argv;
}

/* ---- admin connection --------------------------------------------------------------------- */

/* SIGPIPE from writing to a killed server would end the test; block it around our own I/O
 * and swallow one we caused, without changing the process-wide disposition (the library's
 * own SIGPIPE handling is under test elsewhere). */
struct sigpipe_guard {
    sigset_t old_mask;
    bool was_pending;
};

static void sigpipe_block(struct sigpipe_guard *g) {
    sigset_t pipe_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &g->old_mask);
    sigpending(&pending);
    g->was_pending = sigismember(&pending, SIGPIPE) == 1;
}

static void sigpipe_unblock(struct sigpipe_guard *g) {
    if (!g->was_pending) {
        sigset_t pipe_set;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) == -1 && errno == EINTR) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &g->old_mask, NULL);
}

static void drop_conn(redis_fixture *f) {
    if (f->conn != NULL) {
        redisFree(f->conn); /* in a forked child this closes only the child's copy */
        f->conn = NULL;
    }
}

/* Readable with nothing asked means EOF: the server closed us (CLIENT KILL, restart). */
static bool conn_is_stale(redisContext *c) {
    if (c->err)
        return true;
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
    return poll(&pfd, 1, 0) != 0;
}

/* Opens conn (AUTH included) unless a usable one is open.
 * Returns 0, or -1 with `why` filled. Caller holds conn_mu. */
static int ensure_conn(redis_fixture *f, char *why, size_t why_size) {
    if (f->conn != NULL && (f->conn_pid != getpid() || conn_is_stale(f->conn)))
        drop_conn(f);
    if (f->conn != NULL)
        return 0;
    struct timeval connect_tv = {CONNECT_TIMEOUT_MS / 1000, (CONNECT_TIMEOUT_MS % 1000) * 1000};
    redisContext *c = redisConnectUnixWithTimeout(f->socket_path, connect_tv);
    if (c == NULL || c->err) {
        snprintf(why, why_size, "connect %s: %s", f->socket_path, c ? c->errstr : "no memory");
        if (c != NULL)
            redisFree(c);
        return -1;
    }
    struct timeval reply_tv = {ADMIN_REPLY_TIMEOUT_MS / 1000, 0};
    redisSetTimeout(c, reply_tv);
    if (f->requirepass != NULL) {
        struct sigpipe_guard g;
        sigpipe_block(&g);
        redisReply *r = redisCommand(c, "AUTH %s", f->requirepass);
        sigpipe_unblock(&g);
        bool ok = r != NULL && r->type == REDIS_REPLY_STATUS;
        if (!ok)
            snprintf(why, why_size, "AUTH: %s",
                     r == NULL ? c->errstr : (r->str ? r->str : "unexpected reply"));
        if (r != NULL)
            freeReplyObject(r);
        if (!ok) {
            redisFree(c);
            return -1;
        }
    }
    f->conn = c;
    f->conn_pid = getpid();
    return 0;
}

/* Caller holds conn_mu. Sends a formatted command, re-sending once on a fresh connection if
 * the connection (not the command) failed: a reply lost with the server is worth one retry,
 * a timeout is not (the server is alive and busy, or paused). The staleness check in
 * ensure_conn() cannot catch everything: after CLIENT KILL of itself Redis closes the
 * connection just after the reply, so the next command can meet ECONNRESET. */
static redisReply *exchange_locked(redis_fixture *f, const char *cmd, size_t len, bool quiet) {
    char why[256] = "";
    for (int attempt = 0; attempt < 2; attempt++) {
        if (ensure_conn(f, why, sizeof why) != 0)
            break;
        void *reply = NULL;
        struct sigpipe_guard g;
        sigpipe_block(&g);
        int rc = redisAppendFormattedCommand(f->conn, cmd, len);
        if (rc == REDIS_OK)
            rc = redisGetReply(f->conn, &reply);
        int io_errno = errno; /* before sigtimedwait() in sigpipe_unblock() overwrites it */
        sigpipe_unblock(&g);
        if (rc == REDIS_OK)
            return reply;
        int err = f->conn->err;
        snprintf(why, sizeof why, "%s", f->conn->errstr);
        drop_conn(f);
        bool connection_lost =
            err == REDIS_ERR_EOF ||
            (err == REDIS_ERR_IO && (io_errno == EPIPE || io_errno == ECONNRESET));
        if (!connection_lost)
            break;
    }
    if (!quiet)
        fprintf(stderr, "redis_fixture: admin command on %s failed: %s\n", f->socket_path, why);
    return NULL;
}

static redisReply *exchange(redis_fixture *f, const char *cmd, size_t len) {
    pthread_mutex_lock(&f->conn_mu);
    redisReply *r = exchange_locked(f, cmd, len, false);
    pthread_mutex_unlock(&f->conn_mu);
    return r;
}

static redisReply *vcmd(redis_fixture *f, const char *fmt, va_list ap) {
    char *cmd = NULL;
    int len = redisvFormatCommand(&cmd, fmt, ap);
    if (len < 0) {
        fprintf(stderr, "redis_fixture: bad command format \"%s\"\n", fmt);
        return NULL;
    }
    redisReply *r = exchange(f, cmd, (size_t)len);
    redisFreeCommand(cmd);
    return r;
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

enum ready_result { READY, EXITED, TIMED_OUT };

/* Polls PING until PONG. LOADING (AOF replay after restart) and NOAUTH do not count. */
static enum ready_result wait_ready(redis_fixture *f, pid_t pid) {
    static const char ping[] = "*1\r\n$4\r\nPING\r\n";
    int64_t deadline = now_ms() + READY_TIMEOUT_MS;
    for (;;) {
        if (has_exited(pid))
            return EXITED;
        pthread_mutex_lock(&f->conn_mu);
        redisReply *r = exchange_locked(f, ping, sizeof ping - 1, true);
        bool pong = r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
        if (r != NULL && !pong) /* the connection is fine, the server not yet: keep it */
            freeReplyObject(r);
        pthread_mutex_unlock(&f->conn_mu);
        if (pong) {
            freeReplyObject(r);
            return READY;
        }
        if (now_ms() >= deadline)
            return TIMED_OUT;
        sleep_ms(READY_POLL_MS);
    }
}

/* One attempt to bring up the server at f->port. 0, or -1 with *exited_early telling
 * whether the process died by itself (worth another try on a new port). */
static int launch(redis_fixture *f, bool *exited_early, bool report) {
    *exited_early = false;
    char port_buf[16];
    snprintf(port_buf, sizeof port_buf, "%d", f->port);
    int log_fd = open(f->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (log_fd == -1 || null_fd == -1) {
        fprintf(stderr, "redis_fixture: open %s: %s\n", log_fd == -1 ? f->log_path : "/dev/null",
                strerror(errno));
        if (log_fd != -1)
            close(log_fd);
        if (null_fd != -1)
            close(null_fd);
        return -1;
    }
    char **argv = build_argv(f, port_buf);
    struct spawn_request rq = {
        .exe = f->exe, .argv = argv, .log_fd = log_fd, .null_fd = null_fd, .slot = f->slot};
    int rc = spawn(&rq);
    free(argv);
    close(log_fd);
    close(null_fd);
    if (rc != 0) {
        fprintf(stderr, "redis_fixture: cannot run %s: %s\n", f->exe, strerror(rq.err));
        return -1;
    }
    atomic_store(&f->pid, rq.pid);
    atomic_store(&f->last_pid, rq.pid);

    enum ready_result ready = wait_ready(f, rq.pid);
    if (ready == READY)
        return 0;
    if (ready == TIMED_OUT) {
        fprintf(stderr, "redis_fixture: %s (pid %d) did not answer PING within %d ms\n",
                f->socket_path, (int)rq.pid, READY_TIMEOUT_MS);
        kill(rq.pid, SIGKILL);
        wait_exit(rq.pid, STOP_GRACE_MS);
        report = true;
    } else {
        *exited_early = true;
    }
    int status = 0;
    atomic_store(&registry[f->slot].server, 0);
    atomic_store(&f->pid, 0);
    while (waitpid(rq.pid, &status, 0) == -1 && errno == EINTR) {
    }
    if (report) {
        if (ready == EXITED)
            fprintf(stderr, "redis_fixture: %s exited during startup (%s %d)\n", f->exe,
                    WIFSIGNALED(status) ? "signal" : "status",
                    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        print_log_tail(f);
    }
    pthread_mutex_lock(&f->conn_mu);
    drop_conn(f);
    pthread_mutex_unlock(&f->conn_mu);
    return -1;
}

static void free_fixture(redis_fixture *f) {
    if (f->extra_args != NULL) {
        for (size_t i = 0; f->extra_args[i] != NULL; i++)
            free(f->extra_args[i]);
        free(f->extra_args);
    }
    pthread_mutex_destroy(&f->conn_mu);
    free(f->requirepass);
    free(f->exe);
    free(f->unix_url);
    free(f->tcp_url);
    free(f);
}

int redis_fixture_start(const redis_fixture_opts *o, redis_fixture **out) {
    static const redis_fixture_opts defaults = {0};
    if (o == NULL)
        o = &defaults;
    if (out == NULL) {
        fprintf(stderr, "redis_fixture_start: out is NULL\n");
        return -1;
    }
    pthread_once(&init_once, init_process);
    install_signal_handlers();

    redis_fixture *f = calloc(1, sizeof *f);
    if (f == NULL)
        abort();
    pthread_mutex_init(&f->conn_mu, NULL);
    f->tcp = o->tcp;
    f->appendonly = o->appendonly;
    /* Redis reads an empty requirepass as "no password"; so do we, or AUTH "" would fail */
    f->requirepass =
        (o->requirepass != NULL && *o->requirepass != '\0') ? xstrdup(o->requirepass) : NULL;
    size_t n_extra = 0;
    while (o->extra_args != NULL && o->extra_args[n_extra] != NULL)
        n_extra++;
    f->extra_args = calloc(n_extra + 1, sizeof *f->extra_args);
    if (f->extra_args == NULL)
        abort();
    for (size_t i = 0; i < n_extra; i++)
        f->extra_args[i] = xstrdup(o->extra_args[i]);
    f->slot = -1;

    f->exe = find_redis_server();
    if (f->exe == NULL) {
        free_fixture(f);
        return -1;
    }
    strcpy(f->dir, "/tmp/dlock-test-XXXXXX");
    if (mkdtemp(f->dir) == NULL) {
        fprintf(stderr, "redis_fixture: mkdtemp(%s): %s\n", f->dir, strerror(errno));
        free_fixture(f);
        return -1;
    }
    snprintf(f->socket_path, sizeof f->socket_path, "%s/redis.sock", f->dir);
    snprintf(f->log_path, sizeof f->log_path, "%s/redis.log", f->dir);
    f->slot = registry_add(f);
    if (f->slot < 0) {
        fprintf(stderr, "redis_fixture: more than %d live fixtures\n", REGISTRY_SLOTS);
        remove_tree(f->dir);
        free_fixture(f);
        return -1;
    }

    /* The free port is only free until someone else binds it: try a few. A unix-only server
     * that dies at startup has a configuration problem no retry fixes. */
    int attempts = f->tcp ? START_ATTEMPTS_TCP : 1;
    int rc = -1;
    for (int attempt = 1; attempt <= attempts && rc != 0; attempt++) {
        f->port = f->tcp ? free_loopback_port() : 0;
        if (f->port < 0) {
            fprintf(stderr, "redis_fixture: no free loopback port: %s\n", strerror(errno));
            break;
        }
        bool exited_early = false;
        rc = launch(f, &exited_early, attempt == attempts);
        if (rc != 0 && !exited_early)
            break;
        if (rc != 0 && attempt < attempts)
            fprintf(stderr, "redis_fixture: server on port %d exited at startup, retrying\n",
                    f->port);
    }
    if (rc != 0) {
        fprintf(stderr, "redis_fixture: could not start %s in %s\n", f->exe, f->dir);
        registry_remove(f->slot);
        remove_tree(f->dir);
        free_fixture(f);
        return -1;
    }

    if (f->requirepass != NULL) {
        char *pw = url_encode(f->requirepass);
        f->unix_url = xasprintf("unix://%s?password=%s", f->socket_path, pw);
        if (f->tcp)
            f->tcp_url = xasprintf("redis://:%s@127.0.0.1:%d", pw, f->port);
        free(pw);
    } else {
        f->unix_url = xasprintf("unix://%s", f->socket_path);
        if (f->tcp)
            f->tcp_url = xasprintf("redis://127.0.0.1:%d", f->port);
    }
    *out = f;
    return 0;
}

static bool owned_here(const redis_fixture *f) {
    return atomic_load(&registry[f->slot].owner) == getpid();
}

void redis_fixture_stop(redis_fixture *f) {
    if (f == NULL)
        return;
    pid_t pid = atomic_load(&f->pid);
    bool mine = owned_here(f);
    if (pid > 0 && mine) {
        kill(pid, SIGTERM);
        kill(pid, SIGCONT); /* a paused server would sit on its SIGTERM */
        if (!wait_exit(pid, STOP_GRACE_MS)) {
            kill(pid, SIGKILL);
            wait_exit(pid, STOP_GRACE_MS);
        }
        forget_and_reap(f, pid);
    }
    pthread_mutex_lock(&f->conn_mu);
    drop_conn(f);
    pthread_mutex_unlock(&f->conn_mu);
    registry_remove(f->slot); /* in a forked child: only the child's copy of the registry */
    if (mine)
        remove_tree(f->dir);
    free_fixture(f);
}

int redis_fixture_kill(redis_fixture *f) {
    if (f == NULL || !owned_here(f))
        return -1;
    pid_t pid = atomic_load(&f->pid);
    if (pid <= 0)
        return -1;
    kill(pid, SIGKILL);
    wait_exit(pid, STOP_GRACE_MS);
    forget_and_reap(f, pid);
    /* A command blocked on the old server got EOF and released the lock by now. */
    pthread_mutex_lock(&f->conn_mu);
    drop_conn(f);
    pthread_mutex_unlock(&f->conn_mu);
    return 0;
}

int redis_fixture_restart(redis_fixture *f) {
    if (f == NULL || !owned_here(f))
        return -1;
    redis_fixture_kill(f);
    /* The port is ours by SO_REUSEADDR, but a stranger may grab it while no one listens;
     * nothing to do then but report it after a few tries. */
    for (int attempt = 1; attempt <= RESTART_ATTEMPTS; attempt++) {
        bool exited_early = false;
        if (launch(f, &exited_early, attempt == RESTART_ATTEMPTS) == 0)
            return 0;
        if (!exited_early)
            break;
        sleep_ms(100);
    }
    fprintf(stderr, "redis_fixture: could not restart the server in %s\n", f->dir);
    return -1;
}

/* Waits for the state change so that a test's next step really meets a stopped (or running)
 * server, not one that has yet to be scheduled. */
static int signal_and_wait_state(redis_fixture *f, int sig, bool want_stopped) {
    if (f == NULL)
        return -1;
    pid_t pid = atomic_load(&f->pid);
    if (pid <= 0 || kill(pid, sig) == -1)
        return -1;
    int64_t deadline = now_ms() + STOP_GRACE_MS;
    for (;;) {
        char state = proc_state(pid);
        if (state == '?' || state == 'Z' || state == 'X')
            return -1;
        if ((state == 'T' || state == 't') == want_stopped)
            return 0;
        if (now_ms() >= deadline)
            return -1;
        sleep_ms(1);
    }
}

int redis_fixture_pause(redis_fixture *f) {
    return signal_and_wait_state(f, SIGSTOP, true);
}

int redis_fixture_resume(redis_fixture *f) {
    return signal_and_wait_state(f, SIGCONT, false);
}

/* ---- accessors ---------------------------------------------------------------------------- */

pid_t redis_fixture_pid(const redis_fixture *f) {
    return f ? atomic_load(&f->last_pid) : 0;
}

bool redis_fixture_running(const redis_fixture *f) {
    return f != NULL && atomic_load(&f->pid) > 0;
}

const char *redis_fixture_socket(const redis_fixture *f) {
    return f ? f->socket_path : NULL;
}

int redis_fixture_port(const redis_fixture *f) {
    return f ? f->port : 0;
}

const char *redis_fixture_dir(const redis_fixture *f) {
    return f ? f->dir : NULL;
}

const char *redis_fixture_unix_url(const redis_fixture *f) {
    return f ? f->unix_url : NULL;
}

const char *redis_fixture_tcp_url(const redis_fixture *f) {
    return f ? f->tcp_url : NULL;
}

/* ---- commands ----------------------------------------------------------------------------- */

redisReply *redis_fixture_cmd(redis_fixture *f, const char *fmt, ...) {
    if (f == NULL || fmt == NULL)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = vcmd(f, fmt, ap);
    va_end(ap);
    return r;
}

redisReply *redis_fixture_cmd_argv(redis_fixture *f, int argc, const char **argv,
                                   const size_t *argvlen) {
    if (f == NULL || argc <= 0 || argv == NULL)
        return NULL;
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);
    if (len < 0)
        return NULL;
    redisReply *r = exchange(f, cmd, (size_t)len);
    redisFreeCommand(cmd);
    return r;
}

static bool parse_ll(const char *s, long long *out) {
    if (s == NULL || *s == '\0')
        return false;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

static void report_error_reply(const char *who, const redisReply *r) {
    if (r != NULL && r->type == REDIS_REPLY_ERROR)
        fprintf(stderr, "%s: error reply: %s\n", who, r->str);
}

long long redis_fixture_int(redis_fixture *f, const char *fmt, ...) {
    if (f == NULL || fmt == NULL)
        return LLONG_MIN;
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = vcmd(f, fmt, ap);
    va_end(ap);
    long long v = LLONG_MIN;
    if (r != NULL) {
        if (r->type == REDIS_REPLY_INTEGER)
            v = r->integer;
        else if ((r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
                 !parse_ll(r->str, &v))
            v = LLONG_MIN;
        report_error_reply("redis_fixture_int", r);
        freeReplyObject(r);
    }
    return v;
}

char *redis_fixture_str(redis_fixture *f, const char *fmt, ...) {
    if (f == NULL || fmt == NULL)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = vcmd(f, fmt, ap);
    va_end(ap);
    char *s = NULL;
    if (r != NULL) {
        if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) {
            s = malloc(r->len + 1);
            if (s == NULL)
                abort();
            memcpy(s, r->str, r->len); /* binary-safe: values may hold NUL */
            s[r->len] = '\0';
        } else if (r->type == REDIS_REPLY_INTEGER) {
            s = xasprintf("%lld", r->integer);
        }
        report_error_reply("redis_fixture_str", r);
        freeReplyObject(r);
    }
    return s;
}

/* Finds `name:` at the start of a line of INFO text; returns the value, NUL-terminated in
 * place, or NULL. */
static char *info_value(char *text, const char *name) {
    size_t name_len = strlen(name);
    for (char *line = text; line != NULL && *line != '\0';) {
        char *next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        size_t len = strlen(line);
        if (len > 0 && line[len - 1] == '\r')
            line[--len] = '\0';
        if (len > name_len && strncmp(line, name, name_len) == 0 && line[name_len] == ':')
            return line + name_len + 1;
        line = next;
    }
    return NULL;
}

long long redis_fixture_info_int(redis_fixture *f, const char *section, const char *field) {
    if (f == NULL || section == NULL || field == NULL || *field == '\0')
        return -1;
    redisReply *r = redis_fixture_cmd(f, "INFO %s", section);
    if (r == NULL)
        return -1;
    if (r->type != REDIS_REPLY_STRING) {
        report_error_reply("redis_fixture_info_int", r);
        freeReplyObject(r);
        return -1;
    }
    char *name = xstrdup(field);
    char *key = strchr(name, '.');
    if (key != NULL)
        *key++ = '\0';
    long long result = 0; /* absent: e.g. a command that was never called */
    char *value = info_value(r->str, name);
    if (value != NULL && key != NULL) {
        /* "calls=12,usec=34,usec_per_call=2.83,..." */
        char *found = NULL;
        for (char *save = NULL, *kv = strtok_r(value, ",", &save); kv != NULL;
             kv = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(kv, '=');
            size_t key_len = strlen(key);
            if (eq != NULL && (size_t)(eq - kv) == key_len && strncmp(kv, key, key_len) == 0) {
                found = eq + 1;
                break;
            }
        }
        value = found;
    }
    if (value != NULL && !parse_ll(value, &result)) {
        fprintf(stderr, "redis_fixture_info_int: %s in INFO %s is \"%s\", not an integer\n", field,
                section, value);
        result = -1;
    }
    free(name);
    freeReplyObject(r);
    return result;
}

int redis_fixture_client_kill_type(redis_fixture *f, const char *type) {
    if (f == NULL || type == NULL)
        return -1;
    redisReply *r = redis_fixture_cmd(f, "CLIENT KILL TYPE %s SKIPME yes", type);
    if (r == NULL)
        return -1;
    int killed = r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;
    report_error_reply("redis_fixture_client_kill_type", r);
    freeReplyObject(r);
    return killed;
}
