/* SPDX-License-Identifier: MIT */
/* test_cluster_edges.c — what a redis-cluster:// client makes of seeds and slot maps that are
 * not what a healthy cluster says: a plain Redis named as a Cluster, CLUSTER SLOTS answers of
 * the wrong shape, host names of up to 255 bytes (Redis 7's hostname mode), MOVED to a port
 * out of range or to a node that cannot be reached, a map of 16384 one-slot masters, 320
 * masters in use (real servers, 16 loopback addresses each) for a client that keeps 256
 * connections.
 *
 * A real redis-server cannot produce these answers, so a plain one sits behind
 * tests/support/reply_injector.h, which answers a chosen command (CLUSTER SLOTS, EVALSHA, GET)
 * in the server's place, once per rule. The seed is the injector; a crafted map names it as
 * the master of the slots a test runs commands on, so those commands reach the real server.
 * Host names end in ".invalid" (RFC 6761): the resolver refuses them at once. */
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "cli_run.h"
#include "client_node.h"
#include "topology/cluster.h"
#include "core_call.h"
#include "dlock.h"
#include "harness.h"
#include "redis_fixture.h"
#include "reply_injector.h"
#include "test_util.h"

/* The request bytes of CLUSTER SLOTS (the injector matches request bytes; a script's text
 * may hold the words). */
#define CLUSTER_SLOTS_REQUEST "CLUSTER\r\n$5\r\nSLOTS"

typedef struct world {
    redis_fixture *server;
    reply_injector *injector;
    int port; /* the injector's */
} world;

static world open_world(void) {
    world w = {0};
    redis_fixture_opts o = {.tcp = true};
    assert_int_equal(redis_fixture_start(&o, &w.server), 0);
    assert_int_equal(reply_injector_start(redis_fixture_socket(w.server), &w.injector), 0);
    const char *url = reply_injector_url(w.injector);
    w.port = atoi(strrchr(url, ':') + 1);
    return w;
}

static void close_world(world *w) {
    reply_injector_stop(w->injector);
    redis_fixture_stop(w->server);
}

/* ---- crafted maps ------------------------------------------------------------------------ */

typedef struct resp {
    char *buf;
    size_t len, cap;
} resp;

