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
 * The tables are in reply_shape.c, beside the checker; the scripts' header comments
 * (src/<primitive>/<op>.lua) are what they transcribe. Pure functions: no I/O, no state,
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
#define DLOCK__SHAPE_FORMS_MAX 2

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

/* ---- the scripts' replies (reply_shape.c) ---------------------------------------------- */

/* Every kind of lock (acquire.lua, fair.lua, rw.lua, the spin lock): {1, holds >= 1,
 * token 0} acquired | {0, pttl >= -2} busy. The fenced lock's token is
 * >= 1; the engine raises that floor to one past the owner's last token. */
extern const dlock__reply_shape dlock__shape_lock_acquire;
extern const dlock__reply_shape dlock__shape_fenced_acquire;
/* release: -1 the owner holds nothing | the holds left, >= 0 */
extern const dlock__reply_shape dlock__shape_lock_release;
/* force_release.lua, set_lease.lua, raise_token.lua, and every try-set, permit release and
 * lease update: 1 or 0 */
extern const dlock__reply_shape dlock__shape_lock_force;
extern const dlock__reply_shape dlock__shape_lock_owner_call;
extern const dlock__reply_shape dlock__shape_semaphore_try_set;
extern const dlock__reply_shape dlock__shape_latch_try_set;
extern const dlock__reply_shape dlock__shape_permits_yes_no;
/* sem_add.lua, sem_release.lua: the permits available now, any int64 (may be below 0);
 * permits.lua 'available' the same */
extern const dlock__reply_shape dlock__shape_semaphore_count;
extern const dlock__reply_shape dlock__shape_permits_available;
/* sem_drain.lua: the permits taken, >= 0 */
extern const dlock__reply_shape dlock__shape_semaphore_drain;
/* sem_acquire.lua: {1, left >= 0} taken | {0, available} not enough */
extern const dlock__reply_shape dlock__shape_semaphore_acquire;
/* latch_count_down.lua: the count now, >= 0 */
extern const dlock__reply_shape dlock__shape_latch_count_down;
/* permits.lua 'acquire': {1} taken | {0, hint >= -1} none free */
extern const dlock__reply_shape dlock__shape_permits_acquire;
/* renew_hash.lua, renew_read.lua: each of the batch's values (dlock__reply_shape_each) */
extern const dlock__shape_value dlock__shape_renewed;

/* Every shape above, for the tests and the fuzz target that run each on any reply. */
extern const dlock__reply_shape *const dlock__reply_shapes[];
extern const size_t dlock__reply_shape_count;

#endif
