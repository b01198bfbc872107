/* SPDX-License-Identifier: MIT */
/* dlock/export.h — symbol visibility.
 *
 * The library is built with -fvisibility=hidden; only declarations marked DLOCK_EXTERN
 * are exported from libdlock.so. */
#ifndef DLOCK_EXPORT_H
#define DLOCK_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define DLOCK_EXTERN __attribute__((visibility("default")))
#else
#define DLOCK_EXTERN
#endif

#endif
