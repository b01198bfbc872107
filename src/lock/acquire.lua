-- SPDX-License-Identifier: MIT
-- acquire.lua — take the lock (a hold more), or say how long its holder keeps it.
--
-- KEYS[1]  the lock hash N: owner field -> hold count (Redisson RLock)
-- KEYS[2]  with ARGV[4] only: the hand-off marker, undeclared in a Cluster like a channel
--          (below): {N}:handoff (dlock's own), a string, the owner field of the waiter the
--          free lock is promised to; PEXPIRE ARGV[5]
-- KEYS[3]  fenced lock only (KEYS[2] without ARGV[4]): the token counter
--          redisson_lock_token:{N}
-- ARGV[1]  the lease to set, ms
-- ARGV[2]  the owner field, <client-id>:<owner>
-- ARGV[3]  the hold count the client believes this owner has before this acquire
-- ARGV[4]  optional: 1 if this owner has waited past the bound (it claims the next turn
--          should the lock be busy), 2 for its wait's last attempt (should the lock be
--          busy it leaves: a claim of its own is taken back), 0 if neither, - for no
--          marker (a Cluster: KEYS[2] is passed, never touched); absent: no marker, and
--          KEYS[2] is the token counter
-- ARGV[5]  with ARGV[4]: the marker's lifetime, ms
-- Reply    {1, holds, token}  acquired: the owner's hold count now and, for a fenced
--                             lock, the token of this acquisition (0 otherwise): an
--                             integer, or beyond 2^53, where a Lua number (a double)
--                             is no longer exact, its decimal string
--          {0, pttl}          held by another owner; pttl is its remaining lease (the
--                             waiter's hint), -1 if it never expires; or free but
--                             promised to another waiter: pttl is the marker's
--
-- The hand-off (Go's sync.Mutex starvation mode, the Linux mutex's hand-off flag): taking
-- a free lock at once stays the fast path, so a releasing owner that comes back at once
-- usually beats the waiter its release woke. A waiter passed over past the bound claims
-- the next turn: when it finds the lock busy it names itself in the marker (unless
-- another waiter is named there), and while the marker names another owner a new
-- acquisition is refused as busy even when the lock is free. The named waiter takes the
-- lock on the next release and the marker goes with it. A marker outlives no waiter by
-- more than its lifetime: a waiter that died or gave up holds nobody back after that.
-- Reentrant acquisitions (the owner holds the lock already) never look at the marker.
-- Redisson's clients and dlock's spin lock know no marker: they take a free lock as ever.
-- The marker is a fairness hint, never what mutual exclusion rests on. A Cluster client
-- passes it undeclared and does not use it (ARGV[4] -): declared, a key that is usually
-- absent makes every acquire wait out a slot migration (TRYAGAIN); undeclared, one
-- written on the importing node while the old one still has it stops the migration
-- (MIGRATE: BUSYKEY). It is read through pcall all the same, so a marker out of reach is
-- no marker. A marker of another type is refused like any key of another type.
--
-- Applied once even when sent twice: if the owner already has one hold more than the
-- client believes, this is a resend of an acquire whose reply was lost (or the client
-- gave up on it); it is answered as the first send was, without a second hold or token.
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
local marker_key = claims and claims ~= '-' and KEYS[2]
local token_key = (claims and KEYS[3]) or (not claims and KEYS[2]) or nil
local token
if token_key then
    token = redis.call('get', token_key) or '0' -- a key of another type fails here
    if not int64_halves(token) then
        return int64_refusal(token_key, token, 'a fencing token')
    end
end
-- The usual case first: no lock and no marker. One EXISTS answers it, where the checks
-- below read three times; the outcome is theirs: a first hold, no token.
if not token_key and redis.call('exists', KEYS[1], marker_key or KEYS[1]) == 0 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, 1, 0}
end
local promised = marker_key and redis.pcall('get', marker_key)
if type(promised) == 'table' then -- refused: of another type, or not here (a migration)
    if string.find(promised.err, 'WRONGTYPE', 1, true) then
        return promised
    end
    promised, marker_key = false, nil
end
local holds = redis.call('hget', KEYS[1], ARGV[2])
if not holds and redis.call('exists', KEYS[1]) == 1 then
    if marker_key and claims == '1' and (not promised or promised == ARGV[2]) then
        redis.call('set', marker_key, ARGV[2], 'px', ARGV[5])
    elseif marker_key and claims == '2' and promised == ARGV[2] then
        redis.call('del', marker_key) -- the waiter leaves: its claim goes with it
    end
    return {0, redis.call('pttl', KEYS[1])}
end
holds = tonumber(holds) or 0
if holds == tonumber(ARGV[3]) + 1 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, holds, int64_reply(token or '0')}
end
if holds == 0 and promised and promised ~= ARGV[2] then
    return {0, redis.call('pttl', marker_key)} -- free, but this turn is another waiter's
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
if promised == ARGV[2] then
    redis.call('del', marker_key) -- the turn it was promised is taken
end
return {1, holds, int64_reply(token or '0')}
