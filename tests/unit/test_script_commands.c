/* SPDX-License-Identifier: MIT */
/* test_script_commands.c — the commands each embedded script calls, as the build reads them
 * (dlock__scripts[id].commands, cmake/embed_lua.cmake), are those scripts/acl-rule.py reads
 * off the same sources for the documented ACL rule: `dlock doctor` asks the ACL about the
 * one list and the docs grant the other, so they must not drift apart. The build's stops on
 * a misspelt or unwritten command are proven by unit_embed_lua_tags. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dlock_int.h"
#include "topology_util.h"

/* The table's commands of script id as one line "a b c". */
static void table_line(int id, char *buf, size_t size) {
    buf[0] = '\0';
    for (const char *const *c = dlock__scripts[id].commands; *c; c++) {
        size_t used = strlen(buf);
        snprintf(buf + used, size - used, "%s%s", used ? " " : "", *c);
    }
}

static void test_the_built_table_is_what_acl_rule_py_reads(void **state) {
    (void)state;
    const char *dir = getenv("DLOCK_SOURCE_DIR");
    if (!dir || !dir[0])
        fail_msg("DLOCK_SOURCE_DIR is not set (ctest sets it)");
    char *command = topo_asprintf("python3 '%s/scripts/acl-rule.py' --script-commands", dir);
    FILE *p = popen(command, "r");
    free(command);
    assert_non_null(p);
    bool seen[DLOCK__SCRIPT_COUNT] = {false};
    int lines = 0;
    char line[2048];
    while (fgets(line, sizeof(line), p)) {
        line[strcspn(line, "\n")] = '\0';
        size_t name_len = strcspn(line, " ");
        const char *py = line[name_len] ? line + name_len + 1 : "";
        int id = 0;
        while (id < DLOCK__SCRIPT_COUNT && (strlen(dlock__scripts[id].name) != name_len ||
                                            strncmp(dlock__scripts[id].name, line, name_len) != 0))
            id++;
        if (id == DLOCK__SCRIPT_COUNT)
            fail_msg("acl-rule.py reads a script the build did not embed: %s", line);
        char built[2048];
        table_line(id, built, sizeof(built));
        if (strcmp(built, py) != 0)
            fail_msg("%s: the build embeds \"%s\", acl-rule.py reads \"%s\"",
                     dlock__scripts[id].name, built, py);
        seen[id] = true;
        lines++;
    }
    assert_int_equal(pclose(p), 0);
    assert_int_equal(lines, DLOCK__SCRIPT_COUNT);
    for (int id = 0; id < DLOCK__SCRIPT_COUNT; id++)
        if (!seen[id])
            fail_msg("acl-rule.py does not read %s", dlock__scripts[id].name);
}

static void test_each_script_lists_its_commands_sorted_once_in_lower_case(void **state) {
    (void)state;
    for (int id = 0; id < DLOCK__SCRIPT_COUNT; id++) {
        const char *const *c = dlock__scripts[id].commands;
        assert_non_null(c[0]); /* every script calls Redis */
        for (; *c; c++) {
            for (const char *ch = *c; *ch; ch++)
                assert_true(*ch >= 'a' && *ch <= 'z');
            if (c[1])
                assert_true(strcmp(c[0], c[1]) < 0);
        }
    }
    /* one known case: the acquire script's own calls and those through its helper
     * side(...), which passes its arguments on to redis.pcall (zrange only goes that way) */
    for (int id = 0; id < DLOCK__SCRIPT_COUNT; id++) {
        if (strcmp(dlock__scripts[id].name, "lock/acquire") != 0)
            continue;
        char built[2048];
        table_line(id, built, sizeof(built));
        assert_non_null(strstr(built, "hincrby"));
        assert_non_null(strstr(built, "zrange"));
        return;
    }
    fail_msg("no lock/acquire script");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_built_table_is_what_acl_rule_py_reads),
        cmocka_unit_test(test_each_script_lists_its_commands_sorted_once_in_lower_case),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
