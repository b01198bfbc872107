/* SPDX-License-Identifier: MIT */
/* test_util.c - clocks, load scaling and the per-test hang watchdog.
 *
 * The watchdog is one helper thread per process sleeping on a CLOCK_MONOTONIC condition
 * variable until the armed deadline. A thread rather than alarm(): it does not take SIGALRM
 * from the code under test, it fires even when a test thread is stuck with signals blocked,
 * and under valgrind a timed wait is as reliable as anywhere else. It is joined at exit so
 * memory checkers see no stray thread, and pthread_atfork leaves forked children unarmed
 * with a clean lock (they get their own thread when they arm).
 */
#include "test_util.h"

#include "redis_fixture.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define DLOCK_TEST_HAVE_MEMCHECK 1
#endif
#endif
#ifndef DLOCK_TEST_HAVE_MEMCHECK
#define DLOCK_TEST_HAVE_MEMCHECK 0
#endif

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    bool running;
    pid_t process; /* the process the thread runs in */
    pthread_t thread;
    bool shutdown;
    bool armed;
    int64_t deadline_ms;
    char budget_text[64]; /* "60.0 s (30 s x2 slack)", "1.500 s" */
    char what[256];
} watchdog = {.mu = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t watchdog_once = PTHREAD_ONCE_INIT;

int64_t test_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t test_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void test_sleep_ms(int64_t ms) {
    if (ms <= 0)
        return;
    /* An absolute deadline: a signal handler interrupting us does not stretch the sleep. */
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR) {
    }
}

double test_scale(void) {
    const char *env = getenv("DLOCK_TEST_SCALE");
    if (env == NULL || *env == '\0')
        return 1.0;
    char *end = NULL;
    double scale = strtod(env, &end);
    if (end == env || *end != '\0' || !(scale > 0.0) || scale > 1.0)
        return 1.0;
    return scale;
}

long test_scaled(long n) {
    double scaled = (double)n * test_scale();
    return scaled < 1.0 ? 1 : (long)scaled;
}

bool test_under_valgrind(void) {
    if (test_scale() < 1.0)
        return true;
    const char *preload = getenv("LD_PRELOAD");
    return preload != NULL && strstr(preload, "vgpreload") != NULL;
}

/* A sanitizer build of the support code is a sanitizer build of the test. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED_BUILD 1
#endif
#endif
#ifndef SANITIZED_BUILD
#define SANITIZED_BUILD 0
#endif

double test_slack_factor(void) {
    const char *env = getenv("DLOCK_TEST_SLACK");
    if (env != NULL && *env != '\0') {
        char *end = NULL;
        double factor = strtod(env, &end);
        if (end != env && *end == '\0' && factor >= 1.0 && factor <= 1000.0)
            return factor;
    }
    if (test_under_valgrind())
        return 20.0;
    return SANITIZED_BUILD ? 3.0 : 2.0;
}

int64_t test_slack_ms(int64_t ms) {
    return (int64_t)((double)ms * test_slack_factor());
}

int64_t test_prompt_ms(void) {
    int64_t bound = test_slack_ms(2500);
    return bound < TEST_SLOW_MS / 2 ? bound : TEST_SLOW_MS / 2;
}

/* ---- watchdog ----------------------------------------------------------------------------- */

/* Called with mu held; never returns. Only lock-free and async-signal-safe steps, because
 * whatever hangs may hold any lock in the process (stdio's included). */
static void watchdog_fire(void) {
    char msg[512];
    int len = snprintf(msg, sizeof msg, "TEST HANG: %s did not finish within %s\n", watchdog.what,
                       watchdog.budget_text);
    if (len > (int)sizeof msg - 1)
        len = (int)sizeof msg - 1;
    /* Keep what the test printed so far, unless the hung thread is inside stdio. */
    if (ftrylockfile(stdout) == 0) {
        fflush_unlocked(stdout);
        funlockfile(stdout);
    }
    ssize_t ignored = write(STDERR_FILENO, msg, (size_t)len);
    (void)ignored;
    redis_fixture_kill_all();
    _exit(1);
}

static void *watchdog_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&watchdog.mu);
    while (!watchdog.shutdown) {
        if (!watchdog.armed) {
            pthread_cond_wait(&watchdog.cv, &watchdog.mu);
            continue;
        }
        if (test_now_ms() >= watchdog.deadline_ms)
            watchdog_fire();
        struct timespec until = {.tv_sec = watchdog.deadline_ms / 1000,
                                 .tv_nsec = (long)(watchdog.deadline_ms % 1000) * 1000000L};
        pthread_cond_timedwait(&watchdog.cv, &watchdog.mu, &until);
    }
    pthread_mutex_unlock(&watchdog.mu);
    return NULL;
}

static void watchdog_init_cv(void) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&watchdog.cv, &attr);
    pthread_condattr_destroy(&attr);
}

