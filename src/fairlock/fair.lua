-- fair.lua — every operation of the fair lock (Redisson RFairLock), FIFO without stalls.
--
-- One script for all of them, because each must begin the same way: drop every waiter
-- whose deadline passed (server TIME), and if that changed who is first in line while the
-- lock is free, wake the new first. Redisson drops only the head, and gives each waiter
-- "previous waiter + 5 minutes" from the client's clock; here each waiter refreshes its
-- own deadline (server TIME + fair_wait) with every attempt, so a dead waiter costs at
-- most fair_wait and a live one never loses its place.
--
-- KEYS[1]  the lock hash N (owner field -> hold count, as the reentrant lock)
-- KEYS[2]  redisson_lock_queue:{N}: list of waiting owner fields, first in line first
-- KEYS[3]  redisson_lock_timeout:{N}: sorted set, owner field -> deadline (ms, server clock)
-- KEYS[4]  redisson_lock__channel:{N}: a waiter listens on KEYS[4] .. ':' .. its field
-- KEYS[5]  fenced fair lock only: redisson_lock_token:{N}
-- ARGV[1]  the operation:
--   'acquire'  ARGV[2] lease ms, ARGV[3] field, ARGV[4] believed holds, ARGV[5] fair_wait ms
--              -> {1, holds, token} acquired | {0, hint}: in line; hint = ms until it is
--                 worth looking again (the holder's lease, the first waiter's deadline,
--                 or the next refresh of this waiter's own deadline, whichever is sooner)
--   'release'  ARGV[2] lease ms, ARGV[3] field, ARGV[4] believed holds
--              -> -1 the owner holds nothing | holds left (0: freed, the first waiter woken)
--   'force'    -> 1 it was locked (now freed, the first waiter woken) | 0 it was not
--   'leave'    ARGV[3] field -> 0 (the owner gave up waiting: out of line)
-- Acquire and release recognise their own resend as the reentrant lock's scripts do.
if KEYS[5] then
    redis.call('get', KEYS[5]) -- a token key of another type fails here, before any write
end
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local function wake_first()
    if redis.call('exists', KEYS[1]) == 0 then
        local first = redis.call('lindex', KEYS[2], 0)
        if first then
            redis.call('publish', KEYS[4] .. ':' .. first, 0)
        end
    end
end

local first_before = redis.call('lindex', KEYS[2], 0)
local gone = redis.call('zrangebyscore', KEYS[3], '-inf', now)
if #gone > 0 then
    for _, field in ipairs(gone) do
        redis.call('lrem', KEYS[2], 0, field)
    end
    redis.call('zremrangebyscore', KEYS[3], '-inf', now)
    if redis.call('lindex', KEYS[2], 0) ~= first_before then
        wake_first()
    end
end

local op, field = ARGV[1], ARGV[3]

local function take(believed)
    local holds = tonumber(redis.call('hget', KEYS[1], field)) or 0
    local token = 0
    if holds > 0 and holds == believed + 1 then -- a resend of an applied acquire
        redis.call('pexpire', KEYS[1], ARGV[2])
        if KEYS[5] then
            token = tonumber(redis.call('get', KEYS[5])) or 0
        end
        return {1, holds, token}
    end
    holds = redis.call('hincrby', KEYS[1], field, 1)
    redis.call('pexpire', KEYS[1], ARGV[2])
    if KEYS[5] then
        token = redis.call('incr', KEYS[5])
    end
    return {1, holds, token}
end

if op == 'acquire' then
    local believed = tonumber(ARGV[4])
    if redis.call('hexists', KEYS[1], field) == 1 then
        return take(believed) -- reentrant
    end
    local first = redis.call('lindex', KEYS[2], 0)
    if redis.call('exists', KEYS[1]) == 0 then
        if not first or first == field then
            if first then
                redis.call('lpop', KEYS[2])
            end
            redis.call('zrem', KEYS[3], field)
            -- The new first waiter last heard "free, but another is first", and sleeps until
            -- its next refresh (fair_wait/3). If our lease ends sooner, tell it now, so its
            -- next attempt learns when to look again.
            local next = redis.call('lindex', KEYS[2], 0)
            if next and tonumber(ARGV[2]) < math.floor(tonumber(ARGV[5]) / 3) then
                redis.call('publish', KEYS[4] .. ':' .. next, 0)
            end
            return take(believed)
        end
        -- free, but another waiter is first: make sure it knows
        redis.call('publish', KEYS[4] .. ':' .. first, 0)
    end
    local fair_wait = tonumber(ARGV[5])
    if not redis.call('zscore', KEYS[3], field) then
        redis.call('rpush', KEYS[2], field)
    end
    redis.call('zadd', KEYS[3], now + fair_wait, field)
    local hint = math.floor(fair_wait / 3)
    local pttl = redis.call('pttl', KEYS[1])
    if pttl >= 0 and pttl < hint then
        hint = pttl
    end
    first = redis.call('lindex', KEYS[2], 0)
    if first ~= field then
        local deadline = tonumber(redis.call('zscore', KEYS[3], first))
        if deadline and deadline - now + 1 < hint then
            hint = math.max(deadline - now + 1, 0)
        end
    end
    return {0, hint}
elseif op == 'release' then
    local holds = tonumber(redis.call('hget', KEYS[1], field))
    if not holds then
        return -1
    end
    local believed = tonumber(ARGV[4])
    if believed > 0 and holds == believed - 1 then
        return holds -- a resend of an applied release
    end
    if believed > 0 and holds > believed then
        holds = believed -- orphans of acquires reported failed go with this release
    end
    holds = holds - 1
    if holds > 0 then
        redis.call('hset', KEYS[1], field, holds)
        redis.call('pexpire', KEYS[1], ARGV[2])
        return holds
    end
    redis.call('del', KEYS[1])
    wake_first()
    return 0
elseif op == 'force' then
    local kind = redis.call('type', KEYS[1])['ok']
    if kind == 'none' then
        return 0
    end
    if kind ~= 'hash' then
        return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
    end
    redis.call('del', KEYS[1])
    wake_first()
    return 1
elseif op == 'leave' then
    local was_first = redis.call('lindex', KEYS[2], 0) == field
    redis.call('lrem', KEYS[2], 0, field)
    redis.call('zrem', KEYS[3], field)
    if was_first then
        wake_first()
    end
    return 0
end
return redis.error_reply('ERR fair.lua: unknown operation ' .. tostring(op))
