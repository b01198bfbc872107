/* SPDX-License-Identifier: MIT */
/* client_node.h — which node a client would send a key's commands to, asked from a test
 * thread: the address of the master of the key's slot in a Cluster client's slot map ("no
 * master (slot N)" while the map has none for it, "not connected" before the first map), or
 * the one server of a plain client. */
#ifndef DLOCK_TEST_CLIENT_NODE_H
#define DLOCK_TEST_CLIENT_NODE_H

#include <stddef.h>

#include "dlock.h"

/* Into buf (size bytes), read on c's loop thread (dlock__client_node_of); returns buf. */
const char *client_node_of(dlock_client *c, const char *key, char *buf, size_t size);

#endif
