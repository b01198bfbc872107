-- permits.lua — every operation of the permit-expirable semaphore (RPermitExpirableSemaphore).
--
-- One script for all of them, because each must begin the same way: give back the
-- permits whose lease has ended. Time is the server's TIME, never a client's clock.
--
-- KEYS[1]  the semaphore N: a string, the available permits
-- KEYS[2]  {N}:timeout: sorted set, permit id (16 raw bytes) -> lease end (ms since the
--          epoch, server clock), 922337203685477 for a permit without a lease
-- KEYS[3]  the channel redisson_sc:{N}
-- ARGV[1]  the operation:
--   'set'        ARGV[2] permits           -> 1 set, 0 it already existed
--   'acquire'    ARGV[2] id, ARGV[3] lease ms (-1: none)
--                                          -> {1} acquired (also when this id already holds a
--                                             permit: a resend), {0, hint} none available;
--                                             hint = ms until the earliest lease ends, -1 none
--   'release'    ARGV[2] id                -> 1 released, 0 unknown, released or expired
--   'lease'      ARGV[2] id, ARGV[3] lease ms (-1: none)
--                                          -> 1 updated, 0 unknown, released or expired
--   'available'                            -> the available permits
local NO_LEASE = '922337203685477'
-- A count key of another type fails here, before anything is written: Redis does not roll
-- a script back, so a later failure would leave a permit neither held nor in the pool.
redis.call('get', KEYS[1])
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local function lease_end(lease_ms)
    local lease = tonumber(lease_ms)
    if lease > 0 then
        return string.format('%d', now + lease)
    end
    return NO_LEASE
end

local expired = redis.call('zrangebyscore', KEYS[2], '-inf', now)
if #expired > 0 then
    redis.call('zremrangebyscore', KEYS[2], '-inf', now)
    redis.call('publish', KEYS[3], redis.call('incrby', KEYS[1], #expired))
end

local op = ARGV[1]
if op == 'set' then
    if redis.call('get', KEYS[1]) then
        return 0
    end
    redis.call('set', KEYS[1], ARGV[2])
    redis.call('publish', KEYS[3], ARGV[2])
    return 1
elseif op == 'acquire' then
    if redis.call('zscore', KEYS[2], ARGV[2]) then
        return {1}
    end
    local available = tonumber(redis.call('get', KEYS[1])) or 0
    if available > 0 then
        redis.call('decr', KEYS[1])
        redis.call('zadd', KEYS[2], lease_end(ARGV[3]), ARGV[2])
        return {1}
    end
    local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
    if first[2] and tonumber(first[2]) < tonumber(NO_LEASE) then
        return {0, tonumber(first[2]) - now}
    end
    return {0, -1}
elseif op == 'release' then
    if redis.call('zrem', KEYS[2], ARGV[2]) == 0 then
        return 0
    end
    redis.call('publish', KEYS[3], redis.call('incr', KEYS[1]))
    return 1
elseif op == 'lease' then
    if not redis.call('zscore', KEYS[2], ARGV[2]) then
        return 0
    end
    redis.call('zadd', KEYS[2], 'XX', lease_end(ARGV[3]), ARGV[2])
    return 1
elseif op == 'available' then
    return tonumber(redis.call('get', KEYS[1])) or 0
end
return redis.error_reply('ERR permits.lua: unknown operation ' .. tostring(op))
