/* SPDX-License-Identifier: MIT */
/* alloc.c — the library's allocator: every allocation of dlock goes through these, so
 * an allocator hook or failure injection has one place to live. */
#include <stdlib.h>
#include <string.h>

#include "dlock_int.h"

void *dlock__malloc(size_t n) {
    return malloc(n ? n : 1);
}

void *dlock__calloc(size_t count, size_t n) {
    return calloc(count ? count : 1, n ? n : 1);
}

void *dlock__realloc(void *p, size_t n) {
    return realloc(p, n ? n : 1);
}

void dlock__free(void *p) {
    free(p);
}

char *dlock__strndup(const char *s, size_t n) {
    char *copy = dlock__malloc(n + 1);
    if (copy) {
        memcpy(copy, s, n);
        copy[n] = '\0';
    }
    return copy;
}

char *dlock__strdup(const char *s) {
    return dlock__strndup(s, strlen(s));
}
