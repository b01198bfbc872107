/* SPDX-License-Identifier: MIT */
/* fuzz_reply_shape.c — libFuzzer target: any bytes through hiredis' RESP reader, as a server
 * or a proxy could send them, and every reply that comes out through every script's shape
 * check (reply_shape.h), the renewal check and the error text: no crash, no UB, no leak,
 * the text always terminated within its buffer, and a reply that fits gives a form the
 * shape has.
 *
 * hiredis 0.14 allocates an array's element table as soon as it reads the header, for as
 * many elements as the header claims ("*5333333296" is 40 GB): the target refuses arrays
 * over MAX_ELEMENTS in the reader's own hook, as a reader facing the network must (see the
 * report of this target's first run), so the fuzzer looks at the shapes, not at the
 * allocator. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "every_reply_shape.h"

#define MAX_ELEMENTS 4096

static redisReplyObjectFunctions capped;
static void *(*create_array)(const redisReadTask *, int);

/* NULL: the reader stops with an error (its "out of memory"), as for any refused reply. */
static void *create_capped_array(const redisReadTask *task, int elements) {
    return elements > MAX_ELEMENTS ? NULL : create_array(task, elements);
}

static redisReader *capped_reader(void) {
    redisReader *reader = redisReaderCreate();
    if (!reader)
        abort();
    if (!create_array) {
        capped = *reader->fn;
        create_array = capped.createArray;
        capped.createArray = create_capped_array;
    }
    reader->fn = &capped;
    return reader;
}

static void check_one(const redisReply *r, size_t textsize) {
    for (size_t i = 0; i < EVERY_REPLY_SHAPE_COUNT; i++) {
        const dlock__reply_shape *s = every_reply_shape[i];
        dlock__shape_values got;
        if (dlock__reply_shape_check(s, r, &got) && (got.form < 0 || got.form >= s->forms))
            abort();
        char text[300];
        dlock__reply_shape_mismatch(s, r, text, textsize);
        if (strlen(text) >= textsize)
            abort();
    }
    size_t n = r->type == REDIS_REPLY_ARRAY ? r->elements : 1;
    (void)dlock__reply_shape_each(&dlock__shape_renewed, r, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (n == 0)
        return 0;
    size_t textsize = data[0] % 300 + 1;
    redisReader *reader = capped_reader();
    if (redisReaderFeed(reader, (const char *)data + 1, n - 1) == REDIS_OK) {
        for (int i = 0; i < 64; i++) {
            void *reply = NULL;
            if (redisReaderGetReply(reader, &reply) != REDIS_OK || !reply)
                break;
            check_one(reply, textsize);
            freeReplyObject(reply);
        }
    }
    redisReaderFree(reader);
    return 0;
}
