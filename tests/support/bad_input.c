/* SPDX-License-Identifier: MIT */
/* bad_input.c — the bad-input catalogue's runner (bad_input.h): the world the rows call
 * into, the fixed and the random invalid values of every kind, reading Redis back with
 * every command counted, and running rows and groups. */
#include "bad_input.h"

#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "dlock_int.h"
#include "harness.h"
#include "test_util.h"

#define MAX_NAME_LEN (64 * 1024)

struct bad_world BW;

/* ---- out-parameters and callbacks ------------------------------------------------------------ */

#define SENTINEL(p) ((void *)&(p))

static void reset_outs(void) {
    BW.out_client = SENTINEL(BW.out_client);
    BW.out_lock = SENTINEL(BW.out_lock);
    BW.out_rw = SENTINEL(BW.out_rw);
    BW.out_sem = SENTINEL(BW.out_sem);
    BW.out_permits = SENTINEL(BW.out_permits);
    BW.out_latch = SENTINEL(BW.out_latch);
}

/* Which constructor's out-parameter was written, or NULL. */
static const char *out_written(void) {
    if (BW.out_client != SENTINEL(BW.out_client))
        return "client";
    if (BW.out_lock != SENTINEL(BW.out_lock))
        return "lock";
    if (BW.out_rw != SENTINEL(BW.out_rw))
        return "rwlock";
    if (BW.out_sem != SENTINEL(BW.out_sem))
        return "semaphore";
    if (BW.out_permits != SENTINEL(BW.out_permits))
        return "permits";
    if (BW.out_latch != SENTINEL(BW.out_latch))
        return "latch";
    return NULL;
}

void unexpected_lock_cb(dlock_lock *l, int status, void *arg) {
    (void)l, (void)status, (void)arg;
    atomic_fetch_add(&BW.unexpected_callbacks, 1);
}
void unexpected_sem_cb(dlock_semaphore *s, int status, void *arg) {
    (void)s, (void)status, (void)arg;
    atomic_fetch_add(&BW.unexpected_callbacks, 1);
}
void unexpected_permits_cb(dlock_permits *p, int status, const dlock_permit_id *id, void *arg) {
    (void)p, (void)status, (void)id, (void)arg;
    atomic_fetch_add(&BW.unexpected_callbacks, 1);
}
void unexpected_latch_cb(dlock_latch *l, int status, void *arg) {
    (void)l, (void)status, (void)arg;
    atomic_fetch_add(&BW.unexpected_callbacks, 1);
}
void unexpected_client_cb(dlock_client *c, int status, void *arg) {
    (void)c, (void)status, (void)arg;
    atomic_fetch_add(&BW.unexpected_callbacks, 1);
}
void unexpected_lost_cb(dlock_lock *l, uint64_t owner, int reason, void *arg) {
    (void)l, (void)owner, (void)reason, (void)arg;
    atomic_fetch_add(&BW.unexpected_callbacks, 1);
}

/* ---- the kinds of invalid values ------------------------------------------------------------- */

static const char *const KIND_NAMES[V_KINDS] = {
    "-",       "name", "negative count", "wait",           "lease",          "permit id",
    "below 3", "<= 0", "renew_batch",    "retry_attempts", "retry_delay_ms", "options.size",
    "url",
};

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
static const int64_t DELAY_VALUES[] = {0, 3600001, INT64_MAX, INT64_MIN};
static const size_t SIZE_VALUES[] = {1, offsetof(dlock_options, watchdog_ms) - 1,
                                     sizeof(dlock_options) + 1, SIZE_MAX};
static const char *const URL_VALUES[] = {
    "",                                  /* empty: NULL means the environment's URL */
    "rediss://127.0.0.1:6390?color=red", /* an unknown TLS parameter */
    "redis://127.0.0.1:6390?sni=x",      /* a query on a plain TCP URL */
    "redis://127.0.0.1:0",               /* port 0 */
    "redis://127.0.0.1:65536",           /* port too big */
    "redis://127.0.0.1:-1",              /* port not a number */
    "redis://:6390",                     /* no host */
    "redis://[::1:6390",                 /* unterminated [ */
    "redis://127.0.0.1:6390/x",          /* db not a number */
    "redis://127.0.0.1:6390?db=1",       /* query on a TCP URL */
    "redis://alice@127.0.0.1:6390",      /* userinfo without ':' */
    "redis://:p%zz@127.0.0.1:6390",      /* bad %-escape */
    "redis://:p%00@127.0.0.1:6390",      /* encoded NUL */
    "unix://relative.sock",              /* relative path */
    "unix:///",                          /* empty path */
    "unix:///tmp/x.sock?db=x",           /* db not a number */
    "unix:///tmp/x.sock?color=red",      /* unknown parameter */
    "unix:///tmp/x.sock?db",             /* parameter without '=' */
    "tcp://127.0.0.1:6390",              /* another scheme */
    "127.0.0.1:6390",                    /* no scheme */
    NULL,                                /* set up: a socket path over 107 bytes */
};
#define N_URLS (sizeof(URL_VALUES) / sizeof(URL_VALUES[0]))
#define N_NAMES 5

