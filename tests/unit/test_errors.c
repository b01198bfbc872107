/* SPDX-License-Identifier: MIT */
/* test_errors.c — every error code has a name and a text, from the one list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dlock.h"

static void test_every_code_has_its_name_and_a_text(void **state) {
    (void)state;
    int count = 0;
#define CHECK_CODE(name, value, text)                                                              \
    assert_int_equal(DLOCK_##name, value);                                                         \
    assert_string_equal(dlock_err_name(DLOCK_##name), "DLOCK_" #name);                             \
    assert_string_equal(dlock_strerror(DLOCK_##name), text);                                       \
    assert_true(strlen(text) > 5);                                                                 \
    count++;
    DLOCK_ERRNO_MAP(CHECK_CODE)
#undef CHECK_CODE
    assert_int_equal(count, 14);
}

static void test_codes_are_negative_and_distinct(void **state) {
    (void)state;
    int seen[64] = {0};
#define CHECK_DISTINCT(name, value, text)                                                          \
    assert_true((value) < 0 && (value) > -64);                                                     \
    assert_int_equal(seen[-(value)]++, 0);
    DLOCK_ERRNO_MAP(CHECK_DISTINCT)
#undef CHECK_DISTINCT
}

static void test_ok_and_unknown_codes(void **state) {
    (void)state;
    assert_string_equal(dlock_err_name(DLOCK_OK), "DLOCK_OK");
    assert_string_equal(dlock_strerror(DLOCK_OK), "success");
    assert_string_equal(dlock_err_name(-999), "DLOCK_UNKNOWN");
    assert_string_equal(dlock_strerror(-999), "unknown error");
    assert_string_equal(dlock_err_name(7), "DLOCK_UNKNOWN");
}

static void test_the_documented_texts(void **state) {
    (void)state;
    assert_string_equal(dlock_strerror(DLOCK_ETIMEDOUT), "timed out waiting for lock");
    assert_string_equal(dlock_err_name(DLOCK_ETIMEDOUT), "DLOCK_ETIMEDOUT");
}

/* Codes are never renumbered: a program built against an older header still compares
 * right. ENOPERM came after EDEADLK, and ENOSPC (a caller's buffer too small) after it. */
static void test_codes_keep_their_numbers_and_enoperm_is_new_at_the_end(void **state) {
    (void)state;
    assert_int_equal(DLOCK_EAUTH, -7);
    assert_int_equal(DLOCK_EREDIS, -8);
    assert_int_equal(DLOCK_EDEADLK, -12);
    assert_int_equal(DLOCK_ENOPERM, -13);
    assert_string_equal(dlock_err_name(DLOCK_ENOPERM), "DLOCK_ENOPERM");
    assert_int_equal(DLOCK_ENOSPC, -14);
}

static void test_version_string_matches_the_macros(void **state) {
    (void)state;
    assert_string_equal(dlock_version_string(), DLOCK_VERSION_STRING);
    assert_int_equal(dlock_version_hex(), DLOCK_VERSION_HEX);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_code_has_its_name_and_a_text),
        cmocka_unit_test(test_codes_are_negative_and_distinct),
        cmocka_unit_test(test_ok_and_unknown_codes),
        cmocka_unit_test(test_the_documented_texts),
        cmocka_unit_test(test_codes_keep_their_numbers_and_enoperm_is_new_at_the_end),
        cmocka_unit_test(test_version_string_matches_the_macros),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
