/* SPDX-License-Identifier: MIT */
/* spin_skip.h — for the tests of the lone caller's spin (src/core/engine/spin.c): skip a
 * test in a process that may keep no CPU busy (a cgroup quota below one CPU:
 * src/core/base/cpus.c), where no wait spins and what the test asserts cannot happen. */
#ifndef DLOCK_TEST_SPIN_SKIP_H
#define DLOCK_TEST_SPIN_SKIP_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "engine/engine.h"

static inline void skip_unless_it_may_spin(void) {
    if (dlock__spinner_enter()) {
        dlock__spinner_leave();
        return;
    }
    print_message("this process may keep no CPU busy (its cgroup's quota): no spin\n");
    skip();
}

#endif
