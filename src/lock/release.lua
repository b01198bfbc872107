-- SPDX-License-Identifier: MIT
-- release.lua — give back one hold; the last one frees the lock and wakes its waiters.
--
-- KEYS[1]  [stored] the lock hash N
-- KEYS[2]  [unstored] its channel redisson_lock__channel:{N}
-- KEYS[3]  [unstored] optional, passed when others waited in line as the holds were taken
--          (the acquire's reply 2): the hand-off marker {N}:handoff (acquire.lua). Without
--          it the release names nobody and costs what Redisson's does: every key and
--          argument of a script costs the server time in every call. A Cluster client
--          passes it undeclared, with ARGV[6] (acquire.lua says why).
-- KEYS[4]  [unstored] with KEYS[3]: the hand-off queue {N}:handoff_queue (acquire.lua)
-- KEYS[5]  [unstored] with KEYS[3]: the turn channel dlock_lock_turn__channel:{N} (dlock's own)
-- ARGV[1]  the lease to keep when holds remain, ms
-- ARGV[2]  the owner field, <client-id>:<owner>
-- ARGV[3]  the hold count the client believes this owner has (0: it does not know)
-- ARGV[4]  with KEYS[3]: the marker's lifetime, ms
-- ARGV[5]  with KEYS[3]: the bound, ms: a first waiter that joined the queue this long
--          ago or longer is promised the lock
-- ARGV[6]  optional, a Cluster client's with KEYS[3]: the probe {N}:handoff_probe
--          (acquire.lua): while N's slot is being migrated the release names nobody
-- Reply    -1 the owner holds nothing; otherwise the holds left (0: the lock was deleted
--          and "0" published, Redisson's unlock message)
--
-- The turn: the last release names one waiter, the one the marker promises the lock to
-- or else the queue's first, and publishes its owner field on the turn channel just
-- before "0". A dlock client reads both on its one subscriber connection, in that order:
-- the named waiter's client wakes that waiter alone, every other client lets the "0" wake
-- none of its own (src/core/engine/wait.c, turns). So one waiter answers a release, not one in
-- every process. A first waiter that has waited past the bound leaves the queue for the
-- marker: the lock is promised to it and newcomers are refused until it comes (or the
-- marker's lifetime runs out); one that has not may find the lock taken again by a
-- newcomer, and stays first. Redisson's clients never hear the turn; their "0" is as
-- ever. Marker, queue and turn channel through pcall: one out of reach or of another
-- type, or a turn channel the user may not publish to, is no turn, never a failed
-- release.
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
-- what to publish first: a refused PUBLISH must leave the lock as it was (see acquire.lua)
local turn, promise = false, false
if KEYS[3] and not (ARGV[6] and type(redis.pcall('exists', KEYS[4], ARGV[6])) == 'table') then
    turn = redis.pcall('get', KEYS[3])
    if type(turn) ~= 'string' then -- no promise standing: the queue's first, if any
        local first = turn == false and redis.pcall('zrange', KEYS[4], 0, 0, 'withscores')
        turn = type(first) == 'table' and first[1] or false
        if turn then
            local t = redis.call('time')
            local waited = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000 - tonumber(first[2])
            promise = waited >= tonumber(ARGV[5])
        end
    end
end
if turn then
    redis.pcall('publish', KEYS[5], turn)
end
redis.call('publish', KEYS[2], 0)
if promise then
    redis.pcall('zrem', KEYS[4], turn)
    redis.pcall('set', KEYS[3], turn, 'px', ARGV[4])
end
redis.call('del', KEYS[1])
return 0
