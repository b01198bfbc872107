/* SPDX-License-Identifier: MIT */
/* topology_util.c - processes started from a config file, temp directories, tools and small
 * helpers for the TLS, Sentinel and Cluster fixtures.
 *
 * Data owned here:
 * - proc_registry: (owner pid, live pid) slots for every topo_proc not yet stopped. The pids
 *   are atomics so the atexit handler can kill without waiting on a test thread's lock.
 * - dir_registry: (owner pid, path) of every topo_tempdir() not yet removed.
 * - the spawner: one helper thread that does every fork of a topo_proc. PR_SET_PDEATHSIG
 *   fires when the thread that forked the child ends, so forking from a short-lived test
 *   thread would kill a sentinel the moment that thread returns; the spawner lives until
 *   exit. (The same reasoning as redis_fixture.c, whose machinery is private to it.)
 *
 * A forked child of a test inherits the registries; every cleanup checks the owner pid, so
 * the child never kills or removes what its parent started.
 */
#include "topology_util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

#define PROC_SLOTS 64
#define DIR_SLOTS 64
#define STOP_GRACE_MS 2000
#define FREE_PORT_ATTEMPTS 200

extern char **environ;

/* ---- small helpers ------------------------------------------------------------------------- */

char *topo_asprintf(const char *fmt, ...) {
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0) {
        fprintf(stderr, "topology_util: out of memory\n");
        abort();
    }
    return s;
}

char *topo_url_encode(const char *s) {
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

int topo_free_port(void) {
    for (int attempt = 0; attempt < FREE_PORT_ATTEMPTS; attempt++) {
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
        if (port > 0 && port != 6379 && port != 26379)
            return port;
    }
    return -1;
}

int topo_write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd == -1) {
        fprintf(stderr, "topology_util: open %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t n = write(fd, text + done, len - done);
        if (n == -1 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "topology_util: write %s: %s\n", path, strerror(errno));
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    return close(fd) == 0 ? 0 : -1;
}

char *topo_find_exe(const char *name, const char *package) {
    if (strchr(name, '/') != NULL) {
        if (access(name, X_OK) == 0)
            return topo_asprintf("%s", name);
    } else {
        const char *path = getenv("PATH");
        if (path == NULL || *path == '\0')
            path = "/usr/local/bin:/usr/bin:/bin";
        for (const char *p = path;;) {
            const char *end = strchr(p, ':');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            char *candidate =
                len ? topo_asprintf("%.*s/%s", (int)len, p, name) : topo_asprintf("./%s", name);
            if (access(candidate, X_OK) == 0)
                return candidate;
            free(candidate);
            if (end == NULL)
                break;
            p = end + 1;
        }
    }
    fprintf(stderr, "topology_util: %s not found in PATH; install %s (scripts/deps.sh)\n", name,
            package);
    return NULL;
}

char *topo_info_field(const char *info, const char *name) {
    size_t name_len = strlen(name);
    for (const char *line = info; line != NULL && *line != '\0';) {
        const char *next = strchr(line, '\n');
        size_t len = next ? (size_t)(next - line) : strlen(line);
        if (len > 0 && line[len - 1] == '\r')
            len--;
        if (len > name_len && strncmp(line, name, name_len) == 0 && line[name_len] == ':')
            return topo_asprintf("%.*s", (int)(len - name_len - 1), line + name_len + 1);
        line = next ? next + 1 : NULL;
    }
    return NULL;
}

void topo_print_log_tail(const char *path, int lines) {
    char buf[8192];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        fprintf(stderr, "topology_util: (no %s: %s)\n", path, strerror(errno));
        return;
    }
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > (off_t)sizeof buf - 1 ? size - (off_t)(sizeof buf - 1) : 0;
    ssize_t n = pread(fd, buf, sizeof buf - 1, from);
    close(fd);
    if (n < 0)
        n = 0;
    buf[n] = '\0';
    char *start = buf + n;
    if (start > buf && start[-1] == '\n')
        start--;
    for (int seen = 0; start > buf; start--) {
        if (start[-1] == '\n' && ++seen == lines)
            break;
    }
    fprintf(stderr, "---- tail of %s ----\n%s%s---- end of log ----\n", path, start,
            (n > 0 && buf[n - 1] != '\n') ? "\n" : "");
}

/* ---- SIGPIPE around our own writes --------------------------------------------------------- */

/* A write to a killed process must not end the test; the process-wide disposition is not
 * ours to change (the library's own SIGPIPE handling is tested elsewhere). */
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

