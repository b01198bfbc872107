/* SPDX-License-Identifier: MIT */
/* cmd_run.c — `dlock run`: flock(1) across machines.
 *
 * Takes a lock (fenced; or fair, or spin, or a read-write lock's half; or a semaphore's permits)
 * through the public API, runs COMMAND with DLOCK_NAME and DLOCK_TOKEN in its environment,
 * passes on the signals dlock receives, releases when COMMAND ends and exits with
 * COMMAND's status. If the lease is lost while COMMAND runs, COMMAND is terminated and
 * dlock exits 75.
 *
 * The client is the blocking face, but the acquire is its async twin on the thread's own
 * owner id (dlock_thread_owner(), so the blocking release at the end is the same owner):
 * the main thread then waits on the self-pipe of events.c for the acquire, a signal, the
 * lost callback or the end of COMMAND alike, so ^C stops a wait at once.
 *
 * Lock kinds are a table (the default fenced lock, --fair, --spin, --read, --write): a kind is a
 * row with a constructor, and a row without one is refused as "not available in this
 * version", so a kind the library gains later is one line here. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "redis_lib.h"
#include "run.h"

extern char **environ;

/* ---- lock kinds ------------------------------------------------------------------------ */

/* The lock dlock run holds: the handle it acquires and releases, and what owns it. */
typedef struct run_lock {
    dlock_lock *lock;
    dlock_rwlock *rw; /* read-write lock: lock is one of its halves (borrowed from it) */
} run_lock;

static int make_fenced(dlock_client *c, const char *name, run_lock *out) {
    return dlock_fencedlock_new(c, name, &out->lock);
}

static int make_fair(dlock_client *c, const char *name, run_lock *out) {
    return dlock_fairlock_new(c, name, &out->lock);
}

static int make_spin(dlock_client *c, const char *name, run_lock *out) {
    return dlock_spinlock_new(c, name, &out->lock);
}

static int make_rw(dlock_client *c, const char *name, run_lock *out, bool write) {
    int rc = dlock_rwlock_new(c, name, &out->rw);
    if (rc == DLOCK_OK)
        out->lock = write ? dlock_rwlock_write(out->rw) : dlock_rwlock_read(out->rw);
    return rc;
}

static int make_read(dlock_client *c, const char *name, run_lock *out) {
    return make_rw(c, name, out, false);
}

static int make_write(dlock_client *c, const char *name, run_lock *out) {
    return make_rw(c, name, out, true);
}

static void run_lock_free(run_lock *l) {
    if (l->rw)
        dlock_rwlock_free(l->rw); /* and its halves */
    else
        dlock_lock_free(l->lock);
    l->lock = NULL;
    l->rw = NULL;
}

typedef enum { KIND_LOCK, KIND_FAIR, KIND_SPIN, KIND_READ, KIND_WRITE, KIND_COUNT } kind_id;

typedef struct lock_kind {
    const char *option; /* how it is asked for; NULL for the default */
    const char *what;   /* for messages: "fair locks" */
    /* Makes a handle of this kind; NULL: a kind this version of the library lacks (the
     * option is still parsed, and refused with "not available in this version"). */
    int (*make)(dlock_client *c, const char *name, run_lock *out);
    bool fenced; /* DLOCK_TOKEN is exported */
} lock_kind;

static const lock_kind kinds[KIND_COUNT] = {
    [KIND_LOCK] = {NULL, "locks", make_fenced, true},
    [KIND_FAIR] = {"--fair", "fair locks", make_fair, false},
    [KIND_SPIN] = {"--spin", "spin locks", make_spin, false},
    [KIND_READ] = {"--read", "read-write locks", make_read, false},
    [KIND_WRITE] = {"--write", "read-write locks", make_write, false},
};

/* ---- options --------------------------------------------------------------------------- */

enum {
    OPT_WAIT = 1,
    OPT_LEASE,
    OPT_WATCHDOG,
    OPT_FAIR,
    OPT_SPIN,
    OPT_READ,
    OPT_WRITE,
    OPT_SEMAPHORE,
    OPT_PERMITS,
    OPT_KILL_AFTER,
    OPT_MAX_HOLD,
};

