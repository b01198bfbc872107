/* SPDX-License-Identifier: MIT */
/* fuzz_url.c — libFuzzer target: dlock__url_parse and dlock__url_masked on any bytes.
 *
 * Two properties beyond "no crash, no UB, no leak":
 *  - raw bytes: whatever parses with a password masks to a text holding "***";
 *  - a URL built around a password P (from the input, without the bytes that shape a URL)
 *    masks exactly as the same URL with P's bytes all 'x': the masked text depends on
 *    nothing in the password, so none of its bytes can show. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

static char *copy_text(const uint8_t *data, size_t n) {
    char *s = malloc(n + 1);
    if (!s)
        abort();
    memcpy(s, data, n);
    s[n] = '\0';
    return s;
}

/* The password parsed from url, or NULL (the URL did not parse, or has none). */
static char *parsed_password(const char *url) {
    dlock__endpoint ep;
    memset(&ep, 0, sizeof(ep));
    char err[128];
    char *password = NULL;
    if (dlock__url_parse(url, &ep, err, sizeof(err)) == DLOCK_OK && ep.password)
        password = strdup(ep.password);
    dlock__endpoint_free(&ep);
    return password;
}

static void check_raw(const uint8_t *data, size_t n, size_t bufsize) {
    char *url = copy_text(data, n);
    char *password = parsed_password(url);
    char *masked = malloc(bufsize);
    if (!masked)
        abort();
    if (dlock__url_masked(url, masked, bufsize) != masked || strlen(masked) >= bufsize)
        abort();
    if (password && bufsize > n + 8 && !strstr(masked, "***"))
        abort(); /* a password parsed, and nothing masked */
    free(masked);
    free(password);
    free(url);
}

static bool shapes_url(uint8_t c) {
    return c == 0 || strchr("@/?&#=:%[]", c) != NULL;
}

static const char *const templates[][2] = {
    {"redis://user:", "@"},
    {"rediss://:", "@"},
    {"unix:///tmp/fuzz.sock?db=1&password=", "&user="},
    {"unix:///tmp/fuzz.sock?password=", ""},
};

/* url = template head + P + template tail + the rest of the input */
static char *build(int t, const char *password, size_t plen, const uint8_t *rest, size_t rlen) {
    size_t h = strlen(templates[t][0]), m = strlen(templates[t][1]);
    char *url = malloc(h + plen + m + rlen + 1);
    if (!url)
        abort();
    memcpy(url, templates[t][0], h);
    memcpy(url + h, password, plen);
    memcpy(url + h + plen, templates[t][1], m);
    memcpy(url + h + plen + m, rest, rlen);
    url[h + plen + m + rlen] = '\0';
    for (size_t i = 0; i < rlen; i++)
        if (url[h + plen + m + i] == '\0')
            url[h + plen + m + i] = '.';
    return url;
}

static void check_built(const uint8_t *data, size_t n) {
    if (n < 2)
        return;
    int t = data[0] % (sizeof(templates) / sizeof(templates[0]));
    size_t plen = data[1] % 24 + 1;
    data += 2;
    n -= 2;
    if (plen > n)
        return;
    for (size_t i = 0; i < plen; i++)
        if (shapes_url(data[i]))
            return;
    char *same_shape = malloc(plen);
    if (!same_shape)
        abort();
    memset(same_shape, 'x', plen);
    char *url = build(t, (const char *)data, plen, data + plen, n - plen);
    char *twin = build(t, same_shape, plen, data + plen, n - plen);
    char *p1 = parsed_password(url), *p2 = parsed_password(twin);
    if (p1 && p2) {
        char masked[512], masked_twin[512];
        dlock__url_masked(url, masked, sizeof(masked));
        dlock__url_masked(twin, masked_twin, sizeof(masked_twin));
        if (strcmp(masked, masked_twin) != 0)
            abort(); /* the masked text shows something of the password */
    }
    free(p1);
    free(p2);
    free(url);
    free(twin);
    free(same_shape);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (n == 0 || n > 4096)
        return 0;
    size_t bufsize = (size_t)data[0] * 4 + 1; /* 1..1021: truncation too */
    check_raw(data + 1, n - 1, bufsize);
    check_built(data, n);
    return 0;
}
