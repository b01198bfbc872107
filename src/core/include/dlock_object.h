/* SPDX-License-Identifier: MIT */
/* dlock_object.h — a named object and the calls on it: what a non-lock primitive stands on.
 *
 * A primitive such as the semaphore is an object in Redis under a name, and a few calls on
 * it, each one script or command whose reply says one thing. What is the same for all of
 * them lives in object.c:
 *   - the handle (dlock__object): the core's dlock__handle, the name, the channel and the
 *     other key names the primitive's table asks for; *_new and *_free in one call each;
 *   - a call on both faces: the blocking run (dlock__call_run) and the async submit, whose
 *     end hands the status to the user's callback (dlock__call_async);
 *   - what a call does on the loop thread, from a small table (dlock__call_class): send its
 *     command, check the reply against its script's shape (reply_shape.h), judge what it
 *     says; dlock__call_get_count is a GET of the count (absent = 0);
 *   - a call that waits (an acquire, an await) runs in the core's waiting engine; its table
 *     adds what a message means and what to say when the time is up;
 *   - under ?sync_replicas, an acquisition fewer replicas acknowledged than asked does not
 *     stand: the class gives it back (give_back) in the same call, and the attempt counts as
 *     busy; when the wait ends, DLOCK_ETIMEDOUT says how many acknowledged.
 * A primitive writes its keys, its arguments, and what its replies mean; nothing else.
 *
 * The locks have an engine of their own (src/lock). They share with this file the checks
 * and callbacks every primitive writes the same way: dlock__check_wait_ms, dlock__wake_one,
 * dlock__ignore_reply.
 *
 * Everything runs on the client's loop thread unless it says otherwise. */
#ifndef DLOCK_OBJECT_H
#define DLOCK_OBJECT_H

#include "dlock/timeouts.h"
#include "dlock_int.h"
#include "reply_shape.h"

/* ---- shared by every primitive, locks included ------------------------------------------ */

/* Any thread: DLOCK_OK when wait_ms is >= 0 or DLOCK_FOREVER, else DLOCK_EINVAL with a
 * last-error text. */
int dlock__check_wait_ms(int64_t wait_ms);

/* A wake_count for dlock__wait_ops: the message freed one holder's place, so it wakes one
 * waiter of this client. */
int dlock__wake_one(const char *msg, size_t len);

/* A dlock__reply_fn for a command nobody waits for (a waiter leaving a line): a failure is
 * only logged, as a warning "<arg> failed: <error>", where arg is a static string such as
 * "fair lock: leaving the queue". */
void dlock__ignore_reply(dlock_client *c, int status, const dlock__reply *reply, int sends,
                         void *arg);

/* DLOCK_EREDIS with the op's detail "<what> <key>: unexpected reply from Redis: <what
 * arrived>, where <script> answers <its forms>", for a reply that fits no form of shape. */
int dlock__op_bad_shape(dlock__op *op, const dlock__reply_shape *shape, const dlock__reply *reply,
                        const char *what, const char *key);

/* An acquisition of <what> <key> that fewer replicas acknowledged than acks asked for, about
 * to be given back: the op's detail says so ("... acquired, but only k of n replicas
 * acknowledged it within T ms (sync_replicas), so it was given back", or that the WAIT was
 * refused). Returns what the attempt ends with once it is given back: DLOCK__BUSY (try
 * again within the wait, DLOCK__GIVE_BACK_RETRY_MS later or on a message), or, for a WAIT
 * the ACL refuses, DLOCK_ENOPERM (DLOCK_EREDIS for another refusal): no retry would do
 * better. */
int dlock__op_unacked(dlock__op *op, const dlock__acks *acks, const char *what, const char *key);

/* After a give-back the waiter looks again this soon (a message may wake it sooner). Each
 * attempt waits up to sync_timeout_ms for its replicas, so this is never a tight loop. */
#define DLOCK__GIVE_BACK_RETRY_MS 50

/* ---- the object ------------------------------------------------------------------------- */

