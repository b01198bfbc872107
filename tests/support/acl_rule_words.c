/* SPDX-License-Identifier: MIT */
/* acl_rule_words.c — see acl_rule_words.h. */
#include "acl_rule_words.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "topology_util.h"

int acl_rule_words(const char *which, const char *user, const char *password, const char *prefix,
                   char **words) {
    const char *dir = getenv("DLOCK_SOURCE_DIR");
    if (!dir || !dir[0])
        fail_msg("DLOCK_SOURCE_DIR is not set (ctest sets it)");
    char *command = topo_asprintf("python3 '%s/scripts/acl-rule.py' --words %s --user %s "
                                  "--password %s --prefix %s",
                                  dir, which, user, password, prefix);
    FILE *p = popen(command, "r");
    free(command);
    assert_non_null(p);
    int n = 0;
    char line[512];
    while (fgets(line, sizeof(line), p)) {
        line[strcspn(line, "\n")] = '\0';
        assert_true(n < ACL_RULE_WORDS_MAX);
        words[n++] = strdup(line);
    }
    assert_int_equal(pclose(p), 0);
    assert_true(n > 3);
    return n;
}

void acl_rule_words_free(char **words, int count) {
    for (int i = 0; i < count; i++)
        free(words[i]);
}