static void watchdog_at_exit(void) {
    pthread_mutex_lock(&watchdog.mu);
    if (!watchdog.running) {
        pthread_mutex_unlock(&watchdog.mu);
        return;
    }
    bool join = watchdog.running && watchdog.process == getpid();
    watchdog.shutdown = true;
    watchdog.armed = false;
    pthread_cond_broadcast(&watchdog.cv);
    pthread_mutex_unlock(&watchdog.mu);
    if (join)
        pthread_join(watchdog.thread, NULL);
    pthread_mutex_lock(&watchdog.mu);
    if (join)
        watchdog.running = false;
    watchdog.shutdown = false; /* test_child_exit() callers do not arm again, but may */
    pthread_mutex_unlock(&watchdog.mu);
}

static void watchdog_atfork_prepare(void) {
    pthread_mutex_lock(&watchdog.mu);
}

static void watchdog_atfork_parent(void) {
    pthread_mutex_unlock(&watchdog.mu);
}

static void watchdog_atfork_child(void) {
    watchdog.running = false;
    watchdog.shutdown = false;
    watchdog.armed = false;
    watchdog_init_cv(); /* its waiter (the thread) does not exist here */
    pthread_mutex_unlock(&watchdog.mu);
}

static void watchdog_init(void) {
    watchdog_init_cv();
    pthread_atfork(watchdog_atfork_prepare, watchdog_atfork_parent, watchdog_atfork_child);
    atexit(watchdog_at_exit);
}

static void watchdog_arm(int64_t budget_ms, const char *budget_text, const char *what) {
    pthread_once(&watchdog_once, watchdog_init);
    pthread_mutex_lock(&watchdog.mu);
    if (!watchdog.running) {
        /* Signals stay with the test threads; the watchdog only waits. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int rc = pthread_create(&watchdog.thread, NULL, watchdog_main, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc != 0) {
            pthread_mutex_unlock(&watchdog.mu);
            fprintf(stderr, "test_watchdog_arm: pthread_create: %s\n", strerror(rc));
            abort();
        }
        watchdog.running = true;
        watchdog.process = getpid();
        watchdog.shutdown = false;
    }
    snprintf(watchdog.what, sizeof watchdog.what, "%s", what != NULL ? what : "test");
    snprintf(watchdog.budget_text, sizeof watchdog.budget_text, "%s", budget_text);
    watchdog.deadline_ms = test_now_ms() + budget_ms;
    watchdog.armed = true;
    pthread_cond_broadcast(&watchdog.cv);
    pthread_mutex_unlock(&watchdog.mu);
}

void test_watchdog_arm(unsigned seconds, const char *what) {
    char text[64];
    double factor = test_slack_factor();
    int64_t budget_ms = (int64_t)((double)seconds * 1000.0 * factor);
    snprintf(text, sizeof text, "%.1f s (%u s x%g slack)", (double)budget_ms / 1000.0, seconds,
             factor);
    watchdog_arm(budget_ms, text, what);
}

void test_watchdog_arm_exact_ms(int64_t ms, const char *what) {
    char text[64];
    if (ms % 1000 == 0)
        snprintf(text, sizeof text, "%lld s", (long long)(ms / 1000));
    else
        snprintf(text, sizeof text, "%.3f s", (double)ms / 1000.0);
    watchdog_arm(ms, text, what);
}

void test_watchdog_disarm(void) {
    pthread_once(&watchdog_once, watchdog_init);
    pthread_mutex_lock(&watchdog.mu);
    watchdog.armed = false;
    pthread_cond_broadcast(&watchdog.cv);
    pthread_mutex_unlock(&watchdog.mu);
}

/* ---- forked children ---------------------------------------------------------------------- */

/* Bytes this child inherited lost from its parent (test_fork); 0 outside valgrind. */
static unsigned long inherited_lost;

static unsigned long lost_now(void) {
#if DLOCK_TEST_HAVE_MEMCHECK
    if (RUNNING_ON_VALGRIND) {
        unsigned long leaked = 0, dubious = 0, reachable = 0, suppressed = 0;
        VALGRIND_DO_QUICK_LEAK_CHECK;
        VALGRIND_COUNT_LEAKS(leaked, dubious, reachable, suppressed);
        (void)dubious;
        (void)reachable;
        (void)suppressed;
        return leaked;
    }
#endif
    return 0;
}

pid_t test_fork(void) {
    pid_t pid = fork();
    if (pid == 0)
        inherited_lost = lost_now();
    return pid;
}

void test_child_exit(int status) {
    redis_fixture_cleanup_process();
    if (pthread_once(&watchdog_once, watchdog_init) == 0)
        watchdog_at_exit();
    if (inherited_lost > 0) {
        /* Not this child's leak: leave valgrind (it does not follow exec) with the status. */
        char code[32];
        snprintf(code, sizeof code, "exit %d", status & 0xff);
        fprintf(stderr,
                "test_child_exit: %lu bytes inherited lost from a failed earlier test; "
                "exiting without the leak check\n",
                inherited_lost);
        execl("/bin/sh", "sh", "-c", code, (char *)NULL);
    }
    _exit(status);
}
