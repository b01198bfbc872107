-- SPDX-License-Identifier: MIT
-- sem_try_set.lua — set a semaphore's permits if it does not exist yet (trySetPermits).
--
-- KEYS[1]  [stored] the semaphore N: a string, the available permits
-- KEYS[2]  [unstored] its channel redisson_sc:{N}
-- ARGV[1]  permits
-- Reply    1 set (and the count published), 0 it already existed
--
-- Checks first, then writes (see src/lock/acquire.lua): a refused call changes nothing.

-- uses: count

if redis.call('exists', KEYS[1]) == 1 then
    local count, refused = count_of('a count of permits')
    return count and 0 or refused
end
redis.call('publish', KEYS[2], ARGV[1])
redis.call('set', KEYS[1], ARGV[1])
return 1