static size_t kind_count(enum value_kind k) {
    switch (k) {
    case V_NONE:
        return 1;
    case V_NAME:
        return N_NAMES;
    case V_NEG:
        return BAD_COUNT(NEG_VALUES);
    case V_WAIT:
        return BAD_COUNT(WAIT_VALUES);
    case V_LEASE:
        return BAD_COUNT(LEASE_VALUES);
    case V_ID:
        return BAD_N_IDS;
    case V_BELOW3:
        return BAD_COUNT(BELOW3_VALUES);
    case V_NONPOS:
        return BAD_COUNT(NONPOS_VALUES);
    case V_BATCH:
        return BAD_COUNT(BATCH_VALUES);
    case V_ATTEMPTS:
        return BAD_COUNT(ATTEMPTS_VALUES);
    case V_DELAY:
        return BAD_COUNT(DELAY_VALUES);
    case V_SIZE:
        return BAD_COUNT(SIZE_VALUES);
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
        return BW.name_64k_plus_1;
    case 3:
        return BW.name_64k_plus_1_bin;
    default:
        return BW.name_1m;
    }
}

static const char *fixed_url(size_t i) {
    const char *u = URL_VALUES[i % N_URLS];
    return u ? u : BW.too_long_socket_url;
}

/* Every field gets its i-th fixed value (wrapping), so a row of any kind sees its i-th. */
static void bad_fixed(bad *b, size_t i) {
    b->name = fixed_name(i);
    b->neg = NEG_VALUES[i % BAD_COUNT(NEG_VALUES)];
    b->wait = WAIT_VALUES[i % BAD_COUNT(WAIT_VALUES)];
    b->lease = LEASE_VALUES[i % BAD_COUNT(LEASE_VALUES)];
    b->below3 = BELOW3_VALUES[i % BAD_COUNT(BELOW3_VALUES)];
    b->nonpos = NONPOS_VALUES[i % BAD_COUNT(NONPOS_VALUES)];
    b->batch = BATCH_VALUES[i % BAD_COUNT(BATCH_VALUES)];
    b->attempts = ATTEMPTS_VALUES[i % BAD_COUNT(ATTEMPTS_VALUES)];
    b->delay = DELAY_VALUES[i % BAD_COUNT(DELAY_VALUES)];
    b->size = SIZE_VALUES[i % BAD_COUNT(SIZE_VALUES)];
    b->url = fixed_url(i);
    b->id = i % BAD_N_IDS == 0 ? NULL : &BW.ids[i % BAD_N_IDS].id;
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
    long_id *l = &BW.random_id;
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
        return BW.random_names + rand_below(total - MAX_NAME_LEN);
    }
    }
}

static const char *random_bad_url(void) {
    if (rand() % 2)
        return fixed_url((size_t)rand());
    snprintf(BW.random_url, sizeof(BW.random_url), "redis://127.0.0.1:%lld",
             (long long)rand_range(65536, INT64_MAX));
    return BW.random_url;
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
    b->delay = rand() % 2 ? rand_range(INT64_MIN, 0) : rand_range(3600001, INT64_MAX);
    b->size = rand() % 2 ? (size_t)rand_below(offsetof(dlock_options, watchdog_ms))
                         : sizeof(dlock_options) + 1 + (size_t)rand_below(1u << 20);
    b->url = random_bad_url();
    b->id = random_bad_id();
}

int str_is(const char *got, const char *want) {
    return got && strcmp(got, want) == 0 ? DLOCK_OK : NOT_AS_DOCUMENTED;
}

int is_null(const void *p) {
    return p ? NOT_AS_DOCUMENTED : DLOCK_OK;
}

/* ---- reading Redis back through the fixture, every command counted --------------------------- */

/* Where the runner's admin commands go, and what counts them (count may be NULL). */
typedef struct admin_conn {
    redis_fixture *f;
    long long *count;
} admin_conn;

