/* SPDX-License-Identifier: MIT */
/* reply_shape.c — the one checker of the scripts' replies (reply_shape.h), and the shape of
 * the core's own renewal script. The primitives' tables live in their folders
 * (src/lock/lock_shapes.c, src/semaphore/semaphore_shapes.c).
 *
 * Where a script may answer a 64-bit count as its digits (int64_reply, beyond 2^53), a value
 * is DLOCK__SHAPE_INT64; everything a script computes as a Lua number, or a command's
 * integer, is DLOCK__SHAPE_INT: there a string is not the script speaking. */
#include <stdio.h>

#include "net/net.h"
#include "reply_shape.h"

/* ---- the checker ------------------------------------------------------------------------ */

static bool value_fits(const dlock__shape_value *v, const dlock__reply *r, int64_t *out) {
    int type = dlock__reply_type(r);
    if (type != DLOCK__REPLY_INTEGER &&
        !(v->kind == DLOCK__SHAPE_INT64 && type == DLOCK__REPLY_STRING))
        return false;
    int64_t value;
    if (dlock__reply_int64(r, &value) != DLOCK_OK || value < v->min || value > v->max)
        return false;
    *out = value;
    return true;
}

static bool form_fits(const dlock__shape_form *f, const dlock__reply *r, dlock__shape_values *out) {
    if (f->count == 0)
        return value_fits(&f->value[0], r, &out->value[0]);
    if (dlock__reply_type(r) != DLOCK__REPLY_ARRAY || dlock__reply_count(r) != f->count)
        return false;
    for (size_t i = 0; i < f->count; i++)
        if (!value_fits(&f->value[i], dlock__reply_at(r, i), &out->value[i]))
            return false;
    return true;
}

bool dlock__reply_shape_check(const dlock__reply_shape *s, const dlock__reply *r,
                              dlock__shape_values *out) {
    for (int i = 0; i < s->forms; i++) {
        dlock__shape_values got = {.form = i};
        if (form_fits(&s->form[i], r, &got)) {
            *out = got;
            return true;
        }
    }
    return false;
}

bool dlock__reply_shape_each(const dlock__shape_value *v, const dlock__reply *r, size_t n) {
    if (dlock__reply_type(r) != DLOCK__REPLY_ARRAY || dlock__reply_count(r) != n)
        return false;
    int64_t ignored;
    for (size_t i = 0; i < n; i++)
        if (!value_fits(v, dlock__reply_at(r, i), &ignored))
            return false;
    return true;
}

const char *dlock__reply_shape_mismatch(const dlock__reply_shape *s, const dlock__reply *r,
                                        char *buf, size_t size) {
    char got[160];
    dlock__reply_describe(r, got, sizeof(got));
    snprintf(buf, size, "%s, where %s answers %s", got, s->script, s->says);
    return buf;
}

/* ---- the core's own script ------------------------------------------------------------- */

const dlock__shape_value dlock__shape_renewed = DLOCK__SHAPE_RANGE(0, 1);
