-- SPDX-License-Identifier: MIT
-- renew_read.lua — the watchdog's renewal of read holds: this client's own holds only.
--
-- For each lock, the reader's every hold gets its lease again (its timeout key is set
-- afresh) and the hash lives at least that long. Other readers' timeout keys are left
-- alone, so a dead client's read holds run out (Redisson renews every reader's keys, and a
-- zombie reader can keep a writer out for ever).
--
-- Each renewed reader stays listed in the dlock-only set {N}:rwlock_readers, which lives at
-- least as long as its timeout keys: that list is how rw.lua tells dlock's readers (judged
-- by their keys) from Redisson's (judged by the hash).
--
-- KEYS[1..d]    the lock hashes of the first d leases: all n on one Redis; in a Cluster
--               only the first, as Redis refuses declared keys of several slots (the
--               batch spans one node's slots; allow-cross-slot-keys lets it touch them)
-- ARGV[1]       the lease, ms (watchdog_ms)
-- ARGV[1+i]     the reader field of lease i, i = 1..n
-- ARGV[1+n+j]   the lock hash of lease d+j
-- Reply: an array of n integers, 1 = renewed, 0 = gone (the lease is lost).
local function base(name)
    if string.find(name, '{', 1, true) then
        return name
    end
    return '{' .. name .. '}'
end
local function keep_alive(key, ms)
    if redis.call('pttl', key) < ms then
        redis.call('pexpire', key, ms)
    end
end
local lease = tonumber(ARGV[1])
local declared = #KEYS
local n = (#ARGV - 1 + declared) / 2
local keys = {}
for i = 1, n do
    keys[i] = i <= declared and KEYS[i] or ARGV[1 + n + i - declared]
end
local renewed = {}
for i = 1, n do
    local field = ARGV[1 + i]
    local readers = base(keys[i]) .. ':rwlock_readers'
    local holds = nil
    if redis.call('type', keys[i])['ok'] == 'hash' then -- else gone, without failing the batch
        holds = tonumber(redis.call('hget', keys[i], field))
    end
    if holds then
        for k = 1, holds do
            redis.call('set', base(keys[i]) .. ':' .. field .. ':rwlock_timeout:' .. k, 1, 'px', lease)
        end
        local kind = redis.call('type', readers)['ok']
        if kind == 'set' or kind == 'none' then -- another type: rw.lua refuses the name
            redis.call('sadd', readers, field)
            keep_alive(readers, lease)
        end
        keep_alive(keys[i], lease)
        renewed[i] = 1
    else
        renewed[i] = 0
    end
end
return renewed
