-- SPDX-License-Identifier: MIT
-- sem_drain.lua — take every available permit at once.
--
-- KEYS[1]  [stored] the semaphore N
-- Reply    the permits taken: 0 when there are none, or the count is below zero (a
--          negative count is left as it is: draining must not add permits)
--
-- Checks first, then writes (see src/lock/acquire.lua): a refused call changes nothing.

-- uses: int64 count

local count, refused = count_of('a count of permits')
if not count then
    return refused
end
if count == '0' or string.sub(count, 1, 1) == '-' then
    return 0
end
redis.call('set', KEYS[1], 0)
return int64_reply(count)
