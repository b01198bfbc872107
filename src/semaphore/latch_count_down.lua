-- SPDX-License-Identifier: MIT
-- latch_count_down.lua — count down by one; at zero the latch is deleted and its waiters
-- released.
--
-- KEYS[1]  [stored] the latch N
-- KEYS[2]  [unstored] its channel redisson_countdownlatch__channel__{N}
-- Reply    the count now (0 when it finished; counting down a finished latch does nothing)
--
-- Checks first, then writes (see src/lock/acquire.lua): a refused call changes nothing.

-- uses: count

if redis.call('exists', KEYS[1]) == 0 then
    return 0
end
local count, refused = count_of('a latch count')
if not count then
    return refused
end
if count == '1' or count == '0' or string.sub(count, 1, 1) == '-' then
    redis.call('publish', KEYS[2], 0)
    redis.call('del', KEYS[1])
    return 0
end
return redis.call('decr', KEYS[1])
