/* SPDX-License-Identifier: MIT */
/* redlock.c — a tour of the RedLock (the Redis "distlock" algorithm, Redisson
 * RedissonRedLock): one lock kept on several independent Redis masters, held while a
 * majority of them agree.
 *
 * A RedLock needs N independent masters (N odd, usually 5), one client on each. This
 * example has one server, $DLOCK_URL (scripts/run-demo.sh starts a private redis-server
 * and sets it; ctest runs this program that way), and plays the five masters with it:
 *   - a unix:// URL without a query: databases 1..5 of that server ("?db=1" .. "?db=5"),
 *     each member under the same name, as on five masters;
 *   - any other URL: the URL five times, each member under its own name.
 * Either way the five "masters" share one process, one machine and one clock, which is
 * exactly what a real deployment must not do: use five independent masters (no replicas
 * between them, separate machines or at least separate failure domains).
 *
 * Every step checks its result and the program exits 0 only if each call answered as this
 * comment says:
 *
 *   1. five clients, a member lock on each, the RedLock over them; a lost callback
 *   2. acquire with a 10 s lease: every member held; ttl is the validity left (the lease
 *      less the time taken and a clock drift allowance)
 *   3. a second application (its own five clients) cannot get it (DLOCK_ETIMEDOUT), and
 *      gets it once the first releases
 *   4. with the watchdog the RedLock outlives its lease
 *   5. fenced members: the RedLock's token is the largest its quorum's members gave, made
 *      the floor of their counters, so it rises from holder to holder
 *
 * Build: it is example_redlock in <build>/examples (cmake); run it with
 *   scripts/run-demo.sh build/examples/example_redlock */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlock.h"

#define MASTERS 5
#define WATCHDOG_MS 1500 /* short, so that step 4 sees a renewal quickly */
#define LEASE_MS 10000

/* ---- small helpers ------------------------------------------------------------------------ */

