/* SPDX-License-Identifier: MIT */
/* doctor_report.c — the report `dlock doctor`'s checks fill (doctor.h): a check's line, a
 * command's reply for a check, a field of INFO, and the merge of every node's report into
 * one line per check (doctor_cluster.c).
 *
 * The bottom of the doctor: the checks (doctor_server.c, doctor_acl.c, doctor_sentinel.c,
 * doctor_cluster.c) call it, cmd_doctor.c prints what it holds; it calls none of them. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"

#define DETAIL_MAX 4096 /* a merged line names every node: room for six nodes' details */

void doctor_add(doctor_report *r, const char *name, doctor_status status, const char *fix,
                const char *detail_fmt, ...) {
    if (r->count == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        doctor_check *checks = realloc(r->checks, cap * sizeof(*checks));
        if (!checks) {
            r->out_of_memory = true;
            return;
        }
        r->checks = checks;
        r->cap = cap;
    }
    char detail[DETAIL_MAX];
    va_list ap;
    va_start(ap, detail_fmt);
    vsnprintf(detail, sizeof(detail), detail_fmt, ap);
    va_end(ap);
    doctor_check *c = &r->checks[r->count];
    c->name = strdup(name);
    c->status = status;
    c->detail = strdup(detail);
    c->fix = strdup(fix ? fix : "");
    if (!c->name || !c->detail || !c->fix) {
        free(c->name);
        free(c->detail);
        free(c->fix);
        r->out_of_memory = true;
        return;
    }
    r->count++;
}

void doctor_report_free(doctor_report *r) {
    for (size_t i = 0; i < r->count; i++) {
        free(r->checks[i].name);
        free(r->checks[i].detail);
        free(r->checks[i].fix);
    }
    free(r->checks);
    r->checks = NULL;
    r->count = r->cap = 0;
}

redis_lib_reply *doctor_ask(doctor_report *r, char *err, size_t size, bool *refused, ...) {
    const char *argv[16];
    int argc = 0;
    va_list ap;
    va_start(ap, refused);
    for (const char *w; argc < 16 && (w = va_arg(ap, const char *)) != NULL;)
        argv[argc++] = w;
    va_end(ap);
    redis_lib_reply *rep = NULL;
    int rc = redis_lib_call(r->c, argc, argv, &rep);
    if (refused)
        *refused =
            rc == DLOCK_ENOPERM || (rc == DLOCK_EREDIS && strstr(dlock_last_error(), "NOPERM"));
    if (rc != DLOCK_OK) {
        snprintf(err, size, "%s", dlock_last_error());
        return NULL;
    }
    return rep;
}

bool doctor_info_field(const char *info, const char *field, char *buf, size_t size) {
    size_t len = strlen(field);
    for (const char *p = strstr(info, field); p; p = strstr(p + 1, field)) {
        if ((p != info && p[-1] != '\n') || p[len] != ':')
            continue;
        const char *value = p + len + 1;
        snprintf(buf, size, "%.*s", (int)strcspn(value, "\r\n"), value);
        return true;
    }
    return false;
}

/* ---- one line per check from every node's report --------------------------------------- */

/* Node n's check named name, or NULL when n did not run it (a replica is not asked what
 * only a master's clients see). */
static const doctor_check *check_of(const doctor_report *n, const char *name) {
    for (size_t i = 0; i < n->count; i++)
        if (strcmp(n->checks[i].name, name) == 0)
            return &n->checks[i];
    return NULL;
}

static void append(char *buf, size_t size, const char *text) {
    size_t used = strlen(buf);
    if (used + 1 < size)
        snprintf(buf + used, size - used, "%s", text);
}

/* The line of check `name`: its worst status, and the nodes grouped by what they saw,
 * the worst first, so a failing node is named at the head of the line. */
static void merge_check(doctor_report *into, const doctor_report *nodes, const char *const *labels,
                        size_t n, const char *name) {
    bool *told = calloc(n, sizeof(*told));
    if (!told) {
        into->out_of_memory = true;
        return;
    }
    size_t ran = 0, groups = 0;
    doctor_status worst = DOCTOR_OK;
    const char *fix = "";
    for (size_t i = 0; i < n; i++) {
        const doctor_check *c = check_of(&nodes[i], name);
        if (c && (ran++ == 0 || c->status > worst))
            worst = c->status;
        told[i] = c == NULL;
    }
    char detail[DETAIL_MAX] = "";
    for (int status = DOCTOR_FAIL; status >= DOCTOR_OK; status--) {
        for (size_t i = 0; i < n; i++) {
            const doctor_check *c = check_of(&nodes[i], name);
            if (told[i] || c->status != (doctor_status)status)
                continue;
            if (!fix[0])
                fix = c->fix;
            /* every node that saw the same: one group */
            char who[1024] = "";
            size_t members = 0;
            for (size_t j = i; j < n; j++) {
                const doctor_check *d = check_of(&nodes[j], name);
                if (told[j] || d->status != c->status || strcmp(d->detail, c->detail) != 0)
                    continue;
                append(who, sizeof(who), members++ ? ", " : "");
                append(who, sizeof(who), labels[j]);
                told[j] = true;
            }
            append(detail, sizeof(detail), groups++ ? "; " : "");
            if (members == ran && ran > 1) {
                char all[64]; /* "asked": a replica is not asked what only masters see */
                snprintf(all, sizeof(all), "all %zu nodes%s", ran, ran < n ? " asked" : "");
                append(detail, sizeof(detail), all);
            } else {
                append(detail, sizeof(detail), who);
            }
            append(detail, sizeof(detail), ": ");
            append(detail, sizeof(detail), c->detail);
        }
    }
    free(told);
    doctor_add(into, name, worst, fix, "%s", detail);
}

void doctor_merge(doctor_report *into, const doctor_report *nodes, const char *const *labels,
                  size_t n) {
    /* the checks in the order the nodes ran them: a name's first appearance */
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < nodes[i].count; k++) {
            const char *name = nodes[i].checks[k].name;
            bool earlier = false;
            for (size_t j = 0; j < i && !earlier; j++)
                earlier = check_of(&nodes[j], name) != NULL;
            if (!earlier && check_of(into, name) == NULL)
                merge_check(into, nodes, labels, n, name);
        }
    for (size_t i = 0; i < n; i++)
        into->out_of_memory |= nodes[i].out_of_memory;
}