static const cli_opt run_opts_table[] = {
    {"wait", 0, true, OPT_WAIT, false},
    {"lease", 0, true, OPT_LEASE, false},
    {"watchdog", 0, false, OPT_WATCHDOG, false},
    {"fair", 0, false, OPT_FAIR, false},
    {"spin", 0, false, OPT_SPIN, false},
    {"read", 0, false, OPT_READ, false},
    {"write", 0, false, OPT_WRITE, false},
    {"semaphore", 0, true, OPT_SEMAPHORE, false},
    {"permits", 0, true, OPT_PERMITS, false},
    {"kill-after", 0, true, OPT_KILL_AFTER, false},
    {"max-hold", 0, true, OPT_MAX_HOLD, false}, /* a bound on a --watchdog hold */
    {NULL, 0, false, 0, false},
};

typedef struct run_opts {
    const char *name;  /* the lock's or the semaphore's name */
    bool is_semaphore; /* --semaphore NAME */
    kind_id kind;
    bool kind_given; /* one of --fair, --spin, --read, --write */
    int64_t wait_ms; /* DLOCK_FOREVER unless --wait */
    bool wait_given;
    int64_t lease_ms; /* DLOCK_WATCHDOG unless --lease */
    bool lease_given, watchdog_given;
    int64_t permits; /* --permits, default 1 */
    bool permits_given;
    int64_t kill_after_ms; /* --kill-after, default 5000 */
    int64_t max_hold_ms;   /* --max-hold, 0: no bound */
    char **command;        /* NULL-terminated */
} run_opts;

static void print_help(void) {
    printf(
        "Usage: dlock run [OPTIONS] NAME [--] COMMAND [ARGS...]\n"
        "       dlock run [OPTIONS] NAME [OPTIONS] -- COMMAND [ARGS...]\n"
        "       dlock run --semaphore NAME [--permits N] [OPTIONS] [--] COMMAND [ARGS...]\n"
        "\n"
        "Runs COMMAND while holding the lock NAME, flock(1) across machines: every dlock\n"
        "run (and every dlock or Redisson client) using NAME on the same Redis waits its\n"
        "turn. The lock is Redisson's RLock with fencing tokens (RFencedLock), or with\n"
        "--fair an RFairLock, with --spin an RSpinLock, with --read / --write a half of an\n"
        "RReadWriteLock.\n"
        "COMMAND's exit status is passed through.\n"
        "\n"
        "Options (before NAME, or anywhere before a '--' that ends them):\n"
        "  --wait MS        give up after MS ms if not obtained (exit 73); 0 = one attempt;\n"
        "                   default: wait as long as it takes\n"
        "  --watchdog       hold until COMMAND ends; the lease (--watchdog-ms, default 30000)\n"
        "                   is renewed every third of it (the default)\n"
        "  --lease MS       hold for at most MS ms, not renewed: when the lease runs out,\n"
        "                   COMMAND is terminated as for a lost lease\n"
        "  --fair           a fair lock: waiters get it first come, first served\n"
        "  --spin           a spin lock: no pub/sub; a waiter tries again after a backoff\n"
        "                   (1 ms doubling to 128 ms), as Redisson's RSpinLock\n"
        "  --read           the shared half of the read-write lock NAME: any number of\n"
        "                   --read runs together, none while a --write run holds it\n"
        "  --write          the exclusive half: alone, no readers\n"
        "  --semaphore NAME take permits of the semaphore NAME instead of a lock; they are\n"
        "                   given back when COMMAND ends (dlock semaphore NAME set N first)\n"
        "  --permits N      how many permits (default 1)\n"
        "  --kill-after MS  SIGKILL COMMAND if it still runs MS ms after SIGTERM (default 5000)\n"
        "  --max-hold MS    stop renewing the watchdog's lease MS ms after the lock was\n"
        "                   obtained, whether COMMAND ended or not: when the lease then\n"
        "                   runs out (up to --watchdog-ms later), COMMAND is terminated as\n"
        "                   for a lost lease (exit 75). Default: no bound\n"
        "\n"
        "COMMAND's environment (besides dlock's own):\n"
        "  DLOCK_NAME   NAME\n"
        "  DLOCK_TOKEN  (the default lock only) this acquisition's fencing token: higher\n"
        "               than every earlier holder's. Hand it to what you protect, and let\n"
        "               that refuse writes with a token lower than the highest it has seen.\n"
        "\n"
        "Lost lease: if the lock vanishes while COMMAND runs (deleted, expired, force-\n"
        "released) or Redis stays unreachable until the lease runs out, COMMAND gets\n"
        "SIGTERM (SIGKILL after --kill-after), dlock prints\n"
        "  dlock: lease on NAME lost (REASON); command terminated\n"
        "and exits 75. Exit 75 also when the loss is found only at the release: COMMAND\n"
        "finished, but may not have been protected to its end.\n"
        "\n"
        "Signals: SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to dlock are passed on to\n"
        "COMMAND (not twice: the terminal's own ^C reaches COMMAND directly); dlock then\n"
        "releases and exits with COMMAND's status. While dlock still waits for the lock\n"
        "they end the wait (exit 128+N). Run from a script (stdin not a terminal it owns),\n"
        "COMMAND gets a process group of its own and signals go to the whole group, so\n"
        "what COMMAND started stops with it. If dlock itself dies, COMMAND gets SIGTERM.\n"
        "\n"
        "Exit status: COMMAND's own (0..255; 128+N if a signal N killed it); 64 usage;\n"
        "69 Redis unavailable; 73 not obtained within --wait; 74 the release failed or\n"
        "was refused (held until its lease runs out); 75 lease lost; 126/127 COMMAND not\n"
        "executable / not found; 'dlock --help' lists them all.\n"
        "\n"
        "Examples:\n"
        "  dlock run nightly-report -- ./report.sh --date today\n"
        "  dlock run --wait 0 backup -- ./backup.sh || echo \"backup already running\"\n"
        "  dlock run --semaphore encoders --permits 2 -- ffmpeg -i in.mp4 out.webm\n"
        "\n"
        "%s",
        cli_global_help);
}

