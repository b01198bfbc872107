/* SPDX-License-Identifier: MIT */
/* ceiling.c — floor_script: the server's ceiling for a lock-sized script, the other end
 * of the scale from a PING round trip. A lock pair is two such scripts, so no number of
 * threads or clients can make more than half this many pairs per second.
 *
 * The script has the shape of dlock's acquire (HGET, EXISTS when free, HINCRBY, PEXPIRE,
 * a small array back); it is loaded with SCRIPT LOAD, then redis-benchmark (from PATH, or
 * $DLOCK_REDIS_BENCHMARK) sends EVALSHA over 10,000 random keys (-r) from 50 connections,
 * once without pipelining (-P 1) and once 16 deep (-P 16), and prints requests/s (--csv).
 * redis-benchmark runs as a child of dlock-bench, so it sits on the CPUs run.sh pinned
 * dlock-bench to. No redis-benchmark: nothing is printed, and a reason on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

static const char lock_script[] = "local holds = redis.call('hget', KEYS[1], ARGV[2]) "
                                  "if not holds and redis.call('exists', KEYS[1]) == 1 then "
                                  "return {0, redis.call('pttl', KEYS[1])} end "
                                  "holds = redis.call('hincrby', KEYS[1], ARGV[2], 1) "
                                  "redis.call('pexpire', KEYS[1], ARGV[1]) "
                                  "return {1, holds, 0}";

#define CEILING_CLIENTS 50
#define CEILING_KEYS 10000

/* Where redis-benchmark should connect: "-s 'path'" or "-h host -p port". */
static int target_args(const char *url, char *out, size_t outlen) {
    if (strncmp(url, "unix://", 7) == 0) {
        size_t n = strcspn(url + 7, "?");
        if (memchr(url + 7, '\'', n))
            return -1;
        snprintf(out, outlen, "-s '%.*s'", (int)n, url + 7);
        return 0;
    }
    if (strncmp(url, "redis://", 8) == 0 && !strchr(url + 8, '@')) {
        const char *p = url + 8;
        size_t n = strcspn(p, ":/");
        int port = p[n] == ':' ? atoi(p + n + 1) : 6379;
        snprintf(out, outlen, "-h '%.*s' -p %d", (int)n, p, port);
        return 0;
    }
    return -1; /* credentials: not passed on a command line */
}

static bool have_program(const char *prog) {
    if (strchr(prog, '/'))
        return access(prog, X_OK) == 0;
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "command -v '%s' >/dev/null 2>&1", prog);
    return system(cmd) == 0;
}

/* Runs redis-benchmark; the requests/s of its CSV line, or -1. */
static double run_benchmark(const char *prog, const char *target, long n, int pipeline,
                            const char *sha, const char *key, double *seconds) {
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "'%s' %s -n %ld -c %d -P %d -r %d --csv EVALSHA %s 1 '%s:__rand_int__' 30000 "
             "bench-owner:1 2>/dev/null",
             prog, target, n, CEILING_CLIENTS, pipeline, CEILING_KEYS, sha, key);
    int64_t t0 = bench_now_ns();
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char line[512];
    double rps = -1;
    while (fgets(line, sizeof(line), p)) {
        /* "EVALSHA ...","123456.79",...  (the header line starts with "test") */
        if (strncmp(line, "\"test\"", 6) == 0)
            continue;
        const char *comma = strstr(line, "\",\"");
        if (comma)
            rps = atof(comma + 3);
    }
    int status = pclose(p);
    *seconds = (double)(bench_now_ns() - t0) / 1e9;
    return status == 0 ? rps : -1;
}

long long bench_floor_script(const bench_config *cfg) {
    const char *prog =
        getenv("DLOCK_REDIS_BENCHMARK") ? getenv("DLOCK_REDIS_BENCHMARK") : "redis-benchmark";
    char target[600];
    if (target_args(cfg->url, target, sizeof(target)) != 0) {
        fprintf(stderr, "dlock-bench: floor_script skipped: redis-benchmark cannot be given %s\n",
                cfg->url);
        return 0;
    }
    if (!have_program(prog)) {
        fprintf(stderr, "dlock-bench: floor_script skipped: no %s (install redis-tools)\n", prog);
        return 0;
    }
    redisContext *rc = bench_redis_connect(cfg->url, NULL);
    if (!rc)
        return 1;
    long long errors = 0;
    char sha[48] = "";
    redisReply *r = redisCommand(rc, "SCRIPT LOAD %s", lock_script);
    if (r && r->type == REDIS_REPLY_STRING)
        snprintf(sha, sizeof(sha), "%s", r->str);
    else
        errors++;
    if (r)
        freeReplyObject(r);
    char key[128];
    snprintf(key, sizeof(key), "dlock-bench:%s:script", cfg->run_tag);
    static const int pipelines[] = {1, 16};
    for (size_t i = 0; i < 2 && sha[0]; i++) {
        long n = (pipelines[i] == 1 ? 200000 : 500000) / (bench_quick() ? 4 : 1);
        bench_counters before = {0}, after = {0};
        long long e = bench_counters_read(rc, RUSAGE_CHILDREN, &before) != 0;
        double seconds = 0;
        double rps = run_benchmark(prog, target, n, pipelines[i], sha, key, &seconds);
        if (rps <= 0) {
            fprintf(stderr, "dlock-bench: floor_script: %s -P %d failed\n", prog, pipelines[i]);
            e++;
        }
        if (bench_counters_read(rc, RUSAGE_CHILDREN, &after) != 0)
            e++;
        bench_json_begin(cfg, "floor_script", "redis-benchmark");
        bench_json_open("params");
        bench_json_int("n", n);
        bench_json_int("pipeline", pipelines[i]);
        bench_json_int("connections", CEILING_CLIENTS);
        bench_json_int("keys", CEILING_KEYS);
        bench_json_str("api", "redis-benchmark EVALSHA of a lock-sized script (HGET, EXISTS, "
                              "HINCRBY, PEXPIRE)");
        bench_json_close();
        bench_json_open("figures");
        bench_json_num("scripts_per_s", rps > 0 ? rps : 0);
        bench_json_num("pairs_per_s_ceiling", rps > 0 ? rps / 2 : 0);
        bench_json_num("seconds", seconds);
        bench_json_counters(&before, &after, (double)n, "script", true);
        bench_json_close();
        bench_json_end(e);
        errors += e;
    }
    /* the keys expire by their 30 s PEXPIRE */
    redisFree(rc);
    return errors;
}