redisContext *topo_connect_unix(const char *path, const char *password, int timeout_ms, char *why,
                                size_t why_size) {
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = redisConnectUnixWithTimeout(path, tv);
    if (c == NULL || c->err) {
        snprintf(why, why_size, "connect %s: %s", path, c ? c->errstr : "no memory");
        if (c != NULL)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    if (password != NULL && *password != '\0') {
        struct sigpipe_guard g;
        sigpipe_block(&g);
        redisReply *r = redisCommand(c, "AUTH %s", password);
        sigpipe_unblock(&g);
        bool ok = r != NULL && r->type == REDIS_REPLY_STATUS;
        if (!ok) /* the reply text, never the password */
            snprintf(why, why_size, "AUTH on %s: %s", path,
                     r == NULL ? c->errstr : (r->str ? r->str : "unexpected reply"));
        if (r != NULL)
            freeReplyObject(r);
        if (!ok) {
            redisFree(c);
            return NULL;
        }
    }
    return c;
}

#define UNIX_CMD_TIMEOUT_MS 5000

redisReply *topo_unix_vcmd(const char *who, const char *path, const char *password, const char *fmt,
                           va_list ap) {
    char why[256];
    redisContext *c = topo_connect_unix(path, password, UNIX_CMD_TIMEOUT_MS, why, sizeof why);
    if (c == NULL) {
        fprintf(stderr, "%s: %s\n", who, why);
        return NULL;
    }
    struct sigpipe_guard g;
    sigpipe_block(&g);
    redisReply *r = redisvCommand(c, fmt, ap);
    sigpipe_unblock(&g);
    if (r == NULL)
        fprintf(stderr, "%s: command on %s failed: %s\n", who, path, c->errstr);
    redisFree(c);
    return r;
}

bool topo_wait_gone(pid_t pid, int64_t timeout_ms) {
    int64_t deadline = test_now_ms() + timeout_ms;
    do {
        pid_t r = waitpid(pid, NULL, WNOHANG);
        if (r == pid)
            return true;
        if (r == -1 && errno == ECHILD && kill(pid, 0) == -1 && errno == ESRCH)
            return true;
        test_sleep_ms(10);
    } while (test_now_ms() < deadline);
    return false;
}

bool topo_plaintext_unanswered(int port) {
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (c == NULL || c->err) {
        if (c != NULL)
            redisFree(c);
        return true;
    }
    redisSetTimeout(c, tv);
    struct sigpipe_guard g;
    sigpipe_block(&g);
    redisReply *r = redisCommand(c, "PING");
    sigpipe_unblock(&g);
    bool unanswered = r == NULL;
    if (r != NULL)
        freeReplyObject(r);
    redisFree(c);
    return unanswered;
}

/* ---- running a tool ------------------------------------------------------------------------ */

static int exit_code(int status) {
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

static char *read_to_eof(int fd) {
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    if (buf == NULL)
        abort();
    for (;;) {
        if (cap - len < 1024) {
            cap *= 2;
            buf = realloc(buf, cap);
            if (buf == NULL)
                abort();
        }
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n == -1 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    return buf;
}

int topo_run(char *const argv[], const char *log_path, char **output) {
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    /* the test's blocked or ignored signals are none of the tool's business */
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    int pipe_fds[2] = {-1, -1};
    if (output != NULL) {
        if (pipe2(pipe_fds, O_CLOEXEC) == -1) {
            fprintf(stderr, "topology_util: pipe: %s\n", strerror(errno));
            posix_spawn_file_actions_destroy(&fa);
            posix_spawnattr_destroy(&attr);
            return -1;
        }
        posix_spawn_file_actions_adddup2(&fa, pipe_fds[1], 1);
        posix_spawn_file_actions_adddup2(&fa, pipe_fds[1], 2);
    } else {
        posix_spawn_file_actions_addopen(&fa, 1, log_path ? log_path : "/dev/null",
                                         O_WRONLY | O_CREAT | O_APPEND, 0600);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
    }
    pid_t pid = -1;
    int rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (pipe_fds[1] != -1)
        close(pipe_fds[1]);
    if (rc != 0) {
        fprintf(stderr, "topology_util: cannot run %s: %s\n", argv[0], strerror(rc));
        if (pipe_fds[0] != -1)
            close(pipe_fds[0]);
        return -1;
    }
    if (output != NULL) {
        *output = read_to_eof(pipe_fds[0]);
        close(pipe_fds[0]);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) == -1 && errno == EINTR) {
    }
    return exit_code(status);
}

/* ---- registries ---------------------------------------------------------------------------- */

struct proc_slot {
    _Atomic pid_t owner; /* 0: free */
    _Atomic pid_t pid;   /* live (unreaped) process, 0 if none */
};

struct dir_slot {
    pid_t owner; /* 0: free */
    char path[64];
};

static struct proc_slot proc_registry[PROC_SLOTS];
static struct dir_slot dir_registry[DIR_SLOTS];
static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

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

/* ---- spawner thread ------------------------------------------------------------------------ */

struct spawn_job {
    const char *exe;
    char *const *argv;
    int log_fd, null_fd;
    int slot;
    bool done;
    pid_t pid; /* result: > 0 on success */
    int err;   /* result: errno of fork or exec */
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool running, shutdown;
    pid_t process;
    pthread_t thread;
    struct spawn_job *job;
} spawner = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* Between fork and exec: async-signal-safe calls only (the parent has other threads). */
static _Noreturn void exec_child(const struct spawn_job *job, pid_t parent, int err_fd) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++) {
        if (sig != SIGKILL && sig != SIGSTOP)
            sigaction(sig, &dfl, NULL);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL); /* the spawner thread blocks everything */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127); /* the test process died before prctl took effect */
    setpgid(0, 0);  /* a terminal's ^C or a test's kill(0, sig) must not reach it */
    /* everything we keep goes above 2 first: a test may have closed its stdio */
    err_fd = fcntl(err_fd, F_DUPFD_CLOEXEC, 10);
    int log_fd = fcntl(job->log_fd, F_DUPFD_CLOEXEC, 10);
    int null_fd = fcntl(job->null_fd, F_DUPFD_CLOEXEC, 10);
    if (err_fd == -1)
        _exit(127);
    if (log_fd != -1 && null_fd != -1 && dup2(null_fd, 0) != -1 && dup2(log_fd, 1) != -1 &&
        dup2(log_fd, 2) != -1) {
        /* inherited descriptors would keep a test's pipes and sockets open for its life */
        close_range(3, (unsigned)err_fd - 1, 0);
        close_range((unsigned)err_fd + 1, ~0U, 0);
        execv(job->exe, job->argv);
    }
    int e = errno;
    ssize_t ignored = write(err_fd, &e, sizeof e);
    (void)ignored;
    _exit(127);
}

