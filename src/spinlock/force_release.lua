-- SPDX-License-Identifier: MIT
-- force_release.lua — the spin lock's forceUnlock: delete N whoever holds it, publishing
-- nothing (nobody listens: spin waiters look again by their backoff).
--
-- KEYS[1]  [stored] the lock hash N
-- Reply    1 if it was locked (now deleted), 0 if it was not
--
-- A key of another type is refused, not deleted: it is not a lock.
local kind = redis.call('type', KEYS[1])['ok']
if kind == 'hash' then
    redis.call('del', KEYS[1])
    return 1
end
if kind == 'none' then
    return 0
end
return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
