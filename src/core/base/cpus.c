/* SPDX-License-Identifier: MIT */
/* cpus.c — how many CPUs this process may keep busy: the CPUs its affinity lets it run on,
 * and no more than its cgroup's CPU quota allows, rounded down.
 *
 * The lone caller's spin (engine/spin.c) lets no more callers spin at once than this: a
 * spinning thread keeps a CPU busy, and a container limited to 1.5 CPUs on a 64-CPU host
 * (Kubernetes' limits.cpu) pays every microsecond of it from its quota, so it gets one
 * spinner, and one limited to less than a CPU gets none, whatever its affinity says.
 *
 * The quota is read where Linux shows it: with cgroup v2, cpu.max ("max 100000" or
 * "150000 100000": quota and period) in the process's cgroup and in each cgroup above it,
 * the lowest winning (a parent's limit binds its children); with v1, cpu.cfs_quota_us (-1:
 * none) and cpu.cfs_period_us in the cpu controller's hierarchy, the same way. The
 * process's cgroup comes from /proc/self/cgroup ("0::/path" for v2, "N:cpu,cpuacct:/path"
 * for v1). Inside a container both usually read "/", the container's own cgroup. Anything
 * missing or unreadable is no limit. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

#define PATH_MAX_LEN 4096

/* The text of a small file, or false. */
static bool read_small(const char *path, char *buf, size_t size) {
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = '\0';
    return n > 0;
}

/* quota / period in whole CPUs, or -1 for no limit (or no sense). */
static int whole_cpus(long long quota, long long period) {
    if (quota <= 0 || period <= 0)
        return -1;
    long long cpus = quota / period;
    return cpus > 1000000 ? 1000000 : (int)cpus;
}

int dlock__cpu_max_cpus(const char *text) {
    long long quota, period;
    char first[32];
    if (sscanf(text, "%31s %lld", first, &period) != 2 || strcmp(first, "max") == 0)
        return -1;
    char *end;
    quota = strtoll(first, &end, 10);
    return *end ? -1 : whole_cpus(quota, period);
}

/* The v1 limit in dir: cpu.cfs_quota_us over cpu.cfs_period_us, or -1. */
static int v1_limit(const char *dir) {
    char path[PATH_MAX_LEN + 32], quota[32], period[32];
    snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", dir);
    if (!read_small(path, quota, sizeof(quota)))
        return -1;
    snprintf(path, sizeof(path), "%s/cpu.cfs_period_us", dir);
    if (!read_small(path, period, sizeof(period)))
        return -1;
    return whole_cpus(strtoll(quota, NULL, 10), strtoll(period, NULL, 10));
}

static int v2_limit(const char *dir) {
    char path[PATH_MAX_LEN + 16], text[64];
    snprintf(path, sizeof(path), "%s/cpu.max", dir);
    return read_small(path, text, sizeof(text)) ? dlock__cpu_max_cpus(text) : -1;
}

/* The lowest limit from base + cgroup up to base itself, or -1. */
static int lowest_on_the_way_up(const char *base, const char *cgroup, int (*limit)(const char *)) {
    char dir[PATH_MAX_LEN];
    if ((size_t)snprintf(dir, sizeof(dir), "%s%s", base, cgroup) >= sizeof(dir))
        return -1;
    size_t floor = strlen(base);
    int lowest = -1;
    for (;;) {
        size_t len = strlen(dir);
        while (len > floor && dir[len - 1] == '/') /* "/a/b/" is "/a/b" */
            dir[--len] = '\0';
        int here = limit(dir);
        if (here >= 0 && (lowest < 0 || here < lowest))
            lowest = here;
        char *slash = strrchr(dir + floor, '/');
        if (len <= floor || !slash)
            return lowest;
        *slash = '\0';
    }
}

/* Whether the controller list of a /proc/self/cgroup line ("cpu,cpuacct") names cpu. */
static bool names_cpu(const char *list, size_t len) {
    for (const char *p = list; p < list + len;) {
        const char *comma = memchr(p, ',', (size_t)(list + len - p));
        size_t n = comma ? (size_t)(comma - p) : (size_t)(list + len - p);
        if (n == 3 && strncmp(p, "cpu", 3) == 0)
            return true;
        p += n + 1;
    }
    return false;
}

/* The limit a line of /proc/self/cgroup (len bytes) names, in whole CPUs: the v2 line's, or
 * a v1 line's of the cpu controller; -1 for none. */
static int line_limit(const char *root, const char *line, size_t len) {
    const char *c1 = memchr(line, ':', len);
    const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
    if (!c2)
        return -1;
    char cgroup[PATH_MAX_LEN];
    size_t plen = len - (size_t)(c2 + 1 - line);
    if (plen >= sizeof(cgroup))
        return -1;
    memcpy(cgroup, c2 + 1, plen);
    cgroup[plen] = '\0';
    if (c2 == c1 + 1) /* "0::/path": v2 */
        return lowest_on_the_way_up(root, cgroup, v2_limit);
    const char *list = c1 + 1;
    int list_len = (int)(c2 - list);
    if (!names_cpu(list, (size_t)list_len))
        return -1;
    char base[PATH_MAX_LEN];
    snprintf(base, sizeof(base), "%s/%.*s", root, list_len, list);
    int limit = lowest_on_the_way_up(base, cgroup, v1_limit);
    if (limit >= 0)
        return limit;
    snprintf(base, sizeof(base), "%s/cpu", root); /* mounted as plain "cpu" beside "cpuacct" */
    return lowest_on_the_way_up(base, cgroup, v1_limit);
}

int dlock__cpus_to_keep_busy(const char *root, const char *self_cgroup, int affinity_cpus) {
    int cpus = affinity_cpus > 0 ? affinity_cpus : 1;
    for (const char *line = self_cgroup; line && *line;) {
        const char *end = strchr(line, '\n');
        int limit = line_limit(root, line, end ? (size_t)(end - line) : strlen(line));
        if (limit >= 0 && limit < cpus)
            cpus = limit;
        line = end ? end + 1 : NULL;
    }
    return cpus;
}

int dlock__cpus_of_this_process(void) {
    cpu_set_t set;
    int affinity = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
    char cgroups[4096];
    if (!read_small("/proc/self/cgroup", cgroups, sizeof(cgroups)))
        cgroups[0] = '\0';
    return dlock__cpus_to_keep_busy("/sys/fs/cgroup", cgroups, affinity);
}