static void run_job(struct spawn_job *job) {
    int err_pipe[2];
    if (pipe2(err_pipe, O_CLOEXEC) == -1) {
        job->err = errno;
        return;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == -1) {
        job->err = errno;
        close(err_pipe[0]);
        close(err_pipe[1]);
        return;
    }
    if (pid == 0) {
        close(err_pipe[0]);
        exec_child(job, parent, err_pipe[1]);
    }
    atomic_store(&proc_registry[job->slot].pid, pid); /* tracked before anything can fail */
    close(err_pipe[1]);
    int child_errno = 0;
    ssize_t n;
    while ((n = read(err_pipe[0], &child_errno, sizeof child_errno)) == -1 && errno == EINTR) {
    }
    close(err_pipe[0]);
    if (n == (ssize_t)sizeof child_errno) { /* exec failed */
        atomic_store(&proc_registry[job->slot].pid, 0);
        while (waitpid(pid, NULL, 0) == -1 && errno == EINTR) {
        }
        job->err = child_errno;
        return;
    }
    job->pid = pid;
}

static void *spawner_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&spawner.mu);
    for (;;) {
        while (!spawner.shutdown && spawner.job == NULL)
            pthread_cond_wait(&spawner.cv, &spawner.mu);
        if (spawner.shutdown)
            break;
        struct spawn_job *job = spawner.job;
        spawner.job = NULL;
        pthread_mutex_unlock(&spawner.mu); /* fork's atfork prepare takes it */
        run_job(job);
        pthread_mutex_lock(&spawner.mu);
        job->done = true;
        pthread_cond_broadcast(&spawner.cv);
    }
    pthread_mutex_unlock(&spawner.mu);
    return NULL;
}

static int spawn(struct spawn_job *job) {
    pthread_mutex_lock(&spawner.mu);
    if (!spawner.running) {
        sigset_t all, old; /* asynchronous signals belong to the test's threads */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int rc = pthread_create(&spawner.thread, NULL, spawner_main, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc != 0) {
            pthread_mutex_unlock(&spawner.mu);
            job->err = rc;
            return -1;
        }
        spawner.running = true;
        spawner.shutdown = false;
        spawner.process = getpid();
    }
    while (spawner.job != NULL)
        pthread_cond_wait(&spawner.cv, &spawner.mu);
    spawner.job = job;
    pthread_cond_broadcast(&spawner.cv);
    while (!job->done)
        pthread_cond_wait(&spawner.cv, &spawner.mu);
    pthread_mutex_unlock(&spawner.mu);
    return job->pid > 0 ? 0 : -1;
}