static kind_id kind_of_option(int id) {
    switch (id) {
    case OPT_FAIR:
        return KIND_FAIR;
    case OPT_SPIN:
        return KIND_SPIN;
    case OPT_READ:
        return KIND_READ;
    default:
        return KIND_WRITE;
    }
}

static int set_kind(run_opts *o, kind_id kind) {
    if (o->kind_given && o->kind != kind)
        return cli_usage_error("%s and %s: choose one", kinds[o->kind].option, kinds[kind].option);
    o->kind = kind;
    o->kind_given = true;
    return CLI_EXIT_OK;
}

static int parse_ms_option(const char *option, const char *value, int64_t min, int64_t *out) {
    if (!cli_parse_i64(value, min, out))
        return cli_usage_error("%s: '%s' is not a number of milliseconds >= %lld", option, value,
                               (long long)min);
    return CLI_EXIT_OK;
}

/* Parses argv[from..to) as options and at most max_positionals positionals, collected in
 * pos[]. With options_first, parsing stops at the first positional and *stop is the index
 * of the argument after it. */
static int parse_options(int argc, char **argv, bool options_first, run_opts *o, const char **pos,
                         int max_positionals, int *npos, int *stop) {
    cli_args a;
    cli_args_init(&a, argc, argv, run_opts_table, options_first);
    *npos = 0;
    int rc;
    for (;;) {
        int id = cli_next(&a);
        switch (id) {
        case CLI_ARG_END:
            *stop = a.next;
            return CLI_EXIT_OK;
        case CLI_ARG_HELP:
            print_help();
            return -1;
        case CLI_ARG_ERROR:
            return CLI_EXIT_USAGE;
        case CLI_ARG_POSITIONAL:
            if (*npos >= max_positionals)
                return cli_usage_error("unexpected '%s' before '--' (one NAME, then -- COMMAND)",
                                       a.value);
            pos[(*npos)++] = a.value;
            if (options_first) {
                *stop = a.next;
                return CLI_EXIT_OK;
            }
            break;
        case OPT_WAIT:
            if ((rc = parse_ms_option("--wait", a.value, 0, &o->wait_ms)) != 0)
                return rc;
            o->wait_given = true;
            break;
        case OPT_LEASE:
            if ((rc = parse_ms_option("--lease", a.value, 1, &o->lease_ms)) != 0)
                return rc;
            o->lease_given = true;
            break;
        case OPT_WATCHDOG:
            o->watchdog_given = true;
            break;
        case OPT_FAIR:
        case OPT_SPIN:
        case OPT_READ:
        case OPT_WRITE:
            if ((rc = set_kind(o, kind_of_option(id))) != 0)
                return rc;
            break;
        case OPT_SEMAPHORE:
            if (!a.value[0])
                return cli_usage_error("--semaphore needs a NAME");
            o->name = a.value;
            o->is_semaphore = true;
            break;
        case OPT_PERMITS:
            if (!cli_parse_i64(a.value, 1, &o->permits))
                return cli_usage_error("--permits: '%s' is not a number >= 1", a.value);
            o->permits_given = true;
            break;
        case OPT_KILL_AFTER:
            if ((rc = parse_ms_option("--kill-after", a.value, 0, &o->kill_after_ms)) != 0)
                return rc;
            break;
        case OPT_MAX_HOLD:
            if ((rc = parse_ms_option("--max-hold", a.value, 1, &o->max_hold_ms)) != 0)
                return rc;
            if (o->max_hold_ms > DLOCK_MAX_TIME_MS)
                return cli_usage_error("--max-hold: '%s' is more than %lld ms (ten years)", a.value,
                                       (long long)DLOCK_MAX_TIME_MS);
            break;
        default:
            return CLI_EXIT_SOFTWARE;
        }
    }
}

