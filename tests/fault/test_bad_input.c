/* test_bad_input.c — the bad-input catalogue: every public call of every header, called
 * with each invalid argument it can get, returns its documented DLOCK_E* code and leaves
 * Redis exactly as it was, without sending it a single command.
 *
 * The catalogue is a table: one row per (call, invalid argument), written once as an
 * X-macro line that becomes both the function making the call and the table entry
 * (name, function, kind of invalid value, expected code). A row whose argument is of a
 * kind with several invalid values (a negative count, a wait < 0 other than -1, a bad
 * name, a malformed permit id, ...) runs once per value of that kind. Rows are grouped by
 * header; around each group the test takes a dump of every key in Redis (KEYS, TYPE,
 * PEXPIRETIME and the value, binary-safe) and the server's total_commands_processed and
 * total_connections_received, and proves that nothing changed and that the only commands
 * the server ran were the test's own admin commands (counted one by one).
 *
 * Redis is not empty while this runs: a second client holds a lock, a fenced lock, a fair
 * lock, a read hold, a permit, and set a semaphore and a latch, all under the names the
 * handles of the rows use, with explicit leases (no watchdog traffic); so "unchanged"
 * covers keys a wrong call could have touched.
 *
 * Also here: the same table called 10,000 times (scaled by DLOCK_TEST_SCALE) with random
 * rows and random invalid values (seeded rand(); the seed is printed and can be replayed
 * with DLOCK_TEST_SEED); blocking calls made on an async client's loop thread
 * (DLOCK_EDEADLK); a permit id in upper case names the same permit (the code accepts any
 * hex case); keys of another type under the objects' names: DLOCK_EREDIS (WRONGTYPE) and
 * the keys untouched; and a client whose server died: every call fails with DLOCK_ECONN
 * within timeout_ms x (retry_attempts + 1), nothing hangs, and the client works again once
 * the server is back.
 *
 * Leases and option times above DLOCK_MAX_TIME_MS are refused (they used to overflow in
 * Redis or in deadline arithmetic); a composite on a member's loop thread is DLOCK_EDEADLK
 * (lt_multi_*, lt_red_*). */
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core_call.h"
#include "dlock.h"
#include "dlock/adapters/libev.h"
#include "harness.h"
#include "redis_fixture.h"
#include "test_util.h"

#define BUDGET_S 120

/* What a wrapper of a call that returns no int says when the call did not do what its
 * header documents (e.g. dlock_lock_name(NULL) did not return NULL). */
#define NOT_AS_DOCUMENTED (-1000)

#define MAX_NAME_LEN (64 * 1024)

/* ---- the world the rows call into ------------------------------------------------------------ */

/* A permit id with room for more than 32 characters: the library reads hex[0..32] only,
 * the rest keeps the string a C string. */
typedef struct long_id {
    dlock_permit_id id;
    char more[31];
} long_id;

static struct world {
    redis_fixture *f;
    long long admin;  /* commands this test sent through the fixture */
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
    long_id ids[12];
    long_id random_id;
    char random_url[64];
    char too_long_socket_url[160];
    /* callbacks that must never run */
    atomic_int unexpected_callbacks;
} W;

#define SENTINEL(p) ((void *)&(p))

static void reset_outs(void) {
    W.out_client = SENTINEL(W.out_client);
    W.out_lock = SENTINEL(W.out_lock);
    W.out_rw = SENTINEL(W.out_rw);
    W.out_sem = SENTINEL(W.out_sem);
    W.out_permits = SENTINEL(W.out_permits);
    W.out_latch = SENTINEL(W.out_latch);
}

/* Which constructor's out-parameter was written, or NULL. */
static const char *out_written(void) {
    if (W.out_client != SENTINEL(W.out_client))
        return "client";
    if (W.out_lock != SENTINEL(W.out_lock))
        return "lock";
    if (W.out_rw != SENTINEL(W.out_rw))
        return "rwlock";
    if (W.out_sem != SENTINEL(W.out_sem))
        return "semaphore";
    if (W.out_permits != SENTINEL(W.out_permits))
        return "permits";
    if (W.out_latch != SENTINEL(W.out_latch))
        return "latch";
    return NULL;
}

static void lock_cb(dlock_lock *l, int status, void *arg) {
    (void)l, (void)status, (void)arg;
    atomic_fetch_add(&W.unexpected_callbacks, 1);
}
static void lost_cb(dlock_lock *l, uint64_t owner, int reason, void *arg) {
    (void)l, (void)owner, (void)reason, (void)arg;
}
static void sem_cb(dlock_semaphore *s, int status, void *arg) {
    (void)s, (void)status, (void)arg;
    atomic_fetch_add(&W.unexpected_callbacks, 1);
}
static void permits_cb(dlock_permits *p, int status, const dlock_permit_id *id, void *arg) {
    (void)p, (void)status, (void)id, (void)arg;
    atomic_fetch_add(&W.unexpected_callbacks, 1);
}
static void latch_cb(dlock_latch *l, int status, void *arg) {
    (void)l, (void)status, (void)arg;
    atomic_fetch_add(&W.unexpected_callbacks, 1);
}
static void client_cb(dlock_client *c, int status, void *arg) {
    (void)c, (void)status, (void)arg;
    atomic_fetch_add(&W.unexpected_callbacks, 1);
}

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
    V_DELAY,    /* retry_delay_ms outside 0..3600000 */
    V_SIZE,     /* options.size not set by dlock_options_init */
    V_URL,      /* a URL dlock cannot use */
    V_KINDS
};

