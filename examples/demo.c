/* demo.c — `make demo`: connect a dlock client and show that it works.
 *
 * Reads the server from $DLOCK_URL (`make demo` starts a private redis-server on a unix
 * socket and sets it). Connects, prints the client id, measures a few round trips, and
 * pings from several threads at once through the one client. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dlock.h"

enum { THREADS = 8, PINGS_PER_THREAD = 2000 };

static dlock_client *client;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *pinger(void *arg) {
    int *failures = arg;
    for (int i = 0; i < PINGS_PER_THREAD; i++)
        if (dlock_client_ping(client) != DLOCK_OK)
            (*failures)++;
    return NULL;
}

int main(void) {
    printf("dlock %s\n", dlock_version_string());
    const char *url = getenv("DLOCK_URL");
    printf("connecting to %s\n", url ? url : "redis://127.0.0.1:6379 (default)");
    int rc = dlock_client_new(NULL, &client);
    if (rc != DLOCK_OK) {
        fprintf(stderr, "connect failed: %s (%s)\n", dlock_err_name(rc), dlock_last_error());
        return 1;
    }
    printf("connected; client id %s\n", dlock_client_id(client));

    double best = 1e9;
    for (int i = 0; i < 100; i++) {
        double t0 = now_ms();
        if (dlock_client_ping(client) != DLOCK_OK) {
            fprintf(stderr, "ping failed: %s\n", dlock_last_error());
            return 1;
        }
        double took = now_ms() - t0;
        if (took < best)
            best = took;
    }
    printf("round trip (best of 100): %.3f ms\n", best);

    pthread_t threads[THREADS];
    int failures[THREADS] = {0};
    double t0 = now_ms();
    for (int i = 0; i < THREADS; i++)
        pthread_create(&threads[i], NULL, pinger, &failures[i]);
    int failed = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        failed += failures[i];
    }
    double secs = (now_ms() - t0) / 1e3;
    printf("%d threads x %d pings through one client: %.0f round trips/s, %d failed\n",
           THREADS, PINGS_PER_THREAD, THREADS * PINGS_PER_THREAD / secs, failed);
    dlock_client_free(client);
    return failed == 0 ? 0 : 1;
}