/* How a key or channel name is made from the object's name N (REDIS_LAYOUT.md). */
typedef enum dlock__key_form {
    DLOCK__KEY_NONE = 0, /* no such key */
    DLOCK__KEY_PREFIXED, /* "part:{N}", "part:N" when N holds a '{' (dlock__name_prefixed) */
    DLOCK__KEY_SUFFIXED, /* "{N}:part", "N:part" when N holds a '{' (dlock__name_suffixed) */
    DLOCK__KEY_BRACED,   /* "part{N}" whatever N holds */
} dlock__key_form;

typedef struct dlock__key_name {
    dlock__key_form form;
    const char *part;
} dlock__key_name;

#define DLOCK__OBJECT_KEYS_MAX 2

typedef struct dlock__call dlock__call;

/* A user's callback as the core keeps it: the primitive casts its own callback type to it
 * and back (a function pointer converts to another and back unchanged). */
typedef void (*dlock__user_cb)(void);

/* One per primitive, static. */
typedef struct dlock__object_class {
    const char *what; /* the error texts' word for it: "semaphore" */
    size_t size;      /* of the primitive's handle struct, a dlock__object first */
    dlock__key_name channel;
    dlock__key_name keys[DLOCK__OBJECT_KEYS_MAX]; /* the other keys, in dlock__object.keys */
    /* The async face's end: call the user's callback, call->cb cast back to the type the
     * primitive's public call took, with the call's status. */
    void (*deliver)(dlock__call *call, int status);
} dlock__object_class;

/* The first member of a primitive's handle struct, so that a pointer to either is a
 * pointer to both. Immutable after dlock__object_new but for the core's handle. */
typedef struct dlock__object {
    dlock__handle handle;
    const dlock__object_class *cls;
    char *name;
    char *channel;
    char *keys[DLOCK__OBJECT_KEYS_MAX]; /* NULL where the class names none */
} dlock__object;

/* The whole of a primitive's *_new, any thread, no I/O: checks c, name and out
 * (DLOCK_EINVAL), allocates cls->size zeroed bytes, builds the names (DLOCK_ENOMEM) and
 * writes the handle to *out, a pointer to the primitive's handle pointer (untouched on
 * failure). */
int dlock__object_new(dlock_client *c, const char *name, const dlock__object_class *cls,
                      void **out);

/* The whole of a primitive's *_free: the free protocol of dlock__handle_free. NULL ok. */
void dlock__object_free(dlock__object *o);

/* ---- calls ------------------------------------------------------------------------------ */

/* What a call does on the loop thread. One per kind of call, static. */
typedef struct dlock__call_class {
    /* Send the call's command with dlock__call_script or dlock__call_get; the reply goes to
     * judge. DLOCK_OK, or the error it could not be sent with: the call ends with it. NULL:
     * nothing to send, the call succeeds as soon as it starts. */
    int (*send)(dlock__call *call);
    /* What the script answers. A reply that fits none of its forms ends the call (or its
     * wait) with DLOCK_EREDIS before judge sees it; one that fits is in call->got, its
     * first value in call->out. NULL: the command is not a script (a GET), judge reads it. */
    const dlock__reply_shape *shape;
    /* A reply that is not an error reply: DLOCK_OK, DLOCK__BUSY (calls that wait: not yet;
     * look again on a message or within call->hint_ms), or an error with the op's detail
     * set (dlock__op_fail). NULL: DLOCK_OK once the reply fits the shape. */
    int (*judge)(dlock__call *call, const dlock__reply *reply);
    /* A call that waits (an acquire, an await) runs in the core's waiting engine, each
     * attempt one send, on the object's channel: */
    bool waits;
    /* what a message wakes: as wake_count of dlock__wait_ops (NULL: every waiter); */
    int (*wake_count)(const char *msg, size_t len);
    /* or, for an object that hands out amounts and publishes the count available
     * (dlock__message_count), how much this waiter needs (see dlock__wait_ops); */
    int64_t (*need)(const dlock__waiter *w);
    /* and the op's detail for DLOCK_ETIMEDOUT (unless the last attempt was given back: then
     * the detail says how many replicas acknowledged it). */
    void (*timed_out)(dlock__call *call);
    /* A call that waits and takes something (an acquire): each attempt's script is followed
     * by the WAIT ?sync_replicas asks for, cut to the wait's deadline (dlock__script_acked).
     * An attempt judged DLOCK_OK that fewer replicas acknowledged than asked is undone by
     * give_back: send, with dlock__call_script, what gives back what the attempt took (object.c
     * sends it with DLOCK__CMD_NO_WAIT, and its reply ends the attempt). DLOCK_OK or the
     * error it could not be sent with. NULL: the take stands however few acknowledged it (a
     * warning is logged), as every other write but a release does. */
    int (*give_back)(dlock__call *call);
} dlock__call_class;

