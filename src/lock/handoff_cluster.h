/* SPDX-License-Identifier: MIT */
/* handoff_cluster.h — the reentrant lock's hand-off in a Redis Cluster (handoff_cluster.c):
 * the probe that tells the scripts when N's slot is being migrated, and the Cluster's
 * leave-the-queue. reentrant.c's hand-off is the same on every topology; these are the only
 * things a Cluster adds. */
#ifndef DLOCK_HANDOFF_CLUSTER_H
#define DLOCK_HANDOFF_CLUSTER_H

#include "dlock_int.h"

/* The probe of lock name N, {N}:handoff_probe (N:handoff_probe when N holds a hash tag), as
 * a new string; NULL when the hand-off's keys (marker, queue, probe) would not all hash to
 * N's slot (a name with a '{' that opens no hash tag), or on ENOMEM: no hand-off then, in a
 * Cluster. */
char *dlock__handoff_cluster_probe(const char *name);

/* A Cluster client's waiter on lock N gave up: it leaves the queue and takes back a promise
 * made to it (handoff_drop_cluster.lua), fire and forget. */
void dlock__handoff_cluster_drop(dlock_client *c, const char *name, const char *marker,
                                 const char *queue, const char *field, const char *probe);

#endif
