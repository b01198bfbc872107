/* SPDX-License-Identifier: MIT */
/* random.c — randomness from the kernel: the client id, reconnect backoff jitter, and the
 * jitter of a primitive's retry delays (a spin lock's backoff).
 *
 * A leaf of the core: it calls nothing of the core but the clock. getrandom() never
 * blocks once the kernel's pool is initialised, which it is long before a program runs. */
#include <stdint.h>
#include <stdio.h>
#include <sys/random.h>

#include "dlock_int.h"

void dlock__random_bytes(void *buf, size_t n) {
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t got = getrandom(p, n, 0);
        if (got <= 0) {
            /* no entropy source at all (a seccomp sandbox?): mix the clock in, byte by
             * byte; ids stay unique per process, though guessable */
            uint64_t x = (uint64_t)dlock__now_us() * 6364136223846793005ULL + (uintptr_t)p;
            *p++ = (unsigned char)(x >> 56);
            n--;
            continue;
        }
        p += got;
        n -= (size_t)got;
    }
}

uint64_t dlock__random_u64(void) {
    uint64_t v;
    dlock__random_bytes(&v, sizeof(v));
    return v;
}

int dlock__random_uuid(char out[37]) {
    unsigned char b[16];
    /* no clock fallback as in dlock__random_bytes: ids of clients in other processes and
     * hosts must not collide, so without the kernel's entropy no client is made */
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
        return -1;
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4: random */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
    return 0;
}
