-- SPDX-License-Identifier: MIT
-- acquire.lua — take the lock (a hold more), or say how long its holder keeps it.
--
-- KEYS[1]  the lock hash N: owner field -> hold count (Redisson RLock)
-- KEYS[2]  fenced lock only: the token counter redisson_lock_token:{N}
-- ARGV[1]  the lease to set, ms
-- ARGV[2]  the owner field, <client-id>:<owner>
-- ARGV[3]  the hold count the client believes this owner has before this acquire
-- Reply    {1, holds, token}  acquired: the owner's hold count now and, for a fenced
--                             lock, the token of this acquisition (0 otherwise): an
--                             integer, or beyond 2^53, where a Lua number (a double)
--                             is no longer exact, its decimal string
--          {0, pttl}          held by another owner; pttl is its remaining lease (the
--                             waiter's hint), -1 if it never expires
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

local token_key = KEYS[2]
local token
if token_key then
    token = redis.call('get', token_key) or '0' -- a key of another type fails here
    if not int64_halves(token) then
        return int64_refusal(token_key, token, 'a fencing token')
    end
end
local holds = redis.call('hget', KEYS[1], ARGV[2])
if not holds and redis.call('exists', KEYS[1]) == 1 then
    return {0, redis.call('pttl', KEYS[1])}
end
holds = tonumber(holds) or 0
if holds == tonumber(ARGV[3]) + 1 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, holds, int64_reply(token or '0')}
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
return {1, holds, int64_reply(token or '0')}
