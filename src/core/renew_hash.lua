-- SPDX-License-Identifier: MIT
-- renew_hash.lua — the watchdog's renewal of hash-field leases (lock, fenced lock, fair
-- lock, the write half of a read-write lock): the lease of lock hash i is held while its
-- owner field ARGV[1+i] exists.
--
-- KEYS[1..d]    the lock hashes of the first d leases: all n on one Redis; in a Cluster
--               only the first, as Redis refuses declared keys of several slots (the
--               batch spans one node's slots; allow-cross-slot-keys lets it touch them)
-- ARGV[1]       the lease to set, ms (watchdog_ms)
-- ARGV[1+i]     the owner field of lease i, i = 1..n
-- ARGV[1+n+j]   the lock hash of lease d+j
-- Reply: an array of n integers, 1 = renewed, 0 = gone (the lease is lost).
local declared = #KEYS
local n = (#ARGV - 1 + declared) / 2
local keys = {}
for i = 1, n do
    keys[i] = i <= declared and KEYS[i] or ARGV[1 + n + i - declared]
end
local renewed = {}
for i = 1, n do
    -- a key that is no longer a hash (overwritten by someone) is gone for us, and must
    -- not fail the batch with WRONGTYPE
    if redis.call('type', keys[i])['ok'] == 'hash' and redis.call('hexists', keys[i], ARGV[1 + i]) == 1 then
        redis.call('pexpire', keys[i], ARGV[1])
        renewed[i] = 1
    else
        renewed[i] = 0
    end
end
return renewed
