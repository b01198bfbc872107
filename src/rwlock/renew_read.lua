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
-- KEYS[1..n]  [stored] the lock hashes
-- ARGV[1]     the lease, ms (watchdog_ms)
-- ARGV[1+i]   the reader field of KEYS[i]
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
local renewed = {}
for i = 1, #KEYS do
    local field = ARGV[1 + i]
    local readers = base(KEYS[i]) .. ':rwlock_readers'
    local holds = nil
    if redis.call('type', KEYS[i])['ok'] == 'hash' then -- else gone, without failing the batch
        holds = tonumber(redis.call('hget', KEYS[i], field))
    end
    if holds then
        for k = 1, holds do
            redis.call('set', base(KEYS[i]) .. ':' .. field .. ':rwlock_timeout:' .. k, 1, 'px', lease)
        end
        local kind = redis.call('type', readers)['ok']
        if kind == 'set' or kind == 'none' then -- another type: rw.lua refuses the name
            redis.call('sadd', readers, field)
            keep_alive(readers, lease)
        end
        keep_alive(KEYS[i], lease)
        renewed[i] = 1
    else
        renewed[i] = 0
    end
end
return renewed