/* Returns 0, -1 after --help, or an exit code. */
static int parse_command_line(int argc, char **argv, run_opts *o) {
    memset(o, 0, sizeof(*o));
    o->kind = KIND_LOCK;
    o->wait_ms = DLOCK_FOREVER;
    o->lease_ms = DLOCK_WATCHDOG;
    o->permits = 1;
    o->kill_after_ms = 5000;

    int dashdash = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            dashdash = i;
            break;
        }
    }
    const char *pos[1] = {NULL};
    int npos = 0, stop = argc, rc;
    if (dashdash) {
        /* Options and NAME in any order before "--"; COMMAND after it. */
        rc = parse_options(dashdash, argv, false, o, pos, 1, &npos, &stop);
        o->command = argv + dashdash + 1;
    } else {
        /* flock style: options, NAME, COMMAND. */
        rc = parse_options(argc, argv, true, o, pos, 1, &npos, &stop);
        o->command = argv + stop;
        if (rc == 0 && o->is_semaphore && npos == 1)
            o->command = argv + stop - 1; /* --semaphore NAME: the positional is COMMAND */
        if (o->is_semaphore)
            npos = 0;
    }
    if (rc != 0)
        return rc;

    if (npos == 1) {
        if (o->is_semaphore)
            return cli_usage_error("both --semaphore %s and NAME '%s': give one", o->name, pos[0]);
        if (!pos[0][0])
            return cli_usage_error("NAME is empty");
        o->name = pos[0];
    }
    if (!o->name)
        return cli_usage_error("no NAME given");
    if (!o->command[0])
        return cli_usage_error("no COMMAND given (dlock run NAME -- COMMAND ARGS...)");
    if (o->lease_given && o->watchdog_given)
        return cli_usage_error("--lease and --watchdog: choose one");
    if (o->max_hold_ms && (o->lease_given || o->is_semaphore))
        return cli_usage_error("--max-hold bounds a --watchdog hold of a lock (%s)",
                               o->is_semaphore ? "a semaphore's permits are not renewed"
                                               : "a --lease is its own bound");
    if (o->is_semaphore) {
        if (o->kind_given)
            return cli_usage_error("%s is for locks, not with --semaphore", kinds[o->kind].option);
        if (o->lease_given || o->watchdog_given)
            return cli_usage_error("--lease and --watchdog are for locks: a semaphore's permits "
                                   "have no lease");
    } else if (o->permits_given) {
        return cli_usage_error("--permits goes with --semaphore NAME");
    }
    if (!o->is_semaphore && !kinds[o->kind].make) {
        cli_error("%s: %s are not available in this version", kinds[o->kind].option,
                  kinds[o->kind].what);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* ---- what the library's callbacks tell the main thread --------------------------------- */

typedef struct run_state {
    atomic_int acquire_done;
    atomic_int acquire_status;
    char acquire_detail[1024]; /* dlock_last_error() of a failed acquire, written before done */
    atomic_int lost;
    atomic_int lost_reason;
} run_state;

static void acquire_finished(run_state *st, int status) {
    if (status != DLOCK_OK)
        snprintf(st->acquire_detail, sizeof(st->acquire_detail), "%s", dlock_last_error());
    atomic_store(&st->acquire_status, status);
    atomic_store(&st->acquire_done, 1);
    events_wake();
}

static void on_lock_acquired(dlock_lock *l, int status, void *arg) {
    (void)l;
    acquire_finished(arg, status);
}

static void on_permits_acquired(dlock_semaphore *s, int status, void *arg) {
    (void)s;
    acquire_finished(arg, status);
}

static void on_lost(dlock_lock *l, uint64_t owner, int reason, void *arg) {
    (void)l;
    (void)owner;
    run_state *st = arg;
    atomic_store(&st->lost_reason, reason);
    atomic_store(&st->lost, 1);
    events_wake();
}

static const char *lost_reason_text(int reason) {
    if (reason == DLOCK_ECONN)
        return "Redis unreachable until the lease ran out";
    if (reason == DLOCK_LOST_MAX_HOLD)
        return "held for --max-hold; its lease then ran out";
    return "the lock was deleted, expired or taken over";
}

/* Waits for the acquire's callback or a terminating signal: 0, or the signal. */
static int wait_acquired(run_state *st) {
    for (;;) {
        if (atomic_load(&st->acquire_done))
            return 0;
        int sig = events_take_signal(NULL);
        if (sig)
            return sig;
        (void)events_take_child();
        events_wait(-1);
    }
}

/* A failed acquire (status from the callback) as a message and an exit code. */
static int acquire_failed(const run_opts *o, const run_state *st, int status) {
    if (status == DLOCK_ETIMEDOUT) {
        /* the library's detail says more than "timed out" when it knows more: an acquisition
         * too few replicas acknowledged (sync_replicas) was taken, and given back */
        char detail[sizeof(st->acquire_detail) + 4] = "";
        if (strstr(st->acquire_detail, "acknowledged"))
            snprintf(detail, sizeof(detail), " (%s)", st->acquire_detail);
        if (o->is_semaphore)
            cli_error("%s: %lld permit(s) not obtained within %lld ms%s", o->name,
                      (long long)o->permits, (long long)o->wait_ms, detail);
        else
            cli_error("%s: not obtained within %lld ms%s", o->name, (long long)o->wait_ms, detail);
        return CLI_EXIT_TIMEOUT;
    }
    if (st->acquire_detail[0] && strcmp(st->acquire_detail, dlock_strerror(status)) != 0)
        cli_error("%s: %s (%s)", o->name, dlock_strerror(status), st->acquire_detail);
    else
        cli_error("%s: %s", o->name, dlock_strerror(status));
    if (status == DLOCK_EREDIS) { /* the detail is in st, not in this thread's last error */
        if (strstr(st->acquire_detail, "WRONGTYPE"))
            return CLI_EXIT_DATAERR;
        if (strstr(st->acquire_detail, "NOPERM") || strstr(st->acquire_detail, "NOAUTH"))
            return CLI_EXIT_NOPERM;
        return CLI_EXIT_UNAVAILABLE;
    }
    return cli_exit_code(status);
}

/* ---- running COMMAND ------------------------------------------------------------------- */

/* environ without DLOCK_NAME / DLOCK_TOKEN, then those two. NULL on ENOMEM. */
static char **command_env(const char *name, const char *token) {
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **env = calloc(n + 3, sizeof(*env));
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "DLOCK_NAME=", 11) != 0 &&
            strncmp(environ[i], "DLOCK_TOKEN=", 12) != 0)
            env[k++] = environ[i];
    size_t len = strlen(name) + 12;
    char *name_var = malloc(len);
    if (!name_var) {
        free(env);
        return NULL;
    }
    snprintf(name_var, len, "DLOCK_NAME=%s", name);
    env[k++] = name_var;
    if (token) {
        len = strlen(token) + 13;
        char *token_var = malloc(len);
        if (!token_var) {
            free(name_var);
            free(env);
            return NULL;
        }
        snprintf(token_var, len, "DLOCK_TOKEN=%s", token);
        env[k++] = token_var;
    }
    env[k] = NULL;
    return env;
}

