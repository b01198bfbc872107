/* SPDX-License-Identifier: MIT */
/* latch.c — a coordinator waits for its workers: the count-down latch (Redisson
 * RCountDownLatch).
 *
 * A coordinator service (client A) must not send traffic before its 3 workers (threads
 * of another service, client B) have finished their start-up. Each worker counts the
 * latch "example:workers-ready" down once when it is ready; the coordinator waits until
 * the count reaches zero. Later the coordinator asks the workers to reload their
 * configuration and uses the same latch again for that second round. The start of the
 * second round is itself a latch, "example:reload-go", with a count of 1: a start gate
 * that the workers wait on and the coordinator opens.
 *
 * Reads the server from $DLOCK_URL (scripts/run-demo.sh starts a private redis-server and
 * sets it; ctest runs this program that way). Every step checks its result and the
 * program exits 0 only if each call answered as this comment says:
 *
 *   1. the coordinator sets both latches (try_set_count 3 and 1) before any worker starts
 *   2. start-up: the workers are ready after 100, 200 and 300 ms; the coordinator's
 *      await(100 ms) times out (DLOCK_ETIMEDOUT), await(5 s) returns once all 3 counted
 *      down; the count is then 0 (the latch is deleted in Redis)
 *   3. second round: try_set_count(3) works again on the finished latch, and a second
 *      try_set_count while it counts is refused (was_set false); the coordinator opens the
 *      gate with count_down
 *   4. one worker's reload is slow: await(500 ms) times out with 1 left; a longer await
 *      returns when it is done
 *
 * Build: it is example_latch in <build>/examples (cmake); run it with
 *   scripts/run-demo.sh build/examples/example_latch */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dlock.h"

#define READY_NAME "example:workers-ready"
#define GATE_NAME "example:reload-go"
enum { WORKERS = 3 };

/* ---- small helpers ------------------------------------------------------------------------ */

