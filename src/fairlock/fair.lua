-- SPDX-License-Identifier: MIT
-- fair.lua — every operation of the fair lock (Redisson RFairLock), FIFO without stalls.
--
-- One script for all of them, because each must begin the same way: drop the waiters that
-- are gone, and if that changed who is first in line while the lock is free, wake the new
-- first.
--
-- Two kinds of waiter share the line, and each is judged by its own rule:
--  - dlock's waiters are listed in the dlock-only sorted set KEYS[5] with a deadline on the
--    server's clock (TIME + fair_wait) that each refreshes with every attempt: a dead one
--    is dropped wherever it stands within fair_wait, a live one never loses its place.
--  - any other waiter (a Redisson client's) as Redisson judges it: its score in
--    redisson_lock_timeout:{N} is its deadline, and it is dropped only when first in line
--    with that deadline passed.
-- In redisson_lock_timeout:{N} dlock writes its waiters the score Redisson's scripts
-- expect: a chain in which each waiter's deadline lies REDISSON_WAIT (Redisson's default
-- fairLockWaitTimeout) after the one before it, lowered by that much for everyone behind
-- on every acquisition and departure, as a Redisson client does. A Redisson acquisition
-- then leaves a dlock waiter where a Redisson waiter would be, instead of in the past.
--
-- Every command that can fail runs before the first write (the types are checked first and
-- the wake-ups are published before anything is written; a message is delivered when the
-- script ends either way), so a refused PUBLISH leaves Redis unchanged.
--
-- KEYS[1]  [stored] the lock hash N (owner field -> hold count, as the reentrant lock)
-- KEYS[2]  [stored] redisson_lock_queue:{N}: list of waiting owner fields, first in line first
-- KEYS[3]  [stored] redisson_lock_timeout:{N}: sorted set, owner field -> deadline (Redisson's form)
-- KEYS[4]  [unstored] redisson_lock__channel:{N}: a waiter listens on KEYS[4] .. ':' .. its field
-- KEYS[5]  [stored] {N}:fair_waiters (dlock only): sorted set, dlock waiter field -> deadline (ms,
--          server clock)
-- KEYS[6]  [stored] fenced fair lock only: redisson_lock_token:{N}
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
local N, queue, scores, channel, waiters, token_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4],
    KEYS[5], KEYS[6]
local op, field = ARGV[1], ARGV[3]
local REDISSON_WAIT = 300000

-- Wrong types fail here, before anything is written.
local held_by_me = redis.call('hexists', N, field or '') == 1
redis.call('llen', queue)
redis.call('zcard', scores)
redis.call('zcard', waiters)
if token_key then
    redis.call('get', token_key)
end
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

-- ---- plan: who is gone, and the line as it will be (reads only) ---------------------------

-- The line is read only as far as it is looked at: a release or a force needs its front,
-- and reading all of it (LRANGE 0 -1, 64 waiters: 20 us) was most of a release's time.
local line, line_read, line_whole = {}, 0, false
local LINE_FRONT = 4

-- The waiter at place i (1 = first in line), or nil past the end.
local function line_at(i)
    if i > line_read and not line_whole then
        local stop = line_read == 0 and LINE_FRONT - 1 or -1 -- its front, then all the rest
        local more = redis.call('lrange', queue, line_read, stop)
        for _, f in ipairs(more) do
            line_read = line_read + 1
            line[line_read] = f
        end
        line_whole = stop == -1 or #more < LINE_FRONT
        return line_at(i)
    end
    return line[i]
end

local gone = {}
for _, f in ipairs(redis.call('zrangebyscore', waiters, '-inf', now)) do
    gone[f] = true -- dead dlock waiters, wherever they stand
end
local i = 1
while line_at(i) do -- Redisson's rule for the others: the first, if it is late
    local f = line_at(i)
    if not gone[f] then
        if redis.call('zscore', waiters, f) then
            break
        end
        local score = redis.call('zscore', scores, f)
        if not score or tonumber(score) > now then
            break
        end
        gone[f] = true
    end
    i = i + 1
end

-- The first waiter that stays, other than `except` (nil: none).
local function first_staying(except)
    local i = 1
    while line_at(i) and (gone[line_at(i)] or line_at(i) == except) do
        i = i + 1
    end
    return line_at(i)
end

-- The waiters that stay, in order, without `except`.
local function staying(except)
    line_at(math.huge)
    local out, n = {}, 0
    for _, f in ipairs(line) do
        if not gone[f] and f ~= except then
            n = n + 1
            out[n] = f -- not table.insert: a C call per waiter, on every operation
        end
    end
    return out
end

local free = redis.call('exists', N) == 0
local first_before = line_at(1)
local wakes = {}

-- After the operation: if the lock is free and the first waiter may not know it, tell it.
local function wake_first_if(free_after, first, told_anyway)
    if free_after and first and (first ~= first_before or told_anyway) then
        table.insert(wakes, first)
    end
end

-- ---- writes, after every wake-up is published -----------------------------------------------

local function publish_wakes()
    local sent = {}
    for _, f in ipairs(wakes) do
        if not sent[f] then
            redis.call('publish', channel .. ':' .. f, 0)
            sent[f] = true
        end
    end
end

local function remove_gone()
    for f in pairs(gone) do
        redis.call('lrem', queue, 0, f)
        redis.call('zrem', scores, f)
        redis.call('zrem', waiters, f)
    end
end

