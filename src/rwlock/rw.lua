-- SPDX-License-Identifier: MIT
-- rw.lua — every operation of the read-write lock (Redisson RReadWriteLock).
--
-- One script for both halves, because they share the same bookkeeping: a dlock reader
-- whose holds have all expired (its client died) is dropped, and after any change the
-- hash is deleted when nobody holds it, or kept alive as long as its longest live hold.
--
-- Whose readers may be judged dead: only dlock's own. A dlock reader's every hold has a
-- timeout key that its own client renews, and its field is listed in the dlock-only
-- set KEYS[4] .. ':rwlock_readers'. Any other reader field (a Redisson client's) is judged as
-- Redisson judges it: alive as long as it is in the hash, and the hash lives by its TTL.
-- Redisson's read watchdog renews the hash but not always the timeout keys, so dropping a
-- Redisson reader by its keys would let a writer in beside a live reader.
--
-- Every command that can fail runs before the first write: the type of each key is
-- checked first, and a PUBLISH goes before the writes (it is delivered when the script
-- ends either way), so a refused PUBLISH leaves Redis unchanged.
--
-- KEYS[1]  [stored] the lock hash N: 'mode' -> 'read'|'write', reader field "<client-id>:<owner>"
--          -> read holds, writer field "<client-id>:<owner>:write" -> write holds
-- KEYS[2]  [unstored] the channel redisson_rwlock:{N}: "0" a read release freed it, "1" a write
--          release freed it or left only reads (every waiter may look again)
-- KEYS[3]  [stored] {N}:rwlock_writers: sorted set, waiting writer field -> deadline (server clock).
--          While a live writer waits, new readers wait too (dlock's answer to writer
--          starvation; Redisson has none). A waiting writer refreshes its deadline with
--          every attempt; a dead one stops counting after fair_wait_ms.
-- KEYS[4]  [unstored] the key base "{N}": read hold k of reader R has its own lease in the string key
--          KEYS[4] .. ':' .. R .. ':rwlock_timeout:' .. k; dlock's readers are listed in
--          the set KEYS[4] .. ':rwlock_readers', which lives at least as long as any of
--          their timeout keys
-- ARGV[1]  the operation: 'read', 'unread', 'force_read', 'write', 'unwrite',
--          'force_write', 'leave' (a writer gave up waiting)
-- ARGV[2]  lease ms; ARGV[3] the owner's field (the writer field for write operations);
-- ARGV[4]  the holds the client believes the owner has; ARGV[5] fair_wait ms (acquires);
-- ARGV[6]  'write' only: 1 for a single attempt (wait 0), which does not wait in line
-- Replies as every lock kind: acquire {1, holds, 0} | {0, hint}; release -1 | holds left;
-- force 1 | 0. Acquire and release recognise their own resend as the reentrant lock does.
local N, channel, writers, base = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local readers = base .. ':rwlock_readers'
local op, lease, field, believed = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])

-- Wrong types fail here, before anything is written.
local mode = redis.call('hget', N, 'mode')
redis.call('zcard', writers)
redis.call('scard', readers)

local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local FOREVER = 2 ^ 40 -- a TTL of -1 (no expiry): alive for good

local function timeout_key(reader, k)
    return base .. ':' .. reader .. ':rwlock_timeout:' .. k
end

local function is_writer(f)
    return string.sub(f, -6) == ':write'
end

local function ttl_of(key)
    local t = redis.call('pttl', key)
    if t == -1 then
        return FOREVER
    end
    return t
end

