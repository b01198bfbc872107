/* SPDX-License-Identifier: MIT */
/* doctor_sentinel.c — `dlock doctor`'s Sentinel check: how many sentinels of the URL know
 * the master, and whether they agree on where it is.
 *
 * The library asks each sentinel of the URL `SENTINEL get-master-addr-by-name NAME` on a
 * short-lived connection of its own (dlock__client_sentinel_survey; the client's own links
 * are left alone), so the sentinels' credentials and TLS are the URL's and the tool sees no
 * part of it. The answers are compared with the node the client's commands go to.
 *
 *   ok    every sentinel names the same master, the one the client uses
 *   warn  a sentinel does not answer or knows no such master (a failover needs a majority
 *         of them), but those that answer agree
 *   fail  none names a master, or they name different ones (mid-failover, or sentinels
 *         configured for different servers under one name) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "doctor.h"

typedef struct survey_op {
    dlock__op op;
    dlock__sentinel_answer *answers; /* copies, malloc'd */
    size_t count;
} survey_op;

static void survey_done(dlock_client *c, const dlock__sentinel_answer *answers, size_t count,
                        void *arg) {
    (void)c;
    survey_op *survey = arg;
    survey->answers = count ? malloc(count * sizeof(*answers)) : NULL;
    if (count && !survey->answers) {
        dlock__op_complete(&survey->op, dlock__op_fail(&survey->op, DLOCK_ENOMEM, "out of memory"));
        return;
    }
    if (count)
        memcpy(survey->answers, answers, count * sizeof(*answers));
    survey->count = count;
    dlock__op_complete(&survey->op, count ? DLOCK_OK : DLOCK_ENOMEM);
}

static void survey_start(dlock__op *op) {
    int rc = dlock__client_sentinel_survey(op->client, survey_done,
                                           DLOCK__CONTAINER_OF(op, survey_op, op));
    if (rc != DLOCK_OK)
        dlock__op_complete(op, dlock__op_fail(op, rc, "%s", dlock_last_error()));
}

void doctor_check_sentinels(doctor_report *r) {
    if (!r->sentinel_url)
        return;
    survey_op survey;
    memset(&survey, 0, sizeof(survey));
    dlock__op_init(&survey.op, r->c, survey_start);
    int rc = dlock__op_run(&survey.op);
    if (rc != DLOCK_OK) {
        doctor_add(r, "sentinels", DOCTOR_WARN, NULL, "could not ask the sentinels: %s",
                   dlock_last_error());
        free(survey.answers);
        return;
    }
    char node[300];
    redis_lib_node_of(r->c, r->object_name, node, sizeof(node));
    size_t named = 0, other = 0;
    const char *first = NULL;
    char others[1200] = "";
    for (size_t i = 0; i < survey.count; i++) {
        const dlock__sentinel_answer *a = &survey.answers[i];
        char line[sizeof(a->sentinel) + sizeof(a->why) + 32];
        if (a->named == 1) {
            named++;
            if (!first)
                first = a->master;
            else if (strcmp(first, a->master) != 0)
                other++;
            snprintf(line, sizeof(line), "%s names %s", a->sentinel, a->master);
        } else {
            snprintf(line, sizeof(line), "%s %s", a->sentinel,
                     a->named == 0 ? "knows no such master" : a->why);
        }
        size_t used = strlen(others);
        snprintf(others + used, sizeof(others) - used, "%s%s", used ? "; " : "", line);
    }
    /* the client's node is shown as "host:port" (plus " (TLS)"): compare the address part */
    bool same_as_client = first && strncmp(node, first, strlen(first)) == 0;
    if (named == 0)
        doctor_add(r, "sentinels", DOCTOR_FAIL,
                   "check the master name in the URL and that the sentinels monitor it "
                   "(SENTINEL MASTERS)",
                   "0 of %zu sentinels name a master: %s", survey.count, others);
    else if (other > 0)
        doctor_add(r, "sentinels", DOCTOR_FAIL,
                   "wait for the failover to end; if it persists, the sentinels monitor "
                   "different servers under one name: fix their configuration",
                   "the sentinels disagree: %s", others);
    else if (named < survey.count || !same_as_client)
        doctor_add(r, "sentinels", DOCTOR_WARN,
                   "bring every sentinel of the URL up (a failover needs a majority of them), "
                   "or drop the dead ones from the URL",
                   "%zu of %zu sentinels name %s (the client uses %s): %s", named, survey.count,
                   first, node, others);
    else
        doctor_add(r, "sentinels", DOCTOR_OK, NULL,
                   "all %zu sentinels name the master %s, the one the client uses", survey.count,
                   first);
    free(survey.answers);
}
