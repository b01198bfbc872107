-- SPDX-License-Identifier: MIT
-- acquire.lua — take the lock (a hold more), or say how long its holder keeps it.
--
-- KEYS[1]  [stored] the lock hash N: owner field -> hold count (Redisson RLock)
-- KEYS[2]  [unstored] with ARGV[4] only: the hand-off marker, undeclared in a Cluster like a channel
--          (below): {N}:handoff (dlock's own), a string, the owner field of the waiter the
--          free lock is promised to (release.lua sets it, with its lifetime)
-- KEYS[3]  [unstored] with ARGV[4] only: the hand-off queue, undeclared in a Cluster: {N}:handoff_queue
--          (dlock's own), a sorted set of the owner fields of waiting owners, scored by the
--          server's clock (ms) when each joined; PEXPIRE ARGV[5], renewed by every attempt
--          that waits on
-- KEYS[4]  [stored] fenced lock with ARGV[4], KEYS[2] without: the token counter
--          redisson_lock_token:{N}
-- ARGV[1]  the lease to set, ms
-- ARGV[2]  the owner field, <client-id>:<owner>
-- ARGV[3]  the hold count the client believes this owner has before this acquire
-- ARGV[4]  optional: 1 for the first attempt of a wait (should the lock be busy the owner
--          joins the queue), 3 for a later one (it joins, or keeps its place there; should
--          it get the lock it leaves), 2 for its wait's last attempt (it leaves the queue
--          either way, and a promise to it goes too), 0 for a
--          try that does not wait, - for neither marker nor queue (a Cluster client's lock
--          whose name keeps them out of N's slot: KEYS[2] and KEYS[3] are passed, never
--          touched); absent: no marker, and KEYS[2] is the token counter
-- ARGV[5]  with ARGV[4]: the queue's lifetime, ms
-- ARGV[6]  optional, a Cluster client's: the probe, a key of N's slot that never exists
--          ({N}:handoff_probe): while the slot is being migrated, the hand-off is left
--          alone (as with ARGV[4] -); see "In a Cluster" below
-- Reply    {1, holds, token}  acquired: the owner's hold count now and, for a fenced
--                             lock, the token of this acquisition (0 otherwise): an
--                             integer, or beyond 2^53, where a Lua number (a double)
--                             is no longer exact, its decimal string
--          {2, holds, token}  the same, and other owners wait in line (the queue is not
--                             empty): the owner's last release is to name one
--          {0, pttl}          held by another owner; pttl is its remaining lease (the
--                             waiter's hint), -1 if it never expires; or free but
--                             promised to another waiter: pttl is the marker's
--          {0, pttl, joined}  the same, and the owner waits in line: joined is its place,
--                             the time it joined the queue in µs, which a release that
--                             hands it the lock names (release.lua's grant)
--
-- The hand-off (the Linux mutex's hand-off, Go's sync.Mutex starvation mode): taking a free
-- lock at once stays the fast path. A waiting owner that finds the lock taken joins the
-- queue, in order of arrival, and keeps its place there while it waits. The last release
-- of holds taken while others waited hands the lock to the queue's first waiter inside its
-- own script (release.lua's grant): the lock is never free between the two holders, so
-- nobody can take it first. A hold this owner finds already its own (one more than the
-- client believes) is such a grant, or a resend (below): answered alike. A grant whose heir
-- died lapses with its short lease; a waiter that leaves takes its place with it (its last
-- attempt, or handoff_drop.lua). The marker is a Cluster release's promise of a free lock to
-- one waiter (elsewhere releases make none): while it names another owner a new
-- acquisition is refused as busy even when the lock is free; the named waiter takes the
-- lock and the marker goes with it. A marker outlives no waiter by more than its lifetime.
-- Reentrant acquisitions (the owner holds the lock already) never look at the marker.
-- Redisson's clients and dlock's spin lock know neither: they take a free lock as ever.
-- Marker and queue are a fairness hint, never what mutual exclusion rests on. They are
-- read through pcall, so one out of reach is none. One of another type is refused like any
-- key of another type.
--
-- In a Cluster the client passes marker and queue undeclared (they live in N's slot: the
-- hash tag) and the probe: declared, a key that is usually absent would make every acquire
-- wait out a migration of the slot (TRYAGAIN); undeclared, one written on the importing
-- node while the old one still has it would stop the migration (MIGRATE: BUSYKEY). So
-- while the slot is being migrated the script leaves them alone: the probe, two keys of
-- the slot of which one never exists, is refused exactly then (a missing key on the
-- migrating node: ASK; on the importing one: TRYAGAIN), and the attempt goes on as without
-- the hand-off (ARGV[4] -). Outside a migration every key of the slot is the node's, so
-- the hand-off runs as on a single server; after one it finds marker and queue where
-- MIGRATE put them, untouched meanwhile on both nodes.
--
-- Applied once even when sent twice: if the owner already has one hold more than the
-- client believes, this is a resend of an acquire whose reply was lost (or the client
-- gave up on it), or a release's grant; it is answered as the first send was, without a
-- second hold or token (but for a grant that brought no token: see below).
--
-- Checks first, then writes: the rule of every dlock script (src/*/*.lua). Redis runs a
-- script alone but does not undo its writes when a later command in it fails, and the
-- caller is told only of the failure. So every command that can be refused or fail — a
-- key of another type, a counter that is not a 64-bit integer or cannot move further, a
-- PUBLISH the user has no channel permission for — runs or is checked before the first
-- write, and what is published is computed beforehand: a script that replies with an
-- error changed nothing, and one that changed something does not fail. Publishing before
-- the writes is the same for subscribers as publishing after them: Redis delivers the
-- messages of a script only once the script has finished, and the next command of a
-- client a message wakes runs after it too. Once one PUBLISH to a channel has passed, a
-- later one to the same channel in the same script passes as well (same user, same
-- channel).

-- uses: int64

local claims = ARGV[4]
if ARGV[6] and claims and type(redis.pcall('exists', KEYS[3], ARGV[6])) == 'table' then
    claims = '-' -- a Cluster, the slot being migrated
end
local marker_key = claims and claims ~= '-' and KEYS[2]
local line_key = marker_key and KEYS[3]
local queue_key = claims ~= '0' and line_key -- written by a wait's attempts only
local in_line = claims == '3' or claims == '2' -- an earlier attempt of the wait may have queued it
local token_key = (claims and KEYS[4]) or (not claims and KEYS[2]) or nil
local token
if token_key then
    token = redis.call('get', token_key) or '0' -- a key of another type fails here
    if not int64_halves(token) then
        return int64_refusal(token_key, token, 'a fencing token')
    end
end

-- The usual case first: no lock, no marker, nobody in line. One EXISTS answers it, where
-- the checks below read three times; the outcome is theirs: a first hold, no token. (The
-- first attempt of a wait is in no line yet; a later one leaves it, through pcall as every
-- write after the first.)
if not token_key and
    redis.call('exists', KEYS[1], marker_key or KEYS[1], line_key or KEYS[1]) == 0 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    if in_line then
        redis.pcall('zrem', queue_key, ARGV[2])
    end
    return {1, 1, 0}
end
-- A command on a dlock-only key through pcall: its reply, or nil when the key is out of
-- reach (a migration, a key the user's ACL denies: then it is not used), or, as the second
-- result, the error that refuses the call when the key is of another type. Used for reads,
-- and for a path's first write, so that a refusal still leaves everything as it was.
local function side(...)
    local v = redis.pcall(...)
    if type(v) == 'table' and v.err then
        if string.find(v.err, 'WRONGTYPE', 1, true) then
            return nil, v
        end
        return nil
    end
    return v
end

local promised = false
if marker_key then
    local refused
    promised, refused = side('get', marker_key)
    if refused then
        return refused
    end
    marker_key = promised ~= nil and marker_key
    promised = promised or false
end

-- 2 when others wait in line (the owner's last release is to name one), else 1: the
-- first value of an "acquired" reply.
local function acquired()
    if line_key and redis.call('exists', line_key) == 1 then
        return 2
    end
    return 1
end

-- A promise to this owner goes once it takes the lock, joins or leaves the line.
local function drop_own_promise()
    if promised == ARGV[2] then
        redis.call('del', marker_key)
    end
end

-- The server's clock in ms, its µs as three decimals (joins within one ms keep their
-- order), as a string: a Lua number would be sent with 14 digits only.
local function now_ms()
    local t = redis.call('time')
    local us = tonumber(t[2])
    return t[1] .. string.format('%03d.%03d', math.floor(us / 1000), us % 1000)
end

-- The owner waits on (busy, or promised to another): the wait's first attempt joins the
-- queue at its end, anew (a place an earlier wait left behind is not this wait's: a grant
-- names the place it hands the lock to by its join time, which the waiter's client tells
-- apart from an earlier one's, engine_grant.c); a later attempt keeps its place (NX), or
-- joins again at the end if it lost it (a grant to it lapsed). A promise to it that a client
-- knowing no marker took is void. Every such attempt renews the queue's lifetime. Returns
-- the refusal of a queue of another type, found before anything is written.
local function wait_in_queue()
    if not queue_key or (claims ~= '1' and claims ~= '3') then
        return nil
    end
    local joined, refused
    if claims == '1' then
        joined, refused = side('zadd', queue_key, now_ms(), ARGV[2])
    else
        joined, refused = side('zadd', queue_key, 'NX', now_ms(), ARGV[2])
    end
    if refused then
        return refused
    end
    drop_own_promise()
    if joined then
        redis.call('pexpire', queue_key, ARGV[5])
    end
    return nil
end

-- The wait's last attempt, the lock still not its: it leaves the queue and its promise.
local function leave_queue()
    if claims ~= '2' then
        return nil
    end
    local _, refused = side('zrem', queue_key, ARGV[2])
    if refused then
        return refused
    end
    drop_own_promise()
    return nil
end

-- The busy reply: the wait hint, and the owner's place if it waits in line (a grant names
-- the place it hands the lock to: see the reply above). A score is a double; the µs are
-- rounded the same way here and in release.lua, from the same double.
local function busy(pttl)
    if queue_key and (claims == '1' or claims == '3') then
        local joined = side('zscore', queue_key, ARGV[2])
        if joined then
            return {0, pttl, math.floor(tonumber(joined) * 1000 + 0.5)}
        end
    end
    return {0, pttl}
end

local holds = redis.call('hget', KEYS[1], ARGV[2])
if not holds and redis.call('exists', KEYS[1]) == 1 then
    local refused = wait_in_queue() or leave_queue()
    if refused then
        return refused
    end
    return busy(redis.call('pttl', KEYS[1]))
end
holds = tonumber(holds) or 0
if holds == tonumber(ARGV[3]) + 1 then
    if token_key and token == '0' then
        -- a hold a release handed this owner without a token (release.lua's grant, on a name
        -- that had no counter): its token is this one (0 is no token)
        redis.call('incr', token_key)
        token = redis.call('get', token_key)
    end
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {acquired(), holds, int64_reply(token or '0')}
end
if holds == 0 and promised and promised ~= ARGV[2] then
    local refused = wait_in_queue() or leave_queue()
    if refused then
        return refused
    end
    return busy(redis.call('pttl', marker_key)) -- free, but this turn is another waiter's
end
if token == '9223372036854775807' then
    return redis.error_reply('ERR ' .. token_key .. ' is at 9223372036854775807, the largest ' ..
                             'fencing token: it cannot rise, so no token can be given')
end
holds = redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[1])
if token_key then
    redis.call('incr', token_key)
    token = redis.call('get', token_key)
end
drop_own_promise() -- the turn it was promised is taken
if in_line then
    redis.pcall('zrem', queue_key, ARGV[2])
end
return {acquired(), holds, int64_reply(token or '0')}
