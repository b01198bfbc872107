-- rw.lua — every operation of the read-write lock (Redisson RReadWriteLock).
--
-- One script for both halves, because they share the same bookkeeping: a reader whose
-- holds have all expired (its client died) is dropped, and after any change the hash is
-- deleted when nobody holds it, or kept alive as long as its longest live hold.
--
-- KEYS[1]  the lock hash N: 'mode' -> 'read'|'write', reader field "<client-id>:<owner>"
--          -> read holds, writer field "<client-id>:<owner>:write" -> write holds
-- KEYS[2]  the channel redisson_rwlock:{N}: "0" a read release freed it, "1" a write
--          release freed it or left only reads (every waiter may look again)
-- KEYS[3]  {N}:rwlock_writers: sorted set, waiting writer field -> deadline (server clock).
--          While a live writer waits, new readers wait too (dlock's answer to writer
--          starvation; Redisson has none). A waiting writer refreshes its deadline with
--          every attempt; a dead one stops counting after fair_wait_ms.
-- KEYS[4]  the key base "{N}": read hold k of reader R has its own lease in the string key
--          KEYS[4] .. ':' .. R .. ':rwlock_timeout:' .. k
-- ARGV[1]  the operation: 'read', 'unread', 'force_read', 'write', 'unwrite',
--          'force_write', 'leave' (a writer gave up waiting)
-- ARGV[2]  lease ms; ARGV[3] the owner's field (the writer field for write operations);
-- ARGV[4]  the holds the client believes the owner has; ARGV[5] fair_wait ms (acquires);
-- ARGV[6]  'write' only: 1 for a single attempt (wait 0), which does not wait in line
-- Replies as every lock kind: acquire {1, holds, 0} | {0, hint}; release -1 | holds left;
-- force 1 | 0. Acquire and release recognise their own resend as the reentrant lock does.
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local N, channel, writers, base = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local op, lease, field, believed = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])

local function timeout_key(reader, k)
    return base .. ':' .. reader .. ':rwlock_timeout:' .. k
end

local function is_writer(f)
    return string.sub(f, -6) == ':write'
end

-- Drops readers with no live hold; returns the longest live read lease (-2: none) and
-- whether a writer holds N.
local function purge_readers()
    local longest, writer = -2, false
    for _, f in ipairs(redis.call('hkeys', N)) do
        if is_writer(f) then
            writer = true
        elseif f ~= 'mode' then
            local alive = -2
            for k = 1, tonumber(redis.call('hget', N, f)) do
                local t = redis.call('pttl', timeout_key(f, k))
                if t == -1 then
                    t = 2 ^ 40 -- no expiry: alive for good
                end
                if t > alive then
                    alive = t
                end
            end
            if alive == -2 then
                redis.call('hdel', N, f)
            elseif alive > longest then
                longest = alive
            end
        end
    end
    return longest, writer
end

-- After holds changed: delete N if nobody holds it any more (publishing msg), else keep
-- it alive as long as its longest read hold when no writer holds it. True if deleted.
local function settle(msg)
    local longest, writer = purge_readers()
    if redis.call('hlen', N) <= 1 then
        redis.call('del', N)
        redis.call('publish', channel, msg)
        return true
    end
    if not writer then
        redis.call('hset', N, 'mode', 'read')
        if longest > 0 then
            redis.call('pexpire', N, math.min(longest, 2 ^ 40))
        end
    end
    return false
end

-- The earliest deadline of a live waiting writer other than except, or nil.
local function writer_waiting(except)
    redis.call('zremrangebyscore', writers, '-inf', now)
    local first = redis.call('zrange', writers, 0, 1, 'WITHSCORES')
    for i = 1, #first, 2 do
        if first[i] ~= except then
            return tonumber(first[i + 1])
        end
    end
    return nil
end

local function keep_alive(ms)
    if redis.call('pttl', N) < ms then
        redis.call('pexpire', N, ms)
    end
end

local function release_common()
    local holds = tonumber(redis.call('hget', N, field))
    if not holds then
        return nil
    end
    if believed > 0 and holds == believed - 1 then
        return holds, true -- a resend of an applied release
    end
    return holds, false
end