/* ---- process-wide cleanup ------------------------------------------------------------------ */

static void cleanup_at_exit(void) {
    pid_t self = getpid();
    pthread_mutex_lock(&registry_mu);
    for (int i = 0; i < PROC_SLOTS; i++) {
        pid_t pid = atomic_load(&proc_registry[i].pid);
        if (pid <= 0 || atomic_load(&proc_registry[i].owner) != self)
            continue;
        fprintf(stderr, "topology_util: process %d still running at exit; killed\n", (int)pid);
        kill(pid, SIGKILL);
        atomic_store(&proc_registry[i].pid, 0);
        while (waitpid(pid, NULL, 0) == -1 && errno == EINTR) {
        }
    }
    for (int i = 0; i < DIR_SLOTS; i++) {
        if (dir_registry[i].owner == self) {
            remove_tree(dir_registry[i].path);
            dir_registry[i].owner = 0;
        }
    }
    pthread_mutex_unlock(&registry_mu);

    pthread_mutex_lock(&spawner.mu);
    bool join = spawner.running && spawner.process == self;
    spawner.shutdown = true;
    pthread_cond_broadcast(&spawner.cv);
    pthread_mutex_unlock(&spawner.mu);
    if (join) { /* so that memory checkers see no thread left behind */
        pthread_join(spawner.thread, NULL);
        spawner.running = false;
    }
}

static void atfork_prepare(void) {
    pthread_mutex_lock(&registry_mu);
    pthread_mutex_lock(&spawner.mu);
}

static void atfork_parent(void) {
    pthread_mutex_unlock(&spawner.mu);
    pthread_mutex_unlock(&registry_mu);
}

/* The child has only the forking thread: no spawner, and a condition variable whose waiters
 * are gone. */
static void atfork_child(void) {
    spawner.running = false;
    spawner.shutdown = false;
    spawner.job = NULL;
    pthread_cond_init(&spawner.cv, NULL);
    pthread_mutex_unlock(&spawner.mu);
    pthread_mutex_unlock(&registry_mu);
}

static void init_process(void) {
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    atexit(cleanup_at_exit);
}

/* ---- temp directories ---------------------------------------------------------------------- */

char *topo_tempdir(const char *prefix) {
    pthread_once(&init_once, init_process);
    char *dir = topo_asprintf("/tmp/%s-XXXXXX", prefix);
    if (strlen(dir) >= sizeof dir_registry[0].path || mkdtemp(dir) == NULL) {
        fprintf(stderr, "topology_util: mkdtemp(%s): %s\n", dir, strerror(errno));
        free(dir);
        return NULL;
    }
    pthread_mutex_lock(&registry_mu);
    for (int i = 0; i < DIR_SLOTS; i++) {
        if (dir_registry[i].owner == 0) {
            dir_registry[i].owner = getpid();
            snprintf(dir_registry[i].path, sizeof dir_registry[i].path, "%s", dir);
            break;
        }
    }
    pthread_mutex_unlock(&registry_mu);
    return dir;
}

void topo_tempdir_remove(char *dir) {
    if (dir == NULL)
        return;
    pthread_mutex_lock(&registry_mu);
    for (int i = 0; i < DIR_SLOTS; i++) {
        if (dir_registry[i].owner == getpid() && strcmp(dir_registry[i].path, dir) == 0) {
            dir_registry[i].owner = 0;
            remove_tree(dir);
            break;
        }
    }
    pthread_mutex_unlock(&registry_mu);
    free(dir);
}

/* ---- topo_proc ----------------------------------------------------------------------------- */

struct topo_proc {
    int slot;
    pid_t last_pid;
};

/* true once `pid` has exited. WNOWAIT leaves the zombie, so the pid cannot be recycled
 * before the registry forgets it and nobody can SIGKILL a stranger. */
static bool has_exited(pid_t pid) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == -1)
        return errno == ECHILD && kill(pid, 0) == -1 && errno == ESRCH;
    return info.si_pid == pid;
}

static bool wait_exit(pid_t pid, int64_t timeout_ms) {
    int64_t deadline = test_now_ms() + timeout_ms;
    while (!has_exited(pid)) {
        if (test_now_ms() >= deadline)
            return false;
        test_sleep_ms(2);
    }
    return true;
}