/* What a public call asks for: which call, with what. */
typedef struct dlock__call_args {
    const dlock__call_class *cls;
    int kind;        /* the primitive's tag for the operation: a script id, its own enum */
    int64_t number;  /* its one number: permits, a count, a lease */
    int64_t wait_ms; /* for a call that waits (checked by the caller) */
} dlock__call_args;

/* One call in flight. A primitive that needs more per call embeds it first in its own. */
struct dlock__call {
    dlock__op op;
    dlock__object *obj;
    const dlock__call_class *cls;
    int kind;
    int64_t number;
    int64_t wait_ms;
    int64_t out;             /* the one integer back */
    dlock__shape_values got; /* the reply's form and values, when the class has a shape */
    int sends;       /* in judge: how many times the command answered was sent (> 1: resent) */
    int64_t hint_ms; /* judge may lower it: DLOCK__RECHECK_MS when it starts */
    /* While give_back's command is in flight: what the attempt ends with once it answers
     * (DLOCK__BUSY, or the error of a refused WAIT); DLOCK_OK otherwise. */
    int giving_back;
    dlock__waiter waiter;
    dlock__wait_ops wait_ops; /* the engine's table for this call, from its class */
    dlock__user_cb cb;        /* the async face: the user's callback (see deliver) and its arg */
    void *arg;
};

/* Blocking face (any thread but the loop's): run the call on o to its end. *out (may be
 * NULL) gets call->out on DLOCK_OK. The status of dlock__op_run. */
int dlock__call_run(dlock__object *o, dlock__call_args args, int64_t *out);

/* As dlock__call_run, *yes (may be NULL) telling whether the integer back is 1. */
int dlock__call_run_bool(dlock__object *o, dlock__call_args args, bool *yes);

/* Async face, any thread: cb (a user's callback of the primitive's type, cast) runs once
 * through o's class deliver, unless this returns an error. DLOCK_EINVAL (cb NULL),
 * DLOCK_ENOMEM, and the errors of dlock__op_submit. */
int dlock__call_async(dlock__object *o, dlock__call_args args, dlock__user_cb cb, void *arg);

/* The two steps of both faces, for a primitive whose calls carry more (size bytes, a
 * dlock__call first). init clears the dlock__call only; run it with dlock__op_run.
 * dlock__call_new writes a zeroed call to *out: DLOCK_EINVAL (cb NULL), DLOCK_ENOMEM;
 * dlock__call_submit frees it when it fails. */
void dlock__call_init(dlock__call *call, dlock__object *o, const dlock__call_args *args);
int dlock__call_new(size_t size, dlock__object *o, const dlock__call_args *args, dlock__user_cb cb,
                    void *arg, dlock__call **out);
int dlock__call_submit(dlock__call *call);

/* ---- inside a call class ---------------------------------------------------------------- */

/* For send (and give_back): EVALSHA of script with a's args (nkeys keys first), or GET of
 * the object's name (safe to resend). The contract of dlock__script. */
int dlock__call_script(dlock__call *call, enum dlock__script_id script, unsigned flags, int nkeys,
                       const dlock__args *a);
int dlock__call_get(dlock__call *call);

/* A judge's reading of a GET of a count (absent is 0, a string that is not an integer is
 * DLOCK_EREDIS naming what the key holds), into *count. */
int dlock__call_read_count(dlock__call *call, const dlock__reply *reply, int64_t *count);

/* The call a waiter belongs to, for a class's need. */
const dlock__call *dlock__call_of(const dlock__waiter *w);

/* Calls every primitive has: a GET of the count under the name, the integer back (absent
 * is 0); and one with nothing to send (DLOCK_OK once it starts: a release of 0 permits
 * still refuses a freed handle or a closed client as any call does). */
extern const dlock__call_class dlock__call_get_count;
extern const dlock__call_class dlock__call_nothing;

#endif
