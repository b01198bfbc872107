/* SPDX-License-Identifier: MIT */
/* dlock/version.h — the library's version.
 *
 * The three macros below are the single source of the version: CMake reads them to
 * version the shared library, the CMake package and dlock.pc, so every place that
 * reports a version agrees with this file. */
#ifndef DLOCK_VERSION_H
#define DLOCK_VERSION_H

#include "dlock/export.h"

#define DLOCK_VERSION_MAJOR 0
#define DLOCK_VERSION_MINOR 1
#define DLOCK_VERSION_PATCH 0

#define DLOCK_VERSION_STRINGIFY_(x) #x
#define DLOCK_VERSION_STRINGIFY(x) DLOCK_VERSION_STRINGIFY_(x)
#define DLOCK_VERSION_STRING_(major, minor, patch)                                                 \
    DLOCK_VERSION_STRINGIFY(major)                                                                 \
    "." DLOCK_VERSION_STRINGIFY(minor) "." DLOCK_VERSION_STRINGIFY(patch)
#define DLOCK_VERSION_STRING                                                                       \
    DLOCK_VERSION_STRING_(DLOCK_VERSION_MAJOR, DLOCK_VERSION_MINOR, DLOCK_VERSION_PATCH)

/* One number that grows with every release: 0x00MMmmpp. */
#define DLOCK_VERSION_HEX                                                                          \
    ((DLOCK_VERSION_MAJOR << 16) | (DLOCK_VERSION_MINOR << 8) | DLOCK_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the library actually linked. It differs from DLOCK_VERSION_STRING only
 * when a program runs against another build than the one it was compiled with. No I/O;
 * safe from any thread.
 *
 * Returns: "MAJOR.MINOR.PATCH", in static storage, never NULL. */
DLOCK_EXTERN const char *dlock_version_string(void);

/* The linked library's version as one number. No I/O; safe from any thread.
 *
 * Returns: its DLOCK_VERSION_HEX. */
DLOCK_EXTERN unsigned dlock_version_hex(void);

#ifdef __cplusplus
}
#endif

#endif
