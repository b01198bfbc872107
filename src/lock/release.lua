-- SPDX-License-Identifier: MIT
-- release.lua — give back one hold; the last one frees the lock and wakes its waiters.
--
-- KEYS[1]  the lock hash N
-- KEYS[2]  its channel redisson_lock__channel:{N}
-- ARGV[1]  the lease to keep when holds remain, ms
-- ARGV[2]  the owner field, <client-id>:<owner>
-- ARGV[3]  the hold count the client believes this owner has (0: it does not know)
-- Reply    -1 the owner holds nothing; otherwise the holds left (0: the lock was deleted
--          and "0" published, Redisson's unlock message)
--
-- Holds beyond what the client believes are orphans of acquires it reported failed: they
-- are dropped, so the owner's last release frees the lock.
--
-- Applied once even when sent twice: if the owner has one hold fewer than the client
-- believes, this is a resend of a release whose reply was lost; it changes nothing. (The
-- resend of a last release finds nothing: the client tells that case apart by knowing it
-- sent the command twice.)
local holds = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
if not holds then
    return -1
end
local believed = tonumber(ARGV[3])
if believed > 0 and holds == believed - 1 then
    return holds
end
if believed > 0 and holds > believed then
    -- holds the client never learned of: acquires whose reply was lost and that the
    -- caller was told failed. They go with this release instead of outliving it.
    holds = believed
end
holds = holds - 1
if holds > 0 then
    redis.call('hset', KEYS[1], ARGV[2], holds)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return holds
end
-- published first: a refused PUBLISH must leave the lock as it was (see acquire.lua)
redis.call('publish', KEYS[2], 0)
redis.call('del', KEYS[1])
return 0