static const char *const KIND_NAMES[V_KINDS] = {
    "-",       "name", "negative count", "wait",           "lease",          "permit id",
    "below 3", "<= 0", "renew_batch",    "retry_attempts", "retry_delay_ms", "options.size",
    "url",
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

static const int64_t NEG_VALUES[] = {-1, -2, -1000000, INT64_MIN + 1, INT64_MIN};
static const int64_t WAIT_VALUES[] = {-2, -3, -1000, INT64_MIN + 1, INT64_MIN};
static const int64_t LEASE_VALUES[] = {
    0, -2, -1000, INT64_MIN + 1, INT64_MIN, DLOCK_MAX_TIME_MS + 1, INT64_MAX};
/* test_options.c has watchdog 0 / -5, fair_wait 0, timeout 0, connect_timeout -1,
 * renew_batch 0, retry_attempts -1, retry_delay -1 and size 0: these are the others. */
static const int64_t BELOW3_VALUES[] = {2, 1, -1, INT64_MIN, DLOCK_MAX_TIME_MS + 1, INT64_MAX};
static const int64_t NONPOS_VALUES[] = {-1000, INT64_MIN, DLOCK_MAX_TIME_MS + 1, INT64_MAX};
static const int BATCH_VALUES[] = {100001, INT_MAX, -1, INT_MIN};
static const int ATTEMPTS_VALUES[] = {1001, INT_MAX, INT_MIN};
static const int64_t DELAY_VALUES[] = {3600001, INT64_MAX, INT64_MIN};
static const size_t SIZE_VALUES[] = {1, offsetof(dlock_options, watchdog_ms) - 1,
                                     sizeof(dlock_options) + 1, SIZE_MAX};
static const char *const URL_VALUES[] = {
    "rediss://127.0.0.1:6390",      /* TLS: not in this build */
    "redis://127.0.0.1:0",          /* port 0 */
    "redis://127.0.0.1:65536",      /* port too big */
    "redis://127.0.0.1:-1",         /* port not a number */
    "redis://:6390",                /* no host */
    "redis://[::1:6390",            /* unterminated [ */
    "redis://127.0.0.1:6390/x",     /* db not a number */
    "redis://127.0.0.1:6390?db=1",  /* query on a TCP URL */
    "redis://alice@127.0.0.1:6390", /* userinfo without ':' */
    "redis://:p%zz@127.0.0.1:6390", /* bad %-escape */
    "redis://:p%00@127.0.0.1:6390", /* encoded NUL */
    "unix://relative.sock",         /* relative path */
    "unix:///",                     /* empty path */
    "unix:///tmp/x.sock?db=x",      /* db not a number */
    "unix:///tmp/x.sock?color=red", /* unknown parameter */
    "unix:///tmp/x.sock?db",        /* parameter without '=' */
    "tcp://127.0.0.1:6390",         /* another scheme */
    "127.0.0.1:6390",               /* no scheme */
    NULL,                           /* set up: a socket path over 107 bytes */
};
#define N_URLS (sizeof(URL_VALUES) / sizeof(URL_VALUES[0]))
#define N_NAMES 5
#define N_IDS 12

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static size_t kind_count(enum value_kind k) {
    switch (k) {
    case V_NONE:
        return 1;
    case V_NAME:
        return N_NAMES;
    case V_NEG:
        return COUNT(NEG_VALUES);
    case V_WAIT:
        return COUNT(WAIT_VALUES);
    case V_LEASE:
        return COUNT(LEASE_VALUES);
    case V_ID:
        return N_IDS;
    case V_BELOW3:
        return COUNT(BELOW3_VALUES);
    case V_NONPOS:
        return COUNT(NONPOS_VALUES);
    case V_BATCH:
        return COUNT(BATCH_VALUES);
    case V_ATTEMPTS:
        return COUNT(ATTEMPTS_VALUES);
    case V_DELAY:
        return COUNT(DELAY_VALUES);
    case V_SIZE:
        return COUNT(SIZE_VALUES);
    case V_URL:
        return N_URLS;
    default:
        return 0;
    }
}

static const char *fixed_name(size_t i) {
    switch (i % N_NAMES) {
    case 0:
        return NULL;
    case 1:
        return "";
    case 2:
        return W.name_64k_plus_1;
    case 3:
        return W.name_64k_plus_1_bin;
    default:
        return W.name_1m;
    }
}

static const char *fixed_url(size_t i) {
    const char *u = URL_VALUES[i % N_URLS];
    return u ? u : W.too_long_socket_url;
}

/* Every field gets its i-th fixed value (wrapping), so a row of any kind sees its i-th. */
static void bad_fixed(bad *b, size_t i) {
    b->name = fixed_name(i);
    b->neg = NEG_VALUES[i % COUNT(NEG_VALUES)];
    b->wait = WAIT_VALUES[i % COUNT(WAIT_VALUES)];
    b->lease = LEASE_VALUES[i % COUNT(LEASE_VALUES)];
    b->below3 = BELOW3_VALUES[i % COUNT(BELOW3_VALUES)];
    b->nonpos = NONPOS_VALUES[i % COUNT(NONPOS_VALUES)];
    b->batch = BATCH_VALUES[i % COUNT(BATCH_VALUES)];
    b->attempts = ATTEMPTS_VALUES[i % COUNT(ATTEMPTS_VALUES)];
    b->delay = DELAY_VALUES[i % COUNT(DELAY_VALUES)];
    b->size = SIZE_VALUES[i % COUNT(SIZE_VALUES)];
    b->url = fixed_url(i);
    b->id = i % N_IDS == 0 ? NULL : &W.ids[i % N_IDS].id;
}

/* ---- random invalid values ------------------------------------------------------------------- */

static uint64_t rand64(void) {
    return ((uint64_t)(unsigned)rand() << 42) ^ ((uint64_t)(unsigned)rand() << 21) ^
           (uint64_t)(unsigned)rand();
}

static uint64_t rand_below(uint64_t n) {
    return n ? rand64() % n : 0;
}

/* A random int64 in [lo, hi]. */
static int64_t rand_range(int64_t lo, int64_t hi) {
    uint64_t span = (uint64_t)hi - (uint64_t)lo;
    uint64_t off = span == UINT64_MAX ? rand64() : rand_below(span + 1);
    return (int64_t)((uint64_t)lo + off);
}

/* A random negative number, the edges more often than their share. */
static int64_t rand_negative(void) {
    switch (rand() % 8) {
    case 0:
        return -1;
    case 1:
        return INT64_MIN;
    case 2:
        return -rand_range(1, 1000);
    default:
        return rand_range(INT64_MIN, -1);
    }
}

static const char HEX[] = "0123456789abcdef";

static void random_hex32(char *out) {
    for (int i = 0; i < 32; i++)
        out[i] = HEX[rand() % 16];
    out[32] = '\0';
}

/* A byte that is neither a hex digit nor NUL. */
static char non_hex_byte(void) {
    for (;;) {
        int ch = 1 + rand() % 255;
        if (!strchr("0123456789abcdefABCDEF", ch))
            return (char)ch;
    }
}

static const dlock_permit_id *random_bad_id(void) {
    long_id *l = &W.random_id;
    memset(l, 0, sizeof(*l));
    random_hex32(l->id.hex);
    switch (rand() % 4) {
    case 0:
        return NULL;
    case 1: /* short: 0..31 characters */
        l->id.hex[rand() % 32] = '\0';
        break;
    case 2: /* a character that is no hex digit */
        l->id.hex[rand() % 32] = non_hex_byte();
        break;
    default: { /* 33 to 63 characters */
        int extra = 1 + rand() % 31;
        for (int i = 0; i < extra; i++) {
            char ch = rand() % 2 ? HEX[rand() % 16] : non_hex_byte();
            if (i == 0)
                l->id.hex[32] = ch;
            else
                l->more[i - 1] = ch;
        }
        break;
    }
    }
    return &l->id;
}

static const char *random_bad_name(void) {
    switch (rand() % 4) {
    case 0:
        return NULL;
    case 1:
        return "";
    default: { /* a suffix of more than 64 KiB of the random bytes */
        size_t total = 2 * MAX_NAME_LEN;
        return W.random_names + rand_below(total - MAX_NAME_LEN);
    }
    }
}

static const char *random_bad_url(void) {
    if (rand() % 2)
        return fixed_url((size_t)rand());
    snprintf(W.random_url, sizeof(W.random_url), "redis://127.0.0.1:%lld",
             (long long)rand_range(65536, INT64_MAX));
    return W.random_url;
}

static void bad_random(bad *b) {
    b->name = random_bad_name();
    b->neg = rand_negative();
    b->wait = rand_negative();
    if (b->wait == -1)
        b->wait = -2;
    b->lease = rand() % 4 ? rand_negative() : 0;
    if (b->lease == -1)
        b->lease = 0;
    b->below3 = rand() % 2 ? rand_range(INT64_MIN, 2) : rand_range(-2, 2);
    b->nonpos = rand() % 4 ? rand_negative() : 0;
    b->batch = rand() % 2 ? (int)rand_range(INT_MIN, 0) : (int)rand_range(100001, INT_MAX);
    b->attempts = rand() % 2 ? (int)rand_range(INT_MIN, -1) : (int)rand_range(1001, INT_MAX);
    b->delay = rand() % 2 ? rand_negative() : rand_range(3600001, INT64_MAX);
    b->size = rand() % 2 ? (size_t)rand_below(offsetof(dlock_options, watchdog_ms))
                         : sizeof(dlock_options) + 1 + (size_t)rand_below(1u << 20);
    b->url = random_bad_url();
    b->id = random_bad_id();
}

/* ---- client options -------------------------------------------------------------------------- */

enum opt_field {
    OF_WATCHDOG,
    OF_FAIR_WAIT,
    OF_TIMEOUT,
    OF_CONNECT,
    OF_BATCH,
    OF_ATTEMPTS,
    OF_DELAY,
    OF_SIZE,
    OF_URL
};

/* dlock_client_new (or _on_loop) with one bad field, every other field valid and the URL
 * that of the test's server: an option wrongly accepted would connect to it. */
static int client_new_with(enum opt_field field, const bad *b, bool on_loop) {
    dlock_options o;
    dlock_options_init(&o);
    o.url = redis_fixture_unix_url(W.f);
    o.connect_timeout_ms = 2000;
    switch (field) {
    case OF_WATCHDOG:
        o.watchdog_ms = b->below3;
        break;
    case OF_FAIR_WAIT:
        o.fair_wait_ms = b->below3;
        break;
    case OF_TIMEOUT:
        o.timeout_ms = b->nonpos;
        break;
    case OF_CONNECT:
        o.connect_timeout_ms = b->nonpos;
        break;
    case OF_BATCH:
        o.renew_batch = b->batch;
        break;
    case OF_ATTEMPTS:
        o.retry_attempts = b->attempts;
        break;
    case OF_DELAY:
        o.retry_delay_ms = b->delay;
        break;
    case OF_SIZE:
        o.size = b->size;
        break;
    case OF_URL:
        o.url = b->url;
        break;
    }
    int rc = on_loop ? dlock_client_new_on_loop(&o, W.loop, &W.out_client)
                     : dlock_client_new(&o, &W.out_client);
    if (rc == DLOCK_OK) { /* wrongly accepted: the row fails; free what was made */
        dlock_client_free(W.out_client);
        W.out_client = NULL;
    }
    return rc;
}

static int client_new_good(dlock_client **out, struct ev_loop *loop, bool on_loop) {
    dlock_options o;
    dlock_options_init(&o);
    o.url = redis_fixture_unix_url(W.f);
    return on_loop ? dlock_client_new_on_loop(&o, loop, out) : dlock_client_new(&o, out);
}

static int str_is(const char *got, const char *want) {
    return got && strcmp(got, want) == 0 ? DLOCK_OK : NOT_AS_DOCUMENTED;
}

static int is_null(const void *p) {
    return p ? NOT_AS_DOCUMENTED : DLOCK_OK;
}

/* ---- the catalogue --------------------------------------------------------------------------- */

/* X(id, kind, expected, call): `call` may use `b`, the invalid values (bad *). */

#define ERROR_AND_CLIENT_CASES(X)                                                                  \
    X(strerror_unknown, V_NONE, DLOCK_OK, str_is(dlock_strerror(1), "unknown error"))              \
    X(strerror_min, V_NONE, DLOCK_OK, str_is(dlock_strerror(INT_MIN), "unknown error"))            \
    X(err_name_unknown, V_NONE, DLOCK_OK, str_is(dlock_err_name(-9999), "DLOCK_UNKNOWN"))          \
    X(err_name_max, V_NONE, DLOCK_OK, str_is(dlock_err_name(INT_MAX), "DLOCK_UNKNOWN"))            \
    X(options_init_null, V_NONE, DLOCK_OK, (dlock_options_init(NULL), DLOCK_OK))                   \
    X(new_watchdog, V_BELOW3, DLOCK_EINVAL, client_new_with(OF_WATCHDOG, b, false))                \
    X(new_fair_wait, V_BELOW3, DLOCK_EINVAL, client_new_with(OF_FAIR_WAIT, b, false))              \
    X(new_timeout, V_NONPOS, DLOCK_EINVAL, client_new_with(OF_TIMEOUT, b, false))                  \
    X(new_connect_timeout, V_NONPOS, DLOCK_EINVAL, client_new_with(OF_CONNECT, b, false))          \
    X(new_renew_batch, V_BATCH, DLOCK_EINVAL, client_new_with(OF_BATCH, b, false))                 \
    X(new_retry_attempts, V_ATTEMPTS, DLOCK_EINVAL, client_new_with(OF_ATTEMPTS, b, false))        \
    X(new_retry_delay, V_DELAY, DLOCK_EINVAL, client_new_with(OF_DELAY, b, false))                 \
    X(new_size, V_SIZE, DLOCK_EINVAL, client_new_with(OF_SIZE, b, false))                          \
    X(new_url, V_URL, DLOCK_EINVAL, client_new_with(OF_URL, b, false))                             \
    X(new_null_out, V_NONE, DLOCK_EINVAL, client_new_good(NULL, NULL, false))                      \
    X(loop_watchdog, V_BELOW3, DLOCK_EINVAL, client_new_with(OF_WATCHDOG, b, true))                \
    X(loop_fair_wait, V_BELOW3, DLOCK_EINVAL, client_new_with(OF_FAIR_WAIT, b, true))              \
    X(loop_timeout, V_NONPOS, DLOCK_EINVAL, client_new_with(OF_TIMEOUT, b, true))                  \
    X(loop_connect_timeout, V_NONPOS, DLOCK_EINVAL, client_new_with(OF_CONNECT, b, true))          \
    X(loop_renew_batch, V_BATCH, DLOCK_EINVAL, client_new_with(OF_BATCH, b, true))                 \
    X(loop_retry_attempts, V_ATTEMPTS, DLOCK_EINVAL, client_new_with(OF_ATTEMPTS, b, true))        \
    X(loop_retry_delay, V_DELAY, DLOCK_EINVAL, client_new_with(OF_DELAY, b, true))                 \
    X(loop_size, V_SIZE, DLOCK_EINVAL, client_new_with(OF_SIZE, b, true))                          \
    X(loop_url, V_URL, DLOCK_EINVAL, client_new_with(OF_URL, b, true))                             \
    X(loop_null_loop, V_NONE, DLOCK_EINVAL, client_new_good(&W.out_client, NULL, true))            \
    X(loop_null_out, V_NONE, DLOCK_EINVAL, client_new_good(NULL, W.loop, true))                    \
    X(client_free_null, V_NONE, DLOCK_OK, dlock_client_free(NULL))                                 \
    X(client_id_null, V_NONE, DLOCK_OK, str_is(dlock_client_id(NULL), ""))                         \
    X(ping_null, V_NONE, DLOCK_EINVAL, dlock_client_ping(NULL))                                    \
    X(ping_async_null, V_NONE, DLOCK_EINVAL, dlock_client_ping_async(NULL, client_cb, NULL))       \
    X(ping_async_null_cb, V_NONE, DLOCK_EINVAL, dlock_client_ping_async(W.c, NULL, NULL))

/* The constructors of dlock/lock.h, dlock/rwlock.h, dlock/semaphore.h, dlock/latch.h. */
#define CTOR_CASES(X, ctor, out)                                                                   \
    X(ctor##_null_client, V_NONE, DLOCK_EINVAL, dlock_##ctor##_new(NULL, "n", &W.out))             \
    X(ctor##_null_client_bad_name, V_NAME, DLOCK_EINVAL,                                           \
      dlock_##ctor##_new(NULL, b->name, &W.out))                                                   \
    X(ctor##_bad_name, V_NAME, DLOCK_EINVAL, dlock_##ctor##_new(W.c, b->name, &W.out))             \
    X(ctor##_null_out, V_NONE, DLOCK_EINVAL, dlock_##ctor##_new(W.c, "n", NULL))                   \
    X(ctor##_bad_name_null_out, V_NAME, DLOCK_EINVAL, dlock_##ctor##_new(W.c, b->name, NULL))

/* Every call of dlock/lock.h on a NULL handle. */
#define NULL_LOCK_CASES(X)                                                                         \
    X(lock_free_null, V_NONE, DLOCK_OK, (dlock_lock_free(NULL), DLOCK_OK))                         \
    X(lock_name_null, V_NONE, DLOCK_OK, is_null(dlock_lock_name(NULL)))                            \
    X(acquire_null, V_NONE, DLOCK_EINVAL, dlock_lock_acquire(NULL, 1000))                          \
    X(acquire_null_watchdog, V_NONE, DLOCK_EINVAL, dlock_lock_acquire(NULL, DLOCK_WATCHDOG))       \
    X(acquire_null_bad_lease, V_LEASE, DLOCK_EINVAL, dlock_lock_acquire(NULL, b->lease))           \
    X(try_acquire_null, V_NONE, DLOCK_EINVAL, dlock_lock_try_acquire(NULL, 0, 1000))               \
    X(release_null, V_NONE, DLOCK_EINVAL, dlock_lock_release(NULL))                                \
    X(force_release_null, V_NONE, DLOCK_EINVAL, dlock_lock_force_release(NULL, &W.out_bool))       \
    X(force_release_null_null, V_NONE, DLOCK_EINVAL, dlock_lock_force_release(NULL, NULL))         \
    X(is_locked_null, V_NONE, DLOCK_EINVAL, dlock_lock_is_locked(NULL, &W.out_bool))               \
    X(is_held_null, V_NONE, DLOCK_EINVAL, dlock_lock_is_held(NULL, &W.out_bool))                   \
    X(hold_count_null, V_NONE, DLOCK_EINVAL, dlock_lock_hold_count(NULL, &W.out_int))              \
    X(ttl_null, V_NONE, DLOCK_EINVAL, dlock_lock_ttl(NULL, &W.out_int))                            \
    X(token_null, V_NONE, DLOCK_EINVAL, dlock_lock_token(NULL, &W.out_token))                      \
    X(token_of_null, V_NONE, DLOCK_EINVAL, dlock_lock_token_of(NULL, 1, &W.out_token))             \
    X(on_lost_null, V_NONE, DLOCK_EINVAL, dlock_lock_on_lost(NULL, lost_cb, NULL))                 \
    X(on_lost_null_null, V_NONE, DLOCK_EINVAL, dlock_lock_on_lost(NULL, NULL, NULL))               \
    X(acquire_async_null, V_NONE, DLOCK_EINVAL,                                                    \
      dlock_lock_acquire_async(NULL, 1, 0, 1000, lock_cb, NULL))                                   \
    X(release_async_null, V_NONE, DLOCK_EINVAL, dlock_lock_release_async(NULL, 1, lock_cb, NULL))

/* Every call of dlock/lock.h with a bad argument, on a valid handle W.K of any kind. */
#define LOCK_KIND_CASES(X, K)                                                                      \
    X(K##_acquire_lease, V_LEASE, DLOCK_EINVAL, dlock_lock_acquire(W.K, b->lease))                 \
    X(K##_try_wait, V_WAIT, DLOCK_EINVAL, dlock_lock_try_acquire(W.K, b->wait, 1000))              \
    X(K##_try_wait_watchdog, V_WAIT, DLOCK_EINVAL,                                                 \
      dlock_lock_try_acquire(W.K, b->wait, DLOCK_WATCHDOG))                                        \
    X(K##_try_lease, V_LEASE, DLOCK_EINVAL, dlock_lock_try_acquire(W.K, 0, b->lease))              \
    X(K##_try_forever_lease, V_LEASE, DLOCK_EINVAL,                                                \
      dlock_lock_try_acquire(W.K, DLOCK_FOREVER, b->lease))                                        \
    X(K##_is_locked_out, V_NONE, DLOCK_EINVAL, dlock_lock_is_locked(W.K, NULL))                    \
    X(K##_is_held_out, V_NONE, DLOCK_EINVAL, dlock_lock_is_held(W.K, NULL))                        \
    X(K##_hold_count_out, V_NONE, DLOCK_EINVAL, dlock_lock_hold_count(W.K, NULL))                  \
    X(K##_ttl_out, V_NONE, DLOCK_EINVAL, dlock_lock_ttl(W.K, NULL))                                \
    X(K##_token_out, V_NONE, DLOCK_EINVAL, dlock_lock_token(W.K, NULL))                            \
    X(K##_token_of_out, V_NONE, DLOCK_EINVAL, dlock_lock_token_of(W.K, 1, NULL))                   \
    X(K##_acquire_async_owner_0, V_NONE, DLOCK_EINVAL,                                             \
      dlock_lock_acquire_async(W.K, 0, 0, 1000, lock_cb, NULL))                                    \
    X(K##_acquire_async_no_cb, V_NONE, DLOCK_EINVAL,                                               \
      dlock_lock_acquire_async(W.K, 1, 0, 1000, NULL, NULL))                                       \
    X(K##_acquire_async_wait, V_WAIT, DLOCK_EINVAL,                                                \
      dlock_lock_acquire_async(W.K, 1, b->wait, 1000, lock_cb, NULL))                              \
    X(K##_acquire_async_lease, V_LEASE, DLOCK_EINVAL,                                              \
      dlock_lock_acquire_async(W.K, 1, 0, b->lease, lock_cb, NULL))                                \
    X(K##_release_async_owner_0, V_NONE, DLOCK_EINVAL,                                             \
      dlock_lock_release_async(W.K, 0, lock_cb, NULL))                                             \
    X(K##_release_async_no_cb, V_NONE, DLOCK_EINVAL, dlock_lock_release_async(W.K, 1, NULL, NULL))

/* dlock_lock_token on a kind without tokens: DLOCK_EINVAL (lock.h, fairlock.md, rwlock.md,
 * multilock.h with no fenced member). */
#define NOT_FENCED_CASES(X, K)                                                                     \
    X(K##_token_not_fenced, V_NONE, DLOCK_EINVAL, dlock_lock_token(W.K, &W.out_token))             \
    X(K##_token_of_not_fenced, V_NONE, DLOCK_EINVAL, dlock_lock_token_of(W.K, 77, &W.out_token))

/* Composites have no async face yet (multilock.h): valid arguments are DLOCK_EINVAL. */
#define COMPOSITE_CASES(X, K)                                                                      \
    X(K##_acquire_async, V_NONE, DLOCK_EINVAL,                                                     \
      dlock_lock_acquire_async(W.K, 1, 0, 1000, lock_cb, NULL))                                    \
    X(K##_release_async, V_NONE, DLOCK_EINVAL, dlock_lock_release_async(W.K, 1, lock_cb, NULL))

#define LOCK_CASES(X)                                                                              \
    CTOR_CASES(X, lock, out_lock)                                                                  \
    CTOR_CASES(X, fencedlock, out_lock)                                                            \
    CTOR_CASES(X, fairlock, out_lock)                                                              \
    NULL_LOCK_CASES(X)                                                                             \
    LOCK_KIND_CASES(X, lock)                                                                       \
    LOCK_KIND_CASES(X, fenced)                                                                     \
    LOCK_KIND_CASES(X, fair)                                                                       \
    NOT_FENCED_CASES(X, lock)                                                                      \
    NOT_FENCED_CASES(X, fair)                                                                      \
    /* fenced, never acquired by this thread or owner: ENOTOWNER, no I/O (lock.h) */               \
    X(fenced_token_never_acquired, V_NONE, DLOCK_ENOTOWNER,                                        \
      dlock_lock_token(W.fenced, &W.out_token))                                                    \
    X(fenced_token_of_never_acquired, V_NONE, DLOCK_ENOTOWNER,                                     \
      dlock_lock_token_of(W.fenced, 12345, &W.out_token))

#define RWLOCK_CASES(X)                                                                            \
    CTOR_CASES(X, rwlock, out_rw)                                                                  \
    X(rwlock_read_null, V_NONE, DLOCK_OK, is_null(dlock_rwlock_read(NULL)))                        \
    X(rwlock_write_null, V_NONE, DLOCK_OK, is_null(dlock_rwlock_write(NULL)))                      \
    X(rwlock_free_null, V_NONE, DLOCK_OK, (dlock_rwlock_free(NULL), DLOCK_OK))                     \
    LOCK_KIND_CASES(X, rd)                                                                         \
    LOCK_KIND_CASES(X, wr)                                                                         \
    NOT_FENCED_CASES(X, rd)                                                                        \
    NOT_FENCED_CASES(X, wr)

#define SEMAPHORE_CASES(X)                                                                         \
    CTOR_CASES(X, semaphore, out_sem)                                                              \
    X(sem_free_null, V_NONE, DLOCK_OK, (dlock_semaphore_free(NULL), DLOCK_OK))                     \
    X(sem_try_set_null, V_NONE, DLOCK_EINVAL,                                                      \
      dlock_semaphore_try_set_permits(NULL, 1, &W.out_bool))                                       \
    X(sem_try_set_neg, V_NEG, DLOCK_EINVAL,                                                        \
      dlock_semaphore_try_set_permits(W.sem, b->neg, &W.out_bool))                                 \
    X(sem_try_set_neg_no_out, V_NEG, DLOCK_EINVAL,                                                 \
      dlock_semaphore_try_set_permits(W.sem, b->neg, NULL))                                        \
    X(sem_add_null, V_NONE, DLOCK_EINVAL, dlock_semaphore_add_permits(NULL, 1))                    \
    X(sem_add_null_neg, V_NEG, DLOCK_EINVAL, dlock_semaphore_add_permits(NULL, b->neg))            \
    X(sem_acquire_null, V_NONE, DLOCK_EINVAL, dlock_semaphore_acquire(NULL, 1))                    \
    X(sem_acquire_neg, V_NEG, DLOCK_EINVAL, dlock_semaphore_acquire(W.sem, b->neg))                \
    X(sem_try_acquire_null, V_NONE, DLOCK_EINVAL, dlock_semaphore_try_acquire(NULL, 1, 0))         \
    X(sem_try_acquire_neg, V_NEG, DLOCK_EINVAL, dlock_semaphore_try_acquire(W.sem, b->neg, 0))     \
    X(sem_try_acquire_wait, V_WAIT, DLOCK_EINVAL, dlock_semaphore_try_acquire(W.sem, 1, b->wait))  \
    X(sem_release_null, V_NONE, DLOCK_EINVAL, dlock_semaphore_release(NULL, 1))                    \
    X(sem_release_neg, V_NEG, DLOCK_EINVAL, dlock_semaphore_release(W.sem, b->neg))                \
    X(sem_available_null, V_NONE, DLOCK_EINVAL, dlock_semaphore_available(NULL, &W.out_int))       \
    X(sem_available_out, V_NONE, DLOCK_EINVAL, dlock_semaphore_available(W.sem, NULL))             \
    X(sem_drain_null, V_NONE, DLOCK_EINVAL, dlock_semaphore_drain(NULL, &W.out_int))               \
    X(sem_drain_null_null, V_NONE, DLOCK_EINVAL, dlock_semaphore_drain(NULL, NULL))                \
    X(sem_acquire_async_null, V_NONE, DLOCK_EINVAL,                                                \
      dlock_semaphore_acquire_async(NULL, 1, 0, sem_cb, NULL))                                     \
    X(sem_acquire_async_neg, V_NEG, DLOCK_EINVAL,                                                  \
      dlock_semaphore_acquire_async(W.sem, b->neg, 0, sem_cb, NULL))                               \
    X(sem_acquire_async_wait, V_WAIT, DLOCK_EINVAL,                                                \
      dlock_semaphore_acquire_async(W.sem, 1, b->wait, sem_cb, NULL))                              \
    X(sem_acquire_async_no_cb, V_NONE, DLOCK_EINVAL,                                               \
      dlock_semaphore_acquire_async(W.sem, 1, 0, NULL, NULL))                                      \
    X(sem_release_async_null, V_NONE, DLOCK_EINVAL,                                                \
      dlock_semaphore_release_async(NULL, 1, sem_cb, NULL))                                        \
    X(sem_release_async_neg, V_NEG, DLOCK_EINVAL,                                                  \
      dlock_semaphore_release_async(W.sem, b->neg, sem_cb, NULL))                                  \
    X(sem_release_async_no_cb, V_NONE, DLOCK_EINVAL,                                               \
      dlock_semaphore_release_async(W.sem, 1, NULL, NULL))

#define PERMITS_CASES(X)                                                                           \
    CTOR_CASES(X, permits, out_permits)                                                            \
    X(permits_free_null, V_NONE, DLOCK_OK, (dlock_permits_free(NULL), DLOCK_OK))                   \
    X(permits_try_set_null, V_NONE, DLOCK_EINVAL,                                                  \
      dlock_permits_try_set_permits(NULL, 1, &W.out_bool))                                         \
    X(permits_try_set_neg, V_NEG, DLOCK_EINVAL,                                                    \
      dlock_permits_try_set_permits(W.permits, b->neg, &W.out_bool))                               \
    X(permits_acquire_null, V_NONE, DLOCK_EINVAL, dlock_permits_acquire(NULL, 0, -1, &W.out_id))   \
    X(permits_acquire_wait, V_WAIT, DLOCK_EINVAL,                                                  \
      dlock_permits_acquire(W.permits, b->wait, -1, &W.out_id))                                    \
    X(permits_acquire_lease, V_LEASE, DLOCK_EINVAL,                                                \
      dlock_permits_acquire(W.permits, 0, b->lease, &W.out_id))                                    \
    X(permits_acquire_out, V_NONE, DLOCK_EINVAL, dlock_permits_acquire(W.permits, 0, -1, NULL))    \
    X(permits_release_null, V_NONE, DLOCK_EINVAL, dlock_permits_release(NULL, &W.good_id))         \
    X(permits_release_id, V_ID, DLOCK_EINVAL, dlock_permits_release(W.permits, b->id))             \
    X(permits_lease_null, V_NONE, DLOCK_EINVAL,                                                    \
      dlock_permits_update_lease(NULL, &W.good_id, 1000))                                          \
    X(permits_lease_id, V_ID, DLOCK_EINVAL, dlock_permits_update_lease(W.permits, b->id, 1000))    \
    X(permits_lease_lease, V_LEASE, DLOCK_EINVAL,                                                  \
      dlock_permits_update_lease(W.permits, &W.good_id, b->lease))                                 \
    X(permits_available_null, V_NONE, DLOCK_EINVAL, dlock_permits_available(NULL, &W.out_int))     \
    X(permits_available_out, V_NONE, DLOCK_EINVAL, dlock_permits_available(W.permits, NULL))       \
    X(permits_acquire_async_null, V_NONE, DLOCK_EINVAL,                                            \
      dlock_permits_acquire_async(NULL, 0, -1, permits_cb, NULL))                                  \
    X(permits_acquire_async_wait, V_WAIT, DLOCK_EINVAL,                                            \
      dlock_permits_acquire_async(W.permits, b->wait, -1, permits_cb, NULL))                       \
    X(permits_acquire_async_lease, V_LEASE, DLOCK_EINVAL,                                          \
      dlock_permits_acquire_async(W.permits, 0, b->lease, permits_cb, NULL))                       \
    X(permits_acquire_async_no_cb, V_NONE, DLOCK_EINVAL,                                           \
      dlock_permits_acquire_async(W.permits, 0, -1, NULL, NULL))                                   \
    X(permits_release_async_null, V_NONE, DLOCK_EINVAL,                                            \
      dlock_permits_release_async(NULL, &W.good_id, permits_cb, NULL))                             \
    X(permits_release_async_id, V_ID, DLOCK_EINVAL,                                                \
      dlock_permits_release_async(W.permits, b->id, permits_cb, NULL))                             \
    X(permits_release_async_no_cb, V_NONE, DLOCK_EINVAL,                                           \
      dlock_permits_release_async(W.permits, &W.good_id, NULL, NULL))

#define LATCH_CASES(X)                                                                             \
    CTOR_CASES(X, latch, out_latch)                                                                \
    X(latch_free_null, V_NONE, DLOCK_OK, (dlock_latch_free(NULL), DLOCK_OK))                       \
    X(latch_try_set_null, V_NONE, DLOCK_EINVAL, dlock_latch_try_set_count(NULL, 1, &W.out_bool))   \
    X(latch_try_set_neg, V_NEG, DLOCK_EINVAL,                                                      \
      dlock_latch_try_set_count(W.latch, b->neg, &W.out_bool))                                     \
    X(latch_try_set_neg_no_out, V_NEG, DLOCK_EINVAL,                                               \
      dlock_latch_try_set_count(W.latch, b->neg, NULL))                                            \
    X(latch_count_down_null, V_NONE, DLOCK_EINVAL, dlock_latch_count_down(NULL))                   \
    X(latch_count_null, V_NONE, DLOCK_EINVAL, dlock_latch_count(NULL, &W.out_int))                 \
    X(latch_count_out, V_NONE, DLOCK_EINVAL, dlock_latch_count(W.latch, NULL))                     \
    X(latch_await_null, V_NONE, DLOCK_EINVAL, dlock_latch_await(NULL, 0))                          \
    X(latch_await_wait, V_WAIT, DLOCK_EINVAL, dlock_latch_await(W.latch, b->wait))                 \
    X(latch_await_async_null, V_NONE, DLOCK_EINVAL,                                                \
      dlock_latch_await_async(NULL, 0, latch_cb, NULL))                                            \
    X(latch_await_async_wait, V_WAIT, DLOCK_EINVAL,                                                \
      dlock_latch_await_async(W.latch, b->wait, latch_cb, NULL))                                   \
    X(latch_await_async_no_cb, V_NONE, DLOCK_EINVAL,                                               \
      dlock_latch_await_async(W.latch, 0, NULL, NULL))                                             \
    X(latch_count_down_async_null, V_NONE, DLOCK_EINVAL,                                           \
      dlock_latch_count_down_async(NULL, latch_cb, NULL))                                          \
    X(latch_count_down_async_no_cb, V_NONE, DLOCK_EINVAL,                                          \
      dlock_latch_count_down_async(W.latch, NULL, NULL))

#define COMPOSITE_CTOR_CASES(X, kind)                                                              \
    X(kind##_null_array, V_NONE, DLOCK_EINVAL, dlock_##kind##_new(NULL, 2, &W.out_lock))           \
    X(kind##_null_array_n0, V_NONE, DLOCK_EINVAL, dlock_##kind##_new(NULL, 0, &W.out_lock))        \
    X(kind##_n0, V_NONE, DLOCK_EINVAL, dlock_##kind##_new(W.pair, 0, &W.out_lock))                 \
    X(kind##_null_out, V_NONE, DLOCK_EINVAL, dlock_##kind##_new(W.pair, 2, NULL))                  \
    X(kind##_null_member, V_NONE, DLOCK_EINVAL, dlock_##kind##_new(W.with_null, 2, &W.out_lock))   \
    X(kind##_null_first, V_NONE, DLOCK_EINVAL, dlock_##kind##_new(W.null_first, 2, &W.out_lock))   \
    X(kind##_duplicate, V_NONE, DLOCK_EINVAL, dlock_##kind##_new(W.dup, 2, &W.out_lock))           \
    X(kind##_multilock_member, V_NONE, DLOCK_EINVAL,                                               \
      dlock_##kind##_new(W.with_multi, 2, &W.out_lock))                                            \
    X(kind##_redlock_member, V_NONE, DLOCK_EINVAL, dlock_##kind##_new(W.with_red, 2, &W.out_lock))

#define MULTILOCK_CASES(X)                                                                         \
    COMPOSITE_CTOR_CASES(X, multilock)                                                             \
    COMPOSITE_CTOR_CASES(X, redlock)                                                               \
    LOCK_KIND_CASES(X, multi)                                                                      \
    LOCK_KIND_CASES(X, red)                                                                        \
    NOT_FENCED_CASES(X, multi)                                                                     \
    NOT_FENCED_CASES(X, red)                                                                       \
    COMPOSITE_CASES(X, multi)                                                                      \
    COMPOSITE_CASES(X, red)

/* Blocking calls on the async client's loop thread (this thread): DLOCK_EDEADLK, before
 * any I/O. Valid arguments otherwise. (A RedLock is left out: see the file comment.) */
#define LOOP_THREAD_CASES(X)                                                                       \
    X(lt_ping, V_NONE, DLOCK_EDEADLK, dlock_client_ping(W.lc))                                     \
    X(lt_acquire, V_NONE, DLOCK_EDEADLK, dlock_lock_acquire(W.l_lock, 1000))                       \
    X(lt_acquire_watchdog, V_NONE, DLOCK_EDEADLK, dlock_lock_acquire(W.l_lock, DLOCK_WATCHDOG))    \
    X(lt_try_acquire, V_NONE, DLOCK_EDEADLK, dlock_lock_try_acquire(W.l_lock, 0, 1000))            \
    X(lt_release, V_NONE, DLOCK_EDEADLK, dlock_lock_release(W.l_lock))                             \
    X(lt_force_release, V_NONE, DLOCK_EDEADLK, dlock_lock_force_release(W.l_lock, NULL))           \
    X(lt_is_locked, V_NONE, DLOCK_EDEADLK, dlock_lock_is_locked(W.l_lock, &W.out_bool))            \
    X(lt_is_held, V_NONE, DLOCK_EDEADLK, dlock_lock_is_held(W.l_lock, &W.out_bool))                \
    X(lt_hold_count, V_NONE, DLOCK_EDEADLK, dlock_lock_hold_count(W.l_lock, &W.out_int))           \
    X(lt_ttl, V_NONE, DLOCK_EDEADLK, dlock_lock_ttl(W.l_lock, &W.out_int))                         \
    X(lt_fenced_acquire, V_NONE, DLOCK_EDEADLK, dlock_lock_try_acquire(W.l_fenced, 0, 1000))       \
    /* token_of never blocks on the loop thread: it answers there, here ENOTOWNER */               \
    X(lt_fenced_token, V_NONE, DLOCK_ENOTOWNER, dlock_lock_token_of(W.l_fenced, 5, &W.out_token))  \
    X(lt_fair_acquire, V_NONE, DLOCK_EDEADLK, dlock_lock_try_acquire(W.l_fair, 0, 1000))           \
    X(lt_read_acquire, V_NONE, DLOCK_EDEADLK,                                                      \
      dlock_lock_try_acquire(dlock_rwlock_read(W.l_rw), 0, 1000))                                  \
    X(lt_write_acquire, V_NONE, DLOCK_EDEADLK,                                                     \
      dlock_lock_try_acquire(dlock_rwlock_write(W.l_rw), 0, 1000))                                 \
    X(lt_multi_acquire, V_NONE, DLOCK_EDEADLK, dlock_lock_try_acquire(W.l_multi, 0, 1000))         \
    X(lt_multi_is_locked, V_NONE, DLOCK_EDEADLK, dlock_lock_is_locked(W.l_multi, &W.out_bool))     \
    X(lt_red_acquire, V_NONE, DLOCK_EDEADLK, dlock_lock_try_acquire(W.l_red, DLOCK_FOREVER, 1000)) \
    X(lt_red_release, V_NONE, DLOCK_EDEADLK, dlock_lock_release(W.l_red))                          \
    X(lt_red_is_held, V_NONE, DLOCK_EDEADLK, dlock_lock_is_held(W.l_red, &W.out_bool))             \
    X(lt_red_ttl, V_NONE, DLOCK_EDEADLK, dlock_lock_ttl(W.l_red, &W.out_int))                      \
    X(lt_sem_try_set, V_NONE, DLOCK_EDEADLK, dlock_semaphore_try_set_permits(W.l_sem, 1, NULL))    \
    X(lt_sem_add, V_NONE, DLOCK_EDEADLK, dlock_semaphore_add_permits(W.l_sem, 1))                  \
    X(lt_sem_acquire, V_NONE, DLOCK_EDEADLK, dlock_semaphore_acquire(W.l_sem, 1))                  \
    X(lt_sem_try_acquire, V_NONE, DLOCK_EDEADLK, dlock_semaphore_try_acquire(W.l_sem, 1, 0))       \
    X(lt_sem_release, V_NONE, DLOCK_EDEADLK, dlock_semaphore_release(W.l_sem, 1))                  \
    X(lt_sem_available, V_NONE, DLOCK_EDEADLK, dlock_semaphore_available(W.l_sem, &W.out_int))     \
    X(lt_sem_drain, V_NONE, DLOCK_EDEADLK, dlock_semaphore_drain(W.l_sem, NULL))                   \
    X(lt_permits_try_set, V_NONE, DLOCK_EDEADLK,                                                   \
      dlock_permits_try_set_permits(W.l_permits, 1, NULL))                                         \
    X(lt_permits_acquire, V_NONE, DLOCK_EDEADLK,                                                   \
      dlock_permits_acquire(W.l_permits, 0, -1, &W.out_id))                                        \
    X(lt_permits_release, V_NONE, DLOCK_EDEADLK, dlock_permits_release(W.l_permits, &W.good_id))   \
    X(lt_permits_lease, V_NONE, DLOCK_EDEADLK,                                                     \
      dlock_permits_update_lease(W.l_permits, &W.good_id, 1000))                                   \
    X(lt_permits_available, V_NONE, DLOCK_EDEADLK,                                                 \
      dlock_permits_available(W.l_permits, &W.out_int))                                            \
    X(lt_latch_try_set, V_NONE, DLOCK_EDEADLK, dlock_latch_try_set_count(W.l_latch, 1, NULL))      \
    X(lt_latch_count_down, V_NONE, DLOCK_EDEADLK, dlock_latch_count_down(W.l_latch))               \
    X(lt_latch_count, V_NONE, DLOCK_EDEADLK, dlock_latch_count(W.l_latch, &W.out_int))             \
    X(lt_latch_await, V_NONE, DLOCK_EDEADLK, dlock_latch_await(W.l_latch, 0))

/* The functions and the table. */
typedef struct bad_case {
    const char *call; /* the call as written in the row */
    int (*run)(const bad *b);
    enum value_kind kind;
    int expect;
} bad_case;

#define DEFINE_CALL(id, kind, expect, call)                                                        \
    static int call_##id(const bad *b) {                                                           \
        (void)b;                                                                                   \
        return (call);                                                                             \
    }
#define TABLE_ROW(id, kind, expect, call) {#call, call_##id, kind, expect},

ERROR_AND_CLIENT_CASES(DEFINE_CALL)
LOCK_CASES(DEFINE_CALL)
RWLOCK_CASES(DEFINE_CALL)
SEMAPHORE_CASES(DEFINE_CALL)
PERMITS_CASES(DEFINE_CALL)
LATCH_CASES(DEFINE_CALL)
MULTILOCK_CASES(DEFINE_CALL)
LOOP_THREAD_CASES(DEFINE_CALL)

static const bad_case CLIENT_TABLE[] = {ERROR_AND_CLIENT_CASES(TABLE_ROW)};
static const bad_case LOCK_TABLE[] = {LOCK_CASES(TABLE_ROW)};
static const bad_case RWLOCK_TABLE[] = {RWLOCK_CASES(TABLE_ROW)};
static const bad_case SEMAPHORE_TABLE[] = {SEMAPHORE_CASES(TABLE_ROW)};
static const bad_case PERMITS_TABLE[] = {PERMITS_CASES(TABLE_ROW)};
static const bad_case LATCH_TABLE[] = {LATCH_CASES(TABLE_ROW)};
static const bad_case MULTILOCK_TABLE[] = {MULTILOCK_CASES(TABLE_ROW)};
static const bad_case LOOP_THREAD_TABLE[] = {LOOP_THREAD_CASES(TABLE_ROW)};

typedef struct group {
    const char *name;
    const bad_case *rows;
    size_t n;
} group;

static const group GROUPS[] = {
    {"error.h, client.h, options", CLIENT_TABLE, COUNT(CLIENT_TABLE)},
    {"lock.h", LOCK_TABLE, COUNT(LOCK_TABLE)},
    {"rwlock.h", RWLOCK_TABLE, COUNT(RWLOCK_TABLE)},
    {"semaphore.h: semaphore", SEMAPHORE_TABLE, COUNT(SEMAPHORE_TABLE)},
    {"semaphore.h: permits", PERMITS_TABLE, COUNT(PERMITS_TABLE)},
    {"latch.h", LATCH_TABLE, COUNT(LATCH_TABLE)},
    {"multilock.h", MULTILOCK_TABLE, COUNT(MULTILOCK_TABLE)},
    {"the loop thread (DLOCK_EDEADLK)", LOOP_THREAD_TABLE, COUNT(LOOP_THREAD_TABLE)},
};

/* ---- reading Redis back through the fixture, every command counted --------------------------- */

static redisReply *admin_argv(int argc, const char **argv, const size_t *lens) {
    W.admin++;
    redisReply *r = redis_fixture_cmd_argv(W.f, argc, argv, lens);
    assert_non_null(r);
    return r;
}

/* cmd key [extra ...] (NULL-terminated extras, at most 3). */
static redisReply *admin_key_cmd(const char *cmd, const char *key, size_t klen, ...) {
    const char *argv[5] = {cmd, key};
    size_t lens[5] = {strlen(cmd), klen};
    int argc = 2;
    va_list ap;
    va_start(ap, klen);
    const char *extra;
    while (argc < 5 && (extra = va_arg(ap, const char *)) != NULL) {
        argv[argc] = extra;
        lens[argc++] = strlen(extra);
    }
    va_end(ap);
    return admin_argv(argc, argv, lens);
}

static long long admin_info(const char *field) {
    W.admin++;
    return redis_fixture_info_int(W.f, "stats", field);
}

typedef struct text {
    char *s;
    size_t len, cap;
} text;

static void text_add(text *t, const char *data, size_t n) {
    if (t->len + 4 * n + 2 > t->cap) { /* and room for a newline and the NUL */
        t->cap = (t->len + 4 * n + 2) * 2;
        t->s = realloc(t->s, t->cap);
        assert_non_null(t->s);
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)data[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '\\')
            t->s[t->len++] = (char)ch;
        else
            t->len += (size_t)sprintf(t->s + t->len, "\\x%02x", ch);
    }
    t->s[t->len] = '\0';
}

static void text_str(text *t, const char *s) {
    text_add(t, s, strlen(s));
}

static void text_reply(text *t, const redisReply *r) {
    char num[32];
    switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        text_add(t, r->str, r->len);
        break;
    case REDIS_REPLY_INTEGER:
        snprintf(num, sizeof(num), "%lld", r->integer);
        text_str(t, num);
        break;
    case REDIS_REPLY_NIL:
        text_str(t, "(nil)");
        break;
    case REDIS_REPLY_ARRAY:
        text_str(t, "[");
        for (size_t i = 0; i < r->elements; i++) {
            if (i)
                text_str(t, ", ");
            text_reply(t, r->element[i]);
        }
        text_str(t, "]");
        break;
    default:
        text_str(t, "?");
    }
}

static int cmp_key(const void *a, const void *b) {
    const redisReply *x = *(redisReply *const *)a, *y = *(redisReply *const *)b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->str, y->str, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Every key of the database, sorted: name, type, absolute expiry (PEXPIRETIME, which does
 * not move while a key is left alone) and its whole value. 2 + 3 commands per key. */
static char *redis_state(void) {
    text t = {0};
    const char *dbsize_argv[] = {"DBSIZE"};
    size_t dbsize_len[] = {6};
    redisReply *n = admin_argv(1, dbsize_argv, dbsize_len);
    const char *keys_argv[] = {"KEYS", "*"};
    size_t keys_len[] = {4, 1};
    redisReply *keys = admin_argv(2, keys_argv, keys_len);
    assert_int_equal(keys->type, REDIS_REPLY_ARRAY);
    assert_int_equal(n->integer, (long long)keys->elements);
    qsort(keys->element, keys->elements, sizeof(keys->element[0]), cmp_key);
    for (size_t i = 0; i < keys->elements; i++) {
        const redisReply *k = keys->element[i];
        redisReply *type = admin_key_cmd("TYPE", k->str, k->len, NULL);
        redisReply *expiry = admin_key_cmd("PEXPIRETIME", k->str, k->len, NULL);
        redisReply *value;
        if (strcmp(type->str, "string") == 0)
            value = admin_key_cmd("GET", k->str, k->len, NULL);
        else if (strcmp(type->str, "hash") == 0)
            value = admin_key_cmd("HGETALL", k->str, k->len, NULL);
        else if (strcmp(type->str, "zset") == 0)
            value = admin_key_cmd("ZRANGE", k->str, k->len, "0", "-1", "WITHSCORES", NULL);
        else if (strcmp(type->str, "list") == 0)
            value = admin_key_cmd("LRANGE", k->str, k->len, "0", "-1", NULL);
        else if (strcmp(type->str, "set") == 0)
            value = admin_key_cmd("SMEMBERS", k->str, k->len, NULL);
        else
            value = admin_key_cmd("DUMP", k->str, k->len, NULL);
        text_add(&t, k->str, k->len);
        text_str(&t, " ");
        text_reply(&t, type);
        text_str(&t, " expiry=");
        text_reply(&t, expiry);
        text_str(&t, " ");
        text_reply(&t, value);
        t.s[t.len++] = '\n'; /* text_add keeps room for it */
        t.s[t.len] = '\0';
        freeReplyObject(type);
        freeReplyObject(expiry);
        freeReplyObject(value);
    }
    freeReplyObject(keys);
    freeReplyObject(n);
    if (!t.s)
        text_str(&t, "");
    return t.s;
}

/* What the server has seen so far: its command counter and its connection counter. */
typedef struct server_mark {
    long long admin;    /* our count of admin commands when the mark was taken */
    long long commands; /* total_commands_processed, not counting the INFO reading it */
    long long connections;
    char *state;
} server_mark;

static server_mark mark_take(void) {
    server_mark m;
    m.state = redis_state();
    m.admin = W.admin;
    m.commands = admin_info("total_commands_processed");
    m.connections = admin_info("total_connections_received");
    return m;
}

/* Redis is as it was at `before`, and it ran no command but ours since. */
static void mark_check_unchanged(server_mark *before, const char *what) {
    long long admin = W.admin;
    long long commands = admin_info("total_commands_processed");
    long long connections = admin_info("total_connections_received");
    if (commands - before->commands != admin - before->admin)
        fail_msg("%s: the server ran %lld commands, the test sent %lld of them", what,
                 commands - before->commands, admin - before->admin);
    if (connections != before->connections)
        fail_msg("%s: %lld new connections to the server", what, connections - before->connections);
    char *after = redis_state();
    if (strcmp(before->state, after) != 0)
        fail_msg("%s: Redis changed.\nbefore:\n%s\nafter:\n%s", what, before->state, after);
    free(after);
    free(before->state);
    before->state = NULL;
}

/* ---- running rows ---------------------------------------------------------------------------- */

static void describe_value(const bad_case *row, const bad *b, char *buf, size_t size) {
    switch (row->kind) {
    case V_NAME:
        if (!b->name)
            snprintf(buf, size, "name NULL");
        else
            snprintf(buf, size, "name of %zu bytes", strlen(b->name));
        break;
    case V_NEG:
        snprintf(buf, size, "%lld", (long long)b->neg);
        break;
    case V_WAIT:
        snprintf(buf, size, "wait %lld", (long long)b->wait);
        break;
    case V_LEASE:
        snprintf(buf, size, "lease %lld", (long long)b->lease);
        break;
    case V_BELOW3:
        snprintf(buf, size, "%lld", (long long)b->below3);
        break;
    case V_NONPOS:
        snprintf(buf, size, "%lld", (long long)b->nonpos);
        break;
    case V_BATCH:
        snprintf(buf, size, "%d", b->batch);
        break;
    case V_ATTEMPTS:
        snprintf(buf, size, "%d", b->attempts);
        break;
    case V_DELAY:
        snprintf(buf, size, "%lld", (long long)b->delay);
        break;
    case V_SIZE:
        snprintf(buf, size, "size %zu", b->size);
        break;
    case V_URL:
        snprintf(buf, size, "url \"%.80s\"", b->url);
        break;
    case V_ID:
        if (!b->id)
            snprintf(buf, size, "id NULL");
        else {
            /* every id of the rows lives in a long_id: its characters may run on */
            const long_id *l = (const long_id *)b->id;
            size_t len = strnlen(l->id.hex, 33);
            if (len == 33)
                len += strnlen(l->more, sizeof(l->more));
            text t = {0};
            text_add(&t, l->id.hex, len);
            snprintf(buf, size, "id \"%s\"", t.s);
            free(t.s);
        }
        break;
    default:
        snprintf(buf, size, "-");
        break;
    }
}

/* One call: the documented code, a reason in dlock_last_error() for a failure, and no
 * constructor's out-parameter written. */
static void run_row(const bad_case *row, const bad *b) {
    dlock__set_last_error("");
    reset_outs();
    int rc = row->run(b);
    char value[200];
    if (rc != row->expect) {
        describe_value(row, b, value, sizeof(value));
        fail_msg("%s [%s: %s] = %s (%s), expected %s", row->call, KIND_NAMES[row->kind], value,
                 rc == NOT_AS_DOCUMENTED ? "not as documented" : dlock_err_name(rc),
                 dlock_last_error(), dlock_err_name(row->expect));
    }
    if (rc != DLOCK_OK && !dlock_last_error()[0]) {
        describe_value(row, b, value, sizeof(value));
        fail_msg("%s [%s]: %s without a text in dlock_last_error()", row->call, value,
                 dlock_err_name(rc));
    }
    const char *written = out_written();
    if (written) {
        describe_value(row, b, value, sizeof(value));
        fail_msg("%s [%s]: the %s out-parameter was written", row->call, value, written);
    }
}

/* ---- the world: servers, clients, handles, state in Redis ------------------------------------ */

#define OK(expr)                                                                                   \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ != DLOCK_OK)                                                                       \
            fail_msg("%s = %s (%s)", #expr, dlock_err_name(rc_), dlock_last_error());              \
    } while (0)

#define LONG_LEASE 3600000 /* the state's leases outlive any run, valgrind included */

static void *hold_in_redis(void *arg) {
    (void)arg;
    /* a thread of the second client: every hold below is another owner's */
    dlock_lock *l, *fl, *fair, *m1;
    dlock_rwlock *rw;
    dlock_semaphore *s;
    dlock_permits *p;
    dlock_latch *la;
    OK(dlock_lock_new(W.c2, "bi:lock", &l));
    OK(dlock_fencedlock_new(W.c2, "bi:fenced", &fl));
    OK(dlock_fairlock_new(W.c2, "bi:fair", &fair));
    OK(dlock_lock_new(W.c2, "bi:m1", &m1));
    OK(dlock_rwlock_new(W.c2, "bi:rw", &rw));
    OK(dlock_semaphore_new(W.c2, "bi:sem", &s));
    OK(dlock_permits_new(W.c2, "bi:permits", &p));
    OK(dlock_latch_new(W.c2, "bi:latch", &la));
    OK(dlock_lock_try_acquire(l, 0, LONG_LEASE));
    OK(dlock_lock_try_acquire(fl, 0, LONG_LEASE));
    OK(dlock_lock_try_acquire(fair, 0, LONG_LEASE));
    OK(dlock_lock_try_acquire(m1, 0, LONG_LEASE));
    OK(dlock_lock_try_acquire(dlock_rwlock_read(rw), 0, LONG_LEASE));
    OK(dlock_semaphore_try_set_permits(s, 5, NULL));
    OK(dlock_permits_try_set_permits(p, 3, NULL));
    dlock_permit_id id;
    OK(dlock_permits_acquire(p, 0, LONG_LEASE, &id));
    OK(dlock_permits_acquire(p, 0, -1, &id));
    OK(dlock_latch_try_set_count(la, 7, NULL));
    /* handles go; holds stay until their leases end (no watchdog: no traffic) */
    dlock_lock_free(l);
    dlock_lock_free(fl);
    dlock_lock_free(fair);
    dlock_lock_free(m1);
    dlock_rwlock_free(rw);
    dlock_semaphore_free(s);
    dlock_permits_free(p);
    dlock_latch_free(la);
    return NULL;
}

static void fill_names(void) {
    size_t big = MAX_NAME_LEN + 1;
    W.name_64k_plus_1 = malloc(big + 1);
    W.name_64k_plus_1_bin = malloc(big + 1);
    W.name_1m = malloc((1u << 20) + 1);
    W.random_names = malloc(2 * MAX_NAME_LEN + 1);
    assert_true(W.name_64k_plus_1 && W.name_64k_plus_1_bin && W.name_1m && W.random_names);
    memset(W.name_64k_plus_1, 'n', big);
    W.name_64k_plus_1[big] = '\0';
    for (size_t i = 0; i < big; i++)
        W.name_64k_plus_1_bin[i] = (char)(1 + i % 255);
    W.name_64k_plus_1_bin[big] = '\0';
    memset(W.name_1m, 'm', 1u << 20);
    W.name_1m[1u << 20] = '\0';
    for (size_t i = 0; i < 2 * MAX_NAME_LEN; i++)
        W.random_names[i] = (char)(1 + rand() % 255);
    W.random_names[2 * MAX_NAME_LEN] = '\0';
}

/* The fixed malformed ids; ids[0] stands for NULL. */
static void fill_ids(void) {
    memset(W.ids, 0, sizeof(W.ids));
    const char *good = "0123456789abcdef0123456789abcdef";
    for (int i = 1; i < N_IDS; i++)
        memcpy(W.ids[i].id.hex, good, 32);
    W.ids[1].id.hex[0] = '\0';         /* empty */
    memcpy(W.ids[2].id.hex, "abc", 4); /* short */
    W.ids[3].id.hex[31] = '\0';        /* 31 characters */
    W.ids[4].id.hex[31] = 'g';         /* not hex at the end */
    W.ids[5].id.hex[16] = ' ';         /* a space inside */
    W.ids[6].id.hex[0] = '-';          /* a sign */
    memcpy(W.ids[7].id.hex, "0x", 2);  /* a 0x prefix */
    W.ids[8].id.hex[32] = 'a';         /* 33 characters */
    W.ids[9].id.hex[32] = '0';         /* 40 characters */
    memcpy(W.ids[9].more, "1234567", 8);
    W.ids[10].id.hex[5] = (char)0xc3; /* a UTF-8 letter */
    W.ids[10].id.hex[6] = (char)0xa9;
    W.ids[11].id.hex[20] = '\0'; /* NUL inside, hex after it */
    memcpy(W.good_id.hex, "fedcba9876543210fedcba9876543210", 33);
}

static void world_setup(void) {
    memset(&W, 0, sizeof(W));
    assert_int_equal(redis_fixture_start(NULL, &W.f), 0);
    fill_names();
    fill_ids();
    char path[200];
    memset(path, 'p', sizeof(path));
    snprintf(W.too_long_socket_url, sizeof(W.too_long_socket_url), "unix:///tmp/%.120s.sock", path);
    W.c = connect_client(W.f);
    W.c2 = connect_client(W.f);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, hold_in_redis, NULL), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    /* a list too, so that the dump covers a type dlock never writes */
    redisReply *r = redis_fixture_cmd(W.f, "RPUSH bi:list a b c");
    freeReplyObject(r);

    OK(dlock_lock_new(W.c, "bi:lock", &W.lock));
    OK(dlock_fencedlock_new(W.c, "bi:fenced", &W.fenced));
    OK(dlock_fairlock_new(W.c, "bi:fair", &W.fair));
    OK(dlock_rwlock_new(W.c, "bi:rw", &W.rw));
    W.rd = dlock_rwlock_read(W.rw);
    W.wr = dlock_rwlock_write(W.rw);
    OK(dlock_semaphore_new(W.c, "bi:sem", &W.sem));
    OK(dlock_permits_new(W.c, "bi:permits", &W.permits));
    OK(dlock_latch_new(W.c, "bi:latch", &W.latch));
    OK(dlock_lock_new(W.c, "bi:m1", &W.multi_members[0]));
    OK(dlock_lock_new(W.c2, "bi:m2", &W.multi_members[1]));
    OK(dlock_multilock_new(W.multi_members, 2, &W.multi));
    OK(dlock_lock_new(W.c, "bi:r1", &W.red_members[0]));
    OK(dlock_lock_new(W.c2, "bi:r2", &W.red_members[1]));
    OK(dlock_lock_new(W.c, "bi:r3", &W.red_members[2]));
    OK(dlock_redlock_new(W.red_members, 3, &W.red));
    OK(dlock_lock_new(W.c, "bi:p1", &W.pair[0]));
    OK(dlock_lock_new(W.c2, "bi:p2", &W.pair[1]));
    W.with_null[0] = W.pair[0];
    W.null_first[1] = W.pair[0];
    W.dup[0] = W.dup[1] = W.pair[0];
    W.with_multi[0] = W.pair[0];
    W.with_multi[1] = W.multi;
    W.with_red[0] = W.pair[0];
    W.with_red[1] = W.red;

    /* The async client: its URL leads nowhere (it never sends anything) and its loop is
     * never run; this thread made it, so this thread is its loop thread. */
    W.loop = ev_loop_new(EVFLAG_AUTO);
    assert_non_null(W.loop);
    char url[300];
    snprintf(url, sizeof(url), "unix://%s/nobody-listens.sock", redis_fixture_dir(W.f));
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    OK(dlock_client_new_on_loop(&o, W.loop, &W.lc));
    OK(dlock_lock_new(W.lc, "bi:lock", &W.l_lock));
    OK(dlock_fencedlock_new(W.lc, "bi:fenced", &W.l_fenced));
    OK(dlock_fairlock_new(W.lc, "bi:fair", &W.l_fair));
    OK(dlock_rwlock_new(W.lc, "bi:rw", &W.l_rw));
    OK(dlock_lock_new(W.lc, "bi:m1", &W.l_multi_members[0]));
    OK(dlock_lock_new(W.lc, "bi:m2", &W.l_multi_members[1]));
    OK(dlock_multilock_new(W.l_multi_members, 2, &W.l_multi));
    /* a member belongs to one composite: the RedLock has its own */
    OK(dlock_lock_new(W.lc, "bi:r1", &W.l_red_members[0]));
    OK(dlock_lock_new(W.lc, "bi:r2", &W.l_red_members[1]));
    OK(dlock_redlock_new(W.l_red_members, 2, &W.l_red));
    OK(dlock_semaphore_new(W.lc, "bi:sem", &W.l_sem));
    OK(dlock_permits_new(W.lc, "bi:permits", &W.l_permits));
    OK(dlock_latch_new(W.lc, "bi:latch", &W.l_latch));
}

static void world_teardown(void) {
    dlock_lock_free(W.l_red);
    dlock_lock_free(W.l_red_members[0]);
    dlock_lock_free(W.l_red_members[1]);
    dlock_lock_free(W.l_multi);
    dlock_lock_free(W.l_multi_members[0]);
    dlock_lock_free(W.l_multi_members[1]);
    dlock_lock_free(W.l_lock);
    dlock_lock_free(W.l_fenced);
    dlock_lock_free(W.l_fair);
    dlock_rwlock_free(W.l_rw);
    dlock_semaphore_free(W.l_sem);
    dlock_permits_free(W.l_permits);
    dlock_latch_free(W.l_latch);
    OK(dlock_client_free(W.lc));
    ev_loop_destroy(W.loop);

    dlock_lock_free(W.multi);
    dlock_lock_free(W.red);
    for (int i = 0; i < 2; i++)
        dlock_lock_free(W.multi_members[i]);
    for (int i = 0; i < 3; i++)
        dlock_lock_free(W.red_members[i]);
    dlock_lock_free(W.pair[0]);
    dlock_lock_free(W.pair[1]);
    dlock_lock_free(W.lock);
    dlock_lock_free(W.fenced);
    dlock_lock_free(W.fair);
    dlock_rwlock_free(W.rw);
    dlock_semaphore_free(W.sem);
    dlock_permits_free(W.permits);
    dlock_latch_free(W.latch);
    OK(dlock_client_free(W.c));
    OK(dlock_client_free(W.c2));
    /* every callback of a refused async call must never have run, not even canceled */
    assert_int_equal(atomic_load(&W.unexpected_callbacks), 0);
    redis_fixture_stop(W.f);
    free(W.name_64k_plus_1);
    free(W.name_64k_plus_1_bin);
    free(W.name_1m);
    free(W.random_names);
}

/* ---- the tests ------------------------------------------------------------------------------- */

static void test_every_bad_argument_gets_its_documented_code_and_redis_sees_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    world_setup();
    size_t rows = 0, calls = 0;
    for (size_t g = 0; g < COUNT(GROUPS); g++) {
        server_mark before = mark_take();
        size_t group_calls = 0;
        for (size_t i = 0; i < GROUPS[g].n; i++) {
            const bad_case *row = &GROUPS[g].rows[i];
            size_t values = kind_count(row->kind);
            for (size_t v = 0; v < values; v++) {
                bad b;
                bad_fixed(&b, v);
                run_row(row, &b);
                group_calls++;
            }
        }
        mark_check_unchanged(&before, GROUPS[g].name);
        printf("bad input: %-34s %4zu cases, %5zu calls: documented codes, Redis unchanged\n",
               GROUPS[g].name, GROUPS[g].n, group_calls);
        rows += GROUPS[g].n;
        calls += group_calls;
    }
    printf("bad input: %zu cases, %zu calls in %zu groups\n", rows, calls, COUNT(GROUPS));
    world_teardown();
}

static unsigned seed_from_env(void) {
    const char *s = getenv("DLOCK_TEST_SEED");
    if (s && *s)
        return (unsigned)strtoul(s, NULL, 10);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (unsigned)(ts.tv_sec ^ ts.tv_nsec);
}

static void
test_random_bad_arguments_get_their_documented_codes_and_redis_sees_nothing(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    unsigned seed = seed_from_env();
    printf("bad input, random: seed %u (replay with DLOCK_TEST_SEED=%u)\n", seed, seed);
    srand(seed);
    world_setup();
    size_t total_rows = 0;
    for (size_t g = 0; g < COUNT(GROUPS); g++)
        total_rows += GROUPS[g].n;
    long n = test_scaled(10000);
    size_t per_group[COUNT(GROUPS)] = {0};
    server_mark before = mark_take();
    for (long i = 0; i < n; i++) {
        size_t pick = (size_t)rand_below(total_rows), g = 0;
        while (pick >= GROUPS[g].n)
            pick -= GROUPS[g++].n;
        bad b;
        bad_random(&b);
        run_row(&GROUPS[g].rows[pick], &b);
        per_group[g]++;
    }
    mark_check_unchanged(&before, "random calls");
    printf("bad input, random: %ld calls over %zu cases (", n, total_rows);
    for (size_t g = 0; g < COUNT(GROUPS); g++)
        printf("%s%zu", g ? " " : "", per_group[g]);
    printf(" per group), Redis unchanged\n");
    world_teardown();
}

/* The id struct says "32 lowercase hex characters" (what dlock writes); on the way in the
 * code reads hex digits of either case, so an id in upper case (or mixed) names the same
 * permit and is not DLOCK_EINVAL. */
static void test_permit_id_in_upper_case_names_the_same_permit(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    redis_fixture *f = NULL;
    assert_int_equal(redis_fixture_start(NULL, &f), 0);
    dlock_client *c = connect_client(f);
    dlock_permits *p;
    OK(dlock_permits_new(c, "upper", &p));
    OK(dlock_permits_try_set_permits(p, 2, NULL));
    dlock_permit_id id, upper, mixed;
    OK(dlock_permits_acquire(p, 0, -1, &id));
    for (int i = 0; i < 32; i++)
        assert_non_null(strchr(HEX, id.hex[i])); /* written in lower case */
    upper = id;
    mixed = id;
    for (int i = 0; i < 32; i++) {
        if (id.hex[i] >= 'a')
            upper.hex[i] = (char)(id.hex[i] - 'a' + 'A');
        if (id.hex[i] >= 'a' && i % 2)
            mixed.hex[i] = upper.hex[i];
    }
    OK(dlock_permits_update_lease(p, &mixed, 60000));
    int64_t available = -1;
    OK(dlock_permits_available(p, &available));
    assert_int_equal(available, 1);
    OK(dlock_permits_release(p, &upper));
    OK(dlock_permits_available(p, &available));
    assert_int_equal(available, 2);
    assert_int_equal(dlock_permits_release(p, &id), DLOCK_ENOTOWNER); /* the same permit */
    dlock_permits_free(p);
    OK(dlock_client_free(c));
    redis_fixture_stop(f);
}

/* ---- keys of another type -------------------------------------------------------------------- */

/* Every name below is a list in Redis when the rows run: each call that reads or writes
 * the key gets DLOCK_EREDIS (WRONGTYPE, the server's text in dlock_last_error()) and the
 * keys stay as they were. Left out (see the report of issue 5): dlock_lock_is_locked and
 * dlock_lock_ttl, which read the key with EXISTS / PTTL and answer DLOCK_OK; and a fenced
 * lock whose token counter is of another type, whose acquire says DLOCK_EREDIS after
 * taking the hold. */
static struct wrong {
    dlock_client *c;
    dlock_lock *lock, *fenced, *fair, *multi, *multi_members[2];
    dlock_rwlock *rw;
    dlock_semaphore *sem;
    dlock_permits *permits, *permits_zset;
    dlock_latch *latch;
    dlock_permit_id id;
} WT;

static const char *const WRONG_TYPE_KEYS[] = {
    "wt:lock",  "wt:fenced", "wt:fair",    "wt:rw",
    "wt:m2",    "wt:sem",    "wt:permits", "{wt:permits-zset}:timeout",
    "wt:latch",
};

#define WRONG_TYPE_CASES(X)                                                                        \
    X(lock_acquire, dlock_lock_acquire(WT.lock, 1000))                                             \
    X(lock_acquire_watchdog, dlock_lock_acquire(WT.lock, DLOCK_WATCHDOG))                          \
    X(lock_try_acquire, dlock_lock_try_acquire(WT.lock, 200, 1000))                                \
    X(lock_release, dlock_lock_release(WT.lock))                                                   \
    X(lock_force_release, dlock_lock_force_release(WT.lock, NULL))                                 \
    X(lock_is_held, dlock_lock_is_held(WT.lock, &(bool){false}))                                   \
    X(lock_hold_count, dlock_lock_hold_count(WT.lock, &(int64_t){0}))                              \
    X(fenced_acquire, dlock_lock_try_acquire(WT.fenced, 0, 1000))                                  \
    X(fair_acquire, dlock_lock_try_acquire(WT.fair, 0, 1000))                                      \
    X(fair_release, dlock_lock_release(WT.fair))                                                   \
    X(read_acquire, dlock_lock_try_acquire(dlock_rwlock_read(WT.rw), 0, 1000))                     \
    X(write_acquire, dlock_lock_try_acquire(dlock_rwlock_write(WT.rw), 0, 1000))                   \
    X(multilock_acquire, dlock_lock_try_acquire(WT.multi, 0, 1000))                                \
    X(sem_try_set, dlock_semaphore_try_set_permits(WT.sem, 1, NULL))                               \
    X(sem_add, dlock_semaphore_add_permits(WT.sem, 1))                                             \
    X(sem_acquire, dlock_semaphore_acquire(WT.sem, 1))                                             \
    X(sem_try_acquire, dlock_semaphore_try_acquire(WT.sem, 1, 200))                                \
    X(sem_release, dlock_semaphore_release(WT.sem, 1))                                             \
    X(sem_available, dlock_semaphore_available(WT.sem, &(int64_t){0}))                             \
    X(sem_drain, dlock_semaphore_drain(WT.sem, NULL))                                              \
    X(permits_try_set, dlock_permits_try_set_permits(WT.permits, 1, NULL))                         \
    X(permits_acquire, dlock_permits_acquire(WT.permits, 200, -1, &WT.id))                         \
    X(permits_release, dlock_permits_release(WT.permits, &WT.id))                                  \
    X(permits_update_lease, dlock_permits_update_lease(WT.permits, &WT.id, 1000))                  \
    X(permits_available, dlock_permits_available(WT.permits, &(int64_t){0}))                       \
    X(permits_zset_try_set, dlock_permits_try_set_permits(WT.permits_zset, 1, NULL))               \
    X(permits_zset_acquire, dlock_permits_acquire(WT.permits_zset, 0, 1000, &WT.id))               \
    X(latch_try_set, dlock_latch_try_set_count(WT.latch, 1, NULL))                                 \
    X(latch_count_down, dlock_latch_count_down(WT.latch))                                          \
    X(latch_count, dlock_latch_count(WT.latch, &(int64_t){0}))                                     \
    X(latch_await, dlock_latch_await(WT.latch, 200))

typedef struct wrong_case {
    const char *call;
    int (*run)(void);
} wrong_case;

#define DEFINE_WRONG(id, call)                                                                     \
    static int wrong_##id(void) {                                                                  \
        return (call);                                                                             \
    }
#define WRONG_ROW(id, call) {#call, wrong_##id},
WRONG_TYPE_CASES(DEFINE_WRONG)
static const wrong_case WRONG_TABLE[] = {WRONG_TYPE_CASES(WRONG_ROW)};

static void test_keys_of_another_type_are_eredis_and_stay_as_they_were(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    memset(&W, 0, sizeof(W));
    assert_int_equal(redis_fixture_start(NULL, &W.f), 0);
    for (size_t i = 0; i < COUNT(WRONG_TYPE_KEYS); i++) {
        char item[16];
        snprintf(item, sizeof(item), "%zu", i);
        redisReply *r = redis_fixture_cmd(W.f, "RPUSH %s not-a-lock %s", WRONG_TYPE_KEYS[i], item);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        freeReplyObject(r);
    }
    freeReplyObject(redis_fixture_cmd(W.f, "PEXPIRE wt:lock 3600000"));
    WT.c = connect_client(W.f);
    OK(dlock_lock_new(WT.c, "wt:lock", &WT.lock));
    OK(dlock_fencedlock_new(WT.c, "wt:fenced", &WT.fenced));
    OK(dlock_fairlock_new(WT.c, "wt:fair", &WT.fair));
    OK(dlock_rwlock_new(WT.c, "wt:rw", &WT.rw));
    OK(dlock_lock_new(WT.c, "wt:m1", &WT.multi_members[0]));
    OK(dlock_lock_new(WT.c, "wt:m2", &WT.multi_members[1]));
    OK(dlock_multilock_new(WT.multi_members, 2, &WT.multi));
    OK(dlock_semaphore_new(WT.c, "wt:sem", &WT.sem));
    OK(dlock_permits_new(WT.c, "wt:permits", &WT.permits));
    OK(dlock_permits_new(WT.c, "wt:permits-zset", &WT.permits_zset));
    OK(dlock_latch_new(WT.c, "wt:latch", &WT.latch));
    memcpy(WT.id.hex, "00112233445566778899aabbccddeeff", 33);

    char *before = redis_state();
    for (size_t i = 0; i < COUNT(WRONG_TABLE); i++) {
        dlock__set_last_error("");
        int rc = WRONG_TABLE[i].run();
        if (rc != DLOCK_EREDIS || !strstr(dlock_last_error(), "WRONGTYPE"))
            fail_msg("%s on a list = %s (%s), expected DLOCK_EREDIS with WRONGTYPE",
                     WRONG_TABLE[i].call, dlock_err_name(rc), dlock_last_error());
        char *now = redis_state();
        if (strcmp(before, now) != 0)
            fail_msg("%s on a list changed Redis.\nbefore:\n%s\nafter:\n%s", WRONG_TABLE[i].call,
                     before, now);
        free(now);
    }
    free(before);
    printf("wrong type: %zu calls on keys of another type: DLOCK_EREDIS, Redis unchanged\n",
           COUNT(WRONG_TABLE));

    dlock_lock_free(WT.multi);
    dlock_lock_free(WT.multi_members[0]);
    dlock_lock_free(WT.multi_members[1]);
    dlock_lock_free(WT.lock);
    dlock_lock_free(WT.fenced);
    dlock_lock_free(WT.fair);
    dlock_rwlock_free(WT.rw);
    dlock_semaphore_free(WT.sem);
    dlock_permits_free(WT.permits);
    dlock_permits_free(WT.permits_zset);
    dlock_latch_free(WT.latch);
    OK(dlock_client_free(WT.c));
    redis_fixture_stop(W.f);
}

/* ---- a client whose server died -------------------------------------------------------------- */

#define DEAD_TIMEOUT_MS 200
#define DEAD_RETRIES 1
#define DEAD_BOUND_MS (DEAD_TIMEOUT_MS * (DEAD_RETRIES + 1))

static struct dead {
    redis_fixture *f;
    dlock_client *c;
    dlock_lock *lock, *held, *fenced, *fair, *multi, *red, *members[2], *red_members[3];
    dlock_rwlock *rw;
    dlock_semaphore *sem;
    dlock_permits *permits;
    dlock_latch *latch;
    dlock_permit_id id;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int async_status;
    bool async_done;
} D = {.mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void dead_async_done(int status) {
    pthread_mutex_lock(&D.mu);
    D.async_status = status;
    D.async_done = true;
    pthread_cond_signal(&D.cond);
    pthread_mutex_unlock(&D.mu);
}
static void dead_lock_cb(dlock_lock *l, int status, void *arg) {
    (void)l, (void)arg;
    dead_async_done(status);
}
static void dead_sem_cb(dlock_semaphore *s, int status, void *arg) {
    (void)s, (void)arg;
    dead_async_done(status);
}
static void dead_permits_cb(dlock_permits *p, int status, const dlock_permit_id *id, void *arg) {
    (void)p, (void)id, (void)arg;
    dead_async_done(status);
}
static void dead_latch_cb(dlock_latch *l, int status, void *arg) {
    (void)l, (void)arg;
    dead_async_done(status);
}
static void dead_client_cb(dlock_client *c, int status, void *arg) {
    (void)c, (void)arg;
    dead_async_done(status);
}

/* Starts an async call and waits for its callback; its status (or the call's error). */
static int async_wait(int rc) {
    if (rc != DLOCK_OK)
        return rc;
    pthread_mutex_lock(&D.mu);
    while (!D.async_done)
        pthread_cond_wait(&D.cond, &D.mu);
    D.async_done = false;
    rc = D.async_status;
    pthread_mutex_unlock(&D.mu);
    return rc;
}

static int client_new_to_dead_server(void) {
    dlock_options o;
    dlock_options_init(&o);
    o.url = redis_fixture_unix_url(D.f);
    o.connect_timeout_ms = DEAD_BOUND_MS;
    dlock_client *c = (dlock_client *)&c;
    int rc = dlock_client_new(&o, &c);
    if (c != (dlock_client *)&c) {
        dlock_client_free(c);
        return NOT_AS_DOCUMENTED;
    }
    return rc;
}

/* X(id, call): a call that needs Redis, on the client whose server is gone. */
#define DEAD_CASES(X)                                                                              \
    X(client_new, client_new_to_dead_server())                                                     \
    X(ping, dlock_client_ping(D.c))                                                                \
    X(ping_async, async_wait(dlock_client_ping_async(D.c, dead_client_cb, NULL)))                  \
    X(acquire_forever, dlock_lock_acquire(D.lock, 1000))                                           \
    X(acquire_forever_watchdog, dlock_lock_acquire(D.lock, DLOCK_WATCHDOG))                        \
    X(try_acquire_5s, dlock_lock_try_acquire(D.lock, 5000, 1000))                                  \
    X(release_a_held_lock, dlock_lock_release(D.held))                                             \
    X(force_release, dlock_lock_force_release(D.lock, NULL))                                       \
    X(is_locked, dlock_lock_is_locked(D.lock, &(bool){false}))                                     \
    X(is_held, dlock_lock_is_held(D.lock, &(bool){false}))                                         \
    X(hold_count, dlock_lock_hold_count(D.lock, &(int64_t){0}))                                    \
    X(ttl, dlock_lock_ttl(D.lock, &(int64_t){0}))                                                  \
    X(acquire_async,                                                                               \
      async_wait(dlock_lock_acquire_async(D.lock, 7, DLOCK_FOREVER, 1000, dead_lock_cb, NULL)))    \
    X(release_async, async_wait(dlock_lock_release_async(D.lock, 7, dead_lock_cb, NULL)))          \
    X(fenced_acquire, dlock_lock_acquire(D.fenced, 1000))                                          \
    X(fair_acquire, dlock_lock_acquire(D.fair, 1000))                                              \
    X(read_acquire, dlock_lock_acquire(dlock_rwlock_read(D.rw), 1000))                             \
    X(write_acquire, dlock_lock_acquire(dlock_rwlock_write(D.rw), 1000))                           \
    X(multilock_acquire, dlock_lock_acquire(D.multi, 1000))                                        \
    X(multilock_is_locked, dlock_lock_is_locked(D.multi, &(bool){false}))                          \
    X(sem_try_set, dlock_semaphore_try_set_permits(D.sem, 1, NULL))                                \
    X(sem_add, dlock_semaphore_add_permits(D.sem, 1))                                              \
    X(sem_acquire_forever, dlock_semaphore_acquire(D.sem, 1))                                      \
    X(sem_try_acquire_5s, dlock_semaphore_try_acquire(D.sem, 1, 5000))                             \
    X(sem_release, dlock_semaphore_release(D.sem, 1))                                              \
    X(sem_available, dlock_semaphore_available(D.sem, &(int64_t){0}))                              \
    X(sem_drain, dlock_semaphore_drain(D.sem, NULL))                                               \
    X(sem_acquire_async,                                                                           \
      async_wait(dlock_semaphore_acquire_async(D.sem, 1, DLOCK_FOREVER, dead_sem_cb, NULL)))       \
    X(sem_release_async, async_wait(dlock_semaphore_release_async(D.sem, 1, dead_sem_cb, NULL)))   \
    X(permits_try_set, dlock_permits_try_set_permits(D.permits, 1, NULL))                          \
    X(permits_acquire_forever, dlock_permits_acquire(D.permits, DLOCK_FOREVER, -1, &D.id))         \
    X(permits_release, dlock_permits_release(D.permits, &D.id))                                    \
    X(permits_update_lease, dlock_permits_update_lease(D.permits, &D.id, 1000))                    \
    X(permits_available, dlock_permits_available(D.permits, &(int64_t){0}))                        \
    X(permits_acquire_async, async_wait(dlock_permits_acquire_async(D.permits, DLOCK_FOREVER, -1,  \
                                                                    dead_permits_cb, NULL)))       \
    X(permits_release_async,                                                                       \
      async_wait(dlock_permits_release_async(D.permits, &D.id, dead_permits_cb, NULL)))            \
    X(latch_try_set, dlock_latch_try_set_count(D.latch, 1, NULL))                                  \
    X(latch_count_down, dlock_latch_count_down(D.latch))                                           \
    X(latch_count, dlock_latch_count(D.latch, &(int64_t){0}))                                      \
    X(latch_await_forever, dlock_latch_await(D.latch, DLOCK_FOREVER))                              \
    X(latch_await_async,                                                                           \
      async_wait(dlock_latch_await_async(D.latch, DLOCK_FOREVER, dead_latch_cb, NULL)))            \
    X(latch_count_down_async,                                                                      \
      async_wait(dlock_latch_count_down_async(D.latch, dead_latch_cb, NULL)))

typedef struct dead_case {
    const char *call;
    int (*run)(void);
} dead_case;

#define DEFINE_DEAD(id, call)                                                                      \
    static int dead_##id(void) {                                                                   \
        return (call);                                                                             \
    }
#define DEAD_ROW(id, call) {#call, dead_##id},
DEAD_CASES(DEFINE_DEAD)
static const dead_case DEAD_TABLE[] = {DEAD_CASES(DEAD_ROW)};

static void test_calls_on_a_client_whose_server_died_fail_with_econn_in_time(void **state) {
    (void)state;
    test_watchdog_arm(BUDGET_S, __func__);
    assert_int_equal(redis_fixture_start(NULL, &D.f), 0);
    dlock_options o;
    dlock_options_init(&o);
    o.url = redis_fixture_unix_url(D.f);
    o.timeout_ms = DEAD_TIMEOUT_MS;
    o.retry_attempts = DEAD_RETRIES;
    o.retry_delay_ms = 50;
    o.connect_timeout_ms = 1000;
    OK(dlock_client_new(&o, &D.c));
    OK(dlock_lock_new(D.c, "dead:lock", &D.lock));
    OK(dlock_lock_new(D.c, "dead:held", &D.held));
    OK(dlock_fencedlock_new(D.c, "dead:fenced", &D.fenced));
    OK(dlock_fairlock_new(D.c, "dead:fair", &D.fair));
    OK(dlock_rwlock_new(D.c, "dead:rw", &D.rw));
    OK(dlock_lock_new(D.c, "dead:m1", &D.members[0]));
    OK(dlock_lock_new(D.c, "dead:m2", &D.members[1]));
    OK(dlock_multilock_new(D.members, 2, &D.multi));
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof(name), "dead:r%d", i);
        OK(dlock_lock_new(D.c, name, &D.red_members[i]));
    }
    OK(dlock_redlock_new(D.red_members, 3, &D.red));
    OK(dlock_semaphore_new(D.c, "dead:sem", &D.sem));
    OK(dlock_permits_new(D.c, "dead:permits", &D.permits));
    OK(dlock_latch_new(D.c, "dead:latch", &D.latch));
    memcpy(D.id.hex, "00112233445566778899aabbccddeeff", 33);
    OK(dlock_lock_try_acquire(D.held, 0, 60000));
    OK(dlock_client_ping(D.c));

    assert_int_equal(redis_fixture_kill(D.f), 0);
    int64_t slack = test_slack_ms(1500);
    for (size_t i = 0; i < COUNT(DEAD_TABLE); i++) {
        const dead_case *row = &DEAD_TABLE[i];
        int64_t start = test_now_ms();
        dlock__set_last_error("");
        int rc = row->run();
        int64_t took = test_now_ms() - start;
        if (rc != DLOCK_ECONN)
            fail_msg("dead server: %s = %s (%s) after %lld ms, expected DLOCK_ECONN", row->call,
                     dlock_err_name(rc), dlock_last_error(), (long long)took);
        if (took > DEAD_BOUND_MS + slack)
            fail_msg("dead server: %s took %lld ms, more than %d ms + slack", row->call,
                     (long long)took, DEAD_BOUND_MS);
    }
    /* RedLock: no member answers; it retries until its wait runs out, then reports the
     * members' error (or DLOCK_ETIMEDOUT if none answered within its answer budget). */
    int64_t start = test_now_ms();
    int rc = dlock_lock_try_acquire(D.red, 300, 1000);
    int64_t took = test_now_ms() - start;
    if (rc != DLOCK_ECONN && rc != DLOCK_ETIMEDOUT)
        fail_msg("dead server: redlock try_acquire(300) = %s (%s)", dlock_err_name(rc),
                 dlock_last_error());
    if (took > 300 + DEAD_BOUND_MS + slack)
        fail_msg("dead server: redlock try_acquire(300) took %lld ms", (long long)took);
    printf("dead server: %zu calls (and a RedLock) failed with DLOCK_ECONN within %d ms + slack\n",
           COUNT(DEAD_TABLE), DEAD_BOUND_MS);

    /* the server comes back (empty): the same client works again */
    assert_int_equal(redis_fixture_restart(D.f), 0);
    bool ok = false;
    POLL_UNTIL(ok, dlock_client_ping(D.c) == DLOCK_OK, test_slack_ms(5000));
    assert_true(ok);
    OK(dlock_lock_try_acquire(D.lock, 0, 1000));
    OK(dlock_lock_release(D.lock));

    dlock_lock_free(D.multi);
    dlock_lock_free(D.red);
    dlock_lock_free(D.members[0]);
    dlock_lock_free(D.members[1]);
    for (int i = 0; i < 3; i++)
        dlock_lock_free(D.red_members[i]);
    dlock_lock_free(D.lock);
    dlock_lock_free(D.held);
    dlock_lock_free(D.fenced);
    dlock_lock_free(D.fair);
    dlock_rwlock_free(D.rw);
    dlock_semaphore_free(D.sem);
    dlock_permits_free(D.permits);
    dlock_latch_free(D.latch);
    OK(dlock_client_free(D.c));
    redis_fixture_stop(D.f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_bad_argument_gets_its_documented_code_and_redis_sees_nothing),
        cmocka_unit_test(
            test_random_bad_arguments_get_their_documented_codes_and_redis_sees_nothing),
        cmocka_unit_test(test_permit_id_in_upper_case_names_the_same_permit),
        cmocka_unit_test(test_keys_of_another_type_are_eredis_and_stay_as_they_were),
        cmocka_unit_test(test_calls_on_a_client_whose_server_died_fail_with_econn_in_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
