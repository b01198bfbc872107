/* SPDX-License-Identifier: MIT */
/* acl_rule_words.h — the ACL rule scripts/acl-rule.py computes from the sources, as the words
 * of ACL SETUSER, for a test to apply to its servers (test_acl_rule.c, test_cli_doctor.c).
 * Everything here fails the running cmocka test on error (the caller includes <cmocka.h>). */
#ifndef DLOCK_TEST_ACL_RULE_WORDS_H
#define DLOCK_TEST_ACL_RULE_WORDS_H

#define ACL_RULE_WORDS_MAX 256

/* The words `python3 scripts/acl-rule.py --words which --user user --password password
 * --prefix prefix` prints, one per element of words[] (ACL_RULE_WORDS_MAX of room; each
 * malloc'd, free them with acl_rule_words_free); their count, more than 3. The script is
 * found under $DLOCK_SOURCE_DIR, which ctest sets. */
int acl_rule_words(const char *which, const char *user, const char *password, const char *prefix,
                   char **words);
void acl_rule_words_free(char **words, int count);

#endif
