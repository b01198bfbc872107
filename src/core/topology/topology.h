/* SPDX-License-Identifier: MIT */
/* topology.h — the topology floor: which Redis. A plain URL names one server; a Sentinel
 * URL a master its sentinels find and follow (sentinel.h); a Cluster URL a slot map of
 * masters (cluster.h). route.c picks, for each command and channel, the connection that
 * serves it (dlock__command, dlock__script, dlock__listen in dlock_int.h) and answers the
 * capabilities the floors above ask instead of "is this a Cluster". */
#ifndef DLOCK_CORE_TOPOLOGY_H
#define DLOCK_CORE_TOPOLOGY_H

#include "net/net.h"

typedef struct dlock__client_topology {
    dlock__client_net net;            /* first: see base.h */
    struct dlock__sentinel *sentinel; /* a Sentinel URL: finds the master (sentinel.h) */
    struct dlock__cluster *cluster;   /* a Cluster URL: the slot map and nodes (cluster.h) */
} dlock__client_topology;

#define DLOCK__TOPOLOGY(c) DLOCK__PART(dlock__client_topology, c)

#endif
