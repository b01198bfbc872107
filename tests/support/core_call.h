/* core_call.h — run a command through a dlock client's own command connection, from a
 * test thread, and keep a copy of the reply. Integration tests use it to drive the core
 * below the public API (the command queue, scripts, reconnects) without a primitive. */
#ifndef DLOCK_TEST_CORE_CALL_H
#define DLOCK_TEST_CORE_CALL_H

#include <stdbool.h>
#include <stddef.h>

#include "dlock_int.h"

typedef struct core_reply {
    int status;        /* DLOCK_OK or the DLOCK_E* the core reported */
    int type;          /* DLOCK__REPLY_* (0 when there is no reply) */
    long long integer; /* INTEGER replies */
    char *str;         /* STRING / STATUS / ERROR text, NUL-terminated copy */
    size_t len;
    size_t count;              /* ARRAY */
    struct core_reply *elems;  /* ARRAY elements */
} core_reply;

/* Blocking: queue argv (NULL-terminated list of C strings) with flags and wait for it. */
core_reply *core_call(dlock_client *c, unsigned flags, const char *const *argv);
/* Blocking: run a library script with nkeys keys then args (NULL-terminated). */
core_reply *core_script(dlock_client *c, enum dlock__script_id id, unsigned flags, int nkeys,
                        const char *const *args);
void core_reply_free(core_reply *r);

#endif