static void command_env_free(char **env, bool has_token) {
    if (!env)
        return;
    size_t n = 0;
    while (env[n])
        n++;
    free(env[n - 1]);
    if (has_token)
        free(env[n - 2]);
    free(env);
}

typedef struct supervision {
    int exit_code;   /* COMMAND's, as dlock exits with it */
    bool terminated; /* dlock terminated it: the lease was lost or ran out */
} supervision;

/* Runs until COMMAND ended: passes signals on, and terminates COMMAND when the lost
 * callback fires or the fixed lease's deadline (>= 0) passes. */
static void supervise(run_child *ch, run_state *st, const run_opts *o, int64_t lease_deadline,
                      supervision *out) {
    int64_t kill_at = -1;
    out->terminated = false;
    for (;;) {
        (void)events_take_child();
        int status;
        if (child_reap(ch, &status)) {
            out->exit_code = child_exit_code(status);
            return;
        }
        bool from_terminal = false;
        int sig;
        while ((sig = events_take_signal(&from_terminal)) != 0)
            if (ch->own_group || !from_terminal) /* the terminal signalled COMMAND too */
                child_signal(ch, sig);

        int64_t now = cli_now_ms();
        if (!out->terminated) {
            char why[128] = "";
            if (atomic_load(&st->lost))
                snprintf(why, sizeof(why), "%s", lost_reason_text(atomic_load(&st->lost_reason)));
            else if (lease_deadline >= 0 && now >= lease_deadline)
                snprintf(why, sizeof(why), "its lease of %lld ms ran out", (long long)o->lease_ms);
            if (why[0]) {
                fprintf(stderr, "dlock: lease on %s lost (%s); command terminated\n", o->name, why);
                child_signal(ch, SIGTERM);
                out->terminated = true;
                kill_at = now + o->kill_after_ms;
            }
        } else if (kill_at >= 0 && now >= kill_at) {
            child_signal(ch, SIGKILL);
            kill_at = -1;
        }

        int64_t wake_at = -1; /* -1: nothing timed; the wait ends on an event */
        if (!out->terminated && lease_deadline >= 0)
            wake_at = lease_deadline;
        if (kill_at >= 0)
            wake_at = kill_at;
        events_wait(wake_at < 0 ? -1 : wake_at > now ? wake_at - now : 0);
    }
}

