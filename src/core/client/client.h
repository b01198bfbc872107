/* SPDX-License-Identifier: MIT */
/* client.h — the top floor: the client assembled from the floors' parts (client.c), the
 * primitives' timers (client_timer.c). See base.h for how the parts nest. */
#ifndef DLOCK_CORE_CLIENT_H
#define DLOCK_CORE_CLIENT_H

#include <pthread.h>

#include "engine/engine.h"
#include "topology/cluster.h"
#include "topology/sentinel.h"

struct dlock_client {
    dlock__client_engine engine; /* first: see base.h */
    char endpoint_key[300];      /* dlock__client_endpoint */
    pthread_t io_thread;
    dlock__loop_wake stop_wake;

    /* dlock_client_new waits here for the first connection's outcome */
    pthread_mutex_t ready_mu;
    pthread_cond_t ready_cond;
    int ready_status; /* 1 while unknown */
};

#endif
