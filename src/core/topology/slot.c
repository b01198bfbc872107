/* SPDX-License-Identifier: MIT */
/* slot.c — which of Redis Cluster's 16384 slots a key (or a shard channel) lives in.
 *
 * The slot is CRC16 of the key modulo 16384, where CRC16 is the XMODEM variant
 * (polynomial 0x1021, initial value 0, no reflection) and "the key" is its hash tag when it
 * has one: the bytes between the first '{' and the first '}' after it, if there is at
 * least one byte between them. So "redisson_lock__channel:{job}" and "job" share a slot,
 * and "{}x" or "x{" hash whole. This is the rule every cluster node applies (the cluster
 * specification's keyHashSlot); the table below is computed once from the polynomial rather
 * than written out. */
#include <pthread.h>

#include "topology/cluster.h"

static uint16_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_table_init(void) {
    for (unsigned byte = 0; byte < 256; byte++) {
        uint16_t crc = (uint16_t)(byte << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = (uint16_t)((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
        crc_table[byte] = crc;
    }
}

uint16_t dlock__crc16(const char *buf, size_t len) {
    pthread_once(&crc_once, crc_table_init);
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++)
        crc = (uint16_t)((crc << 8) ^ crc_table[((crc >> 8) ^ (uint8_t)buf[i]) & 0xff]);
    return crc;
}

int dlock__slot_of(const char *key, size_t len) {
    size_t open = 0;
    while (open < len && key[open] != '{')
        open++;
    if (open < len) {
        size_t close = open + 1;
        while (close < len && key[close] != '}')
            close++;
        if (close < len && close > open + 1)
            return dlock__crc16(key + open + 1, close - open - 1) & (DLOCK__CLUSTER_SLOTS - 1);
    }
    return dlock__crc16(key, len) & (DLOCK__CLUSTER_SLOTS - 1);
}
