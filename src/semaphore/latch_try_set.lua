-- SPDX-License-Identifier: MIT
-- latch_try_set.lua — set the count of a latch that is unset or finished (trySetCount).
--
-- KEYS[1]  [stored] the latch N: a string, the remaining count (absent: unset or finished)
-- KEYS[2]  [unstored] its channel redisson_countdownlatch__channel__{N}
-- ARGV[1]  count (>= 0; 0 leaves the latch finished)
-- Reply    1 set (and "1" published, Redisson's new-count message), 0 it is still counting
--
-- Checks first, then writes (see src/lock/acquire.lua): a refused call changes nothing.

-- uses: count

if redis.call('exists', KEYS[1]) == 1 then
    local count, refused = count_of('a latch count')
    return count and 0 or refused
end
if tonumber(ARGV[1]) > 0 then
    redis.call('publish', KEYS[2], 1)
    redis.call('set', KEYS[1], ARGV[1])
end
return 1
