-- SPDX-License-Identifier: MIT
-- renew_hash.lua — the watchdog's renewal of hash-field leases (lock, fenced lock, fair
-- lock, the write half of a read-write lock): the lease of KEYS[i] is held while its owner
-- field ARGV[1+i] exists.
--
-- KEYS[1..n]  [stored] the lock hashes
-- ARGV[1]     the lease to set, ms (watchdog_ms)
-- ARGV[1+i]   the owner field of KEYS[i]
-- Reply: an array of n integers, 1 = renewed, 0 = gone (the lease is lost).
local renewed = {}
for i = 1, #KEYS do
    -- a key that is no longer a hash (overwritten by someone) is gone for us, and must
    -- not fail the batch with WRONGTYPE
    if redis.call('type', KEYS[i])['ok'] == 'hash' and redis.call('hexists', KEYS[i], ARGV[1 + i]) == 1 then
        redis.call('pexpire', KEYS[i], ARGV[1])
        renewed[i] = 1
    else
        renewed[i] = 0
    end
end
return renewed
