/* SPDX-License-Identifier: MIT */
/* test_handoff_cluster_probe.c — the probe a Cluster client's lock scripts ask whether the
 * lock's slot is being migrated (src/lock/handoff_cluster.c): {N}:handoff_probe, in N's slot
 * like the hand-off's marker and queue, or none (no hand-off in a Cluster) for a name whose
 * '{' opens no hash tag, which would put those keys in another slot than N. No server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lock/handoff_cluster.h"
#include "topology/cluster.h"

static int slot_of(const char *key) {
    return dlock__slot_of(key, strlen(key));
}

/* name's probe is `want`, in name's slot, as are its marker and queue (dlock__name_suffixed). */
static void probe_is(const char *name, const char *want) {
    char *probe = dlock__handoff_cluster_probe(name);
    assert_non_null(probe);
    assert_string_equal(probe, want);
    assert_int_equal(slot_of(probe), slot_of(name));
    char *marker = dlock__name_suffixed(name, "handoff");
    char *queue = dlock__name_suffixed(name, "handoff_queue");
    assert_int_equal(slot_of(marker), slot_of(name));
    assert_int_equal(slot_of(queue), slot_of(name));
    dlock__free(marker);
    dlock__free(queue);
    dlock__free(probe);
}

static void test_a_name_without_braces_or_with_a_hash_tag_has_a_probe_in_its_slot(void **state) {
    (void)state;
    probe_is("job", "{job}:handoff_probe");
    probe_is("orders:7", "{orders:7}:handoff_probe");
    probe_is("x{order7}y", "x{order7}y:handoff_probe");
    probe_is("{a}{b}", "{a}{b}:handoff_probe");
}

static void test_a_name_whose_brace_opens_no_hash_tag_has_no_probe(void **state) {
    (void)state;
    static const char *const names[] = {"a{b", "a{}b", "{}", "}{"};
    for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
        char *probe = dlock__handoff_cluster_probe(names[i]);
        if (probe)
            fail_msg("%s got the probe %s (slot %d, the name's %d)", names[i], probe,
                     slot_of(probe), slot_of(names[i]));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_name_without_braces_or_with_a_hash_tag_has_a_probe_in_its_slot),
        cmocka_unit_test(test_a_name_whose_brace_opens_no_hash_tag_has_no_probe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
