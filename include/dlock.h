/* dlock.h — umbrella header: everything but the libev adapter. */
#ifndef DLOCK_H
#define DLOCK_H

#include "dlock/version.h"
#include "dlock/error.h"
#include "dlock/client.h"
#include "dlock/lock.h"
#include "dlock/rwlock.h"
#include "dlock/semaphore.h"
#include "dlock/latch.h"
#include "dlock/multilock.h"

#endif