if op == 'read' then
    local holds = tonumber(redis.call('hget', N, field)) or 0
    if holds > 0 and holds == believed + 1 then -- a resend of an applied acquire
        redis.call('set', timeout_key(field, holds), 1, 'px', lease)
        keep_alive(lease)
        return {1, holds, 0}
    end
    local mode = redis.call('hget', N, 'mode')
    local blocked_by = nil
    local can
    if mode == 'write' then
        can = redis.call('hexists', N, field .. ':write') == 1 -- the writer may read
    else
        blocked_by = writer_waiting(field .. ':write')
        can = holds > 0 or not blocked_by -- a reader already in may go on reading
    end
    if can then
        redis.call('hset', N, 'mode', mode or 'read')
        holds = redis.call('hincrby', N, field, 1)
        redis.call('set', timeout_key(field, holds), 1, 'px', lease)
        keep_alive(lease)
        return {1, holds, 0}
    end
    local hint = redis.call('pttl', N)
    if blocked_by and (hint < 0 or blocked_by - now + 1 < hint) then
        hint = math.max(blocked_by - now + 1, 0)
    end
    return {0, hint}
elseif op == 'write' then
    local mode = redis.call('hget', N, 'mode')
    if mode == 'read' then
        purge_readers()
        if redis.call('hlen', N) <= 1 then
            redis.call('del', N)
            mode = false
        end
    end
    if not mode then
        redis.call('hset', N, 'mode', 'write', field, 1)
        redis.call('pexpire', N, lease)
        redis.call('zrem', writers, field)
        return {1, 1, 0}
    end
    local holds = tonumber(redis.call('hget', N, field))
    if holds then -- reentrant (mode is 'write')
        if holds ~= believed + 1 then
            holds = redis.call('hincrby', N, field, 1)
        end
        redis.call('pexpire', N, lease)
        return {1, holds, 0}
    end
    local fair_wait = tonumber(ARGV[5])
    -- Wait in line, holding new readers back, unless this is a single attempt, or the owner
    -- reads itself (an upgrade attempt: it can only time out, and must not keep the other
    -- readers out meanwhile).
    local reader = string.sub(field, 1, -7)
    if ARGV[6] ~= '1' and redis.call('hexists', N, reader) == 0 then
        redis.call('zadd', writers, now + fair_wait, field)
    end
    local hint = math.floor(fair_wait / 3)
    local pttl = redis.call('pttl', N)
    if pttl >= 0 and pttl < hint then
        hint = pttl
    end
    return {0, hint}
elseif op == 'unread' then
    local holds, resent = release_common()
    if not holds or resent then
        return holds or -1
    end
    if believed > 0 and holds > believed then
        for k = believed + 1, holds do -- orphans of acquires reported failed
            redis.call('del', timeout_key(field, k))
        end
        holds = believed
    end
    -- the hold being released may have run out while other readers kept N alive
    local expired = redis.call('pttl', timeout_key(field, holds)) == -2
    redis.call('del', timeout_key(field, holds))
    holds = holds - 1
    if holds > 0 then
        redis.call('hset', N, field, holds)
    else
        redis.call('hdel', N, field)
    end
    settle(0)
    if expired and holds == 0 then
        return -1 -- nothing was held any more: the client reports the hold lost
    end
    return holds
elseif op == 'unwrite' then
    local holds, resent = release_common()
    if not holds or resent then
        return holds or -1
    end
    if believed > 0 and holds > believed then
        holds = believed
    end
    holds = holds - 1
    if holds > 0 then
        redis.call('hset', N, field, holds)
        redis.call('pexpire', N, lease)
        return holds
    end
    redis.call('hdel', N, field)
    if not settle(1) then
        redis.call('publish', channel, 1) -- only reads left: waiting readers may enter
    end
    return 0
elseif op == 'force_read' or op == 'force_write' then
    local wanted = op == 'force_read' and 'read' or 'write'
    if redis.call('hget', N, 'mode') ~= wanted then
        return 0
    end
    redis.call('del', N)
    redis.call('publish', channel, op == 'force_read' and 0 or 1)
    return 1
elseif op == 'leave' then
    redis.call('zrem', writers, field)
    if not writer_waiting(nil) and redis.call('hget', N, 'mode') ~= 'write' then
        redis.call('publish', channel, 1) -- readers held back for this writer may enter
    end
    return 0
end
return redis.error_reply('ERR rw.lua: unknown operation ' .. tostring(op))