static redisReply *admin_argv(const admin_conn *a, int argc, const char **argv,
                              const size_t *lens) {
    if (a->count)
        (*a->count)++;
    redisReply *r = redis_fixture_cmd_argv(a->f, argc, argv, lens);
    assert_non_null(r);
    return r;
}

/* cmd key [extra ...] (NULL-terminated extras, at most 3). */
static redisReply *admin_key_cmd(const admin_conn *a, const char *cmd, const char *key, size_t klen,
                                 ...) {
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
    return admin_argv(a, argc, argv, lens);
}

static long long admin_info(const char *field) {
    BW.admin++;
    return redis_fixture_info_int(BW.f, "stats", field);
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

/* 2 + 3 commands per key. */
char *bad_redis_state(redis_fixture *f, long long *admin) {
    const admin_conn a = {f, admin};
    text t = {0};
    const char *dbsize_argv[] = {"DBSIZE"};
    size_t dbsize_len[] = {6};
    redisReply *n = admin_argv(&a, 1, dbsize_argv, dbsize_len);
    const char *keys_argv[] = {"KEYS", "*"};
    size_t keys_len[] = {4, 1};
    redisReply *keys = admin_argv(&a, 2, keys_argv, keys_len);
    assert_int_equal(keys->type, REDIS_REPLY_ARRAY);
    assert_int_equal(n->integer, (long long)keys->elements);
    qsort(keys->element, keys->elements, sizeof(keys->element[0]), cmp_key);
    for (size_t i = 0; i < keys->elements; i++) {
        const redisReply *k = keys->element[i];
        redisReply *type = admin_key_cmd(&a, "TYPE", k->str, k->len, NULL);
        redisReply *expiry = admin_key_cmd(&a, "PEXPIRETIME", k->str, k->len, NULL);
        redisReply *value;
        if (strcmp(type->str, "string") == 0)
            value = admin_key_cmd(&a, "GET", k->str, k->len, NULL);
        else if (strcmp(type->str, "hash") == 0)
            value = admin_key_cmd(&a, "HGETALL", k->str, k->len, NULL);
        else if (strcmp(type->str, "zset") == 0)
            value = admin_key_cmd(&a, "ZRANGE", k->str, k->len, "0", "-1", "WITHSCORES", NULL);
        else if (strcmp(type->str, "list") == 0)
            value = admin_key_cmd(&a, "LRANGE", k->str, k->len, "0", "-1", NULL);
        else if (strcmp(type->str, "set") == 0)
            value = admin_key_cmd(&a, "SMEMBERS", k->str, k->len, NULL);
        else
            value = admin_key_cmd(&a, "DUMP", k->str, k->len, NULL);
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
    m.state = bad_redis_state(BW.f, &BW.admin);
    m.admin = BW.admin;
    m.commands = admin_info("total_commands_processed");
    m.connections = admin_info("total_connections_received");
    return m;
}

/* Redis is as it was at `before`, and it ran no command but ours since. */
static void mark_check_unchanged(server_mark *before, const char *what) {
    long long admin = BW.admin;
    long long commands = admin_info("total_commands_processed");
    long long connections = admin_info("total_connections_received");
    if (commands - before->commands != admin - before->admin)
        fail_msg("%s: the server ran %lld commands, the test sent %lld of them", what,
                 commands - before->commands, admin - before->admin);
    if (connections != before->connections)
        fail_msg("%s: %lld new connections to the server", what, connections - before->connections);
    char *after = bad_redis_state(BW.f, &BW.admin);
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

#define LONG_LEASE 3600000 /* the state's leases outlive any run, valgrind included */

static void *hold_in_redis(void *arg) {
    (void)arg;
    /* a thread of the second client: every hold below is another owner's */
    dlock_lock *l, *fl, *fair, *m1;
    dlock_rwlock *rw;
    dlock_semaphore *s;
    dlock_permits *p;
    dlock_latch *la;
    ASSERT_OK(dlock_lock_new(BW.c2, "bi:lock", &l));
    ASSERT_OK(dlock_fencedlock_new(BW.c2, "bi:fenced", &fl));
    ASSERT_OK(dlock_fairlock_new(BW.c2, "bi:fair", &fair));
    ASSERT_OK(dlock_lock_new(BW.c2, "bi:m1", &m1));
    ASSERT_OK(dlock_rwlock_new(BW.c2, "bi:rw", &rw));
    ASSERT_OK(dlock_semaphore_new(BW.c2, "bi:sem", &s));
    ASSERT_OK(dlock_permits_new(BW.c2, "bi:permits", &p));
    ASSERT_OK(dlock_latch_new(BW.c2, "bi:latch", &la));
    ASSERT_OK(dlock_lock_try_acquire(l, 0, LONG_LEASE));
    ASSERT_OK(dlock_lock_try_acquire(fl, 0, LONG_LEASE));
    ASSERT_OK(dlock_lock_try_acquire(fair, 0, LONG_LEASE));
    ASSERT_OK(dlock_lock_try_acquire(m1, 0, LONG_LEASE));
    ASSERT_OK(dlock_lock_try_acquire(dlock_rwlock_read(rw), 0, LONG_LEASE));
    ASSERT_OK(dlock_semaphore_try_set_permits(s, 5, NULL));
    ASSERT_OK(dlock_permits_try_set_permits(p, 3, NULL));
    dlock_permit_id id;
    ASSERT_OK(dlock_permits_acquire(p, 0, LONG_LEASE, &id));
    ASSERT_OK(dlock_permits_acquire(p, 0, -1, &id));
    ASSERT_OK(dlock_latch_try_set_count(la, 7, NULL));
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
    BW.name_64k_plus_1 = malloc(big + 1);
    BW.name_64k_plus_1_bin = malloc(big + 1);
    BW.name_1m = malloc((1u << 20) + 1);
    BW.random_names = malloc(2 * MAX_NAME_LEN + 1);
    assert_true(BW.name_64k_plus_1 && BW.name_64k_plus_1_bin && BW.name_1m && BW.random_names);
    memset(BW.name_64k_plus_1, 'n', big);
    BW.name_64k_plus_1[big] = '\0';
    for (size_t i = 0; i < big; i++)
        BW.name_64k_plus_1_bin[i] = (char)(1 + i % 255);
    BW.name_64k_plus_1_bin[big] = '\0';
    memset(BW.name_1m, 'm', 1u << 20);
    BW.name_1m[1u << 20] = '\0';
    for (size_t i = 0; i < 2 * MAX_NAME_LEN; i++)
        BW.random_names[i] = (char)(1 + rand() % 255);
    BW.random_names[2 * MAX_NAME_LEN] = '\0';
}

/* The fixed malformed ids; ids[0] stands for NULL. */
static void fill_ids(void) {
    memset(BW.ids, 0, sizeof(BW.ids));
    const char *good = "0123456789abcdef0123456789abcdef";
    for (int i = 1; i < BAD_N_IDS; i++)
        memcpy(BW.ids[i].id.hex, good, 32);
    BW.ids[1].id.hex[0] = '\0';         /* empty */
    memcpy(BW.ids[2].id.hex, "abc", 4); /* short */
    BW.ids[3].id.hex[31] = '\0';        /* 31 characters */
    BW.ids[4].id.hex[31] = 'g';         /* not hex at the end */
    BW.ids[5].id.hex[16] = ' ';         /* a space inside */
    BW.ids[6].id.hex[0] = '-';          /* a sign */
    memcpy(BW.ids[7].id.hex, "0x", 2);  /* a 0x prefix */
    BW.ids[8].id.hex[32] = 'a';         /* 33 characters */
    BW.ids[9].id.hex[32] = '0';         /* 40 characters */
    memcpy(BW.ids[9].more, "1234567", 8);
    BW.ids[10].id.hex[5] = (char)0xc3; /* a UTF-8 letter */
    BW.ids[10].id.hex[6] = (char)0xa9;
    BW.ids[11].id.hex[20] = '\0'; /* NUL inside, hex after it */
    memcpy(BW.good_id.hex, "fedcba9876543210fedcba9876543210", 33);
}

void bad_world_setup(void) {
    memset(&BW, 0, sizeof(BW));
    assert_int_equal(redis_fixture_start(NULL, &BW.f), 0);
    fill_names();
    fill_ids();
    char path[200];
    memset(path, 'p', sizeof(path));
    snprintf(BW.too_long_socket_url, sizeof(BW.too_long_socket_url), "unix:///tmp/%.120s.sock",
             path);
    BW.c = connect_client(BW.f);
    BW.c2 = connect_client(BW.f);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, hold_in_redis, NULL), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    /* a list too, so that the dump covers a type dlock never writes */
    redisReply *r = redis_fixture_cmd(BW.f, "RPUSH bi:list a b c");
    freeReplyObject(r);

    ASSERT_OK(dlock_lock_new(BW.c, "bi:lock", &BW.lock));
    ASSERT_OK(dlock_fencedlock_new(BW.c, "bi:fenced", &BW.fenced));
    ASSERT_OK(dlock_fairlock_new(BW.c, "bi:fair", &BW.fair));
    ASSERT_OK(dlock_rwlock_new(BW.c, "bi:rw", &BW.rw));
    BW.rd = dlock_rwlock_read(BW.rw);
    BW.wr = dlock_rwlock_write(BW.rw);
    ASSERT_OK(dlock_semaphore_new(BW.c, "bi:sem", &BW.sem));
    ASSERT_OK(dlock_permits_new(BW.c, "bi:permits", &BW.permits));
    ASSERT_OK(dlock_latch_new(BW.c, "bi:latch", &BW.latch));
    ASSERT_OK(dlock_lock_new(BW.c, "bi:m1", &BW.multi_members[0]));
    ASSERT_OK(dlock_lock_new(BW.c2, "bi:m2", &BW.multi_members[1]));
    ASSERT_OK(dlock_multilock_new(BW.multi_members, 2, &BW.multi));
    ASSERT_OK(dlock_lock_new(BW.c, "bi:r1", &BW.red_members[0]));
    ASSERT_OK(dlock_lock_new(BW.c2, "bi:r2", &BW.red_members[1]));
    ASSERT_OK(dlock_lock_new(BW.c, "bi:r3", &BW.red_members[2]));
    ASSERT_OK(dlock_redlock_new(BW.red_members, 3, &BW.red));
    ASSERT_OK(dlock_lock_new(BW.c, "bi:p1", &BW.pair[0]));
    ASSERT_OK(dlock_lock_new(BW.c2, "bi:p2", &BW.pair[1]));
    BW.with_null[0] = BW.pair[0];
    BW.null_first[1] = BW.pair[0];
    BW.dup[0] = BW.dup[1] = BW.pair[0];
    BW.with_multi[0] = BW.pair[0];
    BW.with_multi[1] = BW.multi;
    BW.with_red[0] = BW.pair[0];
    BW.with_red[1] = BW.red;

    /* The async client: its URL leads nowhere (it never sends anything) and its loop is
     * never run; this thread made it, so this thread is its loop thread. */
    BW.loop = ev_loop_new(EVFLAG_AUTO);
    assert_non_null(BW.loop);
    char url[300];
    snprintf(url, sizeof(url), "unix://%s/nobody-listens.sock", redis_fixture_dir(BW.f));
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    ASSERT_OK(dlock_client_new_on_loop(&o, BW.loop, &BW.lc));
    ASSERT_OK(dlock_lock_new(BW.lc, "bi:lock", &BW.l_lock));
    ASSERT_OK(dlock_fencedlock_new(BW.lc, "bi:fenced", &BW.l_fenced));
    ASSERT_OK(dlock_fairlock_new(BW.lc, "bi:fair", &BW.l_fair));
    ASSERT_OK(dlock_rwlock_new(BW.lc, "bi:rw", &BW.l_rw));
    ASSERT_OK(dlock_lock_new(BW.lc, "bi:m1", &BW.l_multi_members[0]));
    ASSERT_OK(dlock_lock_new(BW.lc, "bi:m2", &BW.l_multi_members[1]));
    ASSERT_OK(dlock_multilock_new(BW.l_multi_members, 2, &BW.l_multi));
    /* a member belongs to one composite: the RedLock has its own */
    ASSERT_OK(dlock_lock_new(BW.lc, "bi:r1", &BW.l_red_members[0]));
    ASSERT_OK(dlock_lock_new(BW.lc, "bi:r2", &BW.l_red_members[1]));
    ASSERT_OK(dlock_redlock_new(BW.l_red_members, 2, &BW.l_red));
    ASSERT_OK(dlock_semaphore_new(BW.lc, "bi:sem", &BW.l_sem));
    ASSERT_OK(dlock_permits_new(BW.lc, "bi:permits", &BW.l_permits));
    ASSERT_OK(dlock_latch_new(BW.lc, "bi:latch", &BW.l_latch));
}

void bad_world_teardown(void) {
    dlock_lock_free(BW.l_red);
    dlock_lock_free(BW.l_red_members[0]);
    dlock_lock_free(BW.l_red_members[1]);
    dlock_lock_free(BW.l_multi);
    dlock_lock_free(BW.l_multi_members[0]);
    dlock_lock_free(BW.l_multi_members[1]);
    dlock_lock_free(BW.l_lock);
    dlock_lock_free(BW.l_fenced);
    dlock_lock_free(BW.l_fair);
    dlock_rwlock_free(BW.l_rw);
    dlock_semaphore_free(BW.l_sem);
    dlock_permits_free(BW.l_permits);
    dlock_latch_free(BW.l_latch);
    ASSERT_OK(dlock_client_free(BW.lc));
    ev_loop_destroy(BW.loop);

    dlock_lock_free(BW.multi);
    dlock_lock_free(BW.red);
    for (int i = 0; i < 2; i++)
        dlock_lock_free(BW.multi_members[i]);
    for (int i = 0; i < 3; i++)
        dlock_lock_free(BW.red_members[i]);
    dlock_lock_free(BW.pair[0]);
    dlock_lock_free(BW.pair[1]);
    dlock_lock_free(BW.lock);
    dlock_lock_free(BW.fenced);
    dlock_lock_free(BW.fair);
    dlock_rwlock_free(BW.rw);
    dlock_semaphore_free(BW.sem);
    dlock_permits_free(BW.permits);
    dlock_latch_free(BW.latch);
    ASSERT_OK(dlock_client_free(BW.c));
    ASSERT_OK(dlock_client_free(BW.c2));
    /* every callback of a refused async call must never have run, not even canceled */
    assert_int_equal(atomic_load(&BW.unexpected_callbacks), 0);
    redis_fixture_stop(BW.f);
    free(BW.name_64k_plus_1);
    free(BW.name_64k_plus_1_bin);
    free(BW.name_1m);
    free(BW.random_names);
}

/* ---- running groups -------------------------------------------------------------------------- */

void test_every_bad_argument_gets_its_documented_code_and_redis_sees_nothing(void **state) {
    const bad_catalogue *cat = *state;
    const bad_group *groups = cat->groups;
    size_t n = cat->n;
    test_watchdog_arm(BAD_BUDGET_S, __func__);
    bad_world_setup();
    size_t rows = 0, calls = 0;
    for (size_t g = 0; g < n; g++) {
        server_mark before = mark_take();
        size_t group_calls = 0;
        for (size_t i = 0; i < groups[g].n; i++) {
            const bad_case *row = &groups[g].rows[i];
            size_t values = kind_count(row->kind);
            for (size_t v = 0; v < values; v++) {
                bad b;
                bad_fixed(&b, v);
                run_row(row, &b);
                group_calls++;
            }
        }
        mark_check_unchanged(&before, groups[g].name);
        printf("bad input: %-48s %4zu cases, %5zu calls: documented codes, Redis unchanged\n",
               groups[g].name, groups[g].n, group_calls);
        rows += groups[g].n;
        calls += group_calls;
    }
    printf("bad input: %zu cases, %zu calls in %zu groups\n", rows, calls, n);
    bad_world_teardown();
}

static unsigned seed_from_env(void) {
    const char *s = getenv("DLOCK_TEST_SEED");
    if (s && *s)
        return (unsigned)strtoul(s, NULL, 10);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (unsigned)(ts.tv_sec ^ ts.tv_nsec);
}

void test_random_bad_arguments_get_their_documented_codes_and_redis_sees_nothing(void **state) {
    const bad_catalogue *cat = *state;
    const bad_group *groups = cat->groups;
    size_t n = cat->n;
    long calls = test_scaled(cat->random_calls);
    test_watchdog_arm(BAD_BUDGET_S, __func__);
    unsigned seed = seed_from_env();
    printf("bad input, random: seed %u (replay with DLOCK_TEST_SEED=%u)\n", seed, seed);
    srand(seed); /* before the world: its random names come from the seed too */
    bad_world_setup();
    size_t total_rows = 0;
    for (size_t g = 0; g < n; g++)
        total_rows += groups[g].n;
    size_t *per_group = calloc(n, sizeof(*per_group));
    assert_non_null(per_group);
    server_mark before = mark_take();
    for (long i = 0; i < calls; i++) {
        size_t pick = (size_t)rand_below(total_rows), g = 0;
        while (pick >= groups[g].n)
            pick -= groups[g++].n;
        bad b;
        bad_random(&b);
        run_row(&groups[g].rows[pick], &b);
        per_group[g]++;
    }
    mark_check_unchanged(&before, "random calls");
    printf("bad input, random: %ld calls over %zu cases (", calls, total_rows);
    for (size_t g = 0; g < n; g++)
        printf("%s%zu", g ? " " : "", per_group[g]);
    printf(" per group), Redis unchanged\n");
    free(per_group);
    bad_world_teardown();
}