/* ---- a lock ---------------------------------------------------------------------------- */

static int run_with_lock(dlock_client *c, const run_opts *o, run_state *st) {
    const lock_kind *kind = &kinds[o->kind];
    run_lock held = {NULL, NULL}, spare = {NULL, NULL};
    int rc = kind->make(c, o->name, &held);
    if (rc == DLOCK_OK)
        rc = kind->make(c, o->name, &spare); /* releases a hold the cancel raced with */
    if (rc == DLOCK_OK)
        rc = dlock_lock_on_lost(held.lock, on_lost, st);
    if (rc == DLOCK_OK && o->max_hold_ms)
        rc = dlock_lock_set_max_hold(held.lock, o->max_hold_ms);
    uint64_t owner = dlock_thread_owner();
    if (rc == DLOCK_OK)
        rc = dlock_lock_acquire_async(held.lock, owner, o->wait_ms, o->lease_ms, on_lock_acquired,
                                      st);
    if (rc != DLOCK_OK) {
        run_lock_free(&held);
        run_lock_free(&spare);
        return cli_fail(rc, o->name);
    }

    int sig = wait_acquired(st);
    if (sig) {
        /* Stop waiting: freeing the handle cancels the acquire. One that completed in the
         * meantime is released, through the spare handle of the same name and owner if the
         * first is gone already. */
        if (!atomic_load(&st->acquire_done))
            run_lock_free(&held);
        if (atomic_load(&st->acquire_done) && atomic_load(&st->acquire_status) == DLOCK_OK)
            dlock_lock_release(held.lock ? held.lock : spare.lock);
        run_lock_free(&held);
        run_lock_free(&spare);
        return 128 + sig;
    }
    int status = atomic_load(&st->acquire_status);
    if (status != DLOCK_OK) {
        run_lock_free(&held);
        run_lock_free(&spare);
        return acquire_failed(o, st, status);
    }

    /* A fixed lease is not watched: dlock ends COMMAND when it runs out. What Redis has left
     * of it, read now, keeps the deadline from being later than Redis's (a read-write
     * lock's TTL is its longest read hold's: never more than this hold's lease). */
    int64_t lease_deadline = -1;
    if (o->lease_ms > 0) {
        int64_t before = cli_now_ms(), ttl = 0;
        if (dlock_lock_ttl(held.lock, &ttl) == DLOCK_OK && ttl >= 0)
            lease_deadline = before + (ttl < o->lease_ms ? ttl : o->lease_ms);
        else
            lease_deadline = before; /* gone already */
    }

    char token_text[32] = "";
    uint64_t token = 0;
    if (kind->fenced && dlock_lock_token_of(held.lock, owner, &token) == DLOCK_OK)
        snprintf(token_text, sizeof(token_text), "%" PRIu64, token);
    char **env = command_env(o->name, token_text[0] ? token_text : NULL);
    int exit_code = CLI_EXIT_SOFTWARE;
    run_child ch;
    memset(&ch, 0, sizeof(ch));
    if (!env) {
        cli_error("out of memory");
    } else if (child_start(&ch, o->command, env, &exit_code) == 0) {
        supervision sv;
        supervise(&ch, st, o, lease_deadline, &sv);
        exit_code = sv.exit_code;
        if (sv.terminated) {
            child_kill_leftovers(&ch);
            exit_code = CLI_EXIT_LOST;
        }
    }
    command_env_free(env, token_text[0] != '\0');

    if (exit_code == CLI_EXIT_LOST) {
        /* the hold is gone; the release would only say DLOCK_ELOST */
    } else if (atomic_load(&st->lost)) {
        fprintf(stderr, "dlock: lease on %s lost (%s) as the command ended\n", o->name,
                lost_reason_text(atomic_load(&st->lost_reason)));
        exit_code = CLI_EXIT_LOST;
    } else {
        rc = dlock_lock_release(held.lock);
        if (rc == DLOCK_ELOST) {
            fprintf(stderr,
                    "dlock: lease on %s lost (found at the release); the command ended but may "
                    "not have been protected to its end\n",
                    o->name);
            exit_code = CLI_EXIT_LOST;
        } else if (rc != DLOCK_OK) {
            cli_error("could not release %s: %s (%s); it stays held until its lease runs out; "
                      "the command exited %d",
                      o->name, dlock_strerror(rc), dlock_last_error(), exit_code);
            exit_code = CLI_EXIT_NOT_RELEASED;
        }
    }
    run_lock_free(&held);
    run_lock_free(&spare);
    return exit_code;
}

