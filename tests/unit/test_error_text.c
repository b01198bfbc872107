/* SPDX-License-Identifier: MIT */
/* test_error_text.c — how a detail too long for its buffer is cut (error.c).
 *
 * A text that fits is kept whole. One that does not keeps its start and its end (the texts
 * end with what to do) and loses its middle to " ... ", at spaces where the words are of a
 * usual length, inside a word only when the word alone is longer than that, and never
 * inside a UTF-8 character. dlock__fail and the op's detail are cut the same way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "client/client.h"

static bool ends_with(const char *s, const char *end) {
    size_t n = strlen(s), m = strlen(end);
    return n >= m && memcmp(s + n - m, end, m) == 0;
}

static bool valid_utf8(const unsigned char *s) {
    while (*s) {
        int more = *s < 0x80 ? 0 : (*s & 0xE0) == 0xC0 ? 1 : (*s & 0xF0) == 0xE0 ? 2 : -1;
        if (more < 0)
            return false;
        s++;
        for (; more > 0; more--, s++)
            if ((*s & 0xC0) != 0x80)
                return false;
    }
    return true;
}

static void test_a_text_that_fits_is_kept_whole(void **state) {
    (void)state;
    char buf[32];
    dlock__text_fit(buf, sizeof(buf), "short enough");
    assert_string_equal(buf, "short enough");
    dlock__text_fit(buf, 13, "short enough"); /* 12 bytes and the NUL: exactly */
    assert_string_equal(buf, "short enough");
}

static void test_a_long_text_loses_whole_words_from_its_middle(void **state) {
    (void)state;
    char text[4096] = "", buf[DLOCK__ERROR_TEXT_SIZE];
    size_t n = 0;
    for (int i = 0; n < 3000; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "word%d ", i);
    snprintf(text + n, sizeof(text) - n, "; grant it: ACL SETUSER u ~<the keys>");
    dlock__text_fit(buf, sizeof(buf), text);
    printf("# %zu of %zu bytes kept\n", strlen(buf), strlen(text));
    assert_true(strlen(buf) < sizeof(buf));
    assert_true(strlen(buf) > sizeof(buf) - 80); /* the room is used */
    assert_true(ends_with(buf, "; grant it: ACL SETUSER u ~<the keys>"));
    const char *gap = strstr(buf, " ... ");
    assert_non_null(gap);
    size_t head = (size_t)(gap - buf);
    assert_memory_equal(buf, text, head);
    assert_int_equal(text[head], ' '); /* the head ends with a whole word */
    const char *tail = gap + 5;
    const char *in_text = strstr(text, tail);
    assert_non_null(in_text);
    assert_int_equal(in_text[-1], ' '); /* the tail starts with a whole word */
}

static void test_a_word_longer_than_the_room_is_cut_inside_a_character_never(void **state) {
    (void)state;
    char text[3000], buf[101];
    size_t n = 0;
    memcpy(text, "name ", 5);
    n = 5;
    while (n < 2000) {
        memcpy(text + n, "\xc3\xa9\xe2\x82\xac", 5); /* é€: 2 and 3 bytes */
        n += 5;
    }
    snprintf(text + n, sizeof(text) - n, " -- do this");
    for (size_t size = 60; size <= sizeof(buf); size++) {
        dlock__text_fit(buf, size, text);
        assert_true(strlen(buf) < size);
        assert_true(valid_utf8((const unsigned char *)buf));
        assert_true(ends_with(buf, " -- do this"));
        assert_non_null(strstr(buf, "name \xc3\xa9")); /* the long word's start is kept */
    }
}

static void test_dlock_fail_keeps_the_end_of_a_long_detail(void **state) {
    (void)state;
    char host[256];
    memset(host, 'h', 255);
    host[255] = '\0';
    char user[1500];
    memset(user, 'u', sizeof(user) - 1);
    user[sizeof(user) - 1] = '\0';
    /* a 255-byte host and its message fit whole */
    dlock__fail(DLOCK_ECONN, "command connection to %s:6379 (TLS): connect timed out; check it",
                host);
    assert_non_null(strstr(dlock_last_error(), host));
    assert_true(ends_with(dlock_last_error(), "connect timed out; check it"));
    /* a user name of 1499 bytes does not, twice: the end survives */
    assert_int_equal(
        dlock__fail(DLOCK_ENOPERM, "user '%s' refused; grant it: ACL SETUSER %s ~k", user, user),
        DLOCK_ENOPERM);
    assert_true(strlen(dlock_last_error()) < DLOCK__ERROR_TEXT_SIZE);
    assert_true(ends_with(dlock_last_error(), "uuu ~k"));
    assert_memory_equal(dlock_last_error(), "user 'uuu", 9);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_text_that_fits_is_kept_whole),
        cmocka_unit_test(test_a_long_text_loses_whole_words_from_its_middle),
        cmocka_unit_test(test_a_word_longer_than_the_room_is_cut_inside_a_character_never),
        cmocka_unit_test(test_dlock_fail_keeps_the_end_of_a_long_detail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