static void sleep_ms(int64_t ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static bool expect(int rc, int want, const char *what) {
    if (rc == want)
        return true;
    fprintf(stderr, "FAILED: %s: got %s, expected %s (%s)\n", what, dlock_err_name(rc),
            dlock_err_name(want), dlock_last_error());
    return false;
}

static bool check(bool ok, const char *what) {
    if (!ok)
        fprintf(stderr, "FAILED: %s\n", what);
    return ok;
}

/* ---- the five "masters" -------------------------------------------------------------------- */

/* The URL of master i (0-based) and the name of its member, as the comment above says. */
static void master_of(int i, char *url, size_t url_size, char *name, size_t name_size,
                      const char *base) {
    const char *env = getenv("DLOCK_URL");
    bool unix_plain = env && strncmp(env, "unix://", 7) == 0 && !strchr(env, '?');
    if (unix_plain) {
        snprintf(url, url_size, "%s?db=%d", env, i + 1);
        snprintf(name, name_size, "%s", base);
    } else {
        /* NULL: the client reads $DLOCK_URL itself (redis://127.0.0.1:6379 if unset) */
        url[0] = '\0';
        snprintf(name, name_size, "%s@%d", base, i + 1);
    }
}

/* One application's RedLock: its own clients, members and composite. */
typedef struct app {
    dlock_client *client[MASTERS];
    dlock_lock *member[MASTERS];
    dlock_lock *redlock;
} app;

static bool app_open(app *a, const char *base, bool fenced) {
    memset(a, 0, sizeof(*a));
    for (int i = 0; i < MASTERS; i++) {
        char url[512], name[128];
        master_of(i, url, sizeof(url), name, sizeof(name), base);
        dlock_options opts;
        dlock_options_init(&opts);
        opts.url = url[0] ? url : NULL;
        opts.watchdog_ms = WATCHDOG_MS;
        if (!expect(dlock_client_new(&opts, &a->client[i]), DLOCK_OK, "dlock_client_new") ||
            !expect(fenced ? dlock_fencedlock_new(a->client[i], name, &a->member[i])
                           : dlock_lock_new(a->client[i], name, &a->member[i]),
                    DLOCK_OK, "member lock"))
            return false;
    }
    return expect(dlock_redlock_new(a->member, MASTERS, &a->redlock), DLOCK_OK,
                  "dlock_redlock_new");
}

/* The composite first, then its members, then their clients. */
static bool app_close(app *a) {
    bool ok = true;
    dlock_lock_free(a->redlock);
    for (int i = 0; i < MASTERS; i++)
        dlock_lock_free(a->member[i]);
    for (int i = 0; i < MASTERS; i++) {
        int rc = dlock_client_free(a->client[i]);
        if (a->client[i] && rc != DLOCK_OK)
            ok = expect(rc, DLOCK_OK, "dlock_client_free");
    }
    memset(a, 0, sizeof(*a));
    return ok;
}

/* ---- the lost callback -------------------------------------------------------------------- */

/* Runs on a client's I/O thread when fewer than a majority of the members could be kept:
 * the work the lock protects must stop. It must be quick and make no blocking dlock call. */
static atomic_int lost_calls;

static void on_lost(dlock_lock *l, uint64_t owner, int reason, void *arg) {
    (void)l;
    (void)owner;
    (void)reason;
    (void)arg;
    atomic_fetch_add(&lost_calls, 1);
}

/* ---- the tour ----------------------------------------------------------------------------- */

int main(void) {
    int status = 1;
    app first, second, fenced;
    memset(&first, 0, sizeof(first));
    memset(&second, 0, sizeof(second));
    memset(&fenced, 0, sizeof(fenced));
    bool flag = false;
    int64_t ttl = 0;

    /* 1. Five clients, one per master; a member lock on each; the RedLock over them. */
    if (!app_open(&first, "example:invoice-run", false) ||
        !expect(dlock_lock_on_lost(first.redlock, on_lost, NULL), DLOCK_OK, "on_lost"))
        goto out;
    printf("1. RedLock \"%s\" over %d members\n", dlock_lock_name(first.redlock), MASTERS);

    /* 2. Acquire: all five asked at once; held because a majority (3) agreed in time. */
    if (!expect(dlock_lock_acquire(first.redlock, LEASE_MS), DLOCK_OK, "acquire") ||
        !expect(dlock_lock_is_held(first.redlock, &flag), DLOCK_OK, "is_held") ||
        !check(flag, "held") || !expect(dlock_lock_ttl(first.redlock, &ttl), DLOCK_OK, "ttl") ||
        !check(ttl > 0 && ttl <= LEASE_MS, "ttl is the validity left"))
        goto out;
    int held_members = 0;
    for (int i = 0; i < MASTERS; i++) {
        if (!expect(dlock_lock_is_held(first.member[i], &flag), DLOCK_OK, "member is_held"))
            goto out;
        held_members += flag;
    }
    if (!check(held_members == MASTERS, "every member held (all masters up)"))
        goto out;
    printf("2. acquired on %d of %d masters; validity left %" PRId64 " ms of a %d ms lease\n",
           held_members, MASTERS, ttl, LEASE_MS);

    /* 3. Another application: its own clients, the same names. */
    if (!app_open(&second, "example:invoice-run", false))
        goto out;
    if (!expect(dlock_lock_try_acquire(second.redlock, 300, LEASE_MS), DLOCK_ETIMEDOUT,
                "second application's try_acquire") ||
        !expect(dlock_lock_release(first.redlock), DLOCK_OK, "release") ||
        !expect(dlock_lock_try_acquire(second.redlock, 2000, LEASE_MS), DLOCK_OK,
                "second application's try_acquire after the release"))
        goto out;
    if (!expect(dlock_lock_release(second.redlock), DLOCK_OK, "second application's release"))
        goto out;
    printf("3. a second application waited 300 ms in vain, then got it after the release\n");

    /* 4. The watchdog: every member is renewed until release. */
    if (!expect(dlock_lock_acquire(first.redlock, DLOCK_WATCHDOG), DLOCK_OK, "acquire (watchdog)"))
        goto out;
    sleep_ms(WATCHDOG_MS + 500);
    if (!expect(dlock_lock_is_held(first.redlock, &flag), DLOCK_OK, "is_held") ||
        !check(flag, "still held after the lease time") ||
        !check(atomic_load(&lost_calls) == 0, "not lost") ||
        !expect(dlock_lock_release(first.redlock), DLOCK_OK, "release"))
        goto out;
    printf("4. with the watchdog: still held after %d ms; released\n", WATCHDOG_MS + 500);

    /* 5. Fenced members: each master keeps its own token counter; the RedLock's token is the
     * largest of the tokens its quorum got, and before the acquire returns a quorum of
     * members is raised to it, so the next holder's token is larger even when its quorum
     * differs. Pass it to the resource you protect, which refuses tokens lower than the
     * highest it has seen (docs/multilock.md says what this rests on). */
    if (!app_open(&fenced, "example:ledger", true))
        goto out;
    uint64_t t1 = 0, t2 = 0;
    if (!expect(dlock_lock_acquire(fenced.redlock, LEASE_MS), DLOCK_OK, "fenced acquire") ||
        !expect(dlock_lock_token(fenced.redlock, &t1), DLOCK_OK, "token") ||
        !expect(dlock_lock_release(fenced.redlock), DLOCK_OK, "fenced release") ||
        !expect(dlock_lock_acquire(fenced.redlock, LEASE_MS), DLOCK_OK, "fenced acquire") ||
        !expect(dlock_lock_token(fenced.redlock, &t2), DLOCK_OK, "token") ||
        !expect(dlock_lock_release(fenced.redlock), DLOCK_OK, "fenced release") ||
        !check(t2 > t1, "the next holder's token is larger"))
        goto out;
    printf("5. fenced members: tokens %" PRIu64 " then %" PRIu64 "\n", t1, t2);

    status = 0;
    printf("OK\n");
out:
    /* Every application is closed, even after an earlier one failed to close. */
    if (!app_close(&fenced))
        status = 1;
    if (!app_close(&second))
        status = 1;
    if (!app_close(&first))
        status = 1;
    return status;
}