-- The longest remaining lease of a reader with `holds` holds, -2 if it has none left. A
-- dlock reader lives by its timeout keys; any other by the hash (and its keys, as
-- Redisson's own release counts them).
local function reader_ttl(f, holds)
    local alive = -2
    if redis.call('sismember', readers, f) == 0 then
        alive = ttl_of(N)
    end
    for k = 1, holds do
        alive = math.max(alive, ttl_of(timeout_key(f, k)))
    end
    return alive
end

-- Reads N without writing, as it will be once `changed` has `changed_holds` holds (0:
-- gone). Returns {dead = dlock readers with no live hold, live = holders left, longest =
-- the longest live read lease (-2: none), writer = a writer holds}.
local function survey(changed, changed_holds)
    local s = {dead = {}, live = 0, longest = -2, writer = false}
    for _, f in ipairs(redis.call('hkeys', N)) do
        local holds = tonumber(redis.call('hget', N, f))
        if f == changed then
            holds = changed_holds
        end
        if f == 'mode' or holds == 0 then
            -- not a holder, or no longer one
        elseif is_writer(f) then
            s.writer, s.live = true, s.live + 1
        else
            local alive = reader_ttl(f, holds or 0)
            if alive == -2 then
                table.insert(s.dead, f)
            else
                s.live, s.longest = s.live + 1, math.max(s.longest, alive)
            end
        end
    end
    return s
end

local function forget_lock()
    redis.call('del', N)
    redis.call('del', readers)
end

-- Writes what survey s found: N deleted if nobody holds it; else dead dlock readers
-- dropped and, without a writer, N alive as long as its longest read hold. The caller
-- published first where a message is due. True if N was deleted.
local function settle(s)
    if s.live == 0 then
        forget_lock()
        return true
    end
    for _, f in ipairs(s.dead) do
        redis.call('hdel', N, f)
        redis.call('srem', readers, f)
    end
    if not s.writer then
        redis.call('hset', N, 'mode', 'read')
        if s.longest > 0 then
            redis.call('pexpire', N, math.min(s.longest, FOREVER))
        end
    end
    return false
end

-- The earliest deadline of a live waiting writer other than except, or nil. Reads only.
local function writer_waiting(except)
    local live = redis.call('zrangebyscore', writers, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 2)
    for i = 1, #live, 2 do
        if live[i] ~= except then
            return tonumber(live[i + 1])
        end
    end
    return nil
end

local function keep_alive(key, ms)
    if redis.call('pttl', key) < ms then
        redis.call('pexpire', key, ms)
    end
end

-- Read hold k of this owner, with the lease; N and the list of dlock readers live at
-- least as long as it (the list must outlive every timeout key of a reader it lists).
local function set_read_hold(k)
    redis.call('set', timeout_key(field, k), 1, 'px', lease)
    redis.call('sadd', readers, field)
    keep_alive(readers, lease)
    keep_alive(N, lease)
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
        set_read_hold(holds)
        return {1, holds, 0}
    end
    local blocked_by = nil
    local can
    if mode == 'write' then
        can = redis.call('hexists', N, field .. ':write') == 1 -- the writer may read
    else
        blocked_by = writer_waiting(field .. ':write')
        can = holds > 0 or not blocked_by -- a reader already in may go on reading
    end
    redis.call('zremrangebyscore', writers, '-inf', now) -- writers that stopped waiting
    if can then
        redis.call('hset', N, 'mode', mode or 'read')
        holds = redis.call('hincrby', N, field, 1)
        set_read_hold(holds)
        return {1, holds, 0}
    end
    local hint = redis.call('pttl', N)
    if blocked_by and (hint < 0 or blocked_by - now + 1 < hint) then
        hint = math.max(blocked_by - now + 1, 0)
    end
    return {0, hint}
elseif op == 'write' then
    if mode == 'read' then
        local s = survey(nil, nil)
        if s.live == 0 then
            forget_lock() -- only dead dlock readers were left
            mode = false
        else
            settle(s)
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
    local orphans = holds -- holds above believed: acquires reported failed
    if believed > 0 and holds > believed then
        holds = believed
    end
    -- the hold being released may have run out while other readers kept N alive
    local expired = redis.call('pttl', timeout_key(field, holds)) == -2
    local left = holds - 1
    local s = survey(field, left)
    if s.live == 0 then
        redis.call('publish', channel, 0)
    end
    for k = holds, orphans do
        redis.call('del', timeout_key(field, k))
    end
    if left > 0 then
        redis.call('hset', N, field, left)
    else
        redis.call('hdel', N, field)
        redis.call('srem', readers, field)
    end
    settle(s)
    if expired and left == 0 then
        return -1 -- nothing was held any more: the client reports the hold lost
    end
    return left
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
    -- the lock is now free, or only reads are left: every waiter may look again
    local s = survey(field, 0)
    redis.call('publish', channel, 1)
    redis.call('hdel', N, field)
    settle(s)
    return 0
elseif op == 'force_read' or op == 'force_write' then
    local wanted = op == 'force_read' and 'read' or 'write'
    if mode ~= wanted then
        return 0
    end
    redis.call('publish', channel, op == 'force_read' and 0 or 1)
    forget_lock()
    return 1
elseif op == 'leave' then
    if not writer_waiting(field) and mode ~= 'write' then
        redis.call('publish', channel, 1) -- readers held back for this writer may enter
    end
    redis.call('zrem', writers, field)
    redis.call('zremrangebyscore', writers, '-inf', now)
    return 0
end
return redis.error_reply('ERR rw.lua: unknown operation ' .. tostring(op))
