/* SPDX-License-Identifier: MIT */
/* bad_input.h — the bad-input catalogue's runner, shared by tests/fault/test_bad_input_*.c.
 *
 * The catalogue: every public call of every header, called with each invalid argument it
 * can get, returns its documented DLOCK_E* code and leaves Redis exactly as it was, without
 * sending it a single command. Each test file holds the rows of one header (client, lock,
 * multilock, semaphore, latch); this runner holds what the rows call into and how they
 * are run.
 *
 * A row is one (call, invalid argument), written once as an X-macro line
 * X(id, kind, expected, call) that becomes both the function making the call
 * (BAD_DEFINE_CALL) and the table entry (BAD_TABLE_ROW): name, function, kind of invalid
 * value, expected code. `call` may use `b`, the invalid values (const bad *). A row whose
 * argument is of a kind with several invalid values (a negative count, a wait < 0 other
 * than -1, a bad name, a malformed permit id, ...) runs once per value of that kind. Rows
 * are grouped; around each group the runner takes a dump of every key in Redis (KEYS,
 * TYPE, PEXPIRETIME and the value, binary-safe) and the server's total_commands_processed
 * and total_connections_received, and proves that nothing changed and that the only
 * commands the server ran were the runner's own admin commands (counted one by one).
 *
 * Redis is not empty while rows run: a second client holds a lock, a fenced lock, a fair
 * lock, a read hold, a permit, and set a semaphore and a latch, all under the names the
 * handles of the rows use, with explicit leases (no watchdog traffic); so "unchanged"
 * covers keys a wrong call could have touched.
 *
 * The random run calls the rows with random invalid values (seeded rand(); the seed is
 * printed and can be replayed with DLOCK_TEST_SEED).
 *
 * Blocking calls made on an async client's loop thread are rows too (DLOCK_EDEADLK): the
 * world has an async client (BW.lc) on a loop this thread made and never runs, with a
 * handle of every kind on it (BW.l_*). */
#ifndef DLOCK_TEST_BAD_INPUT_H
#define DLOCK_TEST_BAD_INPUT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dlock.h"
#include "dlock/adapters/libev.h"
#include "redis_fixture.h"

/* The budget of one catalogue test (test_watchdog_arm). */
#define BAD_BUDGET_S 120

/* What a wrapper of a call that returns no int says when the call did not do what its
 * header documents (e.g. dlock_lock_name(NULL) did not return NULL). */
#define NOT_AS_DOCUMENTED (-1000)

#define BAD_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the world the rows call into ------------------------------------------------------------ */

/* A permit id with room for more than 32 characters: the library reads hex[0..32] only,
 * the rest keeps the string a C string. */
typedef struct long_id {
    dlock_permit_id id;
    char more[31];
} long_id;

#define BAD_N_IDS 12

struct bad_world {
    redis_fixture *f;
    long long admin;  /* commands the runner sent through the fixture */
    dlock_client *c;  /* the client the rows use */
    dlock_client *c2; /* another client: the holder of the state already in Redis */
    dlock_lock *lock, *fenced, *fair, *rd, *wr, *multi, *red;
    dlock_lock *multi_members[2], *red_members[3];
    dlock_rwlock *rw;
    dlock_semaphore *sem;
    dlock_permits *permits;
    dlock_latch *latch;
    /* the composites' bad member lists */
    dlock_lock *pair[2], *with_null[2], *null_first[2], *dup[2], *with_multi[2], *with_red[2];
    /* an async client on a loop this thread never runs: this thread is its loop thread */
    struct ev_loop *loop;
    dlock_client *lc;
    dlock_lock *l_lock, *l_fenced, *l_fair, *l_multi, *l_multi_members[2], *l_red,
        *l_red_members[2];
    dlock_rwlock *l_rw;
    dlock_semaphore *l_sem;
    dlock_permits *l_permits;
    dlock_latch *l_latch;
    /* out-parameters of the rows; constructors must leave them untouched */
    dlock_client *out_client;
    dlock_lock *out_lock;
    dlock_rwlock *out_rw;
    dlock_semaphore *out_sem;
    dlock_permits *out_permits;
    dlock_latch *out_latch;
    dlock_permit_id out_id;
    bool out_bool;
    int64_t out_int;
    uint64_t out_token;
    dlock_permit_id good_id; /* well-formed, held by nobody */
    /* the invalid values that need memory */
    char *name_64k_plus_1;     /* 64 KiB + 1 'n' */
    char *name_64k_plus_1_bin; /* 64 KiB + 1 bytes 1..255 */
    char *name_1m;             /* 1 MiB */
    char *random_names;        /* 128 KiB of random non-NUL bytes; a suffix > 64 KiB is a name */
    long_id ids[BAD_N_IDS];
    long_id random_id;
    char random_url[64];
    char too_long_socket_url[160];
    /* callbacks that must never run */
    atomic_int unexpected_callbacks;
};

