-- SPDX-License-Identifier: MIT
-- release.lua — the spin lock's unlock: one hold less; the last one deletes the lock.
-- Nothing is published: a spin lock's waiters listen on no channel, they look again when
-- their backoff says (Redisson's RSpinLock unlocks the same way, without PUBLISH).
--
-- KEYS[1]  [stored] the lock hash N: owner field -> hold count
-- ARGV[1]  the lease to keep when holds remain, ms
-- ARGV[2]  the owner field, <client-id>:<owner>
-- ARGV[3]  the hold count the client believes this owner has (0: it does not know)
-- Reply    -1 the owner holds nothing; otherwise the holds left (0: N was deleted)
--
-- The reentrant lock's rules for a resend and for orphans (src/lock/release.lua) hold
-- here too: a release whose reply was lost changes nothing when sent again (the owner has
-- one hold fewer than believed), and holds beyond the believed count are dropped, so the
-- owner's last release frees the lock.
local held = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
if not held then
    return -1
end
local believed = tonumber(ARGV[3])
if believed > 0 then
    if held == believed - 1 then
        return held -- the first send was applied
    end
    held = math.min(held, believed)
end
if held > 1 then
    redis.call('hset', KEYS[1], ARGV[2], held - 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return held - 1
end
redis.call('del', KEYS[1])
return 0