/* ---- a semaphore's permits ------------------------------------------------------------- */

/* A wait on a semaphore nobody ever set would wait in silence for permits nobody adds: say
 * so first. Only read (EXISTS); a semaphore is never created here. */
static void note_never_set(dlock_client *c, const run_opts *o) {
    const char *argv[] = {"EXISTS", o->name};
    redis_lib_reply *r = NULL;
    if (redis_lib_call(c, 2, argv, &r) != DLOCK_OK)
        return; /* the acquire meets the same trouble and says it */
    if (r->type == DLOCK__REPLY_INTEGER && r->integer == 0)
        cli_error("semaphore %s has never been set (no key %s): waiting for permits nobody has "
                  "added yet; 'dlock semaphore %s set N' sets it",
                  o->name, o->name, o->name);
    redis_lib_reply_free(r);
}

static int run_with_semaphore(dlock_client *c, const run_opts *o, run_state *st) {
    dlock_semaphore *sem = NULL, *spare = NULL;
    note_never_set(c, o);
    int rc = dlock_semaphore_new(c, o->name, &sem);
    if (rc == DLOCK_OK)
        rc = dlock_semaphore_new(c, o->name, &spare);
    if (rc == DLOCK_OK)
        rc = dlock_semaphore_acquire_async(sem, o->permits, o->wait_ms, on_permits_acquired, st);
    if (rc != DLOCK_OK) {
        dlock_semaphore_free(sem);
        dlock_semaphore_free(spare);
        return cli_fail(rc, o->name);
    }
    int sig = wait_acquired(st);
    if (sig) {
        if (!atomic_load(&st->acquire_done)) {
            dlock_semaphore_free(sem);
            sem = NULL;
        }
        if (atomic_load(&st->acquire_done) && atomic_load(&st->acquire_status) == DLOCK_OK)
            dlock_semaphore_release(sem ? sem : spare, o->permits);
        dlock_semaphore_free(sem);
        dlock_semaphore_free(spare);
        return 128 + sig;
    }
    int status = atomic_load(&st->acquire_status);
    if (status != DLOCK_OK) {
        dlock_semaphore_free(sem);
        dlock_semaphore_free(spare);
        return acquire_failed(o, st, status);
    }

    char **env = command_env(o->name, NULL);
    int exit_code = CLI_EXIT_SOFTWARE;
    run_child ch;
    memset(&ch, 0, sizeof(ch));
    if (!env) {
        cli_error("out of memory");
    } else if (child_start(&ch, o->command, env, &exit_code) == 0) {
        supervision sv;
        supervise(&ch, st, o, -1, &sv);
        exit_code = sv.exit_code;
    }
    command_env_free(env, false);
    rc = dlock_semaphore_release(sem, o->permits);
    if (rc != DLOCK_OK) {
        cli_error("could not give back %lld permit(s) of %s: %s (%s); they stay taken ('dlock "
                  "semaphore %s add %lld' gives them back); the command exited %d",
                  (long long)o->permits, o->name, dlock_strerror(rc), dlock_last_error(), o->name,
                  (long long)o->permits, exit_code);
        exit_code = CLI_EXIT_NOT_RELEASED;
    }
    dlock_semaphore_free(sem);
    dlock_semaphore_free(spare);
    return exit_code;
}

/* ---- the command ----------------------------------------------------------------------- */

int cmd_run(int argc, char **argv) {
    run_opts o;
    int rc = parse_command_line(argc, argv, &o);
    if (rc < 0)
        return CLI_EXIT_OK; /* --help */
    if (rc != 0)
        return rc;
    dlock_client *c = NULL;
    rc = cli_connect(&c); /* ^C while connecting simply ends dlock: nothing is held yet */
    if (rc != 0)
        return rc;
    if (events_open() != 0) {
        cli_error("cannot set up signal handling: %s", strerror(errno));
        dlock_client_free(c);
        return CLI_EXIT_SOFTWARE;
    }
    static run_state st; /* static: callbacks may touch it until the client is freed */
    rc = o.is_semaphore ? run_with_semaphore(c, &o, &st) : run_with_lock(c, &o, &st);
    dlock_client_free(c);
    return rc;
}
