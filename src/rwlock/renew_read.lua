-- renew_read.lua — the watchdog's renewal of read holds: this client's own holds only.
--
-- For each lock, the reader's every hold gets its lease again (its timeout key is set
-- afresh) and the hash lives at least that long. Other readers' timeout keys are left
-- alone, so a dead client's read holds run out (Redisson renews every reader's keys, and a
-- zombie reader can keep a writer out for ever).
--
-- KEYS[1..n]  the lock hashes
-- ARGV[1]     the lease, ms (watchdog_ms)
-- ARGV[1+i]   the reader field of KEYS[i]
-- Reply: an array of n integers, 1 = renewed, 0 = gone (the lease is lost).
local function base(name)
    if string.find(name, '{', 1, true) then
        return name
    end
    return '{' .. name .. '}'
end
local renewed = {}
for i = 1, #KEYS do
    local field = ARGV[1 + i]
    local holds = nil
    if redis.call('type', KEYS[i])['ok'] == 'hash' then -- else gone, without failing the batch
        holds = tonumber(redis.call('hget', KEYS[i], field))
    end
    if holds then
        for k = 1, holds do
            redis.call('set', base(KEYS[i]) .. ':' .. field .. ':rwlock_timeout:' .. k, 1, 'px', ARGV[1])
        end
        if redis.call('pttl', KEYS[i]) < tonumber(ARGV[1]) then
            redis.call('pexpire', KEYS[i], ARGV[1])
        end
        renewed[i] = 1
    else
        renewed[i] = 0
    end
end
return renewed
