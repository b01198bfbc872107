-- SPDX-License-Identifier: MIT
-- permits.lua — every operation of the permit-expirable semaphore (RPermitExpirableSemaphore).
--
-- One script for all of them, because each must begin the same way: give back the
-- permits whose lease has ended. Time is the server's TIME, never a client's clock.
--
-- KEYS[1]  [stored] the semaphore N: a string, the available permits
-- KEYS[2]  [stored] {N}:timeout: sorted set, permit id (16 raw bytes) -> lease end (ms since the
--          epoch, server clock), 922337203685477 for a permit without a lease
-- KEYS[3]  [unstored] the channel redisson_sc:{N}
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
-- Counts are exact to 2^63 - 1 (see int64_reply).
--
-- Checks first, then writes (see src/lock/acquire.lua): a refused call changes nothing,
-- also the giving back of expired permits. So each operation first works out, from
-- reads alone, what it and the giving back will write and publish; then it publishes;
-- then it writes.

-- uses: int64 count

local NO_LEASE = '922337203685477'
local count, refused = count_of('a count of permits') -- another type fails here
if not count then
    return refused
end
local exists = redis.call('exists', KEYS[1]) == 1
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local function lease_end(lease_ms)
    local lease = tonumber(lease_ms)
    if lease > 0 then
        return string.format('%d', now + lease)
    end
    return NO_LEASE
end

-- the permit id holds a permit whose lease has not ended
local function holds_permit(id)
    local lease = redis.call('zscore', KEYS[2], id)
    return lease and tonumber(lease) > now
end

local function beyond_range(more)
    return redis.error_reply(string.format(
        'ERR %s: %s permits and %s more go beyond the 64-bit range', KEYS[1], count, more))
end

-- the permits whose lease has ended go back to the pool, published with the new count
local messages = {}
local expired = #redis.call('zrangebyscore', KEYS[2], '-inf', now)
if expired > 0 then
    local available = int64_add(count, string.format('%d', expired))
    if not available then
        return beyond_range(expired)
    end
    count, exists = available, true
    messages[1] = available
end

local op = ARGV[1]
local reply, write
if op == 'set' then
    reply = exists and 0 or 1
    if not exists then
        messages[#messages + 1] = ARGV[2]
        write = function()
            redis.call('set', KEYS[1], ARGV[2])
        end
    end
elseif op == 'acquire' then
    if holds_permit(ARGV[2]) then
        reply = {1}
    elseif count ~= '0' and string.sub(count, 1, 1) ~= '-' then
        reply = {1}
        write = function()
            redis.call('decr', KEYS[1])
            redis.call('zadd', KEYS[2], lease_end(ARGV[3]), ARGV[2])
        end
    else
        local first = redis.call('zrangebyscore', KEYS[2], string.format('(%d', now), '+inf',
                                 'WITHSCORES', 'LIMIT', 0, 1)
        if first[2] and tonumber(first[2]) < tonumber(NO_LEASE) then
            reply = {0, tonumber(first[2]) - now}
        else
            reply = {0, -1}
        end
    end
elseif op == 'release' then
    reply = 0
    if holds_permit(ARGV[2]) then
        local available = int64_add(count, '1')
        if not available then
            return beyond_range(1)
        end
        reply = 1
        messages[#messages + 1] = available
        write = function()
            redis.call('zrem', KEYS[2], ARGV[2])
            redis.call('incr', KEYS[1])
        end
    end
elseif op == 'lease' then
    reply = 0
    if holds_permit(ARGV[2]) then
        reply = 1
        write = function()
            redis.call('zadd', KEYS[2], 'XX', lease_end(ARGV[3]), ARGV[2])
        end
    end
elseif op == 'available' then
    reply = int64_reply(count)
else
    return redis.error_reply('ERR permits.lua: unknown operation ' .. tostring(op))
end

for _, message in ipairs(messages) do
    redis.call('publish', KEYS[3], message)
end
if expired > 0 then
    redis.call('zremrangebyscore', KEYS[2], '-inf', now)
    redis.call('incrby', KEYS[1], expired)
end
if write then
    write()
end
return reply