static void resp_add(resp *r, const char *fmt, ...) {
    char piece[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(piece, sizeof(piece), fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof(piece));
    if (r->len + (size_t)n + 1 > r->cap) {
        r->cap = (r->len + (size_t)n + 1) * 2;
        r->buf = realloc(r->buf, r->cap);
        assert_non_null(r->buf);
    }
    memcpy(r->buf + r->len, piece, (size_t)n + 1);
    r->len += (size_t)n;
}

/* One CLUSTER SLOTS entry: slots first..last at host:port. */
static void map_entry(resp *r, int first, int last, const char *host, int port) {
    resp_add(r, "*3\r\n:%d\r\n:%d\r\n*3\r\n$%zu\r\n%s\r\n:%d\r\n$40\r\n%040d\r\n", first, last,
             strlen(host), host, port, first);
}

/* A name of `len` bytes ending in ".invalid", its first byte `tag`. */
static char *long_name(size_t len, char tag) {
    char *name = malloc(len + 1);
    assert_non_null(name);
    memset(name, 'h', len);
    name[0] = tag;
    for (size_t i = 60; i < len - 9; i += 61)
        name[i] = '.'; /* labels of at most 63 bytes, as DNS has them */
    memcpy(name + len - 8, ".invalid", 9);
    return name;
}

static int client_with(const char *url, int64_t timeout_ms, int retries, dlock_client **out) {
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.timeout_ms = timeout_ms;
    o.retry_attempts = retries;
    o.retry_delay_ms = TEST_RETRY_DELAY_MS;
    o.connect_timeout_ms = 60000; /* far beyond what any test here waits: a hang shows */
    return dlock_client_new(&o, out);
}

/* A client whose first map is `map` (read from the injector). */
static dlock_client *client_on_map(world *w, const resp *map, int64_t timeout_ms, int retries) {
    reply_injector_replace(w->injector, CLUSTER_SLOTS_REQUEST, map->buf, map->len);
    char url[64];
    snprintf(url, sizeof(url), "redis-cluster://127.0.0.1:%d", w->port);
    dlock_client *c = NULL;
    int rc = client_with(url, timeout_ms, retries, &c);
    if (rc != DLOCK_OK)
        fail_msg("dlock_client_new: %s: %s", dlock_err_name(rc), dlock_last_error());
    return c;
}

/* A key whose slot is in first..last. */
static void key_in(int first, int last, char *key, size_t size) {
    for (int i = 0;; i++) {
        snprintf(key, size, "edge-%d", i);
        int slot = dlock__slot_of(key, strlen(key));
        if (slot >= first && slot <= last)
            return;
    }
}

static void expect_node_of(dlock_client *c, const char *key, const char *want) {
    char answer[300];
    if (strcmp(client_node_of(c, key, answer, sizeof(answer)), want) != 0)
        fail_msg("node of %s: \"%s\", want \"%s\"", key, answer, want);
}

/* A client whose map gives every slot to the injector (its real server runs the calls). */
static dlock_client *client_on_injector_only(world *w, int64_t timeout_ms, int retries) {
    resp map = {0};
    resp_add(&map, "*1\r\n");
    map_entry(&map, 0, DLOCK__CLUSTER_SLOTS - 1, "127.0.0.1", w->port);
    dlock_client *c = client_on_map(w, &map, timeout_ms, retries);
    free(map.buf);
    return c;
}

/* ---- the seed is no Cluster node ------------------------------------------------------------ */

/* The likeliest Cluster mistake: the URL names a plain Redis. It asked again 10 times a
 * second for ever; now it ends at the answer, which it quotes, with what to use instead. */
static void test_a_plain_redis_named_as_a_cluster_fails_at_once_saying_use_redis_url(void **s) {
    (void)s;
    test_watchdog_arm(30, __func__);
    redis_fixture *server;
    redis_fixture_opts o = {.tcp = true};
    assert_int_equal(redis_fixture_start(&o, &server), 0);
    const char *plain = redis_fixture_tcp_url(server) + strlen("redis://");
    /* alone, then before and after a seed that refuses connections: what the plain Redis
     * answered is the error, whichever seed was asked last */
    const char *lists[] = {"%s", "%s,127.0.0.1:1", "127.0.0.1:1,%s"};
    for (size_t i = 0; i < sizeof(lists) / sizeof(*lists); i++) {
        char hosts[96], url[128];
        snprintf(hosts, sizeof(hosts), lists[i], plain);
        snprintf(url, sizeof(url), "redis-cluster://%s", hosts);
        dlock_client *c = NULL;
        int64_t started = test_now_ms();
        int rc = client_with(url, 2000, 1, &c);
        int64_t took = test_now_ms() - started;
        assert_null(c);
        const char *text = dlock_last_error();
        if (rc != DLOCK_EINVAL || !strstr(text, "ERR This instance has cluster support disabled") ||
            !strstr(text, "redis://127.0.0.1:"))
            fail_msg("%s: %s: %s", hosts, dlock_err_name(rc), text);
        /* connect_timeout_ms is 60 s: the answers end it, not the timeout */
        assert_true(took < 30000);
    }
    redis_fixture_stop(server);
}

/* The same mistake with the dlock tool: it hung for ever; it exits 64 (a usage error)
 * saying what the seed answered and what to use instead. */
static void test_the_dlock_tool_on_a_plain_redis_as_a_cluster_exits_64_quoting_it(void **s) {
    (void)s;
    test_watchdog_arm(60, __func__);
    REQUIRE_CLI();
    redis_fixture *server;
    redis_fixture_opts o = {.tcp = true};
    assert_int_equal(redis_fixture_start(&o, &server), 0);
    char url[96];
    snprintf(url, sizeof(url), "redis-cluster://%s",
             redis_fixture_tcp_url(server) + strlen("redis://"));
    cli_result r = DLOCK_CLI_RUN(server, 30000, "--url", url, "inspect", "job");
    ASSERT_STATUS(r, 64);
    ASSERT_CONTAINS(r.err, "cluster support disabled");
    ASSERT_CONTAINS(r.err, "use redis://127.0.0.1:");
    cli_result_free(&r);
    redis_fixture_stop(server);
}

/* Every shape of a CLUSTER SLOTS answer that is no map ends dlock_client_new with
 * DLOCK_EREDIS quoting it (only one seed: nobody else to ask). */
static void test_an_unusable_slot_map_ends_dlock_client_new_quoting_it(void **s) {
    (void)s;
    test_watchdog_arm(60, __func__);
    world w = open_world();
    static const struct {
        const char *bytes, *quoted;
    } shapes[] = {
        {":1\r\n", "the integer 1"},
        {"*0\r\n", "no slot is assigned"},
        {"*-1\r\n", "answered nothing"},
        {"*1\r\n*1\r\n*0\r\n", "entry 1 is not"},
        {"*1\r\n*3\r\n:0\r\n:99999\r\n*2\r\n$9\r\n127.0.0.1\r\n:7000\r\n", "entry 1 is not"},
        {"-ERR unknown subcommand\r\n", "ERR unknown subcommand"},
    };
    char url[64];
    snprintf(url, sizeof(url), "redis-cluster://127.0.0.1:%d", w.port);
    for (size_t i = 0; i < sizeof(shapes) / sizeof(*shapes); i++) {
        reply_injector_replace(w.injector, CLUSTER_SLOTS_REQUEST, shapes[i].bytes,
                               strlen(shapes[i].bytes));
        dlock_client *c = NULL;
        int rc = client_with(url, 2000, 1, &c);
        if (rc != DLOCK_EREDIS || !strstr(dlock_last_error(), shapes[i].quoted) ||
            !strstr(dlock_last_error(), "gave no slot map"))
            fail_msg("answer %zu: %s: %s", i, dlock_err_name(rc), dlock_last_error());
        assert_null(c);
    }
    close_world(&w);
}

static int silent_listener(int *fd);

/* Seeds that accept a connection and never answer, tried one after another, used to cost
 * connect_timeout_ms each; all of them share it now. 4 seeds, 4 s: 16 s before. */
static void test_silent_seeds_end_dlock_client_new_within_connect_timeout_ms(void **s) {
    (void)s;
    test_watchdog_arm(60, __func__);
    int fds[4];
    char hosts[128] = "";
    for (int i = 0; i < 4; i++) {
        size_t used = strlen(hosts);
        snprintf(hosts + used, sizeof(hosts) - used, "%s127.0.0.1:%d", i ? "," : "",
                 silent_listener(&fds[i]));
    }
    char url[160];
    snprintf(url, sizeof(url), "redis-cluster://%s", hosts);
    dlock_options o;
    dlock_options_init(&o);
    o.url = url;
    o.connect_timeout_ms = 4000;
    dlock_client *c = NULL;
    int64_t started = test_now_ms();
    int rc = dlock_client_new(&o, &c);
    int64_t took = test_now_ms() - started;
    print_message("4 silent seeds, connect_timeout_ms 4000: %lld ms\n", (long long)took);
    assert_int_equal(rc, DLOCK_ECONN);
    assert_non_null(strstr(dlock_last_error(), "within connect_timeout_ms (4000 ms)"));
    assert_true(took < 12000);
    for (int i = 0; i < 4; i++)
        close(fds[i]);
}

/* ---- host names of up to 255 bytes ------------------------------------------------------- */

/* Two masters on 200-byte names that differ only after byte 80 stay two nodes, each named
 * whole (addresses were cut at 80 bytes: one node). */
static void test_host_names_of_200_bytes_stay_whole_and_distinct(void **s) {
    (void)s;
    test_watchdog_arm(30, __func__);
    world w = open_world();
    char *a = long_name(200, 'a'), *b = long_name(200, 'a');
    b[150] = 'b';
    resp map = {0};
    resp_add(&map, "*3\r\n");
    map_entry(&map, 0, 99, "127.0.0.1", w.port);
    map_entry(&map, 100, 8191, a, 7000);
    map_entry(&map, 8192, 16383, b, 7000);
    dlock_client *c = client_on_map(&w, &map, 2000, 1);
    char key_a[32], key_b[32], want[300];
    key_in(100, 8191, key_a, sizeof(key_a));
    key_in(8192, 16383, key_b, sizeof(key_b));
    snprintf(want, sizeof(want), "%s:7000", a);
    expect_node_of(c, key_a, want);
    snprintf(want, sizeof(want), "%s:7000", b);
    expect_node_of(c, key_b, want);
    ASSERT_OK(dlock_client_free(c));
    free(map.buf);
    free(a);
    free(b);
    close_world(&w);
}

/* A name of 256 bytes is no host name: the map is refused, saying so. */
static void test_a_host_name_of_256_bytes_makes_the_map_unusable(void **s) {
    (void)s;
    test_watchdog_arm(30, __func__);
    world w = open_world();
    char *name = long_name(256, 'a');
    resp map = {0};
    resp_add(&map, "*1\r\n");
    map_entry(&map, 0, 16383, name, 7000);
    reply_injector_replace(w.injector, CLUSTER_SLOTS_REQUEST, map.buf, map.len);
    char url[64];
    snprintf(url, sizeof(url), "redis-cluster://127.0.0.1:%d", w.port);
    dlock_client *c = NULL;
    assert_int_equal(client_with(url, 2000, 1, &c), DLOCK_EREDIS);
    assert_non_null(strstr(dlock_last_error(), "at most 255 bytes"));
    free(map.buf);
    free(name);
    close_world(&w);
}

/* A MOVED to a 120-byte name is followed (it was dropped: names of 64 bytes or more did not
 * fit): the map learns it, and the node that cannot be reached is named in the error. */
static void test_a_moved_to_a_long_name_is_followed_and_its_failure_names_the_node(void **s) {
    (void)s;
    test_watchdog_arm(60, __func__);
    world w = open_world();
    dlock_client *c = client_on_injector_only(&w, 500, 1);
    char *name = long_name(120, 'm');
    const char *key = "moved-far";
    char moved[300];
    snprintf(moved, sizeof(moved), "-MOVED %d %s:7000\r\n", dlock__slot_of(key, strlen(key)), name);
    reply_injector_replace(w.injector, "EVALSHA", moved, strlen(moved));
    dlock_lock *l;
    ASSERT_OK(dlock_lock_new(c, key, &l));
    int rc = dlock_lock_try_acquire(l, 0, 30000);
    if (rc != DLOCK_ECONN || !strstr(dlock_last_error(), name))
        fail_msg("%s: %s", dlock_err_name(rc), dlock_last_error());
    char want[300];
    snprintf(want, sizeof(want), "%s:7000", name);
    expect_node_of(c, key, want);
    dlock_lock_free(l);
    ASSERT_OK(dlock_client_free(c));
    free(name);
    close_world(&w);
}

/* MOVED to port 70000 names no node (it connected to 70000 - 65536 = 4464): the command
 * stays with the map's master and runs there. */
static void test_a_moved_to_port_70000_is_not_followed(void **s) {
    (void)s;
    test_watchdog_arm(60, __func__);
    world w = open_world();
    dlock_client *c = client_on_injector_only(&w, 2000, 1);
    const char *key = "moved-wrapped";
    char moved[96], want[64];
    snprintf(moved, sizeof(moved), "-MOVED %d 127.0.0.1:70000\r\n",
             dlock__slot_of(key, strlen(key)));
    reply_injector_replace(w.injector, "$3\r\nGET", moved, strlen(moved));
    const char *get[] = {"GET", key, NULL};
    core_reply *r = core_call(c, DLOCK__CMD_RETRY_SAFE, get);
    if (r->status != DLOCK_OK)
        fail_msg("GET: %s", dlock_err_name(r->status));
    core_reply_free(r);
    assert_int_equal(reply_injector_fired(w.injector), 2); /* the map, the MOVED */
    snprintf(want, sizeof(want), "127.0.0.1:%d", w.port);
    expect_node_of(c, key, want);
    ASSERT_OK(dlock_client_free(c));
    close_world(&w);
}

/* "MOVED slot :port" (Redis 7 when a node knows no endpoint for the other): the host of the
 * node that answered, at that port. It was not followed. */
static void test_a_moved_without_a_host_means_the_host_that_answered(void **s) {
    (void)s;
    test_watchdog_arm(60, __func__);
    world w = open_world();
    redis_fixture *other;
    redis_fixture_opts o = {.tcp = true};
    assert_int_equal(redis_fixture_start(&o, &other), 0);
    dlock_client *c = client_on_injector_only(&w, 2000, 1);
    const char *key = "moved-hostless";
    char moved[96], want[64];
    snprintf(moved, sizeof(moved), "-MOVED %d :%d\r\n", dlock__slot_of(key, strlen(key)),
             redis_fixture_port(other));
    reply_injector_replace(w.injector, "$3\r\nSET", moved, strlen(moved));
    const char *set[] = {"SET", key, "there", NULL};
    core_reply *r = core_call(c, DLOCK__CMD_RETRY_SAFE, set);
    if (r->status != DLOCK_OK)
        fail_msg("SET: %s", dlock_err_name(r->status));
    core_reply_free(r);
    snprintf(want, sizeof(want), "127.0.0.1:%d", redis_fixture_port(other));
    expect_node_of(c, key, want);
    /* it ran where the MOVED said */
    redisReply *got = redis_fixture_cmd(other, "GET %s", key);
    assert_non_null(got);
    assert_string_equal(got->str, "there");
    freeReplyObject(got);
    ASSERT_OK(dlock_client_free(c));
    redis_fixture_stop(other);
    close_world(&w);
}

/* ---- a map of 16384 masters ------------------------------------------------------------------ */

static int open_descriptors(void) {
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* A socket that listens on every loopback address and never accepts: a connection to it
 * neither fails nor answers (its handshake waits). Its port. */
static int silent_listener(int *fd) {
    *fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(*fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    socklen_t len = sizeof(sa);
    assert_int_equal(bind(*fd, (struct sockaddr *)&sa, len), 0);
    assert_int_equal(listen(*fd, 16), 0);
    assert_int_equal(getsockname(*fd, (struct sockaddr *)&sa, &len), 0);
    return ntohs(sa.sin_port);
}

/* 16384 one-slot masters, each on its own loopback address: a client connects to the ones
 * its commands need (it opened a descriptor per master at once, and a PING took seconds). */
static void test_a_map_of_16384_masters_connects_only_to_the_nodes_in_use(void **s) {
    (void)s;
    test_watchdog_arm(120, __func__);
    world w = open_world();
    int listener;
    int silent = silent_listener(&listener);
    resp map = {0};
    resp_add(&map, "*%d\r\n", DLOCK__CLUSTER_SLOTS);
    map_entry(&map, 0, 0, "127.0.0.1", w.port);
    for (int slot = 1; slot < DLOCK__CLUSTER_SLOTS; slot++) {
        char host[32];
        snprintf(host, sizeof(host), "127.%d.%d.%d", 1 + slot / 65536, (slot / 256) % 256,
                 slot % 256);
        map_entry(&map, slot, slot, host, silent);
    }
    int before = open_descriptors();
    int64_t started = test_now_ms();
    dlock_client *c = client_on_map(&w, &map, 2000, 1);
    const char *ping[] = {"PING", NULL};
    core_reply *r = core_call(c, DLOCK__CMD_RETRY_SAFE, ping);
    assert_int_equal(r->status, DLOCK_OK);
    core_reply_free(r);
    print_message("client and PING on a map of %d masters: %lld ms\n", DLOCK__CLUSTER_SLOTS,
                  (long long)(test_now_ms() - started));
    /* the I/O thread's loop, the seed's connection: a handful, not thousands */
    int opened = open_descriptors() - before;
    if (opened > 32)
        fail_msg("%d descriptors opened", opened);
    ASSERT_OK(dlock_client_free(c));
    close(listener);
    free(map.buf);
    close_world(&w);
}

/* Servers that each listen on 16 loopback addresses (Redis binds at most 16): 16 distinct
 * nodes per server for a map, all of them real. */
#define BIND_SERVERS 20
#define BIND_ADDRESSES 16
#define MANY_NODES (BIND_SERVERS * BIND_ADDRESSES)
#define CONNECTIONS_KEPT 256 /* cluster.c's NODE_CONNECTIONS_MAX */

static void node_host(int node, char *host, size_t size) {
    snprintf(host, size, "127.%d.0.%d", 1 + node / BIND_ADDRESSES, 1 + node % BIND_ADDRESSES);
}

/* A key of each slot below MANY_NODES. */
static void keys_of_first_slots(char keys[MANY_NODES][24]) {
    int found = 0;
    for (int i = 0; found < MANY_NODES; i++) {
        char key[24];
        snprintf(key, sizeof(key), "k%d", i);
        int slot = dlock__slot_of(key, strlen(key));
        if (slot < MANY_NODES && !keys[slot][0]) {
            memcpy(keys[slot], key, sizeof(key));
            found++;
        }
    }
}

/* 320 masters in use one after another: the client keeps 256 connections, closing the least
 * recently used idle one for a new one, and reconnects when a closed one is needed again. */
static void test_connections_to_nodes_are_bounded_and_made_again_on_demand(void **s) {
    (void)s;
    test_watchdog_arm(300, __func__);
    world w = open_world();
    redis_fixture *servers[BIND_SERVERS];
    resp map = {0};
    resp_add(&map, "*%d\r\n", MANY_NODES + 1);
    for (int k = 0; k < BIND_SERVERS; k++) {
        char hosts[BIND_ADDRESSES][24];
        const char *args[BIND_ADDRESSES + 2] = {"--bind"};
        for (int j = 0; j < BIND_ADDRESSES; j++) {
            node_host(k * BIND_ADDRESSES + j, hosts[j], sizeof(hosts[j]));
            args[1 + j] = hosts[j];
        }
        redis_fixture_opts o = {.tcp = true, .extra_args = args};
        assert_int_equal(redis_fixture_start(&o, &servers[k]), 0);
        for (int j = 0; j < BIND_ADDRESSES; j++) {
            int node = k * BIND_ADDRESSES + j;
            map_entry(&map, node, node, hosts[j], redis_fixture_port(servers[k]));
        }
    }
    map_entry(&map, MANY_NODES, DLOCK__CLUSTER_SLOTS - 1, "127.0.0.1", w.port);
    static char keys[MANY_NODES][24];
    keys_of_first_slots(keys);
    int before = open_descriptors();
    dlock_client *c = client_on_map(&w, &map, 5000, 1);
    for (int node = 0; node < MANY_NODES; node++) {
        const char *get[] = {"GET", keys[node], NULL};
        core_reply *r = core_call(c, DLOCK__CMD_RETRY_SAFE, get);
        if (r->status != DLOCK_OK)
            fail_msg("GET on node %d: %s", node, dlock_err_name(r->status));
        core_reply_free(r);
    }
    int opened = open_descriptors() - before;
    print_message("%d nodes used: %d descriptors opened\n", MANY_NODES, opened);
    if (opened > CONNECTIONS_KEPT + 16)
        fail_msg("%d descriptors opened for %d nodes", opened, MANY_NODES);
    const char *again[] = {"GET", keys[0], NULL}; /* its connection was the first to go */
    core_reply *r = core_call(c, DLOCK__CMD_RETRY_SAFE, again);
    assert_int_equal(r->status, DLOCK_OK);
    core_reply_free(r);
    ASSERT_OK(dlock_client_free(c));
    for (int k = 0; k < BIND_SERVERS; k++)
        redis_fixture_stop(servers[k]);
    free(map.buf);
    close_world(&w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_plain_redis_named_as_a_cluster_fails_at_once_saying_use_redis_url),
        cmocka_unit_test(test_the_dlock_tool_on_a_plain_redis_as_a_cluster_exits_64_quoting_it),
        cmocka_unit_test(test_an_unusable_slot_map_ends_dlock_client_new_quoting_it),
        cmocka_unit_test(test_silent_seeds_end_dlock_client_new_within_connect_timeout_ms),
        cmocka_unit_test(test_host_names_of_200_bytes_stay_whole_and_distinct),
        cmocka_unit_test(test_a_host_name_of_256_bytes_makes_the_map_unusable),
        cmocka_unit_test(test_a_moved_to_a_long_name_is_followed_and_its_failure_names_the_node),
        cmocka_unit_test(test_a_moved_to_port_70000_is_not_followed),
        cmocka_unit_test(test_a_moved_without_a_host_means_the_host_that_answered),
        cmocka_unit_test(test_a_map_of_16384_masters_connects_only_to_the_nodes_in_use),
        cmocka_unit_test(test_connections_to_nodes_are_bounded_and_made_again_on_demand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
