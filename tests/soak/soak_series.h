/* SPDX-License-Identifier: MIT */
/* soak_series.h - the soak's samples: what is measured, the CSV, the trend test, the table.
 */
#ifndef DLOCK_SOAK_SERIES_H
#define DLOCK_SOAK_SERIES_H

#include "soak.h"

/* blocking clients 1 and 2 and the async client on the one server, then the Sentinel and
 * the Cluster clients (NULL when the run has no such fixture) */
#define SOAK_CLIENTS 5

/* Sizes the sample table for the whole run (touching it now) and opens samples.csv in
 * soak_cfg.out_dir. 0 or -1. */
int soak_series_init(void);
/* One row at t_ms: the process, the server, every client's stats (a NULL client: its
 * gauges as they were in the previous row). idle: the row taken after the work ended. */
void soak_series_sample(int64_t t_ms, dlock_client *const clients[SOAK_CLIENTS],
                        redis_fixture *redis, bool idle);
/* Whether every gauge that must return to its idle value has: 0 calls in flight, waits,
 * leases held and subscriptions on every client still open. Reads the clients now. */
bool soak_series_gauges_idle(dlock_client *const clients[SOAK_CLIENTS]);
/* Judges the rows (trend after warm-up; idle values in the idle row), prints the table and
 * one line per failing series on stdout. Returns the number of failing series. */
int soak_series_judge(void);
/* The names of the failing series, comma-separated ("" when none), after the judging. */
const char *soak_series_failing(void);
/* Process descriptors and threads now (for the check after the clients are freed). */
long soak_count_fds(void);
long soak_count_threads(void);
void soak_series_close(void);

#endif /* DLOCK_SOAK_SERIES_H */