static bool owned_here(const topo_proc *p) {
    return atomic_load(&proc_registry[p->slot].owner) == getpid();
}

int topo_proc_start(const char *exe, char *const argv[], const char *log_path, topo_proc **out) {
    pthread_once(&init_once, init_process);
    int slot = -1;
    pthread_mutex_lock(&registry_mu);
    for (int i = 0; i < PROC_SLOTS && slot < 0; i++) {
        if (atomic_load(&proc_registry[i].owner) == 0) {
            slot = i;
            atomic_store(&proc_registry[i].pid, 0);
            atomic_store(&proc_registry[i].owner, getpid());
        }
    }
    pthread_mutex_unlock(&registry_mu);
    if (slot < 0) {
        fprintf(stderr, "topology_util: more than %d live processes\n", PROC_SLOTS);
        return -1;
    }
    int log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    struct spawn_job job = {
        .exe = exe, .argv = argv, .log_fd = log_fd, .null_fd = null_fd, .slot = slot};
    int rc = (log_fd == -1 || null_fd == -1) ? (job.err = errno, -1) : spawn(&job);
    if (log_fd != -1)
        close(log_fd);
    if (null_fd != -1)
        close(null_fd);
    if (rc != 0) {
        fprintf(stderr, "topology_util: cannot run %s (log %s): %s\n", exe, log_path,
                strerror(job.err));
        atomic_store(&proc_registry[slot].owner, 0);
        return -1;
    }
    topo_proc *p = calloc(1, sizeof *p);
    if (p == NULL)
        abort();
    p->slot = slot;
    p->last_pid = job.pid;
    *out = p;
    return 0;
}

/* The registry forgets the pid before the zombie is reaped (see has_exited()). */
static void forget_and_reap(topo_proc *p, pid_t pid) {
    atomic_store(&proc_registry[p->slot].pid, 0);
    while (waitpid(pid, NULL, 0) == -1 && errno == EINTR) {
    }
}

void topo_proc_stop(topo_proc *p) {
    if (p == NULL)
        return;
    pid_t pid = atomic_load(&proc_registry[p->slot].pid);
    bool mine = owned_here(p);
    if (mine && pid > 0) {
        kill(pid, SIGTERM);
        kill(pid, SIGCONT);
        if (!wait_exit(pid, STOP_GRACE_MS)) {
            kill(pid, SIGKILL);
            wait_exit(pid, STOP_GRACE_MS);
        }
        forget_and_reap(p, pid);
    }
    if (mine)
        atomic_store(&proc_registry[p->slot].owner, 0);
    free(p);
}

int topo_proc_kill(topo_proc *p) {
    if (p == NULL || !owned_here(p))
        return -1;
    pid_t pid = atomic_load(&proc_registry[p->slot].pid);
    if (pid <= 0)
        return -1;
    kill(pid, SIGKILL);
    wait_exit(pid, STOP_GRACE_MS);
    forget_and_reap(p, pid);
    return 0;
}

/* Process state letter from /proc/PID/stat ('T' stopped, 'Z' zombie...), '?' if gone. */
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
    char *rp = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
    return (rp != NULL && rp[1] == ' ' && rp[2] != '\0') ? rp[2] : '?';
}

static int signal_and_wait_state(topo_proc *p, int sig, bool want_stopped) {
    if (p == NULL || !owned_here(p))
        return -1;
    pid_t pid = atomic_load(&proc_registry[p->slot].pid);
    if (pid <= 0 || kill(pid, sig) == -1)
        return -1;
    int64_t deadline = test_now_ms() + STOP_GRACE_MS;
    for (;;) {
        char state = proc_state(pid);
        if (state == '?' || state == 'Z' || state == 'X')
            return -1;
        if ((state == 'T' || state == 't') == want_stopped)
            return 0;
        if (test_now_ms() >= deadline)
            return -1;
        test_sleep_ms(1);
    }
}

int topo_proc_pause(topo_proc *p) {
    return signal_and_wait_state(p, SIGSTOP, true);
}

int topo_proc_resume(topo_proc *p) {
    return signal_and_wait_state(p, SIGCONT, false);
}

pid_t topo_proc_pid(const topo_proc *p) {
    return p ? p->last_pid : 0;
}

bool topo_proc_exited(const topo_proc *p) {
    if (p == NULL)
        return true;
    pid_t pid = atomic_load(&proc_registry[p->slot].pid);
    return pid <= 0 || has_exited(pid);
}
