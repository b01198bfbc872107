-- SPDX-License-Identifier: MIT
-- force_release.lua — delete the lock whoever holds it and wake its waiters.
--
-- KEYS[1]  [stored] the lock hash N
-- KEYS[2]  [unstored] its channel redisson_lock__channel:{N}
-- Reply    1 if it was locked (now deleted, "0" published), 0 if it was not
--
-- A key of another type is refused, not deleted: it is not ours.
local kind = redis.call('type', KEYS[1])['ok']
if kind == 'none' then
    return 0
end
if kind ~= 'hash' then
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
-- published first: a refused PUBLISH must leave the lock as it was (see acquire.lua)
redis.call('publish', KEYS[2], 0)
redis.call('del', KEYS[1])
return 1