/* The one world of a catalogue test: bad_world_setup fills it, bad_world_teardown frees it. */
extern struct bad_world BW;

void bad_world_setup(void);
/* Frees the world and fails the test if a callback of a refused async call ever ran. */
void bad_world_teardown(void);

/* Callbacks for rows whose call must be refused: each counts a call it gets in
 * BW.unexpected_callbacks (the lost callback never runs either: no lock is held). */
void unexpected_lock_cb(dlock_lock *l, int status, void *arg);
void unexpected_sem_cb(dlock_semaphore *s, int status, void *arg);
void unexpected_permits_cb(dlock_permits *p, int status, const dlock_permit_id *id, void *arg);
void unexpected_latch_cb(dlock_latch *l, int status, void *arg);
void unexpected_client_cb(dlock_client *c, int status, void *arg);
void unexpected_lost_cb(dlock_lock *l, uint64_t owner, int reason, void *arg);

/* DLOCK_OK if got is the string want, else NOT_AS_DOCUMENTED. */
int str_is(const char *got, const char *want);
/* DLOCK_OK if p is NULL, else NOT_AS_DOCUMENTED. */
int is_null(const void *p);

/* ---- the kinds of invalid values ------------------------------------------------------------- */

enum value_kind {
    V_NONE,     /* the row's invalid argument is fixed (NULL, owner 0, ...) */
    V_NAME,     /* NULL, "", longer than 64 KiB */
    V_NEG,      /* a count < 0 */
    V_WAIT,     /* a wait < 0 other than -1 */
    V_LEASE,    /* a lease <= 0 other than -1 */
    V_ID,       /* a malformed permit id */
    V_BELOW3,   /* watchdog_ms, fair_wait_ms < 3 */
    V_NONPOS,   /* timeout_ms, connect_timeout_ms <= 0 */
    V_BATCH,    /* renew_batch outside 1..100000 */
    V_ATTEMPTS, /* retry_attempts outside 0..1000 */
    V_DELAY,    /* retry_delay_ms outside 1..3600000 */
    V_SIZE,     /* options.size not set by dlock_options_init */
    V_URL,      /* a URL dlock cannot use */
    V_KINDS
};

/* One invalid value of every kind: a row uses the field of its kind. */
typedef struct bad {
    const char *name;
    int64_t neg, wait, lease, below3, nonpos, delay;
    int batch, attempts;
    size_t size;
    const char *url;
    const dlock_permit_id *id;
} bad;

/* ---- rows, tables, groups -------------------------------------------------------------------- */

typedef struct bad_case {
    const char *call; /* the call as written in the row */
    int (*run)(const bad *b);
    enum value_kind kind;
    int expect;
} bad_case;

#define BAD_DEFINE_CALL(id, kind, expect, call)                                                    \
    static int call_##id(const bad *b) {                                                           \
        (void)b;                                                                                   \
        return (call);                                                                             \
    }
#define BAD_TABLE_ROW(id, kind, expect, call) {#call, call_##id, kind, expect},

/* The rows of one header, checked together against one mark of the server. */
typedef struct bad_group {
    const char *name;
    const bad_case *rows;
    size_t n;
} bad_group;

#define BAD_GROUP(name, table)                                                                     \
    { name, table, BAD_COUNT(table) }

/* What a catalogue file runs: its groups and how many random calls (before
 * DLOCK_TEST_SCALE). */
typedef struct bad_catalogue {
    const bad_group *groups;
    size_t n;
    long random_calls;
} bad_catalogue;

/* The two tests of every catalogue file, on the bad_catalogue given as their state
 * (cmocka_unit_test_prestate):
 *  - every row of every group with each fixed value of its kind, in a fresh world; each
 *    group leaves Redis as it was and sends it nothing;
 *  - random_calls rows picked at random, each with random invalid values, in a fresh
 *    world; together they leave Redis as it was and send it nothing. */
void test_every_bad_argument_gets_its_documented_code_and_redis_sees_nothing(void **state);
void test_random_bad_arguments_get_their_documented_codes_and_redis_sees_nothing(void **state);

/* Every key of f's database, sorted: name, type, absolute expiry (PEXPIRETIME, which does
 * not move while a key is left alone) and its whole value; the caller frees it. Adds the
 * commands it sent to *admin (admin may be NULL). */
char *bad_redis_state(redis_fixture *f, long long *admin);

