/* SPDX-License-Identifier: MIT */
/* test_cpus.c — dlock__cpus_to_keep_busy (base/cpus.c) against cgroup trees made in a temp
 * directory: v2's cpu.max and v1's cpu.cfs_quota_us / cpu.cfs_period_us, a parent's limit
 * binding its child, the quota rounded down (below one CPU: 0), no limit ("max", -1, no
 * file, a /proc/self/cgroup of no sense) leaving the affinity's count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/base.h"

static char root[64];

static int make_root(void **state) {
    (void)state;
    snprintf(root, sizeof(root), "/tmp/dlock-cpus-XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int remove_root(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

/* root/rel (and its parents) made, and text written to root/rel/file. */
static void put(const char *rel, const char *file, const char *text) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0700);
            *p = '/';
        }
    mkdir(path, 0700);
    snprintf(path, sizeof(path), "%s/%s/%s", root, rel, file);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_cpu_max_reads_whole_cpus(void **state) {
    (void)state;
    assert_int_equal(dlock__cpu_max_cpus("max 100000\n"), -1);
    assert_int_equal(dlock__cpu_max_cpus("150000 100000\n"), 1);
    assert_int_equal(dlock__cpu_max_cpus("200000 100000\n"), 2);
    assert_int_equal(dlock__cpu_max_cpus("50000 100000\n"), 0);
    assert_int_equal(dlock__cpu_max_cpus("800000 50000"), 16);
    assert_int_equal(dlock__cpu_max_cpus(""), -1);
    assert_int_equal(dlock__cpu_max_cpus("12x 100000"), -1);
    assert_int_equal(dlock__cpu_max_cpus("100000 0"), -1);
    assert_int_equal(dlock__cpu_max_cpus("-5 100000"), -1);
}

static void test_v2_the_lowest_from_the_cgroup_up(void **state) {
    (void)state;
    put("v2/a", "cpu.max", "max 100000\n");
    put("v2/a/b", "cpu.max", "250000 100000\n");
    char base[128];
    snprintf(base, sizeof(base), "%s/v2", root);
    assert_int_equal(dlock__cpus_to_keep_busy(base, "0::/a/b\n", 8), 2);
    assert_int_equal(dlock__cpus_to_keep_busy(base, "0::/a/b\n", 1), 1); /* the affinity's lower */
    assert_int_equal(dlock__cpus_to_keep_busy(base, "0::/a\n", 8), 8);   /* "max" */
    put("v2/a", "cpu.max", "50000 100000\n");                            /* the parent binds */
    assert_int_equal(dlock__cpus_to_keep_busy(base, "0::/a/b\n", 8), 0);
    assert_int_equal(dlock__cpus_to_keep_busy(base, "0::/a/b/\n", 8), 0);
    assert_int_equal(dlock__cpus_to_keep_busy(base, "0::/\n", 8), 8); /* the root: no file */
    assert_int_equal(dlock__cpus_to_keep_busy(base, "0::/nowhere/c\n", 8), 8);
}

static void test_v1_the_cpu_hierarchy_by_either_mount_name(void **state) {
    (void)state;
    put("v1/cpu,cpuacct/x", "cpu.cfs_quota_us", "300000\n");
    put("v1/cpu,cpuacct/x", "cpu.cfs_period_us", "100000\n");
    put("v1/cpu,cpuacct", "cpu.cfs_quota_us", "-1\n");
    put("v1/cpu,cpuacct", "cpu.cfs_period_us", "100000\n");
    char base[128];
    snprintf(base, sizeof(base), "%s/v1", root);
    const char *self = "12:memory:/x\n4:cpu,cpuacct:/x\n1:name=systemd:/x\n0::/x\n";
    assert_int_equal(dlock__cpus_to_keep_busy(base, self, 8), 3);
    assert_int_equal(dlock__cpus_to_keep_busy(base, "4:cpu,cpuacct:/\n", 8), 8); /* -1 */
    /* "cpu" mounted alone (this machine's way) */
    put("v1b/cpu/y", "cpu.cfs_quota_us", "120000\n");
    put("v1b/cpu/y", "cpu.cfs_period_us", "100000\n");
    snprintf(base, sizeof(base), "%s/v1b", root);
    assert_int_equal(dlock__cpus_to_keep_busy(base, "1:cpu:/y\n2:cpuacct:/y\n", 8), 1);
    /* a controller list that only looks like cpu */
    assert_int_equal(dlock__cpus_to_keep_busy(base, "1:cpuset:/y\n", 8), 8);
}

static void test_nothing_readable_is_no_limit(void **state) {
    (void)state;
    assert_int_equal(dlock__cpus_to_keep_busy(root, "", 4), 4);
    assert_int_equal(dlock__cpus_to_keep_busy(root, NULL, 4), 4);
    assert_int_equal(dlock__cpus_to_keep_busy(root, "garbage", 4), 4);
    assert_int_equal(dlock__cpus_to_keep_busy("/nonexistent", "0::/a\n", 4), 4);
    assert_int_equal(dlock__cpus_to_keep_busy(root, "", 0), 1); /* at least one */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_max_reads_whole_cpus),
        cmocka_unit_test(test_v2_the_lowest_from_the_cgroup_up),
        cmocka_unit_test(test_v1_the_cpu_hierarchy_by_either_mount_name),
        cmocka_unit_test(test_nothing_readable_is_no_limit),
    };
    return cmocka_run_group_tests(tests, make_root, remove_root);
}
