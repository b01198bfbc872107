/* SPDX-License-Identifier: MIT */
/* test_util.h - clocks, sleeps, load scaling and the per-test hang watchdog.
 *
 * Tests measure time with the monotonic clock only, scale their iteration counts by
 * test_scale() (valgrind runs set DLOCK_TEST_SCALE=0.05), and arm the watchdog so that a
 * hang fails with a message instead of blocking CI.
 */
#ifndef DLOCK_TEST_UTIL_H
#define DLOCK_TEST_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Arm the hang guard of the calling process: if test_watchdog_disarm() or another arm does
 * not come first, after `seconds` (times test_slack_factor()) it prints
 * "TEST HANG: <what> did not finish within N s" on stderr, SIGKILLs every redis_fixture
 * server of this process and _exit(1)s. Arming again replaces the deadline and the text
 * (`what` is copied). Runs on a helper thread, so it needs no signal and fires even while
 * every test thread is blocked. A forked child starts unarmed. Thread-safe. */
void test_watchdog_arm(unsigned seconds, const char *what);
/* The same with a budget in milliseconds that is used as given, never multiplied. */
void test_watchdog_arm_exact_ms(int64_t ms, const char *what);
/* Cancel the deadline. No-op when not armed. */
void test_watchdog_disarm(void);

/* $DLOCK_TEST_SCALE as a double in (0, 1]; unset, unparsable or out of range: 1.0. */
double test_scale(void);
/* max(1, n * test_scale()): iteration counts never drop to zero. */
long test_scaled(long n);

/* CLOCK_MONOTONIC. */
int64_t test_now_ms(void);
int64_t test_now_us(void);
/* Sleep at least `ms` (resumes after signals); <= 0 returns at once. */
void test_sleep_ms(int64_t ms);

/* End a forked child: release what the support code holds in this process (servers it
 * started, admin connections, the fixture and watchdog threads; see
 * redis_fixture_cleanup_process()), then _exit(status). Under valgrind anything still live at
 * _exit is reported as lost and memcheck replaces the child's exit status with its error
 * code, so a child whose status is checked ends here. stdio is not flushed, as with _exit()
 * (its buffers may hold output of the parent). */
_Noreturn void test_child_exit(int status);

/* fork() for a test whose child ends with test_child_exit(). A failed cmocka test leaves its
 * allocations behind (the assert jumps out of it), and a child forked by a later test
 * inherits them: memcheck would report them lost when the child ends and turn its status
 * into its error code, failing a test that did nothing wrong. So under valgrind the child
 * first counts what it inherited lost (a leak check right after the fork); if anything,
 * test_child_exit() ends it without memcheck's exit-time leak check (it execs a shell that
 * exits with the status), and says so on stderr. A child that inherited nothing is checked
 * as usual. Returns what fork() returns. */
pid_t test_fork(void);

/* true when DLOCK_TEST_SCALE < 1 or the process runs on valgrind (LD_PRELOAD holds
 * vgpreload): timing budgets should then be generous. */
bool test_under_valgrind(void);

/* The one slack rule of the suite: how much wider than on a quiet machine an upper timing
 * bound is (a budget to wait for a state, the most a call may take, a watchdog budget).
 * $DLOCK_TEST_SLACK (a number >= 1) when set; else 20 under valgrind (test_under_valgrind()),
 * 3 in a sanitizer build, 2 otherwise (a loaded 2-core machine beside another `make test`).
 * Lower bounds (a call took at least its wait) are never widened. */
double test_slack_factor(void);
/* ms widened by test_slack_factor(). */
int64_t test_slack_ms(int64_t ms);

/* How slow the alternative to an event is made in a test that proves something happens on
 * the event (a waiter wakes on the release message, not on its re-check): a holder's lease,
 * a BUSY hint, a re-check or a deadline of at least this long. */
#define TEST_SLOW_MS 30000
/* The bound such a test puts on "it happened on the event": 2.5 s widened by
 * test_slack_factor(), but never more than half of TEST_SLOW_MS. Seconds, so a loaded machine
 * (another `make test` beside it, valgrind) does not miss it; still a proof, because the only
 * other way it could happen takes at least TEST_SLOW_MS. Not a speed figure: how fast belongs
 * in `make bench`. */
int64_t test_prompt_ms(void);

/* watchdog_ms for a client whose leases must not be lost in a test: a lease is lost when its
 * renewal (every watchdog_ms / 3) is late by watchdog_ms / 3 more, and on a loaded machine a
 * renewal may be late by a second. Tests that wait whole periods stay a few seconds long. */
#define TEST_WATCHDOG_MS 3000

#endif /* DLOCK_TEST_UTIL_H */
