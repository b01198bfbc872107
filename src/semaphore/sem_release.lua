-- SPDX-License-Identifier: MIT
-- sem_release.lua — give permits back (no owner: anybody may, as in Redisson).
--
-- KEYS[1]  [stored] the semaphore N
-- KEYS[2]  [unstored] its channel redisson_sc:{N}
-- ARGV[1]  permits (> 0)
-- Reply    the available permits now (also published: the waiters' wake-up)
--
-- Checks first, then writes (see src/lock/acquire.lua): a refused call changes nothing.

-- uses: int64 count

local count, refused = count_of('a count of permits')
if not count then
    return refused
end
if #count <= 15 and #ARGV[1] <= 15 then -- exact as Lua numbers: see sem_acquire.lua
    local sum = tonumber(count) + tonumber(ARGV[1])
    redis.call('publish', KEYS[2], sum)
    redis.call('incrby', KEYS[1], ARGV[1])
    return sum
end
local available = int64_add(count, ARGV[1])
if not available then
    return redis.error_reply(string.format('ERR %s: %s permits and %s more go beyond the 64-bit range',
                                           KEYS[1], count, ARGV[1]))
end
redis.call('publish', KEYS[2], available)
redis.call('incrby', KEYS[1], ARGV[1])
return int64_reply(available)
