-- acquire.lua — take the lock (a hold more), or say how long its holder keeps it.
--
-- KEYS[1]  the lock hash N: owner field -> hold count (Redisson RLock)
-- KEYS[2]  fenced lock only: the token counter redisson_lock_token:{N}
-- ARGV[1]  the lease to set, ms
-- ARGV[2]  the owner field, <client-id>:<owner>
-- ARGV[3]  the hold count the client believes this owner has before this acquire
-- Reply    {1, holds, token}  acquired: the owner's hold count now and, for a fenced
--                             lock, the token of this acquisition (0 otherwise)
--          {0, pttl}          held by another owner; pttl is its remaining lease (the
--                             waiter's hint), -1 if it never expires
--
-- Applied once even when sent twice: if the owner already has one hold more than the
-- client believes, this is a resend of an acquire whose reply was lost (or the client
-- gave up on it); it is answered as the first send was, without a second hold or token.
if KEYS[2] then
    redis.call('get', KEYS[2]) -- a token key of another type fails here, before any write
end
local holds = redis.call('hget', KEYS[1], ARGV[2])
if not holds and redis.call('exists', KEYS[1]) == 1 then
    return {0, redis.call('pttl', KEYS[1])}
end
holds = tonumber(holds) or 0
local token = 0
if holds == tonumber(ARGV[3]) + 1 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    if KEYS[2] then
        token = tonumber(redis.call('get', KEYS[2])) or 0
    end
    return {1, holds, token}
end
holds = redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[1])
if KEYS[2] then
    token = redis.call('incr', KEYS[2])
end
return {1, holds, token}
