/* SPDX-License-Identifier: MIT */
/* main.c — the package test's consumer (tests/package/run.sh): a program outside the
 * source tree that uses the installed dlock. It proves the headers compile, the library
 * links (shared or static, with its dependencies) and the linked library is the version
 * the headers say: dlock_version_string() == DLOCK_VERSION_STRING. No Redis needed: a
 * client with a bad URL fails with DLOCK_EINVAL before any I/O, which still pulls the
 * client code (and with it hiredis and libev) into a static link. */
#include <stdio.h>
#include <string.h>

#include <dlock.h>

int main(void) {
    const char *linked = dlock_version_string();
    printf("dlock %s (headers %s)\n", linked, DLOCK_VERSION_STRING);
    if (strcmp(linked, DLOCK_VERSION_STRING) != 0 || dlock_version_hex() != DLOCK_VERSION_HEX) {
        fprintf(stderr, "consumer: linked dlock %s, headers say %s\n", linked,
                DLOCK_VERSION_STRING);
        return 1;
    }
    dlock_options o;
    dlock_options_init(&o);
    o.url = "bogus://nowhere";
    dlock_client *c = NULL;
    int rc = dlock_client_new(&o, &c);
    printf("dlock_client_new(bad URL) = %s (%s)\n", dlock_err_name(rc), dlock_last_error());
    if (rc != DLOCK_EINVAL || c != NULL)
        return 1;
    return 0;
}
