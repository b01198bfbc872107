-- SPDX-License-Identifier: MIT
-- sem_add.lua — add permits (a negative delta takes them away; the count may go below 0).
--
-- KEYS[1]  [stored] the semaphore N
-- KEYS[2]  [unstored] its channel redisson_sc:{N}
-- ARGV[1]  delta
-- Reply    the available permits now (also published, so waiters look again)
--
-- Checks first, then writes (see src/lock/acquire.lua): a refused call changes nothing.

-- uses: int64 count

local count, refused = count_of('a count of permits')
if not count then
    return refused
end
local available = int64_add(count, ARGV[1])
if not available then
    return redis.error_reply(string.format('ERR %s: %s permits and %s more go beyond the 64-bit range',
                                           KEYS[1], count, ARGV[1]))
end
redis.call('publish', KEYS[2], available)
redis.call('incrby', KEYS[1], ARGV[1])
return int64_reply(available)