-- Out of line as Redisson takes a waiter out: everyone behind it moves REDISSON_WAIT closer.
-- Up to zset-max-listpack-entries (128) members the sorted set is a listpack, where each
-- ZSCORE or ZINCRBY scans it: one of each per waiter made an acquisition cost O(waiters^2)
-- (64 waiters: 181 us of the server's time against 13 before the chain was kept). So the
-- set is read once and written again whole, highest score first: each member then goes in
-- at the front. Members not behind (none, unless the keys were edited) keep their score.
local function out_of_line(behind)
    redis.call('lrem', queue, 0, field)
    redis.call('zrem', scores, field)
    redis.call('zrem', waiters, field)
    if #behind == 0 then
        return
    end
    local is_behind = {}
    for _, f in ipairs(behind) do
        is_behind[f] = true
    end
    local all = redis.call('zrange', scores, 0, -1, 'withscores')
    if #all == 0 then
        return
    end
    redis.call('del', scores)
    local chunk, n = {}, 0
    for i = #all - 1, 1, -2 do
        local f, score = all[i], all[i + 1]
        if is_behind[f] then
            score = tonumber(score) - REDISSON_WAIT
        end
        chunk[n + 1], chunk[n + 2], n = score, f, n + 2
        if n == 2000 or i == 1 then -- unpack gives at most a few thousand values at once
            redis.call('zadd', scores, unpack(chunk, 1, n))
            n = 0
        end
    end
end

local function take(believed)
    local holds = tonumber(redis.call('hget', N, field)) or 0
    local token = 0
    if holds > 0 and holds == believed + 1 then -- a resend of an applied acquire
        redis.call('pexpire', N, ARGV[2])
        if token_key then
            token = tonumber(redis.call('get', token_key)) or 0
        end
        return {1, holds, token}
    end
    holds = redis.call('hincrby', N, field, 1)
    redis.call('pexpire', N, ARGV[2])
    if token_key then
        token = redis.call('incr', token_key)
    end
    return {1, holds, token}
end

-- In line (at the back if not yet), deadlines refreshed; the reply's hint.
local function wait_in_line(rest, fair_wait)
    local pred, in_line = nil, false
    for _, f in ipairs(rest) do
        if f == field then
            in_line = true
            break
        end
        pred = f
    end
    if not in_line then
        redis.call('rpush', queue, field)
    end
    -- Redisson's form: after the one before (or the lock's lease), by REDISSON_WAIT; never
    -- lowered here, so Redisson's own lowering on acquisitions ahead cannot make it late.
    local pttl = redis.call('pttl', N)
    local score = now + math.max(pttl, 0) + REDISSON_WAIT
    local pred_score = pred and tonumber(redis.call('zscore', scores, pred))
    if pred_score then
        score = math.max(score, pred_score + REDISSON_WAIT)
    end
    local current = tonumber(redis.call('zscore', scores, field))
    if not current or current < score then
        redis.call('zadd', scores, score, field)
    end
    redis.call('zadd', waiters, now + fair_wait, field)
    local hint = math.floor(fair_wait / 3)
    if pttl >= 0 and pttl < hint then
        hint = pttl
    end
    local first = rest[1]
    if first and first ~= field then -- it may be dropped sooner: look again then
        local deadline = tonumber(redis.call('zscore', waiters, first) or
                                      redis.call('zscore', scores, first))
        if deadline and deadline - now + 1 < hint then
            hint = math.max(deadline - now + 1, 0)
        end
    end
    return {0, hint}
end

if op == 'acquire' then
    local believed = tonumber(ARGV[4])
    if held_by_me then
        remove_gone()
        return take(believed) -- reentrant
    end
    local rest = staying(nil)
    local first = rest[1]
    if free and (not first or first == field) then
        local behind = staying(field)
        -- The new first waiter last heard "free, but another is first", and sleeps until
        -- its next refresh (fair_wait/3). If our lease ends sooner, tell it now, so its
        -- next attempt learns when to look again.
        if behind[1] and tonumber(ARGV[2]) < math.floor(tonumber(ARGV[5]) / 3) then
            table.insert(wakes, behind[1])
        end
        publish_wakes()
        remove_gone()
        out_of_line(behind)
        return take(believed)
    end
    wake_first_if(free, rest[1], true) -- free, but another waiter is first: make sure it knows
    publish_wakes()
    remove_gone()
    return wait_in_line(rest, tonumber(ARGV[5]))
elseif op == 'release' then
    local holds = tonumber(redis.call('hget', N, field))
    local believed = tonumber(ARGV[4])
    local left = nil
    if holds and not (believed > 0 and holds == believed - 1) then -- not a resend
        if believed > 0 and holds > believed then
            holds = believed -- orphans of acquires reported failed go with this release
        end
        left = holds - 1
    end
    wake_first_if(free or left == 0, first_staying(nil), left == 0)
    publish_wakes()
    remove_gone()
    if not holds then
        return -1
    end
    if not left then
        return holds -- a resend of an applied release
    end
    if left > 0 then
        redis.call('hset', N, field, left)
        redis.call('pexpire', N, ARGV[2])
        return left
    end
    redis.call('del', N)
    return 0
elseif op == 'force' then
    local kind = redis.call('type', N)['ok']
    wake_first_if(true, first_staying(nil), not free)
    publish_wakes()
    remove_gone()
    if kind == 'none' then
        return 0
    end
    redis.call('del', N)
    return 1
elseif op == 'leave' then
    local rest = staying(nil)
    local behind, after = {}, false
    for _, f in ipairs(rest) do
        if after then
            table.insert(behind, f)
        end
        after = after or f == field
    end
    wake_first_if(free, first_staying(field), rest[1] == field)
    publish_wakes()
    remove_gone()
    if after then
        out_of_line(behind)
    else
        out_of_line({})
    end
    return 0
end
return redis.error_reply('ERR fair.lua: unknown operation ' .. tostring(op))