static void sleep_ms(int64_t ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Says whether rc is what the step expects; if not, prints the code's name and the
 * detail dlock keeps for the calling thread. */
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

/* ---- the workers (client B) --------------------------------------------------------------- */

typedef struct worker {
    int number;         /* 1..WORKERS */
    dlock_latch *ready; /* READY_NAME, on client B */
    dlock_latch *gate;  /* GATE_NAME, on client B */
    int64_t startup_ms; /* how long its start-up takes */
    int64_t reload_ms;  /* how long its reload takes */
    atomic_int rounds;  /* rounds it has counted down */
    bool ok;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    /* Start-up: warm caches, open connections ... then say "ready". */
    sleep_ms(w->startup_ms);
    /* the round's work is done before it is announced: the coordinator may see the count
     * reach zero before this thread returns from count_down */
    atomic_fetch_add(&w->rounds, 1);
    if (!expect(dlock_latch_count_down(w->ready), DLOCK_OK, "worker: count_down (start-up)"))
        return NULL;

    /* Serve until the coordinator opens the gate for a reload. A worker that waits forever
     * for a coordinator that may have died would hang: 10 s is the limit here. */
    if (!expect(dlock_latch_await(w->gate, 10000), DLOCK_OK, "worker: await the gate"))
        return NULL;
    sleep_ms(w->reload_ms);
    atomic_fetch_add(&w->rounds, 1);
    if (!expect(dlock_latch_count_down(w->ready), DLOCK_OK, "worker: count_down (reload)"))
        return NULL;
    w->ok = true;
    return NULL;
}

/* ---- the coordinator (client A) ----------------------------------------------------------- */

int main(void) {
    int status = 1, rc;
    dlock_client *coordinator = NULL, *service = NULL;
    dlock_latch *ready = NULL, *gate = NULL;     /* the coordinator's handles */
    dlock_latch *w_ready = NULL, *w_gate = NULL; /* the workers' handles */
    worker workers[WORKERS];
    pthread_t threads[WORKERS];
    int started = 0;
    bool was_set = false, gate_opened = false;
    int64_t count = -1;

    /* Two clients stand for two services; url NULL: $DLOCK_URL, else
     * redis://127.0.0.1:6379. A latch handle is only a name: no I/O until it is used. */
    if (!expect(dlock_client_new(NULL, &coordinator), DLOCK_OK, "dlock_client_new A") ||
        !expect(dlock_client_new(NULL, &service), DLOCK_OK, "dlock_client_new B") ||
        !expect(dlock_latch_new(coordinator, READY_NAME, &ready), DLOCK_OK, "dlock_latch_new") ||
        !expect(dlock_latch_new(coordinator, GATE_NAME, &gate), DLOCK_OK, "dlock_latch_new") ||
        !expect(dlock_latch_new(service, READY_NAME, &w_ready), DLOCK_OK, "dlock_latch_new") ||
        !expect(dlock_latch_new(service, GATE_NAME, &w_gate), DLOCK_OK, "dlock_latch_new"))
        goto out;

    /* 1. Set the counts before anyone can count down or wait: await on a latch that was
     * never set returns at once (its count is 0). try_set_count refuses a latch that is
     * still counting, e.g. left by an interrupted earlier run. */
    if (!expect(dlock_latch_try_set_count(ready, WORKERS, &was_set), DLOCK_OK,
                "try_set_count(ready, 3)") ||
        !check(was_set, READY_NAME " was not counting (delete the key if an earlier run was "
                                   "interrupted)") ||
        !expect(dlock_latch_try_set_count(gate, 1, &was_set), DLOCK_OK, "try_set_count(gate, 1)") ||
        !check(was_set, GATE_NAME " was not counting"))
        goto out;
    printf("1. coordinator on A: \"%s\" set to %d, \"%s\" set to 1\n", READY_NAME, WORKERS,
           GATE_NAME);

    /* 2. Start-up. The workers are ready after 100, 200 and 300 ms; the third has the
     * slowest reload in round 2. */
    int64_t start = now_ms();
    for (int i = 0; i < WORKERS; i++) {
        workers[i] = (worker){.number = i + 1,
                              .ready = w_ready,
                              .gate = w_gate,
                              .startup_ms = 100 * (i + 1),
                              .reload_ms = i == WORKERS - 1 ? 1200 : 100};
        if (!check(pthread_create(&threads[i], NULL, work, &workers[i]) == 0, "pthread_create"))
            goto out;
        started++;
    }
    printf("2. %d workers on B starting\n", WORKERS);

    /* Not all are ready within 100 ms. */
    rc = dlock_latch_await(ready, 100);
    if (!expect(rc, DLOCK_ETIMEDOUT, "await(100 ms)") ||
        !expect(dlock_latch_count(ready, &count), DLOCK_OK, "count") ||
        !check(count > 0, "some workers are still starting"))
        goto out;
    printf("   await(100 ms) -> %s, count %" PRId64 "\n", dlock_err_name(rc), count);

    /* The real wait: until every worker is ready, but no longer than 5 s. The last
     * count_down publishes a message that wakes the waiter at once. */
    rc = dlock_latch_await(ready, 5000);
    int64_t waited = now_ms() - start;
    if (!expect(rc, DLOCK_OK, "await(5 s)") ||
        !expect(dlock_latch_count(ready, &count), DLOCK_OK, "count") ||
        !check(count == 0, "count 0 after the last count_down"))
        goto out;
    for (int i = 0; i < WORKERS; i++)
        if (!check(atomic_load(&workers[i].rounds) == 1, "every worker counted down once"))
            goto out;
    printf("   await(5 s) -> %s after %" PRId64 " ms: all %d workers ready, count %" PRId64
           "; sending traffic\n",
           dlock_err_name(rc), waited, WORKERS, count);

    /* 3. Second round on the same latch: a finished latch can be set again. */
    if (!expect(dlock_latch_try_set_count(ready, WORKERS, &was_set), DLOCK_OK,
                "try_set_count(3) on the finished latch") ||
        !check(was_set, "a finished latch can be set again"))
        goto out;
    bool set_again = true;
    if (!expect(dlock_latch_try_set_count(ready, 5, &set_again), DLOCK_OK,
                "try_set_count(5) while counting") ||
        !check(!set_again, "a counting latch is not set again"))
        goto out;
    printf("3. reload round: try_set_count(3) -> was_set %s; try_set_count(5) while counting "
           "-> was_set %s\n",
           was_set ? "true" : "false", set_again ? "true" : "false");
    /* Open the gate: its count goes 1 -> 0 and every worker waiting on it is released. */
    if (!expect(dlock_latch_count_down(gate), DLOCK_OK, "count_down(gate)"))
        goto out;
    gate_opened = true;
    printf("   gate opened (count_down): the workers reload\n");

    /* 4. The third worker's reload takes 1.2 s: a 500 ms wait is not enough. */
    start = now_ms();
    rc = dlock_latch_await(ready, 500);
    if (!expect(rc, DLOCK_ETIMEDOUT, "await(500 ms)") ||
        !expect(dlock_latch_count(ready, &count), DLOCK_OK, "count") ||
        !check(count == 1, "one worker still reloading"))
        goto out;
    printf("4. await(500 ms) -> %s, count %" PRId64 " (one worker is still reloading)\n",
           dlock_err_name(rc), count);
    rc = dlock_latch_await(ready, 5000);
    waited = now_ms() - start;
    if (!expect(rc, DLOCK_OK, "await(5 s)"))
        goto out;
    printf("   await(5 s) -> %s, %" PRId64 " ms after the gate opened: all reloaded\n",
           dlock_err_name(rc), waited);

    status = 0;
out:
    /* On a failure before the gate opened, open it anyway so that the workers do not sit
     * out their 10 s wait (best effort: Redis may be what failed). */
    if (started > 0 && !gate_opened)
        dlock_latch_count_down(gate);
    for (int i = 0; i < started; i++) {
        pthread_join(threads[i], NULL);
        if (status == 0 && !check(workers[i].ok && atomic_load(&workers[i].rounds) == 2,
                                  "every worker ran both rounds"))
            status = 1;
    }
    if (status == 0)
        printf("OK\n");
    /* Handles before their client. Freeing does no I/O. */
    dlock_latch_free(ready);
    dlock_latch_free(gate);
    dlock_latch_free(w_ready);
    dlock_latch_free(w_gate);
    dlock_client *clients[] = {coordinator, service};
    for (int i = 0; i < 2; i++) {
        rc = dlock_client_free(clients[i]);
        if (rc != DLOCK_OK) {
            fprintf(stderr, "dlock_client_free: %s (%s)\n", dlock_err_name(rc), dlock_last_error());
            status = 1;
        }
    }
    return status;
}
