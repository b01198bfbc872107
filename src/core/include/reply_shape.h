/* SPDX-License-Identifier: MIT */
/* reply_shape.h — what each of the library's scripts answers, written once as data, and the
 * one checker every reply goes through before anything is read from it.
 *
 * A script's reply is one of a few forms (acquire.lua: {1, holds, token} or {0, pttl}),
 * each a single value or an array of a fixed length, each value an integer in a range. A
 * reply that fits no form (a string, +OK, nil, [], a nested array, {1}, {1, 0}, a hold
 * count of -5, a token of 0 from a fenced lock) comes from something that is not our
 * script: a proxy or a server that tampers, a key holding another program's data. The
 * caller fails with DLOCK_EREDIS and changes nothing, so a reply dlock cannot understand
 * is never read as success, nor as "busy, look again at once".
 *
 * The checker and the types are here; each script's table is in the folder of the script it
 * transcribes (src/<primitive>/<primitive>_shapes.c, from the script's header comment), so a new
 * primitive writes its shapes without touching the core. Pure functions: no I/O, no state,
 * any thread. */
#ifndef DLOCK_REPLY_SHAPE_H
#define DLOCK_REPLY_SHAPE_H

#include "dlock_int.h"

/* How a value may arrive. */
typedef enum dlock__shape_kind {
    DLOCK__SHAPE_INT,   /* an INTEGER reply: a Lua number or a Redis command's integer */
    DLOCK__SHAPE_INT64, /* an INTEGER, or a decimal STRING: a script's int64_reply, which
                           answers a 64-bit count beyond 2^53 (where a Lua number is no
                           longer exact) as its digits */
} dlock__shape_kind;

typedef struct dlock__shape_value {
    dlock__shape_kind kind;
    int64_t min, max; /* inclusive; min > max accepts nothing */
} dlock__shape_value;

#define DLOCK__SHAPE_VALUES_MAX 3
#define DLOCK__SHAPE_FORMS_MAX 3

/* One form of a reply: the value itself (count 0), or an array of count values. */
typedef struct dlock__shape_form {
    size_t count;
    dlock__shape_value value[DLOCK__SHAPE_VALUES_MAX];
} dlock__shape_form;

typedef struct dlock__reply_shape {
    const char *script; /* "acquire.lua", for the error text */
    const char *says;   /* the forms in words: "{1, holds >= 1, token} or {0, pttl}" */
    int forms;
    dlock__shape_form form[DLOCK__SHAPE_FORMS_MAX];
} dlock__reply_shape;

/* What a reply that fits says: which form (its index in the shape) and its values, in
 * order (a single value is value[0]). */
typedef struct dlock__shape_values {
    int form;
    int64_t value[DLOCK__SHAPE_VALUES_MAX];
} dlock__shape_values;

/* true and *out when r fits one of s's forms (the first that fits), else false with *out
 * untouched. r may be NULL (nothing arrived: it fits nothing). */
bool dlock__reply_shape_check(const dlock__reply_shape *s, const dlock__reply *r,
                              dlock__shape_values *out);

/* true when r is an array of exactly n values, each fitting v (the watchdog's renewal: one
 * 1 or 0 per lease of the batch). */
bool dlock__reply_shape_each(const dlock__shape_value *v, const dlock__reply *r, size_t n);

/* For an error text: what arrived and what the script answers, e.g.
 * `an array of 2 elements [the integer 1, the integer 0], where acquire.lua answers {1,
 * holds >= 1, token} or {0, pttl}`. Returns buf. */
const char *dlock__reply_shape_mismatch(const dlock__reply_shape *s, const dlock__reply *r,
                                        char *buf, size_t size);

/* ---- writing a table ------------------------------------------------------------------ */

/* The pieces of a script's table, for the folder that owns the script (src/lock/lock_shapes.c,
 * src/semaphore/semaphore_shapes.c): a value that is an integer in [lo, hi] (RANGE64: or
 * int64_reply's digits); a form that is one value; a reply of 1 or 0. */
#define DLOCK__SHAPE_RANGE(lo, hi)                                                                 \
    { DLOCK__SHAPE_INT, (lo), (hi) }
#define DLOCK__SHAPE_RANGE64(lo, hi)                                                               \
    { DLOCK__SHAPE_INT64, (lo), (hi) }
#define DLOCK__SHAPE_ONE_VALUE(v)                                                                  \
    {                                                                                              \
        .count = 0, .value = { v }                                                                 \
    }
#define DLOCK__SHAPE_YES_NO(script)                                                                \
    {                                                                                              \
        script, "1 or 0", 1, {                                                                     \
            DLOCK__SHAPE_ONE_VALUE(DLOCK__SHAPE_RANGE(0, 1))                                       \
        }                                                                                          \
    }

/* ---- the core's own script ------------------------------------------------------------ */

/* renew_hash.lua, renew_read.lua: each of the batch's values (dlock__reply_shape_each) */
extern const dlock__shape_value dlock__shape_renewed;

#endif