/* ---- rows shared by several headers ---------------------------------------------------------- */

/* The constructors of dlock/lock.h, dlock/rwlock.h, dlock/semaphore.h, dlock/latch.h. */
#define CTOR_CASES(X, ctor, out)                                                                   \
    X(ctor##_null_client, V_NONE, DLOCK_EINVAL, dlock_##ctor##_new(NULL, "n", &BW.out))            \
    X(ctor##_null_client_bad_name, V_NAME, DLOCK_EINVAL,                                           \
      dlock_##ctor##_new(NULL, b->name, &BW.out))                                                  \
    X(ctor##_bad_name, V_NAME, DLOCK_EINVAL, dlock_##ctor##_new(BW.c, b->name, &BW.out))           \
    X(ctor##_null_out, V_NONE, DLOCK_EINVAL, dlock_##ctor##_new(BW.c, "n", NULL))                  \
    X(ctor##_bad_name_null_out, V_NAME, DLOCK_EINVAL, dlock_##ctor##_new(BW.c, b->name, NULL))

/* Every call of dlock/lock.h with a bad argument, on a valid handle BW.K of any kind. */
#define LOCK_KIND_CASES(X, K)                                                                      \
    X(K##_acquire_lease, V_LEASE, DLOCK_EINVAL, dlock_lock_acquire(BW.K, b->lease))                \
    X(K##_try_wait, V_WAIT, DLOCK_EINVAL, dlock_lock_try_acquire(BW.K, b->wait, 1000))             \
    X(K##_try_wait_watchdog, V_WAIT, DLOCK_EINVAL,                                                 \
      dlock_lock_try_acquire(BW.K, b->wait, DLOCK_WATCHDOG))                                       \
    X(K##_try_lease, V_LEASE, DLOCK_EINVAL, dlock_lock_try_acquire(BW.K, 0, b->lease))             \
    X(K##_try_forever_lease, V_LEASE, DLOCK_EINVAL,                                                \
      dlock_lock_try_acquire(BW.K, DLOCK_FOREVER, b->lease))                                       \
    X(K##_is_locked_out, V_NONE, DLOCK_EINVAL, dlock_lock_is_locked(BW.K, NULL))                   \
    X(K##_is_held_out, V_NONE, DLOCK_EINVAL, dlock_lock_is_held(BW.K, NULL))                       \
    X(K##_hold_count_out, V_NONE, DLOCK_EINVAL, dlock_lock_hold_count(BW.K, NULL))                 \
    X(K##_ttl_out, V_NONE, DLOCK_EINVAL, dlock_lock_ttl(BW.K, NULL))                               \
    X(K##_token_out, V_NONE, DLOCK_EINVAL, dlock_lock_token(BW.K, NULL))                           \
    X(K##_token_of_out, V_NONE, DLOCK_EINVAL, dlock_lock_token_of(BW.K, 1, NULL))                  \
    X(K##_acquire_async_owner_0, V_NONE, DLOCK_EINVAL,                                             \
      dlock_lock_acquire_async(BW.K, 0, 0, 1000, unexpected_lock_cb, NULL))                        \
    X(K##_acquire_async_no_cb, V_NONE, DLOCK_EINVAL,                                               \
      dlock_lock_acquire_async(BW.K, 1, 0, 1000, NULL, NULL))                                      \
    X(K##_acquire_async_wait, V_WAIT, DLOCK_EINVAL,                                                \
      dlock_lock_acquire_async(BW.K, 1, b->wait, 1000, unexpected_lock_cb, NULL))                  \
    X(K##_acquire_async_lease, V_LEASE, DLOCK_EINVAL,                                              \
      dlock_lock_acquire_async(BW.K, 1, 0, b->lease, unexpected_lock_cb, NULL))                    \
    X(K##_release_async_owner_0, V_NONE, DLOCK_EINVAL,                                             \
      dlock_lock_release_async(BW.K, 0, unexpected_lock_cb, NULL))                                 \
    X(K##_release_async_no_cb, V_NONE, DLOCK_EINVAL, dlock_lock_release_async(BW.K, 1, NULL, NULL))

/* dlock_lock_token on a kind without tokens: DLOCK_EINVAL (lock.h, fairlock.md, rwlock.md,
 * multilock.h with no fenced member). */
#define NOT_FENCED_CASES(X, K)                                                                     \
    X(K##_token_not_fenced, V_NONE, DLOCK_EINVAL, dlock_lock_token(BW.K, &BW.out_token))           \
    X(K##_token_of_not_fenced, V_NONE, DLOCK_EINVAL, dlock_lock_token_of(BW.K, 77, &BW.out_token))

#endif
